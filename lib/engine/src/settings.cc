// The engine's settings table (settings.h), and the one reading of their text.
#include "tita/engine/settings.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tita/wire/dodge.h"

namespace tita::engine {
namespace {

// The field a member-pointer path names: <&EngineConfig::path, &PathConfig::timeouts>.
template <auto Outer, auto... Inner>
constexpr auto& field_of(auto& c) {
  if constexpr (sizeof...(Inner) == 0) {
    return c.*Outer;
  } else {
    return field_of<Inner...>(c.*Outer);
  }
}
template <auto... Path>
uint64_t get_field(const EngineConfig& c) {
  return static_cast<uint64_t>(field_of<Path...>(c));
}
template <auto... Path>
void set_field(EngineConfig* c, uint64_t v) {
  auto& f = field_of<Path...>(*c);
  f = static_cast<std::remove_reference_t<decltype(f)>>(v);
}
// A row with the field it reads and writes.
template <auto... Path>
constexpr Setting at(Setting s) {
  s.get = get_field<Path...>;
  s.set = set_field<Path...>;
  return s;
}

bool parse_dodge(std::string_view name, uint64_t* v) {
  wire::DodgeField f;
  if (!wire::parse_dodge_field(name, &f)) return false;
  *v = static_cast<uint64_t>(f);
  return true;
}
bool parse_policy(std::string_view name, uint64_t* v) {
  SprayPolicy p;
  if (!parse_spray_policy(name, &p)) return false;
  *v = static_cast<uint64_t>(p);
  return true;
}

using K = SettingKind;
using C = EngineConfig;
constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();
constexpr uint64_t kUs = 1'000;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kGbps = 1'000'000'000;

// The order is the order front ends list them in: the line and its pacing,
// acknowledgements and notification, telemetry, sizes, ARP, path control,
// spraying.
// constexpr: read during other static initialisation (ns-3 registers its TypeIds then).
constexpr Setting kSettings[] = {
    at<&C::line_rate_bps>({.name = "rate_gbps", .flag = "rate", .verbs = true, .kind = K::kRate,
        .unit = "Gb/s", .min = kGbps / 1000, .max = 3200 * kGbps,
        .help = "the NIC's line rate, which congestion control starts from",
        .verbs_default = 0, .unset = "the port's speed"}),
    at<&C::base_rtt_ns>({.name = "base_rtt_us", .flag = "base-rtt-us", .attribute = "BaseRtt", .verbs = true,
        .kind = K::kTime, .unit = "us", .min = 1, .max = kSecond,
        .help = "unloaded RTT congestion control starts from (a slow peer, such as rxe in a VM, needs more; "
                "ns-3's network helper sets the network's largest, as the HPCC simulator does)"}),
    at<&C::pace_line_rate>({.name = "pace", .flag = "pace", .verbs = true, .kind = K::kBool,
        .help = "pace at the line rate even when uncongested, for ports that take frames faster than a wire "
                "(virtual ports)"}),
    at<&C::pacing_slack_ns>({.name = "pacing_slack_us", .flag = "pacing-slack-us", .verbs = true,
        .kind = K::kTime, .unit = "us", .min = 0, .max = kSecond,
        .help = "with pace: sending time a late poll may catch up in one burst (a process that sleeps, or a "
                "core shared with busy threads, needs a few hundred)"}),
    at<&C::ack_req_every>({.name = "ack_req_every", .flag = "ack-every", .attribute = "AckReqEvery",
        .min = 1, .max = 1024,
        .help = "AckReq on every Nth data packet (coalesced ACKs; INT algorithms always ask on every packet; "
                "1: an ACK per packet, as the HPCC simulator sends)",
        .ns3_default = 1}),
    at<&C::np, &cc::NpParams::ack_echo>({.name = "congestion_notification", .attribute = "CongestionNotification",
        .kind = K::kChoice,
        .help = "how a receiver tells senders of CE marks: cnp (CNP packets, at most one per QP per CNP "
                "interval) or ack (the ACK of each packet echoes its mark and acts as a CNP at the sender: the "
                "HPCC simulator's)",
        .choices = "cnp ack"}),
    at<&C::np, &cc::NpParams::cnp_interval_ns>({.name = "cnp_interval_us", .attribute = "CnpInterval",
        .kind = K::kTime, .unit = "us", .min = 0, .max = kSecond,
        .help = "minimum time between two CNPs for one QP (0: a CNP for every CE-marked packet)"}),
    at<&C::telemetry>({.name = "telemetry", .attribute = "Telemetry", .kind = K::kBool,
        .help = "telemetry trailers: COLLECT on data (INT, timestamps), ECHO on ACKs"}),
    at<&C::compute_icrc>({.name = "compute_icrc", .attribute = "ComputeIcrc", .kind = K::kBool,
        .help = "compute the ICRC of every frame sent (off: sent as 0, for simulation speed)",
        .ns3_default = 0}),
    at<&C::verify_icrc>({.name = "verify_icrc", .attribute = "VerifyIcrc", .kind = K::kBool,
        .help = "check the ICRC of every frame received", .ns3_default = 0}),
    at<&C::max_qps>({.name = "max_qps", .attribute = "MaxQps", .verbs = true, .min = 1, .max = 1u << 24,
        .help = "QPs the engine holds", .ns3_default = 4096, .verbs_default = 4096}),
    at<&C::control_ring>({.name = "control_ring", .attribute = "ControlRing", .min = 1, .max = kU32,
        .help = "ACK/NAK/CNP frames the engine keeps while the NIC has no room", .ns3_default = 512}),
    at<&C::ooo_slots>({.name = "ooo_slots", .attribute = "OooSlots", .min = 0, .max = kU32,
        .help = "selective repeat: out-of-order frames kept, engine-wide", .ns3_default = 1024}),
    at<&C::sr_window>({.name = "sr_window", .attribute = "SrWindow", .min = 64, .max = 1024,
        .help = "selective repeat: PSNs in flight per QP (a power of two; others are rounded up)"}),
    at<&C::timer_slot_ns>({.name = "timer_slot_ns", .attribute = "TimerSlotNs", .unit = "ns", .min = 1, .max = kU32,
        .help = "timing wheel slot (deadlines stay exact; the slot sets the cost)", .ns3_default = 2048}),
    at<&C::timer_slots>({.name = "timer_slots", .attribute = "TimerSlots", .min = 64, .max = kU32,
        .help = "timing wheel slots (the horizon is slots x slot)", .ns3_default = 4096}),
    at<&C::arp_retry_ns>({.name = "arp_retry_ms", .verbs = true, .kind = K::kTime, .unit = "ms", .min = kMs,
        .max = 60 * kSecond, .help = "between ARP requests for an address without a MAC"}),
    at<&C::arp_tries>({.name = "arp_tries", .verbs = true, .min = 1, .max = 100,
        .help = "ARP requests before a peer is unreachable (its QPs' work fails)"}),
    at<&C::path, &PathConfig::field>({.name = "dodge_field", .flag = "dodge", .attribute = "DodgeField",
        .kind = K::kChoice,
        .help = "Hash Dodging: the header field a QP changes to leave a failed path: none (path control off), dscp "
                "or udp_sport",
        .choices = "none dscp udp_sport udp-sport", .parse_choice = parse_dodge}),
    at<&C::path, &PathConfig::mask>({.name = "dodge_mask", .attribute = "DodgeMask", .min = 0, .max = 0xffff,
        .help = "bits of the dodge field (0: 0x000f of the UDP source port, 0x07 of the DSCP)"}),
    at<&C::path, &PathConfig::timeouts>({.name = "repath_timeouts", .attribute = "RepathTimeouts", .min = 0,
        .max = kU32, .help = "move the path after this many consecutive retransmission timeouts (0: never)"}),
    at<&C::path, &PathConfig::stall_rtts>({.name = "stall_rtts", .attribute = "StallRtts", .min = 0, .max = kU32,
        .help = "move the path when nothing was delivered for this many RTTs (0: never)"}),
    at<&C::path, &PathConfig::stall_min_ns>({.name = "stall_min_us", .attribute = "StallMin", .kind = K::kTime,
        .unit = "us", .min = 0, .max = kSecond, .help = "the stall window is at least this long"}),
    at<&C::path, &PathConfig::lossy_rounds>({.name = "lossy_rounds", .attribute = "LossyRounds", .min = 0,
        .max = kU32, .help = "move the path after this many consecutive rounds losing >= 0.5% (0: never)"}),
    at<&C::path, &PathConfig::collapse_permille>({.name = "collapse_permille", .attribute = "CollapsePermille",
        .min = 0, .max = 1000,
        .help = "move the path when goodput falls below this fraction (per mille) of what congestion control "
                "allowed and the QP sent (0: never)"}),
    at<&C::spray, &SprayConfig::paths>({.name = "spray_paths", .flag = "spray", .attribute = "SprayPaths",
        .min = 0, .max = 16,
        .help = "multipath: spray each QP's SEND/WRITE packets over this many entropy values of its UDP source "
                "port (2..16; 0: off; needs selective repeat)"}),
    at<&C::spray, &SprayConfig::policy>({.name = "spray_policy", .flag = "spray-policy", .attribute = "SprayPolicy",
        .kind = K::kChoice, .help = "multipath: how a packet's value is chosen: round_robin, reps or offset",
        .choices = "round_robin reps offset", .parse_choice = parse_policy}),
    at<&C::spray, &SprayConfig::flowlet_ns>({.name = "spray_flowlet_us", .flag = "spray-flowlet-us",
        .attribute = "SprayFlowlet", .kind = K::kTime, .unit = "us", .min = 0, .max = kSecond,
        .help = "multipath: keep a QP's value until a gap this long in its sending (flowlets; 0: every packet)"}),
};

int fail(std::string* why, std::string msg) {
  *why = std::move(msg);
  return -EINVAL;
}

// Shortest text that reads back as v, without an exponent ("1000000", "0.001").
std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  return std::string(buf, r.ptr);
}

bool choice_value(const Setting& s, std::string_view name, uint64_t* v) {
  if (s.parse_choice != nullptr) return s.parse_choice(name, v);
  const std::vector<std::string_view> names = s.choice_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) {
      *v = i;
      return true;
    }
  }
  return false;
}

}  // namespace

