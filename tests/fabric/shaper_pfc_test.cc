// The shaper's departures against the line rate, and PFC frames.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>
#include <vector>

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

// The pause state every PFC-honouring port keeps (NICs and switch ports).
TEST(PauseState, PausesForTheQuantaResumesOnZeroAndForgetsExpiredPauses) {
  PauseState st;
  EXPECT_FALSE(st.any_paused(0));
  PfcInfo info;
  info.class_enable = 1u << 3 | 1u << 5;
  info.quanta[3] = 0xffff;
  info.quanta[5] = 0;
  std::vector<std::tuple<int, bool, uint64_t>> seen;
  // 0xffff quanta at 100 Gb/s: 335,540 ns (rounded up); in picosecond ticks x 1000.
  st.apply(info, 1'000, 100'000'000'000, 1'000, [&](uint8_t p, bool pause, uint64_t ticks) {
    seen.emplace_back(p, pause, ticks);
  });
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], std::make_tuple(3, true, uint64_t{335'540'000}));
  EXPECT_EQ(seen[1], std::make_tuple(5, false, uint64_t{0}));
  EXPECT_TRUE(st.paused(3, 1'000));
  EXPECT_TRUE(st.paused(3, 335'540'999));
  EXPECT_FALSE(st.paused(3, 335'541'000));
  EXPECT_FALSE(st.paused(5, 1'000));
  EXPECT_EQ(st.paused_until(3), 335'541'000u);
  EXPECT_EQ(st.unpaused(0xff, 2'000), 0xff & ~(1u << 3));
  EXPECT_EQ(st.unpaused(1u << 4, 2'000), 1u << 4);
  EXPECT_TRUE(st.any_paused(335'540'999));
  EXPECT_FALSE(st.any_paused(335'541'000));  // expired: forgotten
  EXPECT_EQ(st.unpaused(0xff, 0), 0xff);     // ...even for an earlier time
  // XOFF then XON: resumed at once.
  info.class_enable = 1u << 3;
  st.apply(info, 10, 25'000'000'000, 1, [](uint8_t, bool, uint64_t) {});
  EXPECT_TRUE(st.paused(3, 11));
  info.quanta[3] = 0;
  st.apply(info, 20, 25'000'000'000, 1, [](uint8_t, bool, uint64_t) {});
  EXPECT_FALSE(st.paused(3, 21));
  EXPECT_FALSE(st.any_paused(21));
}

}  // namespace
}  // namespace tita::fabric
