// tita: the project's end-network cooperative law. Design: doc/cc/tita.md;
// equations and units: src/tita.cc.
#pragma once

#include "tita/cc/algo/common.h"
#include "tita/cc/algo/int_history.h"

namespace tita::cc {

struct TitaParams {
  static constexpr AlgorithmInfo kInfo{
      "tita", "tita: INT utilisation with per-hop ECN/RTT fallback, queue-gated AI (this project)"};
  static TitaParams defaults(const FlowConfig& link);
  static ParamTableView<TitaParams> table();

  double eta = 0.95;              // target utilisation
  uint64_t max_stage = 5;         // RTTs of additive increase before a multiplicative step
  double ramp_band = 0.2;         // complete INT with U < eta (1 - band): ramp at once
  double ai_min_bdp = 0.0005;     // constant AI per RTT, in line-rate BDPs
  double ai_bdp = 0.005;          // AI per RTT: ai_bdp x sqrt(W_c x BDP) (0.005 BDP at W_c = BDP)
  double probe_max = 1.0;         // largest per-RTT growth without complete INT
  double rtt_slack = 0.1;         // residual RTT (in base RTTs) not counted as queue
  double ecn_gain = 1.0 / 16;     // EWMA gain of the CE fraction
  double loss_decrease = 0.5;     // window factor on loss or timeout
  double init_window_bdp = 0.5;   // initial window, in line-rate BDPs
  uint64_t init_line_rate = 1;    // 1: send the initial window at line rate (else W/T)
  double min_rate_bps = 100e6;
  // Host share: a flow that gets fewer send slots than its rate asks for (the NIC
  // is shared with other QPs) is paced at what it gets, so a new flow is not
  // reduced to an equal round-robin share. 0 disables.
  uint64_t host_share = 1;
  double host_busy = 0.9;         // achieved/paced below this: the NIC limits the flow
  double host_yield = 0.5;        // while limited: pacing cap = (1 - yield) x achieved
  double host_gain = 0.25;        // otherwise: cap = (1 + gain) x achieved + host_ai x line
  double host_ai = 0.05;          // additive part of the cap, in line rates
  double host_tc = 0.25;          // time constant of the achieved-rate EWMA, in T
  double host_young_bdp = 1.0;    // a flow's first bytes (after idle), in BDPs: never capped
};

struct TitaFlow : NoHooks {
  using Params = TitaParams;
  static constexpr bool kWantsInt = true;

  // Which signal set the last utilisation sample.
  enum class Mode : uint8_t { kNone, kInt, kPartial, kFallback };

  void init(const TitaParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out);
  void on_send(uint64_t now_ns, uint32_t bytes, FlowOutput& out);
  void on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out);
  void on_loss(uint64_t now_ns, const LossSample& s, FlowOutput& out);
  void on_timeout(uint64_t now_ns, FlowOutput& out);

  double utilisation() const { return u_; }
  double window_bytes() const { return w_; }
  double committed_window_bytes() const { return wc_; }
  double ecn_fraction() const { return ecn_alpha_; }
  uint32_t inc_stage() const { return inc_stage_; }
  Mode mode() const { return mode_; }
  double host_rate_bps() const { return host_bps_; }      // achieved send rate (EWMA)
  double host_fraction() const { return host_frac_; }     // achieved / paced (EWMA)
  bool host_limited() const { return host_frac_ < p_->host_busy; }

 private:
  // One utilisation sample, from INT and/or the fallback signals.
  struct Signal {
    double u;          // utilisation of the most loaded hop
    double tau_ns;     // time the sample covers
    Mode mode;
  };
  Signal measure(uint64_t now_ns, const AckSample& s);
  double next_window(uint32_t* next_stage) const;
  bool probing() const;  // growing multiplicatively without complete INT
  void decrease(uint64_t now_ns, FlowOutput& out);
  void publish(FlowOutput& out) const;
  // Line rate x T: also the window cap.
  double bdp_bytes() const { return path_.window_of(static_cast<double>(line_rate_bps_)); }
  double w_min() const { return std::min(bdp_bytes(), path_.window_of(p_->min_rate_bps)); }

  const TitaParams* p_ = nullptr;
  double w_ = 0;           // window, bytes
  double wc_ = 0;          // committed window
  double u_ = 0;           // EWMA utilisation
  float ecn_alpha_ = 1;    // EWMA CE fraction (DCTCP alpha)
  PathScale path_;         // base RTT T and its conversions
  double w_congested_ = 0;  // W_c when the path last filled (U >= eta)
  uint64_t line_rate_bps_ = 0;
  uint64_t last_update_seq_ = 0;
  uint64_t last_sample_ns_ = 0;
  uint64_t last_decrease_ns_ = 0;
  uint64_t last_send_ns_ = 0;
  float host_bps_ = 0;     // achieved send rate while busy (EWMA over ~T/2)
  float host_frac_ = 1;    // achieved / paced rate (EWMA)
  uint32_t inflight_bytes_ = 0;  // estimate: the last ACK's figure plus sends since
  uint32_t busy_bytes_ = 0;      // bytes sent since the flow last went idle (saturates)
  uint32_t round_packets_ = 0;
  uint32_t round_ce_packets_ = 0;
  uint32_t inc_stage_ = 0;
  uint32_t probe_rounds_ = 0;
  uint16_t mtu_bytes_ = 0;
  uint16_t last_send_bytes_ = 0;
  Mode mode_ = Mode::kNone;
  bool decreased_any_ = false;
  bool sent_any_ = false;
  IntHistory int_;
};

}  // namespace tita::cc
