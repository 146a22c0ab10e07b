// tita-switch: a DPDK software switch that gives tita a congested network to
// react to. The data plane is lib/fabric (shared with the ns-3 switch); this
// file is its DPDK host: ports, one polling loop, PFC frames, counters,
// telemetry, queue sampling.
//
//   tita-switch <EAL args> -- --config switch.json [flags]
//
// One lcore polls every port: receive bursts go through Switch::receive, PFC
// frames the switch asks for are sent at once from a small control pool, and
// each port transmits what Switch::dequeue lets go (shaped to its configured
// rate) after applying the packet's edit (TTL, ECN CE, INT record) in place.
// Exit: SIGINT/SIGTERM, --max-seconds, or --exit-when-idle MS (no packet
// received for MS and nothing left to send: how pcap-fed tests end).
// Exit status: 0, 1 for a DPDK failure, 2 for a bad configuration.
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "report.h"
#include "tita/cli/cli11.h"
#include "tita/dpdk/port.h"
#include "tita/fabric/switch.h"

namespace {

using namespace tita;
using nlohmann::json;


constexpr uint16_t kBurst = 32;
constexpr uint64_t kSnapshotNs = 20'000'000;  // telemetry snapshot refresh
constexpr uint64_t kSlowLoopNs = 100'000;     // a polling loop slower than this is counted

int config_error(const std::string& msg) { return tita::cli::usage_error("tita-switch", msg); }

struct Options {
  std::string config;
  std::vector<std::string> sets;
  std::vector<std::string> ports;
  std::vector<std::string> routes;
  bool json = false;
  bool check = false;
  int64_t stats_ms = -1;
  std::string qlen_csv;
  std::string qlen_ports;
  double qlen_interval_us = -1;
  double max_seconds = -1;
  int64_t exit_when_idle_ms = -1;
  int64_t seed = -1;
};

// A port by index ("3") or by name ("net_vhost0"); a longer run of digits is a
// name, which the configuration then refuses as a port it does not have.
json port_ref(const std::string& p) {
  const bool digits = !p.empty() && p.size() <= 9 && p.find_first_not_of("0123456789") == std::string::npos;
  return digits ? json(std::stoul(p)) : json(p);
}

// The configuration document: the file, then --port/--route, then --set, then
// the dedicated flags.
int build_config_doc(const Options& o, tsw::AppConfig* cfg, std::string* err) {
  json doc = json::object();
  if (!o.config.empty()) {
    std::ifstream in(o.config);
    if (!in) {
      *err = "config " + o.config + ": cannot open";
      return -ENOENT;
    }
    try {
      doc = json::parse(in, nullptr, true, true);  // comments allowed
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number too large
      *err = "config " + o.config + ": " + e.what();
      return -EINVAL;
    }
  }
  for (const std::string& p : o.ports) doc["ports"].push_back({{"name", p}});
  for (const std::string& r : o.routes) {
    const size_t eq = r.find('=');
    if (eq == std::string::npos) {
      *err = "--route '" + r + "': expected PREFIX=PORT[,PORT...]";
      return -EINVAL;
    }
    json ports = json::array();
    std::string rest = r.substr(eq + 1);
    for (size_t start = 0; start <= rest.size();) {
      const size_t comma = std::min(rest.find(',', start), rest.size());
      const std::string p = rest.substr(start, comma - start);
      ports.push_back(port_ref(p));
      start = comma + 1;
    }
    doc["routes"].push_back({{"prefix", r.substr(0, eq)}, {"ports", ports}});
  }
  for (const std::string& s : o.sets) {
    if (int rc = tsw::apply_set(&doc, s, err); rc != 0) return rc;
  }
  if (o.stats_ms >= 0) doc["stats"]["interval_ms"] = o.stats_ms;
  if (!o.qlen_csv.empty()) doc["qlen"]["csv"] = o.qlen_csv;
  if (o.qlen_interval_us > 0) doc["qlen"]["interval_us"] = o.qlen_interval_us;
  if (!o.qlen_ports.empty()) {
    json ports = json::array();
    for (size_t start = 0; start <= o.qlen_ports.size();) {
      const size_t comma = std::min(o.qlen_ports.find(',', start), o.qlen_ports.size());
      const std::string p = o.qlen_ports.substr(start, comma - start);
      ports.push_back(port_ref(p));
      start = comma + 1;
    }
    doc["qlen"]["ports"] = ports;
  }
  if (o.max_seconds >= 0) doc["run"]["max_seconds"] = o.max_seconds;
  if (o.exit_when_idle_ms >= 0) doc["run"]["exit_when_idle_ms"] = o.exit_when_idle_ms;
  if (o.seed >= 0) doc["seed"] = o.seed;
  return tsw::from_json(doc, cfg, err);
}

// A document of the wrong shape for what the flags add to it (a file whose
// "ports" is not a list, a port index too large for a number) is a message
// too, not an exception that ends the process.
int build_config(const Options& o, tsw::AppConfig* cfg, std::string* err) {
  try {
    return build_config_doc(o, cfg, err);
  } catch (const std::exception& e) {
    *err = "config" + (o.config.empty() ? std::string() : " " + o.config) + ": " + e.what();
    return -EINVAL;
  }
}

int init_switch(const tsw::AppConfig& cfg, fabric::Switch<rte_mbuf*>* sw, std::string* err) {
  if (int rc = sw->init(cfg.sw, err); rc != 0) return rc;
  for (const tsw::Route& r : cfg.routes) {
    if (int rc = sw->add_route(r.prefix, r.len, r.ports, err); rc != 0) {
      *err = "route " + r.text + ": " + *err;
      return rc;
    }
  }
  return 0;
}

fabric::FrameRef frame_ref(rte_mbuf* m) {
  fabric::FrameRef f;
  f.data = rte_pktmbuf_mtod(m, const uint8_t*);
  f.data_len = m->data_len;
  f.frame_bytes = m->pkt_len;
  f.trailer_room = m->nb_segs == 1 ? rte_pktmbuf_tailroom(m) : 0;
  return f;
}

// Packets a port has not taken yet; nothing new is dequeued for it until they go.
struct TxBacklog {
  rte_mbuf* pkts[kBurst];
  uint16_t n = 0;
  uint16_t sent = 0;
};

class App {
 public:
  // `shared` must outlive EAL: rte_telemetry's thread may call in until exit.
  App(tsw::AppConfig cfg, bool json_out, tsw::SharedSnapshot* shared)
      : cfg_(std::move(cfg)), json_out_(json_out), shared_(*shared) {}

