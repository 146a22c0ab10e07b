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
//     a = ai_min_bdp BDP + min(ai_bdp BDP, ai_share W_c)
//   The constant floor (HPCC's W_AI, sized so 100 flows add (1 - eta) BDP) drives
//   fairness; the share-proportional part, capped, speeds convergence and fills
//   the link when few flows share it, and sums to ai_share x (window total)
//   however many flows there are, so a 100:1 incast adds about
//   100 ai_min_bdp + ai_share BDPs per RTT: a queue of ~0.025 BDP.
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
          "cap of the window-proportional additive increase, in line-rate BDPs"),
    param("ai_share", "", 0, 1, &TitaParams::ai_share,
          "window-proportional additive increase, as a fraction of W_c"),
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
};
constexpr auto kTable = make_param_table(kDefs);

}  // namespace

TitaParams TitaParams::defaults(const FlowConfig& /*link*/) { return TitaParams{}; }

ParamTableView<TitaParams> TitaParams::table() { return kTable; }

void TitaFlow::init(const TitaParams& p, const FlowConfig& cfg, uint64_t now_ns,
                    FlowOutput& out) {
  *this = TitaFlow{};
  p_ = &p;
  line_rate_bps_ = cfg.line_rate_bps;
  mtu_bytes_ = cfg.mtu_bytes;
  path_ = PathScale::of(cfg.base_rtt_ns);
  bdp_bytes_ = path_.window_of(static_cast<double>(cfg.line_rate_bps));
  w_min_ = std::min(bdp_bytes_, path_.window_of(p.min_rate_bps));
  w_ = wc_ = std::max(w_min_, p.init_window_bdp * bdp_bytes_);
  u_ = p.eta;
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
  const double ai = p.ai_min_bdp * bdp_bytes_ + std::min(p.ai_bdp * bdp_bytes_, p.ai_share * wc_);
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
  return std::clamp(wc_ * factor + ai, w_min_, bdp_bytes_);
}

void TitaFlow::on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out) {
  const TitaParams& p = *p_;
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
      ecn_alpha_ = ewma(ecn_alpha_, static_cast<double>(round_ce_packets_) / round_packets_,
                        p.ecn_gain);
    }
    round_packets_ = round_ce_packets_ = 0;
    last_update_seq_ = std::max(last_update_seq_, s.next_seq_bytes);
  }
}

void TitaFlow::decrease(uint64_t now_ns, FlowOutput& out) {
  if (decreased_any_ && static_cast<double>(now_ns - last_decrease_ns_) < path_.t_ns) return;
  w_congested_ = wc_;
  w_ = wc_ = std::max(w_min_, w_ * p_->loss_decrease);
  inc_stage_ = probe_rounds_ = 0;
  last_decrease_ns_ = now_ns;
  decreased_any_ = true;
  publish(out);
}

void TitaFlow::on_loss(uint64_t now_ns, const LossSample& /*s*/, FlowOutput& out) {
  decrease(now_ns, out);
}

void TitaFlow::on_timeout(uint64_t now_ns, FlowOutput& out) {
  int_.reset();
  decrease(now_ns, out);
}

[[gnu::always_inline]] inline void TitaFlow::publish(FlowOutput& out) const {
  out.rate_bps = clamp_rate_bps(path_.rate_of(w_), p_->min_rate_bps, line_rate_bps_);
  out.cwnd_bytes = cwnd_out(w_, mtu_bytes_);
  out.next_timer_ns = kNoTimer;
}

}  // namespace tita::cc
