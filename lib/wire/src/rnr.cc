#include "tita/wire/headers.h"

namespace tita::wire::aeth {
namespace {
// RNR NAK timer codes (IBA 9.7.5.2.8), in microseconds; code 0 is the longest.
constexpr uint32_t kRnrTimerUs[32] = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
}  // namespace

uint64_t rnr_timer_ns(uint8_t timer_code) { return uint64_t{kRnrTimerUs[timer_code & kValueMask]} * 1000; }

uint8_t rnr_timer_code(uint64_t delay_ns) {
  for (uint8_t code = 1; code < 32; ++code) {
    if (rnr_timer_ns(code) >= delay_ns) return code;
  }
  return 0;  // longer than 491.52 ms: the 655.36 ms code
}
}  // namespace tita::wire::aeth
