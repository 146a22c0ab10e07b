// The shaper's departures against the line rate, and PFC frames.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tita/fabric/pfc.h"
#include "tita/fabric/shaper.h"
#include "tita/wire/headers.h"

namespace tita::fabric {
namespace {

// A backlogged queue polled at irregular times (never later than the bucket
// allows): frame k starts at exactly floor(k * bits / rate) and by any poll time
// t exactly floor(t / frame time) + 1 frames have started.
TEST(Shaper, BackloggedDeparturesMatchTheLineRateExactly) {
  Shaper s;
  s.init(10'000'000'000, 4000, 0);  // 10 Gb/s, 1000-byte frames: 800 ns each; bucket 3.2 us
  std::mt19937_64 rng(5);
  uint64_t now = 0;
  uint64_t k = 0;
  for (int poll = 0; poll < 5000; ++poll) {
    while (s.ready(now)) {
      ASSERT_EQ(s.depart(now, 1000), k * 800) << "frame " << k;
      ++k;
    }
    ASSERT_EQ(k, now / 800 + 1) << "at " << now;
    now += rng() % 3000;
  }
}

TEST(Shaper, FractionalFrameTimesCarryTheRemainder) {
  // 3 Gb/s, 1000 bytes: 2666.67 ns per frame; start k = floor(k * 8000 / 3) ns.
  Shaper s;
  s.init(3'000'000'000, 10'000, 0);
  uint64_t now = 0;
  for (uint64_t k = 0; k < 100'000; ++k) {
    while (!s.ready(now)) now += 1000;
    ASSERT_EQ(s.depart(now, 1000), k * 8000 / 3) << k;
  }
  // Wire overhead: 25 Gb/s, 1000 + 24 bytes = 327.68 ns.
  Shaper o;
  o.init(25'000'000'000, 10'000, 24);
  EXPECT_EQ(o.wire_ps(1000), 327'680u);
  now = 0;
  for (uint64_t k = 0; k < 1000; ++k) {
    while (!o.ready(now)) now += 100;
    ASSERT_EQ(o.depart(now, 1000), k * 32768 / 100) << k;
  }
}

TEST(Shaper, IdleRefillsTheBucketOnly) {
  // After a long idle period a burst of at most the bucket leaves at once
  // (starts dated back up to one bucket time), then the rate holds again.
  Shaper s;
  s.init(10'000'000'000, 4000, 0);  // bucket 3200 ns = 4 frames
  const uint64_t t = 1'000'000;
  int burst = 0;
  uint64_t first = 0;
  while (s.ready(t)) {
    const uint64_t start = s.depart(t, 1000);
    if (burst == 0) first = start;
    ++burst;
  }
  EXPECT_EQ(first, t - 3200);
  EXPECT_EQ(burst, 5);  // starts at t-3200, -2400, -1600, -800, t
  EXPECT_EQ(s.free_ns(), t + 800);
}

TEST(Shaper, UnlimitedStartsNow) {
  Shaper s;
  s.init(0, 0, 0);
  EXPECT_TRUE(s.ready(5));
  EXPECT_EQ(s.depart(5, 9000), 5u);
  EXPECT_TRUE(s.ready(5));
}

TEST(Pfc, BuildParseRoundTrip) {
  const uint8_t mac[6] = {2, 0, 0, 0, 0, 9};
  PfcInfo in;
  in.class_enable = 0x88;
  in.quanta[3] = 0xffff;
  in.quanta[7] = 0;
  uint8_t buf[64];
  EXPECT_EQ(build_pfc_frame(buf, 59, mac, in), 0u);
  ASSERT_EQ(build_pfc_frame(buf, sizeof buf, mac, in), kPfcFrameBytes);
  // Wire layout: 01:80:c2:00:00:01, source, 0x8808, opcode 0x0101, vector, quanta.
  const uint8_t head[] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01, 2, 0, 0, 0, 0, 9, 0x88, 0x08, 0x01, 0x01, 0x00, 0x88};
  EXPECT_EQ(std::memcmp(buf, head, sizeof head), 0);
  EXPECT_EQ(buf[18 + 6], 0xff);
  EXPECT_EQ(buf[18 + 7], 0xff);
  PfcInfo out;
  ASSERT_TRUE(parse_pfc_frame(buf, kPfcFrameBytes, &out));
  EXPECT_EQ(out.class_enable, 0x88);
  EXPECT_EQ(out.quanta[3], 0xffff);
  EXPECT_EQ(out.quanta[7], 0);
  EXPECT_FALSE(parse_pfc_frame(buf, 33, &out));
  buf[14] = 0x00;  // opcode 0x0001: an 802.3x PAUSE, not PFC
  buf[15] = 0x01;
  EXPECT_FALSE(parse_pfc_frame(buf, kPfcFrameBytes, &out));
}

TEST(Pfc, QuantaAreFiveHundredTwelveBitTimes) {
  EXPECT_EQ(pfc_quanta_ns(0xffff, 100'000'000'000), 335'540u);  // 65535 * 512 / 100e9 = 335.5392 us
  EXPECT_EQ(pfc_quanta_ns(1, 10'000'000'000), 52u);             // 51.2 ns, rounded up
  EXPECT_EQ(pfc_quanta_ns(0, 10'000'000'000), 0u);
}

}  // namespace
}  // namespace tita::fabric
