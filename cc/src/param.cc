// The one "name=value" parser, shared by every parameter table.
#include <cerrno>
#include <charconv>
#include <cmath>

#include "tita/cc/param.h"

namespace tita::cc::detail {
namespace {

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Builds a message by appending pieces (a chain of operator+ on temporaries
// trips GCC 12's -Wrestrict false positive, PR 105651).
template <class... Pieces>
int fail(std::string* err, const Pieces&... pieces) {
  if (err != nullptr) {
    err->clear();
    (err->append(pieces), ...);
  }
  return -EINVAL;
}

}  // namespace

int find_param(std::span<const ParamInfo> infos, std::string_view name) {
  for (size_t i = 0; i < infos.size(); ++i)
    if (infos[i].name == name) return static_cast<int>(i);
  return -1;
}

int parse_assignment(std::string_view owner, std::span<const ParamInfo> infos,
                     std::string_view assignment, size_t* index, double* value,
                     std::string* err) {
  using std::string_view_literals::operator""sv;
  const size_t eq = assignment.find('=');
  const std::string_view name = trim(assignment.substr(0, eq));
  if (eq == std::string_view::npos || name.empty())
    return fail(err, "malformed parameter '"sv, assignment, "': expected name=value"sv);
  const std::string_view text = trim(assignment.substr(eq + 1));

  const int i = find_param(infos, name);
  if (i < 0) {
    std::string known;
    for (const ParamInfo& info : infos) known.append(known.empty() ? ""sv : ", "sv).append(info.name);
    return fail(err, owner, " has no parameter '"sv, name, "' (known: "sv, known, ")"sv);
  }
  const ParamInfo& info = infos[static_cast<size_t>(i)];

  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    return fail(err, owner, " parameter '"sv, name, "': '"sv, text, "' is not a number"sv);
  if (info.integer && v != std::floor(v))
    return fail(err, owner, " parameter '"sv, name, "': '"sv, text, "' is not an integer"sv);
  if (v < info.min || v > info.max) {
    return fail(err, owner, " parameter '"sv, name, "' = "sv, text, " is out of range ["sv,
                number(info.min), ", "sv, number(info.max), "]"sv,
                info.unit.empty() ? ""sv : " "sv, info.unit);
  }
  *index = static_cast<size_t>(i);
  *value = v;
  return 0;
}

}  // namespace tita::cc::detail
