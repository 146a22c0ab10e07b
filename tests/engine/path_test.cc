// Path control (Hash Dodging, doc/hash-dodging.md).
//
// Protocol tests: one engine, the peer played by hand-built frames; each rule
// is driven to its threshold on a virtual clock and the emitted frames checked
// ("Expect:"). Transfer tests: two engines on the in-memory network, where a
// frame's path is lib/fabric's ECMP choice among four next hops for its
// 5-tuple and dodge bits (the switch the engine's dodge is designed for), and
// one path fails: a black hole forward or backward, random loss, or all paths.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "pair.h"
#include "scripted_peer.h"
#include "workload.h"
#include "tita/engine/engine.h"
#include "tita/fabric/classify.h"
#include "tita/fabric/ecmp.h"
#include "tita/wire/psn.h"
#include "tita/wire/telemetry.h"

namespace tita::engine {
namespace {

using wire::Opcode;

using test::kPeerQpn;
using test::kRqPsn;
using test::kSqPsn;
constexpr uint64_t kBaseRttNs = 10'000;

// A stall window of 50 us: max(stall_min_ns, 1 x base RTT) + one 1 KB packet
// time at 100 Gb/s (ack_req_every 1): 50,000 + 89 ns.
constexpr uint64_t kStallNs = 50'089;

PathConfig only_stall() {
  PathConfig p;
  p.field = wire::DodgeField::kUdpSport;
  p.timeouts = 0;
  p.stall_rtts = 1;
  p.stall_min_ns = 50'000;
  p.lossy_rounds = 0;
  p.collapse_permille = 0;
  return p;
}

class PathControl : public test::ScriptedPeerTest {
 protected:
  void make(const PathConfig& pc, uint8_t timeout = 16, uint8_t retry_cnt = 7, uint8_t traffic_class = 0) {
    EngineConfig cfg;
    cfg.ack_req_every = 1;
    cfg.ack_unsolicited = 1000;
    cfg.base_rtt_ns = kBaseRttNs;
    cfg.path = pc;
    QpAttr a;
    a.ah_attr.traffic_class = traffic_class;
    a.timeout = timeout;
    a.retry_cnt = retry_cnt;
    open(cfg, a);
    eng->set_path_hook(
        +[](void* ctx, const PathEvent& e) { static_cast<PathControl*>(ctx)->events.push_back(e); }, this);
    base_sport = roce_udp_sport(qpn, kPeerQpn);
    peer_sport = base_sport;
    next_psn = 0;
  }

  std::vector<uint8_t> from_peer(Opcode op, uint32_t psn, uint32_t payload_len = 0, uint32_t dma_len = 0) {
    wire::FrameFields f = peer_fields(op, psn);
    f.udp_src_port = peer_sport;
    f.va = mr.addr;
    f.rkey = mr.rkey;
    f.dma_len = dma_len ? dma_len : payload_len;
    f.syndrome = syndrome;
    f.ack_req = true;
    if (op == Opcode::kCnp) f.becn = true;
    return frame_of(f, std::vector<uint8_t>(payload_len, 0x5a));
  }

  void ack(uint32_t psn) {
    syndrome = wire::aeth::ack();
    deliver(from_peer(Opcode::kAck, psn));
  }
  // An ACK echoing the send timestamp of the data packet it answers (an RTT sample).
  void ack_echo(uint32_t psn, uint64_t sent_ns) {
    syndrome = wire::aeth::ack();
    std::vector<uint8_t> f = from_peer(Opcode::kAck, psn);
    const size_t end = f.size();
    f.resize(end + 64);
    f.resize(end + wire::telemetry_write(f.data() + end, wire::TelemetryHdr::kEcho, static_cast<uint32_t>(sent_ns)));
    deliver(f);
  }
  void nak_sequence(uint32_t psn) {
    syndrome = wire::aeth::nak(wire::aeth::kNakPsnSequenceError);
    deliver(from_peer(Opcode::kAck, psn));
  }

  // Advances the clock to `t` in 64 ns steps, polling like a host does.
  void run_to(uint64_t t) {
    while (now < t) {
      now = std::min(t, now + 64);
      eng->poll(now);
    }
  }

