// IEEE 802.1Qbb priority flow control frames: the one builder and parser used
// by both switches (and by hosts that honour PFC), and the pause state a port
// that honours them keeps.
//
//   dst 01:80:c2:00:00:01 | src | 0x8808 | opcode 0x0101 | class-enable vector |
//   8 x quanta | zero pad to 60 bytes (the Ethernet minimum, without FCS)
//
// A quantum is 512 bit times at the port's speed; quanta 0 resumes.
#pragma once

#include <cstdint>

namespace tita::fabric {

inline constexpr uint32_t kPfcFrameBytes = 60;

struct PfcInfo {
  uint8_t class_enable = 0;  // bit p: quanta[p] applies
  uint16_t quanta[8] = {};
};

// Writes a PFC frame into buf; returns kPfcFrameBytes, or 0 when cap is smaller.
uint32_t build_pfc_frame(uint8_t* buf, uint32_t cap, const uint8_t src_mac[6], const PfcInfo& info);

// True if frame is a PFC frame (destination, ethertype and opcode as above, at
// least 34 bytes); fills *out.
bool parse_pfc_frame(const uint8_t* frame, uint32_t len, PfcInfo* out);

// How long `quanta` pause a port of rate_bps, in ns (rounded up).
uint64_t pfc_quanta_ns(uint16_t quanta, uint64_t rate_bps);

// What a port that honours PFC keeps: until when the peer pauses each priority
// of its egress. The NICs (the DPDK host, the ns-3 device) and the switch ports
// keep it alike. Times are ticks of the host's clock (ns for DPDK and the
// switch, simulator time steps in ns-3), all in one unit.
class PauseState {
 public:
  static constexpr int kPriorities = 8;

  // Applies a received frame at `now` to a port of rate_bps whose clock ticks
  // ticks_per_ns times a nanosecond: for each priority the frame enables,
  // quanta 0 resumes it, other quanta pause it for pfc_quanta_ns() ticks
  // from now. Then f(priority, pause, pause_ticks) for that priority, in
  // priority order (pause_ticks 0 when resumed).
  template <class F>
  void apply(const PfcInfo& info, uint64_t now, uint64_t rate_bps, uint64_t ticks_per_ns, F&& f) {
    for (uint8_t p = 0; p < kPriorities; ++p) {
      if (!((info.class_enable >> p) & 1)) continue;
      const bool pause = info.quanta[p] != 0;
      const uint64_t ticks = pause ? pfc_quanta_ns(info.quanta[p], rate_bps) * ticks_per_ns : 0;
      until_[p] = pause ? now + ticks : 0;
      maybe_ = static_cast<uint8_t>(pause ? maybe_ | 1u << p : maybe_ & ~(1u << p));
      f(p, pause, ticks);
    }
  }

  bool paused(uint8_t prio, uint64_t now) const { return until_[prio] > now; }
  uint64_t paused_until(uint8_t prio) const { return until_[prio]; }

  // `mask` without the priorities paused at now; forgets pauses that ended.
  uint8_t unpaused(uint8_t mask, uint64_t now) {
    for (unsigned check = mask & maybe_; check != 0; check &= check - 1) {
      const unsigned p = static_cast<unsigned>(__builtin_ctz(check));
      if (until_[p] > now) {
        mask = static_cast<uint8_t>(mask & ~(1u << p));
      } else {
        maybe_ = static_cast<uint8_t>(maybe_ & ~(1u << p));  // expired
      }
    }
    return mask;
  }
  // Whether any priority is paused at now (one test when none was).
  bool any_paused(uint64_t now) { return maybe_ != 0 && unpaused(0xff, now) != 0xff; }

 private:
  uint64_t until_[kPriorities] = {};
  uint8_t maybe_ = 0;  // bit p: until_[p] may lie ahead (cleared lazily)
};

}  // namespace tita::fabric
