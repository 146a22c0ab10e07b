// The requester: segmentation of work requests into request packets, READ
// responses for the peer's READs, pacing, windows, retransmission.
//
// A QP sends, in this order of preference: selective-repeat retransmissions,
// READ responses it owes the peer, then new request packets. Each data packet
// advances the pacing clock by its wire time at the congestion-control rate; the
// window caps payload bytes in flight.
#include <algorithm>
#include <cstring>

#include "engine_impl.h"

namespace tita::engine {

using wire::Opcode;
using wire::psn_add;
using wire::psn_after;
using wire::psn_before;
using wire::psn_distance;

namespace {

constexpr uint64_t kPicosPerNs = 1000;
constexpr uint32_t kEthernetOverheadBytes = 24;  // preamble 8, FCS 4, inter-frame gap 12
constexpr uint32_t kMaxOutstandingPsns = 1u << 22;

// Request opcode for packet `idx` of `npkts` of a SEND or WRITE.
Opcode request_opcode(WrOpcode op, uint32_t idx, uint32_t npkts) {
  const bool first = idx == 0;
  const bool last = idx + 1 == npkts;
  const bool imm = has_imm(op);
  if (is_send(op)) {
    if (first && last) return imm ? Opcode::kSendOnlyImm : Opcode::kSendOnly;
    if (first) return Opcode::kSendFirst;
    if (last) return imm ? Opcode::kSendLastImm : Opcode::kSendLast;
    return Opcode::kSendMiddle;
  }
  if (first && last) return imm ? Opcode::kWriteOnlyImm : Opcode::kWriteOnly;
  if (first) return Opcode::kWriteFirst;
  if (last) return imm ? Opcode::kWriteLastImm : Opcode::kWriteLast;
  return Opcode::kWriteMiddle;
}

Opcode read_response_opcode(uint32_t idx, uint32_t npkts) {
  if (npkts == 1) return Opcode::kReadResponseOnly;
  if (idx == 0) return Opcode::kReadResponseFirst;
  if (idx + 1 == npkts) return Opcode::kReadResponseLast;
  return Opcode::kReadResponseMiddle;
}

// Pacing: a data packet occupies the QP's share of the wire for its wire time at
// the congestion-control rate. At line rate the NIC is the only limit.
void pace(Qp& qp, uint64_t now_ns, const EngineConfig& cfg, uint32_t frame_bytes) {
  const uint64_t rate = std::min(qp.flow.rate_bps(), cfg.line_rate_bps);
  const uint64_t now_ps = now_ns * kPicosPerNs;
  if (rate == 0 || (rate == cfg.line_rate_bps && !cfg.pace_line_rate)) {
    qp.next_send_ps = now_ps;
    return;
  }
  const uint64_t bits = uint64_t{frame_bytes + kEthernetOverheadBytes} * 8;
  const uint64_t slack_ps = cfg.pacing_slack_ns * kPicosPerNs;
  const uint64_t floor_ps = now_ps > slack_ps ? now_ps - slack_ps : 0;
  qp.next_send_ps = std::max(qp.next_send_ps, floor_ps) + bits * 1'000'000'000'000ull / rate;
}

}  // namespace

// ---------------------------------------------------------------- eligibility

bool Engine::Impl::can_send_new(const Qp& qp) const {
  if (qp.state != QpState::kRts || qp.rnr_deadline_ns != kNever || qp.sq_next == qp.sq_tail) return false;
  const SendWqe& w = qp.sq[qp.sq_next];
  const uint32_t outstanding = psn_distance(qp.snd_nxt, qp.snd_una);
  if (outstanding >= kMaxOutstandingPsns) return false;
  // The selective-repeat window bounds the request packets the responder may
  // have to keep; a READ asked again for its missing responses adds none.
  if (qp.selective() && outstanding >= cfg.sr_window && !(w.started && w.is_read())) return false;
  // A fenced WR waits for every earlier READ and atomic to complete.
  if (w.fence && !w.started && qp.reads_outstanding > 0) return false;
  if (w.needs_response()) return w.started || qp.reads_outstanding < qp.rd_atomic_limit();
  const uint64_t cwnd = qp.flow.cwnd_bytes();
  return qp.inflight_bytes() == 0 || qp.inflight_bytes() < cwnd;
}

bool Engine::Impl::has_work(const Qp& qp) const {
  if (qp.mac_pending) return false;     // nowhere to send yet (ARP)
  if (qp.reads_count > 0) return true;  // READ responses owed to the peer
  if (qp.state != QpState::kRts || qp.rnr_deadline_ns != kNever) return false;
  return qp.retx_count > 0 || can_send_new(qp);
}

// ---------------------------------------------------------------- sequence space

// The send WR whose PSNs include psn; sq_next when psn is where new packets start.
uint32_t Engine::Impl::wqe_index_of(const Qp& qp, uint32_t psn) const {
  const uint32_t mask = qp.sq_size() - 1;
  auto holds = [&](uint32_t i) {
    const SendWqe& w = qp.sq[i];
    return w.started && !psn_before(psn, w.first_psn) && psn_before(psn, psn_add(w.first_psn, w.npkts));
  };
  // The oldest WR (ACKs) and the one being sent (new packets) answer almost every
  // lookup; snd_nxt always lies in sq_next's WR or is where that WR will start.
  if (qp.sq_head != qp.sq_tail && holds(qp.sq_head)) return qp.sq_head;
  if (psn == qp.snd_nxt || (qp.sq_next != qp.sq_tail && holds(qp.sq_next))) return qp.sq_next;
  for (uint32_t i = qp.sq_head; i != qp.sq_tail; i = (i + 1) & mask) {
    const SendWqe& w = qp.sq[i];
    if (!w.started) return i;
    if (!psn_before(psn, w.first_psn) && psn_before(psn, psn_add(w.first_psn, w.npkts))) return i;
  }
  return qp.sq_tail;
}

// Payload bytes sent before PSN psn, in the QP's cumulative sequence space.
uint64_t Engine::Impl::seq_position(const Qp& qp, uint32_t psn) const {
  const uint32_t i = wqe_index_of(qp, psn);
  if (i == qp.sq_tail || !qp.sq[i].started) return qp.next_seq;
  const SendWqe& w = qp.sq[i];
  if (w.needs_response()) return w.seq_start;
  const uint64_t off = uint64_t{psn_distance(psn, w.first_psn)} * qp.mtu();
  return w.seq_start + std::min<uint64_t>(w.length, off);
}

// ---------------------------------------------------------------- sending

// AckReq on a new request packet. Every ack_every-th PSN asks (with 1, every
// packet: what INT algorithms need). Between those a packet asks only where
// nothing would bring an ACK otherwise, since a responder ACKs only what asks
// (IBA's rule: Linux rxe, RoCE NICs): the last packet of the last WR posted
// (its completion waits for it), and a packet that fills the congestion or PSN
// window while no packet that asked is still unacknowledged (the window opens
// only with an ACK). ACKs are cumulative, and a tita responder's ACK counts the
// CE marks of every packet it covers.
bool Engine::Impl::ack_request_wanted(const Qp& qp, const SendWqe& w, uint32_t psn, uint32_t len,
                                      bool last) const {
  if (qp.ack_every <= 1 || psn % qp.ack_every == 0) return true;
  const uint32_t next_wr = (static_cast<uint32_t>(&w - qp.sq.data()) + 1) & (qp.sq_size() - 1);
  if (last && next_wr == qp.sq_tail) return true;
  if (qp.asked && !psn_before(qp.asked_psn, qp.snd_una)) return false;  // its ACK will open the window
  const uint32_t outstanding = psn_distance(psn_add(psn, 1), qp.snd_una);
  if (outstanding >= kMaxOutstandingPsns || (qp.selective() && outstanding >= cfg.sr_window)) return true;
  return qp.inflight_bytes() + len >= qp.flow.cwnd_bytes();
}

// Checks the WR's local buffers and gives it its PSNs and sequence space.
bool Engine::Impl::start_wqe(Qp& qp, SendWqe& w) {
  // Inline data was copied at post time; READ and atomic results land in memory
  // that must allow local writes.
  for (uint32_t i = 0; !w.inline_data && i < w.num_sge; ++i) {
    const Sge& s = w.sge[i];
    const Mr* mr = mr_by_key(s.lkey);
    const bool ok = mr != nullptr && mr->pd == qp.pd && mr->contains(s.addr, s.length) &&
                    (!w.needs_response() || (mr->access & kAccessLocalWrite));
    if (!ok) {
      // The WR fails with a local protection error; the QP goes to error (IBA 10.8.3).
      const WcStatus status = (mr != nullptr && w.needs_response() && mr->contains(s.addr, s.length))
                                  ? WcStatus::kLocAccessErr
                                  : WcStatus::kLocProtErr;
      to_error(qp, status, static_cast<uint32_t>(&w - qp.sq.data()));
      return false;
    }
  }
  w.first_psn = qp.snd_nxt;
  w.npkts = w.is_atomic() ? 1 : qp.packets_for(w.length);
  w.seq_start = qp.next_seq;
  w.read_pkts = 0;
  w.started = true;
  if (w.needs_response()) {
    ++qp.reads_outstanding;
  } else {
    qp.next_seq += w.length;
  }
  return true;
}

namespace {

// Collects the payload pieces of [offset, offset + len) of a WR's SGE list.
uint32_t gather(const Engine::Impl& m, const SendWqe& w, uint32_t offset, uint32_t len, wire::Segment* out,
                bool* phantom, bool* ok) {
  uint32_t n = 0;
  *ok = true;
  if (w.inline_data) {  // one SGE: the QP's copy of the bytes
    if (len > 0) out[n++] = {reinterpret_cast<const uint8_t*>(w.sge[0].addr) + offset, len};
    return n;
  }
  const Sge* sge = w.sge;
  for (uint32_t i = 0; i < w.num_sge && len > 0; ++i) {
    if (offset >= sge[i].length) {
      offset -= sge[i].length;
      continue;
    }
    const uint32_t take = std::min(len, sge[i].length - offset);
    const Mr* mr = m.mr_by_key(sge[i].lkey);
    if (mr == nullptr) {  // deregistered while the WR was outstanding
      *ok = false;
      return 0;
    }
    *phantom |= mr->phantom;
    out[n++] = {mr->at(sge[i].addr + offset), take};
    len -= take;
    offset = 0;
  }
  return n;
}

}  // namespace

void Engine::Impl::send_request(Qp& qp, SendWqe& w, uint32_t psn, bool retransmission) {
  const uint32_t idx = psn_distance(psn, w.first_psn);
  const uint32_t offset = idx * qp.mtu();
  wire::Segment segs[TxFrame::kMaxPayloadSegments];
  uint32_t nseg = 0;
  uint32_t len = 0;
  bool phantom = false;
  wire::TransportFields f;
  f.opcode = Opcode::kReadRequest;
  f.psn = psn;
  if (w.is_read()) {
    // A READ asks once for all its responses; a retry asks for the rest.
    f.va = w.remote_addr + offset;
    f.rkey = w.rkey;
    f.dma_len = w.length - std::min(w.length, offset);
  } else if (w.is_atomic()) {
    // AtomicETH: VA, R_Key, Swap (or Add) Data, Compare Data; a retry is the same request.
    f.opcode = w.opcode == WrOpcode::kAtomicCmpAndSwp ? Opcode::kCompareSwap : Opcode::kFetchAdd;
    f.va = w.remote_addr;
    f.rkey = w.rkey;
    f.swap_add = w.opcode == WrOpcode::kAtomicCmpAndSwp ? w.swap : w.compare_add;
    f.compare = w.opcode == WrOpcode::kAtomicCmpAndSwp ? w.compare_add : 0;
    f.ack_req = true;
  } else {
    len = std::min(qp.mtu(), w.length - std::min(w.length, offset));
    bool ok;
    nseg = gather(*this, w, offset, len, segs, &phantom, &ok);
    if (!ok) {
      to_error(qp, WcStatus::kLocProtErr, static_cast<uint32_t>(&w - qp.sq.data()));
      return;
    }
    f.opcode = request_opcode(w.opcode, idx, w.npkts);
    const wire::OpcodeInfo& info = wire::opcode_info(f.opcode);
    const bool last = info.ends_message();
    if (info.has(wire::kHasReth)) {
      f.va = w.remote_addr;
      f.rkey = w.rkey;
      f.dma_len = w.length;
    }
    f.imm = w.imm;
    f.se = last && w.solicited;
    f.ack_req = retransmission || ack_request_wanted(qp, w, psn, len, last);
  }
  if (f.ack_req) {
    qp.asked = true;
    qp.asked_psn = psn;
  }
  const uint16_t sport = qp.spraying() ? spray_pick(qp, w, psn, retransmission) : 0;
  const uint32_t frame_bytes = send_frame(qp, f, segs, nseg, len, phantom, !w.needs_response(), sport);
  ++qp.counters.tx_data_packets;
  qp.counters.tx_payload_bytes += len;
  if (retransmission) ++qp.counters.retransmitted_packets;
  if (!qp.peer_tita && f.ack_req && !qp.probe_armed && !retransmission && !w.needs_response()) {
    qp.probe_armed = true;
    qp.probe_psn = psn;
    qp.probe_sent_ns = now_ns;
  }
  if (qp.path) path_on_send(qp, len);
  qp.flow.on_send(now_ns, len);
  pace(qp, now_ns, cfg, frame_bytes);
  if (qp.rto_deadline_ns == kNever) arm_rto(qp);
}

bool Engine::Impl::send_read_response(Qp& qp) {
  ReadJob& job = qp.reads[qp.reads_head];
  if (job.atomic) {
    // The Atomic Acknowledge: AETH and the value the target held before.
    wire::TransportFields f;
    f.opcode = Opcode::kAtomicAck;
    f.psn = job.psn;
    f.syndrome = wire::aeth::ack();
    f.msn = qp.msn;
    f.orig = job.orig;
    f.ecn = wire::kEcnNotEct;
    const uint32_t frame_bytes = send_frame(qp, f, nullptr, 0, 0, false, false);
    pace(qp, now_ns, cfg, frame_bytes);
    qp.reads_head = (qp.reads_head + 1) % static_cast<uint32_t>(qp.reads.size());
    --qp.reads_count;
    if (qp.reads_count == 0) finish_deferred_ack(qp);
    return true;
  }
  const Mr& mr = mrs[job.mr];
  const uint32_t idx = psn_distance(job.psn, job.first_psn);
  const uint32_t len = std::min(qp.mtu(), job.remaining);
  wire::TransportFields f;
  f.opcode = read_response_opcode(idx, job.npkts);
  f.psn = job.psn;
  f.syndrome = wire::aeth::ack();
  f.msn = qp.msn;
  const wire::Segment seg{mr.at(job.va), len};
  const uint32_t frame_bytes = send_frame(qp, f, &seg, len ? 1 : 0, len, mr.phantom, false);
  ++qp.counters.tx_data_packets;
  qp.counters.tx_payload_bytes += len;
  qp.flow.on_send(now_ns, len);
  pace(qp, now_ns, cfg, frame_bytes);
  job.va += len;
  job.remaining -= len;
  job.psn = psn_add(job.psn, 1);
  if (psn_distance(job.psn, job.first_psn) >= job.npkts) {
    qp.reads_head = (qp.reads_head + 1) % static_cast<uint32_t>(qp.reads.size());
    --qp.reads_count;
    if (qp.reads_count == 0) finish_deferred_ack(qp);
  }
  return true;
}

bool Engine::Impl::send_one(Qp& qp) {
  if (qp.reads_count > 0 && (qp.state == QpState::kRts || qp.state == QpState::kRtr)) {
    return send_read_response(qp);
  }
  if (qp.state != QpState::kRts) return false;
  if (qp.retx_count > 0) {
    // Selective repeat: the lowest PSN marked lost.
    for (uint32_t psn = qp.snd_una; psn_before(psn, qp.snd_max); psn = psn_add(psn, 1)) {
      const uint32_t bit = psn & (cfg.sr_window - 1);
      if (!bit_test(qp.retx, bit)) continue;
      bit_clear(qp.retx, bit);
      bit_set(qp.retx_done, bit);
      --qp.retx_count;
      const uint32_t i = wqe_index_of(qp, psn);
      if (i == qp.sq_tail || !qp.sq[i].started) return false;
      send_request(qp, qp.sq[i], psn, true);
      return true;
    }
    qp.retx_count = 0;  // marks below snd_una were acknowledged meanwhile
  }
  if (!can_send_new(qp)) return false;
  SendWqe& w = qp.sq[qp.sq_next];
  if (!w.started && !start_wqe(qp, w)) return false;
  const uint32_t psn = qp.snd_nxt;
  const bool retransmission = psn_before(psn, qp.snd_max);
  send_request(qp, w, psn, retransmission);
  if (qp.state != QpState::kRts) return true;  // the WR failed and flushed the QP
  const uint32_t end = psn_add(w.first_psn, w.npkts);
  qp.snd_nxt = w.needs_response() ? end : psn_add(psn, 1);
  if (qp.snd_nxt == end) qp.sq_next = (qp.sq_next + 1) & (qp.sq_size() - 1);
  qp.nxt_bytes = w.needs_response() ? w.seq_start : seq_position(qp, qp.snd_nxt);
  if (!psn_before(qp.snd_nxt, qp.snd_max)) {
    qp.snd_max = qp.snd_nxt;
    qp.max_bytes = qp.nxt_bytes;
  }
  // A packet into an empty pipe: send_request could not arm the RTO (nothing
  // was outstanding yet), so a lone lost packet would wait forever.
  if (qp.rto_deadline_ns == kNever) arm_rto(qp);
  return true;
}

// ---------------------------------------------------------------- recovery

// Go-back-N: send again from psn (never before snd_una).
void Engine::Impl::rewind(Qp& qp, uint32_t psn) {
  if (psn_before(psn, qp.snd_una)) psn = qp.snd_una;
  if (psn_after(psn, qp.snd_nxt)) return;
  if (qp.probe_armed && !psn_before(qp.probe_psn, psn)) qp.probe_armed = false;  // it will be sent again
  qp.sq_next = wqe_index_of(qp, psn);
  qp.snd_nxt = psn;
  qp.nxt_bytes = seq_position(qp, psn);
  // Whatever selective repeat had marked is covered by resending everything.
  std::fill(qp.retx.begin(), qp.retx.end(), 0);
  qp.retx_count = 0;
}

void Engine::Impl::arm_rto(Qp& qp) {
  if (qp.snd_una == qp.snd_max || qp.attr.timeout == 0) {
    qp.rto_deadline_ns = kNever;
    return;
  }
  // Local ACK timeout: 4.096 us * 2^timeout, doubled per consecutive timeout.
  const uint32_t shift = std::min<uint32_t>(qp.attr.timeout + qp.backoff, 31);
  qp.rto_deadline_ns = now_ns + (uint64_t{4096} << shift);
}

void Engine::Impl::on_timeout(Qp& qp) {
  qp.rto_deadline_ns = kNever;
  if (qp.snd_una == qp.snd_max) return;
  ++qp.counters.timeouts;
  if (qp.retry_left == 0) {
    to_error(qp, WcStatus::kRetryExcErr);
    return;
  }
  --qp.retry_left;
  qp.backoff = static_cast<uint8_t>(std::min(qp.backoff + 1, 8));
  qp.read_retry_armed = false;
  qp.flow.on_timeout(now_ns);
  // Resend everything unacknowledged; selective repeat forgets its SACKs too,
  // since the receiver may have dropped what it kept.
  std::fill(qp.sacked.begin(), qp.sacked.end(), 0);
  std::fill(qp.retx_done.begin(), qp.retx_done.end(), 0);
  // A READ that got part of its responses is asked again from the first one
  // missing, not from its start: a responder need not answer a repeated READ
  // that starts before what it last served (Linux rxe does not).
  uint32_t from = qp.snd_una;
  if (const uint32_t i = wqe_index_of(qp, from); i != qp.sq_tail && qp.sq[i].started && qp.sq[i].is_read() &&
                                                 qp.sq[i].read_pkts > 0 && qp.sq[i].first_psn == from) {
    from = psn_add(from, qp.sq[i].read_pkts);
  }
  rewind(qp, from);
  if (qp.spraying()) {
    // The timeout that just ran (backoff was raised above for the next one).
    const uint64_t waited = uint64_t{4096} << std::min<uint32_t>(qp.attr.timeout + qp.backoff - 1, 31);
    spray_on_timeout(qp, now_ns - std::min(now_ns, waited));
  }
  arm_rto(qp);
  if (qp.path) path_on_timeout(qp);
}

}  // namespace tita::engine