  int open(std::string* err) {
    const size_t n = cfg_.port_names.size();
    dpdk::PortConfig pc;
    pc.mbufs = cfg_.mbufs_per_port;
    pc.rss_udp = false;
    for (size_t i = 0; i < n; ++i) {
      auto port = std::make_unique<dpdk::Port>();
      if (int rc = port->open(cfg_.port_names[i], pc, err); rc != 0) {
        *err = "port '" + cfg_.port_names[i] + "': " + *err;
        return rc == -ENODEV ? -ENODEV : rc;
      }
      if (!cfg_.mac_given[i]) std::memcpy(cfg_.sw.ports[i].mac, port->mac(), 6);
      ports_.push_back(std::move(port));
    }
    ctrl_pool_ = rte_pktmbuf_pool_create("tsw_ctrl", 1023, 32, 0, RTE_PKTMBUF_HEADROOM + 128, rte_socket_id());
    if (ctrl_pool_ == nullptr) {
      *err = "control mempool: " + std::string(rte_strerror(rte_errno));
      return -ENOMEM;
    }
    if (int rc = init_switch(cfg_, &sw_, err); rc != 0) return rc;
    backlog_.assign(n, TxBacklog{});
    pmd_.assign(n, dpdk::PortStats{});
    for (const auto& p : ports_) dpdk_ids_.push_back(p->id());
    if (cfg_.qlen_ports.empty()) {
      for (uint16_t i = 0; i < n; ++i) cfg_.qlen_ports.push_back(i);
    }
    if (!cfg_.qlen_csv.empty()) {
      qlen_ = std::fopen(cfg_.qlen_csv.c_str(), "w");
      if (qlen_ == nullptr) {
        *err = "--qlen-csv " + cfg_.qlen_csv + ": " + std::strerror(errno);
        return -errno;
      }
      std::setvbuf(qlen_, nullptr, _IOFBF, 1 << 20);
      std::fprintf(qlen_, "time_ns,mono_ns");
      for (uint16_t p : cfg_.qlen_ports) std::fprintf(qlen_, ",%s", cfg_.port_names[p].c_str());
      std::fprintf(qlen_, "\n");
    }
    return tsw::register_telemetry(&shared_, err);
  }

