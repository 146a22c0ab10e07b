// Unreliable Datagram QPs and address handles (IBA 9.8.3, 10.2.5, 11.4.1.1).
//
// A UD QP sends SEND Only (with or without immediate) packets: one per
// message, a message at most the path MTU, each with a DETH carrying the
// Q_Key and the sender's QP number, to the address handle, QP and Q_Key its
// WR names. Nothing is acknowledged: a WR completes once its frame is handed
// to the host (or to the internal loop), as rxe completes UD sends. A
// receiver checks the Q_Key against its QP's and drops (and counts) a
// mismatch or a message for which no receive is posted; a delivered message
// lands after the 40 bytes the receive buffer keeps for the GRH, which on
// RoCEv2 holds the network header: an IPv6 header fills them, an IPv4 header
// takes the last 20 after 20 zero bytes (as Linux's rdma_network_hdr lays
// it out and rxe fills it). The completion names the source QP and says
// IBV_WC_GRH.
//
// Address handles resolve their destination's MAC as RC QPs do (ARP through
// the neighbour table, our own MAC for our own GID); a WR to a handle still
// waiting stays at the head of its send queue until the answer comes, and
// fails with kRetryExcErr if none does.
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "engine_impl.h"

namespace tita::engine {

namespace {

bool mac_zero(const uint8_t m[6]) { return (m[0] | m[1] | m[2] | m[3] | m[4] | m[5]) == 0; }

}  // namespace

// ---------------------------------------------------------------- address handles

int Engine::create_ah(uint32_t pd, const AhAttr& attr, uint32_t* out) {
  Impl& m = *impl_;
  if (pd == 0 || pd >= m.pds.size() || !m.pds[pd]) return -EINVAL;
  if (attr.dgid == wire::Gid{}) return -EINVAL;
  if (mac_zero(attr.dmac) && !attr.dgid.is_ipv4() && !(attr.dgid == m.cfg.gid)) return -EINVAL;
  if (m.ahs.empty()) m.ahs.emplace_back();  // number 0 is no handle
  uint32_t index = 1;
  while (index < m.ahs.size() && m.ahs[index].valid) ++index;
  if (index == m.ahs.size()) m.ahs.emplace_back();
  Ah& ah = m.ahs[index];
  ah = Ah{};
  ah.attr = attr;
  ah.pd = pd;
  ah.valid = true;
  ah.loopback = m.cfg.loopback && attr.dgid == m.cfg.gid;
  ah.state = Ah::State::kPending;
  if (!mac_zero(ah.attr.dmac)) {
    ah.state = Ah::State::kResolved;
  } else if (attr.dgid == m.cfg.gid) {
    std::memcpy(ah.attr.dmac, m.cfg.mac, 6);
    ah.state = Ah::State::kResolved;
  } else if (m.neighbour_mac(attr.dgid.ipv4(), ah.attr.dmac)) {
    ah.state = Ah::State::kResolved;
  }
  if (ah.state == Ah::State::kResolved) m.ah_build(ah);
  *out = index;
  return 0;
}

int Engine::destroy_ah(uint32_t index) {
  Impl& m = *impl_;
  if (index == 0 || index >= m.ahs.size() || !m.ahs[index].valid) return -EINVAL;
  m.ahs[index].valid = false;
  return 0;
}

int Engine::query_ah(uint32_t index, AhAttr* out) const {
  const Impl& m = *impl_;
  if (index == 0 || index >= m.ahs.size() || !m.ahs[index].valid) return -EINVAL;
  const Ah& ah = m.ahs[index];
  if (out != nullptr) *out = ah.attr;
  switch (ah.state) {
    case Ah::State::kResolved: return 0;
    case Ah::State::kPending: return -EAGAIN;
    case Ah::State::kFailed: return -EHOSTUNREACH;
  }
  return -EINVAL;
}

uint32_t Engine::ud_max_message_bytes() const { return impl_->ud_mtu(); }

void Engine::Impl::ah_build(Ah& ah) {
  wire::PathFields f;
  std::memcpy(f.dst_mac, ah.attr.dmac, 6);
  std::memcpy(f.src_mac, cfg.mac, 6);
  f.vlan = ah.attr.vlan;
  f.pcp = ah.attr.pcp;
  f.vid = ah.attr.vid;
  f.src_gid = cfg.gid;
  f.dst_gid = ah.attr.dgid;
  f.dscp = ah.attr.traffic_class >> 2;
  f.ttl = cfg.initial_ttl;
  f.flow_label = ah.attr.udp_sport;
  f.udp_src_port = ah.attr.udp_sport;  // 0: per frame, from the two QP numbers
  ah.hdr.init(f);
}

void Engine::Impl::ah_learned(uint32_t ipv4, const uint8_t mac[6]) {
  bool any = false;
  for (Ah& ah : ahs) {
    if (!ah.valid || ah.state == Ah::State::kResolved || !ah.attr.dgid.is_ipv4() || ah.attr.dgid.ipv4() != ipv4) {
      continue;
    }
    std::memcpy(ah.attr.dmac, mac, 6);
    ah.state = Ah::State::kResolved;
    ah_build(ah);
    any = true;
  }
  if (!any) return;
  for (auto& q : qps) {  // UD QPs whose next WR waited for it
    if (q && q->valid && q->ud) reconsider(*q);
  }
}

void Engine::Impl::ah_failed(uint32_t ipv4) {
  bool any = false;
  for (Ah& ah : ahs) {
    if (ah.valid && ah.state == Ah::State::kPending && ah.attr.dgid.is_ipv4() && ah.attr.dgid.ipv4() == ipv4) {
      ah.state = Ah::State::kFailed;
      any = true;
    }
  }
  if (!any) return;
  for (auto& q : qps) {  // their waiting WRs fail now
    if (q && q->valid && q->ud) reconsider(*q);
  }
}

// ---------------------------------------------------------------- sending

uint32_t Engine::Impl::ud_mtu() const {
  // As the port's active MTU: the largest path MTU whose frames it carries.
  AhAttr self;
  self.dgid = cfg.gid;
  for (uint32_t mtu = 4096; mtu > 256; mtu /= 2) {
    if (cfg.max_frame_bytes == 0 || max_frame_for(self, mtu) <= cfg.max_frame_bytes) return mtu;
  }
  return 256;
}

int Engine::Impl::ud_check_wr(const Qp& qp, const SendWr& wr, uint64_t length) const {
  if (!is_send(wr.opcode)) return -EINVAL;  // UD carries SENDs only
  if (length > ud_mtu()) return -EINVAL;    // one packet per message
  if (wr.ud.ah == 0 || wr.ud.ah >= ahs.size() || !ahs[wr.ud.ah].valid || ahs[wr.ud.ah].pd != qp.pd) return -EINVAL;
  if (wr.ud.remote_qpn > wire::kPsnMask) return -EINVAL;
  return 0;
}

bool Engine::Impl::ud_has_work(const Qp& qp) const {
  if (qp.state != QpState::kRts || qp.req.sq_next == qp.req.sq_tail) return false;
  const SendWqe& w = qp.req.sq[qp.req.sq_next];
  // A handle destroyed after the post fails its WR (below); one waiting for ARP holds the queue.
  return w.ud_ah >= ahs.size() || !ahs[w.ud_ah].valid || ahs[w.ud_ah].state != Ah::State::kPending;
}

bool Engine::Impl::ud_send_one(Qp& qp) {
  if (!ud_has_work(qp)) return false;
  const uint32_t index = qp.req.sq_next;
  SendWqe& w = qp.req.sq[index];
  const bool ah_ok = w.ud_ah < ahs.size() && ahs[w.ud_ah].valid;
  if (!ah_ok || ahs[w.ud_ah].state == Ah::State::kFailed) {
    // Nowhere to send: the WR fails as a lost peer does (IBA's UD has no
    // retries); the QP goes on with the next.
    complete(qp.send_cq, {w.wr_id, ah_ok ? WcStatus::kRetryExcErr : WcStatus::kLocQpOpErr, WcOpcode::kSend, false, 0,
                          0, qp.qpn});
    qp.comp.sq_head = qp.req.sq_next = (index + 1) & (qp.sq_size() - 1);
    return false;
  }
  const Ah& ah = ahs[w.ud_ah];
  // Local SGEs: in MRs of the QP's PD (inline data was copied at post time).
  for (uint32_t i = 0; !w.inline_data && i < w.num_sge; ++i) {
    const Mr* mr = mr_by_key(w.sge[i].lkey);
    if (mr == nullptr || mr->pd != qp.pd || !mr->contains(w.sge[i].addr, w.sge[i].length)) {
      to_error(qp, WcStatus::kLocProtErr, index);
      return false;
    }
  }
  wire::Segment segs[TxFrame::kMaxPayloadSegments];
  bool phantom = false;
  bool ok = true;
  const uint32_t nseg = gather(*this, w, 0, w.length, segs, &phantom, &ok);
  if (!ok) {
    to_error(qp, WcStatus::kLocProtErr, index);
    return false;
  }
  wire::TransportFields t;
  t.opcode = w.opcode == WrOpcode::kSendWithImm ? wire::Opcode::kUdSendOnlyImm : wire::Opcode::kUdSendOnly;
  t.se = w.solicited;
  t.psn = qp.req.snd_nxt;
  // A Q_Key with its high bit set means the QP's own (IBA 10.2.5).
  t.qkey = (w.ud_qkey & 0x80000000u) ? qp.cold.attr.qkey : w.ud_qkey;
  t.src_qp = qp.qpn;
  t.imm = w.imm;
  const FrameRoute route{
      .udp_sport = ah.attr.udp_sport ? ah.attr.udp_sport : roce_udp_sport(qp.qpn, w.ud_qpn),
      .dest_qp = w.ud_qpn,
      .priority = ah.attr.vlan ? ah.attr.pcp : uint8_t{0},
      .loopback = ah.loopback,
      .transient = true,  // it completes as it is handed over (below)
  };
  if (ah.loopback && loop_count + 1 > loop.size() && !loop.empty()) loop_deliver();
  emit_frame(qp, ah.hdr, route, t, segs, nseg, w.length, phantom, false);
  // Complete only once the host has the frame: its payload is the application's
  // until the WR completes (PacketIo::transmit_burst).
  if (!ah.loopback) tx_flush();
  ++qp.cold.counters.tx_data_packets;
  qp.cold.counters.tx_payload_bytes += w.length;
  qp.req.snd_nxt = wire::psn_add(qp.req.snd_nxt, 1);
  if (w.signaled) complete(qp.send_cq, {w.wr_id, WcStatus::kSuccess, WcOpcode::kSend, false, 0, 0, qp.qpn});
  qp.comp.sq_head = qp.req.sq_next = (index + 1) & (qp.sq_size() - 1);
  return true;
}

// ---------------------------------------------------------------- receiving

void Engine::Impl::ud_receive(Qp& qp, const wire::Packet& pkt) {
  const wire::Deth& deth = *pkt.deth();
  if (deth.qkey.get() != qp.cold.attr.qkey) [[unlikely]] {
    ++counters.rx_bad_qkey;
    ++counters.rx_dropped;
    ++qp.cold.counters.qkey_violations;
    return;
  }
  ++qp.cold.counters.rx_packets;
  if (qp.resp.rq_head == qp.resp.rq_tail) [[unlikely]] {
    ++counters.rx_ud_no_recv;
    ++counters.rx_dropped;
    ++qp.cold.counters.ud_dropped_no_recv;
    return;
  }
  const RecvWqe& r = qp.resp.rq[qp.resp.rq_head];
  const uint32_t len = pkt.payload_len;
  WorkCompletion wc{r.wr_id, WcStatus::kSuccess, WcOpcode::kRecv, false, 0, 0, qp.qpn};
  wc.src_qp = deth.src_qp.get();
  wc.grh = true;
  if (uint64_t{len} + kGrhBytes > r.length) {
    wc.status = WcStatus::kLocLenErr;  // the WQE is used up, the QP goes on (rxe does the same)
  } else if (!receive_sges_valid(*this, r, qp.pd)) {
    wc.status = WcStatus::kLocProtErr;
  } else {
    uint8_t grh[kGrhBytes] = {};
    if (pkt.ip_version == 6) {
      std::memcpy(grh, &pkt.ipv6(), sizeof(wire::Ipv6Hdr));
    } else {
      std::memcpy(grh + kGrhBytes - sizeof(wire::Ipv4Hdr), &pkt.ipv4(), sizeof(wire::Ipv4Hdr));
    }
    scatter(*this, r, qp.pd, 0, grh, kGrhBytes);
    scatter(*this, r, qp.pd, kGrhBytes, pkt.payload(), len);
    wc.byte_len = len + kGrhBytes;
    if (pkt.op->has(wire::kHasImm)) {
      wc.with_imm = true;
      wc.imm_data = pkt.imm()->imm.get();
    }
    qp.cold.counters.rx_payload_bytes += len;
  }
  qp.resp.rq_head = (qp.resp.rq_head + 1) & qp.resp.rq_mask;
  complete(qp.recv_cq, wc, pkt.bth().se());
}

}  // namespace tita::engine
