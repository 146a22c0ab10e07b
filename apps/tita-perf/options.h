// tita-perf's options: the command line, and the test a client asks a server
// for (its hello comes over the network and is checked by the same limits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tita/engine/engine.h"
#include "tita/engine/settings.h"

namespace tita::perf {

struct Options {
  std::string port = "0";
  std::string ip = "10.0.0.1";
  std::string mac;  // empty: the port's
  bool server = false;
  std::string client;  // server host for the out-of-band connection
  uint16_t tcp_port = 18515;
  std::string test = "write";
  std::string mode = "bw";
  uint32_t size = 65536;
  uint32_t qps = 1;
  uint32_t tx_depth = 128;
  uint64_t iters = 0;  // 0: run for `duration`
  double duration_s = 2;
  uint32_t mtu = 4096;
  std::string cc = "none";
  std::vector<std::string> cc_params;
  std::vector<std::string> cc_plugins;
  std::string recovery = "gbn";
  // The engine's settings tita-perf offers as flags (--rate, --pace, --base-rtt-us,
  // --ack-every, --dodge, --spray...: tita/engine/settings.h, doc/settings.md);
  // the rest at their defaults. A server takes its client's rate and pacing.
  engine::EngineConfig engine = engine::defaults(engine::FrontEnd::kPerf);
  bool loopback = false;
  uint32_t clients = 1;       // server: how many clients to serve at once
  bool idle_sleep = false;    // sleep while the engine has nothing to do (processes sharing a core)
  bool quiet = false;  // no report (the in-process server of --loopback)
  uint16_t engines = 1;         // engines on the port, one per lcore and queue pair
  std::vector<unsigned> lcores;  // the lcores of engines 1..engines-1 (main() assigns them)
  bool check = false;
  bool zero_copy = true;  // where the port takes external buffers (--no-zero-copy: copy)
  bool json_out = false;
  std::string series;
  double series_interval_us = 1000;
  uint8_t timeout = 14;
  uint8_t dscp = 26;
  bool mtu_given = false;      // server: its own --mtu, not the client's
  bool arp = false;            // resolve the peer's MAC by ARP, not from the exchange
  std::string peer_gid;        // send to this GID instead of the one the peer reports
  double linger_s = 0;         // after a failed work request: keep the engine up this long
  std::string fault;           // an injected fault: no-recv, bad-rkey, bad-psn, pfc-storm
};

// Why a client's test cannot be served, or empty: the command line's limits
// (test, mode, recovery, MTU, size, QPs, depth; the rate is checked as it is read).
std::string check_test(const Options& o);

// tita-perf's own arguments (dpdk::split_args: after "--", or all of them
// without one, argv[0] first): reads them, loads the plug-ins they name and
// checks the congestion control, all before EAL starts, so help and a bad option
// need no EAL arguments and start nothing. -1 to go on; otherwise the exit code
// (0 after --help).
int parse_command_line(std::vector<char*>& args, Options* o);

}  // namespace tita::perf
