// Receiver-side CNP pacing (the notification point).
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

}  // namespace
}  // namespace tita::cc::test
