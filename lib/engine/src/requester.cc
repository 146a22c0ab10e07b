// The requester: segmentation of work requests into request packets, pacing,
// windows, resending what was declared lost. It writes qp.req (qp.h).
//
// A QP's turn (Engine::Impl::send_turn) goes to READ responses it owes the
// peer first (the responder's), then here: selective-repeat retransmissions,
// then new request packets. Each data packet, READ responses included,
// advances the QP's pacing clock by its wire time at the congestion-control
// rate; the window caps payload bytes in flight.
#include <algorithm>
#include <bit>
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
// READ parts under the loss window: at least this many open, of at least this
// many responses (a part's lost tail is seen by the next part's responses,
// not only by the timer).
constexpr uint32_t kMinReadParts = 2;
constexpr uint32_t kMinReadPartPackets = 8;

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

}  // namespace

// Pacing: a data packet occupies the QP's share of the wire for its wire time at
// the congestion-control rate. At line rate the NIC is the only limit.
void Engine::Impl::pace(Qp& qp, uint32_t frame_bytes) {
  const uint64_t rate = std::min(qp.flow.rate_bps(), cfg.line_rate_bps);
  const uint64_t now_ps = now_ns * kPicosPerNs;
  if (rate == 0 || (rate == cfg.line_rate_bps && !cfg.pace_line_rate)) {
    qp.req.next_send_ps = now_ps;
    return;
  }
  const uint64_t bits = uint64_t{frame_bytes + kEthernetOverheadBytes} * 8;
  const uint64_t slack_ps = cfg.pacing_slack_ns * kPicosPerNs;
  const uint64_t floor_ps = now_ps > slack_ps ? now_ps - slack_ps : 0;
  qp.req.next_send_ps = std::max(qp.req.next_send_ps, floor_ps) + bits * 1'000'000'000'000ull / rate;
}

// ---------------------------------------------------------------- eligibility

bool Engine::Impl::can_send_new(const Qp& qp) const {
  if (qp.state != QpState::kRts || qp.comp.rnr_deadline_ns != kNever || qp.req.sq_next == qp.req.sq_tail) return false;
  const SendWqe& w = qp.req.sq[qp.req.sq_next];
  const uint32_t outstanding = psn_distance(qp.req.snd_nxt, qp.comp.snd_una);
  if (outstanding >= kMaxOutstandingPsns) return false;
  // The selective-repeat window bounds the request packets the responder may
  // have to keep; a READ asked again for its missing responses adds none.
  if (qp.selective() && outstanding >= cfg.sr_window && !(w.started && w.is_read())) return false;
  // A fenced WR waits for every earlier READ and atomic to complete.
  // (Parts retire in order, so none open means every earlier one completed.)
  if (w.fence && !w.started && qp.parts_open() > 0) return false;
  if (w.needs_response()) {
    // A part asked before is asked again (go-back-N) in the resource it holds;
    // a new one needs a free one. Two parts may always be open, whatever the
    // loss window: the responses of the second show the first's lost tail.
    if (!loss_allows(qp, /*read=*/true) && qp.parts_open() >= kMinReadParts) return false;
    if (w.started && psn_distance(qp.req.snd_nxt, w.first_psn) < w.asked_pkts) return true;
    return qp.parts_open() < part_limit(qp);
  }
  if (!loss_allows(qp)) return false;
  const uint64_t cwnd = qp.flow.cwnd_bytes();
  return qp.inflight_bytes() == 0 || qp.inflight_bytes() < cwnd;
}

// READ parts and atomics outstanding at once: max_rd_atomic, counted from the
// oldest incomplete one (the ring holds at least that many once a READ started).
uint32_t Engine::Impl::part_limit(const Qp& qp) const {
  const uint32_t ring = static_cast<uint32_t>(qp.cold.parts.size());
  return ring == 0 ? qp.rd_atomic_limit() : std::min(ring, qp.rd_atomic_limit());
}

// Packets the QP has in flight for its loss window: READ responses asked for
// and still expected, plus the request packets past the last READ part (a
// go-back-N flight of SENDs and WRITEs; those between READ parts are not counted).
uint32_t Engine::Impl::loss_in_flight(const Qp& qp) const {
  if (qp.parts_open() == 0) return psn_distance(qp.req.snd_nxt, qp.comp.snd_una);
  const ReadPart& last = qp.part(qp.req.parts_tail - 1);
  const uint32_t end = psn_add(last.first_psn, last.npkts);
  const uint32_t after = psn_after(qp.req.snd_nxt, end) ? psn_distance(qp.req.snd_nxt, end) : 0;
  return qp.comp.read_in_flight + after;
}

