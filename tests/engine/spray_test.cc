// Spraying one QP over several entropy values (SprayConfig, doc/multipath.md)
// on the in-memory network: the spread per policy, reordering, a black-holed
// path, a path that marks CE, and the offset policy's values through
// hash-offset ECMP on a fat-tree.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "pair.h"
#include "tita/fabric/ecmp.h"
#include "workload.h"

namespace tita::test {
namespace {

using namespace engine;

// The UDP source port of an untagged IPv4 RoCEv2 frame (0: something else).
uint16_t sport_of(const std::vector<uint8_t>& f) {
  if (f.size() < 42 || f[12] != 0x08 || f[13] != 0x00 || f[23] != 17) return 0;
  return static_cast<uint16_t>(f[34] << 8 | f[35]);
}
bool is_data(const std::vector<uint8_t>& f) { return f.size() > 200; }  // 1 KB MTU requests, not ACKs

QpAttr sr_attr() {
  QpAttr a;
  a.path_mtu = 1024;
  a.recovery = Recovery::kSelectiveRepeat;
  a.timeout = 14;  // 67 ms: a timeout in these runs would be seen
  return a;
}

std::vector<Message> writes(int n, uint32_t len) {
  std::vector<Message> msgs;
  for (int i = 0; i < n; ++i) msgs.push_back({WrOpcode::kRdmaWrite, len, uint64_t{len} * i, uint64_t{len} * i});
  return msgs;
}

// Selective repeat with the peer known to be tita at RTR (QpAttr::peer_tita,
// as tita-perf and the ns-3 NIC set it): sprayed from the first packet.
QpAttr tita_sr_attr() {
  QpAttr a = sr_attr();
  a.peer_tita = true;
  return a;
}

// Both ends spray (as tita-perf and the ns-3 NIC configure them): the
// responder's ACKs then ride the requester's values.
void spray_both(Pair& p, const SprayConfig& sc) {
  std::string err;
  for (int i = 0; i < 2; ++i) ASSERT_EQ(p.eng(i).set_spray(p.side[i].qp, sc, &err), 0) << err;
}

SprayInfo info_of(Pair& p) {
  SprayInfo s;
  EXPECT_EQ(p.eng(0).spray_info(p.side[0].qp, &s), 0);
  return s;
}

TEST(Spray, RoundRobinSpreadsThePacketsEvenly) {
  Pair p(25'000'000'000, 2'000, 4u << 20, sr_attr(), 1);
  std::string err;
  ASSERT_EQ(p.eng(0).set_spray(p.side[0].qp, {.paths = 4}, &err), 0) << err;
  std::map<uint16_t, uint64_t> per_sport;
  p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                            if (is_data(f)) ++per_sport[sport_of(f)];
                            return false;
                          }});
  run_workload(p, writes(16, 256u << 10), 1'000'000'000);
  const SprayInfo s = info_of(p);
  ASSERT_TRUE(s.active);
  ASSERT_EQ(s.paths.size(), 4u);
  uint64_t total = 0;
  for (const auto& [sport, n] : per_sport) total += n;
  std::set<uint16_t> sports;
  for (const SprayPathInfo& path : s.paths) {
    sports.insert(path.udp_sport);
    // Every path carried about a quarter (the first packets, before the peer
    // is known to be tita, take the QP's own port: path 0's).
    EXPECT_GT(per_sport[path.udp_sport], total / 5) << path.udp_sport;
    EXPECT_LT(per_sport[path.udp_sport], total * 3 / 10) << path.udp_sport;
    EXPECT_EQ(path.lost, 0u);
  }
  EXPECT_EQ(sports.size(), 4u);
  EXPECT_EQ(per_sport.size(), 4u);  // no other port
  const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
  EXPECT_EQ(q.retransmitted_packets, 0u);
  EXPECT_EQ(q.timeouts, 0u);
}