  int post(WrOpcode op, uint32_t len, uint64_t wr_id = 1) {
    Sge sge{mr.addr, len, mr.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.rdma.remote_addr = 0x7000;
    wr.rdma.rkey = 0x4242;
    const int rc = eng->post_send(qpn, &wr, nullptr);
    eng->poll(now);
    return rc;
  }

  std::vector<WorkCompletion> completions() {
    std::vector<WorkCompletion> out(64);
    out.resize(static_cast<size_t>(eng->poll_cq(cq, 64, out.data())));
    return out;
  }

  // One WRITE acknowledged: the stall rule waits for the peer to have answered
  // once. The ACK is a tita peer's (it echoes the trailer, with an RTT of 0
  // that leaves the smoothed RTT unset).
  void warm() {
    ASSERT_EQ(post(WrOpcode::kRdmaWrite, 10, 99), 0);
    ack_echo(kSqPsn + next_psn++, now);
    completions();
    sent();
  }

  const QpCounters& counters() { return *eng->qp_counters(qpn); }
  uint16_t dodged(uint32_t steps) const {
    return wire::dodge_set(0x000f, base_sport, (wire::dodge_get(0x000f, base_sport) + steps) % 16);
  }

  std::vector<PathEvent> events;
  uint16_t base_sport = 0;
  uint16_t peer_sport = 0;
  uint8_t syndrome = wire::aeth::ack();
  uint32_t next_psn = 0;  // PSNs warm() used
};

TEST_F(PathControl, OffByDefault) {
  make(PathConfig{});
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 1000), 0);
  run_to(now + 10 * kStallNs);
  // Expect: one WRITE Only with the QP's usual port, nothing else; no path state.
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].udp().src_port.get(), base_sport);
  EXPECT_EQ(counters().path_changes, 0u);
  EXPECT_EQ(eng->repath(qpn), -EINVAL);
  QpInfo info;
  ASSERT_EQ(eng->qp_info(qpn, &info), 0);
  EXPECT_EQ(info.udp_sport, base_sport);
}

TEST_F(PathControl, BadConfigurationsAreRefused) {
  make(PathConfig{});
  std::string err;
  PathConfig p;
  p.field = wire::DodgeField::kUdpSport;
  p.mask = 0x0005;  // not one run of bits
  EXPECT_EQ(eng->set_path_config(qpn, p, &err), -EINVAL);
  EXPECT_NE(err.find("mask"), std::string::npos) << err;
  p.field = wire::DodgeField::kDscp;
  p.mask = 0x40;  // beyond the DSCP's 6 bits
  EXPECT_EQ(eng->set_path_config(qpn, p, &err), -EINVAL);
  EXPECT_EQ(eng->set_path_config(qpn + 7, PathConfig{}, &err), -EINVAL);
  p.mask = 0x07;
  EXPECT_EQ(eng->set_path_config(qpn, p, &err), 0) << err;
}

TEST_F(PathControl, DodgeRidesInTheLowBitsOfTheSourcePort) {
  PathConfig p;
  p.field = wire::DodgeField::kUdpSport;
  make(p);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100), 0);
  ack(kSqPsn);
  // Expect: the first packet carries the usual port; each repath steps the low
  // four bits by one (cyclically), the rest of the port stays.
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].udp().src_port.get(), base_sport);
  for (uint32_t k = 1; k <= 17; ++k) {
    ASSERT_EQ(eng->repath(qpn), 0);
    ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100, k + 1), 0);
    ack(kSqPsn + k);
    f = sent();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].udp().src_port.get(), dodged(k)) << k;
    EXPECT_EQ(f[0].udp().src_port.get() & 0xfff0, base_sport & 0xfff0);
    EXPECT_EQ(f[0].dscp, 0);
  }
  EXPECT_EQ(counters().path_changes, 17u);
  EXPECT_EQ(counters().path_changes_manual, 17u);
  ASSERT_EQ(events.size(), 17u);
  EXPECT_EQ(events[0].reason, RepathReason::kManual);
  EXPECT_EQ(events[0].qp_num, qpn);
  EXPECT_EQ(events[0].old_dodge, base_sport & 0xf);
  EXPECT_EQ(events[0].new_dodge, (base_sport + 1) & 0xf);
  EXPECT_EQ(events[0].udp_sport, dodged(1));
  EXPECT_EQ(events[15].udp_sport, base_sport);  // 16 steps: back where it started
  QpInfo info;
  ASSERT_EQ(eng->qp_info(qpn, &info), 0);
  EXPECT_EQ(info.udp_sport, dodged(17));
  EXPECT_EQ(info.dodge, dodged(17) & 0xf);
}