std::span<const Setting> settings() { return kSettings; }

const Setting* find_setting(std::string_view name) {
  for (const Setting& s : kSettings) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

uint64_t Setting::default_for(FrontEnd f) const {
  if (f == FrontEnd::kNs3 && ns3_default) return *ns3_default;
  if (f == FrontEnd::kVerbs && verbs_default) return *verbs_default;
  return get(EngineConfig{});
}

EngineConfig defaults(FrontEnd f) {
  EngineConfig c;
  for (const Setting& s : kSettings) s.set(&c, s.default_for(f));
  return c;
}

double Setting::scale() const {
  if (kind == SettingKind::kRate) return static_cast<double>(kGbps);
  if (kind == SettingKind::kTime) return unit == "ms" ? static_cast<double>(kMs) : unit == "us" ? kUs : 1;
  return 1;
}

bool parse_bool(std::string_view s, bool* out) {
  if (s == "1" || s == "true" || s == "yes" || s == "on") {
    *out = true;
    return true;
  }
  if (s == "0" || s == "false" || s == "no" || s == "off") {
    *out = false;
    return true;
  }
  return false;
}

int Setting::parse(std::string_view text, uint64_t* value, std::string* why) const {
  if (kind == SettingKind::kBool) {
    bool b = false;
    if (!parse_bool(text, &b)) return fail(why, "must be " + range_text());
    *value = b ? 1 : 0;
    return 0;
  }
  if (kind == SettingKind::kChoice) {
    if (!choice_value(*this, text, value)) return fail(why, "must be " + range_text());
    return 0;
  }
  double x = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return fail(why, "must be " + range_text());
  }
  return from_number(x, value, why);
}

