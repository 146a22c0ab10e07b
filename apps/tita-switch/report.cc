#include "report.h"

#include <rte_telemetry.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstdio>

namespace tita::tsw {

using nlohmann::json;

void fill_snapshot(const fabric::SwitchCore& sw, const std::vector<std::string>& names,
                   const std::vector<dpdk::PortStats>& pmd, const std::vector<uint16_t>& dpdk_ids, uint64_t now_ns,
                   uint64_t start_ns, const AppCounters& app, Snapshot* out) {
  out->uptime_ns = now_ns - start_ns;
  out->ports.resize(sw.ports());
  for (uint16_t i = 0; i < sw.ports(); ++i) {
    PortSnapshot& p = out->ports[i];
    p.name = names[i];
    p.dpdk_id = dpdk_ids[i];
    p.rate_bps = sw.port_config(i).rate_bps;
    p.shaped = sw.port_config(i).shaped;
    p.c = sw.counters(i);
    p.pmd = pmd[i];
    p.avg_qlen_bytes = sw.avg_qlen_bytes(i, now_ns);
  }
  const fabric::Mmu& mmu = sw.mmu();
  out->buffer_bytes = mmu.config().buffer_bytes;
  out->buffer_used_bytes = mmu.total_bytes();
  out->shared_bytes = mmu.shared_bytes();
  out->shared_used_bytes = mmu.shared_used();
  out->held_packets = sw.held_packets();
  out->app = app;
}

namespace {

json queues_json(const fabric::PortCounters& c) {
  json qs = json::array();
  for (int q = 0; q < fabric::kPriorities; ++q) {
    const fabric::QueueCounters& x = c.queue[q];
    qs.push_back({{"priority", q},
                  {"enqueued_packets", x.enqueued_packets},
                  {"enqueued_bytes", x.enqueued_bytes},
                  {"dequeued_packets", x.dequeued_packets},
                  {"dequeued_bytes", x.dequeued_bytes},
                  {"dropped_packets", x.dropped_packets},
                  {"ecn_marked", x.ecn_marked},
                  {"qlen_bytes", x.qlen_bytes},
                  {"max_qlen_bytes", x.max_qlen_bytes},
                  {"pfc_pause_sent", c.pfc_pause_sent[q]},
                  {"pfc_resume_sent", c.pfc_resume_sent[q]},
                  {"pfc_pause_received", c.pfc_pause_received[q]},
                  {"pfc_resume_received", c.pfc_resume_received[q]}});
  }
  return qs;
}

json drops_json(const fabric::PortCounters& c) {
  json d = json::object();
  for (int r = 0; r < fabric::kDropReasons; ++r) d[std::string(to_string(static_cast<fabric::DropReason>(r)))] = c.drops[r];
  return d;
}

}  // namespace

json to_json(const Snapshot& s) {
  json ports = json::array();
  for (const PortSnapshot& p : s.ports) {
    json j = {{"name", p.name}, {"dpdk_port", p.dpdk_id}, {"shaped", p.shaped}};
    for_each_counter(p, [&](const char* k, uint64_t v) { j[k] = v; });
    j["avg_qlen_bytes"] = p.avg_qlen_bytes;
    j["drops"] = drops_json(p.c);
    j["queues"] = queues_json(p.c);
    ports.push_back(std::move(j));
  }
  return {{"uptime_s", static_cast<double>(s.uptime_ns) / 1e9},
          {"buffer_bytes", s.buffer_bytes},
          {"buffer_used_bytes", s.buffer_used_bytes},
          {"shared_bytes", s.shared_bytes},
          {"shared_used_bytes", s.shared_used_bytes},
          {"held_packets", s.held_packets},
          {"app",
           {{"pfc_no_mbuf", s.app.pfc_no_mbuf},
            {"pfc_tx_refused", s.app.pfc_tx_refused},
            {"edit_no_room", s.app.edit_no_room},
            {"loops", s.app.loops},
            {"slow_loops", s.app.slow_loops},
            {"max_loop_ns", s.app.max_loop_ns}}},
          {"ports", ports}};
}

std::string to_text(const Snapshot& s) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "tita-switch: %.3f s, buffer %lu/%lu bytes used, %lu packets held\n",
                static_cast<double>(s.uptime_ns) / 1e9, static_cast<unsigned long>(s.buffer_used_bytes),
                static_cast<unsigned long>(s.buffer_bytes), static_cast<unsigned long>(s.held_packets));
  out += line;
  std::snprintf(line, sizeof line, "%-14s %10s %10s %12s %8s %8s %8s %8s %8s %10s %10s\n", "port", "rx_pkts", "tx_pkts",
                "tx_bytes", "drops", "ecn", "int", "pfc_tx", "pfc_rx", "max_qlen", "avg_qlen");
  out += line;
  for (const PortSnapshot& p : s.ports) {
    const fabric::PortCounters& c = p.c;
    std::snprintf(line, sizeof line, "%-14s %10lu %10lu %12lu %8lu %8lu %8lu %8lu %8lu %10lu %10.0f\n", p.name.c_str(),
                  static_cast<unsigned long>(c.rx_packets), static_cast<unsigned long>(c.tx_packets),
                  static_cast<unsigned long>(c.tx_bytes), static_cast<unsigned long>(c.dropped()),
                  static_cast<unsigned long>(c.ecn_marked), static_cast<unsigned long>(c.int_pushed),
                  static_cast<unsigned long>(c.pfc_frames_sent), static_cast<unsigned long>(c.pfc_frames_received),
                  static_cast<unsigned long>(c.max_qlen_bytes), p.avg_qlen_bytes);
    out += line;
    for (int r = 0; r < fabric::kDropReasons; ++r) {
      if (c.drops[r] == 0) continue;
      std::snprintf(line, sizeof line, "  drop %-18s %lu\n",
                    std::string(to_string(static_cast<fabric::DropReason>(r))).c_str(),
                    static_cast<unsigned long>(c.drops[r]));
      out += line;
    }
  }
  return out;
}

