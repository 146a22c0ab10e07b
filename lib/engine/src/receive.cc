// Receive dispatch: a frame from the host (or the internal loop) checked in
// order - ARP, parse, for us, known QP, P_Key, QP state, transport, source
// address - and handed to the responder (requests), the completer
// (responses), congestion control (CNPs) or, for UD QPs, ud.cc.
#include <algorithm>
#include <cstring>

#include "engine_impl.h"
#include "tita/wire/arp.h"

namespace tita::engine {

void Engine::receive(uint64_t now_ns, const uint8_t* frame, uint32_t len) {
  Impl& m = *impl_;
  m.now_ns = std::max(m.now_ns, now_ns);
  m.receive_frame(frame, len);
  m.settle();
}

void Engine::Impl::receive_frame(const uint8_t* frame, uint32_t len) {
  ++counters.rx_frames;
  // The fast path (fast_path.cc) takes what it handles whole; everything else
  // is parsed and dispatched below, the reference it is tested against.
  if (cfg.fast_path && receive_fast(frame, len)) return;
  if (wire::ethertype_of(frame, len) == wire::kEtherTypeArp) [[unlikely]] {
    on_arp(frame, len);
    return;
  }
  wire::Packet pkt;
  const wire::ParseError e =
      wire::parse(frame, len, &pkt, {.verify_icrc = cfg.verify_icrc, .verify_ip_checksum = true});
  if (e != wire::ParseError::kOk) [[unlikely]] {
    ++counters.rx_parse_errors[static_cast<size_t>(e)];
    ++counters.rx_dropped;
    return;
  }
  // Only frames for this port's MAC and this engine's address are RoCE for us
  // (a promiscuous port delivers everything on the segment).
  const bool for_us = std::memcmp(pkt.eth().dst, cfg.mac, 6) == 0 &&
                      (pkt.ip_version == 4 ? cfg.gid.is_ipv4() && std::memcmp(pkt.ipv4().dst, cfg.gid.ipv4_bytes(), 4) == 0
                                           : std::memcmp(pkt.ipv6().dst, cfg.gid.raw, 16) == 0);
  if (!for_us) [[unlikely]] {
    ++counters.rx_not_for_us;
    ++counters.rx_dropped;
    return;
  }
  Qp* qp = qp_by_num(pkt.dest_qp());
  if (qp == nullptr) [[unlikely]] {
    ++counters.rx_unknown_qp;
    ++counters.rx_dropped;
    return;
  }
  if (pkt.bth().pkey.get() != wire::kDefaultPkey) [[unlikely]] {
    ++counters.rx_bad_pkey;
    ++counters.rx_dropped;
    return;
  }
  const bool ready = qp->state == QpState::kRtr || qp->state == QpState::kRts;
  if (!ready) [[unlikely]] {
    ++counters.rx_qp_not_ready;
    ++counters.rx_dropped;
    return;
  }
  if (pkt.op->ud != qp->ud) [[unlikely]] {  // UD opcodes for UD QPs, RC ones for RC QPs
    ++counters.rx_wrong_transport;
    ++counters.rx_dropped;
    return;
  }
  if (qp->ud) {  // datagrams: from anyone, checked by Q_Key (ud.cc)
    ud_receive(*qp, pkt);
    return;
  }
  // A connected QP takes frames from its peer only (rxe's check_addr): any
  // other source is silently dropped, so a spoofer must also forge the peer's
  // address, not just guess a QPN.
  if (!pkt.src_is(qp->cold.attr.ah_attr.dgid)) [[unlikely]] {
    ++counters.rx_wrong_source;
    ++counters.rx_dropped;
    return;
  }
  ++qp->cold.counters.rx_packets;
  if (pkt.trailer_len != 0 && !qp->peer_tita) [[unlikely]] qp->learn_peer_tita();
  const wire::OpcodeInfo& op = *pkt.op;
  if (op.kind == wire::Kind::kCnp) {
    on_cnp(*qp);
  } else if (op.is_request()) {
    if (qp->mac_pending) {
      // The peer reached us before ARP answered: its frame names its MAC.
      learn(qp->cold.attr.ah_attr.dgid.ipv4(), pkt.eth().src, false);
    }
    if (qp->cold.path && qp->cold.path->cfg.follow_peer) path_follow(*qp, pkt);
    respond(*qp, pkt, false);
    // A request changes what the QP may send only by the READ responses and
    // atomic acknowledgements it now owes (ACKs and NAKs are control frames).
    if (qp->resp.reads_count > 0) reconsider(*qp);
    return;
  } else if (qp->state == QpState::kRts) {
    complete_response(*qp, pkt);
  } else {
    ++counters.rx_qp_not_ready;
    ++counters.rx_dropped;
  }
  reconsider(*qp);
}

}  // namespace tita::engine
