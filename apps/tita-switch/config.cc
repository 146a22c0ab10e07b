#include "config.h"
#include "tita/wire/text.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>

namespace tita::tsw {

using nlohmann::json;

namespace {

// Reads one JSON object strictly: unknown keys are errors, types and ranges
// are checked, and every message starts with the path.
class Obj {
 public:
  Obj(const json& j, std::string path, std::string* err) : j_(j), path_(std::move(path)), err_(err) {
    if (!j_.is_object()) fail("", "must be an object");
  }

  // Call once with every key the object may have.
  bool only(std::initializer_list<const char*> keys) {
    if (!ok_) return false;
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (std::find_if(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }) == keys.end()) {
        std::string known;
        for (const char* k : keys) known += (known.empty() ? "" : ", ") + std::string(k);
        return fail(it.key(), "unknown setting (known: " + known + ")");
      }
    }
    return true;
  }
  bool has(const char* key) const { return ok_ && j_.contains(key); }
  const json& at(const char* key) const { return j_.at(key); }
  std::string path(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

  template <class T>
  void num(const char* key, T* out, double min, double max) {
    if (!has(key)) return;
    const json& v = j_.at(key);
    if (!v.is_number() || (std::is_integral_v<T> && !v.is_number_integer())) {
      fail(key, std::is_integral_v<T> ? "must be an integer" : "must be a number");
      return;
    }
    const double d = v.get<double>();
    if (d < min || d > max) {
      fail(key, "must be in [" + fmt(min) + ", " + fmt(max) + "], not " + v.dump());
      return;
    }
    *out = std::is_integral_v<T> ? static_cast<T>(v.get<int64_t>()) : static_cast<T>(d);
  }
  // A setting that may be left unset.
  template <class T>
  void num(const char* key, std::optional<T>* out, double min, double max) {
    T v{};
    if (!has(key)) return;
    num(key, &v, min, max);
    if (ok_) *out = v;
  }
  void flag(const char* key, bool* out) {
    if (!has(key)) return;
    if (!j_.at(key).is_boolean()) {
      fail(key, "must be true or false");
      return;
    }
    *out = j_.at(key).get<bool>();
  }
  void str(const char* key, std::string* out) {
    if (!has(key)) return;
    if (!j_.at(key).is_string()) {
      fail(key, "must be a string");
      return;
    }
    *out = j_.at(key).get<std::string>();
  }
  bool fail(const std::string& key, const std::string& what) {
    if (ok_) *err_ = (key.empty() ? path_ : path(key.c_str())) + ": " + what;
    ok_ = false;
    return false;
  }
  bool ok() const { return ok_; }

 private:
  static std::string fmt(double d) {
    json j = d;
    if (d == static_cast<double>(static_cast<int64_t>(d))) j = static_cast<int64_t>(d);
    return j.dump();
  }
  const json& j_;
  std::string path_;
  std::string* err_;
  bool ok_ = true;
};

int parse_addr(std::string_view s, uint8_t out[16], bool* v4) {
  const std::string str(s);
  in_addr a4;
  if (inet_pton(AF_INET, str.c_str(), &a4) == 1) {
    std::memset(out, 0, 16);
    out[10] = out[11] = 0xff;
    std::memcpy(out + 12, &a4, 4);
    *v4 = true;
    return 0;
  }
  *v4 = false;
  return inet_pton(AF_INET6, str.c_str(), out) == 1 ? 0 : -EINVAL;
}

// A port named by index or by DPDK name.
int port_ref(const json& v, const AppConfig& cfg, uint16_t* out) {
  if (v.is_number_unsigned() && v.get<uint64_t>() < cfg.port_names.size()) {
    *out = static_cast<uint16_t>(v.get<uint64_t>());
    return 0;
  }
  if (v.is_string()) {
    const auto it = std::find(cfg.port_names.begin(), cfg.port_names.end(), v.get<std::string>());
    if (it != cfg.port_names.end()) {
      *out = static_cast<uint16_t>(it - cfg.port_names.begin());
      return 0;
    }
  }
  return -EINVAL;
}

int parse_mask(const json& v, uint16_t* out) {
  if (v.is_number_unsigned() && v.get<uint64_t>() <= 0xffff) {
    *out = static_cast<uint16_t>(v.get<uint64_t>());
    return 0;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    unsigned long m = 0;
    const char* b = s.c_str();
    const int base = s.rfind("0x", 0) == 0 ? 16 : 10;
    if (base == 16) b += 2;
    const auto [end, ec] = std::from_chars(b, s.c_str() + s.size(), m, base);
    if (ec == std::errc() && end == s.c_str() + s.size() && m <= 0xffff) {
      *out = static_cast<uint16_t>(m);
      return 0;
    }
  }
  return -EINVAL;
}

// Why `v` holds text that is not UTF-8 (JSON's strings are; its serializer
// refuses anything else), or empty: nlohmann's own check, as dump() makes it.
std::string not_utf8(const json& v) {
  try {
    (void)v.dump();
    return {};
  } catch (const json::type_error& e) {
    const std::string what = e.what();
    return what.substr(what.find("] ") + 2);  // "invalid UTF-8 byte at index 41: 0xA1"
  }
}

}  // namespace