TEST_F(PathControl, DscpDodgeKeepsTheTrafficClass) {
  PathConfig p;
  p.field = wire::DodgeField::kDscp;  // mask 0x07
  make(p, 16, 7, 26 << 2);            // AF31
  ASSERT_EQ(eng->repath(qpn), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100), 0);
  // Expect: DSCP 27 (26 = 0b011010: low bits 2 -> 3), class 27 >> 3 = 3 as before,
  // the port untouched, the frame valid (TOS is masked out of the ICRC).
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].dscp, 27);
  EXPECT_EQ(f[0].dscp >> 3, 26 >> 3);
  EXPECT_EQ(f[0].udp().src_port.get(), base_sport);
  EXPECT_EQ(f[0].ecn, wire::kEcnEct0);
}

TEST_F(PathControl, StallRepathsAndResendsEverythingOnTheNewPath) {
  make(only_stall());
  warm();
  const uint32_t psn0 = kSqPsn + 1;
  const uint64_t t0 = now;
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 3000), 0);
  ASSERT_EQ(sent().size(), 3u);
  run_to(t0 + kStallNs - 64);
  // Expect: nothing within the stall window.
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(counters().path_changes, 0u);
  run_to(t0 + kStallNs + 64);
  // Expect: WRITE First/Middle/Last again, PSN 101..103, on the next dodge value.
  auto f = sent();
  ASSERT_EQ(f.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(f[i].psn(), psn0 + i);
    EXPECT_EQ(f[i].udp().src_port.get(), dodged(1));
    EXPECT_TRUE(f[i].bth().ack_requested());
  }
  EXPECT_EQ(counters().path_changes_stall, 1u);
  EXPECT_EQ(counters().retransmitted_packets, 3u);
  EXPECT_EQ(counters().timeouts, 0u);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, RepathReason::kStall);
  EXPECT_GE(events[0].now_ns, t0 + kStallNs);
  EXPECT_LE(events[0].now_ns, t0 + kStallNs + 64);
  // The new path works: the WR completes; a later stall starts from a fresh window.
  ack(psn0 + 2);
  auto wc = completions();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  const uint64_t t1 = now;
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100, 2), 0);
  run_to(t1 + kStallNs + 64);
  EXPECT_EQ(counters().path_changes_stall, 2u);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_LE(events[1].now_ns, t1 + kStallNs + 64);
}

TEST_F(PathControl, StallsBackOffAndAPeerThatIsGoneStillFails) {
  // RTO 4.096 us x 2^12 = 16.8 ms, two retries; stalls every 50 us, doubling.
  make(only_stall(), 12, 2);
  warm();
  const uint64_t t0 = now;
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100), 0);
  std::vector<WorkCompletion> wc;
  while (wc.empty() && now < t0 + 1'000'000'000) {
    run_to(now + 10'000);
    wc = completions();
  }
  // Expect: stall repaths at W, 3W, 7W, 15W, 31W, then every 16W; the RTO still
  // fires (its backoff reset by each path change: 16.8, +33.6, +33.6 ms) and the
  // third one fails the WR: RETRY_EXC_ERR at 5 x 16.8 ms.
  ASSERT_GE(events.size(), 6u);
  const uint64_t w = kStallNs;
  const uint64_t expect[] = {w, 3 * w, 7 * w, 15 * w, 31 * w, 47 * w};
  for (size_t i = 0; i < 6; ++i) {
    // Each check runs at the first 64 ns poll at or after its deadline.
    EXPECT_NEAR(static_cast<double>(events[i].now_ns - t0), static_cast<double>(expect[i]), 64.0 * (i + 1)) << i;
    EXPECT_EQ(events[i].reason, RepathReason::kStall);
  }
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExcErr);
  const uint64_t rto = uint64_t{4096} << 12;
  EXPECT_NEAR(static_cast<double>(now - t0), 5.0 * rto, 10'000.0);
  EXPECT_EQ(counters().timeouts, 3u);
}

