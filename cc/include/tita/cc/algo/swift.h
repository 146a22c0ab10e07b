// Swift: delay-target window. Paper, units, equations and deviations: src/swift.cc.
#pragma once

#include "tita/cc/algo/common.h"

namespace tita::cc {

struct SwiftParams {
  static constexpr AlgorithmInfo kInfo{
      "swift", "Swift: delay target with hop and flow scaling (Kumar et al., SIGCOMM 2020)"};
  static SwiftParams defaults(const FlowConfig& link);
  static ParamTableView<SwiftParams> table();

  uint64_t base_target_ns = 10'000;  // target floor (defaults: the link's base RTT)
  uint64_t per_hop_ns = 1'000;       // h, target added per hop (defaults: base RTT / 10)
  uint64_t default_hops = 1;         // hop count when the ACK carries no INT
  uint64_t fs_range_ns = 10'000;     // flow-scaling range (defaults: base RTT)
  double fs_min_cwnd = 0.1;          // packets, where flow scaling is fs_range
  double fs_max_cwnd = 100;          // packets, where flow scaling is 0
  double ai = 1.0;                   // packets per RTT
  double beta = 0.8;                 // multiplicative decrease gain
  double max_mdf = 0.5;              // maximum multiplicative decrease
  double min_cwnd = 0.001;           // packets
  double max_cwnd_bdp = 2.0;         // max cwnd, in line-rate BDPs
  double min_rate_bps = 100e6;       // pacing floor when cwnd < 1
};

struct SwiftFlow : NoHooks {
  using Params = SwiftParams;
  static constexpr bool kWantsInt = false;

  void init(const SwiftParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out);
  void on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out);
  void on_loss(uint64_t now_ns, const LossSample& s, FlowOutput& out);
  void on_timeout(uint64_t now_ns, FlowOutput& out);

  double cwnd_packets() const { return cwnd_; }
  // Target delay for a window of cwnd packets over `hops` hops.
  double target_ns(double cwnd, unsigned hops) const;

 private:
  bool may_decrease(uint64_t now_ns) const;
  void decrease(uint64_t now_ns, double factor);
  void publish(FlowOutput& out) const;

  const SwiftParams* p_ = nullptr;
  double cwnd_ = 0;               // packets
  double fs_alpha_ns_ = 0;        // flow-scaling alpha, ns * sqrt(packets)
  double fs_beta_ns_ = 0;         // flow-scaling beta', ns
  double max_cwnd_ = 0;           // packets
  uint64_t line_rate_bps_ = 0;
  uint64_t last_decrease_ns_ = 0;
  uint32_t rtt_ns_ = 0;           // latest RTT sample (base RTT until one arrives)
  uint32_t mtu_bytes_ = 0;
  bool decreased_any_ = false;
};

}  // namespace tita::cc