int parse_prefix(std::string_view text, uint8_t prefix[16], int* len, std::string* err) {
  if (text == "default") {
    std::memset(prefix, 0, 16);
    *len = 0;
    return 0;
  }
  const size_t slash = text.find('/');
  bool v4;
  if (parse_addr(text.substr(0, slash), prefix, &v4) != 0) {
    *err = "'" + std::string(text) + "' is not an IPv4 or IPv6 address or prefix";
    return -EINVAL;
  }
  const int max = v4 ? 32 : 128;
  int l = max;
  if (slash != std::string_view::npos) {
    const std::string_view n = text.substr(slash + 1);
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), l);
    if (ec != std::errc() || end != n.data() + n.size() || l < 0 || l > max) {
      *err = "'" + std::string(text) + "': prefix length must be 0.." + std::to_string(max);
      return -EINVAL;
    }
  }
  *len = v4 ? 96 + l : l;
  return 0;
}

int apply_set(json* doc, std::string_view assignment, std::string* err) {
  if (const std::string why = not_utf8(json(std::string(assignment))); !why.empty()) {
    *err = "--set: an assignment that is not UTF-8 text (" + why + ")";
    return -EINVAL;
  }
  const size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    *err = "--set '" + std::string(assignment) + "': expected path=value";
    return -EINVAL;
  }
  const std::string path(assignment.substr(0, eq));
  const std::string text(assignment.substr(eq + 1));
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  json* node = doc;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) {
      *err = "--set '" + path + "': empty path component";
      return -EINVAL;
    }
    size_t index = 0;
    const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), index);
    const bool is_index = ec == std::errc() && end == key.data() + key.size();
    json* child;
    if (is_index) {
      if (!node->is_array() || index >= node->size()) {
        *err = "--set '" + path + "': no element " + key;
        return -EINVAL;
      }
      child = &(*node)[index];
    } else {
      if (node->is_null()) *node = json::object();
      if (!node->is_object()) {
        *err = "--set '" + path + "': '" + key + "' is not inside an object";
        return -EINVAL;
      }
      child = &(*node)[key];
    }
    if (dot == std::string::npos) {
      *child = value;
      return 0;
    }
    node = child;
    start = dot + 1;
  }
}