TEST_F(PathControl, ASpuriousStallDoublesTheStallWindow) {
  for (bool spurious : {false, true}) {
    SCOPED_TRACE(spurious ? "the old path answers" : "the new path answers");
    make(only_stall());
    warm();
    const uint32_t psn0 = kSqPsn + 1;
    const uint64_t t0 = now;
    ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100), 0);
    run_to(t0 + kStallNs + 64);
    ASSERT_EQ(counters().path_changes_stall, 1u);
    const uint64_t resent = now;
    run_to(now + 5'000);
    // Expect: an ACK for the packet sent at t0 (before the repath) proves the old
    // path alive: the stall was spurious, and the next stall window is 2 W.
    ack_echo(psn0, spurious ? t0 : resent);
    EXPECT_EQ(counters().spurious_stalls, spurious ? 1u : 0u);
    ASSERT_EQ(completions().size(), 1u);
    const uint64_t t1 = now;
    // The RTT sample (t1 - t0 when spurious) also moves the smoothed RTT: W =
    // max(50 us, 1 x srtt) + 89 ns, doubled once.
    const uint64_t w = spurious ? 2 * (std::max<uint64_t>(50'000, t1 - t0) + 89) : kStallNs;
    ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100, 2), 0);
    run_to(t1 + w - 64);
    EXPECT_EQ(counters().path_changes_stall, 1u);
    run_to(t1 + w + 64);
    EXPECT_EQ(counters().path_changes_stall, 2u);
  }
}

TEST_F(PathControl, CongestionHoldsTheStallRuleForAWindow) {
  make(only_stall());
  warm();
  const uint64_t t0 = now;
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100), 0);
  run_to(t0 + 20'000);
  deliver(from_peer(Opcode::kCnp, 0));  // the path is congested, not dead
  run_to(t0 + 2 * kStallNs - 64);
  // Expect: no repath at W (a CNP 30 us ago); at 2W the path has been silent a whole window.
  EXPECT_EQ(counters().path_changes, 0u);
  run_to(t0 + 2 * kStallNs + 64);
  EXPECT_EQ(counters().path_changes_stall, 1u);
}

TEST_F(PathControl, RnrWaitIsNotAStall) {
  make(only_stall());
  warm();
  const uint32_t psn0 = kSqPsn + 1;
  const uint64_t t0 = now;
  ASSERT_EQ(post(WrOpcode::kSend, 100), 0);
  run_to(t0 + 10'000);
  syndrome = wire::aeth::rnr_nak(11);  // 480 us
  deliver(from_peer(Opcode::kAck, psn0));
  run_to(t0 + 10'000 + 480'000 + 1'000);
  // Expect: the SEND again after the RNR wait, on the same path.
  auto f = sent();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].udp().src_port.get(), base_sport);
  EXPECT_EQ(counters().path_changes, 0u);
}

TEST_F(PathControl, BeforeThePeerEverAnsweredAStallTakesEightWindows) {
  make(only_stall());
  const uint64_t t0 = now;
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100), 0);
  ASSERT_EQ(sent().size(), 1u);
  run_to(t0 + 8 * kStallNs - 64);
  // Expect: a QP that never got through (no RTT measured, the path unproven)
  // gives its first answer 8 windows, far less than its RTO (4.096 us x 2^16).
  EXPECT_EQ(counters().path_changes, 0u);
  EXPECT_TRUE(sent().empty());
  run_to(t0 + 8 * kStallNs + 64);
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].udp().src_port.get(), dodged(1));
  EXPECT_EQ(counters().path_changes_stall, 1u);
  EXPECT_EQ(counters().timeouts, 0u);
}

