// tita-switch counters: a snapshot of the switch taken on the polling lcore,
// read by rte_telemetry's thread (/tita_switch/...), the periodic stats line and
// the final report (text, or JSON with --json).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tita/dpdk/port.h"
#include "tita/fabric/switch.h"

namespace tita::tsw {

// What the application itself counts (outside lib/fabric).
struct AppCounters {
  uint64_t pfc_no_mbuf = 0;       // a PFC frame could not be built: control pool empty
  uint64_t pfc_tx_refused = 0;    // the port did not take a PFC frame
  uint64_t edit_no_room = 0;      // an INT record did not fit the mbuf (dropped)
  uint64_t loops = 0;
  uint64_t slow_loops = 0;   // polling loop iterations longer than 100 us (shaper tokens may be lost)
  uint64_t max_loop_ns = 0;
};

struct PortSnapshot {
  std::string name;
  uint16_t dpdk_id = 0;
  uint64_t rate_bps = 0;
  bool shaped = false;
  fabric::PortCounters c;
  dpdk::PortStats pmd;
  double avg_qlen_bytes = 0;
};

struct Snapshot {
  uint64_t uptime_ns = 0;
  std::vector<PortSnapshot> ports;
  uint64_t buffer_bytes = 0;
  uint64_t buffer_used_bytes = 0;
  uint64_t shared_bytes = 0;
  uint64_t shared_used_bytes = 0;
  uint64_t held_packets = 0;
  AppCounters app;
};

// Every scalar counter of a port, by name (the names telemetry and JSON use).
template <class F>
void for_each_counter(const PortSnapshot& p, F&& f) {
  f("rate_mbps", p.rate_bps / 1'000'000);
  fabric::for_each_port_counter(p.c, f);
  f("avg_qlen_bytes", static_cast<uint64_t>(p.avg_qlen_bytes + 0.5));
  f("pmd_rx_packets", p.pmd.rx_packets);
  f("pmd_tx_packets", p.pmd.tx_packets);
  f("pmd_rx_missed", p.pmd.rx_missed);
  f("pmd_tx_dropped", p.pmd.tx_dropped);
}

void fill_snapshot(const fabric::SwitchCore& sw, const std::vector<std::string>& names,
                   const std::vector<dpdk::PortStats>& pmd, const std::vector<uint16_t>& dpdk_ids, uint64_t now_ns,
                   uint64_t start_ns, const AppCounters& app, Snapshot* out);

nlohmann::json to_json(const Snapshot& s);
std::string to_text(const Snapshot& s);

// The snapshot the telemetry thread reads; the polling lcore refreshes it with
// try_lock, so it never waits.
struct SharedSnapshot {
  std::mutex mu;
  Snapshot snap;
  // Faults asked for with /tita_switch/fault, for the polling lcore to apply
  // (at its next snapshot refresh, within 20 ms).
  std::vector<std::pair<uint16_t, fabric::FaultConfig>> faults;
  // The configuration in effect (tita-switch --check --json), compact; set
  // once before telemetry starts, read by /tita_switch/config.
  std::string config_json;
};
// Registers /tita_switch/ports, /tita_switch/port, /tita_switch/queues,
// /tita_switch/stats, /tita_switch/qlen, /tita_switch/config and /tita_switch/fault over `shared`
// (which must outlive EAL).
int register_telemetry(SharedSnapshot* shared, std::string* err);

}  // namespace tita::tsw
