// The receive fast path: the frames of the common case - an RC QP in RTS
// taking in-order WRITEs (First, Middle, Last, Only, no immediate) and ACKs
// from its peer - checked against what the QP expects (RxExpect: a masked
// compare of the first 56 bytes, where the general path walks Ethernet and
// IP field by field and then looks for the QP, its P_Key, state and source)
// and handed to the same responder steps and completer the general path
// runs. A frame it does not handle whole returns untouched to the general
// path (receive.cc), which stays the reference: tests/engine/fast_path_test.cc
// feeds both the same random frame sequences and compares everything.
//
// What the fast path leaves to the general path: ARP, IPv6, 802.1Q tags, IPv4
// options, CNPs, SENDs, READs, atomics, WRITE with immediate (SRQ and UD
// frames are among these), any QP not in RTS, a WRITE out of order or that a
// check would NAK, a CE-marked WRITE (a CNP may be due), a QP waiting for
// ARP, following the peer's path, owing READ responses, keeping frames out
// of order or closing on a fatal NAK.
//
// One pass over payload bytes: a WRITE Middle or Last in order has its ICRC
// summed as its payload is copied into the region (wire::icrc_check_copy), not
// in a pass before. First and Only are checked first: their RETH says where
// the bytes go, and a header is trusted only once its ICRC is.
#include <array>
#include <bit>
#include <cstring>
#include <string>

#include "engine_impl.h"

