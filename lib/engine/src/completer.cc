// The completer: what a requester does with ACKs, NAKs, READ responses and
// CNPs, and when nothing comes back (the retransmission timer, RNR waits). It
// writes qp.comp (qp.h); what is to be sent again it asks of the requester
// (rewind, mark_lost).
//
// Work requests complete strictly in order. An ACK for PSN a acknowledges every
// request packet up to a; a NAK for PSN p acknowledges everything before p. A
// READ response implies that every request before its part was executed.
// READ responses are taken in any order (placed by PSN, duplicates counted and
// dropped); a part's first hole counts as lost once responses (or ACKs) have
// run reorder_pkts past it, and is asked again (requester.cc, "READ parts").
//
// Progress - an ACK that moves, a new READ response - restarts the retry
// budget, the timeout backoff and the timer. retry_cnt timeouts (or go-back-N
// NAKs) in a row without progress end the QP in RETRY_EXC_ERR, counted
// (retry_exceeded) and reported to the host (EventKind::kQpRetryExceeded):
// nothing waits forever without a word.
#include <algorithm>
#include <bit>
#include <cstring>

#include "engine_impl.h"

namespace tita::engine {

using wire::psn_add;
using wire::psn_after;
using wire::psn_before;
using wire::psn_diff;
using wire::psn_distance;

namespace {

enum class AckKind { kAck, kReadResponse, kNak };

// The largest reordering window for READ responses, in packets.
constexpr uint32_t kMaxReorderPackets = 1024;
// A READ hole is asked again with at least this many responses (those after
// it that had come are answered twice), and counts as lost again when its
// answer has come this far past it without it.
constexpr uint32_t kRereqMinPackets = 4;
constexpr uint32_t kInitialReorderPackets = 3;  // CompState::reorder_pkts' start
constexpr uint32_t kReplayPassPackets = 2;

struct Completer {
  Engine::Impl& m;
  Qp& qp;

  uint32_t mask() const { return qp.sq_size() - 1; }

  void retire(const SendWqe& w) {
    if (w.signaled) {
      m.complete(qp.send_cq, {w.wr_id, WcStatus::kSuccess, wc_opcode(w.opcode), false,
                              w.needs_response() ? w.length : 0, 0, qp.qpn});
    }
    qp.comp.sq_head = (qp.comp.sq_head + 1) & mask();
  }

  // Whether the WR in SQ slot i is done once snd_una reaches *una. A READ (or
  // atomic) still missing responses is not, and bounds *una: the responder
  // may be past its incomplete part, whose holes detect_holes() finds (the
  // ACK raised acked_psn).
  bool acknowledged(uint32_t i, uint32_t* una) const {
    const SendWqe& w = qp.req.sq[i];
    if (!w.started) return false;
    if (!w.needs_response()) return psn_after(*una, w.last_psn());
    if (w.read_pkts == w.npkts) return true;
    if (psn_after(*una, psn_add(w.first_psn, w.read_pkts))) *una = psn_add(w.first_psn, w.read_pkts);
    return false;
  }

  // Acknowledges every request packet up to and including PSN a. Returns the
  // payload bytes newly acknowledged.
  uint64_t acknowledge_through(uint32_t a) {
    uint32_t una = psn_add(a, 1);
    if (!psn_after(una, qp.comp.snd_una) || psn_after(una, qp.req.snd_max)) return 0;  // old or bogus
    // The WRs it acknowledges retire in order; from the first whose payload a
    // host still holds (zero copy) on they wait for its release
    // (retire_released).
    for (uint32_t i = qp.comp.sq_head; i != qp.req.sq_tail; i = qp.comp.sq_head) {
      if (!acknowledged(i, &una)) break;
      if (qp.payload_held(i)) [[unlikely]] {
        ++m.counters.completions_held;
        // Those after it are walked on for the READ that bounds una.
        do {
          i = (i + 1) & mask();
        } while (i != qp.req.sq_tail && acknowledged(i, &una));
        break;
      }
      retire(qp.req.sq[i]);
    }
    if (!psn_after(una, qp.comp.snd_una)) return 0;
    const uint32_t old_una = qp.comp.snd_una;
    const uint64_t old_bytes = qp.comp.una_bytes;
    qp.comp.snd_una = una;
    qp.comp.una_bytes = m.seq_position(qp, una);
    m.on_una(qp, old_una);
    if (qp.selective()) {
      for (uint32_t p = old_una; p != una; p = psn_add(p, 1)) bit_clear(qp.cold.sacked, p & (m.cfg.sr_window - 1));
    }
    qp.comp.rnr_left = qp.cold.attr.rnr_retry;
    qp.comp.probed = false;
    // The loss window grows by what snd_una passed, READ responses included
    // (they count once their part, and every part before it, is complete).
    // In selective repeat only READs cut it (declare_lost, a timeout with
    // READs open), so nothing else switches it on there.
    qp.loss().on_acked(psn_distance(una, old_una));
    m.arm_rto(qp);
    const uint64_t acked = qp.comp.una_bytes - old_bytes;
    if (qp.cold.path) m.path_on_una(qp);
    return acked;
  }