// rte_telemetry callbacks (the telemetry thread).
namespace {

SharedSnapshot* g_shared = nullptr;

int find_port(const Snapshot& s, const char* params) {
  if (params == nullptr || *params == '\0') return -1;
  const std::string_view p(params);
  unsigned id = 0;
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), id);
  if (ec == std::errc() && end == p.data() + p.size()) return id < s.ports.size() ? static_cast<int>(id) : -1;
  for (size_t i = 0; i < s.ports.size(); ++i) {
    if (s.ports[i].name == p) return static_cast<int>(i);
  }
  return -1;
}

int tel_ports(const char*, const char*, rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_shared->mu);
  rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
  for (size_t i = 0; i < g_shared->snap.ports.size(); ++i) rte_tel_data_add_array_int(d, static_cast<int>(i));
  return 0;
}

int tel_port(const char*, const char* params, rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_shared->mu);
  const Snapshot& s = g_shared->snap;
  const int i = find_port(s, params);
  if (i < 0) return -EINVAL;
  const PortSnapshot& p = s.ports[static_cast<size_t>(i)];
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "name", p.name.c_str());
  for_each_counter(p, [&](const char* k, uint64_t v) { rte_tel_data_add_dict_u64(d, k, v); });
  fabric::for_each_drop_counter(p.c, [&](const char* k, uint64_t v) { rte_tel_data_add_dict_u64(d, k, v); });
  return 0;
}

int tel_queues(const char*, const char* params, rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_shared->mu);
  const Snapshot& s = g_shared->snap;
  const int i = find_port(s, params);
  if (i < 0) return -EINVAL;
  const fabric::PortCounters& c = s.ports[static_cast<size_t>(i)].c;
  rte_tel_data_start_dict(d);
  for (int q = 0; q < fabric::kPriorities; ++q) {
    rte_tel_data* x = rte_tel_data_alloc();
    if (x == nullptr) return -ENOMEM;
    rte_tel_data_start_dict(x);
    fabric::for_each_queue_counter(c, q, [&](const char* k, uint64_t v) { rte_tel_data_add_dict_u64(x, k, v); });
    const std::string k = "priority_" + std::to_string(q);
    rte_tel_data_add_dict_container(d, k.c_str(), x, 0);
  }
  return 0;
}

int tel_stats(const char*, const char*, rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_shared->mu);
  const Snapshot& s = g_shared->snap;
  uint64_t rx = 0, tx = 0, drops = 0, ecn = 0, intp = 0, pfc_tx = 0, pfc_rx = 0;
  for (const PortSnapshot& p : s.ports) {
    rx += p.c.rx_packets;
    tx += p.c.tx_packets;
    drops += p.c.dropped();
    ecn += p.c.ecn_marked;
    intp += p.c.int_pushed;
    pfc_tx += p.c.pfc_frames_sent;
    pfc_rx += p.c.pfc_frames_received;
  }
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_u64(d, "uptime_ms", s.uptime_ns / 1'000'000);
  rte_tel_data_add_dict_u64(d, "ports", s.ports.size());
  rte_tel_data_add_dict_u64(d, "rx_packets", rx);
  rte_tel_data_add_dict_u64(d, "tx_packets", tx);
  rte_tel_data_add_dict_u64(d, "dropped", drops);
  rte_tel_data_add_dict_u64(d, "ecn_marked", ecn);
  rte_tel_data_add_dict_u64(d, "int_pushed", intp);
  rte_tel_data_add_dict_u64(d, "pfc_frames_sent", pfc_tx);
  rte_tel_data_add_dict_u64(d, "pfc_frames_received", pfc_rx);
  rte_tel_data_add_dict_u64(d, "buffer_bytes", s.buffer_bytes);
  rte_tel_data_add_dict_u64(d, "buffer_used_bytes", s.buffer_used_bytes);
  rte_tel_data_add_dict_u64(d, "shared_bytes", s.shared_bytes);
  rte_tel_data_add_dict_u64(d, "shared_used_bytes", s.shared_used_bytes);
  rte_tel_data_add_dict_u64(d, "held_packets", s.held_packets);
  return 0;
}

