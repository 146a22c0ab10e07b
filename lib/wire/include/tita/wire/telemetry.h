// tita's telemetry trailer: in-band network telemetry (INT) that leaves RoCEv2
// packets exactly as standard parsers expect them.
//
// The trailer sits after the IP datagram, in the bytes Ethernet carries beyond the
// IP total length. IP, UDP, BTH, payload and ICRC are untouched, so Wireshark,
// scapy, Linux (which trims to the IP length) and the ICRC all see a plain RoCEv2
// packet, and switches may append to it without recomputing anything.
//
//   data packet, sender  -> [hdr: COLLECT, ts = sender clock]
//   each switch, dequeue -> appends one 16-byte hop record, hop count + 1
//   ACK, receiver        -> [hdr: ECHO, ts and hops copied from the data packet,
//                            ce_packets = CE-marked packets this ACK covers,
//                            path_hops = routers it crossed; SACK on NAKs]
//
// Switches push only onto COLLECT trailers; ECHO trailers pass through unchanged.
// A full trailer (kMaxTelemetryHops) gets OVERFLOW set instead of another record.
// Bytes after the datagram that are not a well-formed trailer (Ethernet padding)
// are ignored. doc/protocol.md has the full description.
#pragma once

#include <cstdint>

#include "tita/wire/endian.h"

namespace tita::wire {

inline constexpr uint8_t kTelemetryMagic = 0x54;  // 'T'
inline constexpr int kMaxTelemetryHops = 5;

struct TelemetryHdr {
  static constexpr uint8_t kEcho = 0x80;
  static constexpr uint8_t kCollect = 0x40;
  static constexpr uint8_t kOverflow = 0x20;
  static constexpr uint8_t kSack = 0x10;
  static constexpr uint8_t kHopMask = 0x0f;

  uint8_t magic;
  uint8_t flags_hops;  // ECHO, COLLECT, OVERFLOW, SACK, 4-bit hop record count
  uint8_t ce_packets;  // ECHO: CE-marked data packets covered by this ACK (saturating)
  uint8_t path_hops;   // ECHO: routers the echoed data packet crossed (from its TTL); 0 = unknown
  be32 ts_ns;          // COLLECT: sender clock at transmit; ECHO: that value, echoed

  uint8_t hops() const { return flags_hops & kHopMask; }
  bool echo() const { return flags_hops & kEcho; }
  bool collect() const { return flags_hops & kCollect; }
  bool overflow() const { return flags_hops & kOverflow; }
  bool has_sack() const { return flags_hops & kSack; }
};
static_assert(sizeof(TelemetryHdr) == 8 && alignof(TelemetryHdr) == 1);

// ECHO on a selective-repeat NAK: the out-of-order PSN whose arrival triggered it.
struct TelemetrySack {
  be32 psn;  // low 24 bits
};
static_assert(sizeof(TelemetrySack) == 4 && alignof(TelemetrySack) == 1);

// One switch egress port, recorded at dequeue. Counters wrap at 2^32.
struct TelemetryHop {
  be32 rate_mbps;   // egress line rate
  be32 ts_ns;       // switch clock at dequeue
  be32 tx_bytes;    // bytes transmitted by the port including this packet
  be32 qlen_bytes;  // egress queue length when this packet left
};
static_assert(sizeof(TelemetryHop) == 16 && alignof(TelemetryHop) == 1);

constexpr uint32_t telemetry_bytes(int hops, bool sack = false) {
  return static_cast<uint32_t>(sizeof(TelemetryHdr) + (sack ? sizeof(TelemetrySack) : 0) +
                               hops * sizeof(TelemetryHop));
}
inline constexpr uint32_t kMaxTelemetryBytes = telemetry_bytes(kMaxTelemetryHops, true);

// Whether `len` bytes at `p` (everything after the IP datagram) are a trailer.
inline const TelemetryHdr* telemetry_at(const uint8_t* p, uint32_t len) {
  if (len < sizeof(TelemetryHdr) || p[0] != kTelemetryMagic) return nullptr;
  const auto* h = reinterpret_cast<const TelemetryHdr*>(p);
  if (h->hops() > kMaxTelemetryHops || telemetry_bytes(h->hops(), h->has_sack()) != len) return nullptr;
  return h;
}

inline const TelemetrySack* telemetry_sack(const TelemetryHdr* h) {
  return h->has_sack() ? reinterpret_cast<const TelemetrySack*>(h + 1) : nullptr;
}

inline const TelemetryHop* telemetry_hops(const TelemetryHdr* h) {
  return reinterpret_cast<const TelemetryHop*>(reinterpret_cast<const uint8_t*>(h + 1) +
                                               (h->has_sack() ? sizeof(TelemetrySack) : 0));
}

// Writes a trailer header at p with no hop records; returns its length.
inline uint32_t telemetry_write(uint8_t* p, uint8_t flags, uint32_t ts_ns, uint8_t ce_packets = 0,
                                uint8_t path_hops = 0) {
  auto* h = reinterpret_cast<TelemetryHdr*>(p);
  h->magic = kTelemetryMagic;
  h->flags_hops = static_cast<uint8_t>(flags & ~(TelemetryHdr::kHopMask | TelemetryHdr::kSack));
  h->ce_packets = ce_packets;
  h->path_hops = path_hops;
  h->ts_ns.set(ts_ns);
  return sizeof(TelemetryHdr);
}

}  // namespace tita::wire
