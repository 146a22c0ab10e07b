#include <cerrno>
#include <cstring>

#include "tita/wire/frame.h"

namespace tita::wire {

namespace {

bool use_ipv4(const PathFields& f) { return f.src_gid.is_ipv4() && f.dst_gid.is_ipv4(); }

// Copies n bytes, 48 <= n <= 96, in 16-byte moves (the last one overlapping):
// a template's headers without a call into libc's memcpy.
void copy_headers(uint8_t* dst, const uint8_t* src, uint32_t n) {
  std::memcpy(dst, src, 48);
  if (n > 64) std::memcpy(dst + 48, src + 48, 16);
  if (n > 80) std::memcpy(dst + 64, src + 64, 16);
  std::memcpy(dst + n - 16, src + n - 16, 16);
}

// Folds a one's-complement sum to 16 bits.
uint32_t fold(uint32_t sum) {
  sum = (sum & 0xffff) + (sum >> 16);
  return (sum & 0xffff) + (sum >> 16);
}

// The extension headers of `op`, in table order; returns the bytes written.
uint32_t write_ext(const OpcodeInfo& op, const TransportFields& f, uint8_t* p) {
  uint8_t* const start = p;
  if (op.has(kHasDeth)) {
    auto* h = reinterpret_cast<Deth*>(p);
    h->qkey.set(f.qkey);
    h->reserved = 0;
    h->src_qp.set(f.src_qp);
    p += sizeof(Deth);
  }
  if (op.has(kHasReth)) {
    auto* h = reinterpret_cast<Reth*>(p);
    h->va.set(f.va);
    h->rkey.set(f.rkey);
    h->dma_len.set(f.dma_len);
    p += sizeof(Reth);
  }
  if (op.has(kHasAtomicEth)) {
    auto* h = reinterpret_cast<AtomicEth*>(p);
    h->va.set(f.va);
    h->rkey.set(f.rkey);
    h->swap_add.set(f.swap_add);
    h->compare.set(f.compare);
    p += sizeof(AtomicEth);
  }
  if (op.has(kHasAeth)) {
    auto* h = reinterpret_cast<Aeth*>(p);
    h->syndrome = f.syndrome;
    h->msn.set(f.msn);
    p += sizeof(Aeth);
  }
  if (op.has(kHasAtomicAckEth)) {
    reinterpret_cast<AtomicAckEth*>(p)->orig.set(f.orig);
    p += sizeof(AtomicAckEth);
  }
  if (op.has(kHasImm)) {
    reinterpret_cast<ImmDt*>(p)->imm.set(f.imm);
    p += sizeof(ImmDt);
  }
  if (op.has(kHasCnpBody)) {
    std::memset(p, 0, sizeof(CnpBody));
    p += sizeof(CnpBody);
  }
  return static_cast<uint32_t>(p - start);
}

}  // namespace

void HeaderTemplate::init(const PathFields& f) {
  std::memset(bytes_, 0, sizeof bytes_);
  uint8_t* p = bytes_;
  auto* eth = reinterpret_cast<EthHdr*>(p);
  std::memcpy(eth->dst, f.dst_mac, 6);
  std::memcpy(eth->src, f.src_mac, 6);
  ipv4_ = use_ipv4(f);
  const uint16_t l3_type = ipv4_ ? kEtherTypeIpv4 : kEtherTypeIpv6;
  p += sizeof(EthHdr);
  if (f.vlan) {
    eth->ethertype.set(kEtherTypeVlan);
    auto* tag = reinterpret_cast<VlanTag*>(p);
    tag->set(f.pcp, f.vid);
    tag->ethertype.set(l3_type);
    p += sizeof(VlanTag);
  } else {
    eth->ethertype.set(l3_type);
  }
  l3_offset_ = static_cast<uint8_t>(p - bytes_);
  if (ipv4_) {
    auto* ip = reinterpret_cast<Ipv4Hdr*>(p);
    ip->version_ihl = 0x45;
    ip->id.set(f.ip_id);
    ip->frag.set(0x4000);  // don't fragment
    ip->ttl = f.ttl;
    ip->protocol = kIpProtoUdp;
    std::memcpy(ip->src, f.src_gid.ipv4_bytes(), 4);
    std::memcpy(ip->dst, f.dst_gid.ipv4_bytes(), 4);
    // TOS and total length are per packet; everything else is summed once.
    uint32_t sum = uint32_t{ip->version_ihl} << 8;
    for (uint32_t i = 4; i < sizeof(Ipv4Hdr); i += 2) {
      if (i != 10) sum += uint32_t{p[i]} << 8 | p[i + 1];
    }
    ip_sum_ = sum;
    p += sizeof(Ipv4Hdr);
  } else {
    auto* ip = reinterpret_cast<Ipv6Hdr*>(p);
    ip->set(static_cast<uint8_t>(f.dscp << 2), f.flow_label);
    ip->next_header = kIpProtoUdp;
    ip->hop_limit = f.ttl;
    std::memcpy(ip->src, f.src_gid.raw, 16);
    std::memcpy(ip->dst, f.dst_gid.raw, 16);
    p += sizeof(Ipv6Hdr);
  }
  auto* udp = reinterpret_cast<UdpHdr*>(p);
  udp->src_port.set(f.udp_src_port);
  udp->dst_port.set(kRoceUdpPort);
  p += sizeof(UdpHdr);
  bth_offset_ = static_cast<uint8_t>(p - bytes_);
  auto* bth = reinterpret_cast<Bth*>(p);
  bth->pkey.set(f.pkey);
  bth->dest_qp.set(f.dest_qp);
  // The DSCP rides in the template's TOS byte until write() adds the ECN bits.
  if (ipv4_) reinterpret_cast<Ipv4Hdr*>(bytes_ + l3_offset_)->tos = static_cast<uint8_t>(f.dscp << 2);
}

uint32_t HeaderTemplate::write(const TransportFields& t, uint32_t payload_len, uint8_t* out) const {
  const OpcodeInfo& op = opcode_info(t.opcode);
  const uint32_t pad = op.has(kHasPayload) ? pad_bytes(payload_len) : 0;
  const uint32_t udp_len = sizeof(UdpHdr) + sizeof(Bth) + op.ext_bytes + payload_len + pad + kIcrcBytes;
  static_assert(kMaxFixedBytes <= 96 && sizeof(EthHdr) + sizeof(Ipv4Hdr) + sizeof(UdpHdr) + sizeof(Bth) >= 48);
  copy_headers(out, bytes_, bth_offset_ + sizeof(Bth));
  uint8_t* l3 = out + l3_offset_;
  if (ipv4_) {
    auto* ip = reinterpret_cast<Ipv4Hdr*>(l3);
    ip->tos = static_cast<uint8_t>((ip->tos & 0xfc) | (t.ecn & 3));
    const uint32_t total = sizeof(Ipv4Hdr) + udp_len;
    ip->total_len.set(static_cast<uint16_t>(total));
    ip->checksum.set(static_cast<uint16_t>(~fold(ip_sum_ + ip->tos + total)));
  } else {
    auto* ip = reinterpret_cast<Ipv6Hdr*>(l3);
    ip->version_tc_flow.set((ip->version_tc_flow.get() & ~(3u << 20)) | uint32_t{t.ecn & 3u} << 20);
    ip->payload_len.set(static_cast<uint16_t>(udp_len));
  }
  reinterpret_cast<UdpHdr*>(out + bth_offset_ - sizeof(UdpHdr))->length.set(static_cast<uint16_t>(udp_len));
  auto* bth = reinterpret_cast<Bth*>(out + bth_offset_);
  bth->opcode = static_cast<uint8_t>(t.opcode);
  bth->flags = static_cast<uint8_t>((t.se ? Bth::kSolicitedEvent : 0) | (t.mig_req ? Bth::kMigReq : 0) | pad << 4);
  bth->fecn_becn = static_cast<uint8_t>((t.fecn ? Bth::kFecn : 0) | (t.becn ? Bth::kBecn : 0));
  bth->ack_req = t.ack_req ? Bth::kAckReq : 0;
  bth->psn.set(t.psn);
  return bth_offset_ + sizeof(Bth) + write_ext(op, t, out + bth_offset_ + sizeof(Bth));
}

uint32_t header_bytes(const FrameFields& f) {
  return sizeof(EthHdr) + (f.vlan ? sizeof(VlanTag) : 0) + (use_ipv4(f) ? sizeof(Ipv4Hdr) : sizeof(Ipv6Hdr)) +
         sizeof(UdpHdr) + sizeof(Bth) + opcode_info(f.opcode).ext_bytes;
}

uint32_t build_headers(const FrameFields& f, uint32_t payload_len, uint8_t* buf, uint32_t cap) {
  if (header_bytes(f) > cap) return 0;
  HeaderTemplate t;
  t.init(f);
  return t.write(f, payload_len, buf);
}

namespace {

// The CRC of the headers build_headers() wrote, from the IP header on; the pad count from the BTH.
uint32_t header_icrc(const uint8_t* hdr, uint32_t hdr_len, uint32_t* pad) {
  const bool vlan = reinterpret_cast<const EthHdr*>(hdr)->ethertype.get() == kEtherTypeVlan;
  const uint32_t l3 = sizeof(EthHdr) + (vlan ? sizeof(VlanTag) : 0);
  const uint32_t ip_len = (hdr[l3] >> 4) == 6 ? sizeof(Ipv6Hdr) : (hdr[l3] & 0x0fu) * 4u;
  *pad = reinterpret_cast<const Bth*>(hdr + l3 + ip_len + sizeof(UdpHdr))->pad_count();
  return icrc_compute(hdr + l3, hdr_len - l3);
}

void store_icrc(uint32_t crc, uint32_t pad, uint8_t* tail) {
  std::memset(tail, 0, pad);
  store_le32(tail + pad, crc32(crc, tail, pad));
}

}  // namespace

uint8_t* gather_segments(std::span<const Segment> segments, uint8_t* dst) {
  for (const Segment& s : segments) {
    if (s.data != nullptr) {
      std::memcpy(dst, s.data, s.len);
    } else {
      std::memset(dst, 0, s.len);
    }
    dst += s.len;
  }
  return dst;
}

void finish_frame(const uint8_t* hdr, uint32_t hdr_len, std::span<const Segment> payload, uint8_t* tail) {
  // Headers, then each payload segment where it lies, then the pad: no gathering.
  uint32_t pad;
  uint32_t crc = header_icrc(hdr, hdr_len, &pad);
  for (const Segment& s : payload) crc = crc32(crc, s.data, s.len);
  store_icrc(crc, pad, tail);
}

void finish_frame_copy(const uint8_t* hdr, uint32_t hdr_len, std::span<const Segment> payload, uint8_t* dst,
                       uint8_t* tail) {
  uint32_t pad;
  uint32_t crc = header_icrc(hdr, hdr_len, &pad);
  for (const Segment& s : payload) {
    if (s.data != nullptr) {
      crc = crc32_copy(dst, s.data, s.len, crc);
    } else {
      std::memset(dst, 0, s.len);
      crc = crc32(crc, dst, s.len);
    }
    dst += s.len;
  }
  store_icrc(crc, pad, tail);
}

int build_frame(const FrameFields& f, std::span<const Segment> payload, uint8_t* buf, uint32_t cap) {
  uint32_t payload_len = 0;
  for (const Segment& s : payload) payload_len += s.len;
  const uint32_t hdr_len = header_bytes(f);
  const uint32_t total = hdr_len + payload_len + pad_bytes(payload_len) + kIcrcBytes;
  if (total > cap || build_headers(f, payload_len, buf, cap) != hdr_len) return -ENOSPC;
  finish_frame_copy(buf, hdr_len, payload, buf + hdr_len, buf + hdr_len + payload_len);
  return static_cast<int>(total);
}

uint32_t telemetry_push(uint8_t* frame, uint32_t len, uint32_t cap, uint32_t rate_mbps, uint32_t ts_ns,
                        uint32_t tx_bytes, uint32_t qlen_bytes) {
  const uint32_t end = datagram_end(frame, len);
  if (end == 0) return len;
  const TelemetryHdr* found = telemetry_at(frame + end, len - end);
  if (found == nullptr || !found->collect() || found->echo()) return len;
  auto* t = const_cast<TelemetryHdr*>(found);
  const int hops = t->hops();
  if (hops >= kMaxTelemetryHops || len + sizeof(TelemetryHop) > cap) {
    t->flags_hops |= TelemetryHdr::kOverflow;
    return len;
  }
  auto* hop = reinterpret_cast<TelemetryHop*>(frame + len);
  hop->rate_mbps.set(rate_mbps);
  hop->ts_ns.set(ts_ns);
  hop->tx_bytes.set(tx_bytes);
  hop->qlen_bytes.set(qlen_bytes);
  t->flags_hops = static_cast<uint8_t>((t->flags_hops & ~TelemetryHdr::kHopMask) | (hops + 1));
  return len + sizeof(TelemetryHop);
}

}  // namespace tita::wire
