// The whole switch through Switch<Handle>: forwarding, ECMP, scheduling, PFC,
// RED, INT, faults, delay line, counters. Frames are real RoCEv2 (lib/wire)
// and every frame that leaves is checked to parse with a valid ICRC.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <memory>

#include "frames.h"

namespace tita::fabric {
namespace {

using test::frame;
using test::Harness;
using test::port;
using test::Spec;

constexpr uint64_t k25G = 25'000'000'000;

// Ports: 0 towards 10.0.0.0/24, 1 towards 10.0.1.2, 2-3 an ECMP group for
// 10.0.2.0/24, and a default route to 3.
SwitchConfig four_ports() {
  SwitchConfig c;
  for (int i = 0; i < 4; ++i) c.ports.push_back(port(k25G));
  return c;
}

void four_routes(Harness& h) {
  h.route(0x0a000000, 24, {0});
  h.route(0x0a000102, 32, {1});
  h.route(0x0a000200, 24, {2, 3});
  h.route(0, 0, {3});
}

void expect_valid(const std::vector<uint8_t>& f) {
  wire::Packet p;
  ASSERT_EQ(wire::parse(f.data(), static_cast<uint32_t>(f.size()), &p), wire::ParseError::kOk);
}

TEST(Switch, ForwardsByDestination) {
  Harness h;
  ASSERT_EQ(h.init(four_ports()), 0);
  four_routes(h);
  Spec s;
  EXPECT_EQ(h.send(0, s, 0).out_port, 1);
  s.dst = wire::Gid::from_ipv4(0x0a000005);
  EXPECT_EQ(h.send(1, s, 0).out_port, 0);
  s.dst = wire::Gid::from_ipv4(0xc0a80001);
  EXPECT_EQ(h.send(1, s, 0).out_port, 3);  // default
  Spec v6;
  v6.src = test::v6(1);
  v6.dst = test::v6(2);
  h.route6(test::v6(2), 128, {2});
  EXPECT_EQ(h.send(0, v6, 0).out_port, 2);
  for (uint16_t p : {1, 0, 3, 2}) {
    const auto f = h.take(p, 0);
    ASSERT_FALSE(f.empty()) << p;
    expect_valid(f);
  }
  EXPECT_EQ(h.sw.counters(0).rx_packets, 2u);
  EXPECT_EQ(h.sw.counters(1).tx_packets, 1u);
  EXPECT_TRUE(h.sw.idle());
}

TEST(Switch, NoRouteTtlAndMalformedAreCountedOnTheIngressPort) {
  SwitchConfig c = four_ports();
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  h.route(0x0a000102, 32, {1});
  Spec s;
  s.dst = wire::Gid::from_ipv4(0x0b000001);
  RxResult r = h.send(2, s, 0);
  EXPECT_EQ(r.verdict, Verdict::kDropped);
  EXPECT_EQ(r.reason, DropReason::kNoRoute);
  s = Spec{};
  s.ttl = 1;
  EXPECT_EQ(h.send(2, s, 0).reason, DropReason::kTtlExpired);
  auto bad = frame(Spec{});
  bad.resize(20);
  EXPECT_EQ(h.send(2, bad, 0).reason, DropReason::kMalformed);
  auto arp = frame(Spec{});
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_EQ(h.send(2, arp, 0).reason, DropReason::kUnsupported);
  const PortCounters& pc = h.sw.counters(2);
  EXPECT_EQ(pc.drops[static_cast<int>(DropReason::kNoRoute)], 1u);
  EXPECT_EQ(pc.drops[static_cast<int>(DropReason::kTtlExpired)], 1u);
  EXPECT_EQ(pc.drops[static_cast<int>(DropReason::kMalformed)], 1u);
  EXPECT_EQ(pc.drops[static_cast<int>(DropReason::kUnsupported)], 1u);
  EXPECT_EQ(pc.dropped(), 4u);
  EXPECT_EQ(pc.rx_packets, 4u);
  // TTL 2 leaves with 1 and a valid checksum.
  s.ttl = 2;
  ASSERT_EQ(h.send(2, s, 0).verdict, Verdict::kQueued);
  const auto f = h.take(1, 0);
  expect_valid(f);
  EXPECT_EQ(f[14 + 8], 1);
}

TEST(Switch, EcmpGroupFollowsEcmpSelectAndTheDodgeField) {
  SwitchConfig c = four_ports();
  c.ecmp.seed = 99;
  c.ecmp.dodge_field = DodgeField::kUdpSport;
  c.ecmp.dodge_mask = 0x0001;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  int on2 = 0;
  for (uint16_t sp = 0; sp < 2000; sp += 2) {
    Spec s;
    s.dst = wire::Gid::from_ipv4(0x0a000207);
    s.sport = static_cast<uint16_t>(0xc000 + sp);
    const uint16_t a = h.send(0, s, 0).out_port;
    s.sport = static_cast<uint16_t>(s.sport | 1);  // the dodge bit
    const uint16_t b = h.send(0, s, 0).out_port;
    ASSERT_TRUE(a == 2 || a == 3);
    ASSERT_NE(a, b);
    on2 += a == 2;
  }
  EXPECT_NEAR(on2, 500, 6 * 15.8);
  // The control plane takes port 2 away: everything goes to 3.
  h.sw.set_port_up(2, false);
  Spec s;
  s.dst = wire::Gid::from_ipv4(0x0a000207);
  for (int i = 0; i < 50; ++i) {
    s.sport = static_cast<uint16_t>(0xc000 + i);
    EXPECT_EQ(h.send(0, s, 0).out_port, 3);
  }
}

TEST(Switch, ForwardPortIsWhereReceiveQueues) {
  SwitchConfig c = four_ports();
  c.ecmp.seed = 5;
  c.ecmp.dodge_field = DodgeField::kUdpSport;
  c.ecmp.dodge_mask = 0x000f;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  for (uint32_t dst : {0x0a000207u, 0x0a000102u, 0x0a000005u, 0x0b000001u}) {
    for (uint16_t sp = 0; sp < 64; ++sp) {
      Spec s;
      s.dst = wire::Gid::from_ipv4(dst);
      s.sport = static_cast<uint16_t>(0xc000 + 37 * sp);
      const std::vector<uint8_t> f = frame(s);
      Classified k;
      classify({f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size())}, {}, false, &k);
      ASSERT_EQ(h.sw.forward_port(k.key, k.dscp), h.send(0, f, 0).out_port);
    }
  }
  h.sw.set_port_up(3, false);
  Classified k;
  const std::vector<uint8_t> f = frame(Spec{.dst = wire::Gid::from_ipv4(0x0b000001)});
  classify({f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size())}, {}, false, &k);
  EXPECT_EQ(h.sw.forward_port(k.key, k.dscp), -1);  // the default route's only port is down
}

