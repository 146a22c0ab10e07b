// The vocabulary of the switch data plane shared by the DPDK software switch
// (apps/tita-switch) and the ns-3 switch node: how a host hands a frame to the
// switch, a flow's 5-tuple, and why a packet was dropped.
//
// lib/fabric owns no packet storage and reads no clock. A host passes the bytes
// of each frame (FrameRef) and the time (now_ns); the switch keeps only a small
// descriptor per packet and a host handle beside it (Switch<Handle>, switch.h).
#pragma once

#include <cstdint>
#include <string_view>

namespace tita::fabric {

// 802.1p priorities, one egress queue and one ingress priority group each.
inline constexpr int kPriorities = 8;

// What a host knows about one frame it received. The frame starts with its
// Ethernet header (no FCS).
//
// DPDK: data = rte_pktmbuf_mtod(m), data_len = frame_bytes = pkt_len of a
// one-segment mbuf, trailer = nullptr (it is in the frame, after the IP
// datagram), trailer_room = rte_pktmbuf_tailroom(m).
// ns-3: data = a copy of the header bytes (at least through the UDP header),
// frame_bytes = Packet::GetSize(), trailer/trailer_len = the telemetry trailer
// if the host keeps it apart, trailer_room = what may be appended to it.
struct FrameRef {
  const uint8_t* data = nullptr;
  uint32_t data_len = 0;       // bytes readable at data
  uint32_t frame_bytes = 0;    // the whole frame on the wire
  const uint8_t* trailer = nullptr;
  uint32_t trailer_len = 0;
  uint32_t trailer_room = 0;   // bytes that may be appended after the frame (or the trailer apart)
};

// A flow's 5-tuple. Addresses are GIDs: IPv4 as ::ffff:a.b.c.d.
struct FlowKey {
  uint8_t src[16] = {};
  uint8_t dst[16] = {};
  uint16_t sport = 0;  // UDP/TCP ports (host order); 0 for other protocols
  uint16_t dport = 0;
  uint8_t proto = 0;
  uint8_t ip_version = 0;  // 4 or 6
};

// Why the switch refused a packet. Counted on the egress port once routing has
// chosen one, on the ingress port before that (the first four).
enum class DropReason : uint8_t {
  kMalformed = 0,    // truncated or inconsistent Ethernet/IP headers
  kUnsupported,      // neither IPv4/IPv6 nor a PFC frame (ARP, 802.3x PAUSE, ...)
  kNoRoute,          // no route, or every port of its ECMP group is down
  kTtlExpired,       // TTL / hop limit would reach 0
  kBufferFull,       // the shared buffer has no room
  kEgressThreshold,  // lossy queue above its dynamic threshold (alpha x free shared buffer)
  kPortBuffer,       // lossy traffic above the egress port's buffer limit
  kHeadroomFull,     // lossless: PFC headroom of the ingress (port, priority) exhausted
  kNoDescriptor,     // every packet descriptor is in use
  kFaultRandom,      // fault injection: random loss on the egress port
  kFaultBlackHole,   // fault injection: the black-holed 5-tuple
  kFaultPortDrop,    // fault injection: everything routed to the port (drop_all)
  kCount
};
inline constexpr int kDropReasons = static_cast<int>(DropReason::kCount);
std::string_view to_string(DropReason r);

}  // namespace tita::fabric