  // What acknowledge_through() left to the release of a hold.
  void retire_released() {
    uint32_t una = qp.comp.snd_una;
    while (qp.comp.sq_head != qp.req.sq_tail && !qp.payload_held(qp.comp.sq_head) &&
           acknowledged(qp.comp.sq_head, &una)) {
      retire(qp.req.sq[qp.comp.sq_head]);
    }
  }

  // The responder says it has everything up to PSN a. That is progress even when
  // snd_una cannot move (a READ before a still misses responses): the retry
  // budget and the timeout backoff start over.
  void responder_progress(uint32_t a) {
    if (!psn_after(a, qp.comp.acked_psn) || !psn_before(a, qp.req.snd_max)) return;
    qp.comp.acked_psn = a;
    progress();
    if (qp.cold.path) m.path_on_progress(qp);
  }

  // Something new came back: the retry budget, the backoff and the timer start over.
  void progress() {
    qp.comp.retry_left = qp.cold.attr.retry_cnt;
    qp.comp.backoff = 0;
    qp.comp.probed = false;
    m.arm_rto(qp);
  }

  // Feeds the congestion control with what an ACK carried.
  void feed_cc(const wire::Packet& pkt, uint64_t acked_bytes, uint32_t acked_packets) {
    cc::AckSample s;
    s.acked_bytes = acked_bytes;
    s.ack_seq_bytes = qp.comp.una_bytes;
    s.next_seq_bytes = qp.req.max_bytes;
    s.inflight_bytes = qp.inflight_bytes();
    s.acked_packets = acked_packets;
    bool sampled = false;
    if (const wire::TelemetryHdr* t = pkt.telemetry(); t != nullptr && t->echo()) {
      sampled = true;
      qp.cold.probe.armed = false;  // a probe sent before we knew the peer echoes
      s.rtt_ns = static_cast<uint32_t>(m.now_ns) - t->ts_ns.get();
      m.rtt_smooth(qp.cold.probe, s.rtt_ns);  // the tail-loss probe's clock
      s.ce_packets = t->ce_packets;
      qp.cold.counters.ce_echoed += t->ce_packets;
      s.n_hops = t->hops();
      s.int_partial = t->overflow() || t->path_hops > t->hops();
      const wire::TelemetryHop* h = wire::telemetry_hops(t);
      for (int i = 0; i < s.n_hops; ++i) {
        s.hops[i].rate_bps = uint64_t{h[i].rate_mbps.get()} * 1'000'000;
        s.hops[i].ts_ns = h[i].ts_ns.get();
        s.hops[i].tx_bytes = h[i].tx_bytes.get();
        s.hops[i].qlen_bytes = h[i].qlen_bytes.get();
      }
    } else if (qp.cold.probe.armed && !qp.cold.probe.read && psn_before(qp.cold.probe.psn, qp.comp.snd_una)) {
      // No echo: the ACK of our probe is the sample (it holds the responder's
      // ACK turnaround, as a NIC's completion timestamps do).
      s.rtt_ns = static_cast<uint32_t>(std::clamp<uint64_t>(m.now_ns - qp.cold.probe.sent_ns, 1, UINT32_MAX));
      m.probe_answered(qp, s.rtt_ns);
      sampled = true;
    }
    if (sampled) {
      ++qp.cold.counters.rtt_samples;
      qp.cold.counters.last_rtt_ns = s.rtt_ns;
      qp.cold.counters.int_records_received += s.n_hops;
      if (qp.cold.path) m.path_on_sample(qp, s);
    }
    qp.flow.on_ack(m.now_ns, s);
    if (cc::np_ack_is_cnp(m.cfg.np, s)) [[unlikely]] m.on_cnp(qp);  // CE echoed in an ACK: a CNP
  }

