// Path control: Hash Dodging (issue 8, doc/hash-dodging.md).
//
// A QP whose path silently drops its packets (a black hole, a port losing
// packets at random) learns it from protocol state alone and moves to the next
// dodge value: a few bits of the UDP source port (or the DSCP) that switches
// add to their ECMP choice, so that the new path shares no switch with the old
// one (lib/fabric ecmp.h). Seeds: the "second-level self-healing" design
// (detection within 600 ms, a TOS magic word); PRR (repath on RTO) and PLB
// (repath after congested rounds) are the published relatives.
//
// Rules, each off when its threshold is 0 (PathConfig):
//   timeout     `timeouts` consecutive RTOs (PRR).
//   stall       data outstanding and the responder's cumulative ACK unmoved
//               for W = max(stall_min_ns, stall_rtts x max(srtt, base RTT))
//               plus ack_req_every packet times at the CC rate, doubled per
//               stall repath without progress (up to 16 W); 8 W while the
//               peer has never answered (no RTT measured yet, the path
//               unproven: a fresh QP behind a dead link moves long before
//               its RTO, a slow first answer rarely costs a move). Faster
//               than the IB RTO, whose 4.096 us x 2^timeout is sized for the
//               worst fabric. When the first RTT sample after a stall repath
//               comes from a packet sent before it (the echoed timestamp says
//               so: the old path was slow, not dead; Eifel's test), the stall
//               was spurious and the QP's stall window doubles for good (up to
//               64 W): a host whose RTT jitters by milliseconds learns patience.
//   loss        `lossy_rounds` consecutive rounds (a window acknowledged) in
//               which loss signals (a go-back-N sequence NAK, each new
//               selective-repeat SACK hole, a READ response gap) counted at
//               least loss_permille of the packets the round acknowledged.
//   throughput  over collapse_rtts RTTs, newly acknowledged bytes below
//               collapse_permille of min(CC rate x time, bytes sent).
// Congestion says something, a black hole says nothing: a CE-marked ACK, a
// CNP or an INT hop with int_queue_bytes queued holds the stall rule for one
// window and disqualifies the current round and throughput window.
//
// A path change is a transition of the whole QP: it resets the completer's
// backoff and the pacing clock and asks the requester to resend (qp.h).
// On a change: the next dodge value (wire::dodge_next), the header template
// rebuilt, the RTO backoff reset, congestion control restarted (reset_cc); for
// a stall everything outstanding resent (a timeout already does that), for
// loss what the old path may have swallowed of the retransmissions (go-back-N:
// from snd_una; selective repeat: the holes already resent once). The
// responder side follows the peer: ACKs, NAKs and READ responses carry the
// dodge value of the latest request received, so a failure of the reverse path
// is dodged by the requester's change too. That alone fails when the two
// directions hash apart: each switch hashes each direction its own way, so the
// requests' value that avoids a dead link may be the one that sends the
// answers into it (with two spines, every value kills one direction or the
// other). The responder therefore has a say of its own: a request that comes
// again (or a resend of a packet kept out of order: its SACK was lost) says
// its answer was lost, and a round of them (a duplicate whose PSN is not after
// the last duplicate's: the requester started over, from a timeout, a probe or
// a re-asked READ) moves the answers one value on from the one they follow
// (path_on_duplicate; a sprayed QP's echoed value too): the first round, and
// then a round only if it starts where the one before it did (a requester that
// moved on in between heard the answers).
// Requests that cross while the answers die reach the responder only on a
// value whose forward path works, and each such round moves the answers on,
// so some round finds a value that works both ways. Per-QP counters count changes by
// reason; a hook sees each one. Nothing here runs per packet unless path
// control is on for the QP, and nothing logs.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "engine_impl.h"