TEST_F(PathControl, TimeoutRepathsAndRestartsTheBackoff) {
  PathConfig p;
  p.field = wire::DodgeField::kUdpSport;
  p.stall_rtts = 0;  // only the RTO rule
  make(p, 4, 2);     // RTO 65.536 us, two retries
  const uint64_t rto = uint64_t{4096} << 4;
  const uint64_t t0 = now;
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 100), 0);
  run_to(t0 + 3 * rto + 1'000);
  // Expect: the WRITE at t0, t0 + RTO and t0 + 2 RTO (no backoff: each timeout
  // moved the path), on ports base, +1, +2; then RETRY_EXC_ERR at t0 + 3 RTO.
  auto f = sent();
  ASSERT_EQ(f.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(f[i].udp().src_port.get(), dodged(i)) << i;
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].reason, RepathReason::kTimeout);
  EXPECT_NEAR(static_cast<double>(events[0].now_ns - t0), static_cast<double>(rto), 128.0);
  EXPECT_NEAR(static_cast<double>(events[1].now_ns - t0), static_cast<double>(2 * rto), 128.0);
  auto wc = completions();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(counters().path_changes_timeout, 2u);
}

// Two WRITEs of 8 packets, each losing one (a sequence NAK): two lossy rounds.
TEST_F(PathControl, LossyRoundsRepathUnlessCongested) {
  for (bool congested : {false, true}) {
    SCOPED_TRACE(congested ? "with CNPs" : "silent loss");
    PathConfig p;
    p.field = wire::DodgeField::kUdpSport;
    p.timeouts = 0;
    p.stall_rtts = 0;
    p.collapse_permille = 0;
    p.lossy_rounds = 2;
    make(p);
    for (uint32_t r = 0; r < 2; ++r) {
      const uint32_t first = kSqPsn + 8 * r;
      ASSERT_EQ(post(WrOpcode::kRdmaWrite, 8192, r + 1), 0);
      if (congested) deliver(from_peer(Opcode::kCnp, 0));
      nak_sequence(first + 3);  // 1 lost of the 8 the round acknowledges: 12.5% >= 0.5%
      ack(first + 7);
    }
    // Expect: the second lossy round moves the path (silent loss only).
    EXPECT_EQ(counters().path_changes_loss, congested ? 0u : 1u);
    EXPECT_EQ(counters().nak_seq_received, 2u);
    ASSERT_EQ(completions().size(), 2u);
  }
}

TEST_F(PathControl, ResponsesFollowThePeersDodge) {
  PathConfig p;
  p.field = wire::DodgeField::kUdpSport;
  make(p);
  // Expect: an ACK for a WRITE from the peer carries our port with the peer's
  // dodge bits; the peer moves, the next ACK (and a READ response) moves too.
  peer_sport = wire::dodge_set(0x000f, base_sport, 9);
  deliver(from_peer(Opcode::kWriteOnly, kRqPsn, 64));
  peer_sport = wire::dodge_set(0x000f, base_sport, 10);
  deliver(from_peer(Opcode::kWriteOnly, kRqPsn + 1, 64));
  deliver(from_peer(Opcode::kReadRequest, kRqPsn + 2, 0, 100));
  auto f = sent();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].op->kind, wire::Kind::kAck);
  EXPECT_EQ(f[0].udp().src_port.get(), wire::dodge_set(0x000f, base_sport, 9));
  EXPECT_EQ(f[1].udp().src_port.get(), wire::dodge_set(0x000f, base_sport, 10));
  EXPECT_EQ(f[2].op->kind, wire::Kind::kReadResponse);
  EXPECT_EQ(f[2].udp().src_port.get(), wire::dodge_set(0x000f, base_sport, 10));
  EXPECT_EQ(counters().path_follows, 2u);
  EXPECT_EQ(counters().path_changes, 0u);
  // Our own requests keep our dodge value.
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 10), 0);
  f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].udp().src_port.get(), base_sport);
}

TEST_F(PathControl, FollowingThePeerCanBeTurnedOff) {
  PathConfig p;
  p.field = wire::DodgeField::kUdpSport;
  p.follow_peer = false;
  make(p);
  peer_sport = wire::dodge_set(0x000f, base_sport, 3);
  deliver(from_peer(Opcode::kWriteOnly, kRqPsn, 64));
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].udp().src_port.get(), base_sport);
  EXPECT_EQ(counters().path_follows, 0u);
}

}  // namespace
}  // namespace tita::engine

// ---------------------------------------------------------------- transfers

