// The verbs layer's settings (config.h): its own and the engine's that it
// offers, read from a JSON file and TITA_* variables and checked.
#include "tita/verbs/config.h"
#include "tita/wire/text.h"

#include <arpa/inet.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tita/cc/cc.h"

namespace tita::verbs {

namespace {

int fail(std::string* err, std::string msg) {
  *err = std::move(msg);
  return -EINVAL;
}

using wire::parse_ipv4;
using wire::parse_mac;

template <class T>
bool parse_uint(std::string_view s, T* out, uint64_t min, uint64_t max) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < min || v > max) return false;
  *out = static_cast<T>(v);
  return true;
}

using engine::parse_bool;

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep || (sep == ' ' && (ch == '\t' || ch == '\n'))) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

int add_neighbour(Config* c, std::string_view ip, std::string_view mac, const std::string& what, std::string* err) {
  uint32_t a;
  std::array<uint8_t, 6> m{};
  if (!parse_ipv4(ip, &a)) return fail(err, what + ": '" + std::string(ip) + "' is not an IPv4 address");
  if (!parse_mac(mac, m.data()) || (m[0] & 1) || m == std::array<uint8_t, 6>{}) {
    return fail(err, what + ": '" + std::string(mac) + "' is not a unicast MAC address (02:00:00:00:00:02)");
  }
  c->neighbours.emplace_back(a, m);
  return 0;
}

// The verbs layer's own settings; the engine's follow them (settings()).
struct OwnSetting {
  std::string_view key;
  std::string_view type;
  std::string_view help;
};
constexpr OwnSetting kOwnSettings[] = {
    {"device", "NAME", "device name in ibv_devices (default tita0)"},
    {"vdev", "DEVARGS", "DPDK vdev to create, as EAL's --vdev takes it (net_vhost0,iface=/tmp/s)"},
    {"port", "PORT", "existing DPDK port instead: PCI address, name or number"},
    {"ip", "IPv4", "IPv4 address of the device (GID index 0 is ::ffff:ip, RoCE v2)"},
    {"mac", "MAC", "source MAC (default: the port's)"},
    {"eal", "ARGS", "extra EAL arguments, space separated (not -l, -c or --lcores: the device sets its lcores)"},
    {"hugepages", "BOOL", "use hugepages (default false: EAL --no-huge)"},
    {"memory_mb", "MiB", "EAL memory with --no-huge (default 512)"},
    {"cc_plugin", "PATH", "shared objects with congestion-control plug-ins to load, space separated"},
    {"cc", "NAME", "congestion control of every QP: none, dcqcn, timely, hpcc, swift, powertcp, nscc, tita, or a plug-in's"},
    {"cc_params", "NAME=VALUE", "its parameters, name=value, space separated"},
    {"recovery", "gbn|sr", "loss recovery: gbn (go-back-N, as RoCE NICs) or sr (selective repeat)"},
    {"progress", "busy|adaptive", "busy (the device thread always polls) or adaptive (it sleeps when idle)"},
    {"engines", "COUNT", "engines on the port (default 1), each with its own queue pair, lock and thread; QPs go to them in turn"},
    {"link_wait_ms", "ms", "how long opening the device waits for the link (default 30000)"},
    {"neighbours", "IP=MAC", "static ARP entries: ip=mac,ip=mac (file: {\"ip\": \"mac\"})"},
    {"log", "none|error|info|debug", "on stderr (default error)"},
};

// An engine setting the verbs layer offers, by its key.
const engine::Setting* engine_setting(std::string_view key) {
  const engine::Setting* s = engine::find_setting(key);
  return s != nullptr && s->verbs ? s : nullptr;
}

}  // namespace

const std::vector<Setting>& settings() {
  static const std::vector<Setting> kSettings = [] {
    std::vector<Setting> out;
    for (const OwnSetting& s : kOwnSettings) {
      out.push_back({std::string(s.key), engine::env_variable(s.key), std::string(s.help), std::string(s.type)});
    }
    for (const engine::Setting& s : engine::settings()) {
      if (!s.verbs) continue;
      const std::string type = s.kind == engine::SettingKind::kBool     ? "BOOL"
                               : s.kind == engine::SettingKind::kChoice ? s.range_text()
                               : !s.unit.empty()                        ? std::string(s.unit)
                                                                        : "COUNT";
      out.push_back({std::string(s.name), engine::env_variable(s.name),
                     std::string(s.help) + " (default " + s.default_text(engine::FrontEnd::kVerbs) + ")", type});
    }
    return out;
  }();
  return kSettings;
}

