// Wire-layer costs: parse+verify and build+ICRC per packet, and ICRC throughput
// beside memcpy of the same bytes (the ceiling a CRC pass can approach); the
// byte work of a packet as two passes (CRC, then copy) and as one (the copy
// and the CRC fused: crc32_copy, finish_frame_copy, icrc_check_copy).
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "tita/wire/frame.h"

namespace {

using namespace tita::wire;

FrameFields fields() {
  FrameFields f;
  f.src_gid = Gid::from_ipv4(0x0a000001);
  f.dst_gid = Gid::from_ipv4(0x0a000002);
  f.opcode = Opcode::kWriteMiddle;
  f.dest_qp = 17;
  f.psn = 1000;
  return f;
}

void BM_ParseVerify(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> payload(n, 0x5a), frame(n + 128);
  const Segment seg{payload.data(), n};
  const int len = build_frame(fields(), {&seg, 1}, frame.data(), static_cast<uint32_t>(frame.size()));
  Packet p;
  for (auto _ : state) {
    benchmark::DoNotOptimize(parse(frame.data(), static_cast<uint32_t>(len), &p));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * len);
  state.SetLabel(std::string(crc32_implementation()));
}
BENCHMARK(BM_ParseVerify)->Arg(64)->Arg(1024)->Arg(4096);

void BM_ParseNoIcrc(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> payload(n, 0x5a), frame(n + 128);
  const Segment seg{payload.data(), n};
  const int len = build_frame(fields(), {&seg, 1}, frame.data(), static_cast<uint32_t>(frame.size()));
  Packet p;
  for (auto _ : state) {
    benchmark::DoNotOptimize(parse(frame.data(), static_cast<uint32_t>(len), &p, {.verify_icrc = false}));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ParseNoIcrc)->Arg(64)->Arg(4096);

// Headers into a small buffer, ICRC over the payload where it lies (the zero-copy path).
void BM_BuildIcrc(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> payload(n, 0x5a);
  const Segment seg{payload.data(), n};
  uint8_t hdr[128], tail[8];
  FrameFields f = fields();
  for (auto _ : state) {
    f.psn = (f.psn + 1) & 0xffffff;
    const uint32_t hdr_len = build_headers(f, n, hdr, sizeof hdr);
    finish_frame(hdr, hdr_len, {&seg, 1}, tail);
    benchmark::DoNotOptimize(tail);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * (n + 58));
  state.SetLabel(std::string(crc32_implementation()));
}
BENCHMARK(BM_BuildIcrc)->Arg(64)->Arg(1024)->Arg(4096);

// The sender's byte work in one pass: headers, then the payload copied into
// the frame as its ICRC is summed (a copying host: TxFrame::copy_to).
void BM_BuildCopy(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> payload(n, 0x5a), frame(n + 128);
  const Segment seg{payload.data(), n};
  FrameFields f = fields();
  for (auto _ : state) {
    f.psn = (f.psn + 1) & 0xffffff;
    const uint32_t hdr_len = build_headers(f, n, frame.data(), 128);
    finish_frame_copy(frame.data(), hdr_len, {&seg, 1}, frame.data() + hdr_len, frame.data() + hdr_len + n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * (n + 58));
  state.SetLabel(std::string(crc32_copy_implementation()));
}
BENCHMARK(BM_BuildCopy)->Arg(64)->Arg(1024)->Arg(4096);

// The receiver's byte work in one pass: the headers parsed, the payload copied
// into the region as the ICRC is checked (the fast path's WRITE Middle and Last).
void BM_ParsePlace(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  std::vector<uint8_t> payload(n, 0x5a), frame(n + 128), region(n);
  const Segment seg{payload.data(), n};
  const int len = build_frame(fields(), {&seg, 1}, frame.data(), static_cast<uint32_t>(frame.size()));
  Packet p;
  for (auto _ : state) {
    parse(frame.data(), static_cast<uint32_t>(len), &p, {.verify_icrc = false});
    benchmark::DoNotOptimize(icrc_check_copy(p, region.data()));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * len);
  state.SetLabel(std::string(crc32_copy_implementation()));
}
BENCHMARK(BM_ParsePlace)->Arg(64)->Arg(1024)->Arg(4096);

// Copy and CRC of the same bytes: two passes (memcpy, then ISA-L) against one.
void BM_CopyThenCrc32(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(n, 0xa5), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(crc32(0, dst.data(), n));
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_CopyThenCrc32)->Arg(256)->Arg(512)->Arg(1024)->Arg(4096)->Arg(9000);

void BM_Crc32Copy(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(n, 0xa5), dst(n);
  for (auto _ : state) {
    benchmark::DoNotOptimize(crc32_copy(dst.data(), src.data(), n, 0));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
  state.SetLabel(std::string(crc32_copy_implementation()));
}
BENCHMARK(BM_Crc32Copy)->Arg(256)->Arg(512)->Arg(1024)->Arg(4096)->Arg(9000);

void BM_Crc32(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> buf(n, 0xa5);
  for (auto _ : state) benchmark::DoNotOptimize(crc32(0, buf.data(), n));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
  state.SetLabel(std::string(crc32_implementation()));
}
BENCHMARK(BM_Crc32)->Arg(64)->Arg(1024)->Arg(4096);

void BM_Memcpy(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(n, 0xa5), dst(n);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_Memcpy)->Arg(64)->Arg(1024)->Arg(4096);

}  // namespace

BENCHMARK_MAIN();
