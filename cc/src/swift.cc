// Swift.
//
// G. Kumar, N. Dukkipati, K. Jang, H. M. G. Wassel, X. Wu, B. Montazeri, Y. Wang,
// K. Springborn, C. Alfeld, M. Ryan, D. Wetherall, A. Vahdat. "Swift: Delay is
// Simple and Effective for Congestion Control in the Datacenter." SIGCOMM 2020.
//
// Units: cwnd in packets (of the flow's MTU, fractional), delays ns, rates bit/s.
//
// Control law, with delay the ACK's RTT sample and acked in packets:
//   target = base_target + hops h + clamp(alpha / sqrt(cwnd) + beta', 0, fs_range)
//     alpha = fs_range / (1/sqrt(fs_min_cwnd) - 1/sqrt(fs_max_cwnd))
//     beta' = -alpha / sqrt(fs_max_cwnd)
//   delay < target:  cwnd += ai acked / cwnd   (cwnd >= 1)
//                    cwnd += ai acked          (cwnd < 1)
//   otherwise, at most once per RTT:
//                    cwnd *= max(1 - beta (delay - target)/delay, 1 - max_mdf)
//   loss (at most once per RTT) and RTO:  cwnd *= 1 - max_mdf
//   cwnd in [min_cwnd, max_cwnd]. cwnd >= 1: window-limited at line rate;
//   cwnd < 1: one packet in flight, paced at max(cwnd * MTU / rtt, min rate).
//
// Defaults scale with the path: base_target = base RTT, h = base RTT / 10,
// fs_range = base RTT (the paper's absolute values target its own fabric).
//
// Deviations:
// - One window on the total RTT: AckSample has no NIC/host delay split, so the
//   separate endpoint window of the paper is not modelled.
// - The pacing rate below one packet has a floor, min_rate_bps, like every
//   rate in this library (the paper's floor is min_cwnd alone).
// - hops = the ACK's INT hop count when present, else default_hops (Swift reads
//   it from the IP TTL).
#include "tita/cc/algo/swift.h"

#include <cmath>