int set(Config* c, std::string_view key, std::string_view v, std::string* err) {
  const std::string what(key);
  auto bad = [&](const std::string& why) { return fail(err, what + ": '" + std::string(v) + "' " + why); };
  if (key == "device") {
    if (v.empty() || v.size() >= 64) return bad("must be 1 to 63 characters");
    c->device = v;
  } else if (key == "vdev") {
    c->vdev = v;
  } else if (key == "port") {
    c->port = v;
  } else if (key == "ip") {
    if (!parse_ipv4(v, &c->ipv4)) return bad("is not an IPv4 address");
    c->ip = v;
  } else if (key == "mac") {
    if (!parse_mac(v, c->mac_bytes) || (c->mac_bytes[0] & 1)) return bad("is not a unicast MAC address");
    c->mac = v;
  } else if (key == "eal") {
    // The device sets these itself (device.cc): given again, EAL refuses the
    // pair and prints its whole usage from inside the application.
    static constexpr std::string_view kOwn[] = {"-l", "-c", "--lcores"};
    for (const std::string& w : split(v, ' ')) {
      const std::string_view name = std::string_view(w).substr(0, w.find('='));
      for (std::string_view own : kOwn) {
        if (name == own || (own.size() == 2 && name.size() > 2 && name.substr(0, 2) == own)) {
          return bad("sets the lcores (" + std::string(own) + "), which the device sets itself: its thread runs "
                     "on the CPUs the program may use (limit them with taskset)");
        }
      }
    }
    c->eal = v;
  } else if (key == "hugepages") {
    if (!parse_bool(v, &c->hugepages)) return bad("must be true or false");
  } else if (key == "memory_mb") {
    if (!parse_uint(v, &c->memory_mb, 64, 1 << 20)) return bad("must be 64 to 1048576");
  } else if (key == "cc_plugin") {
    for (const std::string& path : split(v, ' ')) {
      std::string why;
      if (cc::load_plugin(path, &why) != 0) return fail(err, what + ": " + why);
      c->cc_plugins.push_back(path);
    }
  } else if (key == "cc") {
    if (v.empty()) return bad("must name an algorithm");
    c->cc = v;  // checked by check(), once every plug-in is loaded
  } else if (key == "cc_params") {
    c->cc_params = split(v, ' ');  // checked against the algorithm by check()
  } else if (key == "recovery") {
    if (v == "gbn") {
      c->selective_repeat = false;
    } else if (v == "sr") {
      c->selective_repeat = true;
    } else {
      return bad("must be gbn or sr");
    }
  } else if (key == "progress") {
    if (v == "busy") {
      c->progress = Progress::kBusy;
    } else if (v == "adaptive") {
      c->progress = Progress::kAdaptive;
    } else {
      return bad("must be busy or adaptive");
    }
  } else if (const engine::Setting* s = engine_setting(key); s != nullptr) {
    uint64_t x = 0;
    std::string why;
    if (s->parse(v, &x, &why) != 0) return bad(why);
    s->set(&c->engine, x);
  } else if (key == "engines") {
    if (!parse_uint(v, &c->engines, 1, 16)) return bad("must be 1 to 16");
  } else if (key == "link_wait_ms") {
    if (!parse_uint(v, &c->link_wait_ms, 0, 3'600'000)) return bad("must be 0 to 3600000");
  } else if (key == "neighbours") {
    c->neighbours.clear();
    for (const std::string& e : split(v, ',')) {
      const auto eq = e.find('=');
      if (eq == std::string::npos) return fail(err, what + ": '" + e + "' is not ip=mac");
      if (int rc = add_neighbour(c, std::string_view(e).substr(0, eq), std::string_view(e).substr(eq + 1), what, err);
          rc != 0) {
        return rc;
      }
    }
  } else if (key == "log") {
    if (v == "none") {
      c->log = Config::Log::kNone;
    } else if (v == "error") {
      c->log = Config::Log::kError;
    } else if (v == "info") {
      c->log = Config::Log::kInfo;
    } else if (v == "debug") {
      c->log = Config::Log::kDebug;
    } else {
      return bad("must be none, error, info or debug");
    }
  } else {
    std::string known;
    for (const Setting& s : settings()) known += (known.empty() ? "" : ", ") + std::string(s.key);
    return fail(err, "unknown setting '" + what + "' (known: " + known + ")");
  }
  return 0;
}

