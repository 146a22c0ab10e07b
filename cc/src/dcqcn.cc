// DCQCN reaction point.
//
// Y. Zhu, H. Eran, D. Firestone, C. Guo, M. Lipshteyn, Y. Liron, J. Padhye,
// S. Raindel, M. H. Yahia, M. Zhang. "Congestion Control for Large-Scale RDMA
// Deployments." SIGCOMM 2015. Parameter defaults and the increase-stage rule
// follow the HPCC artifact's Mellanox model (rdma-hw.cc, mix/config.txt).
//
// Units: rates in bit/s (double internally, published as integer bit/s), times in
// ns, alpha and g dimensionless. Rate-based: cwnd is kNoWindow.
//
// Control law (R_C current rate, R_T target rate):
//   alpha, every alpha interval:  alpha = (1 - g) alpha + g   if a CNP arrived in it
//                                 alpha = (1 - g) alpha       otherwise
//   CNP (at most one cut per decrease interval):
//       R_T = R_C;  R_C = max(R_min, R_C (1 - alpha/2));
//       reset the increase timer, the byte counter and both stage counters.
//       clamp_target_rate = 0 gives the artifact's CLAMP_TARGET_RATE 0 (Mellanox):
//       R_T is left alone when no increase event came since the previous cut, so
//       fast recovery returns towards the pre-congestion rate. Default 1 (paper,
//       the reference): with the 900 us timer, 0 lets a 16:1 incast refill to
//       8x the link after each timer period (tests/cc harness: queues of
//       hundreds of BDPs without PFC).
//   increase event (timer T, or every B bytes sent), t/b = timer/byte stages
//   before the event (b := t when the byte counter is off):
//       max(t, b) <  F:  fast recovery      R_C = (R_C + R_T)/2
//       min(t, b) >  F:  hyper increase     R_T += R_HAI; R_C = (R_C + R_T)/2
//       otherwise:       additive increase  R_T += R_AI;  R_C = (R_C + R_T)/2
//   With the byte counter off this is the artifact's rule: stages 0..F-1 fast
//   recovery, stage F additive, after that hyper.
//
// Deviations:
// - The cut happens on the CNP itself when the decrease interval allows it; a
//   CNP inside the interval is held and cuts when the interval ends (the
//   artifact polls every 4 us instead). Same cuts, up to 4 us earlier.
// - alpha is evaluated lazily, in closed form, when a cut needs it:
//   alpha_k = (1-g)^(k-1) ((1-g) alpha + g [CNP]) over k elapsed intervals. Only
//   cuts observe alpha, so this equals a 1 us timer without asking the host for
//   a million timer calls per second per QP. The host timer is only the rate
//   increase timer (and a held-back cut).
// - The first CNP starts the alpha clock with alpha = 1 without counting itself,
//   as the artifact does; alpha starts at 1 (paper).
// - R_T is clamped to the line rate; timers stop once R_C = R_T = line rate.
// - Every hook first runs the internal deadlines that have passed, in time
//   order, so results do not depend on how late the host calls on_timer.
#include "tita/cc/algo/dcqcn.h"

#include <cmath>

