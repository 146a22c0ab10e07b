// tita-perf's counters and result line (perf.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "perf.h"

namespace tita::perf {

json Perf::qp_stats() {
  // Every QP value the hosts report (engine::for_each_qp_value, as telemetry
  // and tita-sim do), summed over the connections; last_rtt_ns the largest.
  // Every name present from the start, so a misspelt one below throws.
  std::map<std::string, uint64_t, std::less<>> q;
  engine::for_each_qp_value(engine::QpInfo{}, engine::QpCounters{}, [&](const char* k, uint64_t) { q[k] = 0; });
  uint64_t spurious_stalls = 0;
  for (const Conn& c : conns_) {
    engine::Engine& e = lanes_[c.lane].engine();
    engine::QpInfo info;
    if (e.qp_info(c.qpn, &info) != 0) continue;
    const engine::QpCounters& n = *e.qp_counters(c.qpn);
    engine::for_each_qp_value(info, n, [&](const char* k, uint64_t v) {
      uint64_t& sum = q[k];
      sum = std::string_view(k) == "last_rtt_ns" ? std::max(sum, v) : sum + v;
    });
    spurious_stalls += n.spurious_stalls;
  }
  // Engine and host counters, summed over the port's engines.
  uint64_t rx_dropped = 0, tx_no_mbuf = 0, tx_oversize = 0, zero_copy = 0, handed_off = 0, flow_rules = 0;
  uint64_t late_polls = 0, late_ns = 0;
  for (const Lane& lane : lanes_) {
    rx_dropped += lane.host->engine().counters().rx_dropped;
    tx_no_mbuf += lane.host->counters().tx_no_mbuf;
    tx_oversize += lane.host->counters().tx_oversize;
    zero_copy += lane.host->counters().tx_zero_copy;
    handed_off += lane.host->counters().rx_handed_off;
    flow_rules += lane.host->counters().flow_rules;
    late_polls += lane.host->counters().late_polls;
    late_ns += lane.host->counters().late_ns;
  }
  // Spraying: every entropy value of every QP (doc/multipath.md).
  json spray = json::array();
  uint64_t retired = 0, dsacks = 0, probes = 0;
  for (const Conn& c : conns_) {
    engine::SprayInfo s;
    if (lanes_[c.lane].engine().spray_info(c.qpn, &s) != 0) continue;
    retired += s.retired;
    dsacks += s.dsacks;
    probes += s.tail_probes;
    for (const engine::SprayPathInfo& p : s.paths) {
      spray.push_back({{"qpn", c.qpn}, {"udp_sport", p.udp_sport}, {"sent", p.sent}, {"delivered", p.delivered},
                       {"lost", p.lost}, {"ce", p.ce}, {"srtt_ns", p.srtt_ns}});
    }
  }
  return {{"spray_paths", spray}, {"spray_retired", retired}, {"spray_dsacks", dsacks},
          {"spray_tail_probes", probes}, {"retransmitted_packets", q.at("retransmitted_packets")},
          {"cnps_received", q.at("cnps_received")}, {"cnps_sent", q.at("cnps_sent")}, {"timeouts", q.at("timeouts")},
          {"data_packets", q.at("tx_data_packets")}, {"rx_packets", q.at("rx_packets")},
          {"seq_naks", q.at("nak_seq_sent") + q.at("nak_seq_received")},
          {"rnr_naks", q.at("rnr_nak_sent") + q.at("rnr_nak_received")}, {"rx_dropped", rx_dropped},
          {"int_records", q.at("int_records_received")}, {"ecn_ce_received", q.at("ecn_ce_received")},
          {"last_rtt_ns", q.at("last_rtt_ns")}, {"tx_no_mbuf", tx_no_mbuf}, {"tx_oversize", tx_oversize},
          {"zero_copy_frames", zero_copy}, {"engines", lanes_.size()}, {"rx_handed_off", handed_off},
          {"flow_rules", flow_rules}, {"path_changes", q.at("path_changes")}, {"path_follows", q.at("path_follows")},
          {"path_changes_by", {{"timeout", q.at("path_changes_timeout")}, {"stall", q.at("path_changes_stall")},
                               {"loss", q.at("path_changes_loss")}, {"throughput", q.at("path_changes_throughput")},
                               {"manual", q.at("path_changes_manual")}}},
          {"spurious_stalls", spurious_stalls}, {"late_polls", late_polls}, {"late_ms", late_ns / 1e6},
          {"port_rx_missed", port_.stats().rx_missed}};
}

void Perf::report(const json& client, const json& server) {
  const double secs = client.value("seconds", 0.0);
  const double msgs = client.value("messages", 0.0);
  const double gbps = secs > 0 ? msgs * o_.size * 8 / secs / 1e9 : 0;
  const double mmsg = secs > 0 ? msgs / secs / 1e6 : 0;
  const double mpps = secs > 0 ? client.value("data_packets", 0.0) / secs / 1e6 : 0;
  const uint64_t failures = client.value("check_failures", 0ull) + server.value("check_failures", 0ull);
  json out = {{"role", o_.server ? "server" : "client"},
              {"test", o_.test},
              {"mode", o_.mode},
              {"size", o_.size},
              {"qps", o_.qps},
              {"cc", o_.cc},
              {"recovery", o_.recovery},
              {"mtu", o_.mtu},
              {"seconds", secs},
              {"messages", msgs},
              {"gbps", gbps},
              {"msg_rate_mpps", mmsg},
              {"pkt_rate_mpps", mpps},
              {"client", client},
              {"server", server},
              {"check", o_.check ? (failures == 0 ? "ok" : "FAILED") : "off"}};
  if (o_.mode == "lat") out["latency_us"] = client.value("latency_us", json::object());
  if (o_.quiet) {
    // nothing to print
  } else if (o_.json_out) {
    std::printf("%s\n", out.dump().c_str());
  } else if (o_.mode == "bw") {
    std::printf("%-6s %9s %4s %10s %9s %9s %9s %8s %8s %6s\n", "test", "bytes", "qps", "messages", "Gb/s",
                "Mmsg/s", "Mpps", "retx", "CNPs", "check");
    std::printf("%-6s %9u %4u %10.0f %9.3f %9.4f %9.4f %8llu %8llu %6s\n", o_.test.c_str(), o_.size, o_.qps, msgs,
                gbps, mmsg, mpps,
                static_cast<unsigned long long>(client.value("retransmitted_packets", 0ull)),
                static_cast<unsigned long long>(client.value("cnps_received", 0ull)),
                out["check"].get<std::string>().c_str());
  } else {
    const json& l = out["latency_us"];
    std::printf("%-6s %9s %9s %9s %9s %9s %9s\n", "test", "bytes", "samples", "min_us", "p50_us", "p99_us",
                "p99.9_us");
    std::printf("%-6s %9u %9llu %9.2f %9.2f %9.2f %9.2f\n", o_.test.c_str(), o_.size,
                static_cast<unsigned long long>(l.value("samples", 0ull)), l.value("min", 0.0),
                l.value("p50", 0.0), l.value("p99", 0.0), l.value("p999", 0.0));
  }
  std::fflush(stdout);
  if (failures > 0) {
    std::fprintf(stderr, "tita-perf: data check FAILED in %llu places\n", static_cast<unsigned long long>(failures));
    std::exit(3);
  }
}

}  // namespace tita::perf
