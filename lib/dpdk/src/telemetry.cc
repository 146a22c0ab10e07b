#include "tita/dpdk/telemetry.h"

#include <arpa/inet.h>
#include <rte_telemetry.h>

#include <charconv>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "tita/dpdk/host.h"

namespace tita::dpdk {
namespace {

struct Entry {
  const EngineHost* host = nullptr;
  std::string name;
  std::mutex* lock = nullptr;  // held while a command reads the host, if given
};

std::mutex g_mutex;
std::vector<Entry> g_entries;  // index = engine id; withdrawn entries keep their slot

// Parses "<id>" or "<id>,<qpn>" from the parameters of a command.
bool parse_ids(const char* params, long* id, long* qpn) {
  if (params == nullptr) return false;
  const std::string_view p(params);
  const size_t comma = p.find(',');
  const std::string_view a = p.substr(0, comma);
  if (std::from_chars(a.data(), a.data() + a.size(), *id).ec != std::errc()) return false;
  if (qpn == nullptr) return comma == std::string_view::npos;
  if (comma == std::string_view::npos) return false;
  const std::string_view b = p.substr(comma + 1);
  const int base = b.starts_with("0x") ? 16 : 10;
  const std::string_view digits = base == 16 ? b.substr(2) : b;
  return std::from_chars(digits.data(), digits.data() + digits.size(), *qpn, base).ec == std::errc();
}

const EngineHost* find(long id) {
  if (id < 0 || static_cast<size_t>(id) >= g_entries.size()) return nullptr;
  return g_entries[static_cast<size_t>(id)].host;
}

// The publisher's own lock of engine id, taken while a command reads it.
std::unique_lock<std::mutex> engine_lock(long id) {
  std::mutex* m = g_entries[static_cast<size_t>(id)].lock;
  return m != nullptr ? std::unique_lock<std::mutex>(*m) : std::unique_lock<std::mutex>();
}

void u64(rte_tel_data* d, const char* name, uint64_t v) { rte_tel_data_add_dict_u64(d, name, v); }

// A GID as its IPv4 address ("" for an IPv6 one).
void add_ip(rte_tel_data* d, const char* name, const wire::Gid& g) {
  char ip[INET_ADDRSTRLEN] = "";
  if (g.is_ipv4()) inet_ntop(AF_INET, g.ipv4_bytes(), ip, sizeof ip);
  rte_tel_data_add_dict_string(d, name, ip);
}

int cmd_engines(const char*, const char*, rte_tel_data* d) {
  std::lock_guard lock(g_mutex);
  rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
  for (size_t i = 0; i < g_entries.size(); ++i) {
    if (g_entries[i].host != nullptr) rte_tel_data_add_array_int(d, static_cast<int>(i));
  }
  return 0;
}

int cmd_engine(const char*, const char* params, rte_tel_data* d) {
  long id;
  if (!parse_ids(params, &id, nullptr)) return -1;
  std::lock_guard lock(g_mutex);
  const EngineHost* h = find(id);
  if (h == nullptr) return -1;
  const auto held = engine_lock(id);
  const engine::EngineCounters& c = h->engine().counters();
  const HostCounters& hc = h->counters();
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "name", g_entries[static_cast<size_t>(id)].name.c_str());
  u64(d, "qps", h->engine().qp_numbers().size());
  add_ip(d, "ip", h->engine().config().gid);
  // What the engine assumes, and what the port says (tita-doctor precheck --live).
  u64(d, "line_rate_bps", h->engine().config().line_rate_bps);
  u64(d, "base_rtt_ns", h->engine().config().base_rtt_ns);
  u64(d, "port_speed_mbps", h->port().link_speed_mbps());
  u64(d, "port_max_frame_bytes", h->port().max_frame_bytes());
  u64(d, "rx_frames", c.rx_frames);
  u64(d, "rx_dropped", c.rx_dropped);
  u64(d, "arp_requests_sent", c.arp_requests_sent);
  u64(d, "arp_received", c.arp_received);
  u64(d, "arp_failures", c.arp_failures);
  static constexpr const char* kParse[] = {"ok", "truncated", "not_ip", "bad_ip_version", "bad_ip_header",
                                           "bad_ip_checksum", "not_udp", "not_roce", "length_mismatch",
                                           "bad_bth_version", "unknown_opcode", "bad_pad_count", "bad_icrc"};
  static_assert(std::size(kParse) == static_cast<size_t>(wire::ParseError::kCount));
  for (size_t i = 1; i < std::size(kParse); ++i) {
    const std::string key = std::string("rx_drop_") + kParse[i];
    u64(d, key.c_str(), c.rx_parse_errors[i]);
  }
  u64(d, "rx_drop_unknown_qp", c.rx_unknown_qp);
  u64(d, "rx_drop_bad_pkey", c.rx_bad_pkey);
  u64(d, "rx_drop_qp_not_ready", c.rx_qp_not_ready);
  u64(d, "rx_drop_not_for_us", c.rx_not_for_us);
  u64(d, "rx_drop_wrong_source", c.rx_wrong_source);
  u64(d, "rx_drop_wrong_transport", c.rx_wrong_transport);
  u64(d, "rx_drop_bad_qkey", c.rx_bad_qkey);
  u64(d, "rx_drop_ud_no_recv", c.rx_ud_no_recv);
  u64(d, "tx_frames", c.tx_frames);
  u64(d, "control_ring_full", c.control_ring_full);
  u64(d, "ooo_pool_full", c.ooo_pool_full);
  u64(d, "host_rx_linearized", hc.rx_linearized);
  u64(d, "host_tx_zero_copy", hc.tx_zero_copy);
  u64(d, "host_tx_copied", hc.tx_copied);
  u64(d, "host_holds_out", h->holds_out());
  u64(d, "host_holds_released", hc.holds_released);
  u64(d, "host_tx_holds_full", hc.tx_holds_full);
  u64(d, "completions_held", c.completions_held);
  u64(d, "host_tx_no_mbuf", hc.tx_no_mbuf);
  u64(d, "host_tx_oversize", hc.tx_oversize);
  u64(d, "host_tx_overrun", hc.tx_overrun);
  u64(d, "host_polls", hc.polls);
  // A poll that is late now counts already (a host starved of CPU may not poll for seconds).
  const uint64_t overdue = h->overdue_ns();
  u64(d, "host_late_polls", hc.late_polls + (overdue > 0 ? 1 : 0));
  u64(d, "host_late_ns", hc.late_ns + overdue);
  u64(d, "host_rx_pfc_pauses", hc.rx_pfc_pauses);
  u64(d, "host_rx_pfc_resumes", hc.rx_pfc_resumes);
  u64(d, "host_pfc_held", hc.pfc_held);
  u64(d, "host_tx_pfc_frames", hc.tx_pfc_frames);
  // The port's own drops (rte_eth_stats), whole-port: engines that share a port
  // report the same numbers under the same port id.
  const PortStats ps = h->port().stats();
  u64(d, "port_id", h->port().id());
  rte_tel_data_add_dict_string(d, "port", h->port().name().c_str());
  u64(d, "port_rx_missed", ps.rx_missed);
  u64(d, "port_rx_errors", ps.rx_errors);
  u64(d, "port_tx_errors", ps.tx_errors);
  return 0;
}

int cmd_qps(const char*, const char* params, rte_tel_data* d) {
  long id;
  if (!parse_ids(params, &id, nullptr)) return -1;
  std::lock_guard lock(g_mutex);
  const EngineHost* h = find(id);
  if (h == nullptr) return -1;
  const auto held = engine_lock(id);
  rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
  for (uint32_t qpn : h->engine().qp_numbers()) rte_tel_data_add_array_int(d, static_cast<int>(qpn));
  return 0;
}

int cmd_qp(const char*, const char* params, rte_tel_data* d) {
  long id, qpn;
  if (!parse_ids(params, &id, &qpn)) return -1;
  std::lock_guard lock(g_mutex);
  const EngineHost* h = find(id);
  if (h == nullptr) return -1;
  const auto held = engine_lock(id);
  engine::QpInfo info;
  if (h->engine().qp_info(static_cast<uint32_t>(qpn), &info) != 0) return -1;
  const engine::QpCounters& q = *h->engine().qp_counters(static_cast<uint32_t>(qpn));
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "state", std::string(engine::to_string(info.state)).c_str());
  rte_tel_data_add_dict_string(d, "cc", std::string(info.cc).c_str());
  engine::QpAttr attr;
  if (h->engine().query_qp(static_cast<uint32_t>(qpn), &attr) == 0) {
    u64(d, "path_mtu", attr.path_mtu);
    u64(d, "dscp", attr.ah_attr.traffic_class >> 2);
    add_ip(d, "dest_ip", attr.ah_attr.dgid);
    u64(d, "dest_qpn", attr.dest_qp_num);
  }
  engine::for_each_qp_value(info, q, [&](const char* k, uint64_t v) { u64(d, k, v); });
  return 0;
}

}  // namespace

int telemetry_publish(const EngineHost* host, std::string_view name, std::mutex* engine_mutex) {
  std::lock_guard lock(g_mutex);
  static bool registered = false;
  if (!registered) {
    rte_telemetry_register_cmd("/tita/engines", cmd_engines, "Ids of the tita engines. Takes no parameters");
    rte_telemetry_register_cmd("/tita/engine", cmd_engine, "Counters of a tita engine. Parameters: int engine_id");
    rte_telemetry_register_cmd("/tita/qps", cmd_qps, "QP numbers of a tita engine. Parameters: int engine_id");
    rte_telemetry_register_cmd("/tita/qp", cmd_qp,
                               "State and counters of a QP. Parameters: int engine_id, int qp_number");
    registered = true;
  }
  g_entries.push_back({host, std::string(name), engine_mutex});
  return static_cast<int>(g_entries.size() - 1);
}

void telemetry_withdraw(int id) {
  std::lock_guard lock(g_mutex);
  if (id >= 0 && static_cast<size_t>(id) < g_entries.size()) g_entries[static_cast<size_t>(id)].host = nullptr;
}

}  // namespace tita::dpdk
