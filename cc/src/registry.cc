// The registry (Registry in cc.h), Params and Flow::init: everything that maps
// an algorithm name or a Params to one alternative of the variants. The last
// alternative is the plug-in slot (plugin.h, plugin.cc).
#include <array>
#include <cerrno>
#include <utility>

#include "tita/cc/cc.h"

namespace tita::cc {
namespace {

using ParamsVariant = Registry::ParamsVariant;
constexpr size_t kCount = std::variant_size_v<ParamsVariant>;
constexpr size_t kBuiltins = kCount - 1;  // PluginParams is last
static_assert(std::is_same_v<std::variant_alternative_t<kBuiltins, ParamsVariant>, PluginParams>);

template <size_t... I>
constexpr std::array<AlgorithmInfo, kBuiltins> all_infos(std::index_sequence<I...>) {
  return {std::variant_alternative_t<I, ParamsVariant>::kInfo...};
}
constexpr auto kInfos = all_infos(std::make_index_sequence<kBuiltins>{});

template <size_t I>
ParamsVariant make_defaults(const FlowConfig& link) {
  return ParamsVariant(std::in_place_index<I>,
                       std::variant_alternative_t<I, ParamsVariant>::defaults(link));
}
template <size_t... I>
constexpr auto all_factories(std::index_sequence<I...>) {
  return std::array<ParamsVariant (*)(const FlowConfig&), kBuiltins>{&make_defaults<I>...};
}
constexpr auto kFactories = all_factories(std::make_index_sequence<kBuiltins>{});

}  // namespace

std::span<const AlgorithmInfo> algorithms() { return kInfos; }

int Params::create(std::string_view algorithm, const FlowConfig& link, Params* out,
                   std::string* err) {
  for (size_t i = 0; i < kBuiltins; ++i) {
    if (kInfos[i].name == algorithm) {
      out->v_ = kFactories[i](link);
      return 0;
    }
  }
  for (const PluginOps* ops : plugins()) {
    if (ops->info.name == algorithm) {
      PluginParams& p = out->v_.emplace<PluginParams>();
      p.ops = ops;
      ops->defaults(p.bytes, link);
      return 0;
    }
  }
  if (err != nullptr) {
    err->assign("unknown congestion control '").append(algorithm).append("' (known:");
    for (size_t i = 0; i < kBuiltins; ++i) err->append(i == 0 ? " " : ", ").append(kInfos[i].name);
    for (const PluginOps* ops : plugins()) err->append(", ").append(ops->info.name);
    err->append(")");
  }
  return -ENOENT;
}

int Params::set(std::string_view assignment, std::string* err) {
  return std::visit(
      [&](auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, PluginParams>) {
          // The same parsing and checks as a built-in's, against its table.
          size_t i = 0;
          double v = 0;
          const int rc = detail::parse_assignment(p.ops->info.name, p.ops->params, assignment, &i, &v, err);
          if (rc == 0) p.ops->set_param(p.bytes, i, v);
          return rc;
        } else {
          return set_param(P::kInfo.name, P::table(), &p, assignment, err);
        }
      },
      v_);
}

int Params::get(std::string_view name, double* value) const {
  return std::visit(
      [&](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, PluginParams>) {
          const int i = detail::find_param(p.ops->params, name);
          if (i < 0) return -ENOENT;
          *value = p.ops->get_param(p.bytes, static_cast<size_t>(i));
          return 0;
        } else {
          return get_param(P::table(), p, name, value);
        }
      },
      v_);
}

std::span<const ParamInfo> Params::describe() const {
  return std::visit(
      [](const auto& p) -> std::span<const ParamInfo> {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, PluginParams>)
          return p.ops->params;
        else
          return P::table().infos;
      },
      v_);
}

std::string_view Params::algorithm() const {
  return std::visit(
      [](const auto& p) {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, PluginParams>)
          return p.ops->info.name;
        else
          return P::kInfo.name;
      },
      v_);
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