namespace tita::cc {
namespace {

constexpr ParamDef<SwiftParams> kDefs[] = {
    param("base_target_ns", "ns", 0, 1e9, &SwiftParams::base_target_ns, "target delay floor"),
    param("per_hop_ns", "ns", 0, 1e9, &SwiftParams::per_hop_ns, "target added per hop (h)"),
    param("default_hops", "", 0, 64, &SwiftParams::default_hops,
          "hop count assumed when the ACK has no INT"),
    param("fs_range_ns", "ns", 0, 1e9, &SwiftParams::fs_range_ns, "flow-scaling range"),
    param("fs_min_cwnd", "packets", 1e-3, 1, &SwiftParams::fs_min_cwnd,
          "window at which flow scaling adds fs_range"),
    param("fs_max_cwnd", "packets", 2, 1e6, &SwiftParams::fs_max_cwnd,
          "window at which flow scaling adds nothing"),
    param("ai", "packets", 0, 1e3, &SwiftParams::ai, "additive increase per RTT"),
    param("beta", "", 0, 1, &SwiftParams::beta, "multiplicative decrease gain"),
    param("max_mdf", "", 0, 1, &SwiftParams::max_mdf, "maximum multiplicative decrease"),
    param("min_cwnd", "packets", 1e-4, 1, &SwiftParams::min_cwnd, "minimum window"),
    param("max_cwnd_bdp", "", 0.1, 100, &SwiftParams::max_cwnd_bdp,
          "maximum window, in line-rate BDPs"),
    param("min_rate_bps", "bps", 1e3, 1e13, &SwiftParams::min_rate_bps,
          "pacing floor below one packet per RTT"),
};
constexpr auto kTable = make_param_table(kDefs);

}  // namespace

SwiftParams SwiftParams::defaults(const FlowConfig& link) {
  SwiftParams p;
  p.base_target_ns = link.base_rtt_ns;
  p.per_hop_ns = link.base_rtt_ns / 10;
  p.fs_range_ns = link.base_rtt_ns;
  return p;
}

ParamTableView<SwiftParams> SwiftParams::table() { return kTable; }

void SwiftFlow::init(const SwiftParams& p, const FlowConfig& cfg, uint64_t /*now_ns*/,
                     FlowOutput& out) {
  *this = SwiftFlow{};
  p_ = &p;
  line_rate_bps_ = cfg.line_rate_bps;
  mtu_bytes_ = cfg.mtu_bytes;
  rtt_ns_ = static_cast<uint32_t>(cfg.base_rtt_ns);
  const double bdp_packets =
      bytes_in(static_cast<double>(cfg.line_rate_bps), static_cast<double>(cfg.base_rtt_ns)) /
      cfg.mtu_bytes;
  max_cwnd_ = std::max(1.0, p.max_cwnd_bdp * bdp_packets);
  cwnd_ = std::min(max_cwnd_, std::max(1.0, bdp_packets));
  fs_alpha_ns_ = static_cast<double>(p.fs_range_ns) /
                 (1 / std::sqrt(p.fs_min_cwnd) - 1 / std::sqrt(p.fs_max_cwnd));
  fs_beta_ns_ = -fs_alpha_ns_ / std::sqrt(p.fs_max_cwnd);
  publish(out);
}

double SwiftFlow::target_ns(double cwnd, unsigned hops) const {
  const double fs = std::clamp(fs_alpha_ns_ / std::sqrt(cwnd) + fs_beta_ns_, 0.0,
                               static_cast<double>(p_->fs_range_ns));
  return static_cast<double>(p_->base_target_ns) + hops * static_cast<double>(p_->per_hop_ns) +
         fs;
}

bool SwiftFlow::may_decrease(uint64_t now_ns) const {
  return !decreased_any_ || now_ns - last_decrease_ns_ >= rtt_ns_;
}

void SwiftFlow::decrease(uint64_t now_ns, double factor) {
  cwnd_ = std::max(p_->min_cwnd, cwnd_ * factor);
  last_decrease_ns_ = now_ns;
  decreased_any_ = true;
}

void SwiftFlow::publish(FlowOutput& out) const {
  if (cwnd_ >= 1) {
    out.rate_bps = line_rate_bps_;
    out.cwnd_bytes = cwnd_out(cwnd_ * mtu_bytes_, mtu_bytes_);
  } else {
    out.rate_bps =
        clamp_rate_bps(rate_of(cwnd_ * mtu_bytes_, rtt_ns_), p_->min_rate_bps, line_rate_bps_);
    out.cwnd_bytes = mtu_bytes_;
  }
  out.next_timer_ns = kNoTimer;
}

void SwiftFlow::on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out) {
  if (s.rtt_ns == 0) return;
  const SwiftParams& p = *p_;
  rtt_ns_ = s.rtt_ns;
  const double delay = s.rtt_ns;
  const unsigned hops = s.n_hops > 0 ? s.n_hops : static_cast<unsigned>(p.default_hops);
  const double target = target_ns(cwnd_, hops);
  const double acked = static_cast<double>(s.acked_bytes) / mtu_bytes_;
  if (delay < target) {
    cwnd_ += cwnd_ >= 1 ? p.ai * acked / cwnd_ : p.ai * acked;
  } else if (may_decrease(now_ns)) {
    decrease(now_ns, std::max(1 - p.beta * (delay - target) / delay, 1 - p.max_mdf));
  }
  cwnd_ = std::clamp(cwnd_, p.min_cwnd, max_cwnd_);
  publish(out);
}

void SwiftFlow::on_loss(uint64_t now_ns, const LossSample& /*s*/, FlowOutput& out) {
  if (may_decrease(now_ns)) decrease(now_ns, 1 - p_->max_mdf);
  publish(out);
}

void SwiftFlow::on_timeout(uint64_t now_ns, FlowOutput& out) {
  decrease(now_ns, 1 - p_->max_mdf);
  publish(out);
}

}  // namespace tita::cc
