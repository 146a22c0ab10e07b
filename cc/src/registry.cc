// The registry (Registry in cc.h), Params and Flow::init: everything that maps
// an algorithm name or a Params to one alternative of the variants.
#include <array>
#include <cerrno>
#include <utility>

#include "tita/cc/cc.h"

namespace tita::cc {
namespace {

using ParamsVariant = Registry::ParamsVariant;
constexpr size_t kCount = std::variant_size_v<ParamsVariant>;

template <size_t... I>
constexpr std::array<AlgorithmInfo, kCount> all_infos(std::index_sequence<I...>) {
  return {std::variant_alternative_t<I, ParamsVariant>::kInfo...};
}
constexpr auto kInfos = all_infos(std::make_index_sequence<kCount>{});

template <size_t I>
ParamsVariant make_defaults(const FlowConfig& link) {
  return ParamsVariant(std::in_place_index<I>,
                       std::variant_alternative_t<I, ParamsVariant>::defaults(link));
}
template <size_t... I>
constexpr auto all_factories(std::index_sequence<I...>) {
  return std::array<ParamsVariant (*)(const FlowConfig&), kCount>{&make_defaults<I>...};
}
constexpr auto kFactories = all_factories(std::make_index_sequence<kCount>{});

}  // namespace

std::span<const AlgorithmInfo> algorithms() { return kInfos; }

int Params::create(std::string_view algorithm, const FlowConfig& link, Params* out,
                   std::string* err) {
  for (size_t i = 0; i < kCount; ++i) {
    if (kInfos[i].name == algorithm) {
      out->v_ = kFactories[i](link);
      return 0;
    }
  }
  if (err != nullptr) {
    err->assign("unknown congestion control '").append(algorithm).append("' (known:");
    for (size_t i = 0; i < kCount; ++i) err->append(i == 0 ? " " : ", ").append(kInfos[i].name);
    err->append(")");
  }
  return -ENOENT;
}

int Params::set(std::string_view assignment, std::string* err) {
  return std::visit(
      [&](auto& p) {
        using P = std::decay_t<decltype(p)>;
        return set_param(P::kInfo.name, P::table(), &p, assignment, err);
      },
      v_);
}

int Params::get(std::string_view name, double* value) const {
  return std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        return get_param(P::table(), p, name, value);
      },
      v_);
}

std::span<const ParamInfo> Params::describe() const {
  return std::visit([](const auto& p) { return std::decay_t<decltype(p)>::table().infos; }, v_);
}

std::string_view Params::algorithm() const {
  return std::visit([](const auto& p) { return std::decay_t<decltype(p)>::kInfo.name; }, v_);
}

namespace {

template <size_t I>
void init_state(Registry::StateVariant& algo, FlowOutput& out, const ParamsVariant& params,
                const FlowConfig& cfg, uint64_t now_ns) {
  algo.emplace<I>().init(*std::get_if<I>(&params), cfg, now_ns, out);
}
template <size_t... I>
constexpr auto all_inits(std::index_sequence<I...>) {
  using Init = void (*)(Registry::StateVariant&, FlowOutput&, const ParamsVariant&,
                        const FlowConfig&, uint64_t);
  return std::array<Init, kCount>{&init_state<I>...};
}
constexpr auto kInits = all_inits(std::make_index_sequence<kCount>{});

}  // namespace

void Flow::init(const Params& p, const FlowConfig& cfg, uint64_t now_ns) {
  out_ = FlowOutput{};
  kInits[p.v_.index()](algo_, out_, p.v_, cfg, now_ns);
}

}  // namespace tita::cc
