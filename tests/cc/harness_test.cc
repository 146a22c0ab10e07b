// Every algorithm in the single-bottleneck harness (harness.h, scenarios.h):
// two flows converge to fair shares, a 16:1 incast keeps the queue bounded, the
// link stays busy. The bounds are per algorithm, stated in the table below with
// the reason; the measured figures are in doc/cc (cc_harness_report).
#include <gtest/gtest.h>

#include "scenarios.h"

namespace tita::cc::harness {
namespace {

struct Expect {
  const char* algorithm;
  int fair_within_rtts;        // Jain >= 0.9 over every 10-RTT bin from then on
  double min_util_two;         // two long flows, 1.5-5 ms after the join
  double max_incast_queue_bdp; // 16:1, steady state (second half of 5 ms)
  double min_util_incast;
  const char* why;
};

// 10 RTTs is the bin size: "fair from the first bin after the join".
const Expect kExpect[] = {
    {"dcqcn", 10, 0.90, 1'600'000 / kBdpBytes, 0.40,
     "queue inside the RED band (below Kmax = 1.6 MB); with the reference's 900 us "
     "increase timer recovery after the incast cuts is slow: 44% busy at 2.5-5 ms"},
    {"timely", 10, 0.80, 120, 0.75,
     "delay-gradient only: queue up to ~2 T_high (T_high = 500 us = 50 BDP); known to "
     "lack a unique fair point (Zhu et al., CoNEXT 2016)"},
    {"hpcc", 10, 0.93, 0.25, 0.93, "eta = 0.95: near-zero queue, ~95% busy"},
    {"swift", 10, 0.95, 0.5, 0.95,
     "queue = target - base RTT: per-hop 1 us + flow scaling (~1.7 us at 16 flows)"},
    {"powertcp", 10, 0.93, 0.25, 0.93, "eta = 0.95: near-zero queue"},
    {"nscc", 10, 0.95, 1.5, 0.95,
     "queueing-delay target 5 us (0.5 BDP) plus the ECN band (0.2-0.8 BDP)"},
    {"tita", 10, 0.95, 0.25, 0.95, "eta = 0.95 plus share-proportional AI"},
};

void PrintTo(const Expect& e, std::ostream* os) { *os << e.algorithm; }

class HarnessTest : public ::testing::TestWithParam<Expect> {};

TEST_P(HarnessTest, TwoFlowsConvergeToFairShares) {
  const Expect& e = GetParam();
  const Config c = fairness_config(e.algorithm, 1'000'000, 6'000'000);
  const Result r = run(c);
  const int rtts = rtts_to_fairness(r, c, 1'000'000, 0.9);
  EXPECT_GE(rtts, 0) << e.why;
  EXPECT_LE(rtts, e.fair_within_rtts) << e.why;
  EXPECT_GE(r.jain(), 0.9) << e.why;
  EXPECT_GE(utilisation_between(r, c, 2'500'000, 6'000'000), e.min_util_two) << e.why;
}

TEST_P(HarnessTest, IncastKeepsTheQueueBounded) {
  const Expect& e = GetParam();
  const Result r = run(incast_config(e.algorithm, 16, 5'000'000));
  EXPECT_LE(static_cast<double>(r.max_queue_bytes) / kBdpBytes, e.max_incast_queue_bdp) << e.why;
  EXPECT_GE(r.utilisation, e.min_util_incast) << e.why;
  EXPECT_GE(r.jain(), 0.9) << e.why;
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, HarnessTest, ::testing::ValuesIn(kExpect),
                         [](const auto& info) { return std::string(info.param.algorithm); });

// tita: the same law without INT, or with INT missing at the bottleneck.
class TitaFallbackTest : public ::testing::TestWithParam<IntMode> {};

TEST_P(TitaFallbackTest, FairBusyAndShallowWithoutCompleteInt) {
  Config two = fairness_config("tita", 1'000'000, 6'000'000);
  two.int_mode = GetParam();
  const Result r2 = run(two);
  EXPECT_GE(rtts_to_fairness(r2, two, 1'000'000, 0.9), 0);
  EXPECT_LE(rtts_to_fairness(r2, two, 1'000'000, 0.9), 10);
  EXPECT_GE(utilisation_between(r2, two, 2'500'000, 6'000'000), 0.95);

  // The fallback's operating point is a queue of rtt_slack x T (0.1 BDP).
  Config incast = incast_config("tita", 16, 5'000'000);
  incast.int_mode = GetParam();
  const Result r16 = run(incast);
  EXPECT_LE(static_cast<double>(r16.max_queue_bytes) / kBdpBytes, 0.5);
  EXPECT_GE(r16.utilisation, 0.95);
  EXPECT_GE(r16.jain(), 0.9);
}

INSTANTIATE_TEST_SUITE_P(Modes, TitaFallbackTest,
                         ::testing::Values(IntMode::kNone, IntMode::kAccessOnly,
                                           IntMode::kAccessAndBottleneck),
                         [](const auto& info) {
                           switch (info.param) {
                             case IntMode::kNone: return std::string("NoInt");
                             case IntMode::kAccessOnly: return std::string("PartialInt");
                             default: return std::string("TwoHopInt");
                           }
                         });

TEST(TitaHarnessTest, HundredToOneIncastIsStable) {
  for (IntMode mode : {IntMode::kBottleneck, IntMode::kNone}) {
    Config c = incast_config("tita", 100, 5'000'000);
    c.int_mode = mode;
    const Result r = run(c);
    // 100 flows at equal shares add 100 x 0.0005 + 0.005 x sqrt(100) = 0.1 BDP per
    // RTT against 0.05 of headroom; without INT the fallback's operating point is
    // a queue of rtt_slack (0.1 BDP) on top. Peaks measured: 0.2 (INT), 0.51 (none).
    EXPECT_LE(static_cast<double>(r.max_queue_bytes) / kBdpBytes, 0.6);
    EXPECT_GE(r.utilisation, 0.95);
    EXPECT_GE(r.jain(), 0.9);
  }
}

TEST(TitaHarnessTest, TakesFreedCapacityWithinAFewRtts) {
  // With complete INT, U drops below eta (1 - ramp_band) and W jumps by eta/U.
  const Config with_int = ramp_config("tita", IntMode::kBottleneck);
  const Result r = run(with_int);
  EXPECT_GE(rtts_to_utilisation(r, with_int, 2'000'000, 0.9), 0);
  EXPECT_LE(rtts_to_utilisation(r, with_int, 2'000'000, 0.9), 6);
  // Without INT: maxStage clean RTTs, then probing doubles its step.
  const Config no_int = ramp_config("tita", IntMode::kNone);
  const Result f = run(no_int);
  EXPECT_GE(rtts_to_utilisation(f, no_int, 2'000'000, 0.9), 0);
  EXPECT_LE(rtts_to_utilisation(f, no_int, 2'000'000, 0.9), 15);
}

TEST(TitaHarnessTest, CoalescedAcksKeepTheSameBounds) {
  // One ACK per 4 packets: the INT of the last one, 4 packets acknowledged.
  for (const char* algorithm : {"tita", "hpcc"}) {
    Config c = incast_config(algorithm, 16, 5'000'000);
    c.ack_every = 4;
    const Result r = run(c);
    EXPECT_LE(static_cast<double>(r.max_queue_bytes) / kBdpBytes, 0.25) << algorithm;
    EXPECT_GE(r.utilisation, 0.93) << algorithm;
  }
}

TEST(HarnessSelfTest, DeterministicAndConserving) {
  const Config c = incast_config("hpcc", 4, 1'000'000);
  const Result a = run(c);
  const Result b = run(c);
  EXPECT_EQ(a.goodput_bps, b.goodput_bps);
  EXPECT_EQ(a.max_queue_bytes, b.max_queue_bytes);
  EXPECT_EQ(a.base_rtt_ns, kRttNs);
  EXPECT_LE(a.utilisation, 1.0);
  // "none" at line rate from two senders: the queue grows at the link rate.
  Config none = base_config("none");
  none.n_flows = 2;
  none.duration_ns = 100'000;
  const Result n = run(none);
  EXPECT_NEAR(static_cast<double>(n.peak_queue_bytes), 100e9 / 8 * 100e-6, 3 * kBdpBytes / 10);
}

}  // namespace
}  // namespace tita::cc::harness
