#include "tita/wire/arp.h"

#include <cstring>

namespace tita::wire {

uint32_t build_arp(uint8_t* buf, uint16_t oper, const uint8_t eth_dst[6], const uint8_t sha[6], uint32_t spa,
                   const uint8_t tha[6], uint32_t tpa) {
  std::memset(buf, 0, kArpFrameBytes);
  auto* eth = reinterpret_cast<EthHdr*>(buf);
  std::memcpy(eth->dst, eth_dst, 6);
  std::memcpy(eth->src, sha, 6);
  eth->ethertype.set(kEtherTypeArp);
  auto* a = reinterpret_cast<ArpIpv4*>(buf + sizeof(EthHdr));
  a->htype.set(1);
  a->ptype.set(kEtherTypeIpv4);
  a->hlen = 6;
  a->plen = 4;
  a->oper.set(oper);
  std::memcpy(a->sha, sha, 6);
  a->spa.set(spa);
  std::memcpy(a->tha, tha, 6);
  a->tpa.set(tpa);
  return kArpFrameBytes;
}

uint16_t ethertype_of(const uint8_t* frame, uint32_t len) {
  if (len < sizeof(EthHdr)) return 0;
  const uint16_t t = reinterpret_cast<const EthHdr*>(frame)->ethertype.get();
  if (t != kEtherTypeVlan) return t;
  if (len < sizeof(EthHdr) + sizeof(VlanTag)) return 0;
  return reinterpret_cast<const VlanTag*>(frame + sizeof(EthHdr))->ethertype.get();
}

bool parse_arp(const uint8_t* frame, uint32_t len, ArpInfo* out) {
  if (len < sizeof(EthHdr)) return false;
  uint32_t off = sizeof(EthHdr);
  uint16_t type = reinterpret_cast<const EthHdr*>(frame)->ethertype.get();
  if (type == kEtherTypeVlan) {
    if (len < off + sizeof(VlanTag)) return false;
    type = reinterpret_cast<const VlanTag*>(frame + off)->ethertype.get();
    off += sizeof(VlanTag);
  }
  if (type != kEtherTypeArp || len < off + sizeof(ArpIpv4)) return false;
  const auto* a = reinterpret_cast<const ArpIpv4*>(frame + off);
  if (a->htype.get() != 1 || a->ptype.get() != kEtherTypeIpv4 || a->hlen != 6 || a->plen != 4) return false;
  out->oper = a->oper.get();
  std::memcpy(out->eth_dst, frame, 6);
  std::memcpy(out->sha, a->sha, 6);
  out->spa = a->spa.get();
  std::memcpy(out->tha, a->tha, 6);
  out->tpa = a->tpa.get();
  return true;
}

}  // namespace tita::wire
