// tita-perf's command line and the limits of a test (options.h).
#include "options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>

#include "tita/cc/cc.h"
#include "tita/wire/dodge.h"

namespace tita::perf {
namespace {

// What a test may ask for: the command line's checks, and the server's of a
// client's hello (which comes over the network, so is checked the same way).
const std::vector<std::string> kTests = {"write", "send", "read"};
const std::vector<std::string> kModes = {"bw", "lat"};
const std::vector<std::string> kRecoveries = {"gbn", "sr"};
const std::vector<uint32_t> kMtus = {256, 512, 1024, 2048, 4096};
constexpr uint32_t kMaxSize = 1u << 30;
constexpr uint32_t kMaxQps = 4096;
constexpr uint32_t kMaxTxDepth = 8192;
constexpr double kMaxRateGbps = 3200;

}  // namespace

std::string check_test(const Options& o) {
  auto in = [](const auto& set, const auto& v) { return std::find(set.begin(), set.end(), v) != set.end(); };
  if (!in(kTests, o.test)) return "test '" + o.test + "' is not write, send or read";
  if (!in(kModes, o.mode)) return "mode '" + o.mode + "' is not bw or lat";
  if (!in(kRecoveries, o.recovery)) return "recovery '" + o.recovery + "' is not gbn or sr";
  if (!in(kMtus, o.mtu)) return "MTU " + std::to_string(o.mtu) + " is not 256, 512, 1024, 2048 or 4096";
  if (o.size < 1 || o.size > kMaxSize) return "size " + std::to_string(o.size) + " is not 1 to 2^30";
  if (o.qps < 1 || o.qps > kMaxQps) return std::to_string(o.qps) + " QPs is not 1 to 4096";
  if (o.tx_depth < 1 || o.tx_depth > kMaxTxDepth) return "tx depth " + std::to_string(o.tx_depth) + " is not 1 to 8192";
  if (!(o.rate_gbps > 0 && o.rate_gbps <= kMaxRateGbps)) {
    return "rate " + std::to_string(o.rate_gbps) + " Gb/s is not in (0, 3200]";
  }
  return {};
}

int parse_command_line(std::vector<char*>& args, Options* o) {
  std::string err;
  CLI::App app{"tita-perf: RDMA bandwidth and latency over tita (tita-perf <EAL args> -- [options])"};
  app.footer("EAL arguments (DPDK's: -l CORES, --vdev=..., --no-huge, --file-prefix=...) come before the --.");
  app.add_option("--port", o->port, "DPDK port, by name or number")->capture_default_str();
  app.add_option("--ip", o->ip, "this host's IPv4 address (its RoCE GID)")->capture_default_str();
  app.add_option("--mac", o->mac, "source MAC (default: the port's); the port is promiscuous");
  auto* srv = app.add_flag("--server", o->server, "serve a client's test");
  app.add_flag("--loopback", o->loopback,
               "server and client in this process over crossed net_ring ports (needs -l with two lcores)");
  auto* cli = app.add_option("--client", o->client, "run the test against the server at this TCP host");
  srv->excludes(cli);
  app.add_option("--tcp-port", o->tcp_port, "out-of-band TCP port")->capture_default_str();
  app.add_option("--test", o->test, "write, send or read")->check(CLI::IsMember(kTests));
  app.add_option("--mode", o->mode, "bw (bandwidth) or lat (latency)")->check(CLI::IsMember(kModes));
  app.add_option("--size", o->size, "message size in bytes")->check(CLI::Range(1u, kMaxSize));
  app.add_option("--qps", o->qps, "queue pairs")->check(CLI::Range(1u, kMaxQps));
  app.add_option("--tx-depth", o->tx_depth, "outstanding WRs per QP")->check(CLI::Range(1u, kMaxTxDepth));
  app.add_option("--iters", o->iters, "messages per QP (0: run for --duration)");
  app.add_option("--duration", o->duration_s, "seconds")->check(CLI::PositiveNumber);
  app.add_option("--mtu", o->mtu, "RoCE path MTU (a server without it takes its client's)")->check(CLI::IsMember(kMtus));
  app.add_option("--cc", o->cc,
                 "congestion control: none dcqcn timely hpcc swift powertcp nscc tita, or a --cc-plugin's; "
                 "help lists them with their parameters");
  app.add_option("--cc-plugin", o->cc_plugins, "shared object with congestion-control plug-ins (repeatable)");
  app.add_option("--cc-param", o->cc_params, "name=value for the congestion control (repeatable)");
  app.add_option("--recovery", o->recovery, "gbn (go-back-N) or sr (selective repeat)")
      ->check(CLI::IsMember(kRecoveries));
  app.add_option("--rate", o->rate_gbps, "NIC line rate in Gb/s (what congestion control starts from)")
      ->check(CLI::PositiveNumber & CLI::Range(0.0, kMaxRateGbps));
  app.add_option("--clients", o->clients, "server: serve this many clients at once (bandwidth tests)")
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--idle-sleep", o->idle_sleep, "sleep while there is nothing to do (processes sharing a core)");
  app.add_option("--base-rtt-us", o->base_rtt_us, "base RTT congestion control assumes, in microseconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--pacing-slack-us", o->pacing_slack_us,
                 "sending time a late poll may catch up, in microseconds (for processes that sleep)");
  app.add_flag("--pace", o->pace, "pace at --rate even when uncongested (virtual ports take frames at any speed)");
  app.add_flag("--check", o->check, "verify every byte received");
  app.add_flag("--zero-copy", o->zero_copy, "send payload from registered memory without copying");
  app.add_flag("--json", o->json_out, "print the result as one JSON object");
  app.add_option("--engines", o->engines,
                 "engines on the port, one per lcore and queue pair; QP i runs on engine i mod N (EAL's -l must "
                 "give N lcores, 2N with --loopback)")
      ->check(CLI::Range(1, 16));
  app.add_option("--series", o->series, "CSV of per-QP goodput, rate and window over time (client)");
  app.add_option("--series-interval-us", o->series_interval_us, "sampling interval for --series");
  app.add_option("--timeout", o->timeout, "local ACK timeout code (4.096 us * 2^code)")->check(CLI::Range(0, 31));
  app.add_option("--dscp", o->dscp, "DSCP of data packets")->check(CLI::Range(0, 63));
  app.add_option("--ack-every", o->ack_req_every, "AckReq on every Nth packet (coalesced ACKs; INT algorithms always ask on every packet)")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  app.add_option("--dodge", o->dodge, "Hash Dodging: none, udp_sport or dscp (the field a QP changes to leave a failed path)")
      ->check([](const std::string& v) {
        wire::DodgeField f;
        return wire::parse_dodge_field(v, &f) ? std::string() : "not " + std::string(wire::kDodgeFieldNames);
      });
  app.add_option("--spray", o->spray, "multipath: spray each QP's packets over N entropy values of its UDP source "
                 "port (2..16; needs --recovery sr)");
  app.add_option("--spray-flowlet-us", o->spray_flowlet_us,
                 "multipath: keep a QP's value until a gap this long in its sending (flowlets); 0: every packet")
      ->check(CLI::Range(0.0, 1e6));
  app.add_option("--spray-policy", o->spray_policy, "round_robin, reps or offset")
      ->capture_default_str()
      ->check([](const std::string& v) {
        engine::SprayPolicy p;
        return engine::parse_spray_policy(v, &p) ? std::string() : "not round_robin, reps or offset";
      });
  app.add_flag("--arp", o->arp, "resolve the peer's MAC by ARP (as a kernel resolves a RoCE address), not from the "
               "out-of-band exchange");
  app.add_option("--peer-gid", o->peer_gid, "send to this IPv4 GID instead of the one the peer reports");
  app.add_option("--linger", o->linger_s, "after a failed work request, keep the engine and its telemetry up this "
                 "many seconds (for tita-doctor)")->check(CLI::Range(0.0, 3600.0));
  app.add_option("--inject-fault", o->fault, "an application fault, for tita-doctor's tests: no-recv (server: post "
                 "no receives), bad-rkey (client: use a key the server never gave), bad-psn (start from another PSN "
                 "than the one told to the peer)")
      ->check(CLI::IsMember({"no-recv", "bad-rkey", "bad-psn"}));
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  o->mtu_given = app.count("--mtu") > 0;
  for (const std::string& path : o->cc_plugins) {
    if (tita::cc::load_plugin(path, &err) != 0) {
      std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
      return 2;
    }
  }
  if (o->cc == "help") {
    std::fputs(tita::cc::algorithms_help().c_str(), stdout);
    return 0;
  }
  if (!o->server && o->client.empty() && !o->loopback) {
    std::fprintf(stderr, "tita-perf: give --server, --client HOST or --loopback\n");
    return 2;
  }
  if (o->engines > 1 && !o->series.empty()) {
    std::fprintf(stderr, "tita-perf: --series samples one engine's QPs: use it with --engines 1\n");
    return 2;
  }
  if (o->spray != 0) {
    engine::SprayConfig sc;
    sc.paths = o->spray;
    sc.flowlet_ns = static_cast<uint64_t>(o->spray_flowlet_us * 1e3);
    engine::PathConfig pc;
    wire::parse_dodge_field(o->dodge, &pc.field);  // checked by its option
    if (engine::check_spray(sc, pc, &err) != 0) {
      std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
      return 2;
    }
    if (o->recovery != "sr") {
      std::fprintf(stderr, "tita-perf: --spray needs --recovery sr (sprayed packets overtake each other)\n");
      return 2;
    }
  }
  {
    // Check the congestion-control name and parameters before touching the network.
    tita::cc::Params p;
    if (tita::cc::Params::create(o->cc, {}, &p, &err) != 0) {
      std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
      return 2;
    }
    for (const std::string& kv : o->cc_params) {
      if (p.set(kv, &err) != 0) {
        std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
        return 2;
      }
    }
  }
  return -1;
}

}  // namespace tita::perf
