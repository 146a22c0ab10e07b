// Test frames for lib/fabric: RoCEv2 packets built with lib/wire, optionally
// with a COLLECT telemetry trailer, and a harness that drives Switch<int> with
// the frames kept by id (as a host keeps mbufs).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "tita/fabric/switch.h"
#include "tita/wire/frame.h"

namespace tita::fabric::test {

struct Spec {
  wire::Gid src = wire::Gid::from_ipv4(0x0a000001);  // 10.0.0.1
  wire::Gid dst = wire::Gid::from_ipv4(0x0a000102);  // 10.0.1.2
  uint16_t sport = 0xc000;
  uint8_t dscp = 26;
  uint8_t ecn = wire::kEcnEct0;
  bool vlan = false;
  uint8_t pcp = 0;
  uint8_t ttl = 64;
  uint32_t payload = 940;  // 998-byte IPv4 frame
  bool collect = false;    // COLLECT trailer
  int hops = 0;            // records already in it
};

inline wire::Gid v6(uint8_t last) {
  wire::Gid g;
  g.raw[0] = 0xfd;
  g.raw[15] = last;
  return g;
}

inline std::vector<uint8_t> frame(const Spec& s) {
  wire::FrameFields f;
  f.src_gid = s.src;
  f.dst_gid = s.dst;
  f.udp_src_port = s.sport;
  f.dscp = s.dscp;
  f.ecn = s.ecn;
  f.vlan = s.vlan;
  f.pcp = s.pcp;
  f.ttl = s.ttl;
  f.opcode = wire::Opcode::kSendOnly;
  f.dest_qp = 0x11;
  f.psn = 7;
  std::vector<uint8_t> payload(s.payload);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 7);
  std::vector<uint8_t> buf(s.payload + 256);
  const wire::Segment seg{payload.data(), s.payload};
  const int len = wire::build_frame(f, {&seg, s.payload ? 1u : 0u}, buf.data(), static_cast<uint32_t>(buf.size()));
  EXPECT_GT(len, 0);
  buf.resize(static_cast<size_t>(len));
  if (s.collect) {
    uint8_t t[wire::kMaxTelemetryBytes];
    uint32_t tl = wire::telemetry_write(t, wire::TelemetryHdr::kCollect, 0x12345678);
    for (int h = 0; h < s.hops; ++h) {
      std::memset(t + tl, 0xee, sizeof(wire::TelemetryHop));
      tl += sizeof(wire::TelemetryHop);
    }
    t[1] = static_cast<uint8_t>(t[1] | s.hops);
    buf.insert(buf.end(), t, t + tl);
  }
  return buf;
}

inline FrameRef frame_ref(const std::vector<uint8_t>& b, uint32_t room = 256) {
  FrameRef r;
  r.data = b.data();
  r.data_len = static_cast<uint32_t>(b.size());
  r.frame_bytes = static_cast<uint32_t>(b.size());
  r.trailer_room = room;
  return r;
}

inline PortConfig port(uint64_t rate_bps, bool shaped = false) {
  PortConfig p;
  p.rate_bps = rate_bps;
  p.shaped = shaped;
  return p;
}

// Drives a Switch<int>: frames are kept by id; dequeue applies the edit.
struct Harness {
  Switch<int> sw;
  std::map<int, std::vector<uint8_t>> frames;
  int next_id = 1;

  int init(const SwitchConfig& c) {
    std::string err;
    const int rc = sw.init(c, &err);
    EXPECT_EQ(rc, 0) << err;
    return rc;
  }
  void route(uint32_t ipv4, int len, std::vector<uint16_t> ports) {
    const wire::Gid g = wire::Gid::from_ipv4(ipv4);
    std::string err;
    ASSERT_EQ(sw.add_route(g.raw, 96 + len, ports, &err), 0) << err;
  }
  void route6(const wire::Gid& g, int len, std::vector<uint16_t> ports) {
    std::string err;
    ASSERT_EQ(sw.add_route(g.raw, len, ports, &err), 0) << err;
  }
  RxResult send(uint16_t in, std::vector<uint8_t> f, uint64_t now_ns, uint32_t room = 256) {
    int id = next_id++;
    const RxResult r = sw.receive(in, id, frame_ref(f, room), now_ns);
    if (r.verdict == Verdict::kQueued) frames[id] = std::move(f);
    return r;
  }
  RxResult send(uint16_t in, const Spec& s, uint64_t now_ns) { return send(in, frame(s), now_ns); }
  // The next frame out of `port`, edited; empty when none.
  std::vector<uint8_t> take(uint16_t port, uint64_t now_ns, EgressEdit* edit_out = nullptr) {
    int id = 0;
    EgressEdit e;
    if (!sw.dequeue(port, now_ns, &id, &e)) return {};
    std::vector<uint8_t> f = std::move(frames.at(id));
    frames.erase(id);
    f.resize(f.size() + e.grow_bytes);
    apply_edit(e, f.data());
    EXPECT_EQ(f.size(), e.frame_bytes);
    if (edit_out != nullptr) *edit_out = e;
    return f;
  }
};

}  // namespace tita::fabric::test
