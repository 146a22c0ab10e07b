// IEEE 802.1Qbb priority flow control frames: the one builder and parser used
// by both switches (and by hosts that honour PFC).
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

}  // namespace tita::fabric
