// Congestion control from outside tita's tree: an algorithm built as a shared
// object against the installed headers registers itself by name, and every host
// (tita-perf, the verbs layer, tita-sim) runs it like a built-in.
//
// An algorithm is written exactly as the built-ins in algo/ are: a parameter
// struct (kInfo, defaults(), table()) and a per-flow state struct (Params,
// kWantsInt, init and the hooks it needs, from NoHooks). One line registers it:
//
//   TITA_CC_PLUGIN(DctcpFlow);   // at namespace scope, in the .so
//
// (several: TITA_CC_PLUGIN(AFlow, BFlow)) and the host loads it with
// `--cc-plugin PATH.so` (TITA_CC_PLUGIN=PATH.so for the verbs layer). A program
// linking tita may also call register_algorithm() itself, at start-up or from a
// static constructor. The rules of cc/ hold for plug-ins: time comes only as
// now_ns, hooks do not allocate, block or read clocks, and decisions go out
// only through FlowOutput (rate, window, next timer). Both structs must be
// trivially copyable and fit kPluginStateBytes / kPluginParamsBytes.
//
// Built-in algorithms keep their direct (std::variant) dispatch; every plug-in
// runs through one variant alternative and one indirect call per hook.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "tita/cc/algo/common.h"
#include "tita/cc/param.h"
#include "tita/cc/types.h"

namespace tita::cc {

// Bytes of per-flow state and of parameters a plug-in may use (cc::Flow stays
// within kMaxFlowBytes).
inline constexpr size_t kPluginStateBytes = 216;
inline constexpr size_t kPluginParamsBytes = 144;
// Bumped when PluginOps or the structs it passes change layout.
inline constexpr uint32_t kPluginAbiVersion = 1;

// What a plug-in hands to register_algorithm(). `state` and `params` point at
// 8-byte aligned storage of the declared sizes.
struct PluginOps {
  uint32_t abi_version = kPluginAbiVersion;
  AlgorithmInfo info;
  size_t state_bytes = 0;
  size_t params_bytes = 0;
  bool wants_int = false;
  std::span<const ParamInfo> params;  // name, unit, range of each parameter
  void (*defaults)(void* params, const FlowConfig& link) = nullptr;
  // Parameter `index` of `params` (already range-checked against `params[index]`).
  void (*set_param)(void* params, size_t index, double value) = nullptr;
  double (*get_param)(const void* params, size_t index) = nullptr;
  void (*init)(void* state, const void* params, const FlowConfig& cfg, uint64_t now_ns,
               FlowOutput& out) = nullptr;
  void (*on_send)(void* state, uint64_t now_ns, uint32_t bytes, FlowOutput& out) = nullptr;
  void (*on_ack)(void* state, uint64_t now_ns, const AckSample& s, FlowOutput& out) = nullptr;
  void (*on_cnp)(void* state, uint64_t now_ns, FlowOutput& out) = nullptr;
  void (*on_loss)(void* state, uint64_t now_ns, const LossSample& s, FlowOutput& out) = nullptr;
  void (*on_timeout)(void* state, uint64_t now_ns, FlowOutput& out) = nullptr;
  void (*on_timer)(void* state, uint64_t now_ns, FlowOutput& out) = nullptr;
};

// Adds an algorithm. -EEXIST for a name taken (built-in or plug-in), -EINVAL
// for an ABI mismatch, a state or parameter block above the limits, or a
// missing hook; a one-line message in *err. `ops` must outlive every use (a
// static in the plug-in). Safe to call from a static constructor.
int register_algorithm(const PluginOps& ops, std::string* err);

// dlopen()s a plug-in and registers every algorithm its TITA_CC_PLUGIN names.
// A bare file name ("libmycc.so") is the file of that name in the current
// directory if there is one, else what dlopen() finds on the library search
// path; a path ("build/libmycc.so") is that file.
// Fails (-ENOENT, -EINVAL, -EEXIST) with one line naming the file for: a file
// that cannot be loaded (missing, not an ELF, an undefined symbol), one without
// the entry point (no TITA_CC_PLUGIN), or a registration refused; then nothing
// of it stays registered and it is unloaded.
int load_plugin(std::string_view path, std::string* err);

// The plug-ins registered so far, in registration order.
std::span<const PluginOps* const> plugins();

// Every algorithm, built-in and plug-in, with its parameters (unit, default for
// `link`, range, meaning): what `--cc help` prints.
std::string algorithms_help(const FlowConfig& link = FlowConfig{});

// The registry's plug-in slot (an alternative of cc::Params and cc::Flow): the
// ops of the algorithm and its parameters / per-flow state as bytes.
struct PluginParams {
  static constexpr AlgorithmInfo kInfo{"plug-in", "an algorithm registered at run time"};
  const PluginOps* ops = nullptr;
  alignas(8) unsigned char bytes[kPluginParamsBytes];
};

struct PluginFlow {
  using Params = PluginParams;
  static constexpr bool kWantsInt = false;  // per plug-in: Flow::wants_int() asks its ops

