// Hash Dodging's dodge field (issue 8, doc/hash-dodging.md): a few bits of a
// header the sender controls, which switches add to their ECMP choice as a
// known offset instead of hashing them. The sender (lib/engine) writes them,
// the switches (lib/fabric, ecmp.h) read them; both use these helpers.
//
//   kUdpSport  low bits of the UDP source port (default mask 0x000f: 16 values).
//              RoCEv2's entropy field: every switch hashes it, no switch may
//              rewrite it (the ICRC covers it), it carries no QoS meaning.
//   kDscp      bits of the IP DSCP (default mask 0x07: 8 values; the seeds' "TOS
//              magic word"). Masked out of
//              the ICRC, so any switch may rewrite it (remarking at a domain
//              edge silently resets the dodge), and it is the traffic class
//              that PFC and ECN queues are chosen by.
#pragma once

#include <cstdint>
#include <string_view>

namespace tita::wire {

enum class DodgeField : uint8_t {
  kNone,      // no dodge field: path control off, ECMP without offset
  kDscp,      // dodge = (DSCP & mask) >> ctz(mask)
  kUdpSport,  // dodge = (UDP source port & mask) >> ctz(mask)
};

// The field's name in configuration: "none", "dscp", "udp_sport" (also
// spelled "udp-sport", as ns-3 attribute values usually are). False for
// anything else.
constexpr bool parse_dodge_field(std::string_view name, DodgeField* out) {
  if (name == "none") {
    *out = DodgeField::kNone;
  } else if (name == "dscp") {
    *out = DodgeField::kDscp;
  } else if (name == "udp_sport" || name == "udp-sport") {
    *out = DodgeField::kUdpSport;
  } else {
    return false;
  }
  return true;
}
inline constexpr std::string_view kDodgeFieldNames = "none, dscp or udp_sport";

// The mask a field uses when none is given: 0x000f of the UDP source port,
// 0x07 of the DSCP (the engine, tita-switch and the ns-3 switch all take it).
constexpr uint16_t dodge_default_mask(DodgeField f) {
  return f == DodgeField::kUdpSport ? 0x000f : f == DodgeField::kDscp ? 0x07 : 0;
}

// A mask selects one run of contiguous bits of its field (DSCP: within 0x3f).
constexpr bool dodge_mask_valid(DodgeField f, uint16_t mask) {
  if (f == DodgeField::kNone) return true;
  if (mask == 0 || (f == DodgeField::kDscp && mask > 0x3f)) return false;
  const uint32_t run = mask >> __builtin_ctz(mask);
  return (run & (run + 1)) == 0;
}

// How many dodge values the mask holds (2^bits).
constexpr uint32_t dodge_values(uint16_t mask) { return mask == 0 ? 1 : (uint32_t{mask} >> __builtin_ctz(mask)) + 1; }

// The dodge value in `field_value` (a UDP source port or a DSCP).
constexpr uint32_t dodge_get(uint16_t mask, uint16_t field_value) {
  return mask == 0 ? 0 : static_cast<uint32_t>((field_value & mask) >> __builtin_ctz(mask));
}

// field_value with its dodge bits replaced by `dodge` (taken modulo dodge_values).
constexpr uint16_t dodge_set(uint16_t mask, uint16_t field_value, uint32_t dodge) {
  if (mask == 0) return field_value;
  return static_cast<uint16_t>((field_value & ~mask) | ((dodge << __builtin_ctz(mask)) & mask));
}

// The dodge value `steps` on from `dodge`, cyclically; the one a sender moves
// to on a path change is the next.
// Switches guarantee that this step changes their choice whenever they have
// two or more next hops (fabric::ecmp_select).
constexpr uint32_t dodge_advance(uint16_t mask, uint32_t dodge, uint32_t steps) {
  return (dodge + steps) % dodge_values(mask);
}
constexpr uint32_t dodge_next(uint16_t mask, uint32_t dodge) { return dodge_advance(mask, dodge, 1); }

}  // namespace tita::wire
