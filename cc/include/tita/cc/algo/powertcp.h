// PowerTCP (INT variant). Paper, units, equations and deviations: src/powertcp.cc.
#pragma once

#include "tita/cc/algo/common.h"
#include "tita/cc/algo/int_history.h"

namespace tita::cc {

struct PowertcpParams {
  static constexpr AlgorithmInfo kInfo{
      "powertcp", "PowerTCP: INT power = current x voltage (Addanki et al., NSDI 2022)"};
  static PowertcpParams defaults(const FlowConfig& link);
  static ParamTableView<PowertcpParams> table();

  double eta = 0.95;             // target utilisation
  double gamma = 0.9;            // EWMA weight of the new window
  double ai_rate_bps = 150e6;    // beta: additive increase as a rate (scaled from the link)
  double min_current = 0.5;      // floor of the current, as a fraction of B
  double min_rate_bps = 100e6;
};

struct PowertcpFlow : NoHooks {
  using Params = PowertcpParams;
  static constexpr bool kWantsInt = true;

  void init(const PowertcpParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out);
  void on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out);
  void on_timeout(uint64_t now_ns, FlowOutput& out);

  double norm_power() const { return power_; }
  double window_bytes() const { return w_; }
  double committed_window_bytes() const { return wc_; }

 private:
  const PowertcpParams* p_ = nullptr;
  double w_ = 0;          // bytes
  double wc_ = 0;         // window one RTT ago (cwnd_old)
  double power_ = 1;      // smoothed normalised power
  PathScale path_;        // tau = T and its conversions
  double w_max_ = 0;
  double w_min_ = 0;
  uint64_t line_rate_bps_ = 0;
  uint64_t last_update_seq_ = 0;
  uint32_t mtu_bytes_ = 0;
  bool started_ = false;
  IntHistory int_;
};

}  // namespace tita::cc
