// tita-perf: bandwidth and latency tests for tita's RC transport on DPDK ports,
// shaped like perftest (ib_write_bw, ib_send_lat, ...).
//
//   server:  tita-perf <EAL args> -- --port net_vhost0 --ip 10.0.0.2 --server
//   client:  tita-perf <EAL args> -- --port 0 --ip 10.0.0.1 --client 127.0.0.1
//                --test write --size 65536 --qps 4 --duration 5 --cc hpcc
//
// Connection setup goes over TCP (QPN, PSN, GID, MAC, buffer address and rkey),
// as perftest does; the client tells the server which test to serve.
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_ring.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "perf.h"

using namespace tita;
using namespace tita::perf;

namespace {

void on_signal(int) { g_stop = 1; }

// One test. The peer's out-of-band messages come over the network: one of the
// wrong shape (a field missing, of another type) ends the test with a message.
int run(const Options& o) {
  try {
    return Perf(o).run();
  } catch (const json::exception& e) {
    die(std::string("out-of-band: a message from the peer is not tita-perf's: ") + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  dpdk::Args args = dpdk::split_args(argc, argv);
  if (const int rc = parse_command_line(args.tool, &o); rc >= 0) return rc;
  std::string err;
  if (dpdk::eal_init(static_cast<int>(args.eal.size()), args.eal.data(), &err) < 0) {
    std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
    return 2;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // A vhost-user peer that has already exited must not kill us while the port closes.
  std::signal(SIGPIPE, SIG_IGN);
  if (!o.loopback) return run(o);

  // Loopback: two net_ring ports whose rings are crossed, the server on a worker
  // lcore and the client on this one, talking over TCP on localhost as usual.
  const unsigned worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);
  if (worker >= RTE_MAX_LCORE) {
    std::fprintf(stderr, "tita-perf: --loopback needs two lcores (e.g. -l 0,1)\n");
    return 2;
  }
  rte_ring* ab = rte_ring_create("tita_lb_ab", 4096, static_cast<int>(rte_socket_id()), RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* ba = rte_ring_create("tita_lb_ba", 4096, static_cast<int>(rte_socket_id()), RING_F_SP_ENQ | RING_F_SC_DEQ);
  const int pa = ab && ba ? rte_eth_from_rings("tita_lb_a", &ba, 1, &ab, 1, rte_socket_id()) : -1;
  const int pb = ab && ba ? rte_eth_from_rings("tita_lb_b", &ab, 1, &ba, 1, rte_socket_id()) : -1;
  if (pa < 0 || pb < 0) {
    std::fprintf(stderr, "tita-perf: cannot create the loopback ring ports\n");
    return 1;
  }
  static Options server;
  server = o;
  server.server = true;
  server.port = std::to_string(pb);
  server.ip = "10.0.0.2";
  server.quiet = true;  // the client prints the result
  o.port = std::to_string(pa);
  o.client = "127.0.0.1";
  rte_eal_remote_launch(
      [](void*) -> int { return run(server); },
      nullptr, worker);
  const int rc = run(o);
  rte_eal_wait_lcore(worker);
  return rc;
}
