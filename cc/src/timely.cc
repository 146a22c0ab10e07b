// TIMELY.
//
// R. Mittal, V. T. Lam, N. Dukkipati, E. Blem, H. Wassel, M. Ghobadi, A. Vahdat,
// Y. Wang, D. Wetherall, D. Zats. "TIMELY: RTT-based Congestion Control for the
// Datacenter." SIGCOMM 2015. Update cadence and defaults as in the HPCC artifact
// (rdma-hw.cc UpdateRateTimely, run.py); fast path from eRPC (timely.h).
//
// Units: rates bit/s, times ns, gradient dimensionless. Rate-based (no window).
//
// Control law, once per RTT (the first ACK past the sequence number that was
// next to send at the previous update), with rtt the ACK's sample:
//   d' = (1 - a) d + a (rtt - prev_rtt);   gradient = d' / minRTT
//   rtt < T_low:       R = R + step
//   rtt > T_high:      R = R (1 - beta (1 - T_high/rtt))
//   gradient <= 0:     R = R + step
//   otherwise:         R = R (1 - beta gradient)          (factor floored at 0)
//   step = delta, or delta_HAI after hai_after consecutive increases.
//   R is clamped to [R_min, line rate]. prev_rtt is the RTT of the last update.
//
// Deviations:
// - Updates once per RTT, not per completion event: with per-packet ACKs a
//   per-ACK multiplicative decrease would compound within one RTT. This is what
//   the HPCC artifact does. HAI adds delta_HAI (artifact) rather than N delta.
// - eRPC's bypass: at line rate with rtt <= T_low nothing is computed.
// - ACKs without an RTT sample (rtt_ns == 0) are ignored.
#include "tita/cc/algo/timely.h"

namespace tita::cc {
namespace {

constexpr ParamDef<TimelyParams> kDefs[] = {
    param("ewma_gain", "", 0, 1, &TimelyParams::ewma_gain, "weight a of a new RTT difference"),
    param("beta", "", 0, 1, &TimelyParams::beta, "multiplicative decrease factor"),
    param("t_low_ns", "ns", 0, 1e9, &TimelyParams::t_low_ns, "RTT below which rate always grows"),
    param("t_high_ns", "ns", 1, 1e9, &TimelyParams::t_high_ns,
          "RTT above which rate is cut by beta (1 - T_high/rtt)"),
    param("min_rtt_ns", "ns", 1, 1e9, &TimelyParams::min_rtt_ns, "gradient normaliser"),
    param("ai_bps", "bps", 0, 1e12, &TimelyParams::ai_bps, "additive increase step delta"),
    param("hai_bps", "bps", 0, 1e12, &TimelyParams::hai_bps, "hyper-active increase step"),
    param("hai_after", "", 0, 1e6, &TimelyParams::hai_after,
          "consecutive increases before the hyper-active step"),
    param("min_rate_bps", "bps", 1e3, 1e13, &TimelyParams::min_rate_bps, "minimum rate"),
};
constexpr auto kTable = make_param_table(kDefs);

}  // namespace

TimelyParams TimelyParams::defaults(const FlowConfig& link) {
  TimelyParams p;
  p.ai_bps = scaled_from_100g(100e6, link.line_rate_bps);
  p.hai_bps = scaled_from_100g(500e6, link.line_rate_bps);
  return p;
}

ParamTableView<TimelyParams> TimelyParams::table() { return kTable; }

void TimelyFlow::init(const TimelyParams& p, const FlowConfig& cfg, uint64_t /*now_ns*/,
                      FlowOutput& out) {
  *this = TimelyFlow{};
  p_ = &p;
  line_rate_bps_ = cfg.line_rate_bps;
  rate_bps_ = static_cast<double>(cfg.line_rate_bps);
  out = {clamp_rate_bps(rate_bps_, p.min_rate_bps, line_rate_bps_), kNoWindow, kNoTimer};
}

void TimelyFlow::on_ack(uint64_t /*now_ns*/, const AckSample& s, FlowOutput& out) {
  if (s.rtt_ns == 0 || s.ack_seq_bytes <= last_update_seq_) return;
  last_update_seq_ = s.next_seq_bytes;
  const uint32_t rtt = s.rtt_ns;
  if (!started_) {  // first RTT: nothing to difference against
    started_ = true;
    prev_rtt_ns_ = rtt;
    return;
  }
  const double line = static_cast<double>(line_rate_bps_);
  if (rate_bps_ >= line && rtt <= p_->t_low_ns) {  // eRPC bypass
    prev_rtt_ns_ = rtt;
    return;
  }
  const TimelyParams& p = *p_;
  rtt_diff_ns_ = ewma(rtt_diff_ns_, static_cast<double>(rtt) - prev_rtt_ns_, p.ewma_gain);
  prev_rtt_ns_ = rtt;
  const double gradient = rtt_diff_ns_ / static_cast<double>(p.min_rtt_ns);

  double factor = 1;
  bool grow = false;
  if (rtt < p.t_low_ns) {
    grow = true;
  } else if (rtt > p.t_high_ns) {
    factor = 1 - p.beta * (1 - static_cast<double>(p.t_high_ns) / rtt);
  } else if (gradient <= 0) {
    grow = true;
  } else {
    factor = std::max(0.0, 1 - p.beta * gradient);
  }
  if (grow) {
    rate_bps_ += inc_stage_ < p.hai_after ? p.ai_bps : p.hai_bps;
    ++inc_stage_;
  } else {
    rate_bps_ *= factor;
    inc_stage_ = 0;
  }
  rate_bps_ = std::clamp(rate_bps_, std::min(p.min_rate_bps, line), line);
  out.rate_bps = clamp_rate_bps(rate_bps_, p.min_rate_bps, line_rate_bps_);
}

}  // namespace tita::cc
