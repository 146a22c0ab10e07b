// NSCC-style sender window (UEC "network signal" congestion control).
//
// Ultra Ethernet Consortium, "Ultra Ethernet Specification 1.0" (2025), UET
// congestion management, NSCC; quadrant structure and scaling as in the UEC
// htsim model. Facts used: ../shared/reference/cc-algorithms.md.
//
// Units: cwnd and increases in bytes, delays ns; delay = RTT sample - base RTT
// (queueing delay), compared with target = target_qdelay_ns.
//
// Scaling from the 100 Gb/s / 12 us reference: a = BDP / BDP_ref, b = target / 12 us
//   alpha = pi_mss MSS a b / target,  fi = fi_mss MSS a,  eta = eta_mss MSS a
//   maxwnd = max_cwnd_bdp BDP = initial cwnd.
// Per ACK (acked bytes), by quadrant:
//   no ECN, delay <  target:  inc += alpha acked (target - delay)     proportional
//   no ECN, delay >= target:  inc += fi acked                         fair
//   ECN,    delay <  target:  nothing
//   ECN,    delay >= target:  at most once per base RTT
//                             cwnd *= max(1 - md_gain (avg - target)/avg, 1 - max_md)
//   every apply_every_mtus MTU acked: cwnd += inc / cwnd, inc = 0
//   per RTT round:            cwnd += eta
//   quick adapt, on loss or delay > quick_adapt_factor target (once per base RTT):
//                             cwnd = bytes acknowledged during the last base RTT
//                             (achieved rate x base RTT: drains the queue)
//   avg = EWMA(delay, delay_gain). cwnd in [1 MTU, maxwnd]. Window-limited at line rate.
//
// Deviations / interpretation (the reference gives no more detail):
// - "fast increase when delay ~ 0 for a whole window": a round in which every
//   ACK saw delay < target / 16 makes the next round add the acked bytes to
//   cwnd (doubling per RTT, up to maxwnd) instead of the proportional term.
// - Rounds end when the sequence number that was next to send at the start of
//   the round is acknowledged.
// - An ECN-marked ACK is one with ce_packets > 0.
#include "tita/cc/algo/nscc.h"