// Paths of unequal delay: a tenth of the packets arrive 5 us late, others
// jitter by up to 1 us. The receiver places each (SEND, WRITE, READ) where it
// belongs; with a reordering window above that delay nothing is resent.
TEST(Spray, ReorderedPacketsArePlacedAndNotResent) {
  for (SprayPolicy policy : {SprayPolicy::kRoundRobin, SprayPolicy::kReps, SprayPolicy::kOffset}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    uint64_t bytes;
    const auto msgs = verb_workload(1024, 120, 5, &bytes, 65536);
    Pair p(25'000'000'000, 2'000, bytes, sr_attr(), 2);
    std::string err;
    ASSERT_EQ(p.eng(0).set_spray(p.side[0].qp, {.paths = 4, .policy = policy, .reorder_ns = 20'000}, &err), 0)
        << err;
    p.net.set_faults(0, 1, {.reorder = 0.1, .reorder_ns = 5'000, .jitter_ns = 1'000});
    run_workload(p, msgs, 2'000'000'000);
    const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
    const QpCounters& r = *p.eng(1).qp_counters(p.side[1].qp);
    EXPECT_GT(r.out_of_order_received, 10u);  // the test reorders
    EXPECT_EQ(q.retransmitted_packets, 0u) << p.describe();
    EXPECT_EQ(q.timeouts, 0u);
  }
}

// Every packet delayed by its own random 0-30 us (packets of 1 KB leave
// every 330 ns): each burst arrives in a nearly random order. The receiver
// keeps and places each at its PSN (run_verb_workload compares every byte of
// the SENDs, WRITEs and READs, with and without immediate, 0 B to 64 KB);
// with a reordering window above the spread nothing is resent. (READ
// requests, on the QP's own path, are overtaken too: the responder's
// selective-repeat NAKs then wait behind the READ responses, and must keep
// their SACK - without it a NAK reads as go-back-N, and 281 packets were
// resent here.)
TEST(Spray, PacketsInARandomOrderArePlacedByTheirPsn) {
  uint64_t bytes;
  const auto msgs = verb_workload(1024, 100, 11, &bytes, 65536);
  Pair p(25'000'000'000, 2'000, bytes, tita_sr_attr(), 2);  // sprayed from the first packet
  spray_both(p, {.paths = 4, .reorder_ns = 60'000});
  p.net.set_faults(0, 1, {.jitter_ns = 30'000});
  run_workload(p, msgs, 2'000'000'000);
  const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
  const QpCounters& r = *p.eng(1).qp_counters(p.side[1].qp);
  EXPECT_GT(r.out_of_order_received, r.rx_packets / 4) << "the order was not shuffled";
  EXPECT_GT(r.ooo_buffered, 100u);
  EXPECT_EQ(q.retransmitted_packets, 0u) << p.describe();
  EXPECT_EQ(q.timeouts, 0u);
}

// Flowlets: a value is kept while the QP sends without a gap of flowlet_ns,
// and chosen anew after one. A flowlet as long as the whole transfer keeps
// one value for all of it; one shorter than a packet's time on the wire makes
// every packet its own flowlet, spread as per packet.
TEST(Spray, FlowletsKeepAValueUntilAGap) {
  for (const uint64_t flowlet_ns : {uint64_t{10'000'000}, uint64_t{50}}) {
    SCOPED_TRACE(flowlet_ns);
    Pair p(25'000'000'000, 2'000, 4u << 20, tita_sr_attr(), 1);
    std::string err;
    ASSERT_EQ(p.eng(0).set_spray(p.side[0].qp, {.paths = 4, .flowlet_ns = flowlet_ns}, &err), 0) << err;
    std::map<uint16_t, uint64_t> per_sport;
    p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                              if (is_data(f)) ++per_sport[sport_of(f)];
                              return false;
                            }});
    run_workload(p, writes(8, 256u << 10), 1'000'000'000);
    uint64_t total = 0, most = 0;
    for (const auto& [sport, n] : per_sport) {
      total += n;
      most = std::max(most, n);
    }
    if (flowlet_ns > 1'000'000) {
      EXPECT_EQ(most, total) << "one flowlet: one value";
    } else {
      EXPECT_EQ(per_sport.size(), 4u);
      EXPECT_LT(most, total * 3 / 10) << "a flowlet per packet: spread as round robin";
    }
    EXPECT_EQ(p.eng(0).qp_counters(p.side[0].qp)->timeouts, 0u);
  }
  std::string err;
  Pair p(25'000'000'000, 2'000, 4096, sr_attr(), 1);
  EXPECT_EQ(p.eng(0).set_spray(p.side[0].qp, {.paths = 2, .flowlet_ns = 2'000'000'000}, &err), -EINVAL);
  EXPECT_EQ(err, "spray: flowlet_ns must be at most 1 s");
}

// One value's path becomes up to 90 us slower than the others' (a deep
// queue builds, 0.1 us more per packet it carries; the round trip is 4 us):
// its packets come late, in order, and are judged lost
// before they arrive and resent on the others. The originals then arrive
// twice at the receiver, whose re-ACKs carry a D-SACK: the sender widens its
// reordering window. The slow value still delivers, so it is never retired
// (before the silence rule, such values were retired until all of a QP's
// ended on one path); nothing times out, every byte arrives.
TEST(Spray, AValueBehindADeepQueueIsSlowNotRetired) {
  Pair p(25'000'000'000, 2'000, 4u << 20, tita_sr_attr(), 5);
  spray_both(p, {.paths = 4});
  const uint16_t slow = info_of(p).paths[2].udp_sport;
  uint64_t seen = 0;  // the queue builds, 0.1 us more per packet, once the value has carried 100
  p.net.set_faults(0, 1, {.delay_if = [&](const std::vector<uint8_t>& f) -> uint64_t {
                            if (sport_of(f) != slow || ++seen <= 100) return 0;
                            return std::min<uint64_t>((seen - 100) * 100, 200'000);
                          }});
  run_workload(p, writes(16, 256u << 10), 2'000'000'000);
  const SprayInfo s = info_of(p);
  const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
  EXPECT_EQ(s.retired, 0u);
  EXPECT_EQ(s.paths[2].udp_sport, slow);
  EXPECT_GT(s.paths[2].delivered, 100u);
  EXPECT_GT(q.retransmitted_packets, 0u) << "the late packets were judged lost";
  EXPECT_GT(s.dsacks, 0u) << "the receiver said which resends were for nothing";
  EXPECT_EQ(q.timeouts, 0u) << p.describe();
}

// Duplicated frames (the network delivers some twice): each duplicate is
// answered with a D-SACK, which a sprayed sender counts; the window grows
// once per round trip of them at most.
TEST(Spray, DuplicatesAreAnsweredWithADSack) {
  Pair p(25'000'000'000, 2'000, 4u << 20, tita_sr_attr(), 6);
  spray_both(p, {.paths = 4});
  p.net.set_faults(0, 1, {.duplicate = 0.05});
  run_workload(p, writes(16, 64u << 10), 1'000'000'000);
  const SprayInfo s = info_of(p);
  const QpCounters& r = *p.eng(1).qp_counters(p.side[1].qp);
  EXPECT_GT(r.duplicates_received, 10u);
  EXPECT_GE(s.dsacks, r.duplicates_received / 2) << "D-SACKs answer the duplicates";
  EXPECT_GT(s.reorder_mult, 1u);
  EXPECT_EQ(p.eng(0).qp_counters(p.side[0].qp)->retransmitted_packets, 0u);
}

// One path drops everything: its first packets are found lost by the later
// packets of the other paths (no timeout), resent elsewhere, and the value is
// replaced after retire_losses losses in a row. Every byte arrives.
TEST(Spray, ABlackHoledPathIsLeftWithoutATimeout) {
  for (SprayPolicy policy : {SprayPolicy::kRoundRobin, SprayPolicy::kOffset}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    Pair p(25'000'000'000, 2'000, 4u << 20, sr_attr(), 3);
    std::string err;
    ASSERT_EQ(p.eng(0).set_spray(p.side[0].qp, {.paths = 4, .policy = policy}, &err), 0) << err;
    const uint16_t hole = info_of(p).paths[1].udp_sport;
    uint64_t dropped = 0;
    p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                              const bool drop = sport_of(f) == hole;
                              dropped += drop;
                              return drop;
                            }});
    run_workload(p, writes(16, 256u << 10), 1'000'000'000);
    const SprayInfo s = info_of(p);
    const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
    EXPECT_EQ(q.timeouts, 0u) << p.describe();
    EXPECT_EQ(s.retired, 1u);
    for (const SprayPathInfo& path : s.paths) EXPECT_NE(path.udp_sport, hole);
    EXPECT_GE(dropped, 3u);
    // A few round trips' worth, then never again (up to 30 when the first
    // flight went unlimited; 38 since it starts small until the peer's
    // first trailer, as towards any peer not declared tita at RTR).
    EXPECT_LE(dropped, 45u);
    EXPECT_EQ(q.retransmitted_packets, dropped);
  }
}

// One path marks every packet CE (a congested uplink). REPS leaves a value
// once its ACK echoes a mark, so little goes that way; round robin keeps
// sending a quarter of the packets into it.
TEST(Spray, RepsLeavesAPathThatMarksCe) {
  uint64_t share[2] = {};
  for (SprayPolicy policy : {SprayPolicy::kRoundRobin, SprayPolicy::kReps}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    Pair p(25'000'000'000, 2'000, 4u << 20, sr_attr(), 4);
    std::string err;
    ASSERT_EQ(p.eng(0).set_spray(p.side[0].qp, {.paths = 4, .policy = policy}, &err), 0) << err;
    const uint16_t hot = info_of(p).paths[2].udp_sport;
    uint64_t marked = 0, data = 0;
    p.net.set_faults(0, 1, {.mark_if = [&](const std::vector<uint8_t>& f) {
                              if (!is_data(f)) return false;
                              ++data;
                              const bool mark = sport_of(f) == hot;
                              marked += mark;
                              return mark;
                            }});
    run_workload(p, writes(16, 256u << 10), 1'000'000'000);
    const QpCounters& r = *p.eng(1).qp_counters(p.side[1].qp);
    EXPECT_EQ(r.ecn_ce_received, marked);
    share[policy == SprayPolicy::kReps] = marked * 1000 / data;
    if (policy == SprayPolicy::kReps) {
      EXPECT_GE(info_of(p).replaced, 1u);
    }
  }
  EXPECT_GT(share[0], 200u);  // permille
  EXPECT_LT(share[1], 20u);
}

// The offset policy's values through hash-offset ECMP (fabric::ecmp_select,
// the dodge bits of the UDP source port added to each switch's choice) on a
// k = 8 fat-tree: from any host to a host in another pod, the 4 paths use 4
// different aggregation switches and 4 different core switches - node-disjoint
// between the ToRs.
TEST(Spray, OffsetValuesTakeNodeDisjointPathsThroughAFatTree) {
  constexpr uint32_t kUp = 4;  // k/2 uplinks per ToR and per aggregation switch
  for (uint32_t flow = 0; flow < 200; ++flow) {
    SCOPED_TRACE(flow);
    Pair p(25'000'000'000, 2'000, 1u << 20, sr_attr(), 10 + flow);
    std::string err;
    ASSERT_EQ(p.eng(0).set_spray(p.side[0].qp, {.paths = 4, .policy = SprayPolicy::kOffset}, &err), 0) << err;
    const SprayInfo s = info_of(p);
    fabric::FlowKey key;
    key.ip_version = 4;
    key.proto = 17;
    key.dport = 4791;
    const uint32_t src = 0x0a000000 + flow * 37, dst = 0x0a100000 + flow * 101;  // another pod
    for (int i = 0; i < 4; ++i) {
      key.src[i] = static_cast<uint8_t>(src >> (24 - 8 * i));
      key.dst[i] = static_cast<uint8_t>(dst >> (24 - 8 * i));
    }
    fabric::EcmpConfig tor{.seed = 1000 + flow % 7, .dodge_field = wire::DodgeField::kUdpSport, .dodge_mask = 0x000f};
    std::set<uint32_t> aggs, cores;
    for (const SprayPathInfo& path : s.paths) {
      key.sport = path.udp_sport;
      const uint32_t agg = fabric::ecmp_select(tor, key, 0, kUp);
      fabric::EcmpConfig at_agg = tor;
      at_agg.seed = 2000 + agg;
      const uint32_t core = agg * kUp + fabric::ecmp_select(at_agg, key, 0, kUp);
      aggs.insert(agg);
      cores.insert(core);
    }
    EXPECT_EQ(aggs.size(), 4u);
    EXPECT_EQ(cores.size(), 4u);
  }
}

// Told that the peer is tita (QpAttr::peer_tita, as tita-perf and the ns-3
// NIC say it), a QP sprays from its very first packet; a responder that sprays
// too sends each ACK back on the value of the packet it acknowledges.
TEST(Spray, AKnownTitaPeerIsSprayedFromTheFirstPacketAndAcksRideEachValue) {
  Pair p(25'000'000'000, 2'000, 1u << 20, tita_sr_attr(), 7);
  spray_both(p, {.paths = 4});
  std::vector<uint16_t> data;
  std::set<uint16_t> acks;
  p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                            if (is_data(f)) data.push_back(sport_of(f));
                            return false;
                          }});
  p.net.set_faults(1, 0, {.drop_if = [&](const std::vector<uint8_t>& f) {
                            acks.insert(sport_of(f));
                            return false;
                          }});
  run_workload(p, writes(4, 64u << 10), 1'000'000'000);
  ASSERT_GE(data.size(), 4u);
  EXPECT_EQ(std::set<uint16_t>(data.begin(), data.begin() + 4).size(), 4u);  // not the QP's port first
  EXPECT_EQ(acks, std::set<uint16_t>(data.begin(), data.end()));
}

// A message's last packet is lost: nothing sent after it can show that (RACK
// has no later delivery to judge by). Two RTTs and a window later it is
// probed, resent on another value; no timeout.
TEST(Spray, ALostTailIsProbedOnAnotherValueWithoutATimeout) {
  Pair p(25'000'000'000, 2'000, 1u << 20, tita_sr_attr(), 8);
  spray_both(p, {.paths = 4});
  int seen = 0;
  uint16_t lost_on = 0;
  p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                            if (!is_data(f) || ++seen != 4) return false;
                            lost_on = sport_of(f);
                            return true;  // the 4th of 4 packets, once
                          }});
  run_workload(p, writes(1, 4096), 1'000'000'000);
  const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
  EXPECT_EQ(seen, 5);  // four, and the probe
  EXPECT_EQ(q.timeouts, 0u) << p.describe();
  EXPECT_EQ(q.retransmitted_packets, 1u);
  EXPECT_EQ(info_of(p).tail_probes, 1u);
  EXPECT_NE(lost_on, 0);
}

// A connection's first message, two packets, before any value has had an
// ACK back: the first packet's data and the second's ACK vanish, and so does
// every answer while the first probe is out (whatever value they take: the
// responder moves its answers on at a duplicate, dodge.cc). A probe that goes
// unanswered is followed by the oldest packet on the next value, after the
// probe timeout, before the retransmission timeout is needed: no timeout, the
// message delivered. The
// first packet, resent on the value that answered, is acknowledged on that
// value too (not on the second packet's, kept out of order since): it is
// dropped once, never twice.
TEST(Spray, AnUnansweredProbeIsFollowedOnTheNextValue) {
  Pair p(25'000'000'000, 2'000, 1u << 20, tita_sr_attr(), 10);
  spray_both(p, {.paths = 4});
  const SprayInfo before = info_of(p);
  const uint16_t data_hole = before.paths[0].udp_sport;
  const uint16_t ack_hole = before.paths[1].udp_sport;
  uint64_t data_dropped = 0;
  uint64_t acks_dropped = 0;
  p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                            const bool drop = is_data(f) && sport_of(f) == data_hole;
                            data_dropped += drop;
                            return drop;
                          }});
  p.net.set_faults(1, 0, {.drop_if = [&](const std::vector<uint8_t>& f) {
                            const uint32_t probes = info_of(p).tail_probes;
                            const bool drop = (probes == 0 && sport_of(f) == ack_hole) || probes == 1;
                            acks_dropped += drop;
                            return drop;
                          }});
  run_workload(p, writes(1, 2048), 1'000'000'000);
  const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
  EXPECT_EQ(q.timeouts, 0u) << p.describe();
  EXPECT_EQ(data_dropped, 1u);
  EXPECT_GE(acks_dropped, 2u);
  EXPECT_EQ(info_of(p).tail_probes, 2u);
}

// Offset policy: the K values are K classes modulo K (node-disjoint paths
// under hash-offset ECMP). A value that loses a burst is replaced within its
// class, so the values stay on K paths; a class that keeps losing (its path
// is broken) gives way to another, without a timeout.
TEST(Spray, OffsetReplacesAFailedValueWithinItsClassUntilTheClassFails) {
  for (bool permanent : {false, true}) {
    SCOPED_TRACE(permanent ? "the class's path is broken" : "a burst lost");
    Pair p(25'000'000'000, 2'000, 4u << 20, tita_sr_attr(), 11);
    spray_both(p, {.paths = 2, .policy = SprayPolicy::kOffset});
    const SprayInfo before = info_of(p);
    // The second value's class: a fresh value (the next after the QP's K)
    // would be of the first one's.
    const uint16_t cls = before.paths[1].value % 2;
    ASSERT_NE(before.paths[0].value % 2, cls);
    int seen = 0;  // the class's data packets; from the 20th on, lost (40 of them, or all)
    int dropped = 0;
    p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                              if (!is_data(f) || (sport_of(f) & 0x000f) % 2 != cls) return false;
                              const bool drop = ++seen > 20 && (permanent || dropped < 40);
                              dropped += drop;
                              return drop;
                            }});
    run_workload(p, writes(16, 16384), 1'000'000'000);
    const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
    const SprayInfo after = info_of(p);
    EXPECT_EQ(q.timeouts, 0u) << p.describe();
    EXPECT_GE(after.retired, permanent ? 2u : 1u);
    if (permanent) {
      // Both values now in the class that works.
      EXPECT_NE(after.paths[0].value % 2, cls);
      EXPECT_NE(after.paths[1].value % 2, cls);
    } else {
      EXPECT_NE(after.paths[1].value, before.paths[1].value);
      EXPECT_EQ(after.paths[1].value % 2, cls);  // replaced, on its own path still
      EXPECT_EQ(after.paths[0].value, before.paths[0].value);
    }
  }
}

// One broken link can take the data of one value and the ACKs of another.
// Resent packets go on the value whose own ACKs come back (not the next in
// turn, which may be the one whose ACKs vanish): no timeout, every byte.
TEST(Spray, DataLostOnOneValueAndAcksOnAnotherCostNoTimeout) {
  for (SprayPolicy policy : {SprayPolicy::kRoundRobin, SprayPolicy::kOffset}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    Pair p(25'000'000'000, 2'000, 4u << 20, tita_sr_attr(), 9);
    spray_both(p, {.paths = 4, .policy = policy});
    const SprayInfo before = info_of(p);
    const uint16_t data_hole = before.paths[0].udp_sport;
    const uint16_t ack_hole = before.paths[1].udp_sport;
    uint64_t data_dropped = 0;
    uint64_t acks_dropped = 0;
    p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                              const bool drop = is_data(f) && sport_of(f) == data_hole;
                              data_dropped += drop;
                              return drop;
                            }});
    p.net.set_faults(1, 0, {.drop_if = [&](const std::vector<uint8_t>& f) {
                              const bool drop = sport_of(f) == ack_hole;
                              acks_dropped += drop;
                              return drop;
                            }});
    run_workload(p, writes(8, 4096), 1'000'000'000);
    const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
    EXPECT_EQ(q.timeouts, 0u) << p.describe();
    EXPECT_GE(data_dropped, 1u);
    EXPECT_GE(acks_dropped, 1u);
  }
}

// A dead spine link whose two directions hash apart (doc/training.md): data
// dies on the values of one parity, ACKs on the values of the other, so every
// ACK that echoes its data's value dies, and no value of the requester's
// works both ways. The responder's shift (dodge.cc, path_on_duplicate) moves
// the echoed value on at a round of duplicate requests, which the requester's
// probes of its oldest packet bring about a probe timeout apart: the transfer
// ends, intact, without waiting for the 1 ms timeout (before 2026-12-07 it
// took two).
TEST(Spray, DirectionsThatHashApartAreDodgedByTheResponder) {
  QpAttr attr = tita_sr_attr();
  attr.timeout = 8;  // 1 ms
  Pair p(25'000'000'000, 2'000, 4u << 20, attr, 5);
  spray_both(p, {.paths = 4, .policy = SprayPolicy::kOffset});
  auto parity = [](const std::vector<uint8_t>& f) { return wire::dodge_get(0x000f, sport_of(f)) % 2; };
  p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) { return is_data(f) && parity(f) == 1; }});
  p.net.set_faults(1, 0, {.drop_if = [&](const std::vector<uint8_t>& f) { return parity(f) == 0; }});
  run_workload(p, writes(4, 256u << 10), 1'000'000'000);
  EXPECT_GE(p.eng(1).qp_counters(p.side[1].qp)->ack_path_shifts, 1u) << p.describe();
  EXPECT_EQ(p.eng(0).qp_counters(p.side[0].qp)->timeouts, 0u) << p.describe();
}