  ~App() {
    for (auto& p : ports_) p->close();
    if (ctrl_pool_ != nullptr) rte_mempool_free(ctrl_pool_);
  }

  void run() {
    const uint64_t start = clock_.now_ns();
    start_ns_ = start;
    last_stats_ns_ = start;
    last_tx_bytes_.assign(ports_.size(), 0);
    sw_.reset_counters(start);
    uint64_t last_rx = start;
    uint64_t next_snapshot = start;
    uint64_t next_stats = cfg_.stats_interval_ms ? start + cfg_.stats_interval_ms * 1'000'000 : UINT64_MAX;
    uint64_t next_qlen = qlen_ != nullptr ? start : UINT64_MAX;
    const uint64_t deadline = cfg_.max_seconds > 0 ? start + static_cast<uint64_t>(cfg_.max_seconds * 1e9) : UINT64_MAX;
    const uint64_t idle_ns = cfg_.exit_when_idle_ms * 1'000'000;
    rte_mbuf* rx[kBurst];
    fabric::EgressEdit edits[kBurst];
    const uint16_t n = static_cast<uint16_t>(ports_.size());

    uint64_t prev = start;
    while (!tita::cli::stop_requested()) {
      const uint64_t now = clock_.now_ns();
      const uint64_t loop_ns = now - prev;
      prev = now;
      if (loop_ns > kSlowLoopNs) [[unlikely]] {
        ++app_.slow_loops;
        app_.max_loop_ns = std::max(app_.max_loop_ns, loop_ns);
      }
      for (uint16_t i = 0; i < n; ++i) {
        const uint16_t got = ports_[i]->rx(0, rx, kBurst);
        if (got == 0) continue;
        last_rx = now;
        for (uint16_t k = 0; k < got; ++k) {
          if (sw_.receive(i, rx[k], frame_ref(rx[k]), now).verdict != fabric::Verdict::kQueued) {
            rte_pktmbuf_free(rx[k]);
          }
        }
      }
      sw_.poll(now);
      if (sw_.pfc_pending()) send_pfc(now);
      for (uint16_t i = 0; i < n; ++i) transmit(i, now, edits);
      ++app_.loops;

      if (now >= next_snapshot) {
        next_snapshot = now + kSnapshotNs;
        for (uint16_t i = 0; i < n; ++i) pmd_[i] = ports_[i]->stats();
        if (shared_.mu.try_lock()) {
          tsw::fill_snapshot(sw_, cfg_.port_names, pmd_, dpdk_ids_, now, start, app_, &shared_.snap);
          for (const auto& [port, fault] : shared_.faults) sw_.set_fault(port, fault);
          shared_.faults.clear();
          shared_.mu.unlock();
        }
      }
      if (now >= next_qlen) {
        next_qlen += cfg_.qlen_interval_ns;
        if (next_qlen <= now) next_qlen = now + cfg_.qlen_interval_ns;
        // mono_ns: CLOCK_MONOTONIC, the time base tita-perf's --series uses too.
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        std::fprintf(qlen_, "%lu,%lu", static_cast<unsigned long>(now - start),
                     static_cast<unsigned long>(ts.tv_sec) * 1'000'000'000ul + static_cast<unsigned long>(ts.tv_nsec));
        for (uint16_t p : cfg_.qlen_ports) std::fprintf(qlen_, ",%lu", static_cast<unsigned long>(sw_.qlen_bytes(p)));
        std::fputc('\n', qlen_);
      }
      if (now >= next_stats) {
        next_stats = now + cfg_.stats_interval_ms * 1'000'000;
        stats_line(now);
      }
      if (now >= deadline) break;
      if (idle_ns != 0 && now - last_rx >= idle_ns && sw_.idle() && !sw_.pfc_pending() && backlog_empty()) break;
    }
  }

  // Frees what is still held, prints the final counters, closes the ports
  // (which flushes pcap output).
  void finish() {
    const uint64_t now = clock_.now_ns();
    for (size_t i = 0; i < ports_.size(); ++i) {
      TxBacklog& b = backlog_[i];
      for (uint16_t k = 0; k < 64 && b.sent < b.n; ++k) b.sent += ports_[i]->tx(0, b.pkts + b.sent, b.n - b.sent);
      if (b.sent < b.n) rte_pktmbuf_free_bulk(b.pkts + b.sent, b.n - b.sent);
      b.n = b.sent = 0;
      pmd_[i] = ports_[i]->stats();
    }
    rte_mbuf* m;
    uint64_t left = 0;
    while (sw_.drain(&m)) {
      rte_pktmbuf_free(m);
      ++left;
    }
    tsw::Snapshot snap;
    tsw::fill_snapshot(sw_, cfg_.port_names, pmd_, dpdk_ids_, now, start_ns_, app_, &snap);
    snap.held_packets = left;
    {
      std::lock_guard<std::mutex> lock(shared_.mu);
      shared_.snap = snap;
    }
    if (json_out_) {
      std::printf("%s\n", tsw::to_json(snap).dump(2).c_str());
    } else {
      std::fputs(tsw::to_text(snap).c_str(), stdout);
    }
    std::fflush(stdout);
    if (qlen_ != nullptr) std::fclose(qlen_);
    qlen_ = nullptr;
    for (auto& p : ports_) p->close();
    if (ctrl_pool_ != nullptr) rte_mempool_free(ctrl_pool_);
    ctrl_pool_ = nullptr;
  }

 private:
  void send_pfc(uint64_t now) {
    while (sw_.pfc_pending()) {
      rte_mbuf* m = rte_pktmbuf_alloc(ctrl_pool_);
      uint8_t scratch[fabric::kPfcFrameBytes];
      uint16_t port = 0;
      if (m == nullptr) {
        sw_.pfc_frame(&port, scratch, sizeof scratch, now);  // consume it; the refresh resends XOFF
        ++app_.pfc_no_mbuf;
        continue;
      }
      const int len = sw_.pfc_frame(&port, rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m), now);
      if (len <= 0) {
        rte_pktmbuf_free(m);
        break;
      }
      rte_pktmbuf_append(m, static_cast<uint16_t>(len));
      if (ports_[port]->tx(0, &m, 1) != 1) {
        rte_pktmbuf_free(m);
        ++app_.pfc_tx_refused;
      }
    }
  }

