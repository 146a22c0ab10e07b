// The internal loop: frames to this engine's own GID never reach the host;
// they are copied whole onto a ring and delivered as received frames, as
// every RDMA NIC loops back internally.
#include <algorithm>
#include <cstring>
#include <vector>

#include "engine_impl.h"

namespace tita::engine {

bool Engine::Impl::loop_push(const uint8_t* hdr, uint32_t hdr_len, const wire::Segment* payload, uint32_t n_payload,
                             const uint8_t* tail, uint32_t tail_len) {
  if (loop.empty()) loop.resize(std::max<uint32_t>(cfg.loopback_slots, 16));
  if (loop_count == loop.size()) return false;
  LoopFrame& f = loop[(loop_head + loop_count) % loop.size()];
  uint32_t len = hdr_len + tail_len;
  for (uint32_t i = 0; i < n_payload; ++i) len += payload[i].len;
  if (f.data.size() < len) f.data.resize(std::max<uint32_t>(len, 4096 + 512));
  std::memcpy(f.data.data(), hdr, hdr_len);
  uint8_t* p = wire::gather_segments({payload, n_payload}, f.data.data() + hdr_len);
  if (tail_len > 0) std::memcpy(p, tail, tail_len);
  f.len = len;
  ++loop_count;
  ++counters.loopback_frames;
  return true;
}

void Engine::Impl::loop_deliver() {
  // Each delivery may put answers on the loop; a bound keeps one call finite.
  for (uint32_t budget = 4 * static_cast<uint32_t>(loop.size()); loop_count > 0 && budget > 0; --budget) {
    LoopFrame& f = loop[loop_head];
    loop_head = (loop_head + 1) % static_cast<uint32_t>(loop.size());
    --loop_count;
    // The slot is free now but its bytes stay until the ring wraps around to it;
    // receive_frame may push new frames, never more than the ring holds.
    std::vector<uint8_t> frame;
    frame.swap(f.data);
    receive_frame(frame.data(), f.len);
    if (f.data.empty()) f.data.swap(frame);
    flush_control();
  }
}

}  // namespace tita::engine
