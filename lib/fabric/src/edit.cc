#include "tita/fabric/edit.h"

#include <cstring>

#include "tita/wire/telemetry.h"

namespace tita::fabric {

namespace {

// RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m'), for one 16-bit word m -> m'.
void checksum_update(uint8_t* csum, uint16_t old_word, uint16_t new_word) {
  uint32_t sum = static_cast<uint16_t>(~(csum[0] << 8 | csum[1])) + static_cast<uint16_t>(~old_word) + uint32_t{new_word};
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  const uint16_t hc = static_cast<uint16_t>(~sum);
  csum[0] = static_cast<uint8_t>(hc >> 8);
  csum[1] = static_cast<uint8_t>(hc);
}

uint16_t word(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

constexpr uint32_t kIpv4ChecksumOffset = 10;

}  // namespace

bool mark_ce(uint8_t* l3, bool ipv6) {
  if (ipv6) {
    // Traffic class straddles bytes 0-1; its ECN bits are bits 5:4 of byte 1.
    const uint8_t ecn = (l3[1] >> 4) & 3;
    if (ecn == 0 || ecn == 3) return false;
    l3[1] |= 0x30;
    return true;
  }
  const uint8_t ecn = l3[1] & 3;
  if (ecn == 0 || ecn == 3) return false;
  const uint16_t old_word = word(l3);
  l3[1] |= 3;
  checksum_update(l3 + kIpv4ChecksumOffset, old_word, word(l3));
  return true;
}

void decrement_ttl(uint8_t* l3, bool ipv6) {
  if (ipv6) {
    --l3[7];
    return;
  }
  const uint16_t old_word = word(l3 + 8);
  --l3[8];
  checksum_update(l3 + kIpv4ChecksumOffset, old_word, word(l3 + 8));
}

void apply_edit(const EgressEdit& e, uint8_t* headers, uint8_t* trailer) {
  if (e.flags & EgressEdit::kRewriteMac) {
    std::memcpy(headers, e.dst_mac, 6);
    std::memcpy(headers + 6, e.src_mac, 6);
  }
  const bool ipv6 = e.flags & EgressEdit::kIpv6;
  uint8_t* l3 = headers + e.l3_offset;
  if (e.flags & EgressEdit::kDecTtl) decrement_ttl(l3, ipv6);
  if (e.flags & EgressEdit::kMarkCe) mark_ce(l3, ipv6);
  if (e.flags & EgressEdit::kCorrupt) headers[e.corrupt_offset] ^= e.corrupt_mask;
  if (e.flags & (EgressEdit::kPushHop | EgressEdit::kOverflow)) {
    auto* h = reinterpret_cast<wire::TelemetryHdr*>(trailer);
    if (e.flags & EgressEdit::kPushHop) {
      auto* hop = reinterpret_cast<wire::TelemetryHop*>(trailer + e.trailer_len);
      hop->rate_mbps.set(e.rate_mbps);
      hop->ts_ns.set(e.ts_ns);
      hop->tx_bytes.set(e.tx_bytes);
      hop->qlen_bytes.set(e.qlen_bytes);
      h->flags_hops = static_cast<uint8_t>((h->flags_hops & ~wire::TelemetryHdr::kHopMask) | (h->hops() + 1));
    } else {
      h->flags_hops |= wire::TelemetryHdr::kOverflow;
    }
  }
}

void apply_edit(const EgressEdit& e, uint8_t* frame) { apply_edit(e, frame, frame + e.trailer_offset); }

}  // namespace tita::fabric