// READ parts are held back only in a loss episode: the responses after a
// hole are kept and only the hole is asked again, so a started window (a peer
// not known to be tita) would only slow a clean READ down. In selective
// repeat the same holds for READ parts, which the requester paces by asking:
// without it a READ whose responses overran the requester's own receiver (a
// NIC ring, a descheduled poller) kept being asked at full size and lost
// again (a two-rank MPI Allreduce of 16 MiB 4.6x slower than go-back-N). Its
// WRITEs and SENDs are left to congestion control and the SR window, as IRN
// has them.
bool Engine::Impl::loss_allows(const Qp& qp, bool read) const {
  if (read ? !qp.loss().in_episode() : qp.selective()) return true;
  return qp.loss().allows(loss_in_flight(qp));
}

bool Engine::Impl::has_work(const Qp& qp) const {
  if (qp.ud) return ud_has_work(qp);
  if (qp.mac_pending) return false;     // nowhere to send yet (ARP)
  if (qp.resp.reads_count > 0) return true;  // READ responses owed to the peer
  if (qp.state != QpState::kRts || qp.comp.rnr_deadline_ns != kNever) return false;
  return qp.req.retx_count > 0 || qp.req.rereq_count > 0 || can_send_new(qp);
}

// ---------------------------------------------------------------- sequence space

// The send WR whose PSNs include psn; sq_next when psn is where new packets start.
uint32_t Engine::Impl::wqe_index_of(const Qp& qp, uint32_t psn) const {
  const uint32_t mask = qp.sq_size() - 1;
  auto holds = [&](uint32_t i) {
    const SendWqe& w = qp.req.sq[i];
    return w.started && !psn_before(psn, w.first_psn) && psn_before(psn, psn_add(w.first_psn, w.npkts));
  };
  // The oldest WR (ACKs) and the one being sent (new packets) answer almost every
  // lookup; snd_nxt always lies in sq_next's WR or is where that WR will start.
  if (qp.comp.sq_head != qp.req.sq_tail && holds(qp.comp.sq_head)) return qp.comp.sq_head;
  if (psn == qp.req.snd_nxt || (qp.req.sq_next != qp.req.sq_tail && holds(qp.req.sq_next))) return qp.req.sq_next;
  for (uint32_t i = qp.comp.sq_head; i != qp.req.sq_tail; i = (i + 1) & mask) {
    const SendWqe& w = qp.req.sq[i];
    if (!w.started) return i;
    if (!psn_before(psn, w.first_psn) && psn_before(psn, psn_add(w.first_psn, w.npkts))) return i;
  }
  return qp.req.sq_tail;
}

// Payload bytes sent before PSN psn, in the QP's cumulative sequence space.
uint64_t Engine::Impl::seq_position(const Qp& qp, uint32_t psn) const {
  const uint32_t i = wqe_index_of(qp, psn);
  if (i == qp.req.sq_tail || !qp.req.sq[i].started) return qp.req.next_seq;
  const SendWqe& w = qp.req.sq[i];
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
  if (qp.req.ack_every <= 1 || psn % qp.req.ack_every == 0) return true;
  // After a loss (a loss episode), every packet asks: a lost ACK then costs
  // nothing, where it would cost a timeout with the window full.
  if (!qp.selective() && qp.loss().in_episode()) return true;
  const uint32_t next_wr = (static_cast<uint32_t>(&w - qp.req.sq) + 1) & (qp.sq_size() - 1);
  if (last && next_wr == qp.req.sq_tail) return true;
  if (qp.req.asked && !psn_before(qp.req.asked_psn, qp.comp.snd_una)) return false;  // its ACK will open the window
  const uint32_t outstanding = psn_distance(psn_add(psn, 1), qp.comp.snd_una);
  if (outstanding >= kMaxOutstandingPsns || (qp.selective() && outstanding >= cfg.sr_window)) return true;
  if (!qp.selective() && qp.loss().on() && !qp.loss().allows(loss_in_flight(qp) + 1)) return true;
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
      to_error(qp, status, static_cast<uint32_t>(&w - qp.req.sq));
      return false;
    }
  }
  w.first_psn = qp.req.snd_nxt;
  w.npkts = w.is_atomic() ? 1 : qp.packets_for(w.length);
  w.seq_start = qp.req.next_seq;
  w.read_pkts = 0;
  w.asked_pkts = 0;
  w.started = true;
  if (w.needs_response()) {
    if (qp.cold.parts.size() < qp.rd_atomic_limit() && qp.parts_open() == 0) {
      qp.cold.parts.assign(std::bit_ceil(qp.rd_atomic_limit()), ReadPart{});
    }
  } else {
    qp.req.next_seq += w.length;
  }
  return true;
}

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

