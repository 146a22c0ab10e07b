// RED/ECN marking: the curve, the HPCC artifact's defaults, and how a
// configuration resolves at a port (defaults, base-rate scaling).
#include "tita/fabric/red.h"

#include <gtest/gtest.h>

namespace tita::fabric {
namespace {

TEST(Red, ArtifactDefaultsScaleWithPortRate) {
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

TEST(Red, ZeroThenLinearThenOne) {
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

TEST(Red, UnsetFieldsTakeTheDefaultsAtThePortRate) {
  const RedParams all = RedConfig{}.resolve(25'000'000'000);
  EXPECT_EQ(all.kmin_bytes, 100'000u);
  EXPECT_EQ(all.kmax_bytes, 400'000u);
  EXPECT_EQ(all.pmax, 0.2);
  RedConfig c;
  c.kmin_bytes = 0;  // set: marking from an empty queue, not the default
  c.pmax = 0.5;
  const RedParams r = c.resolve(10'000'000'000);
  EXPECT_EQ(r.kmin_bytes, 0u);
  EXPECT_EQ(r.kmax_bytes, 160'000u);  // the default at 10 Gb/s
  EXPECT_EQ(r.pmax, 0.5);
}

TEST(Red, ThresholdsAreBytesAtThePortUnlessABaseRateIsGiven) {
  RedConfig c;
  c.kmin_bytes = 40'000;
  c.kmax_bytes = 160'000;
  EXPECT_EQ(c.resolve(25'000'000'000).kmin_bytes, 40'000u);
  EXPECT_EQ(c.resolve(400'000'000'000).kmax_bytes, 160'000u);
  c.base_rate_bps = 100'000'000'000;  // the HPCC artifact's "per 100 Gb/s"
  EXPECT_EQ(c.resolve(25'000'000'000).kmin_bytes, 10'000u);
  EXPECT_EQ(c.resolve(25'000'000'000).kmax_bytes, 40'000u);
  EXPECT_EQ(c.resolve(400'000'000'000).kmax_bytes, 640'000u);
  EXPECT_EQ(c.resolve(100'000'000'000).kmin_bytes, 40'000u);
  // Unset thresholds are the defaults at the port, whatever the base rate.
  c.kmin_bytes.reset();
  EXPECT_EQ(c.resolve(25'000'000'000).kmin_bytes, 100'000u);
}

}  // namespace
}  // namespace tita::fabric