namespace tita::cc {
namespace {

constexpr ParamDef<DcqcnParams> kDefs[] = {
    param("g", "", 1e-6, 1, &DcqcnParams::g, "alpha EWMA gain"),
    param("alpha_interval_ns", "ns", 1, 1e9, &DcqcnParams::alpha_interval_ns,
          "alpha update period"),
    param("decrease_interval_ns", "ns", 0, 1e9, &DcqcnParams::decrease_interval_ns,
          "minimum time between two rate cuts"),
    param("rate_timer_ns", "ns", 1'000, 1e10, &DcqcnParams::rate_timer_ns,
          "rate increase timer period T"),
    param("byte_counter_bytes", "bytes", 0, 1e12, &DcqcnParams::byte_counter_bytes,
          "rate increase every B bytes sent; 0 = timer only"),
    param("fast_recovery_stages", "", 0, 100, &DcqcnParams::fast_recovery_stages,
          "fast recovery stages F"),
    param("rate_ai_bps", "bps", 0, 1e12, &DcqcnParams::rate_ai_bps,
          "additive increase step R_AI"),
    param("rate_hai_bps", "bps", 0, 1e12, &DcqcnParams::rate_hai_bps,
          "hyper increase step R_HAI"),
    param("min_rate_bps", "bps", 1e3, 1e13, &DcqcnParams::min_rate_bps, "minimum rate R_min"),
    param("clamp_target_rate", "", 0, 1, &DcqcnParams::clamp_target_rate,
          "1: every cut sets R_T = R_C (paper); 0: not when no increase came since the "
          "last cut (Mellanox, artifact)"),
};
constexpr auto kTable = make_param_table(kDefs);

}  // namespace

DcqcnParams DcqcnParams::defaults(const FlowConfig& link) {
  DcqcnParams p;
  p.rate_ai_bps = scaled_from_100g(50e6, link.line_rate_bps);
  p.rate_hai_bps = scaled_from_100g(100e6, link.line_rate_bps);
  return p;
}

ParamTableView<DcqcnParams> DcqcnParams::table() { return kTable; }

void DcqcnFlow::init(const DcqcnParams& p, const FlowConfig& cfg, uint64_t /*now_ns*/,
                     FlowOutput& out) {
  *this = DcqcnFlow{};
  p_ = &p;
  line_rate_bps_ = cfg.line_rate_bps;
  rate_bps_ = target_bps_ = static_cast<double>(cfg.line_rate_bps);
  publish(out);
}

double DcqcnFlow::alpha_at(uint64_t now_ns) const {
  DcqcnFlow copy = *this;
  copy.catch_up_alpha(now_ns);
  return copy.alpha_;
}

void DcqcnFlow::catch_up_alpha(uint64_t t_ns) {
  if (alpha_deadline_ns_ == kNoTimer || t_ns < alpha_deadline_ns_) return;
  const uint64_t k = (t_ns - alpha_deadline_ns_) / p_->alpha_interval_ns + 1;
  alpha_ = ewma(alpha_, cnp_in_interval_ ? 1.0 : 0.0, p_->g);
  if (k > 1) alpha_ *= std::pow(1.0 - p_->g, static_cast<double>(k - 1));
  cnp_in_interval_ = false;
  alpha_deadline_ns_ += k * p_->alpha_interval_ns;
}

void DcqcnFlow::cut(uint64_t t_ns) {
  catch_up_alpha(t_ns);
  if (p_->clamp_target_rate != 0 || !cut_any_ || timer_stage_ + byte_stage_ != 0)
    target_bps_ = rate_bps_;
  rate_bps_ = std::max(p_->min_rate_bps, rate_bps_ * (1.0 - alpha_ / 2));
  timer_deadline_ns_ = t_ns + p_->rate_timer_ns;
  bytes_since_ = 0;
  timer_stage_ = byte_stage_ = 0;
  last_cut_ns_ = t_ns;
  cut_any_ = true;
  cut_deadline_ns_ = kNoTimer;
}

void DcqcnFlow::increase(bool by_timer) {
  const uint64_t f = p_->fast_recovery_stages;
  const uint64_t t = timer_stage_;
  const uint64_t b = p_->byte_counter_bytes != 0 ? byte_stage_ : timer_stage_;
  const double line = static_cast<double>(line_rate_bps_);
  if (std::max(t, b) < f) {
    // fast recovery: target unchanged
  } else if (std::min(t, b) > f) {
    target_bps_ = std::min(line, target_bps_ + p_->rate_hai_bps);
  } else {
    target_bps_ = std::min(line, target_bps_ + p_->rate_ai_bps);
  }
  rate_bps_ = std::min(line, (rate_bps_ + target_bps_) / 2);
  if (by_timer)
    ++timer_stage_;
  else
    ++byte_stage_;
}

void DcqcnFlow::advance(uint64_t now_ns) {
  for (;;) {
    const uint64_t next = std::min(timer_deadline_ns_, cut_deadline_ns_);
    if (next > now_ns) break;
    if (cut_deadline_ns_ <= timer_deadline_ns_) {
      cut(cut_deadline_ns_);
      continue;
    }
    increase(/*by_timer=*/true);
    timer_deadline_ns_ = at_line_rate() ? kNoTimer : timer_deadline_ns_ + p_->rate_timer_ns;
  }
}

void DcqcnFlow::publish(FlowOutput& out) const {
  out.rate_bps = clamp_rate_bps(rate_bps_, p_->min_rate_bps, line_rate_bps_);
  out.cwnd_bytes = kNoWindow;
  out.next_timer_ns = std::min(timer_deadline_ns_, cut_deadline_ns_);
}

void DcqcnFlow::on_send(uint64_t now_ns, uint32_t bytes, FlowOutput& out) {
  advance(now_ns);
  if (p_->byte_counter_bytes != 0 && !at_line_rate()) {
    bytes_since_ += bytes;
    while (bytes_since_ >= p_->byte_counter_bytes && !at_line_rate()) {
      bytes_since_ -= p_->byte_counter_bytes;
      increase(/*by_timer=*/false);
    }
    if (at_line_rate()) timer_deadline_ns_ = kNoTimer;
  }
  publish(out);
}

// ACKs, losses and timeouts do not steer DCQCN (CNPs do); they only run the
// deadlines that have passed.
void DcqcnFlow::on_ack(uint64_t now_ns, const AckSample& /*s*/, FlowOutput& out) {
  on_timer(now_ns, out);
}

void DcqcnFlow::on_loss(uint64_t now_ns, const LossSample& /*s*/, FlowOutput& out) {
  on_timer(now_ns, out);
}

void DcqcnFlow::on_timeout(uint64_t now_ns, FlowOutput& out) { on_timer(now_ns, out); }

void DcqcnFlow::on_cnp(uint64_t now_ns, FlowOutput& out) {
  advance(now_ns);
  if (alpha_deadline_ns_ == kNoTimer) {
    alpha_deadline_ns_ = now_ns + p_->alpha_interval_ns;  // first CNP: alpha stays 1
  } else {
    catch_up_alpha(now_ns);
    cnp_in_interval_ = true;
  }
  if (!cut_any_ || now_ns - last_cut_ns_ >= p_->decrease_interval_ns)
    cut(now_ns);
  else if (cut_deadline_ns_ == kNoTimer)
    cut_deadline_ns_ = last_cut_ns_ + p_->decrease_interval_ns;
  publish(out);
}

void DcqcnFlow::on_timer(uint64_t now_ns, FlowOutput& out) {
  advance(now_ns);
  publish(out);
}

}  // namespace tita::cc