int Setting::from_number(double x, uint64_t* value, std::string* why) const {
  if (kind == SettingKind::kBool || kind == SettingKind::kChoice) {
    if (x != std::floor(x) || x < 0 || (kind == SettingKind::kBool && x > 1) ||
        (kind == SettingKind::kChoice && choice_name(static_cast<uint64_t>(x)).empty())) {
      return fail(why, "must be " + range_text());
    }
    *value = static_cast<uint64_t>(x);
    return 0;
  }
  if (!std::isfinite(x)) return fail(why, "must be " + range_text());
  if (kind == SettingKind::kCount && x != std::floor(x)) return fail(why, "must be a whole number, " + range_text());
  // Rounded, not truncated: 0.3 Gb/s is 300000000 b/s, though 0.3 x 1e9 is a hair less.
  const double v = std::round(x * scale());
  if (!(v >= static_cast<double>(min) && v <= static_cast<double>(max))) return fail(why, "must be " + range_text());
  *value = static_cast<uint64_t>(v);
  return 0;
}

std::vector<std::string_view> Setting::choice_names() const {
  std::vector<std::string_view> out;
  for (std::string_view list = choices; !list.empty();) {
    const size_t sp = list.find(' ');
    out.push_back(list.substr(0, sp));
    if (sp == std::string_view::npos) break;
    list.remove_prefix(sp + 1);
  }
  return out;
}

