// tita-perf's command line and the limits of a test (options.h).
#include "options.h"

#include "tita/cli/cli11.h"

#include <algorithm>
#include <cstdio>
#include <deque>

#include "tita/cc/cc.h"

namespace tita::perf {
namespace {

constexpr std::string_view kTool = "tita-perf";

// What a test may ask for: the command line's checks, and the server's of a
// client's hello (which comes over the network, so is checked the same way).
const std::vector<std::string> kTests = {"write", "send", "read"};
const std::vector<std::string> kModes = {"bw", "lat"};
const std::vector<std::string> kRecoveries = {"gbn", "sr"};
const std::vector<uint32_t> kMtus = {256, 512, 1024, 2048, 4096};
constexpr uint32_t kMaxSize = 1u << 30;
constexpr uint32_t kMaxQps = 4096;
constexpr uint32_t kMaxTxDepth = 8192;

// A flag made from an engine setting (tita/engine/settings.h): CLI11 reads it
// into a value of its kind, checked against the row's range, and the row sets
// it in the engine's config once the command line is read.
struct EngineFlag {
  const engine::Setting* row;
  CLI::Option* option = nullptr;
  bool on = false;
  uint64_t count = 0;
  double number = 0;
  std::string text;
};

void add_engine_flags(CLI::App& app, std::deque<EngineFlag>* flags) {
  using engine::SettingKind;
  for (const engine::Setting& s : engine::settings()) {
    if (s.flag.empty()) continue;
    EngineFlag& f = flags->emplace_back(EngineFlag{&s});
    const std::string name = "--" + std::string(s.flag);
    const std::string help = std::string(s.help) + (s.unit.empty() ? "" : " (" + std::string(s.unit) + ")");
    switch (s.kind) {
      case SettingKind::kBool:
        f.option = app.add_flag(name, f.on, help);
        continue;  // a flag's default is its absence
      case SettingKind::kChoice:
        f.option = app.add_option(name, f.text, help)->check([row = &s](const std::string& v) {
          uint64_t x;
          std::string why;
          return row->parse(v, &x, &why) == 0 ? std::string() : "not " + row->range_text();
        });
        break;
      case SettingKind::kCount:
        f.option = app.add_option(name, f.count, help)->check(CLI::Range(s.min, s.max));
        break;
      case SettingKind::kTime:
      case SettingKind::kRate:
        f.option = app.add_option(name, f.number, help);
        f.option->check(CLI::Range(static_cast<double>(s.min) / s.scale(), static_cast<double>(s.max) / s.scale()));
        break;
    }
    f.option->default_str(s.format(s.default_for(engine::FrontEnd::kPerf)));
  }
}

// The flags given, into the engine's config. 0, or -EINVAL with *err.
int apply_engine_flags(const std::deque<EngineFlag>& flags, engine::EngineConfig* cfg, std::string* err) {
  for (const EngineFlag& f : flags) {
    if (f.option->count() == 0) continue;
    uint64_t v = 0;
    std::string why;
    const int rc = f.row->kind == engine::SettingKind::kBool    ? f.row->from_number(f.on ? 1 : 0, &v, &why)
                   : f.row->kind == engine::SettingKind::kChoice ? f.row->parse(f.text, &v, &why)
                   : f.row->kind == engine::SettingKind::kCount
                       ? f.row->from_number(static_cast<double>(f.count), &v, &why)
                       : f.row->from_number(f.number, &v, &why);
    if (rc != 0) {
      *err = "--" + std::string(f.row->flag) + ": " + why;
      return rc;
    }
    f.row->set(cfg, v);
  }
  return 0;
}

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
  return {};
}

int parse_command_line(std::vector<char*>& args, Options* o) {
  std::string err;
  CLI::App app{"tita-perf: RDMA bandwidth and latency over tita (tita-perf <EAL args> -- [options])"};
  app.footer("EAL arguments (DPDK's: -l CORES, --vdev=..., --no-huge, --file-prefix=...) come before the --.");
  cli::contract_help(app);
  app.add_option("--port", o->port, "DPDK port, by name or number")->type_name("PORT");
  app.add_option("--ip", o->ip, "this host's IPv4 address (its RoCE GID)")->check(cli::ipv4());
  app.add_option("--mac", o->mac, "source MAC (default: the port's); the port is promiscuous")->check(cli::mac());
  auto* srv = app.add_flag("--server", o->server, "serve a client's test");
  app.add_flag("--loopback", o->loopback,
               "server and client in this process over crossed net_ring ports (needs -l with two lcores)");
  auto* client = app.add_option("--client", o->client, "run the test against the server at this TCP host")
                     ->type_name("HOST");
  srv->excludes(client);
  app.add_option("--tcp-port", o->tcp_port, "out-of-band TCP port")->check(CLI::Range(1, 65535));
  app.add_option("--test", o->test, "write, send or read")->check(CLI::IsMember(kTests));
  app.add_option("--mode", o->mode, "bw (bandwidth) or lat (latency)")->check(CLI::IsMember(kModes));
  app.add_option("--size", o->size, "message size (bytes)")->check(CLI::Range(1u, kMaxSize));
  app.add_option("--qps", o->qps, "queue pairs")->check(CLI::Range(1u, kMaxQps));
  app.add_option("--tx-depth", o->tx_depth, "outstanding WRs per QP")->check(CLI::Range(1u, kMaxTxDepth));
  app.add_option("--iters", o->iters, "messages per QP (0: run for --duration)");
  app.add_option("--duration", o->duration_s, "test length (s)")->check(CLI::PositiveNumber);
  app.add_option("--mtu", o->mtu, "RoCE path MTU (a server without it takes its client's)")->check(CLI::IsMember(kMtus));
  app.add_option("--cc", o->cc,
                 "congestion control: none dcqcn timely hpcc swift powertcp nscc tita, or a --cc-plugin's; "
                 "help lists them with their parameters");
  app.add_option("--cc-plugin", o->cc_plugins, "shared object with congestion-control plug-ins (repeatable)")
      ->type_name("PATH");
  app.add_option("--cc-param", o->cc_params, "name=value for the congestion control (repeatable)")
      ->type_name("NAME=VALUE");
  app.add_option("--recovery", o->recovery, "gbn (go-back-N) or sr (selective repeat)")
      ->check(CLI::IsMember(kRecoveries));
  std::deque<EngineFlag> engine_flags;
  add_engine_flags(app, &engine_flags);
  app.add_option("--clients", o->clients, "server: serve this many clients at once (bandwidth tests)")
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--idle-sleep", o->idle_sleep, "sleep while there is nothing to do (processes sharing a core)");
  app.add_flag("--check", o->check, "verify every byte received");
  app.add_flag("--zero-copy,!--no-zero-copy", o->zero_copy,
               "send payload from registered memory without copying where the port takes external buffers "
               "(the default; a send completes once the port has freed them); --no-zero-copy: copy it into mbufs");
  app.add_flag("--json", o->json_out, "print the result as one JSON object");
  app.add_option("--engines", o->engines,
                 "engines on the port, one per lcore and queue pair; QP i runs on engine i mod N (EAL's -l must "
                 "give N lcores, 2N with --loopback)")
      ->check(CLI::Range(1, 16));
  app.add_option("--series", o->series, "CSV of per-QP goodput, rate and window over time (client)")
      ->type_name("FILE");
  app.add_option("--series-interval-us", o->series_interval_us, "sampling interval for --series (us)")
      ->check(CLI::Range(1.0, 1e9));
  app.add_option("--timeout", o->timeout, "local ACK timeout code (4.096 us * 2^code)")->check(CLI::Range(0, 31));
  app.add_option("--dscp", o->dscp, "DSCP of data packets")->check(CLI::Range(0, 63));
  app.add_flag("--arp", o->arp, "resolve the peer's MAC by ARP (as a kernel resolves a RoCE address), not from the "
               "out-of-band exchange");
  app.add_option("--peer-gid", o->peer_gid, "send to this IPv4 GID instead of the one the peer reports")
      ->check(cli::ipv4());
  app.add_option("--linger", o->linger_s, "after a failed work request, keep the engine and its telemetry up this "
                 "long (s; for tita-doctor)")->check(CLI::Range(0.0, 3600.0));
  app.add_option("--inject-fault", o->fault, "an application fault, for tita-doctor's tests: no-recv (server: post "
                 "no receives), bad-rkey (client: use a key the server never gave), bad-psn (start from another PSN "
                 "than the one told to the peer), pfc-storm (send a PFC XOFF for the data's priority every millisecond, as "
                 "a NIC with a wedged receive path does)")
      ->check(CLI::IsMember({"no-recv", "bad-rkey", "bad-psn", "pfc-storm"}));
  if (const int rc = cli::parse(app, kTool, args); rc >= 0) return rc;
  o->mtu_given = app.count("--mtu") > 0;
  if (apply_engine_flags(engine_flags, &o->engine, &err) != 0) {
    return cli::usage_error(kTool, err);
  }
  for (const std::string& path : o->cc_plugins) {
    if (tita::cc::load_plugin(path, &err) != 0) {
      return cli::usage_error(kTool, err);
    }
  }
  if (o->cc == "help") {
    std::fputs(tita::cc::algorithms_help().c_str(), stdout);
    return 0;
  }
  if (!o->server && o->client.empty() && !o->loopback) {
    return cli::usage_error(kTool, "give --server, --client HOST or --loopback");
  }
  if (o->engines > 1 && !o->series.empty()) {
    return cli::usage_error(kTool, "--series samples one engine's QPs: use it with --engines 1");
  }
  if (o->engine.spray.paths != 0) {
    if (engine::check_spray(o->engine.spray, o->engine.path, &err) != 0) {
      return cli::usage_error(kTool, err);
    }
    if (o->recovery != "sr") {
      return cli::usage_error(kTool, "--spray needs --recovery sr (sprayed packets overtake each other)");
    }
  }
  {
    // Check the congestion-control name and parameters before touching the network.
    tita::cc::Params p;
    if (tita::cc::Params::create(o->cc, {}, &p, &err) != 0) {
      return cli::usage_error(kTool, err);
    }
    for (const std::string& kv : o->cc_params) {
      if (p.set(kv, &err) != 0) {
        return cli::usage_error(kTool, err);
      }
    }
  }
  return -1;
}

}  // namespace tita::perf
