// The engine's settings, declared once: each is one row (its name in every
// front end, kind, unit, range, help and the EngineConfig field it sets), and
// tita-perf's flags, the verbs layer's keys and TITA_* variables, the ns-3
// NIC's attributes and doc/settings.md are all made from the rows, as an ns-3
// TypeId attribute carries name, help, default and checker in one place.
//
//   for (const Setting& s : settings())
//     if (!s.flag.empty()) add a --flag that calls s.from_number(x, &v, &why), s.set(&cfg, v)
//
// Values travel as uint64_t in the field's own unit (ns, b/s, a count, 0/1, a
// choice's number); text is in the row's unit ("us", "Gb/s") and is read and
// range-checked here, once, for every front end that reads text.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tita/engine/types.h"

namespace tita::engine {

enum class SettingKind : uint8_t {
  kBool,    // 0 or 1; text: true/false, 1/0, yes/no, on/off
  kCount,   // a whole number (in `unit` where it has one)
  kTime,    // nanoseconds in EngineConfig; text and flags in `unit` (us, ms)
  kRate,    // bits per second in EngineConfig; text and flags in Gb/s
  kChoice,  // one of `choices`, stored as its number
};

// Who reads a setting: each front end may start from its own default.
enum class FrontEnd : uint8_t {
  kEngine,  // EngineConfig{}: the library's own defaults
  kPerf,    // tita-perf's flags
  kVerbs,   // the verbs layer (tita-run flags, TITA_* variables, config keys)
  kNs3,     // the ns-3 NIC's attributes
};

struct Setting {
  // snake_case with the text unit last ("base_rtt_us"): the doc's name, and
  // the verbs layer's key (environment variable TITA_<NAME>) where `verbs`.
  std::string_view name;
  std::string_view flag;       // tita-perf's --flag; empty: none
  std::string_view attribute;  // the ns-3 NIC's attribute; empty: none
  bool verbs = false;          // a verbs-layer setting
  SettingKind kind = SettingKind::kCount;
  std::string_view unit;  // of text values: "us", "ms", "ns", "Gb/s", "" (plain)
  uint64_t min = 0;       // the range, in the field's unit (ns, b/s, ...)
  uint64_t max = 0;
  std::string_view help;
  // kChoice: the names a value may be given by, space-separated (aliases
  // after the first name of a number), and the parser that reads one, the
  // one its owner already has; none: a name's number is its position.
  std::string_view choices;
  bool (*parse_choice)(std::string_view name, uint64_t* value) = nullptr;
  // The field: read, and write a value already checked.
  uint64_t (*get)(const EngineConfig& c) = nullptr;
  void (*set)(EngineConfig* c, uint64_t value) = nullptr;
  // Front ends that start elsewhere than EngineConfig{}, and why (in `help`
  // or the front end's docs): the ns-3 model for simulation speed and the
  // HPCC simulator's settings, the verbs layer for a device's memory.
  std::optional<uint64_t> ns3_default;
  std::optional<uint64_t> verbs_default;
  // What a front end's default outside the range means ("the port's speed":
  // 0, until set, for the verbs device's line rate).
  std::string_view unset;

  uint64_t default_for(FrontEnd f) const;
  // How many field units one text unit is (1000 for "us", 1e9 for "Gb/s").
  double scale() const;

  // Text in the setting's unit, checked: 0, or -EINVAL and *why, what it must
  // be ("must be 0 to 1000000 (us)"); the caller names the setting.
  int parse(std::string_view text, uint64_t* value, std::string* why) const;
  // A number in the text unit (a flag's double, a JSON number): the same checks.
  int from_number(double x, uint64_t* value, std::string* why) const;
  // A value in the text unit: "10", "0.001", "true", "udp_sport".
  std::string format(uint64_t value) const;
  // A front end's default as its docs give it: "10 us", "false", "the port's speed".
  std::string default_text(FrontEnd f) const;
  // "0 to 1000000 (us)", "true or false", "none, dscp or udp_sport".
  std::string range_text() const;
  // kChoice: the first name of a value ("" for none), and every name in order.
  std::string choice_name(uint64_t value) const;
  std::vector<std::string_view> choice_names() const;
};

// Every engine setting, in the order front ends list them.
std::span<const Setting> settings();
// The setting of that name (Setting::name), or nullptr.
const Setting* find_setting(std::string_view name);
// EngineConfig as a front end starts from it.
EngineConfig defaults(FrontEnd f);
// The verbs layer's environment variable of a setting: TITA_ and the name in
// capitals (TITA_BASE_RTT_US).
std::string env_variable(std::string_view name);
// doc/settings.md's table (tests/engine/settings_test.cc checks the page).
std::string settings_markdown();

// The one reading of a boolean setting's text, for every settings reader:
// true/false, 1/0, yes/no, on/off.
bool parse_bool(std::string_view text, bool* out);

}  // namespace tita::engine