  void transmit(uint16_t i, uint64_t now, fabric::EgressEdit* edits) {
    TxBacklog& b = backlog_[i];
    if (b.sent < b.n) {
      b.sent += ports_[i]->tx(0, b.pkts + b.sent, b.n - b.sent);
      if (b.sent < b.n) return;
    }
    uint16_t k = static_cast<uint16_t>(sw_.dequeue_burst(i, now, b.pkts, edits, kBurst));
    uint16_t out = 0;
    for (uint16_t j = 0; j < k; ++j) {
      rte_mbuf* m = b.pkts[j];
      const fabric::EgressEdit& e = edits[j];
      if (e.grow_bytes != 0 && rte_pktmbuf_append(m, static_cast<uint16_t>(e.grow_bytes)) == nullptr) [[unlikely]] {
        rte_pktmbuf_free(m);
        ++app_.edit_no_room;
        continue;
      }
      if (e.any()) fabric::apply_edit(e, rte_pktmbuf_mtod(m, uint8_t*));
      b.pkts[out++] = m;
    }
    b.n = out;
    b.sent = out ? ports_[i]->tx(0, b.pkts, out) : 0;
  }

  bool backlog_empty() const {
    for (const TxBacklog& b : backlog_) {
      if (b.sent < b.n) return false;
    }
    return true;
  }

