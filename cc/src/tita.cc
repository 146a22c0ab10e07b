// tita: utilisation-targeting window law that uses INT where the fabric has it
// and ECN + RTT where it does not. Design, rationale, parameters and change log:
// doc/cc/tita.md.
//
// Builds on HPCC (Li et al., SIGCOMM 2019) for the INT utilisation and the
// per-RTT commit with per-ACK fast react, and on DCTCP (Alizadeh et al.,
// SIGCOMM 2010) for the CE-fraction estimate.
//
// Units: windows and queues bytes, rates bit/s, times ns, utilisation
// dimensionless (1 = link busy, empty queue). T = the flow's base RTT,
// BDP = line rate x T.
//
// 1. Utilisation sample u (per ACK).
//   Complete INT (n_hops > 0, not partial, every hop has a usable delta), as HPCC:
//     u_i = min(q_i, q_prev_i)/(B_i T) + txRate_i/B_i,  u = max_i u_i,  tau = dts of argmax
//   Otherwise (no INT, partial INT, or a hop without history), for what INT does
//   not cover:
//     resid = rtt - T - sum_i q_i/B_i - slack T    (queueing delay INT does not explain)
//     u_rtt = eta (1 + resid/T)  if resid > 0      (a queue beyond the slack)
//           = 2 eta - 1          otherwise         (no queue: "below target", no ramp)
//     Without INT, utilisation below 1 is invisible; the operating point is a
//     queue of slack x T, and W_c eta/u_rtt = W_c/(1 + resid/T) removes the
//     excess beyond it in one step (a 1 + resid/T reading would also cut the
//     1 - eta headroom every RTT the queue persists: a double cut).
//     u_ecn = eta / (1 - alpha/2) if the ACK carries CE marks (DCTCP's cut as a U)
//     u = max(u_int of the hops that have deltas, u_rtt, u_ecn), tau = time since the
//     last sample.
//   U = (1 - tau/T) U + (tau/T) u,  tau <= T.
// 2. Additive increase, per flow and RTT:
//     a = ai_min_bdp BDP + ai_bdp sqrt(W_c BDP)
//   Multiplicative steps with a shared U keep window ratios; only an increase
//   that grows slower than the window (a/W falling with W) equalises them. The
//   square-root term does, and it sums to ai_bdp BDP sqrt(n) over n flows at
//   equal shares (a 100:1 incast adds ~0.05 BDP per RTT where a per-flow
//   constant of the same single-flow size would add 0.5). The floor is HPCC's
//   W_AI, sized so 100 flows add (1 - eta) BDP. (v1 used min(ai_bdp BDP,
//   ai_share W_c), which is proportional below the cap and so kept whatever
//   ratio flows had: four flows behind one link settled at 0.1/0.1/0.46/0.21
//   of it. doc/cc/tita.md, change log.)
// 3. Window, from the committed W_c (per ACK; committed once per RTT as in HPCC):
//     U >= eta:                                   W = W_c eta/U + a,  stage' = 0
//     complete INT, and U < eta (1 - ramp_band)
//       or stage >= max_stage:                    W = W_c eta/U + a,  stage' = 0
//     no complete INT, stage >= max_stage and W_c >= W_cong:
//                                                 W = W_c (1 + g) + a, stage' = stage+1
//       g = min(probe_max, (1 - eta) 2^k), k = RTTs spent probing so far;
//       W_cong = W_c at the last commit with U >= eta (where the path last filled)
//     otherwise:                                  W = W_c + a,        stage' = stage+1
//     W in [R_min T, BDP];  R = W / T;  cwnd = W.
// 4. Per RTT (commit): W_c = W, stage = stage', alpha = (1 - g_ecn) alpha + g_ecn F
//    with F the CE fraction of the packets acknowledged in the round; W_cong = W_c
//    (before the update) if U >= eta; k = k + 1 if probing, else 0.
// 5. Loss or timeout (at most once per T): W = W_c = loss_decrease W; a timeout also
//    forgets the INT history.
// 6. Host share (per data packet sent). INT covers switch ports, not the sender's
//    own NIC, where QPs take turns packet by packet: a flow whose window the network
//    allows at line rate keeps asking for every slot, and a new flow on the same
//    NIC gets 1/(n+1) of it. Per send, with gap the time since the previous send
//    and e = its wire time at the published rate R (what the gap would be if the
//    NIC served the flow whenever its pacing allowed):
//      f = min(1, e/gap),  F = ewma(F, f, gap/(T/2)),  A = ewma(A, f R, gap/(T/2))
//    (gaps above T/2 mean idle or application-limited: F = 1, A = line rate; sends
//    the window had blocked are not sampled). While F < host_busy the NIC limits
//    the flow and its pacing rate is capped at what it achieves plus a margin:
//      R = min(W/T, (1 + host_gain) A + host_ai x line rate)
//    Competing QPs then leave spare slots, which a new flow (at line rate, F = 1)
//    takes: about half the NIC instead of 1/(n+1). The additive part makes the
//    capped flows converge to equal shares (AIMD against the round robin's
//    proportional cut); when competitors leave, F returns to 1 and the cap goes.
#include "tita/cc/algo/tita.h"