int read_file(Config* c, const std::string& path, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = path + ": " + std::strerror(errno);
    return -ENOENT;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return read_json(c, text.str(), path, err);
}

int read_json(Config* c, std::string_view text, const std::string& path, std::string* err) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for a number too large
    return fail(err, path + ": not JSON: " + e.what());
  }
  if (!j.is_object()) return fail(err, path + ": must be a JSON object of settings");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    std::string text;
    if (key == "neighbours" && v.is_object()) {
      c->neighbours.clear();
      for (auto n = v.begin(); n != v.end(); ++n) {
        if (!n.value().is_string()) return fail(err, path + ": neighbours." + n.key() + ": must be a MAC string");
        if (int rc = add_neighbour(c, n.key(), n.value().get<std::string>(), path + ": neighbours", err); rc != 0) {
          return rc;
        }
      }
      continue;
    }
    if (key == "cc_params" && v.is_array()) {
      for (const auto& p : v) {
        if (!p.is_string()) return fail(err, path + ": cc_params: every entry must be a \"name=value\" string");
        text += (text.empty() ? "" : " ") + p.get<std::string>();
      }
    } else if (v.is_string()) {
      text = v.get<std::string>();
    } else if (v.is_boolean()) {
      text = v.get<bool>() ? "true" : "false";
    } else if (v.is_number_integer()) {
      text = std::to_string(v.get<int64_t>());
    } else if (v.is_number()) {
      std::ostringstream os;
      os << v.get<double>();
      text = os.str();
    } else {
      return fail(err, path + ": " + key + ": must be a string, number or boolean");
    }
    if (int rc = set(c, key, text, err); rc != 0) {
      *err = path + ": " + *err;
      return rc;
    }
  }
  return 0;
}

int check(const Config& c, std::string* err) {
  if (c.ip.empty()) return fail(err, "no address: set ip (TITA_IP, tita-run --ip)");
  if (c.vdev.empty() == c.port.empty()) {
    return fail(err, c.vdev.empty() ? "no port: set vdev or port (TITA_VDEV / TITA_PORT, tita-run --vdev / --port)"
                                    : "vdev and port are both set: name one DPDK port");
  }
  // The algorithm's parameters, by the congestion control's own table.
  cc::Params params;
  if (int rc = cc::Params::create(c.cc, {}, &params, err); rc != 0) {
    *err = "cc: " + *err;
    return rc;
  }
  for (const std::string& a : c.cc_params) {
    if (int rc = params.set(a, err); rc != 0) {
      *err = "cc_params: " + *err;
      return rc;
    }
  }
  return 0;
}

int load(Config* c, std::string* err) {
  if (const char* path = std::getenv("TITA_CONFIG"); path != nullptr && *path != '\0') {
    if (int rc = read_file(c, path, err); rc != 0) return rc;
  }
  for (const Setting& s : settings()) {
    const std::string env(s.env);
    if (const char* v = std::getenv(env.c_str()); v != nullptr) {
      if (int rc = set(c, s.key, v, err); rc != 0) {
        *err = env + ": " + *err;
        return rc;
      }
    }
  }
  return check(*c, err);
}

uint64_t eui64(const uint8_t mac[6]) {
  return uint64_t{static_cast<uint8_t>(mac[0] ^ 2)} << 56 | uint64_t{mac[1]} << 48 | uint64_t{mac[2]} << 40 |
         uint64_t{0xff} << 32 | uint64_t{0xfe} << 24 | uint64_t{mac[3]} << 16 | uint64_t{mac[4]} << 8 | mac[5];
}

bool settled_node_guid(const Config& c, uint64_t* guid) {
  if (!c.mac.empty()) {
    *guid = eui64(c.mac_bytes);
    return true;
  }
  if (c.vdev.empty()) return false;
  const uint8_t from_ip[6] = {0x02, 0x00, static_cast<uint8_t>(c.ipv4 >> 24), static_cast<uint8_t>(c.ipv4 >> 16),
                              static_cast<uint8_t>(c.ipv4 >> 8), static_cast<uint8_t>(c.ipv4)};
  *guid = eui64(from_ip);
  return true;
}

}  // namespace tita::verbs
