// NSCC-style ECN x delay window (UEC). Paper, units, equations and deviations: src/nscc.cc.
#pragma once

#include "tita/cc/algo/common.h"

namespace tita::cc {

struct NsccParams {
  static constexpr AlgorithmInfo kInfo{
      "nscc", "NSCC-style ECN x queueing-delay window (Ultra Ethernet Transport 1.0, 2025)"};
  static NsccParams defaults(const FlowConfig& link);
  static ParamTableView<NsccParams> table();

  uint64_t target_qdelay_ns = 5'000;  // defaults: base RTT / 2
  double pi_mss = 4;                  // proportional increase, in MSS (x a b / target)
  double fi_mss = 5;                  // fair increase, in MSS (x a)
  double eta_mss = 0.15;              // per-RTT additive increase, in MSS (x a)
  double md_gain = 0.8;               // multiplicative decrease gain
  double max_md = 0.5;                // largest decrease per base RTT
  double delay_gain = 0.125;          // EWMA gain of the average queueing delay
  double quick_adapt_factor = 4;      // quick adapt when delay > factor x target
  double max_cwnd_bdp = 1.5;          // maxwnd = initial cwnd, in BDPs
  uint64_t apply_every_mtus = 8;      // apply the accumulated increase every N MTU acked
};

struct NsccFlow : NoHooks {
  using Params = NsccParams;
  static constexpr bool kWantsInt = false;

  void init(const NsccParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out);
  void on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out);
  void on_loss(uint64_t now_ns, const LossSample& s, FlowOutput& out);
  void on_timeout(uint64_t now_ns, FlowOutput& out);

  double cwnd_bytes() const { return cwnd_; }
  double avg_qdelay_ns() const { return avg_delay_ns_; }

 private:
  void quick_adapt(uint64_t now_ns);
  void publish(FlowOutput& out) const;

  const NsccParams* p_ = nullptr;
  double cwnd_ = 0;            // bytes
  double inc_ = 0;             // accumulated increase, bytes^2 (applied as inc / cwnd)
  double avg_delay_ns_ = 0;    // EWMA of queueing delay
  double alpha_ = 0;           // proportional-increase gain, bytes/ns
  double fi_ = 0;              // fair-increase gain, bytes
  double eta_ = 0;             // per-RTT increase, bytes
  double max_cwnd_ = 0;
  uint64_t base_rtt_ns_ = 0;
  uint64_t line_rate_bps_ = 0;
  uint64_t round_end_seq_ = 0; // the RTT round ends when this is acknowledged
  uint64_t period_start_ns_ = 0;   // base-RTT periods, for quick adapt
  uint64_t acked_this_period_ = 0;
  uint64_t acked_last_period_ = 0;
  uint64_t acked_since_apply_ = 0;
  uint64_t last_md_ns_ = 0;
  uint64_t last_qa_ns_ = 0;
  uint32_t mtu_bytes_ = 0;
  bool md_any_ = false;
  bool qa_any_ = false;
  bool round_clean_ = false;   // every ACK of this round saw ~zero queueing delay
  bool fast_ = false;          // previous round was clean: fast increase
};

}  // namespace tita::cc