  // The send WR holding psn (for NAK errors), or the oldest.
  uint32_t failed_wqe(uint32_t psn) const {
    const uint32_t i = m.wqe_index_of(qp, psn);
    return i == qp.req.sq_tail ? qp.comp.sq_head : i;
  }

  // Spraying: which paths delivered [from, snd_una) and the triggering packet
  // (the ACKed or selectively ACKed PSN, whose echo the ACK carries); then
  // RACK's verdict on what is still out. Losses stay per path: no CC loss
  // signal (a failing path is left, not the QP's rate cut).
  void spray_update(const wire::Packet& pkt, uint32_t from, uint32_t trigger) {
    uint32_t ce = 0;
    uint64_t rtt = 0;
    if (const wire::TelemetryHdr* t = pkt.telemetry(); t != nullptr && t->echo()) {
      ce = t->ce_packets;
      rtt = static_cast<uint32_t>(static_cast<uint32_t>(m.now_ns) - t->ts_ns.get());
    }
    m.spray_delivered(qp, from, qp.comp.snd_una, trigger, ce, rtt);
    if (!psn_before(trigger, qp.comp.snd_una) && psn_before(trigger, qp.req.snd_max)) {
      m.spray_delivered(qp, trigger, psn_add(trigger, 1), trigger, ce, rtt);
    }
    m.spray_detect_losses(qp);
  }

  void on_ack(const wire::Packet& pkt) {
    const uint8_t syndrome = pkt.aeth()->syndrome;
    const uint32_t psn = pkt.psn();
    const uint32_t una_before = qp.comp.snd_una;
    const bool nak = wire::aeth::type(syndrome) != wire::aeth::kAck;
    responder_progress(nak ? psn_add(psn, wire::kPsnMask) : psn);
    switch (wire::aeth::type(syndrome)) {
      case wire::aeth::kAck: {
        ++qp.cold.counters.acks_received;
        const uint64_t bytes = acknowledge_through(psn);
        if (qp.comp.snd_una != una_before) feed_cc(pkt, bytes, psn_distance(qp.comp.snd_una, una_before));
        if (qp.state == QpState::kRts && qp.parts_open() > 0) detect_holes();  // the responder is past them
        if (!qp.spraying()) return;
        spray_update(pkt, una_before, psn);
        // A SACK at or below what the ACK covers: a D-SACK, a packet resent
        // for nothing (the responder got it twice).
        const wire::TelemetryHdr* t = pkt.telemetry();
        const wire::TelemetrySack* sack = t ? wire::telemetry_sack(t) : nullptr;
        if (sack != nullptr && !psn_after(sack->psn.get() & wire::kPsnMask, psn)) {
          m.spray_on_dsack(qp, sack->psn.get() & wire::kPsnMask);
        }
        return;
      }
      case wire::aeth::kRnrNak: {
        ++qp.cold.counters.rnr_nak_received;
        acknowledge_through(psn_add(psn, wire::kPsnMask));
        if (qp.comp.rnr_left == 0) {
          m.to_error(qp, WcStatus::kRnrRetryExcErr, failed_wqe(psn));
          return;
        }
        if (qp.cold.attr.rnr_retry != 7) --qp.comp.rnr_left;  // 7: retry forever
        qp.comp.rnr_deadline_ns = m.now_ns + wire::aeth::rnr_timer_ns(wire::aeth::value(syndrome));
        qp.comp.rnr_psn = psn;
        // The responder is alive and asked us to wait: the transport timer
        // stops (the resend restarts it) and the retry budget starts over, so
        // RNR waits never count as timeouts, however long (rnr_retry 7: forever).
        qp.comp.rto_deadline_ns = kNever;
        qp.comp.retry_left = qp.cold.attr.retry_cnt;
        qp.comp.backoff = 0;
        if (qp.cold.path) qp.cold.path->progress_ns = m.now_ns;
        return;
      }
      case wire::aeth::kNak:
        break;
      default:
        return;  // reserved type
    }
    const uint8_t code = wire::aeth::value(syndrome);
    if (code != wire::aeth::kNakPsnSequenceError) {
      // The responder refused the request: the WR fails and the QP goes to error.
      WcStatus status = WcStatus::kRemOpErr;
      if (code == wire::aeth::kNakRemoteAccessError) {
        status = WcStatus::kRemAccessErr;
        ++qp.cold.counters.nak_access_received;
      } else if (code == wire::aeth::kNakInvalidRequest) {
        status = WcStatus::kRemInvReqErr;
        ++qp.cold.counters.nak_invalid_received;
      }
      acknowledge_through(psn_add(psn, wire::kPsnMask));
      m.to_error(qp, status, failed_wqe(psn));
      return;
    }
    ++qp.cold.counters.nak_seq_received;
    const uint64_t bytes = acknowledge_through(psn_add(psn, wire::kPsnMask));
    if (qp.comp.snd_una != una_before) feed_cc(pkt, bytes, psn_distance(qp.comp.snd_una, una_before));
    const wire::TelemetryHdr* t = pkt.telemetry();
    const wire::TelemetrySack* sack = t ? wire::telemetry_sack(t) : nullptr;
    if (qp.selective() && sack != nullptr) {
      // Everything between the gap and the PSN the receiver has is lost (IRN's
      // rule); resend each once until a timeout says otherwise. Sprayed
      // packets overtake each other: RACK decides instead (spray.cc).
      const uint32_t got = sack->psn.get() & wire::kPsnMask;
      const bool valid = !psn_before(got, qp.comp.snd_una) && psn_before(got, qp.req.snd_max);
      const uint32_t w = m.cfg.sr_window - 1;
      if (valid) bit_set(qp.cold.sacked, got & w);
      if (qp.spraying()) {
        spray_update(pkt, una_before, valid ? got : qp.req.snd_max);
        return;
      }
      if (!valid) return;
      uint64_t lost = 0;
      for (uint32_t p = psn; psn_before(p, got); p = psn_add(p, 1)) {
        if (!bit_test(qp.cold.sacked, p & w) && m.mark_lost(qp, p)) lost += qp.mtu();
      }
      if (lost > 0) {
        if (qp.cold.path) qp.cold.path->round_lost += static_cast<uint32_t>(lost / qp.mtu());
        qp.flow.on_loss(m.now_ns, {lost, qp.inflight_bytes()});
      }
      return;
    }
    // Go-back-N (or a peer that sends no SACK): resend from the gap.
    if (qp.comp.retry_left == 0) {
      m.retry_exceeded(qp, failed_wqe(psn), true);
      return;
    }
    --qp.comp.retry_left;
    if (qp.cold.path) ++qp.cold.path->round_lost;
    qp.flow.on_loss(m.now_ns, {qp.req.nxt_bytes - qp.comp.una_bytes, qp.inflight_bytes()});
    if (qp.loss().on_loss(m.loss_in_flight(qp))) ++qp.cold.counters.loss_window_cuts;
    m.rewind(qp, psn);
  }

