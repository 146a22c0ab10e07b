// Spraying one QP's requests over several entropy values (doc/multipath.md).
//
// Each request packet of a SEND or WRITE goes out on one of the QP's values
// (the dodge bits of its UDP source port), chosen by the policy per packet,
// or per flowlet (SprayConfig::flowlet_ns: a value kept until a gap); the
// value and the send time are kept per PSN of the selective-repeat window.
// ACKs and selective ACKs say which packets arrived, hence which value
// delivered, and the ECHO trailer of the packet that triggered an ACK gives
// that value's CE marks and RTT. Packets of different values may overtake
// each other, so a gap is not a loss: a packet is lost once a packet sent a
// reordering window after it has been delivered (RACK, RFC 8985), or at that
// time measured from the latest delivery. A packet resent for nothing comes
// back as a D-SACK (an ACK whose SACK it already covers): the window widens,
// and the value the first sending took is credited with it. The last packet
// sent (or resent) has nothing after it to be judged by: with no ACK for
// twice the slowest path's RTT and a window, it is resent on another value (a
// tail loss probe, RFC 8985 section 7), whose ACK brings RACK the evidence
// for the rest; a probe that brings no news is followed by the oldest packet
// not acknowledged, which makes the responder move its answers (the ACKs
// may be what dies), until a delivery is seen. A value whose packets are lost
// retire_losses times in a row, with evidence from the other values and after
// two of its own round trips of silence, is replaced by an unused one: a
// black-holed path is left after a few packets, each resent on another value,
// without a timeout, while a path behind a deep queue, which still delivers,
// is kept.
//
// READ and atomic requests keep the QP's own path: their responses come back
// in PSN order on the responder's path and are recovered as on one path.
#include <algorithm>
#include <cerrno>

#include "engine_impl.h"

