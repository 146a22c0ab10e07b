// What a second engine on a port costs each engine, counted in instructions
// (scripts/callgrind-engine.sh runs this under callgrind, collecting inside
// dpdk::EngineHost::poll_once: the host's receive, steering and transmit and
// the engine's work, per packet).
//
//   engines_cost ENGINES MAPPING [MESSAGES]
//     ENGINES  engines per port (1 or 2): crossed net_ring ports with that
//              many queue pairs, an EngineHost per queue
//     MAPPING  same: QP i runs on engine i mod N at both ends (its frames
//              arrive on its own engine's queue); cross: on engine i mod N
//              at one end and i+1 mod N at the other (every frame arrives
//              on the other engine's queue and goes through its inbox)
//   Four QPs a side, each writing MESSAGES (default 20000) 64-byte messages,
//   32 in flight, no congestion control; every host is polled in turn by
//   this one thread, so the count does not depend on scheduling. Prints the
//   data packets sent and the handoffs.
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tita/dpdk/host.h"

using namespace tita;
using namespace tita::engine;

namespace {

constexpr int kQps = 4;
constexpr uint32_t kDepth = 32;
constexpr uint32_t kBytes = 64;

[[noreturn]] void die(const std::string& m) {
  std::fprintf(stderr, "engines_cost: %s\n", m.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) die("usage: engines_cost ENGINES same|cross [MESSAGES]");
  const int n = std::atoi(argv[1]);
  const bool cross = std::strcmp(argv[2], "cross") == 0;
  const uint64_t messages = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 20000;
  if (n < 1 || n > 2 || (!cross && std::strcmp(argv[2], "same") != 0)) die("ENGINES is 1 or 2, MAPPING same or cross");
  char arg0[] = "engines_cost", a1[] = "--no-huge", a2[] = "-m", a3[] = "512", a4[] = "--no-pci", a5[] = "-l",
       a6[] = "0", a7[] = "--log-level=*:error";
  char* eal[] = {arg0, a1, a2, a3, a4, a5, a6, a7};
  if (rte_eal_init(8, eal) < 0) die("EAL");

  std::vector<rte_ring*> ab(n), ba(n);
  for (int q = 0; q < n; ++q) {
    ab[q] = rte_ring_create(("ec_ab" + std::to_string(q)).c_str(), 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
    ba[q] = rte_ring_create(("ec_ba" + std::to_string(q)).c_str(), 4096, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  }
  const int pid[2] = {rte_eth_from_rings("ec_a", ba.data(), n, ab.data(), n, 0),
                      rte_eth_from_rings("ec_b", ab.data(), n, ba.data(), n, 0)};
  dpdk::Port port[2];
  std::string err;
  dpdk::PortConfig pc;
  pc.rx_queues = pc.tx_queues = static_cast<uint16_t>(n);
  for (int s = 0; s < 2; ++s) {
    if (pid[s] < 0 || port[s].open(std::to_string(pid[s]), pc, &err) != 0) die("port: " + err);
  }
  std::unique_ptr<dpdk::EngineHost> host[2][2];
  dpdk::Steering steer[2][2];
  for (int s = 0; s < 2; ++s) {
    std::vector<rte_ring*> inbox;
    if (n > 1) inbox = dpdk::Steering::make_inboxes("ec" + std::to_string(s), static_cast<uint16_t>(n));
    for (int k = 0; k < n; ++k) {
      steer[s][k].self = static_cast<uint16_t>(k);
      steer[s][k].inbox = inbox;
      EngineConfig cfg;
      cfg.gid = wire::Gid::from_ipv4(0x0a000001 + s);
      cfg.line_rate_bps = 100'000'000'000;
      cfg.compute_icrc = cfg.verify_icrc = false;  // measured apart (bench/wire)
      host[s][k] = std::make_unique<dpdk::EngineHost>(
          port[s], static_cast<uint16_t>(k), cfg,
          dpdk::HostOptions{.zero_copy = false, .steering = n > 1 ? &steer[s][k] : nullptr});
    }
  }
  // QP i: engine e[0] at A, e[1] at B.
  struct End {
    Engine* eng;
    uint32_t qp, cq;
    MrInfo mr;
  };
  std::vector<uint8_t> mem[2] = {std::vector<uint8_t>(1 << 20, 0x5a), std::vector<uint8_t>(1 << 20)};
  End end[kQps][2];
  for (int i = 0; i < kQps; ++i) {
    const int e[2] = {i % n, cross ? (i + 1) % n : i % n};
    for (int s = 0; s < 2; ++s) {
      Engine& eng = host[s][e[s]]->engine();
      End& x = end[i][s];
      x.eng = &eng;
      const uint32_t pd = eng.alloc_pd();
      if (eng.reg_mr(pd, mem[s].data(), mem[s].size(), kAccessLocalWrite | kAccessRemoteWrite, &x.mr) != 0 ||
          eng.create_cq(4096, &x.cq) != 0 ||
          eng.create_qp(pd, {.send_cq = x.cq, .recv_cq = x.cq, .max_send_wr = kDepth + 1}, &x.qp) != 0) {
        die("resources");
      }
    }
    for (int s = 0; s < 2; ++s) {
      QpAttr a;
      a.qp_access_flags = kAccessRemoteWrite;
      a.dest_qp_num = end[i][1 - s].qp;
      a.ah_attr.dgid = end[i][1 - s].eng->config().gid;
      std::memcpy(a.ah_attr.dmac, port[1 - s].mac(), 6);
      a.timeout = 20;
      if (connect_rc(*end[i][s].eng, end[i][s].qp, a, &err) != 0) die(err);
    }
  }
  dpdk::TscClock clock;
  uint64_t posted[kQps] = {}, done[kQps] = {};
  uint64_t finished = 0;
  while (finished < uint64_t{kQps} * messages) {
    for (int i = 0; i < kQps; ++i) {
      End& x = end[i][0];
      while (posted[i] < messages && posted[i] - done[i] < kDepth) {
        Sge sge{x.mr.addr + uint64_t(i) * kBytes, kBytes, x.mr.lkey};
        SendWr wr;
        wr.opcode = WrOpcode::kRdmaWrite;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.rdma.remote_addr = end[i][1].mr.addr + uint64_t(i) * kBytes;
        wr.rdma.rkey = end[i][1].mr.rkey;
        if (x.eng->post_send(x.qp, &wr, nullptr) != 0) die("post_send");
        ++posted[i];
      }
    }
    for (auto& side : host) {
      for (int k = 0; k < n; ++k) side[k]->poll_once(clock.now_ns());
    }
    for (int i = 0; i < kQps; ++i) {
      WorkCompletion wc[32];
      const int got = end[i][0].eng->poll_cq(end[i][0].cq, 32, wc);
      for (int j = 0; j < got; ++j) {
        if (wc[j].status != WcStatus::kSuccess) die("a WRITE failed");
      }
      done[i] += static_cast<uint64_t>(got);
      finished += static_cast<uint64_t>(got);
    }
  }
  uint64_t packets = 0, handed = 0;
  for (int i = 0; i < kQps; ++i) packets += end[i][0].eng->qp_counters(end[i][0].qp)->tx_data_packets;
  for (auto& side : host) {
    for (int k = 0; k < n; ++k) handed += side[k]->counters().rx_handed_off;
  }
  std::printf("engines %d %s: %llu data packets, %llu frames handed over\n", n, cross ? "cross" : "same",
              static_cast<unsigned long long>(packets), static_cast<unsigned long long>(handed));
  for (auto& side : host) {
    for (auto& h : side) h.reset();
  }
  return 0;
}
