#include "tita/fabric/shaper.h"

#include <algorithm>

namespace tita::fabric {

namespace {
constexpr uint64_t kPsPerSecond = 1'000'000'000'000ull;
}

void Shaper::init(uint64_t rate_bps, uint32_t burst_bytes, uint32_t overhead_bytes) {
  rate_bps_ = rate_bps;
  overhead_bytes_ = overhead_bytes;
  // At least 1 ns: hosts poll in whole ns, after a free time kept in ps.
  burst_ps_ = rate_bps == 0 ? 0 : std::max<uint64_t>(uint64_t{burst_bytes} * 8 * kPsPerSecond / rate_bps, 1000);
  free_ps_ = 0;
  rem_ = 0;
}

uint64_t Shaper::wire_ps(uint32_t frame_bytes) const {
  return rate_bps_ == 0 ? 0 : uint64_t{frame_bytes + overhead_bytes_} * 8 * kPsPerSecond / rate_bps_;
}

uint64_t Shaper::depart(uint64_t now_ns, uint32_t frame_bytes) {
  if (rate_bps_ == 0) return now_ns;
  const uint64_t now_ps = now_ns * 1000;
  uint64_t start = free_ps_;
  if (now_ps > burst_ps_ && start < now_ps - burst_ps_) {
    start = now_ps - burst_ps_;  // idle longer than the bucket: the bucket is full, no more
    rem_ = 0;
  }
  // Frames are far below 2^21 bytes, so bits * 1e12 fits in 64 bits.
  const uint64_t scaled = uint64_t{frame_bytes + overhead_bytes_} * 8 * kPsPerSecond + rem_;
  free_ps_ = start + scaled / rate_bps_;
  rem_ = scaled % rate_bps_;
  return start / 1000;
}

}  // namespace tita::fabric
