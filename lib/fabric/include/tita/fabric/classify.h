// Ingress classification: one bounded walk over a frame's headers that yields
// everything the switch decides on (5-tuple, priority, ECN, TTL, telemetry
// trailer) without modifying the frame.
#pragma once

#include <cstdint>

#include "tita/fabric/types.h"

namespace tita::fabric {

// Priority of a data packet: the 802.1Q PCP of a tagged frame (when trust_pcp),
// otherwise dscp_priority[DSCP]. The default map is the class selector,
// DSCP >> 3 (AF31 = 26 -> 3, CS6 = 48 -> 6).
struct ClassifyConfig {
  bool trust_pcp = true;
  uint8_t dscp_priority[64] = {};
  ClassifyConfig() {
    for (int d = 0; d < 64; ++d) dscp_priority[d] = static_cast<uint8_t>(d >> 3);
  }
};

enum class FrameKind : uint8_t { kIp, kPfc, kMalformed, kUnsupported };

// What the switch does with the telemetry trailer at dequeue.
enum class IntAction : uint8_t {
  kNone,      // no COLLECT trailer (or INT off)
  kPush,      // append one 16-byte hop record
  kOverflow,  // the trailer is full or there is no room: set OVERFLOW instead
};

struct Classified {
  FrameKind kind = FrameKind::kMalformed;
  FlowKey key;
  uint16_t l3_offset = 0;
  uint16_t l4_offset = 0;  // the UDP/TCP header, when key has its ports (0 otherwise)
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  uint8_t ttl = 0;  // TTL or hop limit
  bool vlan = false;
  uint8_t pcp = 0;
  uint8_t priority = 0;
  IntAction int_action = IntAction::kNone;
  uint8_t trailer_hops = 0;      // hop records already in the trailer
  uint16_t trailer_offset = 0;   // the trailer's start in the frame (in-frame trailers)
  uint16_t trailer_len = 0;
};

// Classifies f. With int_enabled, a COLLECT (not ECHO) trailer gets kPush when
// it holds fewer than wire::kMaxTelemetryHops records and trailer_room has 16
// bytes, kOverflow otherwise. Never reads outside f.data[0, data_len) and the
// trailer.
void classify(const FrameRef& f, const ClassifyConfig& cfg, bool int_enabled, Classified* out);

}  // namespace tita::fabric
