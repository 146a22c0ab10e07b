#include <cstring>

#include "tita/fabric/switch.h"

namespace tita::fabric {

std::string_view to_string(DropReason r) {
  switch (r) {
    case DropReason::kMalformed: return "malformed";
    case DropReason::kUnsupported: return "unsupported";
    case DropReason::kNoRoute: return "no_route";
    case DropReason::kTtlExpired: return "ttl_expired";
    case DropReason::kBufferFull: return "buffer_full";
    case DropReason::kEgressThreshold: return "egress_threshold";
    case DropReason::kPortBuffer: return "port_buffer";
    case DropReason::kHeadroomFull: return "headroom_full";
    case DropReason::kNoDescriptor: return "no_descriptor";
    case DropReason::kFaultRandom: return "fault_random";
    case DropReason::kFaultBlackHole: return "fault_black_hole";
    case DropReason::kFaultPortDrop: return "fault_port_drop";
    case DropReason::kCount: break;
  }
  return "invalid";
}

bool FlowMatch::matches(const FlowKey& k) const {
  if ((fields & kSrc) && std::memcmp(k.src, key.src, 16) != 0) return false;
  if ((fields & kDst) && std::memcmp(k.dst, key.dst, 16) != 0) return false;
  if ((fields & kSport) && k.sport != key.sport) return false;
  if ((fields & kDport) && k.dport != key.dport) return false;
  if ((fields & kProto) && k.proto != key.proto) return false;
  return true;
}

uint64_t PortCounters::dropped() const {
  uint64_t n = 0;
  for (uint64_t d : drops) n += d;
  return n;
}

uint64_t PortCounters::pfc_pause_sent_total() const {
  uint64_t n = 0;
  for (uint64_t d : pfc_pause_sent) n += d;
  return n;
}

uint64_t PortCounters::pfc_pause_received_total() const {
  uint64_t n = 0;
  for (uint64_t d : pfc_pause_received) n += d;
  return n;
}

}  // namespace tita::fabric
