// Engine cost per packet, send side and receive side apart, over an in-memory
// wire, with congestion control (HPCC, fed by every ACK) and pacing on; ICRC off
// (it is measured in bench/wire). And QPs per engine against memory.
//
// One iteration moves a burst of 64 RDMA WRITE packets from engine A to engine B
// and B's ACKs back. The host side is as thin as a DPDK host: transmit copies
// the header and tail (as into an mbuf) and keeps a pointer to the payload (as
// an external buffer). Frames are assembled for B outside the timed regions.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tita/engine/engine.h"

namespace {

using namespace tita::engine;
using Clock = std::chrono::steady_clock;

struct Frame {
  uint8_t head[256];
  uint32_t head_len = 0;
  const uint8_t* payload = nullptr;
  uint32_t payload_len = 0;
  uint8_t tail[128];
  uint32_t tail_len = 0;
};

struct RingIo : PacketIo {
  std::vector<Frame> frames;
  size_t count = 0;
  RingIo() : frames(256) {}
  uint32_t tx_space() override { return static_cast<uint32_t>(frames.size() - count); }
  void transmit_burst(uint64_t, const TxFrame* burst, uint32_t n) override {
    for (uint32_t i = 0; i < n; ++i) transmit(burst[i]);
  }
  void transmit(const TxFrame& f) {
    Frame& out = frames[count++];
    std::memcpy(out.head, f.hdr, f.hdr_len);
    out.head_len = f.hdr_len;
    out.payload = f.n_payload ? static_cast<const uint8_t*>(f.payload[0].data) : nullptr;
    out.payload_len = f.n_payload ? f.payload[0].len : 0;
    std::memcpy(out.tail, f.tail, f.tail_len);
    out.tail_len = f.tail_len;
  }
};

EngineConfig config(int i) {
  EngineConfig c;
  c.mac[5] = static_cast<uint8_t>(i + 1);
  c.gid = tita::wire::Gid::from_ipv4(0x0a000001 + static_cast<uint32_t>(i));
  c.line_rate_bps = 400'000'000'000;
  c.compute_icrc = false;
  c.verify_icrc = false;
  return c;
}

struct Bed {
  RingIo io[2];
  std::unique_ptr<Engine> e[2];
  uint32_t qp[2] = {};
  uint32_t cq[2] = {};
  MrInfo mr[2];
  std::vector<uint8_t> mem[2];
  std::vector<uint8_t> wire_buf;
  uint64_t now = 1'000'000;

  // cc "hpcc": an ACK per packet (INT); "dcqcn": ACKs coalesced (ack_req_every).
  Bed(uint32_t payload, const char* cc) : wire_buf(256 * 4608) {
    for (int i = 0; i < 2; ++i) {
      e[i] = std::make_unique<Engine>(config(i), &io[i]);
      const uint32_t pd = e[i]->alloc_pd();
      mem[i].assign(1 << 20, 0x5a);
      e[i]->reg_mr(pd, mem[i].data(), mem[i].size(), kAccessLocalWrite | kAccessRemoteWrite, &mr[i]);
      e[i]->create_cq(1 << 16, &cq[i]);
      e[i]->create_qp(pd, {.send_cq = cq[i], .recv_cq = cq[i], .max_send_wr = 4096}, &qp[i]);
    }
    for (int i = 0; i < 2; ++i) {
      std::string err;
      QpAttr a;
      a.qp_access_flags = kAccessRemoteWrite;
      a.path_mtu = 4096;
      a.dest_qp_num = qp[1 - i];
      a.ah_attr.dgid = e[1 - i]->config().gid;
      std::memcpy(a.ah_attr.dmac, e[1 - i]->config().mac, 6);
      if (connect_rc(*e[i], qp[i], a, &err) != 0) std::abort();
      e[i]->set_cc(qp[i], cc, {}, &err);
    }
    payload_ = payload;
  }

  void post(int n) {
    for (int k = 0; k < n; ++k) {
      Sge sge{mr[0].addr, payload_, mr[0].lkey};
      SendWr wr;
      wr.wr_id = k;
      wr.opcode = WrOpcode::kRdmaWrite;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.send_flags = 0;
      wr.rdma.remote_addr = mr[1].addr;
      wr.rdma.rkey = mr[1].rkey;
      e[0]->post_send(qp[0], &wr, nullptr);
    }
  }

