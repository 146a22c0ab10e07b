// tita congestion control: the host-facing interface.
//
// A host (the RC engine on DPDK or in ns-3) does, per QP:
//
//   cc::Params params;                       // shared, read-mostly, per algorithm
//   cc::Params::create("hpcc", link, &params, &err);
//   params.set("eta=0.95", &err);
//   cc::Flow flow;                           // fixed size, no allocation
//   flow.init(params, cfg, now_ns);
//   flow.on_ack(now_ns, sample);             // ...and the other events
//   pace at flow.rate_bps(), send while in-flight bytes < flow.cwnd_bytes(),
//   call flow.on_timer(t) at t = flow.next_timer_ns() if it is not kNoTimer.
//
// Hooks: on_send for every data packet handed to the NIC; on_ack for every ACK
// (or READ response) that acknowledges new data; on_cnp for every CNP; on_loss
// for a sequence-error NAK or a selective-repeat hole; on_timeout for an RTO.
// The outputs may change after any hook; read them after each. cwnd_bytes() is
// at least one MTU for window algorithms. Every hook first runs the algorithm's
// internal deadlines that have passed, so after any hook next_timer_ns() is
// kNoTimer or in the future.
//
// The receiver (notification point) side: np_on_data() (notification_point.h)
// decides when a CE-marked data packet triggers a CNP. INT: the receiver copies the INT stack of the data
// packet that triggered an ACK into that ACK (every ACK, as in HPCC); the sender
// fills AckSample::hops from it.
//
// Control functions return 0 or -errno and, on error, a one-line message.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "tita/cc/algo/dcqcn.h"
#include "tita/cc/algo/hpcc.h"
#include "tita/cc/algo/none.h"
#include "tita/cc/algo/nscc.h"
#include "tita/cc/algo/powertcp.h"
#include "tita/cc/algo/swift.h"
#include "tita/cc/algo/timely.h"
#include "tita/cc/algo/tita.h"
#include "tita/cc/notification_point.h"
#include "tita/cc/param.h"
#include "tita/cc/plugin.h"
#include "tita/cc/types.h"

namespace tita::cc {

// The registry: every algorithm's per-flow state type, in registry order. Each
// names its parameter struct (State::Params). Adding a built-in = one entry; the
// last one, PluginFlow, runs every algorithm registered at run time (plugin.h).
template <class... States>
struct AlgorithmList {
  using StateVariant = std::variant<States...>;
  using ParamsVariant = std::variant<typename States::Params...>;
};
using Registry = AlgorithmList<NoneFlow, DcqcnFlow, TimelyFlow, HpccFlow, SwiftFlow,
                               PowertcpFlow, NsccFlow, TitaFlow, PluginFlow>;

// The built-in algorithms, in registry order (plugins() has the others).
std::span<const AlgorithmInfo> algorithms();

// One algorithm's shared, read-mostly parameters (value type, copyable).
// Default-constructed: "none" at the line rate.
class Params {
 public:
  // Defaults for `algorithm` (a built-in or a registered plug-in), scaled from
  // `link` where the literature does. -ENOENT and "unknown congestion control
  // 'x' (known: none, dcqcn, ...)" for an unknown name; *out is unchanged then.
  static int create(std::string_view algorithm, const FlowConfig& link, Params* out,
                    std::string* err);

  // Applies "name=value". -EINVAL with a message for: no '=', an unknown name
  // (lists the known ones), a value that is not a number (or not an integer
  // where one is required), or one out of range (gives the range and unit).
  int set(std::string_view assignment, std::string* err);

  // Reads a parameter. -ENOENT if the algorithm has no such parameter.
  int get(std::string_view name, double* value) const;

  std::span<const ParamInfo> describe() const;
  std::string_view algorithm() const;

 private:
  friend class Flow;
  Registry::ParamsVariant v_;
};

// Per-QP state: fixed size, trivially copyable, no allocation, no virtual call.
class Flow {
 public:
  // Keeps a pointer to p's parameters: p must outlive the flow and not move.
  // Set parameters before init(): algorithms derive some per-flow constants
  // from them at init (window floors, Swift's flow scaling, NSCC's gains).
  // Params::create() into p for another algorithm requires init() again.
  // init() again is also how a flow restarts.
  void init(const Params& p, const FlowConfig& cfg, uint64_t now_ns);

  void on_send(uint64_t now_ns, uint32_t bytes) {
    dispatch([&](auto& a) { a.on_send(now_ns, bytes, out_); });
  }
  void on_ack(uint64_t now_ns, const AckSample& s) {
    dispatch([&](auto& a) { a.on_ack(now_ns, s, out_); });
  }
  void on_cnp(uint64_t now_ns) {
    dispatch([&](auto& a) { a.on_cnp(now_ns, out_); });
  }
  void on_loss(uint64_t now_ns, const LossSample& s) {
    dispatch([&](auto& a) { a.on_loss(now_ns, s, out_); });
  }
  void on_timeout(uint64_t now_ns) {
    dispatch([&](auto& a) { a.on_timeout(now_ns, out_); });
  }
  void on_timer(uint64_t now_ns) {
    dispatch([&](auto& a) { a.on_timer(now_ns, out_); });
  }

  uint64_t rate_bps() const { return out_.rate_bps; }          // in [min rate, line rate]
  uint64_t cwnd_bytes() const { return out_.cwnd_bytes; }      // kNoWindow: rate-based
  uint64_t next_timer_ns() const { return out_.next_timer_ns; }  // kNoTimer: none wanted
  bool wants_int() const {
    return std::visit(
        [](const auto& a) {
          if constexpr (std::is_same_v<std::decay_t<decltype(a)>, PluginFlow>)
            return a.ops != nullptr && a.ops->wants_int;
          else
            return std::decay_t<decltype(a)>::kWantsInt;
        },
        algo_);
  }

  // The algorithm's own state, for tests and tracing; nullptr if another runs.
  template <class State>
  const State* state() const {
    return std::get_if<State>(&algo_);
  }

 private:
  // std::visit, kept inline: with nine alternatives GCC 12 calls an out-of-line
  // visitor per hook (12 instructions more per ACK than with eight). One
  // comparison per alternative, which the compiler folds into a jump, costs 5.
  template <class Fn, size_t... I>
  void dispatch_impl(Fn&& fn, std::index_sequence<I...>) {
    const size_t i = algo_.index();
    (void)((i == I ? (fn(*std::get_if<I>(&algo_)), true) : false) || ...);
  }
  template <class Fn>
  void dispatch(Fn&& fn) {
    dispatch_impl(fn, std::make_index_sequence<std::variant_size_v<Registry::StateVariant>>{});
  }

  FlowOutput out_;
  Registry::StateVariant algo_;
};

inline constexpr size_t kMaxFlowBytes = 256;
static_assert(sizeof(Flow) <= kMaxFlowBytes, "per-QP congestion state must stay small");
static_assert(std::is_trivially_copyable_v<Flow>);

}  // namespace tita::cc