  void init(const PluginParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out) {
    ops = p.ops;
    ops->init(state, p.bytes, cfg, now_ns, out);
  }
  void on_send(uint64_t now_ns, uint32_t bytes, FlowOutput& out) { ops->on_send(state, now_ns, bytes, out); }
  void on_ack(uint64_t now_ns, const AckSample& s, FlowOutput& out) { ops->on_ack(state, now_ns, s, out); }
  void on_cnp(uint64_t now_ns, FlowOutput& out) { ops->on_cnp(state, now_ns, out); }
  void on_loss(uint64_t now_ns, const LossSample& s, FlowOutput& out) { ops->on_loss(state, now_ns, s, out); }
  void on_timeout(uint64_t now_ns, FlowOutput& out) { ops->on_timeout(state, now_ns, out); }
  void on_timer(uint64_t now_ns, FlowOutput& out) { ops->on_timer(state, now_ns, out); }

  // The plug-in's own state, for its tests (nullptr if another algorithm runs).
  template <class F>
  const F* as(std::string_view name) const {
    return ops != nullptr && ops->info.name == name ? reinterpret_cast<const F*>(state) : nullptr;
  }

  const PluginOps* ops = nullptr;
  alignas(8) unsigned char state[kPluginStateBytes];
};

// ---------------------------------------------------------------- adapter

// The ops of an algorithm written as the built-ins are (see the top of this file).
template <class F>
const PluginOps& plugin_ops() {
  using P = typename F::Params;
  static_assert(std::is_trivially_copyable_v<F> && std::is_trivially_copyable_v<P>,
                "plug-in state and parameters must be trivially copyable");
  static_assert(sizeof(F) <= kPluginStateBytes, "plug-in per-flow state above kPluginStateBytes");
  static_assert(sizeof(P) <= kPluginParamsBytes, "plug-in parameters above kPluginParamsBytes");
  static_assert(alignof(F) <= 8 && alignof(P) <= 8, "plug-in state and parameters: at most 8-byte alignment");
  static const PluginOps ops = [] {
    PluginOps o;
    o.info = P::kInfo;
    o.state_bytes = sizeof(F);
    o.params_bytes = sizeof(P);
    o.wants_int = F::kWantsInt;
    o.params = P::table().infos;
    o.defaults = [](void* p, const FlowConfig& link) { ::new (p) P(P::defaults(link)); };
    o.set_param = [](void* p, size_t i, double v) { store_param(P::table().defs[i], static_cast<P*>(p), v); };
    o.get_param = [](const void* p, size_t i) { return load_param(P::table().defs[i], *static_cast<const P*>(p)); };
    // The parameters live in the host's cc::Params, which outlives the flow
    // (the rule for built-ins too), so the state may keep a pointer to them.
    o.init = [](void* s, const void* p, const FlowConfig& cfg, uint64_t now, FlowOutput& out) {
      (::new (s) F())->init(*static_cast<const P*>(p), cfg, now, out);
    };
    o.on_send = [](void* s, uint64_t now, uint32_t b, FlowOutput& out) { static_cast<F*>(s)->on_send(now, b, out); };
    o.on_ack = [](void* s, uint64_t now, const AckSample& a, FlowOutput& out) {
      static_cast<F*>(s)->on_ack(now, a, out);
    };
    o.on_cnp = [](void* s, uint64_t now, FlowOutput& out) { static_cast<F*>(s)->on_cnp(now, out); };
    o.on_loss = [](void* s, uint64_t now, const LossSample& l, FlowOutput& out) {
      static_cast<F*>(s)->on_loss(now, l, out);
    };
    o.on_timeout = [](void* s, uint64_t now, FlowOutput& out) { static_cast<F*>(s)->on_timeout(now, out); };
    o.on_timer = [](void* s, uint64_t now, FlowOutput& out) { static_cast<F*>(s)->on_timer(now, out); };
    return o;
  }();
  return ops;
}

// The ops of several algorithms, for TITA_CC_PLUGIN.
template <class... F>
std::array<const PluginOps*, sizeof...(F)> plugin_list() {
  return {&plugin_ops<F>()...};
}

}  // namespace tita::cc

// The entry point load_plugin() looks up in a plug-in (the one symbol it needs).
#define TITA_CC_PLUGIN_ENTRY tita_cc_plugin_ops_v1

// Makes this shared object a plug-in offering the algorithms F... (their per-flow
// state structs). Once per object, at namespace scope. The object needs no tita
// library: everything it uses from tita is in the headers.
#define TITA_CC_PLUGIN(...)                                                                  \
  extern "C" __attribute__((visibility("default"))) const ::tita::cc::PluginOps* const*     \
  TITA_CC_PLUGIN_ENTRY(size_t* n) {                                                          \
    static const auto list = ::tita::cc::plugin_list<__VA_ARGS__>();                          \
    *n = list.size();                                                                        \
    return list.data();                                                                      \
  }
