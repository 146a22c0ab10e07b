// The engine's timing wheel against a plain reference (a map of deadlines): every
// id fires at the first advance at or after its deadline, never before, whatever
// the steps of the clock, including jumps of many horizons (a host that slept or
// was descheduled) over deadlines that waited in the overflow heap.
#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "tita/engine/timing_wheel.h"

namespace tita::engine {
namespace {

constexpr uint32_t kSlots = 64;
constexpr uint64_t kSlotNs = 10;
constexpr uint64_t kHorizonNs = kSlots * kSlotNs;

std::vector<uint32_t> advance(TimingWheel& w, uint64_t now) {
  std::vector<uint32_t> fired;
  w.advance(now, [&](uint32_t id) { fired.push_back(id); });
  return fired;
}

TEST(TimingWheel, FiresWithinTheHorizonExactly) {
  TimingWheel w(4, kSlots, kSlotNs);
  w.schedule(1, 125);
  EXPECT_TRUE(advance(w, 124).empty());
  EXPECT_EQ(w.next_expiry_ns(), 125u);
  EXPECT_EQ(advance(w, 125), std::vector<uint32_t>{1});
  EXPECT_FALSE(w.scheduled(1));
  EXPECT_EQ(w.next_expiry_ns(), TimingWheel::kNever);
}

TEST(TimingWheel, OverflowDeadlineFiresWhenTheClockJumpsPastIt) {
  // Scheduled beyond the horizon (overflow heap), then one advance lands several
  // horizons after it: the deadline is due and must fire now, not be lost.
  TimingWheel w(4, kSlots, kSlotNs);
  w.schedule(2, 3 * kHorizonNs);
  w.schedule(3, 3 * kHorizonNs + 7 * kSlotNs);
  EXPECT_TRUE(advance(w, 10).empty());
  std::vector<uint32_t> fired = advance(w, 10 * kHorizonNs);
  std::sort(fired.begin(), fired.end());
  EXPECT_EQ(fired, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(w.next_expiry_ns(), TimingWheel::kNever);
  // And the ids can be used again after it.
  w.schedule(2, 10 * kHorizonNs + 5);
  EXPECT_EQ(advance(w, 10 * kHorizonNs + 5), std::vector<uint32_t>{2});
}

TEST(TimingWheel, IdsAddedLaterFireAsIdsMadeAtTheStart) {
  // No ids, no slots: an idle wheel answers and allocates nothing.
  TimingWheel w(0, kSlots, kSlotNs);
  EXPECT_EQ(w.next_expiry_ns(), TimingWheel::kNever);
  EXPECT_TRUE(advance(w, 10 * kSlotNs).empty());
  w.add_ids(1);
  w.schedule(0, 20 * kSlotNs);                  // in the wheel
  w.add_ids(3);                                  // grows under a scheduled id
  w.schedule(2, 20 * kSlotNs + kSlots * kSlotNs);  // beyond the horizon: overflow
  w.add_ids(100);
  w.schedule(99, 15 * kSlotNs);
  EXPECT_EQ(w.next_expiry_ns(), 15 * kSlotNs);
  EXPECT_EQ(advance(w, 15 * kSlotNs), std::vector<uint32_t>{99});
  EXPECT_EQ(advance(w, 20 * kSlotNs), std::vector<uint32_t>{0});
  EXPECT_EQ(w.next_expiry_ns(), 20 * kSlotNs + kSlots * kSlotNs);
  EXPECT_EQ(advance(w, 20 * kSlotNs + kSlots * kSlotNs), std::vector<uint32_t>{2});
  EXPECT_EQ(w.next_expiry_ns(), TimingWheel::kNever);
}

// Wheels of one word of slots, of 64 words and of 128 (two words of the
// summary bitmap that finds the next occupied word): the same reference.
class TimingWheelSizes : public testing::TestWithParam<uint32_t> {};

TEST_P(TimingWheelSizes, MatchesAReferenceUnderRandomScheduleCancelAndClockSteps) {
  constexpr uint32_t kIds = 32;
  const uint32_t slots = GetParam();
  const uint64_t kHorizonNs = slots * kSlotNs;
  TimingWheel w(kIds, slots, kSlotNs);
  std::map<uint32_t, uint64_t> ref;  // id -> deadline
  std::mt19937_64 rng(7);
  uint64_t now = 0;
  uint64_t fired_total = 0;
  for (int step = 0; step < 200'000; ++step) {
    const uint32_t id = static_cast<uint32_t>(rng() % kIds);
    switch (rng() % 4) {
      case 0:
      case 1: {
        // Near, far (overflow) and already-passed deadlines.
        const uint64_t spread = (rng() % 3 == 0) ? 5 * kHorizonNs : kHorizonNs;
        const uint64_t d = now + rng() % spread;
        w.schedule(id, d);
        ref[id] = std::max(d, now);
        break;
      }
      case 2:
        w.cancel(id);
        ref.erase(id);
        break;
      default: {
        // Small steps mostly; sometimes a jump of up to eight horizons.
        now += (rng() % 16 == 0) ? rng() % (8 * kHorizonNs) : rng() % (2 * kSlotNs);
        std::set<uint32_t> expect;
        for (auto it = ref.begin(); it != ref.end();) {
          if (it->second <= now) {
            expect.insert(it->first);
            it = ref.erase(it);
          } else {
            ++it;
          }
        }
        const std::vector<uint32_t> got = advance(w, now);
        ASSERT_EQ(std::set<uint32_t>(got.begin(), got.end()), expect) << "step " << step << " now " << now;
        ASSERT_EQ(got.size(), expect.size()) << "an id fired twice";
        fired_total += got.size();
        uint64_t earliest = TimingWheel::kNever;
        for (const auto& [i, d] : ref) earliest = std::min(earliest, d);
        ASSERT_EQ(w.next_expiry_ns(), earliest) << "step " << step;
      }
    }
  }
  EXPECT_GT(fired_total, 10'000u);
}

INSTANTIATE_TEST_SUITE_P(Slots, TimingWheelSizes, testing::Values(64u, 4096u, 8192u));

}  // namespace
}  // namespace tita::engine