namespace tita::test {
namespace {

using namespace engine;

constexpr uint32_t kPaths = 4;

// A frame's path: the ECMP choice among kPaths next hops of a switch that adds
// the dodge offset (lib/fabric), from the frame's own bytes.
uint32_t path_of(const std::vector<uint8_t>& frame) {
  static const fabric::EcmpConfig ecmp = [] {
    fabric::EcmpConfig c;
    c.seed = 77;
    c.dodge_field = wire::DodgeField::kUdpSport;
    c.dodge_mask = 0x000f;
    return c;
  }();
  fabric::Classified c;
  fabric::classify({frame.data(), static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(frame.size())}, {},
                   false, &c);
  return fabric::ecmp_select(ecmp, c.key, c.dscp, kPaths);
}

struct DodgePair {
  explicit DodgePair(Recovery rec, uint32_t bytes, PathConfig pc = {}) {
    QpAttr attr;
    attr.path_mtu = 1024;
    attr.recovery = rec;
    attr.timeout = 10;  // 4.2 ms, as the ns-3 NIC
    if (pc.field == wire::DodgeField::kNone) pc.field = wire::DodgeField::kUdpSport;
    pair = std::make_unique<Pair>(100'000'000'000, 1'000, bytes, attr, 3, [pc](EngineConfig& c, int) {
      c.path = pc;
    });
    for (int i = 0; i < 2; ++i) {
      pair->eng(i).set_path_hook(
          +[](void* ctx, const PathEvent& e) { static_cast<DodgePair*>(ctx)->events.push_back(e); }, this);
    }
    fill_pattern(pair->side[0].buf.data(), bytes, 5);
  }

  // The path side i's requests or responses take now.
  uint32_t request_path(int i) {
    QpInfo info;
    pair->eng(i).qp_info(pair->side[i].qp, &info);
    wire::FrameFields f;
    f.src_gid = pair->net.gid(i);
    f.dst_gid = pair->net.gid(1 - i);
    f.udp_src_port = info.udp_sport;
    f.opcode = Opcode::kWriteOnly;
    std::vector<uint8_t> buf(256);
    buf.resize(static_cast<size_t>(wire::build_frame(f, {}, buf.data(), 256)));
    return path_of(buf);
  }

  // One WRITE of `bytes` from side 0 to side 1; true once it completed.
  bool write(uint32_t bytes, uint64_t deadline_ns) {
    Sge sge{pair->side[0].mr.addr, bytes, pair->side[0].mr.lkey};
    SendWr wr;
    wr.wr_id = 7;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.rdma.remote_addr = pair->side[1].mr.addr;
    wr.rdma.rkey = pair->side[1].mr.rkey;
    EXPECT_EQ(pair->eng(0).post_send(pair->side[0].qp, &wr, nullptr), 0);
    return pair->run(1, 0, deadline_ns);
  }

  bool intact(uint32_t bytes) {
    return std::memcmp(pair->side[0].buf.data(), pair->side[1].buf.data(), bytes) == 0;
  }

  const QpCounters& counters(int i) { return *pair->eng(i).qp_counters(pair->side[i].qp); }