namespace tita::engine {

using wire::psn_before;

std::string_view to_string(RepathReason r) {
  switch (r) {
    case RepathReason::kTimeout: return "timeout";
    case RepathReason::kStall: return "stall";
    case RepathReason::kLoss: return "loss";
    case RepathReason::kThroughput: return "throughput";
    case RepathReason::kManual: return "manual";
    case RepathReason::kCount: break;
  }
  return "?";
}

namespace {

constexpr uint8_t kMaxStallDoublings = 4;
constexpr uint8_t kUnansweredDoublings = 3;  // 8 W before the peer's first answer
constexpr uint8_t kMaxPatience = 6;


uint16_t field_value(const Qp& qp, wire::DodgeField f) {
  return f == wire::DodgeField::kDscp ? static_cast<uint16_t>(qp.cold.attr.ah_attr.traffic_class >> 2) : qp.cold.udp_sport;
}

// max(smoothed RTT, base RTT): the time scale of the stall and throughput rules.
uint64_t rtt_ref(const Qp& qp, const EngineConfig& cfg) { return std::max(qp.cold.path->srtt_ns, cfg.base_rtt_ns); }

uint64_t stall_window(const Qp& qp, const EngineConfig& cfg) {
  const PathState& p = *qp.cold.path;
  const uint64_t rate = std::max<uint64_t>(qp.flow.rate_bps(), 1'000'000);
  const uint64_t packet_ns = uint64_t{qp.mtu() + 100} * 8'000'000'000ull / rate;
  const uint64_t w = std::max(p.cfg.stall_min_ns, p.cfg.stall_rtts * rtt_ref(qp, cfg)) + cfg.ack_req_every * packet_ns;
  return w << (std::min(p.stalls, kMaxStallDoublings) + p.patience + (p.progressed ? 0 : kUnansweredDoublings));
}

void new_window(Qp& qp, uint64_t now_ns) {
  PathState& p = *qp.cold.path;
  p.win_start_ns = now_ns;
  p.win_una_bytes = qp.comp.una_bytes;
  p.win_sent_bytes = 0;
  p.win_rate_bps = qp.flow.rate_bps();
  p.win_congested = false;
}

}  // namespace

void Engine::Impl::path_init(Qp& qp, const PathConfig& cfg) {
  PathState fresh;
  fresh.cfg = cfg;
  fresh.mask = cfg.mask ? cfg.mask : wire::dodge_default_mask(cfg.field);
  fresh.on = cfg.field != wire::DodgeField::kNone && wire::dodge_mask_valid(cfg.field, fresh.mask);
  if (fresh.on) {
    qp.cold.path = std::make_unique<PathState>(fresh);
  } else {
    qp.cold.path.reset();
  }
  if (qp.state == QpState::kRtr || qp.state == QpState::kRts) path_at_rtr(qp);
}

// Builds the QP's headers at RTR: the dodge values start as what the port (or
// DSCP) of the address vector carries, so the first header is the usual one.
void Engine::Impl::path_at_rtr(Qp& qp) {
  if (qp.cold.path) {
    PathState& p = *qp.cold.path;
    p.dodge = p.resp_dodge = static_cast<uint16_t>(wire::dodge_get(p.mask, field_value(qp, p.cfg.field)));
  }
  qp.cold.hdr.init(path_fields(qp));
  if (qp.cold.path) qp.cold.path->resp_hdr = qp.cold.hdr;
}

void Engine::Impl::path_on_send(Qp& qp, uint32_t payload_len) {
  PathState& p = *qp.cold.path;
  const bool empty = qp.comp.snd_una == qp.req.snd_max;
  if (empty) p.progress_ns = now_ns;  // into an empty pipe: nothing was owed until now
  if (!p.round_open) {
    p.round_open = true;
    p.round_end_set = false;  // set at the first ACK: everything out by then
    p.round_start = qp.comp.snd_una;
    p.round_lost = 0;
    p.round_congested = false;
  }
  if (p.win_start_ns == kNever) new_window(qp, now_ns);
  p.win_sent_bytes += payload_len;
  if (p.cfg.stall_rtts != 0 && (empty || p.deadline_ns == kNever)) {
    p.deadline_ns = std::min(p.deadline_ns, p.progress_ns + stall_window(qp, cfg));
  }
}

void Engine::Impl::path_on_progress(Qp& qp) {
  PathState& p = *qp.cold.path;
  p.progress_ns = now_ns;
  p.stalls = 0;
  p.timeouts = 0;
  if (!p.progressed) {
    // The first answer: the deadline armed at 8 W gives way to W.
    p.progressed = true;
    if (p.cfg.stall_rtts != 0 && qp.comp.snd_una != qp.req.snd_max) p.deadline_ns = now_ns + stall_window(qp, cfg);
  }
}

void Engine::Impl::path_on_una(Qp& qp) {
  PathState& p = *qp.cold.path;
  const bool idle = qp.comp.snd_una == qp.req.snd_max && qp.req.sq_next == qp.req.sq_tail;
  // Throughput: compared once the window is long enough, then started anew.
  if (p.win_start_ns != kNever && p.cfg.collapse_permille > 0 && p.cfg.collapse_rtts > 0) {
    const uint64_t span_ns = now_ns - p.win_start_ns;
    if (span_ns >= p.cfg.collapse_rtts * rtt_ref(qp, cfg)) {
      const uint64_t delivered = qp.comp.una_bytes - p.win_una_bytes;
      const double allowed_by_rate = static_cast<double>(p.win_rate_bps) / 8 * static_cast<double>(span_ns) * 1e-9;
      const double expected = std::min(allowed_by_rate, static_cast<double>(p.win_sent_bytes));
      const bool collapsed = !p.win_congested && expected >= 8.0 * qp.mtu() &&
                             static_cast<double>(delivered) * 1000 < expected * p.cfg.collapse_permille;
      new_window(qp, now_ns);
      if (collapsed) {
        repath(qp, RepathReason::kThroughput);
        return;
      }
    }
  }
  if (idle) p.win_start_ns = kNever;  // application-limited: no window until it sends again
  // Rounds.
  if (!p.round_open) return;
  const uint32_t last_out = wire::psn_add(qp.req.snd_max, wire::kPsnMask);
  if (!p.round_end_set) {
    p.round_end_set = true;
    p.round_end = last_out;
  }
  if (psn_before(qp.comp.snd_una, wire::psn_add(p.round_end, 1))) return;
  const uint64_t acked = wire::psn_distance(qp.comp.snd_una, p.round_start);
  const bool lossy = p.round_lost > 0 && !p.round_congested &&
                     uint64_t{p.round_lost} * 1000 >= acked * p.cfg.loss_permille;
  p.lossy_rounds = lossy ? p.lossy_rounds + 1 : 0;
  p.round_open = qp.comp.snd_una != qp.req.snd_max;
  p.round_start = qp.comp.snd_una;
  p.round_end = last_out;
  p.round_lost = 0;
  p.round_congested = false;
  if (p.cfg.lossy_rounds > 0 && p.lossy_rounds >= p.cfg.lossy_rounds) repath(qp, RepathReason::kLoss);
}

void Engine::Impl::path_on_congestion(Qp& qp) {
  PathState& p = *qp.cold.path;
  p.congestion_ns = now_ns;
  p.congested = true;
  p.round_congested = true;
  p.win_congested = true;
}

// An ACK's sample (RTT, CE echoed, INT hops): the RTT for the stall and
// throughput rules' time scale and for the spurious-stall test; and what says
// the path is congested rather than failed (path control's rule, not the
// algorithm's): a CE mark echoed, or an INT hop with int_queue_bytes queued.
void Engine::Impl::path_on_sample(Qp& qp, const cc::AckSample& s) {
  PathState& p = *qp.cold.path;
  const uint64_t rtt_ns = s.rtt_ns;
  p.srtt_ns = p.srtt_ns == 0 ? rtt_ns : p.srtt_ns - p.srtt_ns / 8 + rtt_ns / 8;
  if (p.stall_open) {
    // The first sample after a stall repath: was its packet sent before it?
    p.stall_open = false;
    if (now_ns - rtt_ns < p.stall_ns) {
      ++qp.cold.counters.spurious_stalls;
      p.patience = static_cast<uint8_t>(std::min<uint32_t>(p.patience + 1u, kMaxPatience));
    }
  }
  bool queued = s.ce_packets > 0;
  for (int i = 0; i < s.n_hops; ++i) queued |= s.hops[i].qlen_bytes >= p.cfg.int_queue_bytes;
  if (queued) path_on_congestion(qp);
}

void Engine::Impl::path_on_timeout(Qp& qp) {
  PathState& p = *qp.cold.path;
  ++p.timeouts;
  if (p.cfg.timeouts > 0 && p.timeouts >= p.cfg.timeouts) repath(qp, RepathReason::kTimeout);
}

void Engine::Impl::path_check(Qp& qp) {
  PathState& p = *qp.cold.path;
  p.deadline_ns = kNever;
  if (qp.state != QpState::kRts || qp.comp.snd_una == qp.req.snd_max) return;  // re-armed by the next send
  if (qp.comp.rnr_deadline_ns != kNever || p.cfg.stall_rtts == 0) {
    // The responder asked us to wait (RNR): that is not a failed path.
    p.progress_ns = now_ns;
    if (p.cfg.stall_rtts != 0) p.deadline_ns = qp.comp.rnr_deadline_ns;
    return;
  }
  const uint64_t w = stall_window(qp, cfg);
  if (now_ns - p.progress_ns < w) {
    p.deadline_ns = p.progress_ns + w;
    return;
  }
  if (p.congested && now_ns - p.congestion_ns < w) {
    // Congested a moment ago: slow, not failed. Look again a window later;
    // a black hole stays silent meanwhile.
    p.deadline_ns = now_ns + w;
    return;
  }
  repath(qp, RepathReason::kStall);
}

void Engine::Impl::path_follow(Qp& qp, const wire::Packet& request) {
  PathState& p = *qp.cold.path;
  const uint16_t v = p.cfg.field == wire::DodgeField::kDscp ? request.dscp : request.udp().src_port.get();
  const auto dodge = static_cast<uint16_t>(wire::dodge_advance(p.mask, wire::dodge_get(p.mask, v), qp.cold.ack_shift));
  if (dodge == p.resp_dodge) return;
  p.resp_dodge = dodge;
  p.resp_hdr.init(path_fields(qp, dodge));
  ++qp.cold.counters.path_follows;
}

void Engine::Impl::path_on_duplicate(Qp& qp, uint32_t psn) {
  if (!qp.cold.path && !qp.spraying()) return;
  QpCold& c = qp.cold;
  const bool first = !c.dup_seen;
  const bool round = first || !psn_before(c.dup_last_psn, psn);
  c.dup_seen = true;
  c.dup_last_psn = psn;
  if (!round) return;
  // The first round moves the answers; later ones only when the requester
  // started over at or before where the round before it did: it has not
  // heard us since. A requester that moved on between two rounds heard the
  // answers on this value (a resend for nothing, not a dead path).
  const bool stuck = first || !psn_before(c.dup_round_psn, psn);
  c.dup_round_psn = psn;
  if (!stuck) return;
  ++qp.cold.ack_shift;  // wrapping at 256 is harmless: it only has to move
  ++qp.cold.counters.ack_path_shifts;
  if (qp.cold.path) {
    PathState& p = *qp.cold.path;
    p.resp_dodge = static_cast<uint16_t>(wire::dodge_next(p.mask, p.resp_dodge));
    p.resp_hdr.init(path_fields(qp, p.resp_dodge));
  }
}

uint16_t Engine::Impl::echo_sport(const Qp& qp, uint16_t arrived) const {
  const uint16_t mask = qp.cold.spray->mask;
  return wire::dodge_set(mask, arrived, wire::dodge_advance(mask, wire::dodge_get(mask, arrived), qp.cold.ack_shift));
}

void Engine::Impl::repath(Qp& qp, RepathReason why) {
  PathState& p = *qp.cold.path;
  const uint16_t old = p.dodge;
  p.dodge = static_cast<uint16_t>(wire::dodge_next(p.mask, p.dodge));
  const wire::PathFields f = path_fields(qp);
  qp.cold.hdr.init(f);
  ++qp.cold.counters.path_changes;
  switch (why) {
    case RepathReason::kTimeout: ++qp.cold.counters.path_changes_timeout; break;
    case RepathReason::kStall: ++qp.cold.counters.path_changes_stall; break;
    case RepathReason::kLoss: ++qp.cold.counters.path_changes_loss; break;
    case RepathReason::kThroughput: ++qp.cold.counters.path_changes_throughput; break;
    case RepathReason::kManual: ++qp.cold.counters.path_changes_manual; break;
    case RepathReason::kCount: break;
  }
  // The timeout backoff and congestion state describe the old path. After a
  // timeout the RTO runs again unbacked-off; otherwise it keeps running from the
  // last progress, so a peer that is gone still exhausts its retries.
  qp.comp.backoff = 0;
  if (why == RepathReason::kTimeout) arm_rto(qp);
  if (p.cfg.reset_cc) {
    init_flow(qp);
    qp.req.next_send_ps = std::min(qp.req.next_send_ps, now_ns * 1000);
  }
  if (why == RepathReason::kStall) {
    // Nothing came back: resend everything outstanding on the new path, as a
    // timeout would, without spending a retry.
    std::fill(qp.cold.sacked.begin(), qp.cold.sacked.end(), 0);
    rewind(qp, qp.comp.snd_una, /*forget_resent=*/true);
    p.stalls = static_cast<uint8_t>(std::min<uint32_t>(p.stalls + 1u, 255u));
    p.stall_open = true;
    p.stall_ns = now_ns;
  } else {
    p.stall_open = false;
    if (why == RepathReason::kLoss || why == RepathReason::kThroughput) {
      // Retransmissions the old path may have lost are never asked for again
      // (go-back-N NAKs a gap once; selective repeat resends a hole once): send
      // them again on the new path.
      if (qp.selective()) {
        const uint32_t mask = cfg.sr_window - 1;
        for (uint32_t psn = qp.comp.snd_una; wire::psn_before(psn, qp.req.snd_max); psn = wire::psn_add(psn, 1)) {
          const uint32_t bit = psn & mask;
          if (bit_test(qp.cold.retx_done, bit) && !bit_test(qp.cold.sacked, bit)) mark_lost(qp, psn, /*again=*/true);
        }
      } else {
        rewind(qp, qp.comp.snd_una);
      }
    }
  }
  // Detection starts over on the new path.
  p.progress_ns = now_ns;
  p.deadline_ns = kNever;
  p.timeouts = 0;
  p.lossy_rounds = 0;
  p.round_open = false;
  p.win_start_ns = kNever;
  p.congested = false;
  if (qp.comp.snd_una != qp.req.snd_max && p.cfg.stall_rtts != 0) {
    p.deadline_ns = now_ns + stall_window(qp, cfg);
  }
  if (path_hook != nullptr) {
    path_hook(path_ctx, PathEvent{now_ns, qp.qpn, why, old, p.dodge, f.udp_src_port, f.dscp});
  }
}

// ---------------------------------------------------------------- control

int Engine::set_path_config(uint32_t qp_num, const PathConfig& pc, std::string* err) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  auto fail = [err](std::string msg) {
    if (err) *err = std::move(msg);
    return -EINVAL;
  };
  if (qp == nullptr) return fail("set_path_config: no QP " + std::to_string(qp_num));
  const uint16_t mask = pc.mask ? pc.mask : wire::dodge_default_mask(pc.field);
  if (!wire::dodge_mask_valid(pc.field, mask)) {
    return fail("set_path_config: mask must be one run of bits of its field (DSCP: within 0x3f)");
  }
  if (qp->cold.spray && pc.field == wire::DodgeField::kUdpSport) {
    return fail("set_path_config: this QP sprays over its UDP source port (turn spraying off or dodge on the DSCP)");
  }
  m.path_init(*qp, pc);
  m.reconsider(*qp);
  return 0;
}

int Engine::repath(uint32_t qp_num) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  if (qp == nullptr || !qp->cold.path || (qp->state != QpState::kRtr && qp->state != QpState::kRts)) return -EINVAL;
  m.repath(*qp, RepathReason::kManual);
  m.reconsider(*qp);
  return 0;
}

void Engine::set_path_hook(PathHook fn, void* ctx) {
  impl_->path_hook = fn;
  impl_->path_ctx = ctx;
}

}  // namespace tita::engine
