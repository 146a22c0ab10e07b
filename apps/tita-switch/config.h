// tita-switch configuration: a JSON file (apps/tita-switch/examples/) and/or
// flags, turned into a fabric::SwitchConfig plus what the application needs
// (port names, routes, sampling). Every error names the setting ("ports[1].rate_gbps: ...").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tita/fabric/switch.h"

namespace tita::tsw {

struct Route {
  uint8_t prefix[16] = {};
  int len = 0;
  std::vector<uint16_t> ports;
  std::string text;  // as written, for messages
};

struct AppConfig {
  fabric::SwitchConfig sw;
  std::vector<std::string> port_names;   // DPDK names, index = switch port
  std::vector<bool> mac_given;           // else the switch port takes the DPDK port's MAC
  std::vector<Route> routes;
  uint32_t mbufs_per_port = 8191;
  uint64_t stats_interval_ms = 1000;     // 0: no periodic line
  std::string qlen_csv;
  std::vector<uint16_t> qlen_ports;      // empty: every port
  uint64_t qlen_interval_ns = 100'000;
  double max_seconds = 0;                // 0: run until a signal
  uint64_t exit_when_idle_ms = 0;        // 0: never
};

// Fills *cfg from doc. -EINVAL with "path: problem" for an unknown key, a value
// of the wrong type or out of range, a port named twice, a route to a port that
// does not exist, an unparsable address or prefix.
int from_json(const nlohmann::json& doc, AppConfig* cfg, std::string* err);

// The configuration in effect, every default resolved (RED thresholds from the
// port rate when not given): ports (rate, ECN, RED, buffer, scheduling), the
// lossless priorities and PFC thresholds, the DSCP-to-priority map, INT, the
// routes (prefix as written, port names).
nlohmann::json effective_json(const AppConfig& cfg);

// "a.b.2.c=value": sets doc["a"]["b"][2]["c"] (creating objects on the way);
// the value is JSON if it parses as JSON, a string otherwise.
int apply_set(nlohmann::json* doc, std::string_view assignment, std::string* err);

// Parses "10.0.0.0/24", "fd00::1/128", "10.0.0.1" (a host), "default" (::/0).
int parse_prefix(std::string_view text, uint8_t prefix[16], int* len, std::string* err);

}  // namespace tita::tsw