void Engine::Impl::send_request(Qp& qp, SendWqe& w, uint32_t psn, bool retransmission, uint32_t read_pkts) {
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
    // A part, or a part's hole: read_pkts responses from psn.
    f.va = w.remote_addr + offset;
    f.rkey = w.rkey;
    f.dma_len = std::min<uint64_t>(uint64_t{read_pkts} * qp.mtu(), w.length - std::min(w.length, offset));
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
      to_error(qp, WcStatus::kLocProtErr, static_cast<uint32_t>(&w - qp.req.sq));
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
    qp.req.asked = true;
    qp.req.asked_psn = psn;
  }
  const uint16_t sport = qp.spraying() ? spray_pick(qp, w, psn, retransmission) : 0;
  // Every packet carries the trailer (when telemetry is on), READ and atomic
  // requests too: a responder that only ever sees requests learns its peer
  // is tita from them, as a requester does from the responses. Before, a READ
  // stream between two titas ran as towards a plain peer both ways: the
  // responder dropped the answers queued behind a repeated READ (a tita
  // requester asks for holes only, so those READs then timed out) and the
  // requester kept the loss window and go-back-N.
  // Its payload is the application's until the WR completes: a host that
  // sends it where it lies holds it past that (zero copy).
  const uint64_t hold =
      host_holds && nseg > 0 && !phantom ? hold_token(qp, static_cast<uint32_t>(&w - qp.req.sq)) : 0;
  const uint32_t frame_bytes = send_frame(qp, f, segs, nseg, len, phantom, true, sport, hold);
  ++qp.cold.counters.tx_data_packets;
  qp.cold.counters.tx_payload_bytes += len;
  if (retransmission) ++qp.cold.counters.retransmitted_packets;
  if (!retransmission && (w.needs_response() ? w.is_read() : f.ack_req)) probe_sent(qp, psn, w.needs_response());
  if (qp.cold.path) path_on_send(qp, len);
  qp.flow.on_send(now_ns, len);
  pace(qp, frame_bytes);
  if (qp.comp.rto_deadline_ns == kNever) arm_rto(qp);
}

bool Engine::Impl::send_one(Qp& qp) {
  if (qp.state != QpState::kRts) return false;
  if (qp.req.retx_count > 0) {
    // Selective repeat: the lowest PSN marked lost.
    for (uint32_t psn = qp.comp.snd_una; psn_before(psn, qp.req.snd_max); psn = psn_add(psn, 1)) {
      const uint32_t bit = psn & (cfg.sr_window - 1);
      if (!bit_test(qp.cold.retx, bit)) continue;
      bit_clear(qp.cold.retx, bit);
      bit_set(qp.cold.retx_done, bit);
      --qp.req.retx_count;
      const uint32_t i = wqe_index_of(qp, psn);
      if (i == qp.req.sq_tail || !qp.req.sq[i].started) return false;
      if (qp.req.sq[i].needs_response()) {
        // A READ part's request: asked again from its first missing response.
        // Its response PSNs are not requests.
        ReadPart* p = part_holding(qp, psn);
        if (p == nullptr || psn != p->first_psn || p->complete()) continue;
        const uint32_t from = p->first_missing();
        ask_part(qp, *p, from, p->npkts - from, true);
        return true;
      }
      send_request(qp, qp.req.sq[i], psn, true);
      return true;
    }
    qp.req.retx_count = 0;  // marks below snd_una were acknowledged meanwhile
  }
  if (qp.req.rereq_count > 0 && send_rerequest(qp)) return true;
  skip_answered(qp);
  if (!can_send_new(qp)) return false;
  SendWqe& w = qp.req.sq[qp.req.sq_next];
  if (!w.started && !start_wqe(qp, w)) return false;
  const uint32_t psn = qp.req.snd_nxt;
  if (w.needs_response()) {
    send_part(qp, w);
  } else {
    send_request(qp, w, psn, psn_before(psn, qp.req.snd_max));
    if (qp.state != QpState::kRts) return true;  // the WR failed and flushed the QP
    qp.req.snd_nxt = psn_add(psn, 1);
  }
  const uint32_t end = psn_add(w.first_psn, w.npkts);
  if (qp.req.snd_nxt == end) qp.req.sq_next = (qp.req.sq_next + 1) & (qp.sq_size() - 1);
  // Sequence space is contiguous over WRs (READs and atomics take none): the
  // position after this packet is in w, or at its end.
  qp.req.nxt_bytes = w.needs_response()
                         ? w.seq_start
                         : w.seq_start + std::min<uint64_t>(w.length, uint64_t{psn_distance(qp.req.snd_nxt, w.first_psn)} *
                                                                          qp.mtu());
  if (!psn_before(qp.req.snd_nxt, qp.req.snd_max)) {
    qp.req.snd_max = qp.req.snd_nxt;
    qp.req.max_bytes = qp.req.nxt_bytes;
  }
  // A packet into an empty pipe: send_request could not arm the RTO (nothing
  // was outstanding yet), so a lone lost packet would wait forever.
  if (qp.comp.rto_deadline_ns == kNever) arm_rto(qp);
  return true;
}