  void stats_line(uint64_t now) {
    uint64_t rx = 0, tx = 0, drops = 0, ecn = 0, pfc_tx = 0, pfc_rx = 0;
    for (uint16_t i = 0; i < sw_.ports(); ++i) {
      const fabric::PortCounters& c = sw_.counters(i);
      rx += c.rx_packets;
      tx += c.tx_packets;
      drops += c.dropped();
      ecn += c.ecn_marked;
      pfc_tx += c.pfc_frames_sent;
      pfc_rx += c.pfc_frames_received;
    }
    const double dt = static_cast<double>(now - last_stats_ns_) / 1e9;
    std::string line;
    char buf[256];
    std::snprintf(buf, sizeof buf, "[%8.3fs] rx %.0f pps tx %.0f pps drop %lu ecn %lu pfc %lu/%lu buf %lu B",
                  static_cast<double>(now - start_ns_) / 1e9, static_cast<double>(rx - last_rx_) / dt,
                  static_cast<double>(tx - last_tx_) / dt, static_cast<unsigned long>(drops),
                  static_cast<unsigned long>(ecn), static_cast<unsigned long>(pfc_tx),
                  static_cast<unsigned long>(pfc_rx), static_cast<unsigned long>(sw_.mmu().total_bytes()));
    line += buf;
    for (uint16_t i = 0; i < sw_.ports(); ++i) {
      const uint64_t txb = sw_.counters(i).tx_bytes;
      std::snprintf(buf, sizeof buf, " | %s q %lu B %.2f Gb/s", cfg_.port_names[i].c_str(),
                    static_cast<unsigned long>(sw_.qlen_bytes(i)),
                    static_cast<double>(txb - last_tx_bytes_[i]) * 8 / dt / 1e9);
      line += buf;
      last_tx_bytes_[i] = txb;
    }
    std::fprintf(stderr, "%s\n", line.c_str());
    last_stats_ns_ = now;
    last_rx_ = rx;
    last_tx_ = tx;
  }

  tsw::AppConfig cfg_;
  bool json_out_;
  dpdk::TscClock clock_;
  std::vector<std::unique_ptr<dpdk::Port>> ports_;
  std::vector<uint16_t> dpdk_ids_;
  std::vector<dpdk::PortStats> pmd_;
  std::vector<TxBacklog> backlog_;
  rte_mempool* ctrl_pool_ = nullptr;
  fabric::Switch<rte_mbuf*> sw_;
  tsw::SharedSnapshot& shared_;
  tsw::AppCounters app_;
  std::FILE* qlen_ = nullptr;
  uint64_t start_ns_ = 0;
  uint64_t last_stats_ns_ = 0;
  uint64_t last_rx_ = 0;
  uint64_t last_tx_ = 0;
  std::vector<uint64_t> last_tx_bytes_;
};

}  // namespace

