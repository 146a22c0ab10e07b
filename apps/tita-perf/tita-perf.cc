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
  // Before EAL: a SIGTERM while it starts, or while a server waits for its
  // client, ends the process (exit 128 + signal), not after a timeout.
  cli::install_stop_signals();
  std::string err;
  if (dpdk::eal_init_for_tool(static_cast<int>(args.eal.size()), args.eal.data(), &err) < 0) {
    return stop_requested() ? cli::stopped_exit_status() : cli::usage_error("tita-perf", err);
  }
  // Every engine has an lcore of its own: this one, then EAL's workers in order.
  std::vector<unsigned> workers;
  unsigned lc;
  RTE_LCORE_FOREACH_WORKER(lc) workers.push_back(lc);
  const size_t need = (o.loopback ? 2u * o.engines : o.engines) - 1;
  if (workers.size() < need) {
    std::fprintf(stderr, "tita-perf: %s--engines %u needs %zu lcores; EAL has %zu (give them with -l)\n",
                 o.loopback ? "--loopback with " : "", o.engines, need + 1, workers.size() + 1);
    return 2;
  }
  if (!o.loopback) {
    o.lcores.assign(workers.begin(), workers.begin() + o.engines - 1);
    return run(o);
  }

  // Loopback: two net_ring ports whose rings are crossed (a ring per queue
  // pair, one per engine), the server on worker lcores and the client on this
  // one and the rest, talking over TCP on localhost as usual.
  std::vector<rte_ring*> ab(o.engines), ba(o.engines);
  bool rings = true;
  for (uint16_t k = 0; k < o.engines; ++k) {
    const int socket = static_cast<int>(rte_socket_id());
    ab[k] = rte_ring_create(("tita_lb_ab" + std::to_string(k)).c_str(), 4096, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
    ba[k] = rte_ring_create(("tita_lb_ba" + std::to_string(k)).c_str(), 4096, socket, RING_F_SP_ENQ | RING_F_SC_DEQ);
    rings = rings && ab[k] && ba[k];
  }
  const int pa = rings ? rte_eth_from_rings("tita_lb_a", ba.data(), o.engines, ab.data(), o.engines, rte_socket_id()) : -1;
  const int pb = rings ? rte_eth_from_rings("tita_lb_b", ab.data(), o.engines, ba.data(), o.engines, rte_socket_id()) : -1;
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
  const unsigned worker = workers[o.engines - 1];
  server.lcores.assign(workers.begin() + o.engines, workers.begin() + 2 * o.engines - 1);
  o.lcores.assign(workers.begin(), workers.begin() + o.engines - 1);
  o.port = std::to_string(pa);
  o.client = "127.0.0.1";
  rte_eal_remote_launch(
      [](void*) -> int { return run(server); },
      nullptr, worker);
  const int rc = run(o);
  rte_eal_wait_lcore(worker);
  return rc;
}
