// DCTCP-style window control on ECN echoes, as a tita congestion-control
// plug-in: an example of an algorithm living in its own project.
//
// Control law (Alizadeh et al., SIGCOMM 2010), per window of data:
//   alpha <- (1 - g) alpha + g F, F = fraction of the window's packets CE-marked
//   on the first marked ACK of a window: W <- W (1 - alpha / 2) (once per window)
//   otherwise: W <- W + MTU x acked / W (one MTU per window, additive increase)
// The rate is W over the base RTT, so pacing follows the window.
#include <tita/cc/plugin.h>

#include <algorithm>

namespace dctcp {

using namespace tita::cc;

struct Params {
  static constexpr AlgorithmInfo kInfo{"dctcp", "DCTCP-style window on ECN echoes (Alizadeh et al., 2010)"};
  static Params defaults(const FlowConfig& /*link*/) { return Params{}; }
  static ParamTableView<Params> table();

  double g = 1.0 / 16;        // alpha gain
  uint64_t min_window_mtus = 2;
};

constexpr ParamDef<Params> kDefs[] = {
    param("g", "", 1e-6, 1, &Params::g, "alpha EWMA gain"),
    param("min_window_mtus", "", 1, 1e6, &Params::min_window_mtus, "smallest window, in MTUs"),
};
constexpr auto kTable = make_param_table(kDefs);
ParamTableView<Params> Params::table() { return kTable; }

struct Flow : NoHooks {
  using Params = dctcp::Params;
  static constexpr bool kWantsInt = false;

  void init(const Params& p, const FlowConfig& cfg, uint64_t /*now_ns*/, FlowOutput& out) {
    p_ = &p;
    line_ = cfg.line_rate_bps;
    mtu_ = cfg.mtu_bytes;
    scale_ = PathScale::of(cfg.base_rtt_ns);
    w_max_ = scale_.window_of(static_cast<double>(line_));
    w_ = w_max_;
    publish(out);
  }

  void on_ack(uint64_t /*now_ns*/, const AckSample& s, FlowOutput& out) {
    acked_ += s.acked_packets;
    marked_ += s.ce_packets;
    if (s.ce_packets > 0 && s.ack_seq_bytes > cut_until_) {
      w_ *= 1 - alpha_ / 2;  // once per window of data
      cut_until_ = s.next_seq_bytes;
    } else if (s.ce_packets == 0) {
      w_ += static_cast<double>(mtu_) * static_cast<double>(s.acked_bytes) / w_;
    }
    if (s.ack_seq_bytes >= window_end_) {  // a window's worth of ACKs: update alpha
      const double f = acked_ > 0 ? static_cast<double>(marked_) / acked_ : 0.0;
      alpha_ = ewma(alpha_, f, p_->g);
      acked_ = marked_ = 0;
      window_end_ = s.next_seq_bytes;
    }
    publish(out);
  }

  void on_timeout(uint64_t /*now_ns*/, FlowOutput& out) {
    w_ = floor();
    publish(out);
  }

  double alpha() const { return alpha_; }
  double window_bytes() const { return w_; }

 private:
  double floor() const { return static_cast<double>(p_->min_window_mtus * mtu_); }
  void publish(FlowOutput& out) {
    w_ = std::clamp(w_, floor(), w_max_);
    out.cwnd_bytes = static_cast<uint64_t>(w_);
    out.rate_bps = clamp_rate_bps(scale_.rate_of(w_), 1e6, line_);
  }

  const Params* p_ = nullptr;
  uint64_t line_ = 0;
  uint32_t mtu_ = 0;
  PathScale scale_;
  double w_max_ = 0, w_ = 0, alpha_ = 1;
  uint64_t acked_ = 0, marked_ = 0, window_end_ = 0, cut_until_ = 0;
};

}  // namespace dctcp

TITA_CC_PLUGIN(dctcp::Flow);