#include <cmath>

namespace tita::cc {
namespace {

constexpr ParamDef<TitaParams> kDefs[] = {
    param("eta", "", 0.5, 1, &TitaParams::eta, "target utilisation"),
    param("max_stage", "", 0, 100, &TitaParams::max_stage,
          "RTTs of additive increase before a multiplicative step"),
    param("ramp_band", "", 0, 1, &TitaParams::ramp_band,
          "with complete INT, ramp at once when U < eta (1 - ramp_band)"),
    param("ai_min_bdp", "BDP", 0, 1, &TitaParams::ai_min_bdp,
          "constant additive increase per RTT, in line-rate BDPs"),
    param("ai_bdp", "BDP", 0, 1, &TitaParams::ai_bdp,
          "additive increase per RTT of a flow at window W_c: ai_bdp x sqrt(W_c x BDP)"),
    param("probe_max", "", 0, 10, &TitaParams::probe_max,
          "largest per-RTT growth when INT is incomplete"),
    param("rtt_slack", "RTT", 0, 10, &TitaParams::rtt_slack,
          "residual queueing delay, in base RTTs, treated as noise"),
    param("ecn_gain", "", 0, 1, &TitaParams::ecn_gain, "EWMA gain of the CE fraction"),
    param("loss_decrease", "", 0.01, 1, &TitaParams::loss_decrease,
          "window factor on loss or timeout"),
    param("init_window_bdp", "BDP", 0.01, 1, &TitaParams::init_window_bdp,
          "initial window, in line-rate BDPs"),
    param("min_rate_bps", "bps", 1e3, 1e13, &TitaParams::min_rate_bps, "minimum rate"),
    param("init_line_rate", "", 0, 1, &TitaParams::init_line_rate,
          "1: until the first feedback, pace the initial window at line rate"),
    param("host_share", "", 0, 1, &TitaParams::host_share,
          "1: pace at the achieved rate while other QPs of the NIC limit the flow"),
    param("host_busy", "", 0, 1, &TitaParams::host_busy,
          "achieved/paced rate below which the NIC limits the flow"),
    param("host_yield", "", 0, 1, &TitaParams::host_yield,
          "while the NIC limits the flow: pacing cap = (1 - yield) x achieved rate"),
    param("host_gain", "", 0, 10, &TitaParams::host_gain,
          "otherwise: pacing cap = (1 + gain) x achieved rate + host_ai"),
    param("host_ai", "", 0, 1, &TitaParams::host_ai,
          "additive part of the pacing cap, in line rates"),
    param("host_tc", "RTT", 0.01, 10, &TitaParams::host_tc,
          "time constant of the achieved send rate, in base RTTs"),
    param("host_young_bdp", "BDP", 0, 1000, &TitaParams::host_young_bdp,
          "bytes a flow sends after being idle, in BDPs, before its pacing may be capped"),
};

// A data packet's bytes on the wire beyond its payload (Ethernet with 802.1Q,
// IPv4, UDP, BTH, ICRC, preamble, FCS and gap): the time it holds the NIC.
constexpr double kWireOverheadBytes = 86;
constexpr auto kTable = make_param_table(kDefs);

}  // namespace

TitaParams TitaParams::defaults(const FlowConfig& /*link*/) { return TitaParams{}; }

ParamTableView<TitaParams> TitaParams::table() { return kTable; }

void TitaFlow::init(const TitaParams& p, const FlowConfig& cfg, uint64_t now_ns,
                    FlowOutput& out) {
  *this = TitaFlow{};
  p_ = &p;
  line_rate_bps_ = cfg.line_rate_bps;
  mtu_bytes_ = static_cast<uint16_t>(std::min<uint32_t>(cfg.mtu_bytes, UINT16_MAX));
  path_ = PathScale::of(cfg.base_rtt_ns);
  w_ = wc_ = std::max(w_min(), p.init_window_bdp * bdp_bytes());
  u_ = p.eta;
  host_bps_ = static_cast<float>(cfg.line_rate_bps);
  last_sample_ns_ = now_ns;
  publish(out);
}

// measure, next_window and publish are always inlined into on_ack: out of line
// they cost tita ~2x HPCC per ACK (bench/cc).
[[gnu::always_inline]] inline TitaFlow::Signal TitaFlow::measure(uint64_t now_ns,
                                                                 const AckSample& s) {
  const TitaParams& p = *p_;
  MaxUtilisation m(path_.t_ns);
  const int n = int_.update(now_ns, s, path_.t_ns, m);
  const int hops = std::min<int>(s.n_hops, kMaxIntHops);

  Signal sig{n > 0 ? m.u() : 0, m.dt_ns(), Mode::kNone};
  if (hops > 0 && !s.int_partial && n == hops) {
    sig.mode = Mode::kInt;
    return sig;
  }

  // Per-hop fallback: whatever INT does not explain comes from RTT and ECN.
  bool have = n > 0;
  if (s.rtt_ns != 0) {
    double int_qdelay_ns = 0;
    for (int i = 0; i < hops; ++i) {
      if (s.hops[i].rate_bps != 0)
        int_qdelay_ns += s.hops[i].qlen_bytes * 8e9 / static_cast<double>(s.hops[i].rate_bps);
    }
    const double resid_ns = static_cast<double>(s.rtt_ns) - path_.t_ns - int_qdelay_ns -
                            p.rtt_slack * path_.t_ns;
    if (resid_ns > 0) {
      sig.u = std::max(sig.u, p.eta * (1 + resid_ns * path_.inv_t));
    } else {
      sig.u = std::max(sig.u, 2 * p.eta - 1);
    }
    have = true;
  }
  if (s.ce_packets != 0) {
    sig.u = std::max(sig.u, p.eta / (1 - ecn_alpha_ / 2));
    have = true;
  }
  if (!have) return sig;
  sig.tau_ns = static_cast<double>(now_ns - last_sample_ns_);
  sig.mode = hops > 0 ? Mode::kPartial : Mode::kFallback;
  return sig;
}

bool TitaFlow::probing() const {
  return mode_ != Mode::kInt && u_ < p_->eta && inc_stage_ >= p_->max_stage &&
         wc_ >= w_congested_;
}

[[gnu::always_inline]] inline double TitaFlow::next_window(uint32_t* next_stage) const {
  const TitaParams& p = *p_;
  const double ai = p.ai_min_bdp * bdp_bytes() + p.ai_bdp * std::sqrt(wc_ * bdp_bytes());
  const bool complete_int = mode_ == Mode::kInt;
  double factor = 1;
  *next_stage = inc_stage_ + 1;
  if (u_ >= p.eta ||
      (complete_int && (u_ < p.eta * (1 - p.ramp_band) || inc_stage_ >= p.max_stage))) {
    factor = p.eta / u_;  // eta/U; U == 0: inf, clamped to the BDP below
    *next_stage = 0;
  } else if (probing()) {
    const int doublings = static_cast<int>(std::min<uint32_t>(probe_rounds_, 30));
    factor = 1 + std::min(p.probe_max, (1 - p.eta) * std::ldexp(1.0, doublings));
  }
  return std::clamp(wc_ * factor + ai, w_min(), bdp_bytes());
}

void TitaFlow::on_send(uint64_t now_ns, uint32_t bytes, FlowOutput& out) {
  const TitaParams& p = *p_;
  // The window had blocked the flow if it opened by less than a packet for this send.
  const bool window_limited = inflight_bytes_ + mtu_bytes_ >= out.cwnd_bytes;
  inflight_bytes_ = static_cast<uint32_t>(
      std::min<uint64_t>(uint64_t{inflight_bytes_} + bytes, UINT32_MAX));
  if (p.host_share == 0) return;
  const double gap_ns = static_cast<double>(now_ns - last_send_ns_);
  if (!sent_any_ || gap_ns > 0.5 * path_.t_ns) {
    host_frac_ = 1;  // idle before: a new flow, nothing known about the NIC
    host_bps_ = static_cast<float>(line_rate_bps_);
    busy_bytes_ = 0;
  } else if (!window_limited) {
    const double rate = static_cast<double>(out.rate_bps);
    const double e_ns = (last_send_bytes_ + kWireOverheadBytes) * 8e9 / rate;  // e
    const double f = gap_ns > e_ns ? e_ns / gap_ns : 1.0;
    const double weight = std::min(1.0, gap_ns / (p.host_tc * path_.t_ns));
    host_frac_ = static_cast<float>(ewma(host_frac_, f, weight));
    host_bps_ = static_cast<float>(ewma(host_bps_, f * rate, weight));
  }

  busy_bytes_ = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{busy_bytes_} + bytes, UINT32_MAX));
  sent_any_ = true;
  last_send_ns_ = now_ns;
  last_send_bytes_ = static_cast<uint16_t>(std::min<uint32_t>(bytes, UINT16_MAX));
  publish(out);
}

