// HPCC.
//
// Y. Li, R. Miao, H. H. Liu, Y. Zhuang, F. Feng, L. Tang, Z. Cao, M. Zhang,
// F. Kelly, M. Alizadeh, M. Yu. "HPCC: High Precision Congestion Control."
// SIGCOMM 2019 (Algorithm 1), as implemented in the authors' ns-3 artifact
// (rdma-hw.cc UpdateRateHp, MULTI_RATE 0, SAMPLE_FEEDBACK 0).
//
// Units: window and queue in bytes, rates bit/s, times ns, U dimensionless.
//
// Control law. Per ACK, for every hop i with a usable previous record:
//   txRate_i = dtxBytes_i / dts_i
//   u_i = min(qlen_i, qlen_prev_i) / (B_i T) + txRate_i / B_i
//   u = max_i u_i, tau = dts of that hop, tau = min(tau, T)
//   U = (1 - tau/T) U + (tau/T) u
// Window, from the committed W_c:
//   U >= eta or incStage >= maxStage:  W = W_c / (U/eta) + W_AI,  incStage' = 0
//   otherwise:                         W = W_c + W_AI,            incStage' = incStage + 1
//   W in [R_min T, line-rate BDP];  R = W / T.
// Commit (W_c = W, incStage = incStage') on the first ACK that acknowledges data
// sent after the previous commit (ack_seq > lastUpdateSeq; then lastUpdateSeq =
// snd_nxt). Other ACKs "fast react" from W_c without committing.
// The first ACK only records INT. Initial W = W_c = line-rate BDP, U = 1.
// W_AI = ai_rate_bps * T: the artifact's 50 Mb/s (mix/config.txt) taken at 100 Gb/s
// and scaled linearly with line rate (run.py scales its HPCC AI the same way).
//
// Deviations:
// - INT records that are stale, reordered, or from another path are not used
//   (IntHistory); the artifact would divide by a zero or wrapped dts.
// - on_timeout forgets the INT history (the path may have changed). Loss does
//   not change the window (the artifact ignores NACKs; HPCC assumes PFC).
#include "tita/cc/algo/hpcc.h"

namespace tita::cc {
namespace {

constexpr ParamDef<HpccParams> kDefs[] = {
    param("eta", "", 0.5, 1, &HpccParams::eta, "target utilisation"),
    param("max_stage", "", 0, 100, &HpccParams::max_stage,
          "additive-increase RTTs before a multiplicative step"),
    param("ai_rate_bps", "bps", 0, 1e12, &HpccParams::ai_rate_bps,
          "additive increase W_AI, as a rate (W_AI = ai_rate_bps * base RTT)"),
    param("min_rate_bps", "bps", 1e3, 1e13, &HpccParams::min_rate_bps, "minimum rate"),
    param("fast_react", "", 0, 1, &HpccParams::fast_react,
          "1: react on every ACK from the committed window; 0: once per RTT"),
};
constexpr auto kTable = make_param_table(kDefs);

}  // namespace

HpccParams HpccParams::defaults(const FlowConfig& link) {
  HpccParams p;
  p.ai_rate_bps = scaled_from_100g(50e6, link.line_rate_bps);
  return p;
}

ParamTableView<HpccParams> HpccParams::table() { return kTable; }

void HpccFlow::init(const HpccParams& p, const FlowConfig& cfg, uint64_t /*now_ns*/,
                    FlowOutput& out) {
  *this = HpccFlow{};
  p_ = &p;
  line_rate_bps_ = cfg.line_rate_bps;
  path_ = PathScale::of(cfg.base_rtt_ns);
  w_max_ = path_.window_of(static_cast<double>(cfg.line_rate_bps));
  w_min_ = std::min(w_max_, path_.window_of(p.min_rate_bps));
  w_ = wc_ = w_max_;
  mtu_bytes_ = cfg.mtu_bytes;
  out = {line_rate_bps_, cwnd_out(w_, mtu_bytes_), kNoTimer};
}

void HpccFlow::on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out) {
  const bool commit = s.ack_seq_bytes > last_update_seq_;
  if (!started_) {
    started_ = true;
    last_update_seq_ = s.next_seq_bytes;
    int_.update(now_ns, s, path_.t_ns, [](const IntHopDelta&) {});
    return;
  }
  if (!commit && p_->fast_react == 0) return;

  MaxUtilisation m(path_.t_ns);
  if (int_.update(now_ns, s, path_.t_ns, m) > 0) {
    const double weight = std::min(m.dt_ns(), path_.t_ns) * path_.inv_t;  // tau/T
    u_ = ewma(u_, m.u(), weight);

    const HpccParams& p = *p_;
    const double w_ai = path_.window_of(p.ai_rate_bps);
    uint32_t stage = 0;
    if (u_ >= p.eta || inc_stage_ >= p.max_stage) {
      w_ = u_ > 0 ? wc_ * p.eta / u_ + w_ai : w_max_;  // W_c / (U/eta) + W_AI
    } else {
      w_ = wc_ + w_ai;
      stage = inc_stage_ + 1;
    }
    w_ = std::clamp(w_, w_min_, w_max_);
    if (commit) {
      wc_ = w_;
      inc_stage_ = stage;
    }
    out.rate_bps = clamp_rate_bps(path_.rate_of(w_), p.min_rate_bps, line_rate_bps_);
    out.cwnd_bytes = cwnd_out(w_, mtu_bytes_);
  }
  if (commit) last_update_seq_ = std::max(last_update_seq_, s.next_seq_bytes);
}

void HpccFlow::on_timeout(uint64_t /*now_ns*/, FlowOutput& /*out*/) { int_.reset(); }

}  // namespace tita::cc
