// HPCC: INT-driven inflight window. Paper, units, equations and deviations: src/hpcc.cc.
#pragma once

#include "tita/cc/algo/common.h"
#include "tita/cc/algo/int_history.h"

namespace tita::cc {

struct HpccParams {
  static constexpr AlgorithmInfo kInfo{
      "hpcc", "HPCC: INT utilisation, inflight window with per-RTT commit (Li et al., SIGCOMM 2019)"};
  static HpccParams defaults(const FlowConfig& link);
  static ParamTableView<HpccParams> table();

  double eta = 0.95;            // target utilisation
  uint64_t max_stage = 5;       // additive stages before a multiplicative step
  double ai_rate_bps = 50e6;    // W_AI = ai_rate_bps * T (scaled from the link)
  double min_rate_bps = 100e6;
  uint64_t fast_react = 1;      // 1: every ACK reacts from W_c; 0: once per RTT only
};

struct HpccFlow : NoHooks {
  using Params = HpccParams;
  static constexpr bool kWantsInt = true;

  void init(const HpccParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out);
  void on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out);
  void on_timeout(uint64_t now_ns, FlowOutput& out);

  double utilisation() const { return u_; }
  double window_bytes() const { return w_; }
  double committed_window_bytes() const { return wc_; }
  uint32_t inc_stage() const { return inc_stage_; }

 private:
  const HpccParams* p_ = nullptr;
  double w_ = 0;          // W, bytes
  double wc_ = 0;         // W_c, committed once per RTT
  double u_ = 1;          // U, EWMA of the max per-hop utilisation
  PathScale path_;        // T and its conversions
  double w_max_ = 0;      // line-rate BDP
  double w_min_ = 0;      // min rate * T
  uint64_t line_rate_bps_ = 0;
  uint64_t last_update_seq_ = 0;
  uint32_t mtu_bytes_ = 0;
  uint32_t inc_stage_ = 0;
  bool started_ = false;
  IntHistory int_;
};

}  // namespace tita::cc