namespace {

// A port's "ecn" object: RED thresholds, resolved against the port's rate to check them.
int read_ecn(const Obj& p, fabric::PortConfig* port, std::string* err) {
  fabric::PortConfig& pc = *port;
  Obj e(p.at("ecn"), p.path("ecn"), err);
  if (!e.only({"enabled", "kmin_bytes", "kmax_bytes", "pmax", "base_rate_gbps"})) return -EINVAL;
  e.flag("enabled", &pc.ecn);
  e.num("kmin_bytes", &pc.red.kmin_bytes, 0, 1e12);
  e.num("kmax_bytes", &pc.red.kmax_bytes, 0, 1e12);
  e.num("pmax", &pc.red.pmax, 0, 1);
  double base_gbps = 0;
  e.num("base_rate_gbps", &base_gbps, 0, 10'000);
  pc.red.base_rate_bps = static_cast<uint64_t>(base_gbps * 1e9 + 0.5);
  const fabric::RedParams red = pc.red.resolve(pc.rate_bps);
  if (e.ok() && red.kmin_bytes > red.kmax_bytes) e.fail("", "kmin_bytes must not exceed kmax_bytes");
  if (!e.ok()) return -EINVAL;
  return 0;
}

// A port's "faults" object: random loss, delay (some of it overtaken), RoCE
// corruption and a black-holed flow.
int read_faults(const Obj& p, fabric::PortConfig* port, std::string* err) {
  fabric::PortConfig& pc = *port;
  Obj f(p.at("faults"), p.path("faults"), err);
  if (!f.only({"drop_probability", "drop_all", "delay_us", "reorder_probability", "corrupt_probability",
               "black_hole"})) {
    return -EINVAL;
  }
  f.num("drop_probability", &pc.fault.drop_probability, 0, 1);
  f.flag("drop_all", &pc.fault.drop_all);
  double delay_us = 0;
  f.num("delay_us", &delay_us, 0, 10e6);
  pc.fault.delay_ns = static_cast<uint64_t>(delay_us * 1000 + 0.5);
  f.num("reorder_probability", &pc.fault.reorder_probability, 0, 1);
  if (f.ok() && pc.fault.reorder_probability > 0 && pc.fault.delay_ns == 0) {
    f.fail("reorder_probability", "needs delay_us: the reordered packets overtake the delayed ones");
  }
  f.num("corrupt_probability", &pc.fault.corrupt_probability, 0, 1);
  if (f.ok() && f.has("black_hole")) {
    Obj b(f.at("black_hole"), f.path("black_hole"), err);
    if (!b.only({"src", "dst", "sport", "dport", "proto"})) return -EINVAL;
    fabric::FlowMatch& m = pc.fault.black_hole_flow;
    pc.fault.black_hole = true;
    for (const char* key : {"src", "dst"}) {
      std::string a;
      b.str(key, &a);
      if (!b.ok() || a.empty()) continue;
      bool v4;
      uint8_t* dst = std::strcmp(key, "src") == 0 ? m.key.src : m.key.dst;
      if (parse_addr(a, dst, &v4) != 0) {
        b.fail(key, "'" + a + "' is not an IP address");
      } else {
        m.fields |= std::strcmp(key, "src") == 0 ? fabric::FlowMatch::kSrc : fabric::FlowMatch::kDst;
      }
    }
    if (b.has("sport")) m.fields |= fabric::FlowMatch::kSport;
    if (b.has("dport")) m.fields |= fabric::FlowMatch::kDport;
    if (b.has("proto")) m.fields |= fabric::FlowMatch::kProto;
    b.num("sport", &m.key.sport, 0, 65535);
    b.num("dport", &m.key.dport, 0, 65535);
    b.num("proto", &m.key.proto, 0, 255);
    if (!b.ok()) return -EINVAL;
  }
  if (!f.ok()) return -EINVAL;
  return 0;
}

// One entry of "ports".
int read_port(const json& j, const std::string& path, AppConfig* cfg, std::string* err) {
  Obj p(j, path, err);
  if (!p.only({"name", "rate_gbps", "shaped", "burst_bytes", "overhead_bytes", "buffer_bytes", "mac",
               "next_hop_mac", "ecn", "strict_priority", "faults"})) {
    return -EINVAL;
  }
  std::string name;
  p.str("name", &name);
  if (p.ok() && name.empty()) p.fail("name", "give the port's DPDK name (e.g. net_pcap0, 0000:3b:00.0)");
  if (p.ok() && std::find(cfg->port_names.begin(), cfg->port_names.end(), name) != cfg->port_names.end()) {
    p.fail("name", "port '" + name + "' is listed twice");
  }
  fabric::PortConfig pc;
  pc.shaped = p.has("rate_gbps");
  double gbps = 100;
  p.num("rate_gbps", &gbps, 0.001, 10'000);
  pc.rate_bps = static_cast<uint64_t>(gbps * 1e9 + 0.5);
  p.flag("shaped", &pc.shaped);
  p.num("burst_bytes", &pc.burst_bytes, 0, 1 << 30);
  p.num("overhead_bytes", &pc.overhead_bytes, 0, 64);
  p.num("buffer_bytes", &pc.buffer_bytes, 0, 1e12);
  p.flag("strict_priority", &pc.strict_priority);
  bool mac_given = false;
  std::string mac;
  p.str("mac", &mac);
  if (p.ok() && !mac.empty()) {
    if (!wire::parse_mac(mac, pc.mac)) p.fail("mac", "'" + mac + "' is not a MAC address (02:00:00:00:00:01)");
    mac_given = true;
  }
  p.str("next_hop_mac", &mac);
  if (p.ok() && p.has("next_hop_mac")) {
    if (!wire::parse_mac(mac, pc.next_hop_mac)) p.fail("next_hop_mac", "'" + mac + "' is not a MAC address");
    pc.rewrite_mac = true;
  }
  if (p.ok() && p.has("ecn") && read_ecn(p, &pc, err) != 0) return -EINVAL;
  if (p.ok() && p.has("faults") && read_faults(p, &pc, err) != 0) return -EINVAL;
  if (!p.ok()) return -EINVAL;
  cfg->port_names.push_back(name);
  cfg->mac_given.push_back(mac_given);
  cfg->sw.ports.push_back(pc);
  return 0;
}

// "buffer" and "pfc": the shared buffer and the lossless priorities.
int read_buffer_pfc(const Obj& root, fabric::SwitchConfig* swc, std::string* err) {
  fabric::SwitchConfig& sw = *swc;
  if (root.has("buffer")) {
    Obj b(root.at("buffer"), "buffer", err);
    if (!b.only({"total_bytes", "reserve_bytes", "headroom_bytes", "egress_alpha"})) return -EINVAL;
    b.num("total_bytes", &sw.mmu.buffer_bytes, 1, 1e12);
    b.num("reserve_bytes", &sw.mmu.reserve_bytes, 0, 1e9);
    b.num("headroom_bytes", &sw.mmu.headroom_bytes, 0, 1e9);
    b.num("egress_alpha", &sw.mmu.egress_alpha, 1e-6, 1e6);
    if (!b.ok()) return -EINVAL;
  }
  if (root.has("pfc")) {
    Obj p(root.at("pfc"), "pfc", err);
    if (!p.only({"enabled", "priorities", "dynamic", "alpha", "resume_offset_bytes", "xoff_bytes", "xon_bytes",
                 "quanta"})) {
      return -EINVAL;
    }
    bool enabled = false;
    p.flag("enabled", &enabled);
    uint8_t lossless = 1 << 3;
    if (p.has("priorities")) {
      const json& pr = p.at("priorities");
      lossless = 0;
      if (!pr.is_array()) return p.fail("priorities", "must be a list of priorities 0..7"), -EINVAL;
      for (const json& v : pr) {
        if (!v.is_number_unsigned() || v.get<uint64_t>() > 7) {
          return p.fail("priorities", "must be a list of priorities 0..7"), -EINVAL;
        }
        lossless = static_cast<uint8_t>(lossless | 1u << v.get<uint64_t>());
      }
    }
    p.flag("dynamic", &sw.mmu.pfc_dynamic);
    p.num("alpha", &sw.mmu.pfc_alpha, 1e-6, 1e6);
    p.num("resume_offset_bytes", &sw.mmu.resume_offset_bytes, 0, 1e9);
    if (p.has("xoff_bytes") && !p.has("dynamic")) sw.mmu.pfc_dynamic = false;
    p.num("xoff_bytes", &sw.mmu.xoff_bytes, 1, 1e12);
    p.num("xon_bytes", &sw.mmu.xon_bytes, 0, 1e12);
    p.num("quanta", &sw.pfc_quanta, 1, 65535);
    if (p.ok() && enabled && !sw.mmu.pfc_dynamic && sw.mmu.xon_bytes >= sw.mmu.xoff_bytes) {
      p.fail("xon_bytes", "must be below xoff_bytes");
    }
    if (!p.ok()) return -EINVAL;
    sw.mmu.lossless = enabled ? lossless : 0;
  }
  return 0;
}

// "ecmp": the hash seed and the field Hash Dodging varies.
int read_ecmp(const Obj& root, fabric::SwitchConfig* swc, std::string* err) {
  fabric::SwitchConfig& sw = *swc;
  if (root.has("ecmp")) {
    Obj e(root.at("ecmp"), "ecmp", err);
    if (!e.only({"seed", "dodge"})) return -EINVAL;
    e.num("seed", &sw.ecmp.seed, 0, UINT32_MAX);
    if (e.ok() && e.has("dodge")) {
      Obj d(e.at("dodge"), e.path("dodge"), err);
      if (!d.only({"field", "mask", "stride"})) return -EINVAL;
      std::string field = "none";
      d.str("field", &field);
      if (wire::parse_dodge_field(field, &sw.ecmp.dodge_field)) {
        sw.ecmp.dodge_mask = wire::dodge_default_mask(sw.ecmp.dodge_field);
      } else if (d.ok()) {
        d.fail("field", "'" + field + "' is not " + std::string(wire::kDodgeFieldNames));
      }
      if (d.ok() && d.has("mask") && parse_mask(d.at("mask"), &sw.ecmp.dodge_mask) != 0) {
        d.fail("mask", "must be a 16-bit mask (15 or \"0x000f\")");
      }
      if (d.ok() && sw.ecmp.dodge_field == fabric::DodgeField::kDscp && sw.ecmp.dodge_mask > 0x3f) {
        d.fail("mask", "DSCP has 6 bits: the mask must be within 0x3f");
      }
      if (d.ok() && sw.ecmp.dodge_field != fabric::DodgeField::kNone && sw.ecmp.dodge_mask == 0) {
        d.fail("mask", "must select at least one bit");
      }
      d.num("stride", &sw.ecmp.dodge_stride, 0, 65535);
      if (!d.ok()) return -EINVAL;
    }
    if (!e.ok()) return -EINVAL;
  }
  return 0;
}

// "priority": PCP trust and the DSCP to priority map.
int read_priority(const Obj& root, fabric::SwitchConfig* swc, std::string* err) {
  fabric::SwitchConfig& sw = *swc;
  if (root.has("priority")) {
    Obj p(root.at("priority"), "priority", err);
    if (!p.only({"trust_pcp", "dscp_map"})) return -EINVAL;
    p.flag("trust_pcp", &sw.classify.trust_pcp);
    if (p.ok() && p.has("dscp_map")) {
      Obj m(p.at("dscp_map"), p.path("dscp_map"), err);
      if (!m.ok()) return -EINVAL;
      for (auto it = p.at("dscp_map").begin(); it != p.at("dscp_map").end(); ++it) {
        int dscp = -1;
        const auto [end, ec] = std::from_chars(it.key().data(), it.key().data() + it.key().size(), dscp);
        if (ec != std::errc() || end != it.key().data() + it.key().size() || dscp < 0 || dscp > 63) {
          return m.fail(it.key(), "keys are DSCP values 0..63"), -EINVAL;
        }
        if (!it.value().is_number_unsigned() || it.value().get<uint64_t>() > 7) {
          return m.fail(it.key(), "must be a priority 0..7"), -EINVAL;
        }
        sw.classify.dscp_priority[dscp] = static_cast<uint8_t>(it.value().get<uint64_t>());
      }
    }
    if (!p.ok()) return -EINVAL;
  }
  return 0;
}

// "routes": after the ports, which they name.
int read_routes(Obj& root, AppConfig* cfg, std::string* err) {
  if (root.has("routes")) {
    const json& routes = root.at("routes");
    if (!routes.is_array()) return root.fail("routes", "must be a list"), -EINVAL;
    for (size_t i = 0; i < routes.size(); ++i) {
      const std::string path = "routes[" + std::to_string(i) + "]";
      Obj r(routes[i], path, err);
      if (!r.only({"prefix", "ports"})) return -EINVAL;
      Route route;
      r.str("prefix", &route.text);
      if (!r.ok()) return -EINVAL;
      std::string perr;
      if (!r.has("prefix") || parse_prefix(route.text, route.prefix, &route.len, &perr) != 0) {
        return r.fail("prefix", r.has("prefix") ? perr : "missing (\"10.0.1.0/24\", \"fd00::2/128\", \"default\")"),
               -EINVAL;
      }
      if (!r.has("ports") || !r.at("ports").is_array() || r.at("ports").empty()) {
        return r.fail("ports", "give one port or more (by index or name)"), -EINVAL;
      }
      for (const json& v : r.at("ports")) {
        uint16_t port;
        if (port_ref(v, *cfg, &port) != 0) return r.fail("ports", "no port " + v.dump()), -EINVAL;
        if (std::find(route.ports.begin(), route.ports.end(), port) != route.ports.end()) {
          return r.fail("ports", "port " + v.dump() + " is listed twice"), -EINVAL;
        }
        route.ports.push_back(port);
      }
      cfg->routes.push_back(std::move(route));
    }
  }
  return 0;
}

// The application's settings: statistics, queue sampling, run limits.
int read_app(const Obj& root, AppConfig* cfg, std::string* err) {
  if (root.has("stats")) {
    Obj s(root.at("stats"), "stats", err);
    if (!s.only({"interval_ms"})) return -EINVAL;
    s.num("interval_ms", &cfg->stats_interval_ms, 0, 3.6e6);
    if (!s.ok()) return -EINVAL;
  }
  if (root.has("qlen")) {
    Obj q(root.at("qlen"), "qlen", err);
    if (!q.only({"csv", "ports", "interval_us"})) return -EINVAL;
    q.str("csv", &cfg->qlen_csv);
    double us = 100;
    q.num("interval_us", &us, 1, 1e9);
    cfg->qlen_interval_ns = static_cast<uint64_t>(us * 1000);
    if (q.ok() && q.has("ports")) {
      if (!q.at("ports").is_array()) return q.fail("ports", "must be a list of ports"), -EINVAL;
      for (const json& v : q.at("ports")) {
        uint16_t port;
        if (port_ref(v, *cfg, &port) != 0) return q.fail("ports", "no port " + v.dump()), -EINVAL;
        cfg->qlen_ports.push_back(port);
      }
    }
    if (!q.ok()) return -EINVAL;
  }
  if (root.has("run")) {
    Obj r(root.at("run"), "run", err);
    if (!r.only({"max_seconds", "exit_when_idle_ms"})) return -EINVAL;
    r.num("max_seconds", &cfg->max_seconds, 0, 1e9);
    r.num("exit_when_idle_ms", &cfg->exit_when_idle_ms, 0, 1e9);
    if (!r.ok()) return -EINVAL;
  }
  return 0;
}

}  // namespace

int from_json(const json& doc, AppConfig* cfg, std::string* err) {
  // A file's strings were checked by the parser; what flags added was not.
  if (const std::string why = not_utf8(doc); !why.empty()) {
    *err = "config: text that is not UTF-8 (" + why + ")";
    return -EINVAL;
  }
  Obj root(doc, "config", err);
  if (!root.only({"ports", "routes", "buffer", "pfc", "int", "ecmp", "priority", "decrement_ttl", "seed",
                  "max_packets", "mbufs_per_port", "stats", "qlen", "run"})) {
    return -EINVAL;
  }
  fabric::SwitchConfig& sw = cfg->sw;

  // Ports.
  if (!root.has("ports") || !root.at("ports").is_array() || root.at("ports").empty()) {
    *err = "config: ports: give at least one port (\"ports\": [{\"name\": \"net_pcap0\"}] or --port NAME)";
    return -EINVAL;
  }
  const json& ports = root.at("ports");
  for (size_t i = 0; i < ports.size(); ++i) {
    if (read_port(ports[i], "ports[" + std::to_string(i) + "]", cfg, err) != 0) return -EINVAL;
  }

  if (read_buffer_pfc(root, &sw, err) != 0) return -EINVAL;
  if (root.has("int")) {
    Obj i(root.at("int"), "int", err);
    if (!i.only({"enabled"})) return -EINVAL;
    i.flag("enabled", &sw.int_enabled);
    if (!i.ok()) return -EINVAL;
  }
  if (read_ecmp(root, &sw, err) != 0) return -EINVAL;
  if (read_priority(root, &sw, err) != 0) return -EINVAL;
  root.flag("decrement_ttl", &sw.decrement_ttl);
  root.num("seed", &sw.seed, 0, 9.2e18);
  root.num("max_packets", &sw.max_packets, 1, 1 << 30);
  root.num("mbufs_per_port", &cfg->mbufs_per_port, 63, 1 << 24);
  if (!root.ok()) return -EINVAL;

  if (read_routes(root, cfg, err) != 0) return -EINVAL;

  return read_app(root, cfg, err);
}

nlohmann::json effective_json(const AppConfig& cfg) {
  using nlohmann::json;
  const fabric::SwitchConfig& sw = cfg.sw;
  json ports = json::array();
  for (size_t i = 0; i < sw.ports.size(); ++i) {
    const fabric::PortConfig& p = sw.ports[i];
    const fabric::RedParams red = p.red.resolve(p.rate_bps);  // bytes at the port
    ports.push_back({{"name", i < cfg.port_names.size() ? cfg.port_names[i] : std::to_string(i)},
                     {"rate_gbps", static_cast<double>(p.rate_bps) / 1e9},
                     {"shaped", p.shaped},
                     {"buffer_bytes", p.buffer_bytes},
                     {"strict_priority", p.strict_priority},
                     {"ecn", {{"enabled", p.ecn}, {"kmin_bytes", red.kmin_bytes}, {"kmax_bytes", red.kmax_bytes},
                              {"pmax", red.pmax}}}});
  }
  json lossless = json::array();
  for (int q = 0; q < fabric::kPriorities; ++q) {
    if (sw.mmu.lossless & (1u << q)) lossless.push_back(q);
  }
  json dscp = json::array();
  for (int d = 0; d < 64; ++d) dscp.push_back(sw.classify.dscp_priority[d]);
  json routes = json::array();
  for (const Route& r : cfg.routes) {
    json names = json::array();
    for (uint16_t i : r.ports) names.push_back(i < cfg.port_names.size() ? cfg.port_names[i] : std::to_string(i));
    routes.push_back({{"prefix", r.text}, {"ports", names}});
  }
  return {{"ports", ports},
          {"buffer", {{"total_bytes", sw.mmu.buffer_bytes}, {"reserve_bytes", sw.mmu.reserve_bytes},
                      {"headroom_bytes", sw.mmu.headroom_bytes}}},
          {"pfc", {{"lossless_priorities", lossless}, {"dynamic", sw.mmu.pfc_dynamic}, {"alpha", sw.mmu.pfc_alpha},
                   {"xoff_bytes", sw.mmu.xoff_bytes}, {"xon_bytes", sw.mmu.xon_bytes}}},
          {"classify", {{"trust_pcp", sw.classify.trust_pcp}, {"dscp_priority", dscp}}},
          {"int", {{"enabled", sw.int_enabled}}},
          {"routes", routes}};
}

}  // namespace tita::tsw
