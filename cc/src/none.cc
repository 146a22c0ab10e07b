// "none": pace at a fixed rate (the line rate unless rate_bps is set), no window.
// No paper: the baseline for comparisons and for fabrics known to be uncongested.
// Units: bit/s.
#include "tita/cc/algo/none.h"

namespace tita::cc {
namespace {

constexpr ParamDef<NoneParams> kDefs[] = {
    param("rate_bps", "bps", 0, 1e13, &NoneParams::rate_bps,
          "fixed pacing rate; 0 = the line rate (capped at the line rate)"),
};
constexpr auto kTable = make_param_table(kDefs);

}  // namespace

NoneParams NoneParams::defaults(const FlowConfig& /*link*/) { return NoneParams{}; }

ParamTableView<NoneParams> NoneParams::table() { return kTable; }

void NoneFlow::init(const NoneParams& p, const FlowConfig& cfg, uint64_t /*now_ns*/,
                    FlowOutput& out) {
  const double line = static_cast<double>(cfg.line_rate_bps);
  const double rate = p.rate_bps > 0 ? p.rate_bps : line;
  out = {clamp_rate_bps(rate, 1e3, cfg.line_rate_bps), kNoWindow, kNoTimer};
}

}  // namespace tita::cc