std::string Setting::choice_name(uint64_t value) const {
  for (std::string_view n : choice_names()) {
    uint64_t v = 0;
    if (choice_value(*this, n, &v) && v == value) return std::string(n);
  }
  return {};
}

std::string Setting::format(uint64_t value) const {
  switch (kind) {
    case SettingKind::kBool:
      return value != 0 ? "true" : "false";
    case SettingKind::kChoice:
      return choice_name(value);
    case SettingKind::kCount:
      return std::to_string(value);
    default:
      return number(static_cast<double>(value) / scale());
  }
}

std::string Setting::default_text(FrontEnd f) const {
  const uint64_t v = default_for(f);
  const bool numeric = kind != SettingKind::kBool && kind != SettingKind::kChoice;
  if (numeric && (v < min || v > max) && !unset.empty()) return std::string(unset);
  return format(v) + (unit.empty() ? "" : " " + std::string(unit));
}

std::string Setting::range_text() const {
  if (kind == SettingKind::kBool) return "true or false";
  if (kind == SettingKind::kChoice) {
    const std::vector<std::string_view> names = choice_names();
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
      out += i == 0 ? "" : i + 1 == names.size() ? " or " : ", ";
      out += names[i];
    }
    return out;
  }
  return format(min) + " to " + format(max) + (unit.empty() ? "" : " (" + std::string(unit) + ")");
}

std::string env_variable(std::string_view name) {
  std::string env = "TITA_";
  for (char ch : name) env += static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
  return env;
}

std::string settings_markdown() {
  std::string out =
      "| setting | default | range | tita-perf | verbs | ns-3 NIC attribute | meaning |\n"
      "|---|---|---|---|---|---|---|\n";
  const auto code = [](std::string_view s) { return s.empty() ? std::string("-") : "`" + std::string(s) + "`"; };
  for (const Setting& s : kSettings) {
    std::string def = s.default_text(FrontEnd::kEngine);
    if (s.ns3_default) def += "; ns-3: " + s.default_text(FrontEnd::kNs3);
    if (s.verbs_default) def += "; verbs: " + s.default_text(FrontEnd::kVerbs);
    const std::string flag = s.flag.empty() ? "" : "--" + std::string(s.flag);
    out += "| `" + std::string(s.name) + "` | " + def + " | " + s.range_text() + " | " + code(flag) + " | " +
           code(s.verbs ? env_variable(s.name) : "") + " | " + code(s.attribute) + " | " + std::string(s.help) + " |\n";
  }
  return out;
}

}  // namespace tita::engine