TEST(Switch, StrictPriorityRoundRobinAndPauseSkipping) {
  SwitchConfig c = four_ports();
  c.ports[2].strict_priority = false;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  h.route(0x0a000203, 32, {2});
  auto with_prio = [](uint8_t pcp, uint32_t dst) {
    Spec s;
    s.vlan = true;
    s.pcp = pcp;
    s.dst = wire::Gid::from_ipv4(dst);
    return s;
  };
  for (uint8_t p : {1, 5, 3, 5, 1}) ASSERT_EQ(h.send(0, with_prio(p, 0x0a000102), 0).priority, p);
  std::vector<int> order;
  EgressEdit e;
  for (int i = 0; i < 5; ++i) {
    const auto f = h.take(1, 0, &e);
    order.push_back(f[14] >> 5);
  }
  EXPECT_EQ(order, (std::vector<int>{5, 5, 3, 1, 1}));

  // Round robin on port 2 (strict_priority off): 1, 3, 5, 1, 3, 1.
  for (uint8_t p : {1, 1, 1, 3, 3, 5}) ASSERT_EQ(h.send(0, with_prio(p, 0x0a000203), 0).out_port, 2);
  order.clear();
  for (int i = 0; i < 6; ++i) order.push_back(h.take(2, 0)[14] >> 5);
  EXPECT_EQ(order, (std::vector<int>{1, 3, 5, 1, 3, 1}));

  // Port 1's peer pauses priority 5 for 100 quanta (2.048 us at 25 Gb/s).
  for (uint8_t p : {5, 3}) h.send(0, with_prio(p, 0x0a000102), 1000);
  PfcInfo info;
  info.class_enable = 1 << 5;
  info.quanta[5] = 100;
  std::vector<uint8_t> pfc(kPfcFrameBytes);
  const uint8_t mac[6] = {2, 0, 0, 0, 0, 1};
  build_pfc_frame(pfc.data(), kPfcFrameBytes, mac, info);
  EXPECT_EQ(h.send(1, pfc, 1000).verdict, Verdict::kPfc);
  EXPECT_TRUE(h.sw.egress_paused(1, 5, 1000));
  EXPECT_EQ(h.sw.counters(1).pfc_pause_received[5], 1u);
  EXPECT_EQ(h.take(1, 1000)[14] >> 5, 3);  // 5 is skipped
  EXPECT_TRUE(h.take(1, 1000).empty());
  EXPECT_EQ(h.sw.next_event_ns(1, 1000), 1000u + 2048u);
  EXPECT_TRUE(h.take(1, 3047).empty());
  EXPECT_EQ(h.take(1, 3048)[14] >> 5, 5);
  // A resume (quanta 0) lifts a pause at once.
  h.send(0, with_prio(5, 0x0a000102), 4000);
  info.quanta[5] = 0xffff;
  build_pfc_frame(pfc.data(), kPfcFrameBytes, mac, info);
  h.send(1, pfc, 4000);
  EXPECT_TRUE(h.take(1, 4000).empty());
  info.quanta[5] = 0;
  build_pfc_frame(pfc.data(), kPfcFrameBytes, mac, info);
  h.send(1, pfc, 4001);
  EXPECT_FALSE(h.take(1, 4001).empty());
  EXPECT_EQ(h.sw.counters(1).pfc_resume_received[5], 1u);
}

