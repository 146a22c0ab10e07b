#include "tita/fabric/ecmp.h"

#include <cstring>

#include "tita/fabric/rng.h"

namespace tita::fabric {

namespace {

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

uint32_t flow_hash(const FlowKey& k, uint32_t seed, uint16_t sport_mask) {
  // Each 64-bit word of the tuple is folded in through the SplitMix64 mixer.
  const uint64_t ports = uint64_t{k.proto} << 32 | uint64_t{static_cast<uint16_t>(k.sport & sport_mask)} << 16 |
                         k.dport;
  uint64_t h = mix64(uint64_t{seed} ^ 0x7469746166616272ull);
  if (k.ip_version == 4) {
    h = mix64(h ^ (uint64_t{load32(k.src + 12)} << 32 | load32(k.dst + 12)));
  } else {
    h = mix64(h ^ load64(k.src));
    h = mix64(h ^ load64(k.src + 8));
    h = mix64(h ^ load64(k.dst));
    h = mix64(h ^ load64(k.dst + 8));
  }
  return static_cast<uint32_t>(mix64(h ^ ports) >> 32);
}

uint32_t dodge_value(const EcmpConfig& cfg, const FlowKey& key, uint8_t dscp) {
  switch (cfg.dodge_field) {
    case DodgeField::kNone: return 0;
    case DodgeField::kDscp: return wire::dodge_get(cfg.dodge_mask, dscp);
    case DodgeField::kUdpSport: return wire::dodge_get(cfg.dodge_mask, key.sport);
  }
  return 0;
}

uint32_t ecmp_select(const EcmpConfig& cfg, const FlowKey& key, uint8_t dscp, uint32_t n) {
  if (n <= 1) return 0;
  const uint16_t sport_mask =
      cfg.dodge_field == DodgeField::kUdpSport ? static_cast<uint16_t>(~cfg.dodge_mask) : uint16_t{0xffff};
  // Multiply-shift maps the hash onto [0, n) without a division.
  const uint32_t base = static_cast<uint32_t>((uint64_t{flow_hash(key, cfg.seed, sport_mask)} * n) >> 32);
  const uint32_t dodge = dodge_value(cfg, key, dscp);
  const uint32_t stride = cfg.dodge_stride % n;
  uint64_t offset = uint64_t{dodge % n} * stride % n;
  // The sender's wrap from the last value to 0 must move the flow too.
  if (offset == 0 && dodge != 0 && dodge + 1 == wire::dodge_values(cfg.dodge_mask)) offset = stride;
  return static_cast<uint32_t>((base + offset) % n);
}

}  // namespace tita::fabric