void TitaFlow::on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out) {
  const TitaParams& p = *p_;
  inflight_bytes_ = static_cast<uint32_t>(std::min<uint64_t>(s.inflight_bytes, UINT32_MAX));
  round_packets_ += s.acked_packets;
  round_ce_packets_ += s.ce_packets;

  const Signal sig = measure(now_ns, s);
  const bool commit = s.ack_seq_bytes > last_update_seq_;
  if (sig.mode != Mode::kNone) {
    const double weight = std::min(sig.tau_ns, path_.t_ns) * path_.inv_t;  // tau/T
    u_ = ewma(u_, sig.u, weight);
    last_sample_ns_ = now_ns;
    mode_ = sig.mode;
    uint32_t stage = 0;
    w_ = next_window(&stage);
    if (commit) {
      if (u_ >= p.eta) w_congested_ = wc_;
      probe_rounds_ = probing() ? probe_rounds_ + 1 : 0;
      wc_ = w_;
      inc_stage_ = std::min<uint32_t>(stage, 1'000'000);
    }
    publish(out);
  }
  if (commit) {
    if (round_packets_ != 0) {
      ecn_alpha_ = static_cast<float>(ewma(
          ecn_alpha_, static_cast<double>(round_ce_packets_) / round_packets_, p.ecn_gain));
    }
    round_packets_ = round_ce_packets_ = 0;
    last_update_seq_ = std::max(last_update_seq_, s.next_seq_bytes);
  }
}

