// The engine over real DPDK ports in one process: two net_ring ports whose rings
// are crossed, an EngineHost on each, every verb with data checked; once with
// payload copied into mbufs and once zero-copy (external buffers, chained mbufs,
// which the receiver must linearize). EAL runs with --no-huge.
#include <gtest/gtest.h>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdlib>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "../cc/golden_trace.h"
#include "../engine/workload.h"
#include "tita/cc/plugin.h"
#include "tita/dpdk/host.h"
#include "tita/fabric/pfc.h"

namespace tita::test {
namespace {

using namespace engine;

// Two ports joined back to back: what A transmits, B receives, and the reverse.
// Returns their port numbers (each test makes its own pair: closing a port frees it).
std::pair<int, int> ring_pair() {
  static int n = 0;
  const std::string id = std::to_string(n++);
  rte_ring* ab = rte_ring_create(("tita_ab" + id).c_str(), 4096, static_cast<int>(rte_socket_id()),
                                 RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* ba = rte_ring_create(("tita_ba" + id).c_str(), 4096, static_cast<int>(rte_socket_id()),
                                 RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (ab == nullptr || ba == nullptr) return {-1, -1};
  return {rte_eth_from_rings(("tita_ring_a" + id).c_str(), &ba, 1, &ab, 1, rte_socket_id()),
          rte_eth_from_rings(("tita_ring_b" + id).c_str(), &ab, 1, &ba, 1, rte_socket_id())};
}

struct AlignedBuffer {
  explicit AlignedBuffer(size_t n) : len((n + 4095) & ~size_t{4095}) {
    data = static_cast<uint8_t*>(std::aligned_alloc(4096, len));
  }
  ~AlignedBuffer() { std::free(data); }
  uint8_t* data;
  size_t len;
};

// A crossed net_ring pair with an EngineHost on each port and one RC QP each,
// connected, with a registered buffer of `bytes` per side.
struct RingPair {
  dpdk::Port port[2];
  std::unique_ptr<dpdk::EngineHost> host[2];
  std::unique_ptr<AlignedBuffer> mem[2];
  Endpoint ep[2];
  uint8_t traffic_class = 0;  // of both QPs
  dpdk::HostOptions options[2];  // each host's (zero_copy comes from open())

  // Polls both hosts for ns of the TSC clock.
  void run_for(uint64_t ns) {
    dpdk::TscClock clock;
    const uint64_t until = clock.now_ns() + ns;
    while (clock.now_ns() < until) {
      host[0]->poll_once(clock.now_ns());
      host[1]->poll_once(clock.now_ns());
    }
  }
  // A WRITE of the first len bytes of A's buffer to B's.
  int post_write(uint32_t len) {
    Sge sge{reinterpret_cast<uint64_t>(ep[0].buf), len, ep[0].mr.lkey};
    SendWr wr;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.rdma.remote_addr = reinterpret_cast<uint64_t>(ep[1].buf);
    wr.rdma.rkey = ep[1].mr.rkey;
    return ep[0].eng->post_send(ep[0].qp, &wr, nullptr);
  }

  testing::AssertionResult open(const dpdk::PortConfig (&pc)[2], bool zero_copy, uint64_t bytes) {
    const auto [pa, pb] = ring_pair();
    if (pa < 0 || pb < 0) return testing::AssertionFailure() << "rte_eth_from_rings";
    std::string err;
    if (port[0].open(std::to_string(pa), pc[0], &err) != 0 || port[1].open(std::to_string(pb), pc[1], &err) != 0) {
      return testing::AssertionFailure() << err;
    }
    for (int i = 0; i < 2; ++i) {
      EngineConfig cfg;
      cfg.gid = wire::Gid::from_ipv4(0x0a000001 + i);
      cfg.line_rate_bps = 10'000'000'000;
      dpdk::HostOptions o = options[i];
      o.zero_copy = zero_copy;
      host[i] = std::make_unique<dpdk::EngineHost>(port[i], 0, cfg, o);
      Engine& e = host[i]->engine();
      mem[i] = std::make_unique<AlignedBuffer>(bytes);
      if (zero_copy && host[i]->register_memory(mem[i]->data, mem[i]->len, &err) != 0) {
        return testing::AssertionFailure() << err;
      }
      const uint32_t pd = e.alloc_pd();
      ep[i].eng = &e;
      ep[i].buf = mem[i]->data;
      ep[i].len = mem[i]->len;
      if (e.reg_mr(pd, ep[i].buf, ep[i].len, kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead,
                   &ep[i].mr) != 0 ||
          e.create_cq(8192, &ep[i].cq) != 0 ||
          e.create_qp(pd, {.send_cq = ep[i].cq, .recv_cq = ep[i].cq, .max_send_wr = 512, .max_recv_wr = 512},
                      &ep[i].qp) != 0) {
        return testing::AssertionFailure() << "MR, CQ or QP";
      }
    }
    for (int i = 0; i < 2; ++i) {
      const int peer = 1 - i;
      QpAttr a;
      a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead;
      a.path_mtu = 4096;
      a.dest_qp_num = ep[peer].qp;
      a.ah_attr.dgid = ep[peer].eng->config().gid;
      std::memcpy(a.ah_attr.dmac, port[peer].mac(), 6);
      a.ah_attr.traffic_class = traffic_class;
      a.timeout = 10;
      if (connect_rc(*ep[i].eng, ep[i].qp, a, &err) != 0) return testing::AssertionFailure() << err;
    }
    return testing::AssertionSuccess();
  }
};

class DpdkRing : public testing::TestWithParam<bool> {};

TEST_P(DpdkRing, EveryVerbIntact) {
  const bool zero_copy = GetParam();
  uint64_t bytes;
  const auto msgs = verb_workload(4096, 400, 5, &bytes, 65536);
  dpdk::PortConfig pc;
  pc.mbufs = 4095;
  RingPair r;
  ASSERT_TRUE(r.open({pc, pc}, zero_copy, bytes));
  dpdk::TscClock clock;
  const uint64_t give_up = clock.now_ns() + 60'000'000'000ull;
  auto step = [&] {
    r.host[0]->poll_once(clock.now_ns());
    r.host[1]->poll_once(clock.now_ns());
    return clock.now_ns() < give_up;
  };
  auto settle = [&] {
    const uint64_t until = clock.now_ns() + 20'000'000;
    while (clock.now_ns() < until) step();
  };
  EXPECT_TRUE(run_verb_workload(r.ep[0], r.ep[1], msgs, step, settle));
  if (zero_copy) {
    EXPECT_GT(r.host[0]->counters().tx_zero_copy, 0u);
    EXPECT_GT(r.host[1]->counters().rx_linearized, 0u);  // chained mbufs arrive chained over a ring
    // Every zero-copy frame of a send WR was held until the receiving port
    // freed it, and every hold came back.
    EXPECT_GT(r.host[0]->counters().holds_released, 0u);
    EXPECT_EQ(r.host[0]->holds_out(), 0u);
    EXPECT_EQ(r.host[0]->counters().tx_holds_full, 0u);
    EXPECT_EQ(r.ep[0].eng->counters().stale_releases, 0u);
  } else {
    EXPECT_EQ(r.host[0]->counters().tx_zero_copy, 0u);
  }
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(r.host[i]->counters().tx_no_mbuf, 0u);
    EXPECT_EQ(r.host[i]->counters().tx_oversize, 0u);
    EXPECT_EQ(r.ep[i].eng->counters().rx_dropped, 0u);
  }
}

// Zero copy over a real port: a WRITE's frames sent twice (the retransmission
// timer fired while the receiver was not polling) are still in the receiver's
// ring, unread, when the first copies' ACK comes back. The WR may not complete
// then - the port still refers to its memory - but only when the receiver has
// taken and freed the second copies.
TEST(DpdkZeroCopy, AWriteCompletesOnlyWhenThePortHasFreedEveryFrameOfIt) {
  RingPair r;
  r.options[1].burst = 1;  // the receiver takes one frame per poll
  dpdk::PortConfig pc;
  pc.mbufs = 4095;
  ASSERT_TRUE(r.open({pc, pc}, true, 1 << 20));
  dpdk::TscClock clock;
  std::memset(r.ep[0].buf, 0x5a, 16384);
  ASSERT_EQ(r.post_write(16384), 0);
  const QpCounters& q = *r.ep[0].eng->qp_counters(r.ep[0].qp);
  const uint64_t give_up = clock.now_ns() + 5'000'000'000ull;
  while (q.retransmitted_packets == 0 && clock.now_ns() < give_up) r.host[0]->poll_once(clock.now_ns());
  ASSERT_GT(q.retransmitted_packets, 0u) << "no retransmission while the receiver slept";
  const uint64_t copies = q.tx_data_packets;
  ASSERT_GT(copies, 4u);
  ASSERT_EQ(r.host[0]->holds_out(), copies) << "every frame is in the receiver's ring, held";
  // The receiver takes the first four: the WRITE is whole, it acknowledges.
  for (int i = 0; i < 4; ++i) r.host[1]->poll_once(clock.now_ns());
  QpInfo info;
  for (const uint64_t until = clock.now_ns() + 20'000'000; clock.now_ns() < until;) {
    r.host[0]->poll_once(clock.now_ns());
    r.ep[0].eng->qp_info(r.ep[0].qp, &info);
    if (info.snd_una == info.snd_nxt) break;
  }
  ASSERT_EQ(info.snd_una, info.snd_nxt) << "the ACK did not come";
  r.host[0]->poll_once(clock.now_ns());
  EXPECT_EQ(r.host[0]->holds_out(), copies - 4);
  WorkCompletion wc;
  EXPECT_EQ(r.ep[0].eng->poll_cq(r.ep[0].cq, 1, &wc), 0) << "completed while the port held its frames";
  EXPECT_EQ(r.ep[0].eng->counters().completions_held, 1u);
  // The receiver takes (and frees) the second copies: now it completes.
  r.run_for(2'000'000);
  ASSERT_EQ(r.ep[0].eng->poll_cq(r.ep[0].cq, 1, &wc), 1);
  EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_EQ(r.host[0]->holds_out(), 0u);
  EXPECT_EQ(r.host[0]->counters().holds_released, copies);
  EXPECT_EQ(std::memcmp(r.ep[0].buf, r.ep[1].buf, 16384), 0);
}

// A sender whose mempool runs dry (511 mbufs, a receiver that does not poll for
// the first 20 ms, so its frames sit in the ring): every frame it could not send
// is counted, none vanishes, and loss recovery still delivers every byte.
TEST(DpdkRingStarved, FramesTheHostCannotSendAreCountedAndRecovered) {
  uint64_t bytes;
  const auto msgs = verb_workload(4096, 240, 11, &bytes, 262144);
  dpdk::PortConfig small, normal;
  small.mbufs = 511;
  normal.mbufs = 4095;
  RingPair r;
  ASSERT_TRUE(r.open({small, normal}, false, bytes));
  dpdk::TscClock clock;
  const uint64_t start = clock.now_ns();
  const uint64_t give_up = start + 60'000'000'000ull;
  auto step = [&] {
    r.host[0]->poll_once(clock.now_ns());
    if (clock.now_ns() > start + 20'000'000) r.host[1]->poll_once(clock.now_ns());
    return clock.now_ns() < give_up;
  };
  auto settle = [&] {
    const uint64_t until = clock.now_ns() + 20'000'000;
    while (clock.now_ns() < until) step();
  };
  EXPECT_TRUE(run_verb_workload(r.ep[0], r.ep[1], msgs, step, settle));
  const dpdk::HostCounters& c = r.host[0]->counters();
  EXPECT_GT(c.tx_no_mbuf, 0u);
  EXPECT_EQ(c.tx_oversize, 0u);
  // What the host could not send was retransmitted by the engine.
  uint64_t retx = 0;
  if (const QpCounters* q = r.ep[0].eng->qp_counters(r.ep[0].qp)) retx = q->retransmitted_packets;
  EXPECT_GT(retx, 0u);
  std::printf("starved sender: %lu frames sent, %lu not sent (no mbuf), %lu retransmitted\n",
              static_cast<unsigned long>(c.tx_frames), static_cast<unsigned long>(c.tx_no_mbuf),
              static_cast<unsigned long>(retx));
}

// The host honours PFC from its link as a NIC's MAC does: a pause for the QP's
// priority (DSCP 26 -> 3) holds its frames until the resume; a pause for
// another priority holds nothing.
TEST(DpdkPfc, APausedPriorityWaitsForItsResume) {
  dpdk::PortConfig pc;
  RingPair r;
  r.traffic_class = 26 << 2;  // AF31: priority 3 by DSCP >> 3
  ASSERT_TRUE(r.open({pc, pc}, false, 1 << 20));
  // B sends A a PFC frame (what a switch port does), as its port's MAC would.
  auto pfc = [&](uint8_t priority, uint16_t quanta) {
    fabric::PfcInfo info;
    info.class_enable = static_cast<uint8_t>(1u << priority);
    info.quanta[priority] = quanta;
    rte_mbuf* m = rte_pktmbuf_alloc(r.port[1].pool());
    ASSERT_NE(m, nullptr);
    auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, fabric::kPfcFrameBytes));
    ASSERT_EQ(fabric::build_pfc_frame(p, fabric::kPfcFrameBytes, r.port[1].mac(), info), fabric::kPfcFrameBytes);
    ASSERT_EQ(r.port[1].tx(0, &m, 1), 1);
  };
  auto write = [&](uint8_t fill) {
    std::memset(r.ep[0].buf, fill, 65536);
    ASSERT_EQ(r.post_write(65536), 0);
  };
  auto done = [&] {
    WorkCompletion wc;
    const int n = r.ep[0].eng->poll_cq(r.ep[0].cq, 1, &wc);
    EXPECT_TRUE(n == 0 || wc.status == WcStatus::kSuccess);
    return n == 1;
  };
  // Paused on priority 3 for 0xffff quanta (3.4 ms at the ring port's 10 Gb/s): nothing arrives.
  pfc(3, 0xffff);
  r.run_for(200'000);
  write(0x5a);
  r.run_for(1'000'000);
  EXPECT_EQ(r.host[1]->counters().rx_frames, 0u);
  EXPECT_FALSE(done());
  EXPECT_EQ(r.host[0]->counters().rx_pfc_pauses, 1u);
  EXPECT_GT(r.host[0]->counters().pfc_held, 0u);
  // The resume releases it: the WRITE completes, its bytes intact.
  pfc(3, 0);
  r.run_for(2'000'000);
  EXPECT_TRUE(done());
  EXPECT_EQ(r.host[0]->counters().rx_pfc_resumes, 1u);
  EXPECT_EQ(std::memcmp(r.ep[1].buf, r.ep[0].buf, 65536), 0);
  // A pause for another priority (4) holds nothing back.
  pfc(4, 0xffff);
  r.run_for(200'000);
  write(0xa5);
  r.run_for(2'000'000);
  EXPECT_TRUE(done());
  EXPECT_EQ(std::memcmp(r.ep[1].buf, r.ep[0].buf, 65536), 0);
}

// The pfc_storm_priority fault (tita-perf --inject-fault pfc-storm): B pauses
// its link's priority 3 every millisecond, as a NIC with a wedged receive path
// does; A, which honours PFC, sends B nothing on that priority while it lasts.
TEST(DpdkPfc, AStormingHostPausesItsLinkForGood) {
  dpdk::PortConfig pc;
  RingPair r;
  r.traffic_class = 26 << 2;  // priority 3
  r.options[1].pfc_storm_priority = 3;
  ASSERT_TRUE(r.open({pc, pc}, false, 1 << 20));
  r.run_for(500'000);
  ASSERT_EQ(r.post_write(4096), 0);
  r.run_for(10'000'000);
  // About one XOFF a millisecond (the VM may deschedule the loop now and then).
  EXPECT_GE(r.host[1]->counters().tx_pfc_frames, 5u);
  // Each one arrived (the last may still be on the ring).
  EXPECT_LE(r.host[0]->counters().rx_pfc_pauses, r.host[1]->counters().tx_pfc_frames);
  EXPECT_GE(r.host[0]->counters().rx_pfc_pauses + 1, r.host[1]->counters().tx_pfc_frames);
  EXPECT_EQ(r.host[1]->counters().rx_frames, 0u);  // the WRITE waits at A
  WorkCompletion wc;
  EXPECT_EQ(r.ep[0].eng->poll_cq(r.ep[0].cq, 1, &wc), 0);
  EXPECT_EQ(r.host[0]->counters().tx_pfc_frames, 0u);  // a healthy host sends none
}

// Two engines per side, on two queues of one port pair, as two lcores would run
// them. QP pairs cross engines (A0 <-> B1, A1 <-> B0), and each sender's frames
// land on the receiver's queue of the same number, so every data frame reaches
// the wrong engine first and must be handed to its owner through the inbox.
TEST(DpdkSteering, FramesReachTheEngineThatOwnsTheirQp) {
  static int n = 0;
  const std::string id = "st" + std::to_string(n++);
  rte_ring* ab[2];
  rte_ring* ba[2];
  for (int q = 0; q < 2; ++q) {
    ab[q] = rte_ring_create((id + "_ab" + std::to_string(q)).c_str(), 4096, static_cast<int>(rte_socket_id()),
                            RING_F_SP_ENQ | RING_F_SC_DEQ);
    ba[q] = rte_ring_create((id + "_ba" + std::to_string(q)).c_str(), 4096, static_cast<int>(rte_socket_id()),
                            RING_F_SP_ENQ | RING_F_SC_DEQ);
  }
  const int pa = rte_eth_from_rings((id + "_a").c_str(), ba, 2, ab, 2, rte_socket_id());
  const int pb = rte_eth_from_rings((id + "_b").c_str(), ab, 2, ba, 2, rte_socket_id());
  ASSERT_GE(pa, 0);
  ASSERT_GE(pb, 0);
  dpdk::Port port[2];
  std::string err;
  dpdk::PortConfig pc;
  pc.rx_queues = pc.tx_queues = 2;
  pc.mbufs = 8191;
  ASSERT_EQ(port[0].open(std::to_string(pa), pc, &err), 0) << err;
  ASSERT_EQ(port[1].open(std::to_string(pb), pc, &err), 0) << err;

  // host[side][engine]
  std::unique_ptr<dpdk::EngineHost> host[2][2];
  dpdk::Steering steer[2][2];
  for (int side = 0; side < 2; ++side) {
    const auto inboxes = dpdk::Steering::make_inboxes(id + "_" + std::to_string(side), 2);
    ASSERT_EQ(inboxes.size(), 2u);
    for (uint16_t k = 0; k < 2; ++k) {
      steer[side][k].self = k;
      steer[side][k].inbox = inboxes;
      EngineConfig cfg;
      cfg.gid = wire::Gid::from_ipv4(0x0a000001 + side);
      host[side][k] = std::make_unique<dpdk::EngineHost>(
          port[side], k, cfg, dpdk::HostOptions{.zero_copy = false, .steering = &steer[side][k]});
    }
  }
  uint64_t bytes;
  const auto msgs = verb_workload(1024, 150, 9, &bytes, 20000);
  dpdk::TscClock clock;
  auto step = [&] {
    for (auto& side : host) {
      for (auto& h : side) h->poll_once(clock.now_ns());
    }
    return true;
  };
  auto settle = [&] {
    for (int i = 0; i < 20000; ++i) step();
  };
  for (int pair = 0; pair < 2; ++pair) {
    // A's engine `pair` talks to B's engine 1 - pair.
    Endpoint ep[2];
    std::vector<uint8_t> mem[2];
    dpdk::EngineHost* h[2] = {host[0][pair].get(), host[1][1 - pair].get()};
    for (int i = 0; i < 2; ++i) {
      Engine& e = h[i]->engine();
      mem[i].resize(bytes);
      const uint32_t pd = e.alloc_pd();
      ep[i].eng = &e;
      ep[i].buf = mem[i].data();
      ep[i].len = mem[i].size();
      ASSERT_EQ(e.reg_mr(pd, ep[i].buf, ep[i].len, kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead,
                         &ep[i].mr),
                0);
      ASSERT_EQ(e.create_cq(4096, &ep[i].cq), 0);
      ASSERT_EQ(e.create_qp(pd, {.send_cq = ep[i].cq, .recv_cq = ep[i].cq, .max_send_wr = 256, .max_recv_wr = 256},
                            &ep[i].qp),
                0);
    }
    // Each engine's QPNs come from its own range.
    EXPECT_EQ(ep[1].qp >> 16, static_cast<uint32_t>(1 - pair));
    for (int i = 0; i < 2; ++i) {
      const int peer = 1 - i;
      QpAttr a;
      a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead;
      a.dest_qp_num = ep[peer].qp;
      a.ah_attr.dgid = ep[peer].eng->config().gid;
      std::memcpy(a.ah_attr.dmac, port[peer].mac(), 6);
      a.timeout = 10;
      ASSERT_EQ(connect_rc(*ep[i].eng, ep[i].qp, a, &err), 0) << err;
      // net_ring has no rte_flow: the rule is refused and the inbox carries the frames.
      EXPECT_NE(h[i]->steer_qp(ep[i].qp, ep[peer].qp, &err), 0);
    }
    EXPECT_TRUE(run_verb_workload(ep[0], ep[1], msgs, step, settle)) << "pair " << pair;
  }
  for (int side = 0; side < 2; ++side) {
    for (int k = 0; k < 2; ++k) {
      const dpdk::HostCounters& c = host[side][k]->counters();
      EXPECT_GT(c.rx_handed_off, 0u) << "side " << side << " engine " << k;
      EXPECT_GT(c.rx_from_inbox, 0u) << "side " << side << " engine " << k;
      EXPECT_EQ(c.rx_inbox_full, 0u);
      EXPECT_EQ(host[side][k]->engine().counters().rx_unknown_qp, 0u);
    }
  }
}

// The golden trace through the DPDK host: an EngineHost on one port of a crossed
// net_ring pair sends a 600 KB WRITE; the test answers on the other port with the
// scripted ACKs and CNPs (tests/cc/golden_trace.h), one frame per poll, on a
// stepped clock; the same algorithm fed the same events directly must decide the
// same rate and window before every frame the engine receives. Plug-ins named
// in TITA_TEST_CC_PLUGIN (the cc-plugin test sets it) run the same trace.
class DpdkGolden : public testing::TestWithParam<std::string> {};

TEST_P(DpdkGolden, DirectAndThroughTheHostDecideAlike) {
  const std::string cc = GetParam();
  const auto [pa, pb] = ring_pair();
  ASSERT_GE(pa, 0);
  ASSERT_GE(pb, 0);
  dpdk::Port port[2];
  std::string err;
  dpdk::PortConfig pc;
  pc.mbufs = 4095;
  ASSERT_EQ(port[0].open(std::to_string(pa), pc, &err), 0) << err;
  ASSERT_EQ(port[1].open(std::to_string(pb), pc, &err), 0) << err;
  const uint64_t rate = 100'000'000'000;
  const uint32_t mtu = 1024;
  const uint64_t total = 600 * 1024;
  EngineConfig cfg;
  cfg.gid = wire::Gid::from_ipv4(0x0b000001);
  cfg.line_rate_bps = rate;
  cfg.base_rtt_ns = 12'000;
  dpdk::EngineHost host(port[0], 0, cfg, dpdk::HostOptions{.zero_copy = false});
  Engine& e = host.engine();
  std::vector<uint8_t> mem(total);
  const uint32_t pd = e.alloc_pd();
  MrInfo mr;
  ASSERT_EQ(e.reg_mr(pd, mem.data(), mem.size(), kAccessLocalWrite, &mr), 0);
  uint32_t cq = 0, qpn = 0;
  ASSERT_EQ(e.create_cq(64, &cq), 0);
  ASSERT_EQ(e.create_qp(pd, {.send_cq = cq, .recv_cq = cq, .max_send_wr = 4, .max_recv_wr = 4}, &qpn), 0);
  const uint32_t peer_qpn = 0x99;
  const wire::Gid peer_gid = wire::Gid::from_ipv4(0x0b000901);
  QpAttr a;
  a.path_mtu = mtu;
  a.dest_qp_num = peer_qpn;
  a.ah_attr.dgid = peer_gid;
  std::memcpy(a.ah_attr.dmac, port[1].mac(), 6);
  a.timeout = 0;  // no RTO in this script
  ASSERT_EQ(connect_rc(e, qpn, a, &err), 0) << err;
  ASSERT_EQ(e.set_cc(qpn, cc, {}, &err), 0) << err;
  golden::Direct direct;
  ASSERT_EQ(direct.init(cc, cc::FlowConfig{rate, 12'000, mtu}, total, mtu, &err), 0) << err;

  // The peer's frames: the engine's addresses, its QP.
  wire::FrameFields base;
  std::memcpy(base.dst_mac, port[0].mac(), 6);
  std::memcpy(base.src_mac, port[1].mac(), 6);
  base.src_gid = peer_gid;
  base.dst_gid = cfg.gid;
  base.dest_qp = qpn;
  struct Due {
    uint64_t at;
    std::vector<uint8_t> frame;
  };
  std::deque<Due> answers;

  Sge sge{mr.addr, static_cast<uint32_t>(total), mr.lkey};
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.rdma.remote_addr = 0x10000;
  wr.rdma.rkey = 0x1234;
  ASSERT_EQ(e.post_send(qpn, &wr, nullptr), 0);

  const uint64_t start = 1'000'000, step = 250, ack_delay = 8'000;
  bool done = false;
  uint64_t now = start;
  for (; now < start + 3'000'000 && !done; now += step) {
    // At most one frame from the peer per poll, so the engine's state before each
    // frame is what qp_info() shows.
    if (!answers.empty() && answers.front().at <= now) {
      QpInfo info;
      e.qp_info(qpn, &info);
      direct.compare(info.rate_bps, info.cwnd_bytes, "before a frame", now);
      const std::vector<uint8_t>& f = answers.front().frame;
      direct.received(now, f.data(), static_cast<uint32_t>(f.size()));
      rte_mbuf* m = rte_pktmbuf_alloc(port[1].pool());
      ASSERT_NE(m, nullptr);
      std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
      ASSERT_EQ(port[1].tx(0, &m, 1), 1);
      answers.pop_front();
    }
    // The engine's poll: frames in, then timers, then sends, all at `now`.
    host.poll_once(now);
    direct.timer(now, now);
    rte_mbuf* rx[64];
    for (uint16_t n; (n = port[1].rx(0, rx, 64)) > 0;) {
      for (uint16_t i = 0; i < n; ++i) {
        const auto* p = rte_pktmbuf_mtod(rx[i], const uint8_t*);
        const uint32_t len = rx[i]->data_len;
        direct.sent(now, p, len);
        wire::Packet pkt;
        if (wire::parse(p, len, &pkt, {.verify_icrc = false}) == wire::ParseError::kOk &&
            golden::is_data(pkt.opcode())) {
          const uint32_t ts = pkt.telemetry() ? pkt.telemetry()->ts_ns.get() : 0;
          uint8_t frames[2][256];
          uint32_t flen[2];
          const int k = golden::answer_frames(base, pkt.psn(), ts, frames, flen);
          for (int j = 0; j < k; ++j) answers.push_back({now + ack_delay, {frames[j], frames[j] + flen[j]}});
        }
      }
      rte_pktmbuf_free_bulk(rx, n);
    }
    WorkCompletion wc;
    done = e.poll_cq(cq, 1, &wc) == 1;
    if (done) {
      EXPECT_EQ(wc.status, WcStatus::kSuccess);
    }
  }
  QpInfo info;
  e.qp_info(qpn, &info);
  direct.compare(info.rate_bps, info.cwnd_bytes, "at the end", now);
  std::printf("  %s: %u ACKs, %u CNPs, %u comparisons, %u mismatches, final rate %lu b/s\n", cc.c_str(), direct.acks,
              direct.cnps, direct.compared, direct.mismatches, static_cast<unsigned long>(direct.rate_bps()));
  EXPECT_TRUE(done) << "the WRITE did not complete";
  EXPECT_GT(direct.acks, 300u) << "the script did not run";
  EXPECT_EQ(direct.mismatches, 0u) << "first difference: " << direct.first;
}

std::vector<std::string> golden_algorithms() {
  std::vector<std::string> names;
  for (const cc::AlgorithmInfo& a : cc::algorithms()) {
    if (a.name != "none") names.emplace_back(a.name);
  }
  if (const char* env = std::getenv("TITA_TEST_CC_PLUGIN"); env != nullptr && *env != '\0') {
    std::string why;
    if (cc::load_plugin(env, &why) != 0) {
      std::fprintf(stderr, "ring_test: TITA_TEST_CC_PLUGIN: %s\n", why.c_str());
      std::exit(2);
    }
    for (const cc::PluginOps* ops : cc::plugins()) names.emplace_back(ops->info.name);
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Dpdk, DpdkGolden, testing::ValuesIn(golden_algorithms()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

INSTANTIATE_TEST_SUITE_P(Dpdk, DpdkRing, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "ZeroCopy" : "Copy"; });

}  // namespace
}  // namespace tita::test

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  // In-memory EAL: no hugepages, no PCI scan, a private runtime directory.
  const char* eal[] = {"ring_test", "--no-huge", "-m", "512", "--no-pci", "--file-prefix=tita-ring-test",
                       "--log-level=lib.eal:error", "--log-level=pmd:error"};
  if (rte_eal_init(static_cast<int>(std::size(eal)), const_cast<char**>(eal)) < 0) {
    std::fprintf(stderr, "ring_test: EAL failed to start\n");
    return 1;
  }
  const int rc = RUN_ALL_TESTS();
  rte_eal_cleanup();
  return rc;
}