// Every value the QP holds leads into a black hole: nothing is delivered, so
// RACK has nothing to judge by and the timeout fires; then every silent value
// is replaced, the resent packets find working paths and the transfer ends.
TEST(Spray, WhenEveryValueIsBlackHoledATimeoutReplacesThemAll) {
  QpAttr attr = sr_attr();
  attr.timeout = 8;  // 1 ms
  Pair p(25'000'000'000, 2'000, 4u << 20, attr, 6);
  std::string err;
  ASSERT_EQ(p.eng(0).set_spray(p.side[0].qp, {.paths = 2}, &err), 0) << err;
  std::set<uint16_t> holes;
  for (const SprayPathInfo& path : info_of(p).paths) holes.insert(path.udp_sport);
  bool armed = false;  // from the first sprayed packet on (the QP's first packets go unsprayed)
  p.net.set_faults(0, 1, {.drop_if = [&](const std::vector<uint8_t>& f) {
                            const uint16_t sp = sport_of(f);
                            if (info_of(p).active) armed = true;
                            return armed && is_data(f) && holes.count(sp) > 0;
                          }});
  run_workload(p, writes(4, 256u << 10), 1'000'000'000);
  const SprayInfo s = info_of(p);
  const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
  EXPECT_GE(q.timeouts, 1u);
  EXPECT_LE(q.timeouts, 2u) << p.describe();
  EXPECT_GE(s.retired, 2u);
  for (const SprayPathInfo& path : s.paths) EXPECT_EQ(holes.count(path.udp_sport), 0u);
}

// RESET gives a QP a new life: its spraying configuration stays (as its
// congestion control and path control do), its per-value state starts over.
TEST(Spray, TheConfigurationSurvivesReset) {
  Pair p(25'000'000'000, 2'000, 1u << 16, sr_attr(), 7);
  Engine& e = p.eng(0);
  const uint32_t qp = p.side[0].qp;
  std::string err;
  ASSERT_EQ(e.set_spray(qp, {.paths = 3, .policy = SprayPolicy::kReps}, &err), 0) << err;
  QpAttr a;
  a.qp_state = QpState::kReset;
  ASSERT_EQ(e.modify_qp(qp, a, kQpState, &err), 0) << err;
  SprayInfo s;
  ASSERT_EQ(e.spray_info(qp, &s), 0);
  EXPECT_EQ(s.paths.size(), 3u);
  EXPECT_FALSE(s.active);
  for (const SprayPathInfo& path : s.paths) EXPECT_EQ(path.sent, 0u);
}

TEST(Spray, SetSprayRefusesWhatCannotWork) {
  Pair p(25'000'000'000, 2'000, 1u << 16, sr_attr(), 5);
  Engine& e = p.eng(0);
  const uint32_t qp = p.side[0].qp;
  std::string err;
  EXPECT_EQ(e.set_spray(qp, {.paths = 1}, &err), -EINVAL);
  EXPECT_NE(err.find("2..16"), std::string::npos) << err;
  EXPECT_EQ(e.set_spray(qp, {.paths = 17}, &err), -EINVAL);
  EXPECT_EQ(e.set_spray(qp, {.paths = 4, .mask = 0x0003}, &err), -EINVAL);
  EXPECT_NE(err.find("holds 4 values"), std::string::npos) << err;
  EXPECT_EQ(e.set_spray(qp, {.paths = 4, .mask = 0x0005}, &err), -EINVAL);
  EXPECT_EQ(e.set_spray(qp, {.paths = 4, .retire_losses = 0}, &err), -EINVAL);
  EXPECT_EQ(e.set_spray(9999, {.paths = 4}, &err), -EINVAL);
  PathConfig dodge;
  dodge.field = wire::DodgeField::kUdpSport;
  ASSERT_EQ(e.set_path_config(qp, dodge, &err), 0) << err;
  EXPECT_EQ(e.set_spray(qp, {.paths = 4}, &err), -EINVAL);
  EXPECT_NE(err.find("Hash Dodging"), std::string::npos) << err;
  SprayInfo s;
  EXPECT_EQ(e.spray_info(qp, &s), -EINVAL);  // off
  EXPECT_EQ(e.set_spray(qp, {.paths = 0}, &err), 0);
}

}  // namespace
}  // namespace tita::test
