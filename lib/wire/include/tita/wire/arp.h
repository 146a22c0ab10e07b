// ARP for IPv4 over Ethernet (RFC 826): how a RoCE endpoint learns the MAC of the
// peer a GID names. Frames are built whole (padded to the 60-byte minimum) and
// parsed with the same bounds discipline as parse().
#pragma once

#include <cstdint>

#include "tita/wire/headers.h"

namespace tita::wire {

inline constexpr uint16_t kEtherTypeArp = 0x0806;

struct ArpIpv4 {
  be16 htype;  // 1: Ethernet
  be16 ptype;  // 0x0800: IPv4
  uint8_t hlen;
  uint8_t plen;
  be16 oper;   // kArpRequest or kArpReply
  uint8_t sha[6];
  be32 spa;
  uint8_t tha[6];
  be32 tpa;
};
static_assert(sizeof(ArpIpv4) == 28 && alignof(ArpIpv4) == 1);

inline constexpr uint16_t kArpRequest = 1;
inline constexpr uint16_t kArpReply = 2;
inline constexpr uint32_t kArpFrameBytes = 60;  // Ethernet minimum, without FCS

struct ArpInfo {
  uint16_t oper = 0;
  uint8_t eth_dst[6] = {};
  uint8_t sha[6] = {};
  uint32_t spa = 0;  // host order
  uint8_t tha[6] = {};
  uint32_t tpa = 0;
};

// Writes an ARP frame of kArpFrameBytes at buf: Ethernet to eth_dst (broadcast
// for a request) from sha. Addresses in host order.
uint32_t build_arp(uint8_t* buf, uint16_t oper, const uint8_t eth_dst[6], const uint8_t sha[6], uint32_t spa,
                   const uint8_t tha[6], uint32_t tpa);

// Whether the frame is an untagged or 802.1Q-tagged Ethernet/IPv4 ARP packet;
// fills *out when it is. Never reads past frame + len.
bool parse_arp(const uint8_t* frame, uint32_t len, ArpInfo* out);

// The ethertype after an optional 802.1Q tag, or 0 when the frame is too short.
uint16_t ethertype_of(const uint8_t* frame, uint32_t len);

}  // namespace tita::wire
