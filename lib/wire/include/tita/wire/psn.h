// 24-bit packet sequence numbers. They wrap; order is decided in half space, so
// a is "after" b when a - b, taken modulo 2^24, is in (0, 2^23).
#pragma once

#include <cstdint>

namespace tita::wire {

inline constexpr uint32_t kPsnMask = 0x00ffffff;

constexpr uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }

// Signed distance from b to a in half space: positive when a is after b.
constexpr int32_t psn_diff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>((a - b) << 8) >> 8;
}

constexpr bool psn_after(uint32_t a, uint32_t b) { return psn_diff(a, b) > 0; }
constexpr bool psn_before(uint32_t a, uint32_t b) { return psn_diff(a, b) < 0; }

// Packets from b up to, not including, a (a must not be before b).
constexpr uint32_t psn_distance(uint32_t a, uint32_t b) { return (a - b) & kPsnMask; }

static_assert(psn_add(kPsnMask, 1) == 0);
static_assert(psn_after(0, kPsnMask) && psn_before(kPsnMask, 0));
static_assert(psn_diff(5, 3) == 2 && psn_diff(3, 5) == -2);
static_assert(psn_diff(0x7fffff, 0) == 0x7fffff && psn_diff(0x800000, 0) == -0x800000);
static_assert(psn_distance(2, kPsnMask) == 3);

}  // namespace tita::wire
