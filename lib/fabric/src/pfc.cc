#include "tita/fabric/pfc.h"

#include <cstring>

#include "tita/wire/headers.h"

namespace tita::fabric {

uint32_t build_pfc_frame(uint8_t* buf, uint32_t cap, const uint8_t src_mac[6], const PfcInfo& info) {
  if (cap < kPfcFrameBytes) return 0;
  std::memset(buf, 0, kPfcFrameBytes);
  auto* eth = reinterpret_cast<wire::EthHdr*>(buf);
  std::memcpy(eth->dst, wire::kPfcDstMac, 6);
  std::memcpy(eth->src, src_mac, 6);
  eth->ethertype.set(wire::kEtherTypeMacControl);
  auto* pfc = reinterpret_cast<wire::PfcFrame*>(buf + sizeof(wire::EthHdr));
  pfc->opcode.set(wire::PfcFrame::kOpcode);
  pfc->class_enable.set(info.class_enable);
  for (int p = 0; p < 8; ++p) pfc->quanta[p].set(info.quanta[p]);
  return kPfcFrameBytes;
}

bool parse_pfc_frame(const uint8_t* frame, uint32_t len, PfcInfo* out) {
  if (len < sizeof(wire::EthHdr) + sizeof(wire::PfcFrame)) return false;
  const auto* eth = reinterpret_cast<const wire::EthHdr*>(frame);
  if (std::memcmp(eth->dst, wire::kPfcDstMac, 6) != 0 || eth->ethertype.get() != wire::kEtherTypeMacControl) {
    return false;
  }
  const auto* pfc = reinterpret_cast<const wire::PfcFrame*>(frame + sizeof(wire::EthHdr));
  if (pfc->opcode.get() != wire::PfcFrame::kOpcode) return false;
  out->class_enable = static_cast<uint8_t>(pfc->class_enable.get());
  for (int p = 0; p < 8; ++p) out->quanta[p] = pfc->quanta[p].get();
  return true;
}

uint64_t pfc_quanta_ns(uint16_t quanta, uint64_t rate_bps) {
  if (rate_bps == 0) return 0;
  return (uint64_t{quanta} * 512 * 1'000'000'000ull + rate_bps - 1) / rate_bps;
}

}  // namespace tita::fabric