// ---------------------------------------------------------------- READ parts
//
// A READ WR goes out as parts (ReadPart, qp.h): each a READ request for up to
// kReadPartPackets responses (fewer while the loss window is on: a part no
// larger than what the window has room for), at most part_limit() of them
// incomplete. The completer takes responses in any order and, when the
// responses have run a reordering window past a part's first hole, asks for
// that hole again (send_rerequest). A go-back-N rewind over parts already
// asked (a NAK, a timeout) asks each incomplete one again from its first
// missing response to its end, and skips the complete ones (skip_answered).
// Every request of a part starts at its first missing response, so the starts
// only grow, as a Linux rxe responder requires.

namespace {

uint64_t bits_in(uint32_t from, uint32_t len) {
  const uint64_t ones = len >= 64 ? ~uint64_t{0} : (uint64_t{1} << len) - 1;
  return from >= 64 ? 0 : ones << from;
}

}  // namespace

ReadPart* Engine::Impl::part_holding(Qp& qp, uint32_t psn) {
  for (uint32_t n = qp.comp.parts_head; n != qp.req.parts_tail; ++n) {
    ReadPart& p = qp.part(n);
    if (psn_distance(psn, p.first_psn) < p.npkts) return &p;
  }
  return nullptr;
}

// Asks part p for [from, from + len): the request, and what it now expects.
void Engine::Impl::ask_part(Qp& qp, ReadPart& p, uint32_t from, uint32_t len, bool again) {
  SendWqe& w = qp.req.sq[p.wqe];
  const uint64_t want = bits_in(from, len) & ~p.got & ~p.asked;
  p.asked |= want;
  qp.comp.read_in_flight += static_cast<uint32_t>(std::popcount(want));
  p.asked_from = static_cast<uint8_t>(from);
  if (again) {
    ++qp.cold.counters.read_rerequests;
    p.reasked = true;
    p.hole = static_cast<uint8_t>(from);  // what the completer watches the answer of
    p.spurious = false;
    p.rereq_len = static_cast<uint8_t>(std::min<uint32_t>(len, 255));
  }
  send_request(qp, w, psn_add(p.first_psn, from), again, len);
}

// A new part of READ (or atomic) w at snd_nxt, or one asked before again.
void Engine::Impl::send_part(Qp& qp, SendWqe& w) {
  const uint32_t off = psn_distance(qp.req.snd_nxt, w.first_psn);
  if (off < w.asked_pkts) {
    // Go-back-N over a part asked before (skip_answered stopped here: it
    // misses responses): from its first missing response to its end.
    ReadPart* p = part_holding(qp, qp.req.snd_nxt);
    if (p == nullptr) {  // retired meanwhile
      qp.req.snd_nxt = psn_add(w.first_psn, w.asked_pkts);
      return;
    }
    const uint32_t from = p->first_missing();
    if (from < p->npkts) ask_part(qp, *p, from, p->npkts - from, true);
    qp.req.snd_nxt = psn_add(p->first_psn, p->npkts);
    return;
  }
  uint32_t n = std::min(kReadPartPackets, w.npkts - off);
  if (qp.loss().in_episode()) {
    const uint32_t in_flight = loss_in_flight(qp);
    const uint32_t room = qp.loss().window() > in_flight ? qp.loss().window() - in_flight : 0;
    n = std::min(n, std::max(kMinReadPartPackets, room));
  }
  ReadPart& p = qp.part(qp.req.parts_tail++);
  p = ReadPart{};
  p.first_psn = qp.req.snd_nxt;
  p.wqe = static_cast<uint32_t>(&w - qp.req.sq);
  p.offset_pkts = off;
  p.npkts = static_cast<uint8_t>(n);
  w.asked_pkts = off + n;
  ask_part(qp, p, 0, n, false);
  qp.req.snd_nxt = psn_add(p.first_psn, n);
}

