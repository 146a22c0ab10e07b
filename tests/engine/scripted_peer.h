// One engine with one RC QP whose peer the test plays by hand: the frames the
// engine sends are captured, the peer's frames are built by the test and
// delivered. Shared by the protocol and path-control tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tita/engine/engine.h"
#include "tita/wire/frame.h"

namespace tita::engine::test {

// Every frame the engine hands to the host, as bytes.
struct CaptureIo : PacketIo {
  std::vector<std::vector<uint8_t>> frames;
  uint32_t space = 1024;
  bool sums = false;  // as the DPDK host: the ICRC summed in copy_to()
  uint32_t tx_space() override { return space; }
  bool sums_icrc() const override { return sums; }
  void transmit_burst(uint64_t, const TxFrame* burst, uint32_t n) override {
    for (uint32_t i = 0; i < n; ++i) transmit(burst[i]);
  }
  void transmit(const TxFrame& f) {
    std::vector<uint8_t> b(f.len());
    f.copy_to(b.data());
    frames.push_back(std::move(b));
    holds.push_back(f.hold);
    transients += f.transient;
  }
  std::vector<uint64_t> holds;  // each frame's TxFrame::hold
  uint32_t transients = 0;      // frames given as TxFrame::transient
};

inline constexpr uint32_t kPeerQpn = 0x100;
inline constexpr uint32_t kSqPsn = 100;  // our first request PSN
inline constexpr uint32_t kRqPsn = 500;  // the peer's first request PSN

class ScriptedPeerTest : public testing::Test {
 protected:
  // Creates the engine, a 64 KB region, a CQ and the QP, and moves the QP to
  // RTS towards the scripted peer (connect_rc). `a` carries what a test sets
  // beyond the common attributes (remote read and write access, path MTU 1024,
  // the peer's QPN, GID and MAC, kRqPsn, kSqPsn).
  void open(const EngineConfig& cfg, QpAttr a) {
    eng = std::make_unique<Engine>(cfg, &io);
    pd = eng->alloc_pd();
    mem.assign(1 << 16, 0xee);
    ASSERT_EQ(eng->reg_mr(pd, mem.data(), mem.size(), kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead, &mr),
              0);
    ASSERT_EQ(eng->create_cq(256, &cq), 0);
    ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &qpn), 0);
    std::string err;
    a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead;
    a.path_mtu = 1024;
    a.dest_qp_num = kPeerQpn;
    a.rq_psn = kRqPsn;
    a.ah_attr.dgid = peer_gid;
    std::memcpy(a.ah_attr.dmac, peer_mac, 6);
    a.sq_psn = kSqPsn;
    ASSERT_EQ(connect_rc(*eng, qpn, a, &err), 0) << err;
  }

  // The addressing of a frame from the peer to our QP; the test adds the rest.
  wire::FrameFields peer_fields(wire::Opcode op, uint32_t psn) const {
    wire::FrameFields f;
    std::memcpy(f.src_mac, peer_mac, 6);
    std::memcpy(f.dst_mac, eng->config().mac, 6);
    f.src_gid = peer_gid;
    f.dst_gid = eng->config().gid;
    f.opcode = op;
    f.dest_qp = qpn;
    f.psn = psn;
    return f;
  }

  // The frame of f carrying `payload` (none if empty).
  static std::vector<uint8_t> frame_of(const wire::FrameFields& f, const std::vector<uint8_t>& payload) {
    const auto n = static_cast<uint32_t>(payload.size());
    const wire::Segment seg{payload.data(), n};
    std::vector<uint8_t> buf(n + 256);
    const int len = wire::build_frame(f, {&seg, n ? 1u : 0u}, buf.data(), static_cast<uint32_t>(buf.size()));
    EXPECT_GT(len, 0);
    buf.resize(static_cast<size_t>(std::max(len, 0)));
    return buf;
  }

  // The frame as a tita peer sends it: with a COLLECT telemetry trailer (which
  // is how an engine knows its peer speaks selective repeat).
  static std::vector<uint8_t> from_tita(std::vector<uint8_t> frame) {
    const size_t end = frame.size();
    frame.resize(end + wire::kMaxTelemetryBytes);
    frame.resize(end + wire::telemetry_write(frame.data() + end, wire::TelemetryHdr::kCollect, 0));
    return frame;
  }

  void deliver(const std::vector<uint8_t>& frame) {
    eng->receive(now, frame.data(), static_cast<uint32_t>(frame.size()));
    eng->poll(now);
  }

  // The frames emitted since the last call, parsed (every one must parse, with
  // its ICRC and IPv4 checksum verified).
  std::vector<wire::Packet> sent() {
    std::vector<wire::Packet> out;
    for (size_t i = taken; i < io.frames.size(); ++i) {
      wire::Packet p;
      EXPECT_EQ(wire::parse(io.frames[i].data(), static_cast<uint32_t>(io.frames[i].size()), &p),
                wire::ParseError::kOk);
      out.push_back(p);
    }
    taken = io.frames.size();
    return out;
  }

  CaptureIo io;
  std::unique_ptr<Engine> eng;
  uint32_t pd = 0, cq = 0, qpn = 0;
  MrInfo mr;
  std::vector<uint8_t> mem;
  uint64_t now = 1'000'000;
  size_t taken = 0;
  uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x99};
  wire::Gid peer_gid = wire::Gid::from_ipv4(0x0a000099);
};

}  // namespace tita::engine::test