  // READ responses and atomic acknowledgements, in any order: each lands in
  // its part (ReadPart) by PSN.
  void on_response(const wire::Packet& pkt) {
    const uint32_t psn = pkt.psn();
    ReadPart* p = qp.cold.parts.empty() ? nullptr : m.part_holding(qp, psn);
    const uint32_t bit = p != nullptr ? psn_distance(psn, p->first_psn) : 0;
    if (p == nullptr || (p->got >> bit & 1) != 0) {
      ++qp.cold.counters.duplicates_received;  // a part complete, or this response had come
      if (p != nullptr) {
        // The first response a re-request asked for, twice: it had only been
        // late (TCP's D-SACK rule, RFC 2883): the reordering window doubles.
        if (bit == p->hole && !p->spurious) {
          p->spurious = true;
          qp.comp.reorder_pkts = static_cast<uint16_t>(std::min<uint32_t>(2u * qp.comp.reorder_pkts, kMaxReorderPackets));
        }
        check_replay(*p, bit);
      }
      return;
    }
    if (qp.cold.probe.armed && qp.cold.probe.read && !psn_before(psn, qp.cold.probe.psn)) {
      // The probed request's first response, or one after it (which voids
      // the probe: its first response is late or lost, Karn).
      if (psn == qp.cold.probe.psn) m.probe_answered(qp, m.now_ns - qp.cold.probe.sent_ns);
      qp.cold.probe.armed = false;
    }
    const uint32_t i = p->wqe;
    SendWqe& w = qp.req.sq[i];
    const bool atomic_ack = pkt.op->kind == wire::Kind::kAtomicAck;
    if (atomic_ack != w.is_atomic()) {
      // An atomic acknowledgement for a READ, or READ data for an atomic.
      m.to_error(qp, WcStatus::kBadRespErr, i);
      return;
    }
    if (atomic_ack) {
      const Mr* mr = m.mr_by_key(w.sge[0].lkey);
      if (mr == nullptr) {
        m.to_error(qp, WcStatus::kLocProtErr, i);
        return;
      }
      // The original value, into its 8-byte SGE (host order, as the responder's memory held it).
      const uint64_t orig = pkt.atomic_ack()->orig.get();
      if (uint8_t* dst = mr->at(w.sge[0].addr)) std::memcpy(dst, &orig, sizeof orig);
    } else if (!place(pkt, w, i, p->offset_pkts + bit)) {
      return;
    }
    // A response behind the highest one seen: reordering. If it came later
    // than a hole is given, the window grows to its lag - unless its part was
    // asked again: then it may be the answer to that, late by nature.
    if (psn_before(psn, qp.comp.acked_psn)) {
      ++qp.cold.counters.out_of_order_received;
      const uint32_t lag = psn_distance(qp.comp.acked_psn, psn);
      if (!p->reasked && lag >= qp.comp.reorder_pkts) {
        qp.comp.reorder_pkts = static_cast<uint16_t>(std::min(lag + 1, kMaxReorderPackets));
      }
    }
    p->got |= uint64_t{1} << bit;
    if (p->asked >> bit & 1) {
      p->asked &= ~(uint64_t{1} << bit);
      --qp.comp.read_in_flight;
    }
    // Every request before this part was executed.
    acknowledge_through(psn_add(p->first_psn, wire::kPsnMask));
    responder_progress(psn);
    progress();  // new data, even below acked_psn
    if (!p->complete()) check_replay(*p, bit);
    retire_parts();
    if (qp.state == QpState::kRts && qp.parts_open() > 0) detect_holes();
  }