namespace tita::cc {
namespace {

constexpr ParamDef<NsccParams> kDefs[] = {
    param("target_qdelay_ns", "ns", 1, 1e9, &NsccParams::target_qdelay_ns,
          "target queueing delay"),
    param("pi_mss", "MSS", 0, 1e3, &NsccParams::pi_mss, "proportional increase gain"),
    param("fi_mss", "MSS", 0, 1e3, &NsccParams::fi_mss, "fair increase gain"),
    param("eta_mss", "MSS", 0, 1e3, &NsccParams::eta_mss, "additive increase per RTT"),
    param("md_gain", "", 0, 1, &NsccParams::md_gain, "multiplicative decrease gain"),
    param("max_md", "", 0, 1, &NsccParams::max_md, "largest decrease per base RTT"),
    param("delay_gain", "", 0, 1, &NsccParams::delay_gain, "EWMA gain of average delay"),
    param("quick_adapt_factor", "", 1, 1e3, &NsccParams::quick_adapt_factor,
          "quick adapt when delay exceeds this many targets"),
    param("max_cwnd_bdp", "", 0.1, 100, &NsccParams::max_cwnd_bdp,
          "maximum (and initial) window, in BDPs"),
    param("apply_every_mtus", "", 1, 1e6, &NsccParams::apply_every_mtus,
          "apply the accumulated increase every N MTU acked"),
};
constexpr auto kTable = make_param_table(kDefs);

constexpr double kRefBdpBytes = 100e9 * 12e-6 / 8;  // 100 Gb/s x 12 us
constexpr double kRefRttNs = 12'000;

}  // namespace

NsccParams NsccParams::defaults(const FlowConfig& link) {
  NsccParams p;
  p.target_qdelay_ns = std::max<uint64_t>(1, link.base_rtt_ns / 2);
  return p;
}

ParamTableView<NsccParams> NsccParams::table() { return kTable; }

void NsccFlow::init(const NsccParams& p, const FlowConfig& cfg, uint64_t now_ns,
                    FlowOutput& out) {
  *this = NsccFlow{};
  p_ = &p;
  period_start_ns_ = now_ns;
  line_rate_bps_ = cfg.line_rate_bps;
  base_rtt_ns_ = cfg.base_rtt_ns;
  mtu_bytes_ = cfg.mtu_bytes;
  const double bdp =
      bytes_in(static_cast<double>(cfg.line_rate_bps), static_cast<double>(cfg.base_rtt_ns));
  const double a = bdp / kRefBdpBytes;
  const double target = static_cast<double>(p.target_qdelay_ns);
  const double b = target / kRefRttNs;
  alpha_ = p.pi_mss * cfg.mtu_bytes * a * b / target;
  fi_ = p.fi_mss * cfg.mtu_bytes * a;
  eta_ = p.eta_mss * cfg.mtu_bytes * a;
  max_cwnd_ = std::max<double>(cfg.mtu_bytes, p.max_cwnd_bdp * bdp);
  cwnd_ = max_cwnd_;
  publish(out);
}

void NsccFlow::publish(FlowOutput& out) const {
  out.rate_bps = line_rate_bps_;
  out.cwnd_bytes = cwnd_out(cwnd_, mtu_bytes_);
  out.next_timer_ns = kNoTimer;
}

void NsccFlow::quick_adapt(uint64_t now_ns) {
  if (qa_any_ && now_ns - last_qa_ns_ < base_rtt_ns_) return;
  cwnd_ = std::max<double>(static_cast<double>(acked_last_period_), mtu_bytes_);
  inc_ = 0;
  last_qa_ns_ = now_ns;
  qa_any_ = true;
}

void NsccFlow::on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out) {
  const NsccParams& p = *p_;
  const double target = static_cast<double>(p.target_qdelay_ns);
  const double acked = static_cast<double>(s.acked_bytes);
  if (s.ack_seq_bytes > round_end_seq_) {  // a new RTT round
    round_end_seq_ = s.next_seq_bytes;
    fast_ = round_clean_;
    round_clean_ = true;
    cwnd_ += eta_;
  }
  if (now_ns - period_start_ns_ >= base_rtt_ns_) {  // a new base-RTT period
    acked_last_period_ = acked_this_period_;
    acked_this_period_ = 0;
    period_start_ns_ = now_ns;
  }
  acked_this_period_ += s.acked_bytes;

  if (s.rtt_ns != 0) {
    const double delay = std::max(0.0, static_cast<double>(s.rtt_ns) -
                                           static_cast<double>(base_rtt_ns_));
    avg_delay_ns_ = ewma(avg_delay_ns_, delay, p.delay_gain);
    if (delay >= target / 16) round_clean_ = false;
    const bool ecn = s.ce_packets > 0;
    if (delay > p.quick_adapt_factor * target) {
      quick_adapt(now_ns);
    } else if (!ecn && delay < target) {
      inc_ += fast_ ? cwnd_ * acked : alpha_ * acked * (target - delay);
    } else if (!ecn) {
      inc_ += fi_ * acked;
    } else if (delay >= target && (!md_any_ || now_ns - last_md_ns_ >= base_rtt_ns_)) {
      const double excess = std::max(0.0, avg_delay_ns_ - target);
      const double avg = std::max(avg_delay_ns_, 1.0);
      cwnd_ *= std::max(1 - p.md_gain * excess / avg, 1 - p.max_md);
      last_md_ns_ = now_ns;
      md_any_ = true;
    }
  }

  acked_since_apply_ += s.acked_bytes;
  if (acked_since_apply_ >= p.apply_every_mtus * mtu_bytes_) {
    acked_since_apply_ = 0;
    cwnd_ += inc_ / cwnd_;
    inc_ = 0;
  }
  cwnd_ = std::clamp(cwnd_, static_cast<double>(mtu_bytes_), max_cwnd_);
  publish(out);
}

void NsccFlow::on_loss(uint64_t now_ns, const LossSample& /*s*/, FlowOutput& out) {
  quick_adapt(now_ns);
  publish(out);
}

void NsccFlow::on_timeout(uint64_t now_ns, FlowOutput& out) {
  quick_adapt(now_ns);
  publish(out);
}

}  // namespace tita::cc
