// Two engines over the in-memory network: every verb, many message sizes, both
// recovery modes, under loss, duplication, reordering, corruption and delay.
// Asserted: every byte arrives intact, every work request completes exactly once
// with success, and the run ends (nothing hangs).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "pair.h"
#include "sanitized.h"
#include "tita/cc/cc.h"
#include "workload.h"

namespace tita::test {
namespace {

using namespace engine;

struct Case {
  Recovery recovery;
  uint32_t mtu;
  double loss;
};

std::string name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(c.recovery == Recovery::kGoBackN ? "GoBackN" : "SelectiveRepeat") + "_Mtu" +
         std::to_string(c.mtu) + "_Loss" + std::to_string(static_cast<int>(c.loss * 1000)) + "permille";
}

class Transfer : public testing::TestWithParam<Case> {};

TEST_P(Transfer, EveryVerbIntactUnderLoss) {
  const Case c = GetParam();
  QpAttr attr;
  attr.path_mtu = c.mtu;
  attr.recovery = c.recovery;
  attr.timeout = 8;  // 1 ms: the loss here is recovered by NAKs; timeouts catch lost tails
  uint64_t bytes;
  const auto msgs = verb_workload(c.mtu, 1500, 7 + c.mtu, &bytes);
  Pair p(25'000'000'000, 2'000, bytes, attr, 42);
  p.net.set_faults_both({.loss = c.loss});
  run_workload(p, msgs, 30'000'000'000);
  if (c.loss > 0) {
    EXPECT_GT(p.net.stats().lost, 0u);
    const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
    EXPECT_GT(q.retransmitted_packets, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Engine, Transfer,
    testing::Values(Case{Recovery::kGoBackN, 1024, 0}, Case{Recovery::kGoBackN, 4096, 0},
                    Case{Recovery::kGoBackN, 1024, 0.001}, Case{Recovery::kGoBackN, 4096, 0.001},
                    Case{Recovery::kGoBackN, 1024, 0.01}, Case{Recovery::kGoBackN, 4096, 0.01},
                    Case{Recovery::kGoBackN, 1024, 0.05}, Case{Recovery::kGoBackN, 4096, 0.05},
                    Case{Recovery::kSelectiveRepeat, 1024, 0}, Case{Recovery::kSelectiveRepeat, 4096, 0},
                    Case{Recovery::kSelectiveRepeat, 1024, 0.001}, Case{Recovery::kSelectiveRepeat, 4096, 0.001},
                    Case{Recovery::kSelectiveRepeat, 1024, 0.01}, Case{Recovery::kSelectiveRepeat, 4096, 0.01},
                    Case{Recovery::kSelectiveRepeat, 1024, 0.05}, Case{Recovery::kSelectiveRepeat, 4096, 0.05}),
    name);

TEST(TransferFaults, DuplicationReorderingCorruptionAndJitter) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    SCOPED_TRACE(rec == Recovery::kGoBackN ? "go-back-N" : "selective repeat");
    QpAttr attr;
    attr.path_mtu = 1024;
    attr.recovery = rec;
    attr.timeout = 8;
    uint64_t bytes;
    const auto msgs = verb_workload(1024, 800, 3, &bytes);
    Pair p(25'000'000'000, 2'000, bytes, attr, 9);
    p.net.set_faults_both(
        {.loss = 0.005, .duplicate = 0.01, .corrupt = 0.01, .reorder = 0.01, .reorder_ns = 15'000, .jitter_ns = 300});
    run_workload(p, msgs, 30'000'000'000);
    const auto& s = p.net.stats();
    EXPECT_GT(s.duplicated, 0u);
    EXPECT_GT(s.corrupted, 0u);
    EXPECT_GT(s.reordered, 0u);
    // Corrupted frames were caught by the parser, not executed.
    uint64_t parse_errors = 0;
    for (int i = 0; i < 2; ++i) {
      for (uint64_t n : p.eng(i).counters().rx_parse_errors) parse_errors += n;
    }
    EXPECT_GT(parse_errors, 0u);
  }
}

TEST(TransferLarge, SixteenMegabyteMessages) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    for (double loss : {0.0, 0.01}) {
      SCOPED_TRACE(std::to_string(loss));
      QpAttr attr;
      attr.path_mtu = 4096;
      attr.recovery = rec;
      attr.timeout = 8;
      const uint32_t len = 16u << 20;
      const std::vector<Message> msgs = {{WrOpcode::kRdmaWrite, len, 0, 0},
                                         {WrOpcode::kSend, len, len, len},
                                         {WrOpcode::kRdmaRead, len, 2ull * len, 2ull * len}};
      Pair p(100'000'000'000, 1'000, 3ull * len + 64, attr, 5);
      p.net.set_faults_both({.loss = loss});
      run_workload(p, msgs, 60'000'000'000);
    }
  }
}

// Packets of 1000 B payload (the HPCC simulator's PACKET_PAYLOAD_SIZE) on a
// 1024 path MTU: every verb intact under loss, full packets exactly 1000 B.
TEST(TransferPayload, ThousandBytePacketsCarryEveryVerbIntact) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    SCOPED_TRACE(rec == Recovery::kGoBackN ? "go-back-N" : "selective repeat");
    QpAttr attr;
    attr.path_mtu = 1024;
    attr.payload_bytes = 1000;
    attr.recovery = rec;
    attr.timeout = 8;
    uint64_t bytes;
    const auto msgs = verb_workload(1000, 600, 11, &bytes);
    Pair p(25'000'000'000, 2'000, bytes, attr, 17);
    std::map<uint32_t, uint64_t> sizes;  // payload length -> frames
    p.net.set_faults_both({.loss = 0.01, .drop_if = [&](const std::vector<uint8_t>& f) {
                             wire::Packet pkt;
                             if (wire::parse(f.data(), static_cast<uint32_t>(f.size()), &pkt) == wire::ParseError::kOk &&
                                 pkt.payload_len > 0)
                               ++sizes[pkt.payload_len];
                             return false;
                           }});
    run_workload(p, msgs, 30'000'000'000);
    ASSERT_FALSE(sizes.empty());
    EXPECT_EQ(sizes.rbegin()->first, 1000u);
    EXPECT_GT(sizes[1000], 1000u);
  }
}

// Every congestion control of tita writing to a peer that speaks no tita
// extension (Linux rxe, a RoCE NIC): its ACKs echo no telemetry trailer, so
// no INT and no echoed timestamp reach the sender, and it sends no CNP. Under
// 1% loss each way, each algorithm must deliver everything intact at a sane
// rate: the RTT comes from the sender's own probe, INT-based windows hold the
// path's BDP, none collapses to its floor.
TEST(TransferWithoutTelemetry, EveryAlgorithmKeepsSendingTowardsAPlainRocePeer) {
  for (const cc::AlgorithmInfo& algo : cc::algorithms()) {
    SCOPED_TRACE(std::string(algo.name));
    for (uint64_t seed = 3; seed < 3 + static_cast<uint64_t>(rounds(3, 3)); ++seed) {  // one seed under the sanitizers
      QpAttr attr;
      attr.path_mtu = 1024;
      attr.recovery = Recovery::kGoBackN;
      attr.timeout = 8;
      const uint64_t rate = 25'000'000'000;
      const uint32_t len = 1u << 20;
      std::vector<Message> msgs;
      for (uint64_t i = 0; i < 8; ++i) msgs.push_back({WrOpcode::kRdmaWrite, len, i * len, i * len});
      Pair p(rate, 2'000, 8ull * len, attr, seed, [](EngineConfig& c, int i) {
        if (i == 1) c.telemetry = false;  // the plain RoCE peer
      });
      std::string err;
      ASSERT_EQ(p.eng(0).set_cc(p.side[0].qp, algo.name, {}, &err), 0) << err;
      p.net.set_faults_both({.loss = 0.01});
      const uint64_t t0 = p.net.now();
      run_workload(p, msgs, 10'000'000'000);
      const double secs = static_cast<double>(p.net.now() - t0) * 1e-9;
      const double goodput = 8.0 * 8 * len / secs;
      const QpCounters& q = *p.eng(0).qp_counters(p.side[0].qp);
      QpInfo info;
      p.eng(0).qp_info(p.side[0].qp, &info);
      // Expect: samples from the probe only (nothing echoed), a tenth of the
      // line rate at least, and a rate off the floor at the end. (One probe
      // per RTT while sending; a lost sequence NAK - one per gap, as IBA has
      // it - costs a timeout of about a millisecond without samples.)
      EXPECT_GT(q.rtt_samples, 10u);
      EXPECT_EQ(q.int_records_received, 0u);
      EXPECT_GT(goodput, 0.1 * static_cast<double>(rate)) << p.describe();
      EXPECT_GT(info.rate_bps, rate / 20) << "seed " << seed;
    }
  }
}

// ACK coalescing (EngineConfig::ack_req_every, 8 by default). An algorithm
// without INT gets an ACK per 8 packets and still learns of every CE mark: a
// tita responder's ACK counts the marks of all the packets it covers. An INT
// algorithm gets an ACK per packet, each with its packet's telemetry.
TEST(AckCoalescing, FewerAcksCarryEveryCeMark) {
  for (const char* algo : {"dcqcn", "swift", "hpcc"}) {
    SCOPED_TRACE(algo);
    QpAttr attr;
    attr.path_mtu = 1024;
    Pair p(25'000'000'000, 2'000, 4u << 20, attr, 7);
    std::string err;
    ASSERT_EQ(p.eng(0).set_cc(p.side[0].qp, algo, {}, &err), 0) << err;
    p.net.set_faults(0, 1, {.ce_mark = 0.05});
    std::vector<Message> msgs;
    for (uint64_t i = 0; i < 32; ++i) msgs.push_back({WrOpcode::kRdmaWrite, 64u << 10, i << 16, i << 16});
    run_workload(p, msgs, 10'000'000'000);
    const QpCounters& tx = *p.eng(0).qp_counters(p.side[0].qp);
    const QpCounters& rx = *p.eng(1).qp_counters(p.side[1].qp);
    EXPECT_GT(rx.ecn_ce_received, 50u);
    EXPECT_EQ(tx.ce_echoed, rx.ecn_ce_received);
    EXPECT_EQ(tx.timeouts, 0u);
    if (std::string_view(algo) == "hpcc") {
      EXPECT_GE(rx.acks_sent, tx.tx_data_packets);
    } else {
      EXPECT_LE(rx.acks_sent, tx.tx_data_packets / 8 + msgs.size()) << p.describe();
      EXPECT_GE(rx.acks_sent, tx.tx_data_packets / 16) << p.describe();
    }
  }
}

// A responder that ACKs only what asks for it (IBA's rule; Linux rxe, RoCE
// NICs) and a window of about one packet: each packet that fills the window
// asks, so coalescing never leaves the requester waiting for a timeout.
TEST(AckCoalescing, APacketThatFillsTheWindowAsksForItsAck) {
  QpAttr attr;
  attr.path_mtu = 1024;
  Pair p(10'000'000'000, 2'000, 1u << 20, attr, 7, [](EngineConfig& c, int i) {
    if (i == 1) c.ack_unsolicited = 1'000'000;
  });
  std::string err;
  const std::vector<std::string> params = {"max_cwnd_bdp=0.1"};
  ASSERT_EQ(p.eng(0).set_cc(p.side[0].qp, "swift", params, &err), 0) << err;
  std::vector<Message> msgs;
  for (uint64_t i = 0; i < 16; ++i) msgs.push_back({WrOpcode::kRdmaWrite, 64u << 10, i << 16, i << 16});
  run_workload(p, msgs, 1'000'000'000);
  const QpCounters& tx = *p.eng(0).qp_counters(p.side[0].qp);
  EXPECT_EQ(tx.timeouts, 0u) << p.describe();
  EXPECT_EQ(tx.retransmitted_packets, 0u);
}

// Zero copy (TxFrame::hold): the sending host refers to the payload where it
// lies until its port lets the frame go, which may be long after the ACK. A
// send WR completes (and the application may reuse its memory) only when no
// frame of it, nor of any WR before it, is still held.
constexpr uint32_t kHoldSlotMask = (1u << 21) - 1;  // a token's SQ slot (engine_impl.h)

void post_rdma(Pair& p, uint64_t wr_id, WrOpcode op, uint64_t off, uint32_t len) {
  Sge sge{p.side[0].mr.addr + off, len, p.side[0].mr.lkey};
  SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.rdma.remote_addr = p.side[1].mr.addr + off;
  wr.rdma.rkey = p.side[1].mr.rkey;
  ASSERT_EQ(p.eng(0).post_send(p.side[0].qp, &wr, nullptr), 0);
}

TEST(ZeroCopy, ACompletionWaitsForTheHostToLetItsPayloadGo) {
  QpAttr attr;
  attr.path_mtu = 4096;
  Pair p(25'000'000'000, 2'000, 1 << 20, attr);
  p.net.hold_payload(0, [] { return uint64_t{500'000}; });  // a transmit ring freed 0.5 ms late
  fill_pattern(p.side[0].buf.data(), 1 << 20, 7);
  post_rdma(p, 1, WrOpcode::kRdmaWrite, 0, 16384);
  p.net.run_for(100'000);  // 20 RTTs: acknowledged long ago
  QpInfo info;
  ASSERT_EQ(p.eng(0).qp_info(p.side[0].qp, &info), 0);
  EXPECT_EQ(info.snd_una, info.snd_nxt) << "the responder has acknowledged every packet";
  EXPECT_EQ(p.net.held(0).size(), 4u) << "four frames' payload still held";
  p.poll();
  EXPECT_TRUE(p.completions[0].empty()) << "completed while its payload was held";
  EXPECT_EQ(p.eng(0).counters().completions_held, 1u);
  // A READ behind it completes behind it, though its answer came long ago.
  post_rdma(p, 2, WrOpcode::kRdmaRead, 65536, 8192);
  p.net.run_for(100'000);
  p.poll();
  EXPECT_TRUE(p.completions[0].empty());
  ASSERT_TRUE(p.run(2, 0, p.net.now() + 1'000'000));
  EXPECT_GE(p.net.now(), 500'000u);
  EXPECT_TRUE(p.net.held(0).empty());
  EXPECT_EQ(p.completions[0][0].wr_id, 1u);
  EXPECT_EQ(p.completions[0][1].wr_id, 2u);
  EXPECT_EQ(p.completions[0][1].status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(p.side[0].buf.data(), p.side[1].buf.data(), 16384), 0);
  EXPECT_EQ(p.eng(0).counters().stale_releases, 0u);
}

// Random release delays under loss, in both recovery modes: retransmitted
// frames are held too, and every completion still comes after the last
// release of its WR and of those before it.
TEST(ZeroCopy, NoCompletionWhileAFrameOfItOrBeforeItIsHeld) {
  for (const Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    SCOPED_TRACE(rec == Recovery::kGoBackN ? "go-back-N" : "selective repeat");
    QpAttr attr;
    attr.path_mtu = 1024;
    attr.recovery = rec;
    attr.timeout = 8;
    constexpr uint32_t kWrs = 400;
    constexpr uint64_t kRegion = 65536;
    Pair p(25'000'000'000, 2'000, kWrs * kRegion, attr, 9);
    p.net.set_faults_both({.loss = 0.01});
    std::mt19937_64 rng(5);
    p.net.hold_payload(0, [&rng] { return rng() % 40'000; });
    fill_pattern(p.side[0].buf.data(), p.side[0].buf.size(), 3);
    fill_pattern(p.side[1].buf.data(), p.side[1].buf.size(), 4);
    const uint32_t sizes[] = {1, 1000, 1024, 4096, 10000, 65536};
    std::vector<WrOpcode> ops;
    std::vector<uint32_t> lens;
    for (uint32_t i = 0; i < kWrs; ++i) {
      ops.push_back(i % 7 == 3 ? WrOpcode::kRdmaRead : WrOpcode::kRdmaWrite);
      lens.push_back(sizes[rng() % std::size(sizes)]);
      post_rdma(p, i, ops[i], i * kRegion, lens[i]);
    }
    size_t max_held = 0;
    size_t done = 0;
    while (done < kWrs) {
      ASSERT_TRUE(p.net.step()) << "stuck at " << done << p.describe();
      ASSERT_LT(p.net.now(), 2'000'000'000u) << p.describe();
      max_held = std::max(max_held, p.net.held(0).size());
      WorkCompletion wc[16];
      const int n = p.eng(0).poll_cq(p.side[0].cq, 16, wc);
      for (int k = 0; k < n; ++k, ++done) {
        ASSERT_EQ(wc[k].status, WcStatus::kSuccess);
        ASSERT_EQ(wc[k].wr_id, done);
        for (const uint64_t t : p.net.held(0)) {
          ASSERT_GT(t & kHoldSlotMask, done) << "WR " << done << " completed while a frame of WR "
                                             << (t & kHoldSlotMask) << " was held";
        }
      }
    }
    EXPECT_GT(max_held, 100u);
    EXPECT_GT(p.eng(0).counters().completions_held, 0u);
    EXPECT_GT(p.eng(0).qp_counters(p.side[0].qp)->retransmitted_packets, 0u);
    for (uint32_t i = 0; i < kWrs; ++i) {
      const uint8_t* a = p.side[0].buf.data() + i * kRegion;
      const uint8_t* b = p.side[1].buf.data() + i * kRegion;
      ASSERT_EQ(std::memcmp(a, b, lens[i]), 0) << "region " << i << (ops[i] == WrOpcode::kRdmaRead ? " (READ)" : "");
    }
    p.net.run_for(100'000);
    EXPECT_TRUE(p.net.held(0).empty());
    EXPECT_EQ(p.eng(0).counters().stale_releases, 0u);
  }
}

// A hold outlives its QP: the release finds nothing and is counted.
TEST(ZeroCopy, AReleaseAfterItsQpIsGoneIsCountedAndIgnored) {
  QpAttr attr;
  attr.path_mtu = 4096;
  Pair p(25'000'000'000, 2'000, 1 << 20, attr);
  p.net.hold_payload(0, [] { return uint64_t{200'000}; });
  post_rdma(p, 1, WrOpcode::kRdmaWrite, 0, 8192);
  p.net.run_for(50'000);
  ASSERT_EQ(p.net.held(0).size(), 2u);
  ASSERT_EQ(p.eng(0).destroy_qp(p.side[0].qp), 0);
  uint32_t qpn;  // a new QP in the same slot: not the old one's holds
  ASSERT_EQ(p.eng(0).create_qp(p.side[0].pd, {.send_cq = p.side[0].cq, .recv_cq = p.side[0].cq}, &qpn), 0);
  EXPECT_EQ(qpn, p.side[0].qp);
  p.net.run_for(300'000);
  EXPECT_TRUE(p.net.held(0).empty());
  EXPECT_EQ(p.eng(0).counters().stale_releases, 2u);
}

}  // namespace
}  // namespace tita::test