  // READ payload for response `idx` of w, into its local SGEs (checked when the READ started).
  bool place(const wire::Packet& pkt, SendWqe& w, uint32_t i, uint32_t idx) {
    const uint32_t offset = idx * qp.mtu();
    const uint32_t want = std::min(qp.mtu(), w.length - std::min(w.length, offset));
    if (pkt.payload_len != want) {
      m.to_error(qp, WcStatus::kBadRespErr, i);
      return false;
    }
    uint32_t skip = offset;
    const uint8_t* src = pkt.payload();
    uint32_t left = want;
    for (uint32_t s = 0; s < w.num_sge && left > 0; ++s) {
      const Sge& g = w.sge[s];
      if (skip >= g.length) {
        skip -= g.length;
        continue;
      }
      const uint32_t take = std::min(left, g.length - skip);
      const Mr* mr = m.mr_by_key(g.lkey);
      if (mr == nullptr) {
        m.to_error(qp, WcStatus::kLocProtErr, i);
        return false;
      }
      if (uint8_t* dst = mr->at(g.addr + skip)) std::memcpy(dst, src, take);
      src += take;
      left -= take;
      skip = 0;
    }
    qp.cold.counters.rx_payload_bytes += want;
    return true;
  }

  // Complete parts leave the ring oldest first; a WR whose parts all did is done.
  void retire_parts() {
    bool retired = false;
    uint32_t last = 0;
    while (qp.parts_open() > 0 && qp.part(qp.comp.parts_head).complete()) {
      const ReadPart& h = qp.part(qp.comp.parts_head++);
      SendWqe& w = qp.req.sq[h.wqe];
      if (h.rereq) --qp.req.rereq_count;
      w.read_pkts += h.npkts;
      retired = true;
      last = psn_add(h.first_psn, h.npkts - 1);
      if (w.read_pkts == w.npkts) {
        acknowledge_through(past_response(w));
        if (qp.state != QpState::kRts) return;
        retired = false;
      }
    }
    // snd_una moves over the parts done of a READ still incomplete.
    if (retired) acknowledge_through(last);
  }

  // A part's first hole, reorder_pkts behind the highest response (or ACK)
  // seen, is lost: asked again once (a second loss of it waits for the timer).
  void detect_holes() {
    const uint32_t high = qp.comp.acked_psn;
    for (uint32_t n = qp.comp.parts_head; n != qp.req.parts_tail; ++n) {
      ReadPart& p = qp.part(n);
      if (!psn_after(high, p.first_psn)) break;  // parts are in PSN order
      const uint32_t hole = p.first_missing();
      if (hole == p.npkts || p.rereq || p.hole == hole) continue;
      if (psn_diff(high, psn_add(p.first_psn, hole)) < static_cast<int32_t>(qp.comp.reorder_pkts)) continue;
      if (!(p.asked >> hole & 1)) continue;  // not asked yet: a rewind will
      declare_lost(p, hole);
    }
  }