int main(int argc, char** argv) {
  // EAL arguments before "--", the switch's after it.
  dpdk::Args args = dpdk::split_args(argc, argv);

  CLI::App cli{
      "tita-switch: a DPDK software switch (lib/fabric): L3 forwarding, ECMP with a dodge offset, shaped "
      "ports, shared buffer, RED/ECN, PFC, INT, fault injection.\n"
      "Usage: tita-switch <EAL args> -- --config switch.json [flags]"};
  Options o;
  // Defaults of -1: the configuration file's value (or its default) stands.
  cli.add_option("--config", o.config, "configuration file (JSON; see doc/switch.md)")->type_name("FILE");
  cli.add_option("--set", o.sets, "override a setting: path=value, e.g. pfc.enabled=true, ports.1.rate_gbps=10")
      ->type_name("PATH=VALUE");
  cli.add_option("--port", o.ports, "add a port by DPDK name (unshaped)")->type_name("PORT");
  cli.add_option("--route", o.routes, "add a route: PREFIX=PORT[,PORT...] (index or name; PREFIX may be 'default')")
      ->type_name("PREFIX=PORTS");
  cli.add_flag("--json", o.json, "final counters as JSON on stdout (with --check: the configuration in effect)");
  cli.add_flag("--check", o.check, "validate the configuration and exit (no EAL start-up)");
  cli.add_option("--stats-ms", o.stats_ms, "periodic stats line on stderr every N ms (0: off; default 1000)")
      ->type_name("ms")->check(CLI::Range(int64_t{0}, int64_t{86'400'000}));
  cli.add_option("--qlen-csv", o.qlen_csv, "write time-stamped egress queue lengths (bytes) to FILE")
      ->type_name("FILE");
  cli.add_option("--qlen-ports", o.qlen_ports, "ports sampled into --qlen-csv: indexes or names, comma-separated")
      ->type_name("PORTS");
  cli.add_option("--qlen-interval-us", o.qlen_interval_us, "queue sampling interval (default 100 us)")
      ->type_name("us")->check(CLI::Range(1.0, 1e9));
  cli.add_option("--max-seconds", o.max_seconds, "stop after this long (default: run until a signal)")
      ->type_name("s")->check(CLI::Range(0.0, 1e9));
  cli.add_option("--exit-when-idle", o.exit_when_idle_ms,
                 "stop once nothing was received for this long and nothing is left to send (pcap-fed runs)")
      ->type_name("ms")->check(CLI::Range(int64_t{0}, int64_t{86'400'000}));
  cli.add_option("--seed", o.seed, "seed of the switch's random draws (RED, random loss; default 1)")
      ->type_name("SEED")->check(CLI::NonNegativeNumber);
  if (const int rc = tita::cli::parse(cli, "tita-switch", args.tool); rc >= 0) return rc;

  tsw::AppConfig cfg;
  std::string err;
  if (build_config(o, &cfg, &err) != 0) return config_error(err);
  {
    // Validate everything lib/fabric checks before starting EAL.
    fabric::Switch<rte_mbuf*> probe;
    if (init_switch(cfg, &probe, &err) != 0) return config_error(err);
  }
  if (o.check) {
    if (o.json) {
      // The configuration in effect, defaults resolved (what tita-doctor precheck audits).
      std::printf("%s\n", tsw::effective_json(cfg).dump(1).c_str());
    } else {
      std::printf("tita-switch: configuration ok: %zu ports, %zu routes\n", cfg.port_names.size(),
                  cfg.routes.size());
    }
    return 0;
  }

  // Before EAL: a signal while it starts stops the switch too. A stopped
  // switch still reports and exits 0: a signal is how a service's run ends.
  tita::cli::install_stop_signals();
  if (dpdk::eal_init_for_tool(static_cast<int>(args.eal.size()), args.eal.data(), &err) < 0) {
    return tita::cli::usage_error("tita-switch", err);
  }
  int status = 0;
  {
    // Never freed: the telemetry thread reads it until the process exits.
    static auto* shared = new tsw::SharedSnapshot;
    shared->config_json = tsw::effective_json(cfg).dump();
    App app(std::move(cfg), o.json, shared);
    if (int rc = app.open(&err); rc != 0) {
      std::fprintf(stderr, "tita-switch: %s\n", err.c_str());
      status = rc == -ENODEV || rc == -EINVAL ? 2 : 1;
    } else {
      app.run();
      app.finish();
    }
  }
  rte_eal_cleanup();
  return status;
}
