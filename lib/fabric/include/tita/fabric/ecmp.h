// ECMP with a dodge offset: the one next-hop choice shared by tita-switch and
// the ns-3 switch (and refined by Hash Dodging, issue 8).
//
//   choice = (base + dodge * stride) mod n,   base = flow_hash(key, seed) scaled to [0, n)
//
// - flow_hash covers the 5-tuple (source and destination address, protocol,
//   source and destination port) with a per-switch seed, so switches at
//   different tiers decorrelate. RoCEv2's UDP source port is the flow entropy.
// - dodge is a small number read from a header field the sender controls: bits
//   of the IP DSCP, or bits of the UDP source port. Those bits are masked out of
//   the hash, so a new dodge value shifts the flow by a known amount instead of
//   rehashing it to a random next hop.
// - stride is per switch (per tier). With stride 1 at every tier, changing the
//   dodge value by d (d not a multiple of n) moves the flow to another next hop
//   at every tier at once; in a fat-tree that gives a path that shares no
//   aggregation or core switch with the old one. A stride coprime with n lets
//   dodge values 0..n-1 visit all n next hops; stride 0 disables dodging at a
//   switch. n is the number of ports up in the group, so a failed port changes
//   it (the control plane's reroute).
// - A sender dodges by one step, cyclically (wire::dodge_next: L-1 -> 0 with L
//   dodge values). When (L-1) x stride is a multiple of n, that wrap would land
//   on the old next hop, so the last value takes offset stride instead of 0:
//   every step of a sender then moves the flow whenever n >= 2 and the stride
//   is not a multiple of n.
#pragma once

#include <cstdint>

#include "tita/fabric/types.h"
#include "tita/wire/dodge.h"

namespace tita::fabric {

// kNone: no offset; kDscp: dodge = (DSCP & mask) >> ctz(mask); kUdpSport: dodge
// = (UDP source port & mask) >> ctz(mask), and those bits leave the hash.
using DodgeField = wire::DodgeField;

struct EcmpConfig {
  uint32_t seed = 0;       // per switch
  DodgeField dodge_field = DodgeField::kNone;
  uint16_t dodge_mask = 0; // bits of the field that carry the dodge value
  uint32_t dodge_stride = 1;
};

// 32-bit hash of the 5-tuple; UDP/TCP source port bits outside sport_mask are ignored.
uint32_t flow_hash(const FlowKey& key, uint32_t seed, uint16_t sport_mask = 0xffff);

// The dodge value a packet carries under cfg (0 for kNone).
uint32_t dodge_value(const EcmpConfig& cfg, const FlowKey& key, uint8_t dscp);

// Index in [0, n) of the next hop for this packet; n >= 1.
uint32_t ecmp_select(const EcmpConfig& cfg, const FlowKey& key, uint8_t dscp, uint32_t n);

}  // namespace tita::fabric