  std::unique_ptr<Pair> pair;
  std::vector<PathEvent> events;
};

constexpr uint32_t kBytes = 8u << 20;
constexpr uint64_t kFaultNs = 200'000;

TEST(PathTransfer, BlackHoleOnTheForwardPathIsDodgedWithinAMillisecond) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    SCOPED_TRACE(rec == Recovery::kGoBackN ? "go-back-N" : "selective repeat");
    DodgePair d(rec, kBytes);
    const uint32_t bad = d.request_path(0);
    SimNet& net = d.pair->net;
    net.set_faults(0, 1, {.drop_if = [&net, bad](const std::vector<uint8_t>& f) {
                            return net.now() >= kFaultNs && path_of(f) == bad;
                          }});
    ASSERT_TRUE(d.write(kBytes, 1'000'000'000)) << d.pair->describe();
    // Expect: success, every byte, one stall repath shortly after the fault,
    // the new path elsewhere, the responder's ACKs following.
    ASSERT_EQ(d.pair->completions[0].size(), 1u);
    EXPECT_EQ(d.pair->completions[0][0].status, WcStatus::kSuccess);
    EXPECT_TRUE(d.intact(kBytes));
    EXPECT_EQ(d.counters(0).path_changes, 1u);
    EXPECT_EQ(d.counters(0).path_changes_stall, 1u);
    EXPECT_EQ(d.counters(0).timeouts, 0u);
    EXPECT_GE(d.counters(1).path_follows, 1u);
    ASSERT_EQ(d.events.size(), 1u);
    EXPECT_LT(d.events[0].now_ns - kFaultNs, 100'000u);  // 8 x 4 us RTT, at least 40 us
    EXPECT_NE(d.request_path(0), bad);
    EXPECT_GT(net.stats().lost, 0u);
  }
}

TEST(PathTransfer, BlackHoleOnTheReversePathIsDodgedByFollowing) {
  DodgePair d(Recovery::kGoBackN, kBytes);
  const uint32_t bad = d.request_path(1);  // the responder's ACKs start on its own port
  SimNet& net = d.pair->net;
  auto last = std::make_shared<uint32_t>(bad);  // the path of the latest ACK
  net.set_faults(1, 0, {.drop_if = [&net, bad, last](const std::vector<uint8_t>& f) {
                          *last = path_of(f);
                          return net.now() >= kFaultNs && *last == bad;
                        }});
  ASSERT_TRUE(d.write(kBytes, 1'000'000'000)) << d.pair->describe();
  // Expect: the requester saw nothing come back and moved; the responder moved
  // its ACKs with it, off the black hole.
  EXPECT_EQ(d.pair->completions[0][0].status, WcStatus::kSuccess);
  EXPECT_TRUE(d.intact(kBytes));
  EXPECT_GE(d.counters(0).path_changes, 1u);
  EXPECT_GE(d.counters(1).path_follows, 1u);
  EXPECT_NE(*last, bad);
  ASSERT_FALSE(d.events.empty());
  EXPECT_LT(d.events[0].now_ns - kFaultNs, 100'000u);
}

// The dodge value a frame carries (its UDP source port's low bits).
uint32_t dodge_of(const std::vector<uint8_t>& frame) {
  fabric::Classified c;
  fabric::classify({frame.data(), static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(frame.size())}, {},
                   false, &c);
  return wire::dodge_get(0x000f, c.key.sport);
}

// A dead spine link between two spines, where the two directions hash apart:
// each switch adds the dodge offset to its own hash of each direction, so the
// values whose requests avoid the dead link are the ones whose answers cross
// it (a training iteration hung on this in tita-sim, doc/training.md). Here:
// requests die on values of the other parity than the requester's first,
// answers on values of the same parity. Following the peer alone keeps the
// answers dead whatever the requester picks; the responder's own shift, at
// each round of duplicate requests, gets them through.
TEST(PathTransfer, DirectionsThatHashApartAreDodgedByTheResponder) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    SCOPED_TRACE(rec == Recovery::kGoBackN ? "go-back-N" : "selective repeat");
    DodgePair d(rec, kBytes);
    QpInfo info;
    d.pair->eng(0).qp_info(d.pair->side[0].qp, &info);
    const uint32_t first = wire::dodge_get(0x000f, info.udp_sport);
    SimNet& net = d.pair->net;
    net.set_faults(0, 1, {.drop_if = [&net, first](const std::vector<uint8_t>& f) {
                            return net.now() >= kFaultNs && (dodge_of(f) + first) % 2 == 1;
                          }});
    net.set_faults(1, 0, {.drop_if = [&net, first](const std::vector<uint8_t>& f) {
                            return net.now() >= kFaultNs && (dodge_of(f) + first) % 2 == 0;
                          }});
    ASSERT_TRUE(d.write(kBytes, 1'000'000'000)) << d.pair->describe();
    // Expect: every byte, no error; the responder moved its answers at least
    // once, and they now travel on a value of the other parity than the
    // requests.
    ASSERT_EQ(d.pair->completions[0].size(), 1u);
    EXPECT_EQ(d.pair->completions[0][0].status, WcStatus::kSuccess);
    EXPECT_TRUE(d.intact(kBytes));
    EXPECT_GE(d.counters(1).ack_path_shifts, 1u);
    EXPECT_GT(net.stats().lost, 0u);
  }
}

TEST(PathTransfer, RandomLossOnOnePathIsLeft) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    SCOPED_TRACE(rec == Recovery::kGoBackN ? "go-back-N" : "selective repeat");
    DodgePair d(rec, kBytes);
    const uint32_t bad = d.request_path(0);
    SimNet& net = d.pair->net;
    auto rng = std::make_shared<std::mt19937_64>(9);
    net.set_faults(0, 1, {.drop_if = [&net, bad, rng](const std::vector<uint8_t>& f) {
                            return net.now() >= kFaultNs && path_of(f) == bad && (*rng)() % 100 < 5;
                          }});
    ASSERT_TRUE(d.write(kBytes, 1'000'000'000)) << d.pair->describe();
    // Expect: the path losing 5% is left (by the loss or the stall rule) within
    // a millisecond, and every byte arrives.
    EXPECT_EQ(d.pair->completions[0][0].status, WcStatus::kSuccess);
    EXPECT_TRUE(d.intact(kBytes));
    EXPECT_GE(d.counters(0).path_changes, 1u);
    EXPECT_NE(d.request_path(0), bad);
    ASSERT_FALSE(d.events.empty());
    EXPECT_LT(d.events[0].now_ns - kFaultNs, 1'000'000u);
  }
}

TEST(PathTransfer, NoFaultNoPathChange) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    DodgePair d(rec, kBytes);
    ASSERT_TRUE(d.write(kBytes, 1'000'000'000));
    EXPECT_TRUE(d.intact(kBytes));
    EXPECT_EQ(d.counters(0).path_changes, 0u);
    EXPECT_EQ(d.counters(1).path_changes, 0u);
    EXPECT_EQ(d.counters(1).path_follows, 0u);
    EXPECT_EQ(d.counters(1).ack_path_shifts, 0u);
  }
}

TEST(PathTransfer, EveryPathDeadEndsInAnErrorNotAHang) {
  DodgePair d(Recovery::kGoBackN, 1u << 20);
  SimNet& net = d.pair->net;
  net.set_faults(0, 1, {.drop_if = [](const std::vector<uint8_t>&) { return true; }});
  d.write(1u << 20, 1'000'000'000);
  // Expect: nothing ever got through: stall repaths at 8 windows and more
  // (doubling per stall) and each of the seven RTOs (4.2 ms, backoff reset
  // by each path change) move the path; the eighth RTO fails the WR with
  // RETRY_EXC_ERR, within 8 x 4.2 ms.
  ASSERT_EQ(d.pair->completions[0].size(), 1u);
  EXPECT_EQ(d.pair->completions[0][0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(d.counters(0).path_changes_timeout, 7u);
  EXPECT_GT(d.counters(0).path_changes_stall, 0u);
  EXPECT_EQ(d.counters(0).timeouts, 8u);
  EXPECT_LT(net.now(), 100'000'000u);
}

// The verb workload of transfer_test.cc with path control on: every verb intact
// under random loss on every path (repaths happen; nothing breaks).
TEST(PathTransfer, EveryVerbIntactUnderLossWithPathControl) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    for (double loss : {0.01, 0.05}) {
      SCOPED_TRACE(std::to_string(loss));
      QpAttr attr;
      attr.path_mtu = 1024;
      attr.recovery = rec;
      attr.timeout = 8;
      uint64_t bytes;
      const auto msgs = verb_workload(1024, 300, 31, &bytes);
      PathConfig pc;
      pc.field = wire::DodgeField::kUdpSport;
      Pair p(25'000'000'000, 2'000, bytes, attr, 17, [pc](EngineConfig& c, int) { c.path = pc; });
      p.net.set_faults_both({.loss = loss});
      const Endpoint a{&p.eng(0), p.side[0].qp, p.side[0].cq, p.side[0].mr, p.side[0].buf.data(),
                       p.side[0].buf.size()};
      const Endpoint b{&p.eng(1), p.side[1].qp, p.side[1].cq, p.side[1].mr, p.side[1].buf.data(),
                       p.side[1].buf.size()};
      const uint64_t deadline = p.net.now() + 30'000'000'000ull;
      bool stuck = false;
      auto step = [&] {
        if (!p.net.step()) stuck = true;
        return !stuck && p.net.now() <= deadline;
      };
      ASSERT_TRUE(run_verb_workload(a, b, msgs, step, [&] { p.net.run_for(100'000); })) << p.describe();
    }
  }
}

}  // namespace
}  // namespace tita::test
