// Per-port token-bucket shaper: an emulated link of rate_bps on a faster (or
// virtual) port. The link is free again at F; a frame may start when F <= now
// and starts at s = max(F, now - burst), so while the queue is backlogged and
// the host polls at least once per burst time, frames start exactly back to
// back: s(k+1) = s(k) + (bytes(k) + overhead) * 8 / rate. The bucket is at
// least 1 ns deep, so polling at the whole ns after F loses nothing. Time is kept in
// picoseconds with the division remainder carried, so departures never drift.
#pragma once

#include <cstdint>

namespace tita::fabric {

class Shaper {
 public:
  // rate_bps 0: unlimited (every frame starts at now).
  void init(uint64_t rate_bps, uint32_t burst_bytes, uint32_t overhead_bytes);

  bool ready(uint64_t now_ns) const { return rate_bps_ == 0 || free_ps_ <= now_ns * 1000; }
  // Charges one frame that starts now (ready(now) must hold); returns its start
  // time in ns, which may be up to one burst time before now.
  uint64_t depart(uint64_t now_ns, uint32_t frame_bytes);
  // When the link is free for the next frame (ns, rounded up).
  uint64_t free_ns() const { return (free_ps_ + 999) / 1000; }
  // Time on the wire of a frame, in ps (without carrying a remainder).
  uint64_t wire_ps(uint32_t frame_bytes) const;
  uint64_t rate_bps() const { return rate_bps_; }

 private:
  uint64_t rate_bps_ = 0;
  uint64_t burst_ps_ = 0;
  uint32_t overhead_bytes_ = 0;
  uint64_t free_ps_ = 0;
  uint64_t rem_ = 0;  // remainder of bits*1e12 / rate, carried between frames
};

}  // namespace tita::fabric