// RED with the queue held at a constant length L: every dequeue sees L bytes
// left behind, so marks are Binomial(N, p) with p = pmax (L - Kmin) / (Kmax - Kmin).
TEST(Switch, RedMarkingFrequencyWithinBinomialBounds) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    SwitchConfig c = four_ports();
    c.seed = seed;
    c.ports[1].red = {10'000, 110'000, 0.5};
    Harness h;
    ASSERT_EQ(h.init(c), 0);
    four_routes(h);
    const uint32_t len = static_cast<uint32_t>(frame(Spec{}).size());  // 998
    // Keep 30 frames queued: L = 29,940 -> p = 0.5 * 19,940 / 100,000 = 0.0997.
    for (int i = 0; i < 30; ++i) h.send(0, Spec{}, 0);
    const double p = 0.5 * (30.0 * len - 10'000) / 100'000;
    const int n = 20'000;
    int marks = 0;
    for (int i = 0; i < n; ++i) {
      h.send(0, Spec{}, 0);
      const auto f = h.take(1, 0);
      marks += (f[15] & 3) == wire::kEcnCe;
    }
    EXPECT_EQ(static_cast<uint64_t>(marks), h.sw.counters(1).ecn_marked);
    const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(marks, mean, 4 * sd) << "seed " << seed;
  }
}

TEST(Switch, RedBelowKminNeverAboveKmaxAlwaysNotEctNever) {
  SwitchConfig c = four_ports();
  c.ports[1].red = {50'000, 60'000, 0.2};
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  // 50 frames (49,900 bytes): the queue left behind is always <= Kmin.
  for (int i = 0; i < 50; ++i) h.send(0, Spec{}, 0);
  for (int i = 0; i < 50; ++i) EXPECT_NE(h.take(1, 0)[15] & 3, wire::kEcnCe);
  // 100 frames: the first 39 leave more than Kmax (60,000) behind: always CE.
  for (int i = 0; i < 100; ++i) h.send(0, Spec{}, 0);
  for (int i = 0; i < 39; ++i) {
    const auto f = h.take(1, 0);
    EXPECT_EQ(f[15] & 3, wire::kEcnCe) << i;
    expect_valid(f);
  }
  while (!h.take(1, 0).empty()) {
  }
  Spec not_ect;
  not_ect.ecn = wire::kEcnNotEct;
  for (int i = 0; i < 100; ++i) h.send(0, not_ect, 0);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(h.take(1, 0)[15] & 3, wire::kEcnNotEct);
}

