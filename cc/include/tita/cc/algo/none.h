// "none": a fixed pacing rate and no window. The baseline, and what a host
// uses when the fabric is known to be uncongested. Control law in src/none.cc.
#pragma once

#include "tita/cc/algo/common.h"

namespace tita::cc {

struct NoneParams {
  static constexpr AlgorithmInfo kInfo{"none", "fixed rate (line rate, or rate_bps), no window"};
  static NoneParams defaults(const FlowConfig& link);
  static ParamTableView<NoneParams> table();

  double rate_bps = 0;  // 0 = the flow's line rate
};

struct NoneFlow : NoHooks {
  using Params = NoneParams;
  static constexpr bool kWantsInt = false;

  void init(const NoneParams& p, const FlowConfig& cfg, uint64_t now_ns, FlowOutput& out);
};

}  // namespace tita::cc
