#include "tita/fabric/classify.h"

#include <cstring>

#include "tita/fabric/pfc.h"
#include "tita/wire/frame.h"
#include "tita/wire/headers.h"
#include "tita/wire/telemetry.h"

namespace tita::fabric {

namespace {

uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

constexpr uint8_t kIpProtoTcp = 6;

}  // namespace

void classify(const FrameRef& f, const ClassifyConfig& cfg, bool int_enabled, Classified* c) {
  *c = Classified{};
  const uint8_t* p = f.data;
  const uint32_t n = f.data_len < f.frame_bytes ? f.data_len : f.frame_bytes;
  if (p == nullptr || n < sizeof(wire::EthHdr)) [[unlikely]] return;

  wire::EthernetView eth;
  if (!wire::parse_ethernet(p, n, &eth)) [[unlikely]] return;
  c->vlan = eth.vlan;
  c->pcp = eth.pcp;
  const uint16_t ethertype = eth.ethertype;
  const uint32_t l3 = eth.l3_offset;
  if (ethertype == wire::kEtherTypeMacControl) {
    PfcInfo info;
    c->kind = parse_pfc_frame(p, n, &info) ? FrameKind::kPfc : FrameKind::kUnsupported;
    return;
  }

  uint32_t l4 = 0;
  uint32_t end = 0;  // first byte after the IP datagram
  bool has_ports = true;
  if (ethertype == wire::kEtherTypeIpv4) {
    if (n < l3 + sizeof(wire::Ipv4Hdr)) [[unlikely]] return;
    const auto& ip = *reinterpret_cast<const wire::Ipv4Hdr*>(p + l3);
    const uint32_t ihl = ip.header_bytes();
    const uint32_t total = ip.total_len.get();
    if (ip.version() != 4 || ihl < sizeof(wire::Ipv4Hdr) || n < l3 + ihl || total < ihl ||
        l3 + total > f.frame_bytes) [[unlikely]] {
      return;
    }
    c->key.ip_version = 4;
    c->key.src[10] = c->key.src[11] = c->key.dst[10] = c->key.dst[11] = 0xff;
    std::memcpy(c->key.src + 12, ip.src, 4);
    std::memcpy(c->key.dst + 12, ip.dst, 4);
    c->key.proto = ip.protocol;
    c->ttl = ip.ttl;
    c->dscp = ip.dscp();
    c->ecn = ip.ecn();
    has_ports = (ip.frag.get() & 0x1fff) == 0;  // only a first fragment carries the ports
    l4 = l3 + ihl;
    end = l3 + total;
  } else if (ethertype == wire::kEtherTypeIpv6) {
    if (n < l3 + sizeof(wire::Ipv6Hdr)) [[unlikely]] return;
    const auto& ip = *reinterpret_cast<const wire::Ipv6Hdr*>(p + l3);
    l4 = l3 + sizeof(wire::Ipv6Hdr);
    end = l4 + ip.payload_len.get();
    if (ip.version() != 6 || end > f.frame_bytes) [[unlikely]] return;
    c->key.ip_version = 6;
    std::memcpy(c->key.src, ip.src, 16);
    std::memcpy(c->key.dst, ip.dst, 16);
    c->key.proto = ip.next_header;
    c->ttl = ip.hop_limit;
    c->dscp = ip.traffic_class() >> 2;
    c->ecn = ip.traffic_class() & 3;
  } else {
    c->kind = FrameKind::kUnsupported;
    return;
  }
  if (has_ports && (c->key.proto == wire::kIpProtoUdp || c->key.proto == kIpProtoTcp)) {
    if (n < l4 + 4 || end < l4 + 4) [[unlikely]] return;
    c->key.sport = load_be16(p + l4);
    c->key.dport = load_be16(p + l4 + 2);
    c->l4_offset = static_cast<uint16_t>(l4);
  }
  c->l3_offset = static_cast<uint16_t>(l3);
  c->priority = (c->vlan && cfg.trust_pcp) ? c->pcp : cfg.dscp_priority[c->dscp];
  c->kind = FrameKind::kIp;
  if (!int_enabled) return;

  // The telemetry trailer: apart (ns-3), or in the frame after the datagram.
  const uint8_t* t;
  uint32_t tlen;
  if (f.trailer != nullptr) {
    t = f.trailer;
    tlen = f.trailer_len;
  } else if (f.data_len >= f.frame_bytes && f.frame_bytes > end && end <= UINT16_MAX) {
    t = p + end;
    tlen = f.frame_bytes - end;
    c->trailer_offset = static_cast<uint16_t>(end);
  } else {
    return;
  }
  const wire::TelemetryHdr* h = wire::telemetry_at(t, tlen);
  if (h == nullptr || !h->collect() || h->echo()) return;
  c->trailer_len = static_cast<uint16_t>(tlen);
  c->trailer_hops = h->hops();
  c->int_action = (h->hops() < wire::kMaxTelemetryHops && f.trailer_room >= sizeof(wire::TelemetryHop))
                      ? IntAction::kPush
                      : IntAction::kOverflow;
}

}  // namespace tita::fabric
