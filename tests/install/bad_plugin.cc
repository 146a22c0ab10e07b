// Plug-ins that must be refused with one line, never a crash (cc-plugin test):
//   -DBAD_NO_ENTRY   a shared object without TITA_CC_PLUGIN
//   -DBAD_DUPLICATE  an algorithm named as a built-in ("hpcc")
//   -DBAD_OVERSIZE   per-flow state above kPluginStateBytes (ops made by hand:
//                    TITA_CC_PLUGIN would not compile it)
#include <tita/cc/plugin.h>

namespace bad {
using namespace tita::cc;

struct Params {
#ifdef BAD_DUPLICATE
  static constexpr AlgorithmInfo kInfo{"hpcc", "a second hpcc"};
#else
  static constexpr AlgorithmInfo kInfo{"bad", "refused"};
#endif
  static Params defaults(const FlowConfig&) { return {}; }
  static ParamTableView<Params> table();
  double x = 1;
};
constexpr ParamDef<Params> kDefs[] = {param("x", "", 0, 2, &Params::x, "unused")};
constexpr auto kTable = make_param_table(kDefs);
ParamTableView<Params> Params::table() { return kTable; }

struct Flow : NoHooks {
  using Params = bad::Params;
  static constexpr bool kWantsInt = false;
  void init(const Params&, const FlowConfig& cfg, uint64_t, FlowOutput& out) { out.rate_bps = cfg.line_rate_bps; }
};
}  // namespace bad

#if defined(BAD_DUPLICATE)
TITA_CC_PLUGIN(bad::Flow);
#elif defined(BAD_OVERSIZE)
extern "C" __attribute__((visibility("default"))) const tita::cc::PluginOps* const* TITA_CC_PLUGIN_ENTRY(size_t* n) {
  static tita::cc::PluginOps ops = tita::cc::plugin_ops<bad::Flow>();
  ops.state_bytes = 4096;
  static const tita::cc::PluginOps* const list[] = {&ops};
  *n = 1;
  return list;
}
#else
extern "C" int not_a_plugin() { return 0; }
#endif
