// Receiver-side CNP pacing and switch-side RED marking.
#include <cerrno>

#include "cc_test_util.h"

namespace tita::cc::test {
namespace {

TEST(NpTest, AtMostOneCnpPerIntervalAndOnlyForCe) {
  NpParams p;  // 50 us
  NpState st;
  EXPECT_FALSE(np_on_data(p, st, 0, false));
  EXPECT_TRUE(np_on_data(p, st, 1'000, true));
  EXPECT_FALSE(np_on_data(p, st, 10'000, true));
  EXPECT_FALSE(np_on_data(p, st, 50'999, true));
  EXPECT_TRUE(np_on_data(p, st, 51'000, true));  // 50 us after the last CNP
  EXPECT_FALSE(np_on_data(p, st, 200'000, false));
  EXPECT_TRUE(np_on_data(p, st, 200'001, true));
}

TEST(NpTest, ZeroIntervalAnswersEveryCeAndSetByName) {
  NpParams p;
  std::string err;
  ASSERT_EQ(p.set("cnp_interval_ns=0", &err), 0);
  NpState st;
  EXPECT_TRUE(np_on_data(p, st, 5, true));
  EXPECT_TRUE(np_on_data(p, st, 5, true));
  EXPECT_EQ(p.set("cnp_interval_ns=4000", &err), 0);
  EXPECT_EQ(p.cnp_interval_ns, 4'000u);
  EXPECT_EQ(p.set("cnp_interval_ns=-1", &err), -EINVAL);
  EXPECT_EQ(err, "np parameter 'cnp_interval_ns' = -1 is out of range [0, 1e+10] ns");
  EXPECT_EQ(p.set("cnp_gap_ns=1", &err), -EINVAL);
  EXPECT_EQ(err, "np has no parameter 'cnp_gap_ns' (known: cnp_interval_ns, ack_echo)");
  ASSERT_EQ(NpParams::describe().size(), 2u);
  EXPECT_EQ(NpParams::describe()[0].unit, "ns");
}

// The HPCC simulator's notification: no CNP, every ACK that echoes a CE mark
// counts as one at the sender.
TEST(NpTest, AckEchoSendsNoCnpAndEachMarkedAckCountsAsOne) {
  NpParams p;
  std::string err;
  ASSERT_EQ(p.set("ack_echo=1", &err), 0) << err;
  NpState st;
  EXPECT_FALSE(np_on_data(p, st, 5, true));
  EXPECT_FALSE(np_on_data(p, st, 100'000, true));
  AckSample s;
  EXPECT_FALSE(np_ack_is_cnp(p, s));
  s.ce_packets = 3;
  EXPECT_TRUE(np_ack_is_cnp(p, s));
  EXPECT_FALSE(np_ack_is_cnp(NpParams{}, s));  // CNP mode: ACKs are not CNPs
  EXPECT_EQ(p.set("ack_echo=2", &err), -EINVAL);
}

TEST(RedTest, ArtifactDefaultsScaleWithLinkRate) {
  const RedParams r25 = red_defaults(25'000'000'000);
  EXPECT_EQ(r25.kmin_bytes, 100'000u);
  EXPECT_EQ(r25.kmax_bytes, 400'000u);
  EXPECT_EQ(r25.pmax, 0.2);
  const RedParams r100 = red_defaults(100'000'000'000);
  EXPECT_EQ(r100.kmin_bytes, 400'000u);
  EXPECT_EQ(r100.kmax_bytes, 1'600'000u);
  const RedParams r400 = red_defaults(400'000'000'000);
  EXPECT_EQ(r400.kmin_bytes, 1'600'000u);
}

TEST(RedTest, ZeroThenLinearThenOne) {
  const RedParams r{100'000, 400'000, 0.2};
  EXPECT_EQ(red_mark_probability(0, r), 0.0);
  EXPECT_EQ(red_mark_probability(100'000, r), 0.0);
  EXPECT_DOUBLE_EQ(red_mark_probability(250'000, r), 0.1);  // 0.2 x 150000/300000
  EXPECT_DOUBLE_EQ(red_mark_probability(400'000, r), 0.2);
  EXPECT_EQ(red_mark_probability(400'001, r), 1.0);
  const RedParams step{1'000, 1'000, 1.0};  // DCTCP-style step
  EXPECT_EQ(red_mark_probability(1'000, step), 0.0);
  EXPECT_EQ(red_mark_probability(1'001, step), 1.0);
}

}  // namespace
}  // namespace tita::cc::test