namespace tita::engine {

using wire::psn_add;
using wire::psn_before;
using wire::psn_distance;

namespace {

constexpr uint8_t kUnsprayed = 0xff;  // psn_path: sent on the QP's own path
constexpr uint32_t kMaxPaths = 16;
constexpr uint64_t kMinReorderNs = 2'000;

bool in_use(const SprayState& s, uint16_t value) {
  return std::any_of(s.paths.begin(), s.paths.end(), [&](const SprayPath& p) { return p.value == value; });
}

// The first value from `from` on (modulo the values the mask has) that no
// path holds, is not retired and `fits`; -1 if there is none.
template <class Fits>
int32_t free_value(const SprayState& s, uint32_t from, Fits fits) {
  const uint32_t n = wire::dodge_values(s.mask);
  for (uint32_t i = 0; i < n; ++i) {
    const auto v = static_cast<uint16_t>((from + i) % n);
    if (fits(v) && !in_use(s, v) && !s.retired_values[v]) return v;
  }
  return -1;
}

// A free value, searching on from the last one handed out; once every free
// value has been retired, they are tried again.
uint16_t unused_value(SprayState& s) {
  for (int pass = 0; pass < 2; ++pass) {
    const int32_t v = free_value(s, s.fresh, [](uint16_t) { return true; });
    if (v >= 0) {
      s.fresh = static_cast<uint32_t>(v) + 1;
      return static_cast<uint16_t>(v);
    }
    std::fill(s.retired_values.begin(), s.retired_values.end(), 0);
  }
  return s.paths.front().value;  // cannot happen: set_spray keeps paths < values
}

// Offset policy: a free value of the same class modulo K as `v` (what
// hash-offset ECMP turns into the same next hop wherever a tier has K or a
// divisor of K choices), searching on from v; or v itself if there is none.
uint16_t same_class_value(const SprayState& s, uint16_t v) {
  const auto k = static_cast<uint32_t>(s.paths.size());
  const int32_t c = free_value(s, v + 1u, [&](uint16_t x) { return x % k == v % k; });
  return c >= 0 ? static_cast<uint16_t>(c) : v;
}

// Offset policy, a class that failed: a free value of another class than
// v's, searching on from the last handed out; any free value if none.
uint16_t other_class_value(SprayState& s, uint16_t v) {
  const auto k = static_cast<uint32_t>(s.paths.size());
  const int32_t c = free_value(s, s.fresh, [&](uint16_t x) { return x % k != v % k; });
  if (c < 0) return unused_value(s);
  s.fresh = static_cast<uint32_t>(c) + 1;
  return static_cast<uint16_t>(c);
}

// `failed`: the value lost its packets (not just congested): not to be tried
// again soon. Under the offset policy the K values are K classes modulo K,
// node-disjoint paths; a failed value is replaced within its class first
// (packets late behind a queue on a busy host look lost, and a value from
// another class would put two values on one path for good), and only if that
// replacement fails too before delivering anything does the class give way:
// its path is broken (a black hole), and a value of another class takes over.
void replace(SprayState& s, SprayPath& p, bool failed) {
  if (failed) s.retired_values[p.value] = 1;
  const bool offset = s.cfg.policy == SprayPolicy::kOffset;
  const bool keep_class = offset && failed && !(p.class_kept && p.stats.delivered == 0);
  const uint16_t same = keep_class ? same_class_value(s, p.value) : p.value;
  p.class_kept = keep_class && same != p.value;
  // A class that gave way is not tried again at once: the next value comes
  // from another class (the failed one's next hop leads into the fault).
  p.value = p.class_kept ? same : offset && failed ? other_class_value(s, p.value) : unused_value(s);
  ++p.generation;
  p.lost_in_row = 0;
  p.delivered_ns = p.delivered_sent_ns = p.echoed_ns = p.marked_ns = 0;
  p.stats = SprayPathInfo{};
  p.stats.value = p.value;
}

// The value of path i when spraying starts.
uint16_t initial_value(const SprayState& s, uint32_t i) {
  const uint32_t n = wire::dodge_values(s.mask);
  const uint32_t step = s.cfg.policy == SprayPolicy::kOffset ? 1 : 7;  // 7: odd, so K values stay distinct
  return static_cast<uint16_t>((s.base + i * step) % n);
}

// The smallest smoothed RTT of the paths (base RTT if none has a sample yet).
uint64_t min_rtt(const SprayState& s, const EngineConfig& cfg) {
  uint64_t lo = UINT64_MAX;
  for (const SprayPath& p : s.paths) {
    if (p.stats.srtt_ns != 0) lo = std::min(lo, p.stats.srtt_ns);
  }
  return lo == UINT64_MAX ? cfg.base_rtt_ns : lo;
}

// RACK's window (a quarter of the minimum RTT, times the multiplier that
// D-SACKs raise, at most the slowest path's RTT) plus how much slower the
// slowest path is than the fastest: packets of paths of unequal delay
// overtake each other by about that much. A path without an RTT sample yet
// counts at the base RTT (a new value is not judged by its neighbours' RTT).
uint64_t reorder_window(const SprayState& s, const EngineConfig& cfg) {
  if (s.cfg.reorder_ns != 0) return s.cfg.reorder_ns;
  const uint64_t lo = min_rtt(s, cfg);
  uint64_t hi = lo;
  for (const SprayPath& p : s.paths) hi = std::max(hi, p.stats.srtt_ns != 0 ? p.stats.srtt_ns : cfg.base_rtt_ns);
  return std::max(std::min(lo / 4 * s.reo_mult, hi) + (hi - lo), kMinReorderNs);
}

// How long the last packet sent may go unacknowledged before it is probed.
uint64_t probe_timeout(const SprayState& s, const EngineConfig& cfg, uint64_t wnd) {
  uint64_t hi = 0;
  for (const SprayPath& p : s.paths) hi = std::max(hi, p.stats.srtt_ns != 0 ? p.stats.srtt_ns : cfg.base_rtt_ns);
  return 2 * hi + wnd;
}

}  // namespace

std::string_view to_string(SprayPolicy p) {
  switch (p) {
    case SprayPolicy::kRoundRobin: return "round_robin";
    case SprayPolicy::kReps: return "reps";
    case SprayPolicy::kOffset: return "offset";
  }
  return "?";
}

bool parse_spray_policy(std::string_view name, SprayPolicy* out) {
  for (SprayPolicy p : {SprayPolicy::kRoundRobin, SprayPolicy::kReps, SprayPolicy::kOffset}) {
    if (name == to_string(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

uint16_t Engine::Impl::spray_pick(Qp& qp, const SendWqe& w, uint32_t psn, bool retransmission) {
  SprayState& s = *qp.cold.spray;
  const auto k = static_cast<uint32_t>(s.paths.size());
  const uint32_t slot = psn & (cfg.sr_window - 1);
  if (w.needs_response()) {
    for (uint32_t p = psn; psn_before(p, psn_add(w.first_psn, w.npkts)); p = psn_add(p, 1)) {
      s.psn_path[p & (cfg.sr_window - 1)] = kUnsprayed;
    }
    return 0;
  }
  uint32_t i;
  if (retransmission) {
    // A packet sent again goes on the value whose own ACK came back last
    // (a packet and its ACK got through both ways), not round robin, which
    // may pick another broken one: one bad link can break a value's data and
    // another value's ACKs.
    const uint8_t before = s.psn_path[slot];
    i = kUnsprayed;
    for (uint32_t j = 0; j < k; ++j) {
      if (j != before && s.paths[j].echoed_ns != 0 &&
          (i == kUnsprayed || s.paths[j].echoed_ns > s.paths[i].echoed_ns)) {
        i = j;
      }
    }
    if (i == kUnsprayed) {  // nothing delivered yet: the next one that is not the same
      i = s.next;
      s.next = (s.next + 1) % k;
      if (i == before) i = (i + 1) % k;
    }
  } else if (s.cfg.flowlet_ns != 0 && s.flowlet_path != kUnsprayed && now_ns - s.flowlet_sent_ns < s.cfg.flowlet_ns &&
             s.paths[s.flowlet_path].generation == s.flowlet_generation) {
    i = s.flowlet_path;  // within the flowlet: the same value, in order
  } else if (s.cfg.policy == SprayPolicy::kReps && s.recycle_count > 0) {
    i = s.recycle[s.recycle_head];
    s.recycle_head = (s.recycle_head + 1) % static_cast<uint32_t>(s.recycle.size());
    --s.recycle_count;
  } else {
    i = s.next;
    s.next = (s.next + 1) % k;
  }
  if (!retransmission) {
    s.flowlet_path = static_cast<uint8_t>(i);
    s.flowlet_generation = s.paths[i].generation;
    s.flowlet_sent_ns = now_ns;
  }
  // A resend remembers the sending before it, which a D-SACK may vindicate.
  const uint8_t earlier = retransmission ? s.psn_path[slot] : kUnsprayed;
  s.psn_prev[slot] = {s.psn_sent_ns[slot], earlier, s.psn_generation[slot]};
  s.psn_path[slot] = static_cast<uint8_t>(i);
  s.psn_generation[slot] = s.paths[i].generation;
  s.psn_sent_ns[slot] = now_ns;
  ++s.paths[i].stats.sent;
  // A value is judged against packets sent a window after the last one it
  // delivered, or, before it has delivered any, after the first it carried
  // (spray_detect_losses): a fresh value is not given up on the clock alone.
  if (s.paths[i].delivered_sent_ns == 0) s.paths[i].delivered_sent_ns = now_ns;
  if (s.rack_deadline_ns == kNever) {  // a later one is found when this fires
    s.rack_deadline_ns = now_ns + probe_timeout(s, cfg, reorder_window(s, cfg));
  }
  return wire::dodge_set(s.mask, qp.cold.udp_sport, s.paths[i].value);
}

void Engine::Impl::spray_delivered(Qp& qp, uint32_t from, uint32_t to, uint32_t trigger, uint32_t ce,
                                   uint64_t rtt_ns) {
  SprayState& s = *qp.cold.spray;
  const uint32_t w = cfg.sr_window - 1;
  for (uint32_t p = from; psn_before(p, to); p = psn_add(p, 1)) {
    const uint8_t i = s.psn_path[p & w];
    if (i == kUnsprayed) continue;
    SprayPath& path = s.paths[i];
    const uint64_t sent = s.psn_sent_ns[p & w];
    if (sent >= s.rack_sent_ns) {
      s.rack_sent_ns = sent;
      s.rack_rtt_ns = now_ns - std::min(now_ns, sent);
    }
    s.psn_path[p & w] = kUnsprayed;  // counted once
    if (s.psn_generation[p & w] != path.generation) continue;  // sent on the value this path had before
    ++path.stats.delivered;
    path.lost_in_row = 0;
    path.delivered_ns = now_ns;
    path.delivered_sent_ns = std::max(path.delivered_sent_ns, sent);
    if (p != trigger) continue;
    path.echoed_ns = now_ns;
    if (rtt_ns != 0) path.stats.srtt_ns = path.stats.srtt_ns == 0 ? rtt_ns : (7 * path.stats.srtt_ns + rtt_ns) / 8;
    path.stats.ce += ce;
    if (ce > 0) path.marked_ns = now_ns;
    if (s.cfg.policy != SprayPolicy::kReps) continue;
    if (ce == 0) {
      if (s.recycle_count < s.recycle.size()) {
        s.recycle[(s.recycle_head + s.recycle_count) % s.recycle.size()] = i;
        ++s.recycle_count;
      }
    } else {
      replace(s, path, false);  // REPS: a marked value is not used again
      ++s.replaced;
    }
  }
}

uint64_t Engine::Impl::spray_detect_losses(Qp& qp) {
  SprayState& s = *qp.cold.spray;
  s.rack_deadline_ns = kNever;
  if (s.reo_mult > 1 && now_ns - s.dsack_ns > 16 * min_rtt(s, cfg)) s.reo_mult = 1;  // no D-SACK for 16 RTTs
  // RACK: the delivered packet sent last arrived rack_rtt after it was sent;
  // a packet sent before it is lost once that long and a window have passed.
  const uint64_t wnd = reorder_window(s, cfg);
  const uint32_t w = cfg.sr_window - 1;
  uint64_t lost = 0;
  uint32_t last = 0;  // the outstanding packet sent last, if nothing sent after it arrived
  uint64_t last_sent = 0;
  bool have_last = false;
  for (uint32_t p = qp.comp.snd_una; psn_before(p, qp.req.snd_max); p = psn_add(p, 1)) {
    const uint32_t bit = p & w;
    const uint8_t i = s.psn_path[bit];
    if (i == kUnsprayed || bit_test(qp.cold.sacked, bit) || bit_test(qp.cold.retx, bit)) continue;
    const uint64_t sent = s.psn_sent_ns[bit];
    if (sent >= s.rack_sent_ns) {  // nothing sent after it has arrived yet
      if (!have_last || sent >= last_sent) {
        last = p;
        last_sent = sent;
        have_last = true;
      }
      continue;
    }
    const uint64_t due = sent + s.rack_rtt_ns + wnd;
    if (due > now_ns) {
      s.rack_deadline_ns = std::min(s.rack_deadline_ns, due);
      continue;
    }
    mark_lost(qp, p, /*again=*/true);
    lost += qp.mtu();
    SprayPath& path = s.paths[i];
    if (s.psn_generation[bit] != path.generation) continue;  // the value it went on is gone already
    ++path.stats.lost;
    ++path.lost_in_row;
    // A value is given up on evidence from the other paths: packets sent a
    // window after the last one it delivered have arrived. (A host that polls
    // late finds losses by the clock with ACKs still in its queue; a value
    // that delivers along with the others is not silent then.)
    if (path.delivered_sent_ns + wnd > s.rack_sent_ns) continue;
    // A value whose packets came back CE-marked lately leads into a queue:
    // slow, not broken (its packets "lost" may still be in that queue, as
    // Hash Dodging's rules hold back for congestion). It is not retired;
    // what it lost is resent elsewhere all the same.
    if (path.marked_ns != 0 && now_ns - path.marked_ns < probe_timeout(s, cfg, wnd)) continue;
    if (path.lost_in_row >= s.cfg.retire_losses) {
      // Retired only once it has gone silent for two of its own round
      // trips: a value behind a deep queue still delivers, late and in the
      // queue's order, within about its RTT (which grows with the queue) -
      // its "lost" packets too, which the receiver then gets twice and
      // D-SACKs (spray_on_dsack credits the value) - and a black-holed one
      // nothing. Without this, queues that change faster than the
      // reordering window learns made losses of late packets and retired
      // values until all of a QP's ended on one link.
      const uint64_t own_rtt = path.stats.srtt_ns != 0 ? path.stats.srtt_ns : cfg.base_rtt_ns;
      if (now_ns - path.delivered_ns < 2 * own_rtt) continue;
      replace(s, path, true);
      ++s.retired;
    } else if (s.cfg.policy == SprayPolicy::kReps) {
      replace(s, path, false);  // REPS: a value that lost a packet is not used again
      ++s.replaced;
    }
  }
  // The tail probe: not a loss on its path (nothing says it was lost), but
  // resent on another one (spray_pick). A probe that brings no news (a
  // connection's first packets have no value known to work yet; the probe's
  // data or its answer may die too) is followed, a probe timeout apart, by
  // the oldest packet not acknowledged: the responder takes each as a round
  // of duplicates (the requester started over) and moves its answers one
  // value on (path_on_duplicate), so within as many probes as there are
  // values an answer finds a way back, long before the IBA timeout (a fresh
  // QP behind a black-holed link whose directions hashed apart waited for two
  // or three). Then the timeout's turn.
  if (s.probed_rack_sent_ns != s.rack_sent_ns) s.probes_unanswered = 0;
  if (have_last && s.probes_unanswered <= wire::dodge_values(s.mask)) {
    const uint64_t due = last_sent + probe_timeout(s, cfg, wnd);
    if (due > now_ns) {
      s.rack_deadline_ns = std::min(s.rack_deadline_ns, due);
    } else {
      mark_lost(qp, s.probes_unanswered == 0 ? last : qp.comp.snd_una, /*again=*/true);
      s.probed_rack_sent_ns = s.rack_sent_ns;
      ++s.probes_unanswered;
      ++s.tail_probes;
      lost += qp.mtu();
    }
  }
  return lost;
}

void Engine::Impl::spray_on_dsack(Qp& qp, uint32_t psn) {
  SprayState& s = *qp.cold.spray;
  ++s.dsacks;
  // The packet's first sending arrived after all: its value is late, not
  // broken - it delivered (a black-holed value's packets never come twice).
  if (psn_distance(qp.req.snd_max, psn) <= cfg.sr_window) {  // its slot is still its own
    const uint32_t slot = psn & (cfg.sr_window - 1);
    const SprayState::Sending prev = s.psn_prev[slot];
    s.psn_prev[slot].path = kUnsprayed;
    const uint8_t i = prev.path;
    if (i != kUnsprayed && prev.generation == s.paths[i].generation) {
      SprayPath& path = s.paths[i];
      path.lost_in_row = 0;
      path.delivered_ns = now_ns;
      path.delivered_sent_ns = std::max(path.delivered_sent_ns, prev.sent_ns);
    }
  }
  // Once per round trip: the D-SACKs of one batch of spurious resends are one
  // lesson (RFC 8985 section 6.2, step 4).
  if (s.dsack_ns != 0 && now_ns - s.dsack_ns < min_rtt(s, cfg)) return;
  s.dsack_ns = now_ns;
  s.reo_mult = std::min<uint32_t>(s.reo_mult + 1, 64);
}

void Engine::Impl::spray_on_timeout(Qp& qp, uint64_t silent_since_ns) {
  // Nothing came back for a whole timeout: RACK had no delivery to judge by.
  // Every value that delivered nothing in that time is given up, so the
  // resent packets try other paths (values that all lead into one black hole
  // cannot keep a QP there).
  SprayState& s = *qp.cold.spray;
  for (SprayPath& p : s.paths) {
    if (p.delivered_ns <= silent_since_ns) {
      replace(s, p, true);
      ++s.retired;
    }
  }
  s.rack_deadline_ns = kNever;
}

int check_spray(const SprayConfig& sc, const PathConfig& path, std::string* err) {
  auto fail = [err](std::string msg) {
    if (err) *err = "spray: " + std::move(msg);
    return -EINVAL;
  };
  if (sc.paths == 0) return 0;
  if (sc.paths < 2 || sc.paths > kMaxPaths) return fail("paths must be 0 (off) or 2..16");
  const uint16_t mask = sc.mask ? sc.mask : wire::dodge_default_mask(wire::DodgeField::kUdpSport);
  if (!wire::dodge_mask_valid(wire::DodgeField::kUdpSport, mask)) {
    return fail("mask must be one run of bits of the UDP source port");
  }
  if (wire::dodge_values(mask) <= sc.paths) {
    return fail("the mask holds " + std::to_string(wire::dodge_values(mask)) + " values: room for fewer than " +
                std::to_string(sc.paths) + " paths and a spare");
  }
  if (path.field == wire::DodgeField::kUdpSport) {
    return fail("Hash Dodging uses the UDP source port of this QP (turn it off or dodge on the DSCP)");
  }
  if (sc.retire_losses == 0) return fail("retire_losses must be at least 1");
  if (sc.flowlet_ns > 1'000'000'000) return fail("flowlet_ns must be at most 1 s");
  return 0;
}

int Engine::set_spray(uint32_t qp_num, const SprayConfig& sc, std::string* err) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  if (qp == nullptr) {
    if (err) *err = "spray: no QP " + std::to_string(qp_num);
    return -EINVAL;
  }
  if (const int rc = check_spray(sc, qp->cold.path ? qp->cold.path->cfg : PathConfig{}, err); rc != 0) return rc;
  m.spray_init(*qp, sc);
  m.reconsider(*qp);
  return 0;
}

void Engine::Impl::spray_init(Qp& qp, const SprayConfig& sc) {
  if (sc.paths == 0) {
    qp.cold.spray.reset();
    set_ack_every(qp);
    return;
  }
  const uint16_t mask = sc.mask ? sc.mask : wire::dodge_default_mask(wire::DodgeField::kUdpSport);
  auto s = std::make_unique<SprayState>();
  s->cfg = sc;
  s->mask = mask;
  s->base = static_cast<uint16_t>(wire::dodge_get(mask, qp.cold.udp_sport));
  s->paths.resize(sc.paths);
  for (uint32_t i = 0; i < sc.paths; ++i) {
    s->paths[i].value = initial_value(*s, i);
    s->paths[i].stats.value = s->paths[i].value;
  }
  s->fresh = s->base;
  s->retired_values.assign(wire::dodge_values(mask), 0);
  s->recycle.assign(cfg.sr_window, 0);
  s->psn_path.assign(cfg.sr_window, kUnsprayed);
  s->psn_generation.assign(cfg.sr_window, 0);
  s->psn_sent_ns.assign(cfg.sr_window, 0);
  s->psn_prev.assign(cfg.sr_window, SprayState::Sending{0, kUnsprayed, 0});
  qp.cold.spray = std::move(s);
  set_ack_every(qp);
}

int Engine::spray_info(uint32_t qp_num, SprayInfo* out) const {
  const Qp* qp = impl_->qp_by_num(qp_num);
  if (qp == nullptr || qp->cold.spray == nullptr) return -EINVAL;
  const SprayState& s = *qp->cold.spray;
  out->active = qp->spraying();
  out->retired = s.retired;
  out->replaced = s.replaced;
  out->tail_probes = s.tail_probes;
  out->dsacks = s.dsacks;
  out->reorder_mult = s.reo_mult;
  out->paths.clear();
  for (const SprayPath& p : s.paths) {
    SprayPathInfo i = p.stats;
    i.value = p.value;
    i.udp_sport = wire::dodge_set(s.mask, qp->cold.udp_sport, p.value);
    out->paths.push_back(i);
  }
  return 0;
}

}  // namespace tita::engine
