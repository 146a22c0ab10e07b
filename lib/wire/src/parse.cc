#include <cstddef>
#include <cstring>

#include "tita/wire/frame.h"

namespace tita::wire {

std::string_view to_string(ParseError e) {
  switch (e) {
    case ParseError::kOk: return "ok";
    case ParseError::kTruncated: return "truncated";
    case ParseError::kNotIp: return "not IP";
    case ParseError::kBadIpVersion: return "bad IP version";
    case ParseError::kBadIpHeader: return "bad IP header";
    case ParseError::kBadIpChecksum: return "bad IP checksum";
    case ParseError::kNotUdp: return "not UDP";
    case ParseError::kNotRoce: return "not UDP port 4791";
    case ParseError::kLengthMismatch: return "length mismatch";
    case ParseError::kBadVersion: return "bad BTH version";
    case ParseError::kUnknownOpcode: return "unknown opcode";
    case ParseError::kBadPadCount: return "bad pad count";
    case ParseError::kBadIcrc: return "bad ICRC";
    case ParseError::kCount: break;
  }
  return "invalid";
}

Gid Gid::from_ipv4(uint32_t addr) {
  Gid g;
  g.raw[10] = g.raw[11] = 0xff;
  g.raw[12] = static_cast<uint8_t>(addr >> 24);
  g.raw[13] = static_cast<uint8_t>(addr >> 16);
  g.raw[14] = static_cast<uint8_t>(addr >> 8);
  g.raw[15] = static_cast<uint8_t>(addr);
  return g;
}

uint32_t Gid::ipv4() const {
  return uint32_t{raw[12]} << 24 | uint32_t{raw[13]} << 16 | uint32_t{raw[14]} << 8 | raw[15];
}

uint16_t ipv4_checksum(const Ipv4Hdr& ip, uint32_t len) {
  // RFC 1071, in 32-bit words (the one's-complement sum is byte-order independent
  // and folds the same), with the checksum field counted as zero.
  const auto* p = reinterpret_cast<const uint8_t*>(&ip);
  uint64_t sum = 0;
  if (len == sizeof(Ipv4Hdr)) [[likely]] {  // no options: five words, unrolled
    uint32_t w[5];
    std::memcpy(w, p, sizeof w);
    sum = uint64_t{w[0]} + w[1] + w[2] + w[3] + w[4];
  } else {
    for (uint32_t i = 0; i + 4 <= len; i += 4) {
      uint32_t w;
      std::memcpy(&w, p + i, 4);
      sum += w;
    }
  }
  uint16_t stored;
  std::memcpy(&stored, p + 10, 2);
  sum -= uint64_t{stored} << 16;  // bytes 10-11 are the high half of the third little-endian word
  sum = (sum & 0xffffffff) + (sum >> 32);
  sum = (sum & 0xffffffff) + (sum >> 32);
  uint32_t s32 = static_cast<uint32_t>(sum);
  s32 = (s32 & 0xffff) + (s32 >> 16);
  s32 = (s32 & 0xffff) + (s32 >> 16);
  return __builtin_bswap16(static_cast<uint16_t>(~s32));
}

namespace {

// Ethernet and the optional 802.1Q tag: sets the L3 offset and ethertype.
ParseError parse_l2(const uint8_t* frame, uint32_t len, Packet* p, uint16_t* ethertype) {
  EthernetView e;
  if (!parse_ethernet(frame, len, &e)) [[unlikely]] return ParseError::kTruncated;
  *ethertype = e.ethertype;
  p->l3_offset = e.l3_offset;
  p->has_vlan = e.vlan;
  p->pcp = e.pcp;
  p->vid = e.vid;
  if (e.ethertype != kEtherTypeIpv4 && e.ethertype != kEtherTypeIpv6) [[unlikely]] return ParseError::kNotIp;
  return ParseError::kOk;
}

// IPv4 or IPv6 up to the UDP header; sets the L4 offset and the end of the datagram.
ParseError parse_l3(const uint8_t* frame, uint32_t len, uint16_t ethertype, Packet* p, uint32_t* datagram_end,
                    const ParseOptions& opts) {
  const uint32_t l3 = p->l3_offset;
  if (len < l3 + 1) [[unlikely]] return ParseError::kTruncated;
  const uint8_t version = frame[l3] >> 4;
  if (ethertype == kEtherTypeIpv4) {
    if (version != 4) [[unlikely]] return ParseError::kBadIpVersion;
    if (len < l3 + sizeof(Ipv4Hdr)) [[unlikely]] return ParseError::kTruncated;
    const auto& ip = *reinterpret_cast<const Ipv4Hdr*>(frame + l3);
    const uint32_t ihl = ip.header_bytes();
    if (ihl < sizeof(Ipv4Hdr) || ip.is_fragment()) [[unlikely]] return ParseError::kBadIpHeader;
    if (len < l3 + ihl) [[unlikely]] return ParseError::kTruncated;
    if (opts.verify_ip_checksum && ipv4_checksum(ip, ihl) != ip.checksum.get()) [[unlikely]] {
      return ParseError::kBadIpChecksum;
    }
    if (ip.protocol != kIpProtoUdp) [[unlikely]] return ParseError::kNotUdp;
    const uint32_t total = ip.total_len.get();
    if (total < ihl + sizeof(UdpHdr)) [[unlikely]] return ParseError::kLengthMismatch;
    if (len < l3 + total) [[unlikely]] return ParseError::kTruncated;
    p->ip_version = 4;
    p->dscp = ip.dscp();
    p->ecn = ip.ecn();
    p->l4_offset = static_cast<uint16_t>(l3 + ihl);
    *datagram_end = l3 + total;
  } else {
    if (version != 6) [[unlikely]] return ParseError::kBadIpVersion;
    if (len < l3 + sizeof(Ipv6Hdr)) [[unlikely]] return ParseError::kTruncated;
    const auto& ip = *reinterpret_cast<const Ipv6Hdr*>(frame + l3);
    if (ip.next_header != kIpProtoUdp) [[unlikely]] return ParseError::kNotUdp;
    const uint32_t payload = ip.payload_len.get();
    if (payload < sizeof(UdpHdr)) [[unlikely]] return ParseError::kLengthMismatch;
    if (len < l3 + sizeof(Ipv6Hdr) + payload) [[unlikely]] return ParseError::kTruncated;
    p->ip_version = 6;
    p->dscp = ip.traffic_class() >> 2;
    p->ecn = ip.traffic_class() & 3;
    p->l4_offset = static_cast<uint16_t>(l3 + sizeof(Ipv6Hdr));
    *datagram_end = l3 + sizeof(Ipv6Hdr) + payload;
  }
  return ParseError::kOk;
}

}  // namespace

ParseError parse(const uint8_t* frame, uint32_t len, Packet* p, ParseOptions opts) {
  *p = Packet{};
  p->frame = frame;
  p->frame_len = len;

  uint16_t ethertype;
  if (ParseError e = parse_l2(frame, len, p, &ethertype); e != ParseError::kOk) [[unlikely]] return e;
  uint32_t end;
  if (ParseError e = parse_l3(frame, len, ethertype, p, &end, opts); e != ParseError::kOk) [[unlikely]] return e;
  return parse_transport(frame, len, end, p, opts);
}

ParseError parse_transport(const uint8_t* frame, uint32_t len, uint32_t end, Packet* p, ParseOptions opts) {
  // UDP: the datagram (checked to fit in the frame) must hold exactly the UDP length.
  const auto& udp = *reinterpret_cast<const UdpHdr*>(frame + p->l4_offset);
  if (udp.dst_port.get() != kRoceUdpPort) [[unlikely]] return ParseError::kNotRoce;
  const uint32_t udp_len = udp.length.get();
  if (udp_len != end - p->l4_offset) [[unlikely]] return ParseError::kLengthMismatch;

  // BTH and the opcode's extension headers.
  p->bth_offset = static_cast<uint16_t>(p->l4_offset + sizeof(UdpHdr));
  if (udp_len < sizeof(UdpHdr) + sizeof(Bth) + kIcrcBytes) [[unlikely]] return ParseError::kLengthMismatch;
  const Bth& bth = p->bth();
  if (bth.tver() != 0) [[unlikely]] return ParseError::kBadVersion;
  const OpcodeInfo& op = opcode_info(bth.opcode);
  if (!op.valid()) [[unlikely]] return ParseError::kUnknownOpcode;
  p->op = &op;
  const uint32_t fixed = sizeof(UdpHdr) + sizeof(Bth) + op.ext_bytes + kIcrcBytes;
  if (udp_len < fixed) [[unlikely]] return ParseError::kLengthMismatch;

  // Payload and pad: what remains between the headers and the ICRC.
  const uint32_t padded = udp_len - fixed;
  p->pad = bth.pad_count();
  if (!op.has(kHasPayload)) {
    if (p->pad != 0) [[unlikely]] return ParseError::kBadPadCount;
    if (padded != 0) [[unlikely]] return ParseError::kLengthMismatch;
  } else if ((padded & 3) != 0 || p->pad > padded) [[unlikely]] {
    return ParseError::kBadPadCount;
  }
  p->payload_offset = p->bth_offset + sizeof(Bth) + op.ext_bytes;
  p->payload_len = padded - p->pad;
  p->icrc_offset = end - kIcrcBytes;

  if (opts.verify_icrc) {
    const uint32_t icrc = icrc_compute(frame + p->l3_offset, p->icrc_offset - p->l3_offset);
    if (icrc != p->icrc()) [[unlikely]] return ParseError::kBadIcrc;
  }

  if (telemetry_at(frame + end, len - end) != nullptr) {
    p->trailer_offset = end;
    p->trailer_len = len - end;
  }
  return ParseError::kOk;
}

bool icrc_check_copy(const Packet& p, uint8_t* dst) {
  const uint8_t* payload = p.payload();
  uint32_t crc = icrc_compute(p.frame + p.l3_offset, p.payload_offset - p.l3_offset);
  crc = dst != nullptr ? crc32_copy(dst, payload, p.payload_len, crc) : crc32(crc, payload, p.payload_len);
  crc = crc32(crc, payload + p.payload_len, p.icrc_offset - p.payload_offset - p.payload_len);  // the pad
  return crc == p.icrc();
}

int32_t peek_dest_qp(const uint8_t* frame, uint32_t len) {
  Packet p;
  uint16_t ethertype;
  if (parse_l2(frame, len, &p, &ethertype) != ParseError::kOk) return -1;
  uint32_t l4;
  if (ethertype == kEtherTypeIpv4) {
    if (len < p.l3_offset + sizeof(Ipv4Hdr) || frame[p.l3_offset + 9] != kIpProtoUdp) return -1;
    l4 = p.l3_offset + reinterpret_cast<const Ipv4Hdr*>(frame + p.l3_offset)->header_bytes();
  } else {
    if (len < p.l3_offset + sizeof(Ipv6Hdr) || frame[p.l3_offset + 6] != kIpProtoUdp) return -1;
    l4 = p.l3_offset + sizeof(Ipv6Hdr);
  }
  if (len < l4 + sizeof(UdpHdr) + sizeof(Bth)) return -1;
  if (reinterpret_cast<const UdpHdr*>(frame + l4)->dst_port.get() != kRoceUdpPort) return -1;
  return static_cast<int32_t>(reinterpret_cast<const Bth*>(frame + l4 + sizeof(UdpHdr))->dest_qp.get());
}

bool parse_ethernet(const uint8_t* frame, uint32_t len, EthernetView* out) {
  if (len < sizeof(EthHdr)) [[unlikely]] return false;
  out->ethertype = reinterpret_cast<const EthHdr*>(frame)->ethertype.get();
  out->l3_offset = sizeof(EthHdr);
  out->vlan = false;
  if (out->ethertype == kEtherTypeVlan) {
    if (len < sizeof(EthHdr) + sizeof(VlanTag)) [[unlikely]] return false;
    const auto& tag = *reinterpret_cast<const VlanTag*>(frame + sizeof(EthHdr));
    out->vlan = true;
    out->pcp = tag.pcp();
    out->vid = tag.vid();
    out->ethertype = tag.ethertype.get();
    out->l3_offset += sizeof(VlanTag);
  }
  return true;
}

uint32_t datagram_end(const uint8_t* frame, uint32_t len, uint32_t frame_len) {
  EthernetView e;
  if (!parse_ethernet(frame, len, &e)) return 0;
  const uint32_t l3 = e.l3_offset;
  uint32_t end;
  if (e.ethertype == kEtherTypeIpv4) {
    if (len < l3 + offsetof(Ipv4Hdr, total_len) + 2) return 0;
    end = l3 + reinterpret_cast<const Ipv4Hdr*>(frame + l3)->total_len.get();
  } else if (e.ethertype == kEtherTypeIpv6) {
    if (len < l3 + offsetof(Ipv6Hdr, payload_len) + 2) return 0;
    end = l3 + sizeof(Ipv6Hdr) + reinterpret_cast<const Ipv6Hdr*>(frame + l3)->payload_len.get();
  } else {
    return 0;
  }
  return end <= frame_len ? end : 0;
}

}  // namespace tita::wire