namespace tita::engine {
namespace {

// Offsets in an untagged IPv4 frame without options.
constexpr uint32_t kL3 = sizeof(wire::EthHdr);
constexpr uint32_t kL4 = kL3 + sizeof(wire::Ipv4Hdr);
constexpr uint32_t kBth = kL4 + sizeof(wire::UdpHdr);
constexpr uint32_t kDestQp = kBth + 5;  // BTH bytes 5-7
static_assert(kBth + sizeof(wire::Bth) <= RxExpect::kBytes);

// Which bits of the first RxExpect::kBytes bytes the compare checks.
constexpr std::array<uint8_t, RxExpect::kBytes> kMaskBytes = [] {
  std::array<uint8_t, RxExpect::kBytes> m{};
  auto set = [&](uint32_t at, uint32_t n, uint8_t v = 0xff) {
    for (uint32_t i = 0; i < n; ++i) m[at + i] = v;
  };
  set(0, 6);                    // destination MAC (the source MAC, like the general path, unchecked)
  set(12, 2);                   // ethertype IPv4 (a VLAN tag differs)
  set(kL3, 1);                  // version 4, header 20 bytes
  set(kL3 + 6, 1, 0x3f);        // fragment: MF and offset zero (DF free)
  set(kL3 + 7, 1);
  set(kL3 + 9, 1);              // protocol UDP
  set(kL3 + 12, 8);             // source and destination address
  set(kL4 + 2, 2);              // UDP destination port
  set(kBth + 1, 1, 0x0f);       // BTH transport version
  set(kBth + 2, 2);             // P_Key
  set(kDestQp, 3);              // destination QP
  return m;
}();

uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

constexpr std::array<uint64_t, RxExpect::kWords> kMask = [] {
  std::array<uint64_t, RxExpect::kWords> w{};
  for (uint32_t i = 0; i < RxExpect::kBytes; ++i) {
    w[i / 8] |= uint64_t{kMaskBytes[i]} << (8 * (i % 8));  // little-endian words, as load64 reads them
  }
  return w;
}();
static_assert(std::endian::native == std::endian::little);

}  // namespace

void Engine::Impl::fast_path_prepare(Qp& qp) {
  RxExpect& x = qp.cold.rx_expect;
  x = RxExpect{};
  const wire::Gid& peer = qp.cold.attr.ah_attr.dgid;
  // Frames from an IPv6 peer, or to an IPv6 address, take the general path.
  if (!cfg.gid.is_ipv4() || !peer.is_ipv4()) return;
  uint8_t b[RxExpect::kBytes] = {};
  std::memcpy(b, cfg.mac, 6);
  b[12] = wire::kEtherTypeIpv4 >> 8;
  b[13] = wire::kEtherTypeIpv4 & 0xff;
  b[kL3] = 0x45;
  b[kL3 + 9] = wire::kIpProtoUdp;
  std::memcpy(b + kL3 + 12, peer.ipv4_bytes(), 4);
  std::memcpy(b + kL3 + 16, cfg.gid.ipv4_bytes(), 4);
  b[kL4 + 2] = wire::kRoceUdpPort >> 8;
  b[kL4 + 3] = wire::kRoceUdpPort & 0xff;
  b[kBth + 2] = wire::kDefaultPkey >> 8;
  b[kBth + 3] = wire::kDefaultPkey & 0xff;
  b[kDestQp] = static_cast<uint8_t>(qp.qpn >> 16);
  b[kDestQp + 1] = static_cast<uint8_t>(qp.qpn >> 8);
  b[kDestQp + 2] = static_cast<uint8_t>(qp.qpn);
  for (uint32_t i = 0; i < RxExpect::kWords; ++i) x.word[i] = load64(b + 8 * i) & kMask[i];
  x.on = true;
}

bool Engine::Impl::receive_fast(const uint8_t* frame, uint32_t len) {
  if (len < RxExpect::kBytes) return false;
  const uint32_t qpn = uint32_t{frame[kDestQp]} << 16 | uint32_t{frame[kDestQp + 1]} << 8 | frame[kDestQp + 2];
  Qp* qp = qp_by_num(qpn);
  if (qp == nullptr || qp->state != QpState::kRts) return false;
  const RxExpect& x = qp->cold.rx_expect;
  if (!x.on) return false;
  uint64_t diff = 0;
  for (uint32_t i = 0; i < RxExpect::kWords; ++i) diff |= (load64(frame + 8 * i) ^ x.word[i]) & kMask[i];
  if (diff != 0) return false;
  // What of Ethernet and IP the compare leaves: the checksum and the lengths
  // (parse_l3's checks), then the rest as parse() does it.
  const auto& ip = *reinterpret_cast<const wire::Ipv4Hdr*>(frame + kL3);
  if (wire::ipv4_checksum(ip) != ip.checksum.get()) return false;
  const uint32_t total = ip.total_len.get();
  if (total < sizeof(wire::Ipv4Hdr) + sizeof(wire::UdpHdr) || len < kL3 + total) return false;
  const wire::OpcodeInfo& op = wire::opcode_info(frame[kBth]);
  const bool ack = op.kind == wire::Kind::kAck;
  if (!ack && !(op.kind == wire::Kind::kWrite && !op.has(wire::kHasImm))) return false;
  wire::Packet pkt;
  pkt.frame = frame;
  pkt.frame_len = len;
  pkt.l3_offset = kL3;
  pkt.l4_offset = kL4;
  pkt.ip_version = 4;
  pkt.dscp = ip.dscp();
  pkt.ecn = ip.ecn();
  // A WRITE Middle or Last has its ICRC checked as its payload is placed
  // (respond_fast); every other frame here before anything is done with it.
  const bool icrc_when_placed = cfg.verify_icrc && !ack && !op.starts_message();
  if (wire::parse_transport(frame, len, kL3 + total, &pkt, {.verify_icrc = cfg.verify_icrc && !icrc_when_placed}) !=
      wire::ParseError::kOk) {
    return false;
  }
  // From here on as receive_frame() goes on after its checks.
  if (pkt.trailer_len != 0 && !qp->peer_tita) {
    if (icrc_when_placed) return false;  // nothing is learnt from a frame not yet checked
    qp->learn_peer_tita();               // the general path would too
  }
  if (ack) {
    ++qp->cold.counters.rx_packets;
    complete_response(*qp, pkt);
    reconsider(*qp);
    ++counters.rx_fast;
    return true;
  }
  if (qp->mac_pending || (qp->cold.path && qp->cold.path->cfg.follow_peer) || pkt.ecn == wire::kEcnCe ||
      qp->resp.closing || qp->resp.reads_count != 0 || qp->resp.ooo_head != kNil) {
    return false;
  }
  if (!respond_fast(*qp, pkt, icrc_when_placed)) return false;
  ++qp->cold.counters.rx_packets;
  ++counters.rx_fast;
  return true;
}

std::string Engine::qp_state_text(uint32_t qp_num) const {
  Impl& m = *impl_;
  const Qp* q = m.qp_by_num(qp_num);
  if (q == nullptr) return "no QP";
  const Qp& qp = *q;
  std::string s;
  auto put = [&](const char* name, uint64_t v) {
    s += name;
    s += '=';
    s += std::to_string(v);
    s += ' ';
  };
  put("state", static_cast<uint64_t>(qp.state));
  put("in_ready", qp.in_ready);
  put("mac_pending", qp.mac_pending);
  put("peer_tita", qp.peer_tita);
  const ReqState& r = qp.req;
  put("req.sq_next", r.sq_next);
  put("req.sq_tail", r.sq_tail);
  put("req.snd_nxt", r.snd_nxt);
  put("req.snd_max", r.snd_max);
  put("req.retx_count", r.retx_count);
  put("req.nxt_bytes", r.nxt_bytes);
  put("req.max_bytes", r.max_bytes);
  put("req.next_seq", r.next_seq);
  put("req.next_send_ps", r.next_send_ps);
  put("req.parts_tail", r.parts_tail);
  put("req.asked_psn", r.asked_psn);
  put("req.ack_every", r.ack_every);
  put("req.asked", r.asked);
  put("req.rereq_count", r.rereq_count);
  const CompState& c = qp.comp;
  put("comp.sq_head", c.sq_head);
  put("comp.holding", c.holding);
  put("comp.snd_una", c.snd_una);
  put("comp.acked_psn", c.acked_psn);
  put("comp.parts_head", c.parts_head);
  put("comp.una_bytes", c.una_bytes);
  put("comp.rto_deadline_ns", c.rto_deadline_ns);
  put("comp.rnr_deadline_ns", c.rnr_deadline_ns);
  put("comp.rnr_psn", c.rnr_psn);
  put("comp.read_in_flight", c.read_in_flight);
  put("comp.reorder_pkts", c.reorder_pkts);
  put("comp.retry_left", c.retry_left);
  put("comp.rnr_left", c.rnr_left);
  put("comp.backoff", c.backoff);
  const RespState& p = qp.resp;
  put("resp.rq_head", p.rq_head);
  put("resp.rq_tail", p.rq_tail);
  put("resp.epsn", p.epsn);
  put("resp.msn", p.msn);
  put("resp.recv_offset", p.recv_offset);
  put("resp.write_va", p.write_va);
  put("resp.write_remaining", p.write_remaining);
  put("resp.write_total", p.write_total);
  put("resp.write_mr", p.write_mr);
  put("resp.unacked", p.unacked);
  put("resp.reads_count", p.reads_count);
  put("resp.ooo_count", p.ooo_count);
  put("resp.waiting_ack", p.waiting_ack);
  put("resp.waiting_cnp", p.waiting_cnp);
  put("resp.in_message", static_cast<uint64_t>(p.in_message));
  put("resp.ce_unacked", p.ce_unacked);
  put("resp.nak_sent", p.nak_sent);
  put("resp.closing", p.closing);
  const QpCold& k = qp.cold;
  put("comm_est", k.comm_est);
  put("reads_head", k.reads_head);
  put("deferred_ack", k.deferred_ack);
  put("deferred_syndrome", k.deferred_syndrome);
  put("deferred_psn", k.deferred_psn);
  put("atomic_next", k.atomic_next);
  put("probe.armed", k.probe.armed);
  put("probe.psn", k.probe.psn);
  put("probe.sent_ns", k.probe.sent_ns);
  put("flow.rate_bps", qp.flow.rate_bps());
  put("flow.cwnd_bytes", qp.flow.cwnd_bytes());
  for (const auto* bits : {&k.sacked, &k.retx, &k.retx_done}) {
    for (uint64_t w : *bits) put("sr", w);
  }
  for (uint32_t slot = p.ooo_head; slot != kNil; slot = m.ooo[slot].next) {
    put("ooo.psn", m.ooo[slot].psn);
    put("ooo.len", m.ooo[slot].len);
  }
  return s;
}

}  // namespace tita::engine
