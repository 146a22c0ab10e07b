// The out-of-order pool: frames a selective-repeat responder keeps until the
// PSNs before them arrive, in slots of arenas the pool grows by when a QP
// reaches RTR (never on the data path), shared by the engine's QPs.
#include <algorithm>

#include "engine_impl.h"

namespace tita::engine {

void Engine::Impl::ooo_reserve(Qp& qp) {
  if (qp.resp.ooo_share) return;
  qp.resp.ooo_share = true;
  ooo_wanted += cfg.sr_window;
  if (ooo_slot_bytes == 0) {
    // A frame of the largest path MTU with every header, extension and trailer.
    ooo_slot_bytes = cfg.max_frame_bytes != 0 ? cfg.max_frame_bytes
                                              : wire::HeaderTemplate::kMaxFixedBytes + 32 + 4096 + 8 +
                                                    wire::kMaxTelemetryBytes;
  }
  const uint64_t want = std::min<uint64_t>(ooo_wanted, cfg.ooo_slots);
  if (ooo.size() >= want) return;
  const size_t add = want - ooo.size();
  uint8_t* arena = ooo_arenas.emplace_back(new uint8_t[add * ooo_slot_bytes]).get();
  for (size_t i = 0; i < add; ++i) {
    OooSlot& s = ooo.emplace_back();
    s.frame = arena + i * ooo_slot_bytes;
    s.next = ooo_free;
    ooo_free = static_cast<uint32_t>(ooo.size() - 1);
  }
}

uint32_t Engine::Impl::ooo_alloc() {
  if (ooo_free == kNil) return kNil;
  const uint32_t s = ooo_free;
  ooo_free = ooo[s].next;
  return s;
}

void Engine::Impl::ooo_release(uint32_t slot) {
  ooo[slot].next = ooo_free;
  ooo_free = slot;
}

void Engine::Impl::drop_ooo(Qp& qp) {
  for (uint32_t s = qp.resp.ooo_head; s != kNil;) {
    const uint32_t next = ooo[s].next;
    ooo_release(s);
    s = next;
  }
  qp.resp.ooo_head = kNil;
  qp.resp.ooo_count = 0;
  if (qp.resp.ooo_share) ooo_wanted -= cfg.sr_window;  // the slots stay in the pool, free
  qp.resp.ooo_share = false;
}

}  // namespace tita::engine