TEST(Switch, SameSeedSameDecisions) {
  auto run = [](uint64_t seed) {
    SwitchConfig c = four_ports();
    c.seed = seed;
    c.ports[1].red = {10'000, 110'000, 0.5};
    c.ports[1].fault.drop_probability = 0.1;
    Harness h;
    h.init(c);
    four_routes(h);
    std::vector<int> trace;
    for (int i = 0; i < 3000; ++i) {
      trace.push_back(h.send(0, Spec{}, 0).verdict == Verdict::kQueued);
      if (i % 3 == 2) trace.push_back((h.take(1, 0)[15] & 3) == wire::kEcnCe);
    }
    return trace;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

TEST(Switch, IntRecordsCarryRateClockTxBytesAndQueue) {
  Harness h;
  ASSERT_EQ(h.init(four_ports()), 0);
  four_routes(h);
  Spec s;
  s.collect = true;
  const uint32_t len = static_cast<uint32_t>(frame(s).size());
  for (int i = 0; i < 3; ++i) h.send(0, s, 100);
  EXPECT_EQ(h.sw.qlen_bytes(1), 3u * len);
  for (uint32_t i = 0; i < 3; ++i) {
    EgressEdit e;
    const auto f = h.take(1, 5000 + i, &e);
    EXPECT_EQ(e.grow_bytes, 16u);
    wire::Packet p;
    ASSERT_EQ(wire::parse(f.data(), static_cast<uint32_t>(f.size()), &p), wire::ParseError::kOk);
    ASSERT_NE(p.telemetry(), nullptr);
    ASSERT_EQ(p.telemetry()->hops(), 1);
    EXPECT_EQ(p.telemetry()->ts_ns.get(), 0x12345678u);  // the sender's, untouched
    const wire::TelemetryHop& hop = wire::telemetry_hops(p.telemetry())[0];
    EXPECT_EQ(hop.rate_mbps.get(), 25'000u);
    EXPECT_EQ(hop.ts_ns.get(), 5000 + i);
    EXPECT_EQ(hop.tx_bytes.get(), (i + 1) * (len + 16));
    EXPECT_EQ(hop.qlen_bytes.get(), (2 - i) * len);
  }
  EXPECT_EQ(h.sw.counters(1).int_pushed, 3u);
  EXPECT_EQ(h.sw.counters(1).tx_bytes, 3u * (len + 16));
  // A full trailer gets OVERFLOW, and no room means the same.
  s.hops = 5;
  h.send(0, s, 0);
  EgressEdit e;
  auto f = h.take(1, 0, &e);
  EXPECT_EQ(e.grow_bytes, 0u);
  wire::Packet p;
  ASSERT_EQ(wire::parse(f.data(), static_cast<uint32_t>(f.size()), &p), wire::ParseError::kOk);
  EXPECT_TRUE(p.telemetry()->overflow());
  s.hops = 0;
  h.send(0, frame(s), 0, 8);
  f = h.take(1, 0, &e);
  ASSERT_EQ(wire::parse(f.data(), static_cast<uint32_t>(f.size()), &p), wire::ParseError::kOk);
  EXPECT_TRUE(p.telemetry()->overflow());
  EXPECT_EQ(h.sw.counters(1).int_overflowed, 2u);
}

TEST(Switch, ShapedPortDeparturesAndIntClock) {
  // 10 Gb/s, no bucket beyond the 1 ns minimum: frames start back to back from
  // the first poll, and the INT clock is each frame's start.
  SwitchConfig c = four_ports();
  c.ports[1] = port(10'000'000'000, true);
  c.ports[1].burst_bytes = 0;
  c.int_enabled = true;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  Spec s;
  s.collect = true;
  const uint32_t out_len = static_cast<uint32_t>(frame(s).size()) + 16;  // 1022 bytes: 817.6 ns
  for (int i = 0; i < 10; ++i) h.send(0, s, 0);
  uint64_t now = 1000;
  for (uint64_t k = 0; k < 10; ++k) {
    while (h.sw.next_event_ns(1, now) > now) now = h.sw.next_event_ns(1, now);
    const auto f = h.take(1, now);
    ASSERT_FALSE(f.empty());
    wire::Packet p;
    ASSERT_EQ(wire::parse(f.data(), static_cast<uint32_t>(f.size()), &p), wire::ParseError::kOk);
    // The first frame after idle starts one bucket (1 ns) back; then exactly 817.6 ns apart.
    const uint64_t start = 999 + k * out_len * 8 / 10;
    EXPECT_EQ(wire::telemetry_hops(p.telemetry())[0].ts_ns.get(), start) << k;
    EXPECT_TRUE(h.take(1, now).empty());
  }
  EXPECT_EQ(h.sw.next_event_ns(1, now), kNever);
}

TEST(Switch, BlackHoleDropsExactlyTheOneFlow) {
  SwitchConfig c = four_ports();
  c.ports[1].fault.black_hole = true;
  FlowMatch& m = c.ports[1].fault.black_hole_flow;
  m.fields = FlowMatch::kSrc | FlowMatch::kDst | FlowMatch::kSport | FlowMatch::kDport | FlowMatch::kProto;
  Spec victim;
  victim.sport = 0xc001;
  std::memcpy(m.key.src, victim.src.raw, 16);
  std::memcpy(m.key.dst, victim.dst.raw, 16);
  m.key.sport = 0xc001;
  m.key.dport = 4791;
  m.key.proto = 17;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  int queued = 0;
  for (int i = 0; i < 300; ++i) {
    Spec s = victim;
    if (i % 3 == 1) s.sport = 0xc002;                            // same pair, other port
    if (i % 3 == 2) s.src = wire::Gid::from_ipv4(0x0a000009);    // other source
    const RxResult r = h.send(0, s, 0);
    if (i % 3 == 0) {
      EXPECT_EQ(r.reason, DropReason::kFaultBlackHole);
    } else {
      EXPECT_EQ(r.verdict, Verdict::kQueued);
      ++queued;
    }
  }
  EXPECT_EQ(h.sw.counters(1).drops[static_cast<int>(DropReason::kFaultBlackHole)], 100u);
  EXPECT_EQ(h.sw.counters(1).dropped(), 100u);
  EXPECT_EQ(queued, 200);
}

TEST(Switch, DropAllBlackHolesExactlyTheFlowsEcmpSendsToThePort) {
  SwitchConfig c = four_ports();
  c.ecmp.seed = 4;
  c.ports[3].fault.drop_all = true;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  int expected = 0, dropped = 0;
  for (int i = 0; i < 1000; ++i) {
    Spec s;
    s.dst = wire::Gid::from_ipv4(0x0a000201);
    s.sport = static_cast<uint16_t>(0xc000 + i);
    Classified cl;
    const auto f = frame(s);
    classify(test::frame_ref(f), c.classify, false, &cl);
    expected += ecmp_select(c.ecmp, cl.key, cl.dscp, 2) == 1;  // port 3 is member 1 of {2, 3}
    const RxResult r = h.send(0, f, 0);
    dropped += r.reason == DropReason::kFaultPortDrop && r.verdict == Verdict::kDropped;
    EXPECT_EQ(r.verdict == Verdict::kDropped, r.out_port == 3);
  }
  EXPECT_EQ(dropped, expected);
  EXPECT_NEAR(dropped, 500, 100);
}

TEST(Switch, RandomLossRate) {
  SwitchConfig c = four_ports();
  c.ports[1].fault.drop_probability = 0.05;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  int dropped = 0;
  for (int i = 0; i < 20'000; ++i) {
    dropped += h.send(0, Spec{}, 0).reason == DropReason::kFaultRandom;
    h.take(1, 0);
  }
  EXPECT_NEAR(dropped, 1000, 4 * std::sqrt(20'000 * 0.05 * 0.95));
}

TEST(Switch, DelayLine) {
  SwitchConfig c = four_ports();
  c.ports[1].fault.delay_ns = 10'000;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  h.send(0, Spec{}, 0);
  EXPECT_TRUE(h.take(1, 0).empty());  // moved to the delay line, leaves at 10,000
  h.send(0, Spec{}, 500);
  EXPECT_TRUE(h.take(1, 500).empty());  // leaves at 10,500
  EXPECT_EQ(h.sw.held_packets(), 2u);
  EXPECT_EQ(h.sw.qlen_bytes(1), 0u);  // on the wire, not in the buffer
  EXPECT_EQ(h.sw.mmu().total_bytes(), 0u);
  EXPECT_EQ(h.sw.next_event_ns(1, 500), 10'000u);
  EXPECT_TRUE(h.take(1, 9999).empty());
  expect_valid(h.take(1, 10'000));
  EXPECT_TRUE(h.take(1, 10'000).empty());
  EXPECT_EQ(h.sw.next_event_ns(1, 10'000), 10'500u);
  EXPECT_FALSE(h.take(1, 10'500).empty());
  EXPECT_TRUE(h.sw.idle());
}

TEST(Switch, ReorderedPacketsOvertakeTheDelayLine) {
  SwitchConfig c = four_ports();
  c.ports[1].fault.delay_ns = 10'000;
  c.ports[1].fault.reorder_probability = 0.25;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  // Packet i has a payload of 100 + i % 800 bytes: its length says which it was.
  constexpr int kPackets = 2000;
  size_t delivered = 0;
  uint64_t early = 0;  // packet i out at its own arrival: sent ahead of the line
  for (int i = 0; i < kPackets; ++i) {
    Spec s;
    s.payload = 100 + static_cast<uint32_t>(i % 800);
    const uint64_t t = static_cast<uint64_t>(i) * 1000;
    ASSERT_EQ(h.send(0, s, t).verdict, Verdict::kQueued);
    for (auto f = h.take(1, t); !f.empty(); f = h.take(1, t)) {
      wire::Packet p;
      ASSERT_EQ(wire::parse(f.data(), static_cast<uint32_t>(f.size()), &p), wire::ParseError::kOk);
      ++delivered;
      early += p.payload_len == s.payload;  // the delayed ones out now were sent 10 packets earlier
    }
  }
  for (auto f = h.take(1, 1'000'000'000); !f.empty(); f = h.take(1, 1'000'000'000)) ++delivered;
  EXPECT_EQ(delivered, static_cast<size_t>(kPackets));  // every one, intact
  EXPECT_TRUE(h.sw.idle());
  const uint64_t reordered = h.sw.counters(1).fault_reordered;
  EXPECT_NEAR(static_cast<double>(reordered), kPackets * 0.25, 4 * std::sqrt(kPackets * 0.25 * 0.75));
  // The packet sent at i left at once exactly when it was one of the reordered.
  EXPECT_EQ(early, reordered);
  EXPECT_GT(early, 0u);
}

TEST(Switch, CorruptionFlipsOnePsnBitThatTheIcrcCatches) {
  SwitchConfig c = four_ports();
  c.ports[1].fault.corrupt_probability = 1.0;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  for (int i = 0; i < 50; ++i) {
    const std::vector<uint8_t> in = frame(Spec{});
    h.send(0, in, 0);
    std::vector<uint8_t> out = h.take(1, 0);
    ASSERT_EQ(out.size(), in.size());
    int bits = 0;
    size_t where = 0;
    for (size_t b = 0; b < in.size(); ++b) {
      // The TTL went down by one, as every forwarded frame's does (IP checksum too).
      if (b == 14 + 8 || b == 14 + 10 || b == 14 + 11) continue;
      if (const int d = std::popcount(static_cast<unsigned>(in[b] ^ out[b])); d != 0) bits += d, where = b;
    }
    EXPECT_EQ(bits, 1);
    const size_t psn = 14 + 20 + 8 + 9;  // Ethernet, IPv4, UDP, then the BTH's PSN
    EXPECT_GE(where, psn);
    EXPECT_LT(where, psn + 3);
    wire::Packet p;
    EXPECT_EQ(wire::parse(out.data(), static_cast<uint32_t>(out.size()), &p), wire::ParseError::kBadIcrc);
  }
  EXPECT_EQ(h.sw.counters(1).fault_corrupted, 50u);
  // At 5%, about one in twenty.
  FaultConfig f;
  f.corrupt_probability = 0.05;
  h.sw.set_fault(1, f);
  int bad = 0;
  for (int i = 0; i < 20'000; ++i) {
    h.send(0, Spec{}, 0);
    std::vector<uint8_t> out = h.take(1, 0);
    wire::Packet p;
    bad += wire::parse(out.data(), static_cast<uint32_t>(out.size()), &p) == wire::ParseError::kBadIcrc;
  }
  EXPECT_NEAR(bad, 1000, 4 * std::sqrt(20'000 * 0.05 * 0.95));
  EXPECT_EQ(h.sw.counters(1).fault_corrupted, 50u + static_cast<uint64_t>(bad));
}

TEST(Switch, DelaySetAtRunTime) {
  Harness h;
  ASSERT_EQ(h.init(four_ports()), 0);
  four_routes(h);
  FaultConfig f;
  f.delay_ns = 2000;
  h.sw.set_fault(1, f);
  Spec s;
  s.collect = true;
  h.send(0, s, 0);
  EXPECT_TRUE(h.take(1, 100).empty());
  EgressEdit e;
  const auto out = h.take(1, 2100, &e);
  ASSERT_FALSE(out.empty());
  wire::Packet p;
  ASSERT_EQ(wire::parse(out.data(), static_cast<uint32_t>(out.size()), &p), wire::ParseError::kOk);
  EXPECT_EQ(wire::telemetry_hops(p.telemetry())[0].ts_ns.get(), 100u);  // stamped when it left the queue
  h.sw.set_fault(1, FaultConfig{});
  h.send(0, Spec{}, 3000);
  EXPECT_FALSE(h.take(1, 3000).empty());
}

TEST(Switch, PfcPauseAndResumeFramesOnTheIngressPort) {
  SwitchConfig c = four_ports();
  c.mmu.lossless = 1 << 3;
  c.mmu.pfc_dynamic = false;
  c.mmu.xoff_bytes = 20'000;
  c.mmu.xon_bytes = 5'000;
  c.mmu.reserve_bytes = 0;
  c.pfc_quanta = 1000;
  for (int i = 0; i < 4; ++i) c.ports[i].mac[5] = static_cast<uint8_t>(0x10 + i);
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  uint8_t buf[128];
  uint16_t out_port = 99;
  int sent = 0;
  while (!h.sw.pfc_pending()) {
    ASSERT_EQ(h.send(2, Spec{}, 1000).priority, 3);  // DSCP 26 -> priority 3
    ++sent;
  }
  EXPECT_EQ(sent, 21);  // 20 frames of 998 bytes in shared (19,960); the 21st would pass 20,000: headroom, XOFF
  ASSERT_EQ(h.sw.pfc_frame(&out_port, buf, sizeof buf, 1000), static_cast<int>(kPfcFrameBytes));
  EXPECT_EQ(out_port, 2);
  PfcInfo info;
  ASSERT_TRUE(parse_pfc_frame(buf, kPfcFrameBytes, &info));
  EXPECT_EQ(info.class_enable, 1 << 3);
  EXPECT_EQ(info.quanta[3], 1000);
  EXPECT_EQ(buf[11], 0x12);  // source: port 2's MAC
  EXPECT_EQ(h.sw.pfc_frame(&out_port, buf, sizeof buf, 1000), 0);
  EXPECT_EQ(h.sw.counters(2).pfc_pause_sent[3], 1u);

  // Refresh: 1000 quanta at 25 Gb/s = 20.48 us; XOFF again after half of it.
  EXPECT_EQ(h.sw.next_poll_ns(), 1000u + 10'240u);
  h.sw.poll(11'239);
  EXPECT_FALSE(h.sw.pfc_pending());
  h.sw.poll(11'240);
  ASSERT_EQ(h.sw.pfc_frame(&out_port, buf, sizeof buf, 11'240), static_cast<int>(kPfcFrameBytes));
  ASSERT_TRUE(parse_pfc_frame(buf, kPfcFrameBytes, &info));
  EXPECT_EQ(info.quanta[3], 1000);
  EXPECT_EQ(h.sw.counters(2).pfc_pause_sent[3], 2u);

  // Drain port 1 until S <= 5,000: XON.
  int taken = 0;
  while (!h.sw.pfc_pending()) {
    ASSERT_FALSE(h.take(1, 12'000).empty());
    ++taken;
  }
  EXPECT_EQ(taken, 16);  // the headroom frame, then 15 until S = 19,960 - 15 * 998 <= 5,000
  ASSERT_EQ(h.sw.pfc_frame(&out_port, buf, sizeof buf, 12'000), static_cast<int>(kPfcFrameBytes));
  ASSERT_TRUE(parse_pfc_frame(buf, kPfcFrameBytes, &info));
  EXPECT_EQ(info.class_enable, 1 << 3);
  EXPECT_EQ(info.quanta[3], 0);
  EXPECT_EQ(h.sw.counters(2).pfc_resume_sent[3], 1u);
  EXPECT_EQ(h.sw.next_poll_ns(), kNever);
}

TEST(Switch, LosslessHeadroomOverflowDrops) {
  SwitchConfig c = four_ports();
  c.mmu.lossless = 1 << 3;
  c.mmu.pfc_dynamic = false;
  c.mmu.xoff_bytes = 10'000;
  c.mmu.xon_bytes = 1'000;
  c.mmu.reserve_bytes = 0;
  c.mmu.headroom_bytes = 5'000;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  // 10 frames to shared (9,980), then headroom: 1 frame above XOFF's 10,000 ... 5 fit.
  int queued = 0;
  RxResult r;
  while ((r = h.send(0, Spec{}, 0)).verdict == Verdict::kQueued) ++queued;
  EXPECT_EQ(r.reason, DropReason::kHeadroomFull);
  EXPECT_EQ(queued, 10 + 5);
  EXPECT_EQ(h.sw.counters(1).queue[3].dropped_packets, 1u);
}

TEST(Switch, DescriptorsRunOut) {
  SwitchConfig c = four_ports();
  c.max_packets = 4;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(h.send(0, Spec{}, 0).verdict, Verdict::kQueued);
  EXPECT_EQ(h.send(0, Spec{}, 0).reason, DropReason::kNoDescriptor);
  h.take(1, 0);
  EXPECT_EQ(h.send(0, Spec{}, 0).verdict, Verdict::kQueued);
}

TEST(Switch, DescriptorsGrowOnDemandUpToTheLimit) {
  SwitchConfig c = four_ports();
  c.max_packets = 3000;
  c.initial_packets = 16;
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  EXPECT_EQ(h.sw.descriptors(), 16u);
  // Expect: 3000 packets queued (16, then 1024, 2048, 3000 descriptors), the
  // next refused, and every one handed back intact, in order.
  int queued = 0;
  RxResult r;
  while ((r = h.send(0, Spec{}, 0)).verdict == Verdict::kQueued) ++queued;
  EXPECT_EQ(queued, 3000);
  EXPECT_EQ(r.reason, DropReason::kNoDescriptor);
  EXPECT_EQ(h.sw.descriptors(), 3000u);
  for (int i = 0; i < 3000; ++i) expect_valid(h.take(1, 0));
  EXPECT_TRUE(h.sw.idle());
  c.initial_packets = 4000;
  decltype(h.sw) bad;
  std::string err;
  EXPECT_EQ(bad.init(c, &err), -EINVAL);
  EXPECT_EQ(err, "initial_packets 4000 exceeds max_packets 3000");
}

TEST(Switch, MacRewrite) {
  SwitchConfig c = four_ports();
  c.ports[1].rewrite_mac = true;
  const uint8_t own[6] = {2, 0, 0, 0, 1, 1}, peer[6] = {2, 0, 0, 0, 2, 2};
  std::memcpy(c.ports[1].mac, own, 6);
  std::memcpy(c.ports[1].next_hop_mac, peer, 6);
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  h.send(0, Spec{}, 0);
  const auto f = h.take(1, 0);
  expect_valid(f);
  EXPECT_EQ(std::memcmp(f.data(), peer, 6), 0);
  EXPECT_EQ(std::memcmp(f.data() + 6, own, 6), 0);
}

TEST(Switch, QueueCountersAndTimeAverage) {
  Harness h;
  ASSERT_EQ(h.init(four_ports()), 0);
  four_routes(h);
  const uint32_t len = static_cast<uint32_t>(frame(Spec{}).size());
  h.send(0, Spec{}, 0);
  h.send(0, Spec{}, 1000);
  h.take(1, 2000);
  h.take(1, 3000);
  // Queue: len over [0,1000), 2 len over [1000,2000), len over [2000,3000): mean over [0,4000] = len.
  EXPECT_DOUBLE_EQ(h.sw.avg_qlen_bytes(1, 4000), len);
  EXPECT_DOUBLE_EQ(h.sw.avg_queue_bytes(1, 3, 4000), len);
  const PortCounters& pc = h.sw.counters(1);
  EXPECT_EQ(pc.max_qlen_bytes, 2u * len);
  EXPECT_EQ(pc.queue[3].enqueued_packets, 2u);
  EXPECT_EQ(pc.queue[3].dequeued_bytes, 2u * len);
  EXPECT_EQ(pc.queue[3].max_qlen_bytes, 2u * len);
  h.sw.reset_counters(4000);
  EXPECT_EQ(h.sw.counters(1).tx_packets, 0u);
  EXPECT_DOUBLE_EQ(h.sw.avg_qlen_bytes(1, 5000), 0.0);
}

TEST(Switch, HooksSeeQueueDropsAndPfc) {
  struct Seen {
    int qlen = 0, drops = 0;
    uint64_t last_port_bytes = 0;
  } seen;
  SwitchConfig c = four_ports();
  Harness h;
  ASSERT_EQ(h.init(c), 0);
  four_routes(h);
  Hooks hooks;
  hooks.ctx = &seen;
  hooks.qlen = [](void* ctx, uint16_t, uint8_t, uint64_t, uint64_t port_bytes, uint64_t) {
    auto* s = static_cast<Seen*>(ctx);
    ++s->qlen;
    s->last_port_bytes = port_bytes;
  };
  hooks.drop = [](void* ctx, uint16_t, uint8_t, DropReason, uint32_t, uint64_t) { ++static_cast<Seen*>(ctx)->drops; };
  h.sw.set_hooks(hooks);
  h.send(0, Spec{}, 0);
  EXPECT_EQ(seen.last_port_bytes, frame(Spec{}).size());
  h.take(1, 0);
  EXPECT_EQ(seen.qlen, 2);
  EXPECT_EQ(seen.last_port_bytes, 0u);
  Spec s;
  s.ttl = 1;
  h.send(0, s, 0);
  EXPECT_EQ(seen.drops, 1);
}

// A move-only handle, as ns3::Ptr is a counted one: the switch moves it in only
// when it queues the packet, gives it back at dequeue, and drain() returns the rest.
TEST(Switch, MoveOnlyHandlesAndDrain) {
  Switch<std::unique_ptr<int>> sw;
  std::string err;
  SwitchConfig c = four_ports();
  c.ports[1].fault.delay_ns = 1000;
  ASSERT_EQ(sw.init(c, &err), 0) << err;
  const wire::Gid d = wire::Gid::from_ipv4(0x0a000102);
  const uint16_t p1[] = {1};
  ASSERT_EQ(sw.add_route(d.raw, 128, p1, &err), 0);
  const auto f = frame(Spec{});
  auto h = std::make_unique<int>(1);
  Spec s;
  s.ttl = 1;
  const auto dead = frame(s);
  EXPECT_EQ(sw.receive(0, h, test::frame_ref(dead), 0).verdict, Verdict::kDropped);
  ASSERT_NE(h, nullptr);  // still the host's
  EXPECT_EQ(sw.receive(0, h, test::frame_ref(f), 0).verdict, Verdict::kQueued);
  EXPECT_EQ(h, nullptr);
  for (int i = 2; i <= 4; ++i) {
    auto x = std::make_unique<int>(i);
    sw.receive(0, x, test::frame_ref(f), 0);
  }
  std::unique_ptr<int> out;
  EgressEdit e;
  EXPECT_FALSE(sw.dequeue(1, 0, &out, &e));  // into the delay line
  ASSERT_TRUE(sw.dequeue(1, 1000, &out, &e));
  EXPECT_EQ(*out, 1);
  std::vector<int> rest;
  while (sw.drain(&out)) rest.push_back(*out);
  EXPECT_EQ(rest, (std::vector<int>{2, 3, 4}));
  EXPECT_TRUE(sw.idle());
  EXPECT_EQ(sw.mmu().total_bytes(), 0u);
}

TEST(Switch, BadConfigsNameTheProblem) {
  Switch<int> sw;
  std::string err;
  SwitchConfig c;
  EXPECT_EQ(sw.init(c, &err), -EINVAL);
  EXPECT_NE(err.find("no ports"), std::string::npos);
  c = four_ports();
  c.ports[2].rate_bps = 0;
  EXPECT_EQ(sw.init(c, &err), -EINVAL);
  EXPECT_NE(err.find("port 2"), std::string::npos) << err;
  c = four_ports();
  c.ports[1].red = {200, 100, 0.1};
  EXPECT_EQ(sw.init(c, &err), -EINVAL);
  c = four_ports();
  c.ports[1].fault.drop_probability = 1.5;
  EXPECT_EQ(sw.init(c, &err), -EINVAL);
  c = four_ports();
  c.ecmp.dodge_field = DodgeField::kDscp;
  c.ecmp.dodge_mask = 0x40;
  EXPECT_EQ(sw.init(c, &err), -EINVAL);
  c = four_ports();
  c.classify.dscp_priority[3] = 8;
  EXPECT_EQ(sw.init(c, &err), -EINVAL);
}

}  // namespace
}  // namespace tita::fabric
