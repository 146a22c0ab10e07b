// tita-perf's counters and result line (perf.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "perf.h"

namespace tita::perf {

json Perf::qp_stats() {
  uint64_t retx = 0, cnps_rx = 0, cnps_tx = 0, timeouts = 0, tx_packets = 0, rx_packets = 0, naks = 0, rtt = 0;
  uint64_t rnr = 0, int_records = 0, ecn_ce = 0, path_changes = 0, path_follows = 0;
  uint64_t by_timeout = 0, by_stall = 0, by_loss = 0, by_throughput = 0, by_manual = 0, spurious_stalls = 0;
  for (const Conn& c : conns_) {
    const engine::QpCounters& q = *lanes_[c.lane].engine().qp_counters(c.qpn);
    retx += q.retransmitted_packets;
    cnps_rx += q.cnps_received;
    cnps_tx += q.cnps_sent;
    timeouts += q.timeouts;
    tx_packets += q.tx_data_packets;
    rx_packets += q.rx_packets;
    naks += q.nak_seq_received + q.nak_seq_sent;
    rnr += q.rnr_nak_received + q.rnr_nak_sent;
    int_records += q.int_records_received;
    ecn_ce += q.ecn_ce_received;
    rtt = std::max(rtt, q.last_rtt_ns);
    path_changes += q.path_changes;
    path_follows += q.path_follows;
    by_timeout += q.path_changes_timeout;
    by_stall += q.path_changes_stall;
    by_loss += q.path_changes_loss;
    by_throughput += q.path_changes_throughput;
    by_manual += q.path_changes_manual;
    spurious_stalls += q.spurious_stalls;
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
  return {{"spray_paths", spray}, {"spray_retired", retired}, {"spray_dsacks", dsacks}, {"spray_tail_probes", probes}, {"retransmitted_packets", retx}, {"cnps_received", cnps_rx}, {"cnps_sent", cnps_tx},
          {"timeouts", timeouts},          {"data_packets", tx_packets}, {"rx_packets", rx_packets},
          {"seq_naks", naks},              {"rnr_naks", rnr},  {"rx_dropped", rx_dropped},
          {"int_records", int_records},    {"ecn_ce_received", ecn_ce}, {"last_rtt_ns", rtt},
          {"tx_no_mbuf", tx_no_mbuf}, {"tx_oversize", tx_oversize}, {"zero_copy_frames", zero_copy},
          {"engines", lanes_.size()}, {"rx_handed_off", handed_off}, {"flow_rules", flow_rules},
          {"path_changes", path_changes}, {"path_follows", path_follows},
          {"path_changes_by", {{"timeout", by_timeout}, {"stall", by_stall}, {"loss", by_loss},
                               {"throughput", by_throughput}, {"manual", by_manual}}},
          {"spurious_stalls", spurious_stalls}, {"late_polls", late_polls}, {"late_ms", late_ns / 1e6}};
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