void TitaFlow::decrease(uint64_t now_ns, FlowOutput& out) {
  if (decreased_any_ && static_cast<double>(now_ns - last_decrease_ns_) < path_.t_ns) return;
  w_congested_ = wc_;
  w_ = wc_ = std::max(w_min(), w_ * p_->loss_decrease);
  inc_stage_ = probe_rounds_ = 0;
  last_decrease_ns_ = now_ns;
  decreased_any_ = true;
  publish(out);
}

void TitaFlow::on_loss(uint64_t now_ns, const LossSample& s, FlowOutput& out) {
  inflight_bytes_ = static_cast<uint32_t>(std::min<uint64_t>(s.inflight_bytes, UINT32_MAX));
  decrease(now_ns, out);
}

void TitaFlow::on_timeout(uint64_t now_ns, FlowOutput& out) {
  int_.reset();
  decrease(now_ns, out);
}

[[gnu::always_inline]] inline void TitaFlow::publish(FlowOutput& out) const {
  const TitaParams& p = *p_;
  double rate = path_.rate_of(w_);
  if (p.init_line_rate != 0 && mode_ == Mode::kNone) rate = static_cast<double>(line_rate_bps_);
  if (p.host_share != 0 && busy_bytes_ >= p.host_young_bdp * bdp_bytes()) {
    const double cap = host_frac_ < p.host_busy
                           ? (1 - p.host_yield) * host_bps_
                           : (1 + p.host_gain) * host_bps_ +
                                 p.host_ai * static_cast<double>(line_rate_bps_);
    rate = std::min(rate, cap);
  }
  out.rate_bps = clamp_rate_bps(rate, p.min_rate_bps, line_rate_bps_);
  out.cwnd_bytes = cwnd_out(w_, mtu_bytes_);
  out.next_timer_ns = kNoTimer;
}

}  // namespace tita::cc
