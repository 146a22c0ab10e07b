// Parameter tables: every tunable of an algorithm is one row (name, unit, help,
// range, and where it lives in the algorithm's parameter struct). "name=value"
// parsing, get and describe are written once, here and in src/param.cc, and
// work for any table.
#pragma once

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tita::cc {

// One tunable of an algorithm: name=value strings parse into it.
struct ParamInfo {
  std::string_view name;
  std::string_view unit;  // "ns", "bps", "bytes", "" (dimensionless) ...
  std::string_view help;
  double min;
  double max;
  bool integer = false;  // the value must be a whole number
};

struct AlgorithmInfo {
  std::string_view name;     // "dcqcn", "hpcc", ...
  std::string_view summary;  // one line, with the paper
};

// A row of P's table. Exactly one of the member pointers is set: `real` for
// double fields, `whole` for uint64_t fields (integer-valued parameters).
template <class P>
struct ParamDef {
  ParamInfo info;
  double P::*real = nullptr;
  uint64_t P::*whole = nullptr;
};

template <class P>
constexpr ParamDef<P> param(std::string_view name, std::string_view unit, double min,
                            double max, double P::*field, std::string_view help) {
  return {{name, unit, help, min, max, false}, field, nullptr};
}

template <class P>
constexpr ParamDef<P> param(std::string_view name, std::string_view unit, double min,
                            double max, uint64_t P::*field, std::string_view help) {
  return {{name, unit, help, min, max, true}, nullptr, field};
}

// The storage of a table: its rows and, contiguous, their ParamInfo (what
// describe() hands out).
template <class P, size_t N>
struct ParamTable {
  std::array<ParamDef<P>, N> defs;
  std::array<ParamInfo, N> infos;
};

template <class P, size_t N>
constexpr ParamTable<P, N> make_param_table(const ParamDef<P> (&defs)[N]) {
  ParamTable<P, N> t{};
  for (size_t i = 0; i < N; ++i) {
    t.defs[i] = defs[i];
    t.infos[i] = defs[i].info;
  }
  return t;
}

template <class P>
struct ParamTableView {
  std::span<const ParamDef<P>> defs;
  std::span<const ParamInfo> infos;

  template <size_t N>
  constexpr ParamTableView(const ParamTable<P, N>& t) : defs(t.defs), infos(t.infos) {}
};

namespace detail {

// Splits "name=value", finds name in `infos`, parses and range-checks value.
// Returns 0 and sets *index and *value, or -EINVAL and a one-line *err naming
// `owner` (the algorithm): malformed, unknown name (lists the known ones), not a
// number, not an integer, or out of range (gives the range and unit).
int parse_assignment(std::string_view owner, std::span<const ParamInfo> infos,
                     std::string_view assignment, size_t* index, double* value,
                     std::string* err);

// Index of `name` in `infos`, or -1.
int find_param(std::span<const ParamInfo> infos, std::string_view name);

}  // namespace detail

// The field of *p that row d describes, written (v already checked) and read.
template <class P>
void store_param(const ParamDef<P>& d, P* p, double v) {
  if (d.real != nullptr)
    p->*d.real = v;
  else
    p->*d.whole = static_cast<uint64_t>(v);
}
template <class P>
double load_param(const ParamDef<P>& d, const P& p) {
  return d.real != nullptr ? p.*d.real : static_cast<double>(p.*d.whole);
}

// Applies "name=value" to *p. Returns 0 or -EINVAL (see parse_assignment).
template <class P>
int set_param(std::string_view owner, ParamTableView<P> table, P* p,
              std::string_view assignment, std::string* err) {
  size_t i = 0;
  double v = 0;
  if (int rc = detail::parse_assignment(owner, table.infos, assignment, &i, &v, err); rc != 0)
    return rc;
  store_param(table.defs[i], p, v);
  return 0;
}

// Reads parameter `name` of p. Returns 0, or -ENOENT if P has no such parameter.
template <class P>
int get_param(ParamTableView<P> table, const P& p, std::string_view name, double* value) {
  const int i = detail::find_param(table.infos, name);
  if (i < 0) return -ENOENT;
  *value = load_param(table.defs[static_cast<size_t>(i)], p);
  return 0;
}

}  // namespace tita::cc
