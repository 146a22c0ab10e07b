// PowerTCP, INT variant.
//
// V. Addanki, O. Michel, S. Schmid. "PowerTCP: Pushing the Performance Limits of
// Datacenter Networks." NSDI 2022 (Algorithm 1), with the target utilisation and
// the current floor of the authors' ns-3 code.
//
// Units: window and queue bytes, rates bit/s, times ns; power is normalised
// (dimensionless, 1 = a full link with an empty queue).
//
// Control law. Per ACK, for every hop i with a usable previous record (tau = base RTT):
//   qdot_i    = (qlen_i - qlen_prev_i) / dts_i                 (queue growth)
//   lambda_i  = max(qdot_i + txRate_i, min_current B_i)         (current)
//   nu_i      = qlen_i + B_i tau                                (voltage)
//   Gamma_i   = lambda_i nu_i / (B_i^2 tau)                     (normalised power)
//   Gamma = max_i Gamma_i, dt = dts of that hop, dt = min(dt, tau)
//   Gamma_s = (Gamma_s (tau - dt) + Gamma dt) / tau
// Window, from W_old, the window committed one RTT ago:
//   W = gamma (W_old / (Gamma_s / eta) + beta) + (1 - gamma) W
//   W in [R_min tau, line-rate BDP];  R = W / tau.
// W_old is committed like HPCC's W_c: on the first ACK for data sent after the
// previous commit (the paper's GET_CWND(ack.seq) keyed by sequence number).
// beta = ai_rate_bps * tau: 150 Mb/s at 100 Gb/s, scaled linearly with line rate.
//
// Deviations:
// - W_old is the window at the last per-RTT commit rather than a lookup of the
//   window in force when the acknowledged packet was sent (no per-packet history
//   in a fixed-size state); both are "the window one RTT ago".
// - Stale, reordered or other-path INT records are not used (IntHistory).
// - on_timeout forgets the INT history; loss does not change the window.
#include "tita/cc/algo/powertcp.h"

namespace tita::cc {
namespace {

constexpr ParamDef<PowertcpParams> kDefs[] = {
    param("eta", "", 0.5, 1, &PowertcpParams::eta, "target utilisation"),
    param("gamma", "", 0, 1, &PowertcpParams::gamma, "EWMA weight of the new window"),
    param("ai_rate_bps", "bps", 0, 1e12, &PowertcpParams::ai_rate_bps,
          "additive increase beta, as a rate (beta = ai_rate_bps * base RTT)"),
    param("min_current", "", 0, 1, &PowertcpParams::min_current,
          "floor of the current, as a fraction of the link rate"),
    param("min_rate_bps", "bps", 1e3, 1e13, &PowertcpParams::min_rate_bps, "minimum rate"),
};
constexpr auto kTable = make_param_table(kDefs);

}  // namespace

PowertcpParams PowertcpParams::defaults(const FlowConfig& link) {
  PowertcpParams p;
  p.ai_rate_bps = scaled_from_100g(150e6, link.line_rate_bps);
  return p;
}

ParamTableView<PowertcpParams> PowertcpParams::table() { return kTable; }

void PowertcpFlow::init(const PowertcpParams& p, const FlowConfig& cfg, uint64_t /*now_ns*/,
                        FlowOutput& out) {
  *this = PowertcpFlow{};
  p_ = &p;
  line_rate_bps_ = cfg.line_rate_bps;
  mtu_bytes_ = cfg.mtu_bytes;
  path_ = PathScale::of(cfg.base_rtt_ns);
  w_max_ = path_.window_of(static_cast<double>(cfg.line_rate_bps));
  w_min_ = std::min(w_max_, path_.window_of(p.min_rate_bps));
  w_ = wc_ = w_max_;
  out = {line_rate_bps_, cwnd_out(w_, mtu_bytes_), kNoTimer};
}

void PowertcpFlow::on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out) {
  const bool commit = s.ack_seq_bytes > last_update_seq_;
  // Normalised power of the most loaded hop, and the dt of its records.
  double gamma_max = 0;
  double dt_ns = 0;
  const int n = int_.update(now_ns, s, path_.t_ns, [&](const IntHopDelta& d) {
    const double b = static_cast<double>(d.link_rate_bps);
    const double q = d.qlen_bytes;
    // qdot + txRate = (dq + dtx) / dt: the arrival rate at the queue.
    const double arrival_bps = (q - d.qlen_prev_bytes + d.dtx_bytes) * 8e9 / d.dt_ns;
    const double current_bps = std::max(arrival_bps, p_->min_current * b);
    const double voltage_bits = q * 8 + b * path_.t_ns * 1e-9;
    const double power = current_bps * voltage_bits / (b * b * path_.t_ns * 1e-9);
    if (power > gamma_max) {
      gamma_max = power;
      dt_ns = d.dt_ns;
    }
  });
  if (!started_) {
    started_ = true;
    last_update_seq_ = s.next_seq_bytes;
    return;
  }
  const PowertcpParams& p = *p_;
  if (n > 0) {
    const double weight = std::min(dt_ns, path_.t_ns) * path_.inv_t;  // dt/tau
    power_ = ewma(power_, gamma_max, weight);

    const double beta = path_.window_of(p.ai_rate_bps);
    w_ = p.gamma * (wc_ * p.eta / power_ + beta) + (1 - p.gamma) * w_;
    w_ = std::clamp(w_, w_min_, w_max_);
    out.rate_bps = clamp_rate_bps(path_.rate_of(w_), p.min_rate_bps, line_rate_bps_);
    out.cwnd_bytes = cwnd_out(w_, mtu_bytes_);
  }
  if (commit) {
    wc_ = w_;
    last_update_seq_ = std::max(last_update_seq_, s.next_seq_bytes);
  }
}

void PowertcpFlow::on_timeout(uint64_t /*now_ns*/, FlowOutput& /*out*/) { int_.reset(); }

}  // namespace tita::cc
