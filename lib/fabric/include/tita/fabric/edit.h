// What the switch does to a packet's bytes as it leaves: decided by the switch
// at dequeue (EgressEdit), carried out by the host with apply_edit(), because
// only the host knows where the bytes are (an mbuf, an ns-3 Packet's headers).
//
// - TTL / hop limit minus one (the receiver counts routers from it);
// - ECN CE marking (RED);
// - a telemetry hop record appended to a COLLECT trailer, or OVERFLOW set;
// - MAC rewrite (source = port, destination = next hop), when configured.
// IPv4 changes update the header checksum incrementally (RFC 1624), so a frame
// that arrived with a bad checksum still has one. TOS, TTL and hop limit are
// masked out of the ICRC, and the trailer lies outside the IP datagram, so the
// ICRC stays valid.
#pragma once

#include <cstdint>

namespace tita::fabric {

struct EgressEdit {
  static constexpr uint8_t kDecTtl = 0x01;
  static constexpr uint8_t kMarkCe = 0x02;
  static constexpr uint8_t kPushHop = 0x04;
  static constexpr uint8_t kOverflow = 0x08;
  static constexpr uint8_t kRewriteMac = 0x10;
  static constexpr uint8_t kIpv6 = 0x20;
  static constexpr uint8_t kCorrupt = 0x40;  // headers[corrupt_offset] ^= corrupt_mask

  uint8_t flags = 0;
  uint16_t l3_offset = 0;
  uint16_t trailer_offset = 0;  // in-frame trailer: its first byte
  uint16_t trailer_len = 0;     // trailer length before the edit
  uint32_t grow_bytes = 0;      // the frame (or the trailer apart) grows by this
  uint32_t frame_bytes = 0;     // frame length after the edit
  // Hop record values (kPushHop), host order.
  uint32_t rate_mbps = 0;
  uint32_t ts_ns = 0;
  uint32_t tx_bytes = 0;
  uint32_t qlen_bytes = 0;
  const uint8_t* src_mac = nullptr;  // kRewriteMac
  const uint8_t* dst_mac = nullptr;
  uint16_t corrupt_offset = 0;  // kCorrupt, from the frame's first byte (in the headers)
  uint8_t corrupt_mask = 0;

  bool any() const { return (flags & ~kIpv6) != 0; }
};

// The frame is contiguous at `frame`, trailer included, with grow_bytes of room
// after it (DPDK: rte_pktmbuf_append first).
void apply_edit(const EgressEdit& e, uint8_t* frame);
// The headers at `headers`, the trailer apart at `trailer` with grow_bytes of
// room after its trailer_len bytes (ns-3).
void apply_edit(const EgressEdit& e, uint8_t* headers, uint8_t* trailer);

// The pieces, for hosts and tests. `l3` points at the IP header.
// Sets CE on an ECN-capable packet; returns false (nothing changed) if it is
// Not-ECT or already CE.
bool mark_ce(uint8_t* l3, bool ipv6);
void decrement_ttl(uint8_t* l3, bool ipv6);

}  // namespace tita::fabric