  // A re-request's answer came past its first response (bit `b` of its range,
  // two or more after it, and at least the reordering window) while that one
  // is still missing: lost again, asked again now rather than at the timeout.
  void check_replay(ReadPart& p, uint32_t b) {
    if (p.hole == ReadPart::kNoHole || p.rereq || b <= p.hole || b >= uint32_t{p.hole} + p.rereq_len) return;
    // (Where reordering was seen, as far as its window: a reordered answer is not a lost one.)
    if (b - p.hole < std::max<uint32_t>(kReplayPassPackets, qp.comp.reorder_pkts) || (p.got >> p.hole & 1) ||
        !(p.asked >> p.hole & 1)) {
      return;
    }
    if (p.first_missing() != p.hole) return;
    declare_lost(p, p.hole);
  }

  // Responses [hole, the next one received) of part p are lost: asked again
  // (with at least kRereqMinPackets while no reordering was seen, so that the
  // answer shows if its first response is lost again), and the loss window cut.
  void declare_lost(ReadPart& p, uint32_t hole) {
    const uint32_t end = p.next_received(hole);
    const uint64_t gone = p.asked & (end >= 64 ? ~uint64_t{0} : (uint64_t{1} << end) - 1) & ~((uint64_t{1} << hole) - 1);
    p.asked &= ~gone;
    qp.comp.read_in_flight -= std::min<uint32_t>(qp.comp.read_in_flight, std::popcount(gone));
    p.hole = static_cast<uint8_t>(hole);
    p.rereq = true;
    p.rereq_from = static_cast<uint8_t>(hole);
    // (Not where reordering was seen: there the extra responses would mostly
    // come twice for nothing, and the pass rule waits for the window anyway.)
    const uint32_t min_len = qp.comp.reorder_pkts <= kInitialReorderPackets ? kRereqMinPackets : 1;
    p.rereq_len = static_cast<uint8_t>(std::max(end - hole, std::min(min_len, p.npkts - hole)));
    ++qp.req.rereq_count;
    if (qp.cold.path) qp.cold.path->round_lost += end - hole;
    if (qp.loss().on_loss(m.loss_in_flight(qp) + end - hole)) {
      ++qp.cold.counters.loss_window_cuts;
      qp.flow.on_loss(m.now_ns, {uint64_t{end - hole} * qp.mtu(), qp.inflight_bytes()});
    }
  }


