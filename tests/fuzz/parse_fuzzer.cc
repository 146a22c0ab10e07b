// libFuzzer target for the frame parser. Properties checked on every input:
// parse never reads outside the input (ASan) and never overflows (UBSan); an
// accepted frame's offsets lie inside it; a frame rebuilt from the fields of an
// accepted frame parses again to the same fields; a switch pushing telemetry
// never writes past the capacity it was given.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tita/wire/frame.h"

using namespace tita::wire;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

void check_accepted(const Packet& p, uint32_t size) {
  require(p.l3_offset < p.l4_offset && p.l4_offset < p.bth_offset);
  require(p.payload_offset + p.payload_len + p.pad + kIcrcBytes <= size);
  require(p.icrc_offset + kIcrcBytes <= size);
  require(p.trailer_len == 0 || p.trailer_offset + p.trailer_len == size);
  volatile uint64_t sink = p.psn() + p.dest_qp() + p.icrc();
  if (const Deth* d = p.deth()) sink = sink + d->qkey.get() + d->src_qp.get();
  if (const Reth* r = p.reth()) sink = sink + r->va.get();
  if (const Aeth* a = p.aeth()) sink = sink + a->msn.get();
  if (const ImmDt* i = p.imm()) sink = sink + i->imm.get();
  if (const AtomicEth* a = p.atomic_eth()) sink = sink + a->compare.get();
  if (const AtomicAckEth* a = p.atomic_ack()) sink = sink + a->orig.get();
  if (const TelemetryHdr* t = p.telemetry()) {
    for (int i = 0; i < t->hops(); ++i) sink = sink + telemetry_hops(t)[i].qlen_bytes.get();
  }
  (void)sink;
}

// Rebuild an accepted frame from its parsed fields: the result must parse to the same fields.
void check_rebuild(const Packet& p) {
  FrameFields f;
  std::memcpy(f.dst_mac, p.eth().dst, 6);
  std::memcpy(f.src_mac, p.eth().src, 6);
  f.vlan = p.has_vlan;
  f.pcp = p.pcp;
  f.vid = p.vid;
  f.src_gid = p.src_gid();
  f.dst_gid = p.dst_gid();
  if (p.ip_version == 6 && (f.src_gid.is_ipv4() && f.dst_gid.is_ipv4())) return;  // would come back as IPv4
  if (p.ip_version == 4 && p.ipv4().header_bytes() != sizeof(Ipv4Hdr)) return;   // options are not rebuilt
  f.dscp = p.dscp;
  f.ecn = p.ecn;
  f.opcode = static_cast<Opcode>(p.opcode());
  f.dest_qp = p.dest_qp();
  f.psn = p.psn();
  f.pkey = p.bth().pkey.get();
  f.ack_req = p.bth().ack_requested();
  if (const Deth* d = p.deth()) f.qkey = d->qkey.get(), f.src_qp = d->src_qp.get();
  if (const Reth* r = p.reth()) f.va = r->va.get(), f.rkey = r->rkey.get(), f.dma_len = r->dma_len.get();
  if (const Aeth* a = p.aeth()) f.syndrome = a->syndrome, f.msn = a->msn.get();
  if (const ImmDt* i = p.imm()) f.imm = i->imm.get();
  const Segment seg{p.payload(), p.payload_len};
  std::vector<uint8_t> buf(p.frame_len + 64);
  const int len = build_frame(f, {&seg, p.payload_len ? 1u : 0u}, buf.data(), static_cast<uint32_t>(buf.size()));
  require(len > 0);
  Packet q;
  require(parse(buf.data(), static_cast<uint32_t>(len), &q) == ParseError::kOk);
  require(q.opcode() == p.opcode() && q.psn() == p.psn() && q.dest_qp() == p.dest_qp());
  require(q.payload_len == p.payload_len && std::memcmp(q.payload(), p.payload(), p.payload_len) == 0);
  require((q.deth() == nullptr) == (p.deth() == nullptr));
  if (p.deth() != nullptr) {
    require(q.deth()->qkey.get() == p.deth()->qkey.get() && q.deth()->src_qp.get() == p.deth()->src_qp.get());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  // An exactly-sized copy, so a read one byte past the end is an ASan report.
  std::vector<uint8_t> frame(data, data + size);
  const auto n = static_cast<uint32_t>(size);
  Packet p;
  if (parse(frame.data(), n, &p) == ParseError::kOk) {
    check_accepted(p, n);
    check_rebuild(p);
  }
  // Without the checksums, random inputs reach every later check.
  if (parse(frame.data(), n, &p, {.verify_icrc = false, .verify_ip_checksum = false}) == ParseError::kOk) {
    check_accepted(p, n);
  }
  std::vector<uint8_t> room(frame);
  room.resize(size + 40);
  const uint32_t len = telemetry_push(room.data(), n, n + 40, 1, 2, 3, 4);
  require(len == n || len == n + sizeof(TelemetryHop));
  (void)datagram_end(frame.data(), n);
  (void)peek_dest_qp(frame.data(), n);
  return 0;
}
