// TIMELY: RTT-gradient rate control. Paper, units, equations and deviations: src/timely.cc.
#pragma once

#include "tita/cc/algo/common.h"

namespace tita::cc {

struct TimelyParams {
  static constexpr AlgorithmInfo kInfo{
      "timely", "TIMELY: RTT-gradient rate control (Mittal et al., SIGCOMM 2015)"};
  static TimelyParams defaults(const FlowConfig& link);
  static ParamTableView<TimelyParams> table();

  double ewma_gain = 0.875;        // a: weight of the new RTT difference
  double beta = 0.8;               // multiplicative decrease factor
  uint64_t t_low_ns = 50'000;      // below: always increase
  uint64_t t_high_ns = 500'000;    // above: decrease by beta (1 - T_high/rtt)
  uint64_t min_rtt_ns = 20'000;    // gradient normaliser
  double ai_bps = 100e6;           // additive step delta (scaled from the link)
  double hai_bps = 500e6;          // step after hai_after consecutive increases
  uint64_t hai_after = 5;          // consecutive increases before HAI
  double min_rate_bps = 100e6;
};

struct TimelyFlow : NoHooks {
  using Params = TimelyParams;
  static constexpr bool kWantsInt = false;

  void init(const TimelyParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out);
  void on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out);

  double rtt_diff_ns() const { return rtt_diff_ns_; }

 private:
  const TimelyParams* p_ = nullptr;
  double rate_bps_ = 0;        // committed rate
  double rtt_diff_ns_ = 0;     // EWMA of consecutive RTT differences
  uint64_t line_rate_bps_ = 0;
  uint64_t last_update_seq_ = 0;
  uint32_t prev_rtt_ns_ = 0;
  uint32_t inc_stage_ = 0;     // consecutive increases
  bool started_ = false;
};

}  // namespace tita::cc
