// DCQCN reaction point (sender). Paper, units, equations and deviations: src/dcqcn.cc.
#pragma once

#include "tita/cc/algo/common.h"

namespace tita::cc {

struct DcqcnParams {
  static constexpr AlgorithmInfo kInfo{
      "dcqcn", "DCQCN: ECN/CNP-driven rate control (Zhu et al., SIGCOMM 2015)"};
  static DcqcnParams defaults(const FlowConfig& link);
  static ParamTableView<DcqcnParams> table();

  double g = 1.0 / 256;                  // alpha gain
  uint64_t alpha_interval_ns = 1'000;    // alpha update period
  uint64_t decrease_interval_ns = 4'000; // at most one cut per this period
  uint64_t rate_timer_ns = 900'000;      // increase timer T
  uint64_t byte_counter_bytes = 0;       // increase every B sent bytes; 0 = timer only
  uint64_t fast_recovery_stages = 1;     // F
  double rate_ai_bps = 50e6;             // R_AI (scaled from the link in defaults())
  double rate_hai_bps = 100e6;           // R_HAI (scaled from the link in defaults())
  double min_rate_bps = 100e6;           // R_min
  uint64_t clamp_target_rate = 1;        // 0: R_T kept across back-to-back cuts (artifact)
};

struct DcqcnFlow : NoHooks {
  using Params = DcqcnParams;
  static constexpr bool kWantsInt = false;

  void init(const DcqcnParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out);
  void on_send(uint64_t now_ns, uint32_t bytes, FlowOutput& out);
  void on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out);
  void on_cnp(uint64_t now_ns, FlowOutput& out);
  void on_loss(uint64_t now_ns, const LossSample& s, FlowOutput& out);
  void on_timeout(uint64_t now_ns, FlowOutput& out);
  void on_timer(uint64_t now_ns, FlowOutput& out);

  // For tests and tracing.
  double current_rate_bps() const { return rate_bps_; }
  double target_rate_bps() const { return target_bps_; }
  // alpha as it is (or will be, absent further CNPs) at now_ns >= the last event.
  double alpha_at(uint64_t now_ns) const;

 private:
  void advance(uint64_t now_ns);               // runs every internal deadline <= now_ns
  void catch_up_alpha(uint64_t t_ns);          // alpha updates of intervals ended by t_ns
  void cut(uint64_t t_ns);                     // rate decrease
  void increase(bool by_timer);                // one rate-increase event
  void publish(FlowOutput& out) const;
  bool at_line_rate() const {
    return rate_bps_ >= static_cast<double>(line_rate_bps_) &&
           target_bps_ >= static_cast<double>(line_rate_bps_);
  }

  const DcqcnParams* p_ = nullptr;
  double rate_bps_ = 0;     // R_C
  double target_bps_ = 0;   // R_T
  double alpha_ = 1;
  uint64_t line_rate_bps_ = 0;
  uint64_t alpha_deadline_ns_ = kNoTimer;  // end of the current alpha interval
  uint64_t timer_deadline_ns_ = kNoTimer;  // next rate-increase timer expiry
  uint64_t cut_deadline_ns_ = kNoTimer;    // a held-back cut (CNP inside the decrease interval)
  uint64_t last_cut_ns_ = 0;
  uint64_t bytes_since_ = 0;               // byte counter
  uint32_t timer_stage_ = 0;
  uint32_t byte_stage_ = 0;
  bool cnp_in_interval_ = false;
  bool cut_any_ = false;
};

}  // namespace tita::cc