  // Hands every frame one side's host holds to the other, contiguous (assembled
  // before the clock starts), then lets the receiver poll (its ACKs leave there).
  void deliver(int from, double* ns) {
    RingIo& src = io[from];
    Engine& dst = *e[1 - from];
    batch_len.clear();
    uint8_t* p = wire_buf.data();
    for (size_t i = 0; i < src.count; ++i) {
      const Frame& f = src.frames[i];
      std::memcpy(p, f.head, f.head_len);
      if (f.payload_len) std::memcpy(p + f.head_len, f.payload, f.payload_len);
      std::memcpy(p + f.head_len + f.payload_len, f.tail, f.tail_len);
      batch_len.push_back(f.head_len + f.payload_len + f.tail_len);
      p += 4608;
    }
    src.count = 0;
    const auto a = Clock::now();
    p = wire_buf.data();
    for (uint32_t len : batch_len) {
      dst.receive(now, p, len);
      p += 4608;
    }
    dst.poll(now);
    *ns += std::chrono::duration<double, std::nano>(Clock::now() - a).count();
  }

  std::vector<uint32_t> batch_len;
  uint32_t payload_;
};

void BM_EnginePacket(benchmark::State& state) {
  const auto payload = static_cast<uint32_t>(state.range(0));
  Bed bed(payload, state.range(1) != 0 ? "dcqcn" : "hpcc");
  constexpr int kBurst = 64;
  double send_ns = 0, recv_ns = 0, ack_ns = 0;
  uint64_t packets = 0;
  for (auto _ : state) {
    bed.post(kBurst);
    // Send side: the requester segments, paces and builds the burst.
    bed.now += 1'000;
    const auto a = Clock::now();
    bed.e[0]->poll(bed.now);
    send_ns += std::chrono::duration<double, std::nano>(Clock::now() - a).count();
    packets += bed.io[0].count;
    bed.now += 1'000;
    bed.deliver(0, &recv_ns);  // receive side: parse, checks, placement, ACK
    bed.now += 1'000;
    bed.deliver(1, &ack_ns);   // ACKs back: completion and congestion control
  }
  state.counters["send_ns_per_pkt"] = send_ns / static_cast<double>(packets);
  state.counters["recv_ns_per_pkt"] = recv_ns / static_cast<double>(packets);
  state.counters["ack_ns_per_pkt"] = ack_ns / static_cast<double>(packets);
  state.counters["total_ns_per_pkt"] = (send_ns + recv_ns + ack_ns) / static_cast<double>(packets);
  state.counters["Mpps_per_core"] = static_cast<double>(packets) * 1e3 / (send_ns + recv_ns + ack_ns);
  state.SetItemsProcessed(static_cast<int64_t>(packets));
}
// Arguments: payload bytes; 0 = HPCC (an ACK per packet), 1 = DCQCN (ACKs
// coalesced, one per ack_req_every = 8 packets).
BENCHMARK(BM_EnginePacket)->ArgsProduct({{64, 1024, 4096}, {0, 1}})->Unit(benchmark::kMicrosecond);
// A fixed amount of work (500 bursts = 32000 packets) for instruction counts under
// callgrind: scripts/callgrind-engine.sh divides the engine's instructions by it.
BENCHMARK(BM_EnginePacket)->Name("EnginePacketFixed")->ArgsProduct({{64, 4096}, {0, 1}})->Iterations(500);

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

// QPs per engine against memory: N connected QPs with 16-deep queues.
void BM_QpMemory(benchmark::State& state) {
  const auto n = static_cast<uint32_t>(state.range(0));
  for (auto _ : state) {
    const long before = rss_kib();
    RingIo io;
    EngineConfig c = config(0);
    c.max_qps = n;
    Engine eng(c, &io);
    const uint32_t pd = eng.alloc_pd();
    uint32_t cq;
    eng.create_cq(1024, &cq);
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t q;
      eng.create_qp(pd, {.send_cq = cq, .recv_cq = cq, .max_send_wr = 16, .max_recv_wr = 16, .max_sge = 1}, &q);
    }
    const long after = rss_kib();
    state.counters["qps"] = n;
    state.counters["rss_bytes_per_qp"] = static_cast<double>(after - before) * 1024.0 / n;
  }
  state.counters["qp_state_bytes"] = static_cast<double>(Engine::qp_state_bytes());
  state.counters["qp_hot_bytes"] = static_cast<double>(Engine::qp_hot_bytes());
}
BENCHMARK(BM_QpMemory)->Arg(1000)->Arg(10000)->Arg(65536)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