  // Where a READ or atomic that just got its last response lets the ACK point
  // move: past it, and past what the responder already acknowledged beyond it
  // (those WRs waited only for this one).
  uint32_t past_response(const SendWqe& w) const {
    return psn_after(qp.comp.acked_psn, w.last_psn()) ? qp.comp.acked_psn : w.last_psn();
  }
};

}  // namespace

void Engine::Impl::complete_response(Qp& qp, const wire::Packet& pkt) {
  if (qp.sr && !qp.peer_tita && qp.cold.counters.sr_fallbacks == 0) [[unlikely]] {
    // The peer answers without tita's trailer: a standard RoCE peer (or a tita
    // without telemetry). Selective repeat needs both ends; go-back-N it is.
    ++qp.cold.counters.sr_fallbacks;
    qp.loss().start();  // started at RTR (qp_to_rtr) unless the QP was told the peer is tita
    raise(EventKind::kQpRecoveryFallback, 0, qp.qpn);
  }
  Completer c{*this, qp};
  switch (pkt.op->kind) {
    case wire::Kind::kAck: c.on_ack(pkt); break;
    case wire::Kind::kReadResponse:
    case wire::Kind::kAtomicAck: c.on_response(pkt); break;
    default: break;
  }
}

void Engine::Impl::retire_released(Qp& qp) { Completer{*this, qp}.retire_released(); }

uint32_t* Engine::Impl::held_of(uint64_t token, Qp** qp_out, bool allocate) {
  const auto index = static_cast<uint32_t>(token >> (kHoldSlotBits + kHoldEpochBits));
  const auto epoch = static_cast<uint32_t>(token >> kHoldSlotBits) & ((1u << kHoldEpochBits) - 1);
  const auto wqe = static_cast<uint32_t>(token) & ((1u << kHoldSlotBits) - 1);
  Qp* qp = index < qps.size() && qps[index] && qps[index]->valid ? qps[index].get() : nullptr;
  if (qp == nullptr || qp->cold.hold_epoch != epoch || wqe >= qp->sq_size()) [[unlikely]] {
    ++counters.stale_releases;
    return nullptr;
  }
  if (qp->cold.held.empty()) {
    if (!allocate) {
      ++counters.stale_releases;
      return nullptr;
    }
    qp->cold.held.assign(qp->sq_size(), 0);
  }
  *qp_out = qp;
  return &qp->cold.held[wqe];
}

void Engine::hold_payload(uint64_t token) {
  Qp* qp;
  if (uint32_t* held = impl_->held_of(token, &qp, true)) {
    ++*held;
    ++qp->cold.holds;
    qp->comp.holding = true;
  }
}

void Engine::release_payload(uint64_t token) {
  Impl& m = *impl_;
  Qp* qp;
  uint32_t* held = m.held_of(token, &qp, false);
  if (held == nullptr) return;
  if (*held == 0) [[unlikely]] {
    ++m.counters.stale_releases;
    return;
  }
  qp->comp.holding = --qp->cold.holds != 0;
  if (--*held == 0 && qp->state != QpState::kError) {
    m.retire_released(*qp);
    m.settle();
  }
}

void Engine::Impl::on_cnp(Qp& qp) {
  ++qp.cold.counters.cnps_received;
  if (qp.cold.path) path_on_congestion(qp);
  qp.flow.on_cnp(now_ns);
}

void Engine::Impl::arm_rto(Qp& qp) {
  if (qp.comp.snd_una == qp.req.snd_max || qp.cold.attr.timeout == 0) {
    qp.comp.rto_deadline_ns = kNever;
    return;
  }
  // Local ACK timeout: 4.096 us * 2^timeout, doubled per consecutive timeout.
  const uint32_t shift = std::min<uint32_t>(qp.cold.attr.timeout + qp.comp.backoff, 31);
  const uint64_t rto = uint64_t{4096} << shift;
  // Tail-loss probe, towards a go-back-N peer not known to be tita (the loss
  // window started for it) and in selective repeat between titas: when the
  // last packets of a flight (or the last READ responses) or their ACKs are
  // lost, nothing behind them brings a NAK, a SACK or a response gap, and the
  // IBA timeout (67 ms at perftest's 14, doubling) would be all that is left.
  // Once per progress, the first wait is a few measured round trips instead;
  // what it resends a duplicate-aware responder ACKs again (IBA 9.9.1.1), so an
  // early probe costs at most a loss window of resends (go-back-N) or one
  // packet, or the responses still missing of the open READs (selective repeat).
  const uint64_t srtt = qp.cold.probe.srtt_ns;
  // (Not go-back-N between titas: there an early probe resends the flight,
  // and a sender whose NIC queues behind a capped rate probed early all the
  // time: tita-doctor accept's capped pair, 4,500-5,200 packets resent.)
  const bool probe = (qp.selective() || qp.loss().started()) && !qp.comp.probed && srtt != 0;
  const uint64_t pto = std::max({kTailProbeMinNs, kTailProbeRtts * srtt, srtt + 4 * qp.cold.probe.rttvar_ns});
  qp.comp.tail_probe = probe && pto < rto;
  qp.comp.rto_deadline_ns = now_ns + (qp.comp.tail_probe ? pto : rto);
}

void Engine::Impl::on_timeout(Qp& qp) {
  qp.comp.rto_deadline_ns = kNever;
  if (qp.comp.snd_una == qp.req.snd_max) return;
  if (qp.comp.tail_probe) {
    // Not a timeout: no retry spent, no backoff; a loss for the loss window.
    qp.comp.tail_probe = false;
    qp.comp.probed = true;
    ++qp.cold.counters.tail_probes;
    if (qp.selective()) {
      // RFC 8985's probe: the last packet again, whose answer tells what else
      // is missing. READ responses run in PSN order on one path, so a probe's
      // worth of silence says every response still missing is lost (a tail
      // of them brings no gap, nor does a re-request answered by nothing):
      // each open READ part is asked again from its first missing response.
      bool asked = false;
      for (uint32_t n = qp.comp.parts_head; n != qp.req.parts_tail; ++n) {
        ReadPart& part = qp.part(n);
        const uint32_t hole = part.first_missing();
        if (hole >= part.npkts || part.rereq) continue;
        Completer{*this, qp}.declare_lost(part, hole);
        asked = true;
      }
      if (!asked) mark_lost(qp, psn_add(qp.req.snd_max, wire::kPsnMask), /*again=*/true);
      arm_rto(qp);
      return;
    }
    qp.flow.on_loss(now_ns, {qp.req.nxt_bytes - qp.comp.una_bytes, qp.inflight_bytes()});
    if (qp.loss().on_loss(loss_in_flight(qp))) ++qp.cold.counters.loss_window_cuts;
    rewind(qp, qp.comp.snd_una);
    arm_rto(qp);
    return;
  }
  ++qp.cold.counters.timeouts;
  if (qp.comp.retry_left == 0) {
    retry_exceeded(qp, kNil, false);
    return;
  }
  --qp.comp.retry_left;
  qp.comp.backoff = static_cast<uint8_t>(std::min(qp.comp.backoff + 1, 8));
  qp.flow.on_timeout(now_ns);
  if (!qp.selective() || qp.parts_open() > 0) {  // (selective repeat: for its READs, loss_allows)
    qp.loss().on_timeout(loss_in_flight(qp));
    ++qp.cold.counters.loss_window_cuts;
  }
  // Resend everything unacknowledged; selective repeat forgets its SACKs
  // and what it resent too, since the receiver may have dropped what it kept.
  // READ parts are asked again each from its first missing response (never
  // from before it: a responder need not answer a repeated READ that starts
  // before what it last served, and Linux rxe does not).
  std::fill(qp.cold.sacked.begin(), qp.cold.sacked.end(), 0);
  rewind(qp, qp.comp.snd_una, /*forget_resent=*/true);
  if (qp.spraying()) {
    // The timeout that just ran (backoff was raised above for the next one).
    const uint64_t waited = uint64_t{4096} << std::min<uint32_t>(qp.cold.attr.timeout + qp.comp.backoff - 1, 31);
    spray_on_timeout(qp, now_ns - std::min(now_ns, waited));
  }
  arm_rto(qp);
  if (qp.cold.path) path_on_timeout(qp);
}

void Engine::Impl::retry_exceeded(Qp& qp, uint32_t failed, bool by_nak) {
  ++qp.cold.counters.retry_exceeded;
  Event e{EventKind::kQpRetryExceeded, 0, qp.qpn};
  e.psn = qp.comp.snd_una;
  e.retries = qp.cold.attr.retry_cnt;
  e.by_nak = by_nak;
  to_error(qp, WcStatus::kRetryExcErr, failed);
  raise(e);
}

void Engine::Impl::on_rnr_wait_over(Qp& qp) {
  qp.comp.rnr_deadline_ns = kNever;
  rewind(qp, qp.comp.rnr_psn);
  if (qp.cold.path) qp.cold.path->progress_ns = now_ns;  // the wait was the responder's request, not a stall
}

void Engine::Impl::probe_sent(Qp& qp, uint32_t psn, bool read) {
  RttProbe& p = qp.cold.probe;
  // A tita peer echoes a timestamp in every ACK; its READ responses echo none,
  // so a READ is still timed (for the tail-loss probe's clock).
  if ((qp.peer_tita && !read) || p.armed) return;
  p.armed = true;
  p.read = read;
  p.psn = psn;
  p.sent_ns = now_ns;
}

void Engine::Impl::probe_answered(Qp& qp, uint64_t rtt_ns) {
  qp.cold.probe.armed = false;
  rtt_smooth(qp.cold.probe, rtt_ns);
}

void Engine::Impl::rtt_smooth(RttProbe& p, uint64_t rtt_ns) {
  if (p.srtt_ns == 0) {  // RFC 6298, 2.2 and 2.3
    p.srtt_ns = rtt_ns;
    p.rttvar_ns = rtt_ns / 2;
    return;
  }
  const uint64_t err = p.srtt_ns > rtt_ns ? p.srtt_ns - rtt_ns : rtt_ns - p.srtt_ns;
  p.rttvar_ns = (3 * p.rttvar_ns + err) / 4;
  p.srtt_ns = (7 * p.srtt_ns + rtt_ns) / 8;
}

void Engine::Impl::probe_void_from(Qp& qp, uint32_t psn) {
  if (qp.cold.probe.armed && !psn_before(qp.cold.probe.psn, psn)) qp.cold.probe.armed = false;
}

}  // namespace tita::engine