// Moves snd_nxt, behind after a rewind, over READ parts that need nothing
// asked again: complete ones (retired or not).
void Engine::Impl::skip_answered(Qp& qp) {
  while (qp.req.sq_next != qp.req.sq_tail) {
    SendWqe& w = qp.req.sq[qp.req.sq_next];
    if (!w.started || !w.needs_response()) return;
    const uint32_t off = psn_distance(qp.req.snd_nxt, w.first_psn);
    if (off >= w.asked_pkts) return;  // new parts from here
    uint32_t to;
    if (off < w.read_pkts) {
      to = w.read_pkts;
    } else {
      const ReadPart* p = part_holding(qp, qp.req.snd_nxt);
      if (p != nullptr && !p->complete()) return;  // to be asked again
      to = p != nullptr ? p->offset_pkts + p->npkts : w.asked_pkts;
    }
    qp.req.snd_nxt = psn_add(w.first_psn, to);
    qp.req.nxt_bytes = w.seq_start;
    if (to == w.npkts) qp.req.sq_next = (qp.req.sq_next + 1) & (qp.sq_size() - 1);
  }
}

// The oldest part whose hole the completer declared lost: that hole again.
bool Engine::Impl::send_rerequest(Qp& qp) {
  for (uint32_t n = qp.comp.parts_head; n != qp.req.parts_tail; ++n) {
    ReadPart& p = qp.part(n);
    if (!p.rereq) continue;
    p.rereq = false;
    --qp.req.rereq_count;
    if (p.rereq_from < p.asked_from) continue;  // never before the last start (cannot happen: starts are first holes)
    ask_part(qp, p, p.rereq_from, p.rereq_len, true);
    return true;
  }
  qp.req.rereq_count = 0;
  return false;
}

// Parts from psn on (all with `all`) expect nothing more: their requests go
// again (a rewind, a timeout).
void Engine::Impl::forget_asked(Qp& qp, uint32_t psn, bool all) {
  for (uint32_t n = qp.comp.parts_head; n != qp.req.parts_tail; ++n) {
    ReadPart& p = qp.part(n);
    if (!all && psn_before(p.first_psn, psn)) continue;
    qp.comp.read_in_flight -= std::min<uint32_t>(qp.comp.read_in_flight, std::popcount(p.asked));
    p.asked = 0;
    if (p.rereq) --qp.req.rereq_count;
    p.rereq = false;
    if (all) p.hole = ReadPart::kNoHole;
  }
  if (all) qp.comp.read_in_flight = 0;
}

// ---------------------------------------------------------------- recovery

void Engine::Impl::rewind(Qp& qp, uint32_t psn, bool forget_resent) {
  if (forget_resent) std::fill(qp.cold.retx_done.begin(), qp.cold.retx_done.end(), 0);
  if (psn_before(psn, qp.comp.snd_una)) psn = qp.comp.snd_una;
  if (psn_after(psn, qp.req.snd_nxt)) return;
  probe_void_from(qp, psn);  // it will be sent again
  if (qp.parts_open() > 0) forget_asked(qp, psn, forget_resent);
  qp.req.sq_next = wqe_index_of(qp, psn);
  qp.req.snd_nxt = psn;
  qp.req.nxt_bytes = seq_position(qp, psn);
  // Whatever selective repeat had marked is covered by resending everything.
  std::fill(qp.cold.retx.begin(), qp.cold.retx.end(), 0);
  qp.req.retx_count = 0;
}

bool Engine::Impl::mark_lost(Qp& qp, uint32_t psn, bool again) {
  const uint32_t bit = psn & (cfg.sr_window - 1);
  if (bit_test(qp.cold.retx, bit) || (!again && bit_test(qp.cold.retx_done, bit))) return false;
  bit_set(qp.cold.retx, bit);
  ++qp.req.retx_count;
  return true;
}

void Engine::Impl::on_una(Qp& qp, uint32_t old_una) {
  const uint32_t una = qp.comp.snd_una;
  if (psn_before(qp.req.snd_nxt, una)) {  // a go-back-N rewind went below what is now acknowledged
    qp.req.sq_next = wqe_index_of(qp, una);  // before snd_nxt moves: the lookup trusts it
    qp.req.snd_nxt = una;
    qp.req.nxt_bytes = qp.comp.una_bytes;
  }
  if (!qp.selective()) return;
  for (uint32_t p = old_una; p != una; p = psn_add(p, 1)) {
    const uint32_t bit = p & (cfg.sr_window - 1);
    if (bit_test(qp.cold.retx, bit)) --qp.req.retx_count;
    bit_clear(qp.cold.retx, bit);
    bit_clear(qp.cold.retx_done, bit);
  }
}

}  // namespace tita::engine
