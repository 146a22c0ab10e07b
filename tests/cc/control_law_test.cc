// Control laws on a fake clock: scripted events, exact expected outputs. The
// expected values are worked out here from the papers' equations (the comments
// show the arithmetic), not by calling the implementation.
#include <cmath>
#include <cstring>

#include "cc_test_util.h"

namespace tita::cc::test {
namespace {

constexpr double kLine = 100e9;
constexpr uint64_t kUs = 1'000;

// ---------------------------------------------------------------- none

TEST(NoneTest, LineRateOrFixedRateAndNoWindow) {
  Params p = make_params("none", kLink100g);
  Flow f;
  f.init(p, kLink100g, 0);
  EXPECT_EQ(f.rate_bps(), 100'000'000'000u);
  EXPECT_EQ(f.cwnd_bytes(), kNoWindow);
  EXPECT_EQ(f.next_timer_ns(), kNoTimer);
  EXPECT_FALSE(f.wants_int());
  f.on_cnp(1);
  f.on_ack(2, make_ack(1000, 2000, 10'000));
  EXPECT_EQ(f.rate_bps(), 100'000'000'000u);

  Params fixed = make_params("none", kLink100g, {"rate_bps=40e9"});
  f.init(fixed, kLink100g, 0);
  EXPECT_EQ(f.rate_bps(), 40'000'000'000u);
  Params too_fast = make_params("none", kLink100g, {"rate_bps=400e9"});
  f.init(too_fast, kLink100g, 0);
  EXPECT_EQ(f.rate_bps(), 100'000'000'000u);  // capped at the line rate
}

// ---------------------------------------------------------------- DCQCN

// g = 1/256, alpha interval 1 us, decrease interval 4 us, T = 900 us, F = 1,
// R_AI = 50 Mb/s, R_HAI = 100 Mb/s at 100 Gb/s.
class DcqcnTest : public ::testing::Test {
 protected:
  static constexpr double kG = 1.0 / 256;
  const DcqcnFlow& dcqcn() const { return *f_.state<DcqcnFlow>(); }
  void expect_rate(double rate_bps, double target_bps) {
    EXPECT_DOUBLE_EQ(dcqcn().current_rate_bps(), rate_bps);
    EXPECT_DOUBLE_EQ(dcqcn().target_rate_bps(), target_bps);
    EXPECT_NEAR(static_cast<double>(f_.rate_bps()), rate_bps, 1.0);
  }
  Params p_ = make_params("dcqcn", kLink100g);
  Flow f_;
};

TEST_F(DcqcnTest, CutsByHalfAlphaThenFastRecoveryThenAdditiveThenHyper) {
  f_.init(p_, kLink100g, 0);
  EXPECT_TRUE(f_.cwnd_bytes() == kNoWindow && f_.next_timer_ns() == kNoTimer);
  expect_rate(kLine, kLine);

  // t = 0: first CNP. alpha = 1: R_T = R_C = 100G, R_C = 100G (1 - 1/2) = 50G.
  f_.on_cnp(0);
  expect_rate(50e9, 100e9);
  EXPECT_EQ(f_.next_timer_ns(), 900 * kUs);

  // t = 10 us: second CNP. The first CNP started the alpha clock (1 us
  // intervals) without counting itself, so 10 intervals ended with no CNP:
  // alpha = (1 - g)^10. R_T = R_C = 50G, R_C = 50G (1 - alpha/2).
  const double alpha10 = std::pow(1 - kG, 10);
  EXPECT_DOUBLE_EQ(dcqcn().alpha_at(10 * kUs), alpha10);
  f_.on_cnp(10 * kUs);
  double rc = 50e9 * (1 - alpha10 / 2);
  double rt = 50e9;
  expect_rate(rc, rt);
  EXPECT_EQ(f_.next_timer_ns(), 910 * kUs);  // increase timer restarted by the cut

  // t = 910 us, timer stage 0 < F: fast recovery, R_C = (R_C + R_T)/2.
  f_.on_timer(910 * kUs);
  rc = (rc + rt) / 2;
  expect_rate(rc, rt);
  EXPECT_EQ(f_.next_timer_ns(), 1810 * kUs);

  // t = 1810 us, stage 1 == F: additive, R_T += 50M, R_C = (R_C + R_T)/2.
  f_.on_timer(1810 * kUs);
  rt += 50e6;
  rc = (rc + rt) / 2;
  expect_rate(rc, rt);

  // t = 2710 us, stage 2 > F: hyper, R_T += 100M.
  f_.on_timer(2710 * kUs);
  rt += 100e6;
  rc = (rc + rt) / 2;
  expect_rate(rc, rt);

  // alpha decays per interval; the CNP at 10 us counts in [10, 11) us:
  // at 2710 us, 2700 intervals ended since 10 us: alpha = ((1-g) alpha10 + g)(1-g)^2699.
  EXPECT_NEAR(dcqcn().alpha_at(2710 * kUs), ((1 - kG) * alpha10 + kG) * std::pow(1 - kG, 2699),
              1e-15);
}

TEST_F(DcqcnTest, CnpInsideDecreaseIntervalIsHeldUntilItEnds) {
  f_.init(p_, kLink100g, 0);
  f_.on_cnp(0);  // R_C = 50G
  // t = 2 us: within 4 us of the cut: no cut now, one at 4 us.
  f_.on_cnp(2 * kUs);
  expect_rate(50e9, 100e9);
  EXPECT_EQ(f_.next_timer_ns(), 4 * kUs);
  // alpha at 4 us: intervals [0,1) and [1,2) without CNP: (1-g)^2; [2,3) had
  // the CNP: (1-g) a + g; [3,4): (1-g) a.
  const double alpha = ((1 - kG) * std::pow(1 - kG, 2) + kG) * (1 - kG);
  f_.on_timer(4 * kUs);
  expect_rate(50e9 * (1 - alpha / 2), 50e9);
  EXPECT_EQ(f_.next_timer_ns(), 904 * kUs);
}

TEST_F(DcqcnTest, LateTimerGivesTheSameRatesAsPunctualOne) {
  Flow punctual;
  Flow late;
  for (Flow* f : {&punctual, &late}) {
    f->init(p_, kLink100g, 0);
    f->on_cnp(0);
    f->on_cnp(20 * kUs);
  }
  for (uint64_t t = punctual.next_timer_ns(); t <= 5'000 * kUs; t = punctual.next_timer_ns())
    punctual.on_timer(t);
  late.on_timer(5'000 * kUs + 123);  // one call, long after five deadlines
  EXPECT_EQ(late.rate_bps(), punctual.rate_bps());
  EXPECT_EQ(late.next_timer_ns(), punctual.next_timer_ns());
  EXPECT_EQ(late.state<DcqcnFlow>()->current_rate_bps(),
            punctual.state<DcqcnFlow>()->current_rate_bps());
  EXPECT_EQ(late.state<DcqcnFlow>()->target_rate_bps(),
            punctual.state<DcqcnFlow>()->target_rate_bps());
  // A CNP after the missed deadlines cuts from the same rate with the same alpha.
  punctual.on_cnp(5'100 * kUs);
  late.on_cnp(5'100 * kUs);
  EXPECT_EQ(late.rate_bps(), punctual.rate_bps());
}

TEST_F(DcqcnTest, ByteCounterStagesCombineWithTimerStages) {
  Params p = make_params("dcqcn", kLink100g, {"byte_counter_bytes=10000"});
  f_.init(p, kLink100g, 0);
  f_.on_cnp(0);          // R_C = 50G, R_T = 100G
  f_.on_cnp(10 * kUs);   // R_T = 50G, R_C = 50G (1 - alpha10/2)
  double rc = 50e9 * (1 - std::pow(1 - kG, 10) / 2);
  double rt = 50e9;
  // Byte event, stages (t, b) = (0, 0): max < F = 1: fast recovery.
  f_.on_send(11 * kUs, 10000);
  rc = (rc + rt) / 2;
  expect_rate(rc, rt);
  // (0, 1): max = 1 not < F, min = 0 not > F: additive.
  f_.on_send(12 * kUs, 10000);
  rt += 50e6;
  rc = (rc + rt) / 2;
  expect_rate(rc, rt);
  // (0, 2): still additive: hyper needs both counters past F.
  f_.on_send(13 * kUs, 10000);
  rt += 50e6;
  rc = (rc + rt) / 2;
  expect_rate(rc, rt);
  // Timer events at 910, 1810 us: (0, 3) additive, (1, 3) additive; at 2710 us
  // (2, 3): both past F: hyper.
  f_.on_timer(910 * kUs);
  rt += 50e6;
  rc = (rc + rt) / 2;
  f_.on_timer(1810 * kUs);
  rt += 50e6;
  rc = (rc + rt) / 2;
  expect_rate(rc, rt);
  f_.on_timer(2710 * kUs);
  rt += 100e6;
  rc = (rc + rt) / 2;
  expect_rate(rc, rt);
}

TEST_F(DcqcnTest, PaperOrArtifactTargetOnBackToBackCuts) {
  // Default (paper): every cut sets R_T = R_C.
  f_.init(p_, kLink100g, 0);
  f_.on_cnp(0);
  f_.on_cnp(10 * kUs);
  EXPECT_DOUBLE_EQ(dcqcn().target_rate_bps(), 50e9);
  // Artifact (CLAMP_TARGET_RATE 0): no increase since the last cut: R_T stays 100G.
  Params artifact = make_params("dcqcn", kLink100g, {"clamp_target_rate=0"});
  f_.init(artifact, kLink100g, 0);
  f_.on_cnp(0);
  f_.on_cnp(10 * kUs);
  EXPECT_DOUBLE_EQ(dcqcn().target_rate_bps(), 100e9);
}

TEST_F(DcqcnTest, NeverBelowMinRateAndTimerStopsAtLineRate) {
  Params p = make_params("dcqcn", kLink100g, {"min_rate_bps=20e9"});
  f_.init(p, kLink100g, 0);
  for (uint64_t t = 0; t < 100 * kUs; t += 5 * kUs) f_.on_cnp(t);
  EXPECT_EQ(f_.rate_bps(), 20'000'000'000u);
  // Recovery ends at line rate with no timer left.
  for (uint64_t t = f_.next_timer_ns(); t != kNoTimer; t = f_.next_timer_ns()) f_.on_timer(t);
  EXPECT_EQ(f_.rate_bps(), 100'000'000'000u);
}

// ---------------------------------------------------------------- TIMELY

// a = 0.875, beta = 0.8, T_low 50 us, T_high 500 us, minRTT 20 us,
// delta 100 Mb/s, HAI 500 Mb/s after 5 increases (100 Gb/s defaults).
TEST(TimelyTest, GradientThresholdsAndHyperIncrease) {
  Params p = make_params("timely", kLink100g);
  Flow f;
  f.init(p, kLink100g, 0);
  uint64_t seq = 0;
  // Every ACK below acknowledges data sent after the previous update: one update each.
  auto ack = [&](uint32_t rtt_ns) {
    seq += 100'000;
    f.on_ack(seq, make_ack(seq, seq + 50'000, rtt_ns));
  };
  ack(60'000);  // first RTT: remembered only
  EXPECT_EQ(f.rate_bps(), 100'000'000'000u);

  // rtt 80 us: d = 0.875 (80 - 60) us = 17500 ns, gradient = 17500/20000 = 0.875
  // in [T_low, T_high]: R = 100G (1 - 0.8 x 0.875) = 30G.
  ack(80'000);
  EXPECT_DOUBLE_EQ(f.state<TimelyFlow>()->rtt_diff_ns(), 17'500);
  double r = 100e9 * (1 - 0.8 * 0.875);
  EXPECT_NEAR(static_cast<double>(f.rate_bps()), r, 1);

  // rtt 70 us: d = 0.125 x 17500 + 0.875 x (-10000) = -6562.5 < 0: R += 100M.
  ack(70'000);
  EXPECT_DOUBLE_EQ(f.state<TimelyFlow>()->rtt_diff_ns(), -6'562.5);
  r += 100e6;
  EXPECT_NEAR(static_cast<double>(f.rate_bps()), r, 1);

  // rtt 600 us > T_high: R = R (1 - 0.8 (1 - 500/600)).
  ack(600'000);
  r *= 1 - 0.8 * (1 - 500.0 / 600.0);
  EXPECT_NEAR(static_cast<double>(f.rate_bps()), r, 1);

  // rtt 40 us < T_low: five increases of delta, then hyper-active steps.
  for (int i = 0; i < 5; ++i) {
    ack(40'000);
    r += 100e6;
  }
  EXPECT_NEAR(static_cast<double>(f.rate_bps()), r, 1);
  ack(40'000);
  r += 500e6;
  EXPECT_NEAR(static_cast<double>(f.rate_bps()), r, 1);

  // An ACK within the same RTT (ack_seq <= last update point) changes nothing.
  const uint64_t before = f.rate_bps();
  f.on_ack(seq + 1, make_ack(seq + 1, seq + 50'000, 900'000));
  EXPECT_EQ(f.rate_bps(), before);
}

// ---------------------------------------------------------------- HPCC

// T = 10 us, B = 100 Gb/s: BDP = W_init = 125000 B; eta 0.95; maxStage 5;
// W_AI = 50 Mb/s x 10 us = 62.5 B. Rate = W x 8 / 10 us = W x 800000 b/s.
class HpccTest : public ::testing::Test {
 protected:
  void ack(uint64_t now, uint64_t ack_seq, uint64_t next_seq, uint32_t ts, uint32_t tx,
           uint32_t qlen) {
    AckSample s = make_ack(ack_seq, next_seq, 10'000);
    add_hop(s, 100'000'000'000, ts, tx, qlen);
    f_.on_ack(now, s);
  }
  void expect_window(double w) {
    EXPECT_DOUBLE_EQ(f_.state<HpccFlow>()->window_bytes(), w);
    EXPECT_EQ(f_.cwnd_bytes(), static_cast<uint64_t>(w));
    EXPECT_EQ(f_.rate_bps(), static_cast<uint64_t>(w * 800'000));
  }
  Params p_ = make_params("hpcc", kLink100g);
  Flow f_;
};

TEST_F(HpccTest, PerAckFastReactFromCommittedWindowAndPerRttCommit) {
  f_.init(p_, kLink100g, 0);
  EXPECT_TRUE(f_.wants_int());
  expect_window(125'000);

  // First ACK: records INT only; lastUpdateSeq = snd_nxt = 125000.
  ack(10'000, 1'000, 125'000, 1'000, 1'000, 0);
  expect_window(125'000);

  // Fast react (ack 2000 <= 125000). dts 80 ns, dtx 1000 B: 100 Gb/s, u = 0 + 1.
  // U = (1 - 80/10000) 1 + (80/10000) 1 = 1 >= eta: W = 125000/(1/0.95) + 62.5.
  ack(10'080, 2'000, 126'000, 1'080, 2'000, 50'000);
  expect_window(125'000 * 0.95 / 1.0 + 62.5);
  EXPECT_DOUBLE_EQ(f_.state<HpccFlow>()->committed_window_bytes(), 125'000);

  // Fast react: min(60000, 50000) = 50000 B of queue = 50000 x 8 / (100G x 10us) = 0.4;
  // u = 1.4; U = 0.992 x 1 + 0.008 x 1.4 = 1.0032; still from W_c = 125000.
  ack(10'160, 3'000, 127'000, 1'160, 3'000, 60'000);
  double u = 0.992 * 1.0 + 0.008 * 1.4;
  EXPECT_DOUBLE_EQ(f_.state<HpccFlow>()->utilisation(), u);
  expect_window(125'000 / (u / 0.95) + 62.5);

  // Commit (ack 126000 > 125000): q = min(60000, 60000) -> 0.48, u = 1.48.
  ack(10'240, 126'000, 250'000, 1'240, 4'000, 60'000);
  u = 0.992 * u + 0.008 * 1.48;
  const double w_commit = 125'000 / (u / 0.95) + 62.5;
  expect_window(w_commit);
  EXPECT_DOUBLE_EQ(f_.state<HpccFlow>()->committed_window_bytes(), w_commit);
  EXPECT_EQ(f_.state<HpccFlow>()->inc_stage(), 0u);

  // Next fast react starts from the new W_c: q = min(0, 60000) = 0, u = 1.
  ack(10'320, 127'000, 251'000, 1'320, 5'000, 0);
  u = 0.992 * u + 0.008 * 1.0;
  expect_window(w_commit / (u / 0.95) + 62.5);
}

TEST_F(HpccTest, AdditiveStagesThenMultiplicativeIncrease) {
  f_.init(p_, kLink100g, 0);
  // Records 10 us apart (tau = T: U = u exactly), each ACK commits.
  uint64_t seq = 0;
  uint32_t ts = 0, tx = 0;
  auto ack_u = [&](uint32_t dtx, uint32_t qlen) {
    seq += 200'000;
    ts += 10'000;
    tx += dtx;
    ack(ts, seq, seq + 100'000, ts, tx, qlen);
  };
  ack(0, 1'000, 1'000, 0, 0, 112'500);  // first: record
  // 125000 B in 10 us = 100 Gb/s -> 1.0; min(112500, 112500) = 0.9 BDP: u = 1.9.
  // W = 125000/(1.9/0.95) + 62.5 = 62562.5.
  ack_u(125'000, 112'500);
  double w = 62'562.5;
  expect_window(w);
  // u = 62500/125000 = 0.5 < eta: five additive stages, W_c + 62.5 each.
  for (uint32_t stage = 1; stage <= 5; ++stage) {
    ack_u(62'500, 0);
    w += 62.5;
    expect_window(w);
    EXPECT_EQ(f_.state<HpccFlow>()->inc_stage(), stage);
  }
  // incStage = maxStage: multiplicative, W = 62875/(0.5/0.95) + 62.5 = 119525.
  ack_u(62'500, 0);
  w = w / (0.5 / 0.95) + 62.5;
  EXPECT_DOUBLE_EQ(w, 119'525);
  expect_window(w);
  EXPECT_EQ(f_.state<HpccFlow>()->inc_stage(), 0u);
}

TEST_F(HpccTest, WithoutFastReactOnlyCommitsReact) {
  Params p = make_params("hpcc", kLink100g, {"fast_react=0"});
  f_.init(p, kLink100g, 0);
  ack(10'000, 1'000, 125'000, 1'000, 1'000, 0);
  ack(10'080, 2'000, 126'000, 1'080, 2'000, 100'000);  // not a commit: ignored entirely
  expect_window(125'000);
  // The commit measures against the first record: dts 160 ns, dtx 2000 B: 100G;
  // min(100000, 0) = 0: u = 1; U = (1 - 0.016) 1 + 0.016 = 1: W = 118750 + 62.5.
  ack(10'160, 126'000, 250'000, 1'160, 3'000, 100'000);
  expect_window(118'812.5);
}

TEST_F(HpccTest, MissingOrStaleIntChangesNothing) {
  f_.init(p_, kLink100g, 0);
  ack(10'000, 1'000, 125'000, 1'000, 1'000, 0);
  f_.on_ack(10'080, make_ack(2'000, 126'000, 10'000));  // no INT: nothing to measure
  expect_window(125'000);
  ack(10'160, 3'000, 127'000, 1'160, 3'000, 0);  // history was cleared: record only
  expect_window(125'000);
  ack(10'240, 4'000, 128'000, 1'160, 4'000, 0);  // duplicate timestamp: skipped
  expect_window(125'000);
  // 64 base RTTs later: too old to difference against.
  ack(10'240 + 641'000, 5'000, 129'000, 642'160, 90'000, 0);
  expect_window(125'000);
}

TEST_F(HpccTest, CountersThatWrapGiveTheTrueRate) {
  f_.init(p_, kLink100g, 0);
  ack(10'000, 1'000, 125'000, 0xFFFF'FF00u, 0xFFFF'FC18u, 0);  // 1000 B before the wrap
  // ts advances 80 ns across the wrap, tx 1000 B across the wrap: 100 Gb/s, u = 1.
  ack(10'080, 2'000, 126'000, 0xFFFF'FF50u, 0x0000'0000u, 0);
  EXPECT_DOUBLE_EQ(f_.state<HpccFlow>()->utilisation(), 1.0);
  expect_window(125'000 * 0.95 + 62.5);
}

// ---------------------------------------------------------------- Swift

// BDP = 125 packets; base target 10 us, h = 1 us, fs_range 10 us, fs in
// [0.1, 100] packets, ai 1, beta 0.8, max_mdf 0.5.
TEST(SwiftTest, TargetScalesWithHopsAndWindow) {
  Params p = make_params("swift", kLink100g);
  Flow f;
  f.init(p, kLink100g, 0);
  const SwiftFlow& s = *f.state<SwiftFlow>();
  // alpha = 10000 / (1/sqrt(0.1) - 1/sqrt(100)), beta' = -alpha/10.
  const double alpha = 10'000 / (1 / std::sqrt(0.1) - 0.1);
  // cwnd 125: alpha/sqrt(125) - alpha/10 < 0: no flow scaling. 10000 + 1 x 1000.
  EXPECT_DOUBLE_EQ(s.target_ns(125, 1), 11'000);
  EXPECT_DOUBLE_EQ(s.target_ns(125, 3), 13'000);
  // cwnd 1: fs = alpha (1 - 0.1).
  EXPECT_DOUBLE_EQ(s.target_ns(1, 1), 11'000 + alpha * 0.9);
  // cwnd 0.1: fs = fs_range.
  EXPECT_NEAR(s.target_ns(0.1, 1), 21'000, 1e-9);
  EXPECT_DOUBLE_EQ(s.target_ns(0.01, 1), 21'000);  // clamped
}

TEST(SwiftTest, AdditiveIncreaseAndMultiplicativeDecreaseOncePerRtt) {
  Params p = make_params("swift", kLink100g);
  Flow f;
  f.init(p, kLink100g, 0);
  auto cwnd = [&] { return f.state<SwiftFlow>()->cwnd_packets(); };
  EXPECT_DOUBLE_EQ(cwnd(), 125);
  EXPECT_EQ(f.rate_bps(), 100'000'000'000u);
  EXPECT_EQ(f.cwnd_bytes(), 125'000u);

  // delay 10.5 us < target 11 us: cwnd += 1 x 1/125.
  f.on_ack(10 * kUs, make_ack(1'000, 2'000, 10'500));
  double c = 125 + 1.0 / 125;
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // delay 22 us > 11 us: cwnd *= max(1 - 0.8 (22 - 11)/22, 0.5) = 0.6.
  f.on_ack(20 * kUs, make_ack(2'000, 3'000, 22'000));
  c *= 0.6;
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // 1 us later (< one RTT of 22 us): no second decrease, no increase.
  f.on_ack(21 * kUs, make_ack(3'000, 4'000, 22'000));
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // Delay 100 us, 23 us after the decrease: too soon (one RTT is now 100 us).
  f.on_ack(43 * kUs, make_ack(4'000, 5'000, 100'000));
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // 101 us after it: 1 - 0.8 x 89/100 = 0.288 -> capped at 1 - max_mdf = 0.5.
  f.on_ack(121 * kUs, make_ack(5'000, 6'000, 100'000));
  c *= 0.5;
  EXPECT_DOUBLE_EQ(cwnd(), c);
  EXPECT_EQ(f.cwnd_bytes(), static_cast<uint64_t>(c * 1000));
}

TEST(SwiftTest, BelowOnePacketPacesOverTheRtt) {
  Params p = make_params("swift", kLink100g, {"min_rate_bps=1e3"});
  Flow f;
  f.init(p, kLink100g, 0);
  f.on_ack(10 * kUs, make_ack(1'000, 2'000, 100'000));  // cwnd 125 -> 62.5 (max_mdf)
  for (int i = 0; i < 7; ++i) f.on_timeout(20 * kUs);   // RTO: x 0.5 each
  const double c = 62.5 / 128;                          // 0.48828125 packets
  EXPECT_DOUBLE_EQ(f.state<SwiftFlow>()->cwnd_packets(), c);
  EXPECT_EQ(f.cwnd_bytes(), 1'000u);  // one packet in flight...
  // ...paced at cwnd x MTU / rtt = 0.48828125 x 8000 bit / 100 us = 39.0625 Mb/s.
  EXPECT_EQ(f.rate_bps(), 39'062'500u);
}

// ---------------------------------------------------------------- PowerTCP

// tau = T = 10 us, B = 100 Gb/s: B tau = 1e6 bit, B^2 tau = 1e17; beta = 150 Mb/s
// x 10 us = 187.5 B; gamma 0.9, eta 0.95.
TEST(PowertcpTest, NormalisedPowerAndWindowUpdate) {
  Params p = make_params("powertcp", kLink100g);
  Flow f;
  f.init(p, kLink100g, 0);
  auto ack = [&](uint64_t ack_seq, uint64_t next_seq, uint32_t ts, uint32_t tx, uint32_t q) {
    AckSample s = make_ack(ack_seq, next_seq, 10'000);
    add_hop(s, 100'000'000'000, ts, tx, q);
    f.on_ack(ts, s);
  };
  const PowertcpFlow& st = *f.state<PowertcpFlow>();
  ack(1'000, 125'000, 0, 0, 0);  // first: record
  // Queue grew 25000 B in 10 us: qdot = 20 Gb/s; txRate 100 Gb/s: current 120 Gb/s.
  // voltage = 25000 x 8 + 1e6 = 1.2e6 bit: power = 120e9 x 1.2e6 / 1e17 = 1.44 (dt = tau).
  // W = 0.9 (125000/(1.44/0.95) + 187.5) + 0.1 x 125000 = 86887.5; commit.
  ack(126'000, 250'000, 10'000, 125'000, 25'000);
  EXPECT_DOUBLE_EQ(st.norm_power(), 1.44);
  EXPECT_DOUBLE_EQ(st.window_bytes(), 86'887.5);
  EXPECT_EQ(f.rate_bps(), static_cast<uint64_t>(86'887.5 * 800'000));
  // Queue drains 25000 B in 10 us: current = 100 - 20 = 80 Gb/s; voltage 1e6:
  // power 0.8. W = 0.9 (86887.5/(0.8/0.95) + 187.5) + 0.1 x 86887.5 = 101718.515625.
  ack(251'000, 375'000, 20'000, 250'000, 0);
  EXPECT_DOUBLE_EQ(st.norm_power(), 0.8);
  EXPECT_DOUBLE_EQ(st.window_bytes(), 101'718.515625);
  // A fast ACK (same RTT): from W_old = 101718.515625. Link at 10 Gb/s, no queue:
  // current floored at 0.5 B -> power 0.5 (dt = tau).
  // W = 0.9 (101718.515625/(0.5/0.95) + 187.5) + 0.1 x 101718.515625, capped at BDP.
  ack(252'000, 376'000, 30'000, 262'500, 0);
  EXPECT_DOUBLE_EQ(st.norm_power(), 0.5);
  EXPECT_DOUBLE_EQ(st.window_bytes(), 125'000);
}

// ---------------------------------------------------------------- NSCC

// T = 12 us at 100 Gb/s: BDP = 150000 B = the reference, a = 1; target 6 us:
// b = 0.5; alpha = 4 x 1000 x 1 x 0.5 / 6000 = 1/3 B/ns; fi = 5000 B; eta = 150 B;
// maxwnd = 225000 B. apply_every_mtus = 1 and delay_gain = 1 keep the sums short.
TEST(NsccTest, FourQuadrantsQuickAdaptAndPerRttIncrease) {
  constexpr FlowConfig link{100'000'000'000, 12'000, 1000};
  Params p = make_params("nscc", link, {"apply_every_mtus=1", "delay_gain=1"});
  Flow f;
  f.init(p, link, 0);
  auto cwnd = [&] { return f.state<NsccFlow>()->cwnd_bytes(); };
  EXPECT_DOUBLE_EQ(cwnd(), 225'000);
  auto ack = [&](uint64_t now, uint64_t ack_seq, uint32_t delay_ns, bool ecn) {
    AckSample s = make_ack(ack_seq, 400'000, 12'000 + delay_ns);
    s.ce_packets = ecn ? 1 : 0;
    f.on_ack(now, s);
  };
  // New round: + eta = 225150; ECN and delay 10 us >= 6 us: MD by
  // max(1 - 0.8 (10 - 6)/10, 0.5) = 0.68 -> 153102.
  ack(12 * kUs, 1'000, 10'000, true);
  double c = (225'000 + 150) * 0.68;
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // Same quadrant 1 us later: at most one MD per base RTT.
  ack(13 * kUs, 2'000, 10'000, true);
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // No ECN, delay 3 us < target: inc = (1/3) x 1000 x (6000 - 3000) = 1e6; cwnd += inc/cwnd.
  ack(14 * kUs, 3'000, 3'000, false);
  c += 1e6 / c;
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // No ECN, delay 7 us >= target: fair increase 5000 x 1000.
  ack(15 * kUs, 4'000, 7'000, false);
  c += 5e6 / c;
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // ECN, delay 3 us < target: nothing.
  ack(16 * kUs, 5'000, 3'000, true);
  EXPECT_DOUBLE_EQ(cwnd(), c);
  // delay 30 us > 4 x target: quick adapt to the bytes acknowledged in the last
  // base RTT period [12, 24) us: 5 ACKs x 1000 B.
  ack(24 * kUs, 6'000, 30'000, false);
  EXPECT_DOUBLE_EQ(cwnd(), 5'000);
  // ACK past the round's end (400000): new round, + eta.
  ack(30 * kUs, 400'001, 3'000, false);
  EXPECT_DOUBLE_EQ(cwnd(), 5'150 + 1e6 / 5'150);
}

TEST(NsccTest, FastIncreaseAfterACleanRound) {
  constexpr FlowConfig link{100'000'000'000, 12'000, 1000};
  Params p = make_params("nscc", link, {"apply_every_mtus=1", "delay_gain=1"});
  Flow f;
  f.init(p, link, 0);
  AckSample s = make_ack(1'000, 10'000, 12'000 + 30'000);  // quick adapt: cwnd = 1 MTU
  f.on_ack(12 * kUs, s);
  double c = 1'000;
  EXPECT_DOUBLE_EQ(f.state<NsccFlow>()->cwnd_bytes(), c);
  // Round 2 (ACK past 10000): + eta; delay 100 ns < target/16 = 375: a clean round.
  f.on_ack(13 * kUs, make_ack(10'001, 20'000, 12'100));
  c += 150;
  c += 1.0 / 3 * 1000 * (6'000 - 100) / c;
  EXPECT_DOUBLE_EQ(f.state<NsccFlow>()->cwnd_bytes(), c);
  // Round 3 follows a clean round: each ACK adds its acked bytes.
  f.on_ack(14 * kUs, make_ack(20'001, 30'000, 12'100));
  c += 150;
  c += 1'000;
  EXPECT_DOUBLE_EQ(f.state<NsccFlow>()->cwnd_bytes(), c);
}

// ---------------------------------------------------------------- tita

// T = 10 us, BDP = 125000 B. AI a = 0.0005 BDP + 0.005 sqrt(W_c BDP)
// = 62.5 + 0.005 sqrt(125000 W_c) (687.5 at W_c = BDP); eta 0.95; ramp below
// 0.76; maxStage 5.
class TitaTest : public ::testing::Test {
 protected:
  static double ai(double wc) { return 0.0005 * 125'000.0 + 0.005 * std::sqrt(wc * 125'000.0); }
  const TitaFlow& tita() const { return *f_.state<TitaFlow>(); }
  void int_ack(uint64_t now, uint64_t ack_seq, uint64_t next_seq, uint32_t rtt, uint32_t ts,
               uint32_t tx, uint32_t q) {
    AckSample s = make_ack(ack_seq, next_seq, rtt);
    add_hop(s, 100'000'000'000, ts, tx, q);
    f_.on_ack(now, s);
  }
  void expect_window(double w) {
    EXPECT_DOUBLE_EQ(tita().window_bytes(), w);
    EXPECT_EQ(f_.cwnd_bytes(), static_cast<uint64_t>(w));
    EXPECT_EQ(f_.rate_bps(), static_cast<uint64_t>(w * 800'000));
  }
  // The control law's arithmetic from a one-BDP window paced at W/T, without the
  // host-share cap (its own tests below).
  Params p_ = make_params("tita", kLink100g, {"init_window_bdp=1", "init_line_rate=0", "host_share=0"});
  Flow f_;
};

TEST(TitaDefaults, HalfBdpAtLineRateUntilTheFirstFeedback) {
  const Params p = make_params("tita", kLink100g);
  Flow f;
  f.init(p, kLink100g, 0);
  // 0.5 BDP (62500 B at 100G x 10 us), sent at line rate rather than W/T = 50G.
  EXPECT_EQ(f.cwnd_bytes(), 62'500u);
  EXPECT_EQ(f.rate_bps(), 100'000'000'000u);
  // The first ACK: the rate becomes W/T of the law's window (no longer line rate).
  f.on_ack(10'000, make_ack(1'000, 62'500, 10'000));
  EXPECT_NEAR(static_cast<double>(f.rate_bps()), f.state<TitaFlow>()->window_bytes() * 800'000, 1e6);
  EXPECT_LT(f.rate_bps(), 100'000'000'000u);
}

// Host share: a QP that gets fewer of its NIC's send slots than its pacing asks
// for is capped near what it gets, so a new QP on the same NIC finds slots free.
TEST(TitaHostShare, YieldsWhileTheNicLimitsItAndRecoversWhenServed) {
  const Params p = make_params("tita", kLink100g);
  Flow f;
  f.init(p, kLink100g, 0);
  constexpr uint32_t kPkt = 1024;
  const double line_wire_ns = (kPkt + 86) * 8.0 / 100;  // at 100 Gb/s
  uint64_t now = 0;
  uint64_t seq = 0;
  // One send; `slots` QPs share the NIC round robin, so the flow waits at least
  // `slots` wire times, or its own pacing gap if longer. An ACK every 8 packets
  // keeps 8 KB in flight at the base RTT (no congestion).
  auto send = [&](int slots) {
    const double pace_ns = (kPkt + 86) * 8e9 / static_cast<double>(f.rate_bps());
    now += static_cast<uint64_t>(std::max(pace_ns, slots * line_wire_ns));
    f.on_send(now, kPkt);
    seq += kPkt;
    if (seq % (8 * kPkt) == 0) f.on_ack(now, make_ack(seq - 8 * kPkt, seq, 10'000));
  };
  for (int i = 0; i < 2'000; ++i) send(1);
  const uint64_t served = f.rate_bps();
  EXPECT_FALSE(f.state<TitaFlow>()->host_limited());
  EXPECT_GT(served, 90'000'000'000u);
  // Three more QPs: the flow gets a quarter of the NIC, and paces below it.
  double sum = 0;
  for (int i = 0; i < 4'000; ++i) {
    send(4);
    if (i >= 2'000) sum += static_cast<double>(f.rate_bps());
  }
  const double mean = sum / 2'000;
  EXPECT_LT(mean, 0.3e11);
  EXPECT_GT(mean, 0.05e11);
  // Alone again: the cap lifts.
  for (int i = 0; i < 20'000; ++i) send(1);
  EXPECT_EQ(f.rate_bps(), served);
}

TEST_F(TitaTest, IntPathUtilisationRampAndPerRttCommit) {
  f_.init(p_, kLink100g, 0);
  EXPECT_TRUE(f_.wants_int());
  expect_window(125'000);
  // No INT history yet: the RTT explains the 9 us queue the hop reports
  // (112500 B at 100G), resid = 19 - 10 - 9 - 1 (slack) < 0: u = 2 eta - 1 = 0.9,
  // tau = 10 us = T: U = 0.9. Partial (per-hop fallback). W = 125000 + 687.5 -> cap.
  int_ack(10'000, 1'000, 125'000, 19'000, 0, 0, 112'500);
  EXPECT_EQ(tita().mode(), TitaFlow::Mode::kPartial);
  EXPECT_DOUBLE_EQ(tita().utilisation(), 0.9);
  expect_window(125'000);
  // Complete INT, dts = T: u = 0.9 (queue) + 1.0 (tx) = 1.9 = U.
  // W = 125000 x 0.95/1.9 + 62.5 + min(625, 3125) = 63187.5; commit.
  int_ack(20'000, 126'000, 250'000, 19'000, 10'000, 125'000, 112'500);
  EXPECT_EQ(tita().mode(), TitaFlow::Mode::kInt);
  EXPECT_DOUBLE_EQ(tita().utilisation(), 1.9);
  expect_window(63'187.5);
  EXPECT_DOUBLE_EQ(tita().committed_window_bytes(), 63'187.5);
  // Fast react: the link drains to 50 Gb/s, no queue: U = 0.5 < 0.76: ramp at
  // once: W = 63187.5 x 0.95/0.5 + a(63187.5) = 120056.25 + 506.86.
  int_ack(30'000, 127'000, 251'000, 10'000, 20'000, 187'500, 0);
  expect_window(63'187.5 * (0.95 / 0.5) + ai(63'187.5));
  EXPECT_DOUBLE_EQ(tita().committed_window_bytes(), 63'187.5);
  // Commit at 95 Gb/s: U = 0.95 >= eta: factor 1: W = 63187.5 + a(63187.5).
  int_ack(40'000, 251'000, 380'000, 10'000, 30'000, 306'250, 0);
  const double w1 = 63'187.5 + ai(63'187.5);
  expect_window(w1);
  EXPECT_EQ(tita().inc_stage(), 0u);
  // U = 0.9 (in [0.76, 0.95)): additive stages first.
  int_ack(50'000, 381'000, 500'000, 10'000, 40'000, 418'750, 0);
  expect_window(w1 + ai(w1));
  EXPECT_EQ(tita().inc_stage(), 1u);
}

TEST_F(TitaTest, FallbackDelayAndEcnFeedTheSameLaw) {
  f_.init(p_, kLink100g, 0);
  // No INT. rtt 10.5 us: resid = 0.5 - 1 (slack) < 0: u = 0.9; commit, stage 1.
  f_.on_ack(10'000, make_ack(1'000, 125'000, 10'500));
  EXPECT_EQ(tita().mode(), TitaFlow::Mode::kFallback);
  expect_window(125'000);
  // rtt 13 us: resid = 13 - 10 - 1 = 2 us: u = 0.95 (1 + 0.2) = 1.14 = U (tau = T).
  // W = 125000 x 0.95/1.14 + 687.5 (a at W_c = BDP).
  f_.on_ack(20'000, make_ack(126'000, 250'000, 13'000));
  EXPECT_DOUBLE_EQ(tita().utilisation(), 0.95 * 1.2);
  double wc = 125'000 * 0.95 / (0.95 * 1.2) + 687.5;
  expect_window(wc);
  // CE fraction per commit: alpha = 1 -> (15/16)^2 after two unmarked rounds.
  const double alpha = 0.9375 * 0.9375;
  EXPECT_DOUBLE_EQ(tita().ecn_fraction(), alpha);
  // A CE-marked ACK, no queue beyond slack: u = eta/(1 - alpha/2) = U (tau = T),
  // so W = W_c (1 - alpha/2) + a: DCTCP's cut, through the same law.
  AckSample s = make_ack(251'000, 380'000, 10'000);
  s.ce_packets = 1;
  f_.on_ack(30'000, s);
  EXPECT_DOUBLE_EQ(tita().utilisation(), 0.95 / (1 - alpha / 2));
  expect_window(wc * (1 - alpha / 2) + ai(wc));
}

TEST_F(TitaTest, PartialIntAttributesUnexplainedDelayToTheHopsWithoutInt) {
  f_.init(p_, kLink100g, 0);
  AckSample s = make_ack(1'000, 125'000, 10'000);
  add_hop(s, 100'000'000'000, 0, 0, 50'000);
  s.int_partial = true;
  f_.on_ack(10'000, s);
  // The INT hop: 50 Gb/s and 50000 B (0.4 BDP) of queue: u_int = 0.9. It explains
  // 4 us of the RTT; 10 + 4 + 1 (slack) + 3 = 18 us leaves resid = 3 us:
  // u_rtt = 0.95 x 1.3 = 1.235 > u_int.
  AckSample t = make_ack(126'000, 250'000, 18'000);
  add_hop(t, 100'000'000'000, 10'000, 62'500, 50'000);
  t.int_partial = true;
  f_.on_ack(20'000, t);
  EXPECT_EQ(tita().mode(), TitaFlow::Mode::kPartial);
  EXPECT_DOUBLE_EQ(tita().utilisation(), 0.95 * 1.3);
}

TEST_F(TitaTest, FallbackProbesOnlyAboveTheLastCongestedWindow) {
  Params p = make_params("tita", kLink100g,
                         {"ai_min_bdp=0", "ai_bdp=0", "max_stage=2", "init_window_bdp=0.5"});
  f_.init(p, kLink100g, 0);
  uint64_t seq = 0;
  uint64_t now = 0;
  auto ack = [&](uint32_t rtt) {
    seq += 200'000;
    now += 10'000;
    f_.on_ack(now, make_ack(seq, seq + 100'000, rtt));
  };
  ack(10'000);  // clean: stage 1
  ack(10'000);  // clean: stage 2
  expect_window(62'500);
  // Stage 2 = maxStage: probe, W_c (1 + g), g = (1 - eta) 2^k for k = 0, 1, 2, 3:
  // 1.05, 1.1, 1.2, 1.4 (-> 121275).
  const double headroom = 1 - 0.95;
  double w = 62'500;
  for (int k = 0; k < 4; ++k) {
    ack(10'000);
    w *= 1 + headroom * (1 << k);
    expect_window(w);
  }
  ack(10'000);
  expect_window(125'000);  // x 1.8, capped at the BDP
  // A queue: resid = 12 - 10 - 1 = 1 us: u = 0.95 x 1.1: W = 125000/1.1.
  ack(12'000);
  expect_window(125'000 / 1.1);
  // Clean again: two additive stages (no AI configured), then no probe: the
  // window is below where the path last filled (125000).
  for (int i = 0; i < 4; ++i) ack(10'000);
  expect_window(125'000 / 1.1);
}

TEST_F(TitaTest, LossHalvesOncePerRtt) {
  f_.init(p_, kLink100g, 0);
  f_.on_loss(1'000, LossSample{1'000, 100'000});
  expect_window(62'500);
  f_.on_loss(5'000, LossSample{1'000, 100'000});  // within T of the last decrease
  expect_window(62'500);
  f_.on_timeout(12'000);
  expect_window(31'250);
}

}  // namespace
}  // namespace tita::cc::test