int tel_qlen(const char*, const char*, rte_tel_data* d) {
  std::lock_guard<std::mutex> lock(g_shared->mu);
  rte_tel_data_start_dict(d);
  for (const PortSnapshot& p : g_shared->snap.ports) rte_tel_data_add_dict_u64(d, p.name.c_str(), p.c.qlen_bytes);
  return 0;
}

// The configuration in effect, as `tita-switch --check --json` prints it, in
// pages of hex strings: telemetry strings are short and DPDK 22.11 does not
// escape them, so the JSON travels hex-encoded (no quote to escape). Page K
// (the parameter, default 0) holds kPageStrings strings of kHexChars
// characters; a page with fewer is the last.
int tel_config(const char*, const char* params, rte_tel_data* d) {
  constexpr size_t kHexChars = 120, kPageStrings = 60;
  long page = 0;
  if (params != nullptr && *params != '\0') {
    char* end = nullptr;
    page = std::strtol(params, &end, 10);
    if (*end != '\0' || page < 0) return -EINVAL;
  }
  const std::string& text = g_shared->config_json;  // written before telemetry started
  static constexpr char kHex[] = "0123456789abcdef";
  rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
  const size_t bytes_per_string = kHexChars / 2;
  for (size_t k = 0; k < kPageStrings; ++k) {
    const size_t from = (static_cast<size_t>(page) * kPageStrings + k) * bytes_per_string;
    if (from >= text.size()) break;
    char hex[kHexChars + 1];
    size_t n = 0;
    for (size_t i = from; i < std::min(text.size(), from + bytes_per_string); ++i) {
      const auto b = static_cast<unsigned char>(text[i]);
      hex[n++] = kHex[b >> 4];
      hex[n++] = kHex[b & 15];
    }
    hex[n] = '\0';
    rte_tel_data_add_array_string(d, hex);
  }
  return 0;
}

// "PORT,drop_all" | "PORT,drop=P" | "PORT,clear": the port's fault from now on
// (a link that starts black-holing what is routed to it, or losing a fraction).
int tel_fault(const char*, const char* params, rte_tel_data* d) {
  const std::string_view p(params == nullptr ? "" : params);
  const size_t comma = p.find(',');
  if (comma == std::string_view::npos) return -EINVAL;
  const std::string port(p.substr(0, comma));
  const std::string_view what = p.substr(comma + 1);
  fabric::FaultConfig f;
  if (what == "drop_all") {
    f.drop_all = true;
  } else if (what.rfind("drop=", 0) == 0) {
    const std::string v(what.substr(5));
    char* end = nullptr;
    f.drop_probability = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(f.drop_probability >= 0 && f.drop_probability <= 1)) return -EINVAL;
  } else if (what != "clear") {
    return -EINVAL;
  }
  std::lock_guard<std::mutex> lock(g_shared->mu);
  const int i = find_port(g_shared->snap, port.c_str());
  if (i < 0) return -EINVAL;
  g_shared->faults.emplace_back(static_cast<uint16_t>(i), f);
  rte_tel_data_start_dict(d);
  rte_tel_data_add_dict_string(d, "port", g_shared->snap.ports[static_cast<size_t>(i)].name.c_str());
  rte_tel_data_add_dict_u64(d, "drop_all", f.drop_all);
  rte_tel_data_add_dict_string(d, "drop_probability", std::to_string(f.drop_probability).c_str());
  return 0;
}

}  // namespace

int register_telemetry(SharedSnapshot* shared, std::string* err) {
  g_shared = shared;
  struct Cmd {
    const char* name;
    telemetry_cb fn;
    const char* help;
  };
  static const Cmd kCmds[] = {
      {"/tita_switch/ports", tel_ports, "Switch port indexes. Takes no parameters"},
      {"/tita_switch/port", tel_port, "Counters of one port. Parameters: int port index or DPDK port name"},
      {"/tita_switch/queues", tel_queues, "Per-priority queue counters. Parameters: int port index or name"},
      {"/tita_switch/stats", tel_stats, "Switch totals and buffer use. Takes no parameters"},
      {"/tita_switch/qlen", tel_qlen, "Egress queue length of every port, bytes. Takes no parameters"},
      {"/tita_switch/config", tel_config,
       "The configuration in effect (--check --json), hex-encoded. Parameters: int page (default 0)"},
      {"/tita_switch/fault", tel_fault,
       "Sets a port's fault. Parameters: port (index or name),drop_all | drop=P | clear"},
  };
  for (const Cmd& c : kCmds) {
    if (int rc = rte_telemetry_register_cmd(c.name, c.fn, c.help); rc != 0) {
      *err = std::string("telemetry: cannot register ") + c.name;
      return rc;
    }
  }
  return 0;
}

}  // namespace tita::tsw
