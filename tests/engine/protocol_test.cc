// Protocol tests: one engine, a peer played by hand-built frames, and the frames
// the engine emits captured and parsed. Each test says what it expects on the
// wire ("Expect:") in opcodes, PSNs and AETH syndromes.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "scripted_peer.h"
#include "tita/engine/engine.h"
#include "tita/wire/psn.h"

namespace tita::engine {
namespace {

using wire::Opcode;

using test::CaptureIo;
using test::kPeerQpn;
using test::kRqPsn;
using test::kSqPsn;
using Capture = CaptureIo;

class Protocol : public test::ScriptedPeerTest {
 protected:
  void SetUp() override { make(Recovery::kGoBackN); }

  void make(Recovery recovery, uint32_t ack_req_every = 1000, uint32_t ooo_slots = 8192, uint8_t timeout = 4) {
    EngineConfig cfg;
    cfg.ack_req_every = ack_req_every;
    cfg.ooo_slots = ooo_slots;
    cfg.ack_unsolicited = 1000;
    QpAttr a;
    a.min_rnr_timer = 3;
    a.recovery = recovery;
    a.timeout = timeout;  // 4: 65.5 us
    a.retry_cnt = 2;
    a.rnr_retry = 1;
    open(cfg, a);
  }

  // A frame from the peer to our QP.
  std::vector<uint8_t> from_peer(Opcode op, uint32_t psn, uint32_t payload_len = 0, uint8_t ecn = wire::kEcnEct0) {
    wire::FrameFields f = peer_fields(op, psn);
    f.ecn = ecn;
    f.va = va;
    f.rkey = rkey ? rkey : mr.rkey;
    f.dma_len = dma_len;
    f.syndrome = syndrome;
    f.msn = 0;
    f.ack_req = ack_req;
    std::vector<uint8_t> payload(payload_len);
    for (uint32_t i = 0; i < payload_len; ++i) payload[i] = static_cast<uint8_t>(i + psn);
    return frame_of(f, payload);
  }

  void advance(uint64_t ns) {
    now += ns;
    eng->poll(now);
  }

  // A timer's edge: nothing goes out for `quiet` ns, then within `then` ns
  // more something does; returns that.
  std::vector<wire::Packet> sent_after(uint64_t quiet, uint64_t then) {
    advance(quiet);
    EXPECT_TRUE(sent().empty()) << "sent before " << quiet << " ns";
    advance(then);
    return sent();
  }

  std::vector<WorkCompletion> completions() {
    std::vector<WorkCompletion> out(64);
    out.resize(static_cast<size_t>(eng->poll_cq(cq, 64, out.data())));
    return out;
  }

  int post(WrOpcode op, uint64_t off, uint32_t len, uint64_t wr_id = 1, uint32_t flags = kSendSignaled) {
    Sge sge{mr.addr + off, len, mr.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = flags;
    wr.rdma.remote_addr = 0x7000;
    wr.rdma.rkey = 0x4242;
    const int rc = eng->post_send(qpn, &wr, nullptr);
    eng->poll(now);
    return rc;
  }

  void post_recv(uint64_t off, uint32_t len, uint64_t wr_id = 9) {
    Sge sge{mr.addr + off, len, mr.lkey};
    RecvWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ASSERT_EQ(eng->post_recv(qpn, &wr, nullptr), 0);
  }

  // Extension fields of the next frame from the peer.
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_len = 0;
  uint8_t syndrome = wire::aeth::ack();
  bool ack_req = true;
};

// ---------------------------------------------------------------- requester

TEST_F(Protocol, SendIsSegmentedToTheMtu) {
  ASSERT_EQ(post(WrOpcode::kSend, 0, 3000), 0);
  // Expect: SEND First, Middle, Last at PSN 100..102; AckReq only on Last; 1024+1024+952 bytes.
  auto f = sent();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].opcode(), 0x00);
  EXPECT_EQ(f[1].opcode(), 0x01);
  EXPECT_EQ(f[2].opcode(), 0x02);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(f[i].psn(), kSqPsn + i);
    EXPECT_EQ(f[i].dest_qp(), kPeerQpn);
    EXPECT_EQ(f[i].ecn, wire::kEcnEct0);
  }
  EXPECT_FALSE(f[0].bth().ack_requested());
  EXPECT_FALSE(f[1].bth().ack_requested());
  EXPECT_TRUE(f[2].bth().ack_requested());
  EXPECT_EQ(f[0].payload_len, 1024u);
  EXPECT_EQ(f[2].payload_len, 952u);
  EXPECT_EQ(0, std::memcmp(f[2].payload(), mem.data() + 2048, 952));
  // Data packets carry a COLLECT telemetry trailer with the send time.
  ASSERT_NE(f[0].telemetry(), nullptr);
  EXPECT_TRUE(f[0].telemetry()->collect());
  EXPECT_EQ(f[0].telemetry()->ts_ns.get(), static_cast<uint32_t>(now));
}

// A host that sums the ICRC as it copies the payload (the DPDK host) sends,
// byte for byte, the frames of one whose engine sums it: gathered SGEs, pad,
// telemetry trailer and all.
TEST_F(Protocol, IcrcSummedByTheHostAsItCopiesIsTheEngines) {
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> frames[2];
  for (bool host_sums : {false, true}) {
    io = CaptureIo{};
    io.sums = host_sums;
    taken = 0;
    make(Recovery::kGoBackN);
    for (auto& b : mem) b = static_cast<uint8_t>(rng());
    rng.seed(7);  // the same bytes both times
    // 1001 + 2999 + 517 bytes from three places: 5 packets of at most 1024, the last padded.
    Sge sge[3] = {{mr.addr + 1, 1001, mr.lkey}, {mr.addr + 3000, 2999, mr.lkey}, {mr.addr + 9001, 517, mr.lkey}};
    SendWr wr;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.sg_list = sge;
    wr.num_sge = 3;
    wr.send_flags = kSendSignaled;
    wr.rdma.remote_addr = 0x7000;
    wr.rdma.rkey = 0x4242;
    ASSERT_EQ(eng->post_send(qpn, &wr, nullptr), 0);
    eng->poll(now);
    EXPECT_EQ(sent().size(), 5u);  // each parses with its ICRC checked
    frames[host_sums] = io.frames;
  }
  EXPECT_EQ(frames[0], frames[1]);
}

TEST_F(Protocol, WriteAndReadRequestsCarryReth) {
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 1), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaRead, 64, 5000, 2), 0);
  ASSERT_EQ(post(WrOpcode::kSendWithImm, 0, 8, 3), 0);
  // Expect: WRITE Only (RETH, 1 byte + 3 pad) at 100; READ Request for 5000 bytes at 101
  // taking PSNs 101..105; SEND Only with Immediate at 106.
  auto f = sent();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].opcode(), 0x0a);
  EXPECT_EQ(f[0].reth()->va.get(), 0x7000u);
  EXPECT_EQ(f[0].reth()->rkey.get(), 0x4242u);
  EXPECT_EQ(f[0].reth()->dma_len.get(), 1u);
  EXPECT_EQ(f[0].pad, 3);
  EXPECT_EQ(f[1].opcode(), 0x0c);
  EXPECT_EQ(f[1].psn(), 101u);
  EXPECT_EQ(f[1].reth()->dma_len.get(), 5000u);
  EXPECT_EQ(f[1].payload_len, 0u);
  EXPECT_EQ(f[2].opcode(), 0x05);
  EXPECT_EQ(f[2].psn(), 106u);
}

TEST_F(Protocol, AckCompletesInOrderAndOnlySignaled) {
  ASSERT_EQ(post(WrOpcode::kSend, 0, 100, 1, 0), 0);  // unsignaled
  ASSERT_EQ(post(WrOpcode::kSend, 0, 100, 2), 0);
  sent();
  // An ACK for the first only: nothing to report (unsignaled).
  syndrome = wire::aeth::ack();
  deliver(from_peer(Opcode::kAck, 100));
  EXPECT_TRUE(completions().empty());
  deliver(from_peer(Opcode::kAck, 101));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kSend);
}

TEST_F(Protocol, SequenceNakGoesBackN) {
  ASSERT_EQ(post(WrOpcode::kSend, 0, 4096), 0);  // PSN 100..103
  EXPECT_EQ(sent().size(), 4u);
  // Expect: NAK(PSN sequence error) at 102 acknowledges 100..101 and resends 102, 103.
  syndrome = wire::aeth::nak(wire::aeth::kNakPsnSequenceError);
  deliver(from_peer(Opcode::kAck, 102));
  auto f = sent();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].psn(), 102u);
  EXPECT_EQ(f[0].opcode(), 0x01);  // still a Middle: the same packet again
  EXPECT_TRUE(f[0].bth().ack_requested());  // retransmissions ask for an ACK
  EXPECT_EQ(f[1].psn(), 103u);
  EXPECT_EQ(eng->qp_counters(qpn)->retransmitted_packets, 2u);
}

TEST_F(Protocol, TimeoutRetransmitsThenFailsWithRetryExceeded) {
  ASSERT_EQ(post(WrOpcode::kSend, 0, 10), 0);
  ASSERT_EQ(post(WrOpcode::kSend, 0, 10, 2), 0);
  EXPECT_EQ(sent().size(), 2u);
  // timeout 4: 65.536 us, doubling per timeout; retry_cnt 2.
  auto f = sent_after(65'000, 1'000);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].psn(), 100u);
  advance(131'072);
  EXPECT_EQ(sent().size(), 2u);  // second retry, after twice the time
  advance(262'144);
  // Expect: retries exhausted: the first WR fails, the second is flushed, the QP is in error.
  EXPECT_TRUE(sent().empty());
  auto wc = completions();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
  QpAttr a;
  eng->query_qp(qpn, &a);
  EXPECT_EQ(a.qp_state, QpState::kError);
  EXPECT_EQ(eng->qp_counters(qpn)->timeouts, 3u);
}

// The peer echoes no timestamp (rxe, a RoCE NIC): the requester times its own
// probes. With perftest's timeout of 14 (67 ms), a WRITE whose tail and ACK
// vanish is resent from its first unacknowledged PSN after a few round trips
// (3 x 50 us, raised to the 200 us floor), once; then the IBA timeout runs.
TEST_F(Protocol, ASilentTailIsProbedAfterAFewRoundTripsNotTheTimeout) {
  make(Recovery::kGoBackN, 1000, 8192, 14);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 1024), 0);  // PSN 100, the RTT probe
  EXPECT_EQ(sent().size(), 1u);
  advance(50'000);
  deliver(from_peer(Opcode::kAck, 100));  // 50 us
  EXPECT_EQ(eng->qp_counters(qpn)->rtt_samples, 1u);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 4096, 2), 0);  // PSN 101..104
  EXPECT_EQ(sent().size(), 4u);
  // Expect: 101..104 again, each asking for an ACK; a probe, not a timeout.
  auto f = sent_after(199'000, 2'000);
  ASSERT_EQ(f.size(), 4u);
  for (uint32_t k = 0; k < 4; ++k) {
    EXPECT_EQ(f[k].psn(), 101u + k);
    EXPECT_TRUE(f[k].bth().ack_requested());
  }
  const QpCounters& c = *eng->qp_counters(qpn);
  EXPECT_EQ(c.tail_probes, 1u);
  EXPECT_EQ(c.timeouts, 0u);
  // Expect: no second probe without progress; the 67.1 ms timeout resends,
  // in a loss window of 2 (a timeout restarts it from there).
  f = sent_after(67'000'000, 200'000);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].psn(), 101u);
  EXPECT_EQ(c.timeouts, 1u);
  EXPECT_EQ(c.tail_probes, 1u);
  deliver(from_peer(Opcode::kAck, 104));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
}

// The same for a READ whose last responses vanish: its clock is the time a
// READ request took to its first response; the probe asks again from the
// first missing response.
TEST_F(Protocol, AReadsSilentTailIsAskedAgainAfterAFewRoundTrips) {
  make(Recovery::kGoBackN, 1000, 8192, 14);
  ASSERT_EQ(post(WrOpcode::kRdmaRead, 0, 1024), 0);  // PSN 100
  EXPECT_EQ(sent().size(), 1u);
  advance(40'000);
  deliver(from_peer(Opcode::kReadResponseOnly, kSqPsn, 1024));  // 40 us
  ASSERT_EQ(post(WrOpcode::kRdmaRead, 0, 4 * 1024, 2), 0);  // PSNs 101..104
  EXPECT_EQ(sent().size(), 1u);
  deliver(from_peer(Opcode::kReadResponseFirst, kSqPsn + 1, 1024));
  deliver(from_peer(Opcode::kReadResponseMiddle, kSqPsn + 2, 1024));
  auto f = sent_after(199'000, 2'000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), static_cast<uint8_t>(Opcode::kReadRequest));
  EXPECT_EQ(f[0].psn(), kSqPsn + 3);
  EXPECT_EQ(f[0].reth()->va.get(), 0x7000u + 2 * 1024);
  EXPECT_EQ(f[0].reth()->dma_len.get(), 2u * 1024);
  EXPECT_EQ(eng->qp_counters(qpn)->tail_probes, 1u);
  EXPECT_EQ(eng->qp_counters(qpn)->timeouts, 0u);
  EXPECT_EQ(eng->qp_counters(qpn)->rtt_samples, 0u);  // READ timings stay out of congestion control
  deliver(from_peer(Opcode::kReadResponseMiddle, kSqPsn + 3, 1024));
  deliver(from_peer(Opcode::kReadResponseLast, kSqPsn + 4, 1024));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
}

// An IBA timeout below the probe's 200 us floor (4: 65.5 us) runs alone.
TEST_F(Protocol, NoTailProbeWithTheTimeoutBelowItsFloor) {
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 1024), 0);
  EXPECT_EQ(sent().size(), 1u);
  advance(10'000);
  deliver(from_peer(Opcode::kAck, 100));
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 2048, 2), 0);
  EXPECT_EQ(sent().size(), 2u);
  advance(66'000);
  EXPECT_EQ(sent().size(), 2u);
  EXPECT_EQ(eng->qp_counters(qpn)->timeouts, 1u);
  EXPECT_EQ(eng->qp_counters(qpn)->tail_probes, 0u);
}

TEST_F(Protocol, TimeoutCoversALoneOnePacketMessage) {
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 10), 0);
  EXPECT_EQ(sent().size(), 1u);
  // Expect: the WRITE again at 65.536 us, though nothing was outstanding when it left.
  auto f = sent_after(65'000, 1'000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), 100u);
  EXPECT_EQ(eng->qp_counters(qpn)->timeouts, 1u);
}

TEST_F(Protocol, RnrNakWaitsForTheTimerThenRetries) {
  ASSERT_EQ(post(WrOpcode::kSend, 0, 10), 0);
  sent();
  syndrome = wire::aeth::rnr_nak(1);  // 10 us
  deliver(from_peer(Opcode::kAck, 100));
  auto f = sent_after(9'000, 1'000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), 100u);
  // rnr_retry 1: a second RNR NAK ends it.
  deliver(from_peer(Opcode::kAck, 100));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRnrRetryExcErr);
}

TEST_F(Protocol, RemoteAccessNakFailsTheWrAndFlushesTheRest) {
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 10, 1), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 10, 2), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 10, 3), 0);
  sent();
  syndrome = wire::aeth::ack();
  deliver(from_peer(Opcode::kAck, 100));
  syndrome = wire::aeth::nak(wire::aeth::kNakRemoteAccessError);
  deliver(from_peer(Opcode::kAck, 101));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 3u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[2].status, WcStatus::kWrFlushErr);
  // Posting to a QP in error completes at once with a flush.
  ASSERT_EQ(post(WrOpcode::kSend, 0, 1, 4), 0);
  wc = completions();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kWrFlushErr);
}

TEST_F(Protocol, ReadResponsesLandInLocalMemoryAndComplete) {
  ASSERT_EQ(post(WrOpcode::kRdmaRead, 4096, 2000), 0);  // PSNs 100, 101
  sent();
  deliver(from_peer(Opcode::kReadResponseFirst, 100, 1024));
  EXPECT_TRUE(completions().empty());
  deliver(from_peer(Opcode::kReadResponseLast, 101, 976));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(wc[0].byte_len, 2000u);
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(mem[4096 + i], static_cast<uint8_t>(i + 100));
  for (uint32_t i = 0; i < 976; ++i) ASSERT_EQ(mem[4096 + 1024 + i], static_cast<uint8_t>(i + 101));
  EXPECT_EQ(mem[4096 + 2000], 0xee);  // not a byte more
}

// ---------------------------------------------------------------- responder

TEST_F(Protocol, InOrderWriteIsPlacedAndAcknowledgedWithMsn) {
  va = mr.addr + 100;
  dma_len = 1024 + 10;
  ack_req = false;
  deliver(from_peer(Opcode::kWriteFirst, kRqPsn, 1024));
  EXPECT_TRUE(sent().empty());  // no AckReq: no ACK yet
  ack_req = true;
  deliver(from_peer(Opcode::kWriteLast, kRqPsn + 1, 10));
  // Expect: ACK for PSN 501, MSN 1, credit code "unlimited".
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), 0x11);
  EXPECT_EQ(f[0].psn(), kRqPsn + 1);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x1f);
  EXPECT_EQ(f[0].aeth()->msn.get(), 1u);
  EXPECT_EQ(f[0].dest_qp(), kPeerQpn);
  for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(mem[100 + i], static_cast<uint8_t>(i + kRqPsn));
  for (uint32_t i = 0; i < 10; ++i) ASSERT_EQ(mem[1124 + i], static_cast<uint8_t>(i + kRqPsn + 1));
  EXPECT_EQ(mem[1134], 0xee);
}

// A WRITE Middle in order has its ICRC checked as its payload is placed (one
// pass, the fast path): a damaged one is counted and dropped, answered by
// nothing, and its bytes, left where the Middle goes, are overwritten when it
// is resent; the WRITE ends with the sender's bytes, not one more.
TEST_F(Protocol, ADamagedWriteMiddleIsDroppedAndItsResentBytesOverwriteIt) {
  va = mr.addr + 100;
  dma_len = 3 * 1024;
  ack_req = false;
  deliver(from_peer(Opcode::kWriteFirst, kRqPsn, 1024));
  const uint64_t fast_before = eng->counters().rx_fast;
  auto damaged = from_peer(Opcode::kWriteMiddle, kRqPsn + 1, 1024);
  damaged[damaged.size() - 4 - 500] ^= 0x40;  // a payload byte
  deliver(damaged);
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(eng->counters().rx_parse_errors[static_cast<size_t>(wire::ParseError::kBadIcrc)], 1u);
  EXPECT_EQ(mem[100 + 1024 + 1024 - 500], static_cast<uint8_t>(1024 - 500 + kRqPsn + 1) ^ 0x40);  // placed, undefined
  deliver(from_peer(Opcode::kWriteMiddle, kRqPsn + 1, 1024));
  ack_req = true;
  deliver(from_peer(Opcode::kWriteLast, kRqPsn + 2, 1024));
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), 0x11);
  EXPECT_EQ(f[0].psn(), kRqPsn + 2);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x1f);
  for (uint32_t p = 0; p < 3; ++p) {
    for (uint32_t i = 0; i < 1024; ++i) ASSERT_EQ(mem[100 + 1024 * p + i], static_cast<uint8_t>(i + kRqPsn + p)) << p;
  }
  EXPECT_EQ(mem[100 + 3 * 1024], 0xee);
  EXPECT_EQ(eng->counters().rx_fast - fast_before, 2u);  // the good Middle and the Last
}

TEST_F(Protocol, OutOfOrderIsNakedOnceThenRecovers) {
  post_recv(0, 4096);
  deliver(from_peer(Opcode::kSendOnly, kRqPsn + 1, 8));
  deliver(from_peer(Opcode::kSendOnly, kRqPsn + 2, 8));
  // Expect: one NAK(PSN sequence error) for 500; the second gap packet is dropped silently.
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x60);
  EXPECT_EQ(f[0].psn(), kRqPsn);
  deliver(from_peer(Opcode::kSendOnly, kRqPsn, 8));
  f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x1f);
  EXPECT_EQ(f[0].psn(), kRqPsn);
  EXPECT_EQ(eng->qp_counters(qpn)->nak_seq_sent, 1u);
}

TEST_F(Protocol, DuplicateIsAcknowledgedAgainNotExecuted) {
  post_recv(0, 4096, 1);
  post_recv(0, 4096, 2);
  deliver(from_peer(Opcode::kSendOnly, kRqPsn, 8));
  sent();
  EXPECT_EQ(completions().size(), 1u);
  deliver(from_peer(Opcode::kSendOnly, kRqPsn, 8));
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x1f);
  EXPECT_EQ(f[0].psn(), kRqPsn);
  EXPECT_TRUE(completions().empty());  // the second receive is still posted
  EXPECT_EQ(eng->qp_counters(qpn)->duplicates_received, 1u);
}

TEST_F(Protocol, SendWithoutReceiveGetsRnrNak) {
  deliver(from_peer(Opcode::kSendOnly, kRqPsn, 8));
  // Expect: RNR NAK with this QP's min_rnr_timer (3) for the packet's PSN.
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x20 | 3);
  EXPECT_EQ(f[0].psn(), kRqPsn);
  // The QP stays usable: once a receive is posted, the retry lands.
  post_recv(0, 64);
  deliver(from_peer(Opcode::kSendOnly, kRqPsn, 8));
  EXPECT_EQ(sent()[0].aeth()->syndrome, 0x1f);
}

TEST_F(Protocol, ReadRequestIsAnsweredWithResponses) {
  for (int i = 0; i < 3000; ++i) mem[200 + i] = static_cast<uint8_t>(i * 3);
  va = mr.addr + 200;
  dma_len = 3000;
  deliver(from_peer(Opcode::kReadRequest, kRqPsn));
  // Expect: READ Response First/Middle/Last at 500..502, AETH on First and Last.
  auto f = sent();
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].opcode(), 0x0d);
  EXPECT_EQ(f[1].opcode(), 0x0e);
  EXPECT_EQ(f[2].opcode(), 0x0f);
  EXPECT_NE(f[0].aeth(), nullptr);
  EXPECT_EQ(f[1].aeth(), nullptr);
  EXPECT_NE(f[2].aeth(), nullptr);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(f[i].psn(), kRqPsn + i);
  EXPECT_EQ(f[2].payload_len, 3000u - 2048u);
  EXPECT_EQ(0, std::memcmp(f[1].payload(), mem.data() + 200 + 1024, 1024));
  // The next request PSN is after all three responses.
  post_recv(0, 64);
  deliver(from_peer(Opcode::kSendOnly, kRqPsn + 3, 4));
  EXPECT_EQ(sent()[0].psn(), kRqPsn + 3);
}

TEST_F(Protocol, CeMarkedDataTriggersOneCnpPerInterval) {
  post_recv(0, 4096, 1);
  post_recv(0, 4096, 2);
  post_recv(0, 4096, 3);
  deliver(from_peer(Opcode::kSendOnly, kRqPsn, 8, wire::kEcnCe));
  // Expect: a CNP (0x81, BECN, to the peer QP, DSCP 48) and the ACK.
  auto f = sent();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].opcode(), 0x81);
  EXPECT_TRUE(f[0].bth().becn());
  EXPECT_EQ(f[0].dest_qp(), kPeerQpn);
  EXPECT_EQ(f[0].dscp, 48);
  now += 10'000;  // within the 50 us CNP interval: no second CNP
  deliver(from_peer(Opcode::kSendOnly, kRqPsn + 1, 8, wire::kEcnCe));
  EXPECT_EQ(sent().size(), 1u);
  now += 50'000;
  deliver(from_peer(Opcode::kSendOnly, kRqPsn + 2, 8, wire::kEcnCe));
  EXPECT_EQ(sent().size(), 2u);
  EXPECT_EQ(eng->qp_counters(qpn)->cnps_sent, 2u);
  EXPECT_EQ(eng->qp_counters(qpn)->ecn_ce_received, 3u);
}

// A port that cannot send for a while (PFC pause) while data keeps arriving:
// each new ACK takes the place of its QP's ACK still waiting (ACKs are
// cumulative), with the CE marks added, so the newest ACK and every CE mark
// reach the sender, the ring holds one ACK per QP and nothing is lost.
TEST_F(Protocol, AcksWaitingForThePortMergeIntoOne) {
  EngineConfig cfg;
  cfg.ack_req_every = 1;
  cfg.control_ring = 4;
  cfg.np.ack_echo = 1;
  open(cfg, QpAttr{});
  io.space = 0;
  va = mr.addr;
  dma_len = 16;
  uint32_t ce = 0;
  for (uint32_t i = 0; i < 10; ++i) {
    const bool marked = i % 3 == 0;
    ce += marked;
    deliver(from_tita(from_peer(Opcode::kWriteOnly, kRqPsn + i, 16, marked ? wire::kEcnCe : wire::kEcnEct0)));
  }
  EXPECT_EQ(eng->counters().control_ring_full, 0u);
  EXPECT_EQ(eng->counters().control_coalesced, 9u);
  EXPECT_EQ(eng->qp_counters(qpn)->acks_sent, 1u);
  io.space = 1024;
  eng->poll(now);
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].psn(), kRqPsn + 9);  // the newest: everything acknowledged
  ASSERT_NE(f[0].telemetry(), nullptr);
  EXPECT_EQ(f[0].telemetry()->ce_packets, ce);
  // With room again, every ACK leaves on its own.
  deliver(from_tita(from_peer(Opcode::kWriteOnly, kRqPsn + 10, 16)));
  deliver(from_tita(from_peer(Opcode::kWriteOnly, kRqPsn + 11, 16)));
  f = sent();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].psn(), kRqPsn + 11);
}

TEST_F(Protocol, AckEchoesTelemetryHopsAndTimestamp) {
  post_recv(0, 64);
  auto frame = from_peer(Opcode::kSendOnly, kRqPsn, 8);
  const size_t end = frame.size();
  frame.resize(end + wire::kMaxTelemetryBytes);
  uint32_t len = static_cast<uint32_t>(end) + wire::telemetry_write(frame.data() + end, wire::TelemetryHdr::kCollect, 777);
  len = wire::telemetry_push(frame.data(), len, static_cast<uint32_t>(frame.size()), 100'000, 11, 22, 33);
  len = wire::telemetry_push(frame.data(), len, static_cast<uint32_t>(frame.size()), 400'000, 44, 55, 66);
  frame.resize(len);
  deliver(frame);
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  const wire::TelemetryHdr* t = f[0].telemetry();
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->echo());
  EXPECT_EQ(t->ts_ns.get(), 777u);
  ASSERT_EQ(t->hops(), 2);
  EXPECT_EQ(wire::telemetry_hops(t)[1].rate_mbps.get(), 400'000u);
  EXPECT_EQ(wire::telemetry_hops(t)[1].qlen_bytes.get(), 66u);
}

TEST_F(Protocol, SelectiveRepeatKeepsOutOfOrderAndSacksIt) {
  make(Recovery::kSelectiveRepeat);
  io.frames.clear();
  taken = 0;
  post_recv(0, 64, 1);
  post_recv(64, 64, 2);
  deliver(from_tita(from_peer(Opcode::kSendOnly, kRqPsn + 1, 8)));
  // Expect: NAK(sequence error) for 500 carrying SACK 501; nothing completes yet.
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x60);
  EXPECT_EQ(f[0].psn(), kRqPsn);
  ASSERT_NE(wire::telemetry_sack(f[0].telemetry()), nullptr);
  EXPECT_EQ(wire::telemetry_sack(f[0].telemetry())->psn.get(), kRqPsn + 1);
  EXPECT_TRUE(completions().empty());
  // The gap fills: both execute, in order.
  deliver(from_tita(from_peer(Opcode::kSendOnly, kRqPsn, 8)));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[1].wr_id, 2u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(mem[64 + i], static_cast<uint8_t>(i + kRqPsn + 1));
}

TEST_F(Protocol, SelectiveRepeatResendsOnlyTheHoles) {
  make(Recovery::kSelectiveRepeat);
  io.frames.clear();
  taken = 0;
  ASSERT_EQ(post(WrOpcode::kSend, 0, 6 * 1024), 0);  // PSN 100..105
  EXPECT_EQ(sent().size(), 6u);
  // The peer has 100, and 102 and 104 out of order: 101 and 103 are missing.
  syndrome = wire::aeth::nak(wire::aeth::kNakPsnSequenceError);
  auto nak = [&](uint32_t sack) {
    auto fr = from_peer(Opcode::kAck, 101);
    const size_t end = fr.size();
    fr.resize(end + wire::telemetry_bytes(0, true));
    wire::telemetry_write(fr.data() + end, wire::TelemetryHdr::kEcho, 0);
    fr[end + 1] |= wire::TelemetryHdr::kSack;
    reinterpret_cast<wire::TelemetrySack*>(fr.data() + end + sizeof(wire::TelemetryHdr))->psn.set(sack);
    return fr;
  };
  deliver(nak(102));
  deliver(nak(104));
  // Expect: 101 and 103 again, nothing else.
  auto f = sent();
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].psn(), 101u);
  EXPECT_EQ(f[1].psn(), 103u);
}

TEST_F(Protocol, SelectiveRepeatIsGoBackNTowardsAPeerThatSpeaksNoTita) {
  // Configured for selective repeat, but the peer's frames carry no telemetry
  // trailer (Linux rxe, a RoCE NIC): it would restart go-back-N on every NAK,
  // so the responder NAKs a gap once and keeps nothing.
  make(Recovery::kSelectiveRepeat);
  io.frames.clear();
  taken = 0;
  post_recv(0, 64, 1);
  post_recv(64, 64, 2);
  post_recv(128, 64, 3);
  deliver(from_peer(Opcode::kSendOnly, kRqPsn + 1, 8));
  deliver(from_peer(Opcode::kSendOnly, kRqPsn + 2, 8));
  // Expect: one NAK(sequence error) for 500, without a SACK; nothing kept.
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x60);
  EXPECT_EQ(f[0].psn(), kRqPsn);
  EXPECT_EQ(f[0].telemetry() ? wire::telemetry_sack(f[0].telemetry()) : nullptr, nullptr);
  EXPECT_EQ(eng->qp_counters(qpn)->ooo_buffered, 0u);
  // The resend from 500 then executes in order.
  for (uint32_t k = 0; k < 3; ++k) deliver(from_peer(Opcode::kSendOnly, kRqPsn + k, 8));
  EXPECT_EQ(completions().size(), 3u);
}

TEST_F(Protocol, RttIsMeasuredHereWhenThePeerEchoesNothing) {
  // The peer's ACKs carry no trailer (Linux rxe, a RoCE NIC): the RTT comes
  // from our own probe, the first AckReq packet, timed to its ACK.
  ASSERT_EQ(post(WrOpcode::kSend, 0, 10), 0);  // PSN 100, the probe
  ASSERT_EQ(sent().size(), 1u);
  advance(7'000);
  ASSERT_EQ(post(WrOpcode::kSend, 0, 10, 2), 0);  // PSN 101: no second probe while one is out
  advance(1'000);
  syndrome = wire::aeth::ack();
  deliver(from_peer(Opcode::kAck, kSqPsn));
  const QpCounters& q = *eng->qp_counters(qpn);
  EXPECT_EQ(q.rtt_samples, 1u);
  EXPECT_NEAR(static_cast<double>(q.last_rtt_ns), 8'000.0, 128.0);
  deliver(from_peer(Opcode::kAck, kSqPsn + 1));  // 101 was sent while the probe was out
  EXPECT_EQ(q.rtt_samples, 1u);
}

TEST_F(Protocol, ARetransmittedProbeGivesNoRttSample) {
  // Karn's rule: after a resend, an ACK cannot say which copy it answers.
  ASSERT_EQ(post(WrOpcode::kSend, 0, 2048), 0);  // PSN 100 (the probe), 101
  ASSERT_EQ(sent().size(), 2u);
  syndrome = wire::aeth::nak(wire::aeth::kNakPsnSequenceError);
  deliver(from_peer(Opcode::kAck, kSqPsn));  // 100 lost: both resent
  ASSERT_EQ(sent().size(), 2u);
  advance(3'000);
  syndrome = wire::aeth::ack();
  deliver(from_peer(Opcode::kAck, kSqPsn + 1));
  const QpCounters& q = *eng->qp_counters(qpn);
  EXPECT_EQ(q.rtt_samples, 0u);
  ASSERT_EQ(completions().size(), 1u);
  // The next message probes afresh.
  ASSERT_EQ(post(WrOpcode::kSend, 0, 10, 2), 0);
  ASSERT_EQ(sent().size(), 1u);
  advance(2'000);
  deliver(from_peer(Opcode::kAck, kSqPsn + 2));
  EXPECT_EQ(q.rtt_samples, 1u);
  EXPECT_NEAR(static_cast<double>(q.last_rtt_ns), 2'000.0, 128.0);
}

TEST_F(Protocol, ReadTimeoutAsksOnlyForTheMissingResponses) {
  // A READ of 8 packets whose responses stop after the third: on the timeout
  // the READ is asked again from the fourth response, not from its start
  // (Linux rxe ignores a repeated READ starting before what it last served).
  ASSERT_EQ(post(WrOpcode::kRdmaRead, 0, 8 * 1024), 0);  // PSNs 100..107
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  deliver(from_peer(Opcode::kReadResponseFirst, kSqPsn, 1024));
  deliver(from_peer(Opcode::kReadResponseMiddle, kSqPsn + 1, 1024));
  deliver(from_peer(Opcode::kReadResponseMiddle, kSqPsn + 2, 1024));
  advance(100'000);  // past the 65.5 us RTO
  f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), static_cast<uint8_t>(Opcode::kReadRequest));
  EXPECT_EQ(f[0].psn(), kSqPsn + 3);
  EXPECT_EQ(f[0].reth()->va.get(), 0x7000u + 3 * 1024);
  EXPECT_EQ(f[0].reth()->dma_len.get(), 5u * 1024);
}

TEST_F(Protocol, SelectiveRepeatAsksAgainForAReadHoleBeyondTheWindow) {
  // A 400-packet READ (beyond the 256-PSN selective-repeat window) from a tita
  // peer, asked for in parts of 64 responses; response 300 goes missing: it
  // is asked for again as soon as 303 shows the gap a reordering window (3
  // PSNs) wide, not at the timeout.
  make(Recovery::kSelectiveRepeat);
  io.frames.clear();
  taken = 0;
  std::vector<uint8_t> big(400 * 1024);
  MrInfo bmr;
  ASSERT_EQ(eng->reg_mr(pd, big.data(), big.size(), kAccessLocalWrite, &bmr), 0);
  Sge sge{bmr.addr, static_cast<uint32_t>(big.size()), bmr.lkey};
  SendWr wr;
  wr.opcode = WrOpcode::kRdmaRead;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.rdma.remote_addr = 0x100000;
  wr.rdma.rkey = 9;
  ASSERT_EQ(eng->post_send(qpn, &wr, nullptr), 0);
  eng->poll(now);
  auto parts = sent();
  ASSERT_EQ(parts.size(), 7u);  // 6 x 64 + 16
  for (uint32_t k = 0; k < 7; ++k) {
    EXPECT_EQ(parts[k].psn(), kSqPsn + 64 * k);
    EXPECT_EQ(parts[k].reth()->va.get(), 0x100000u + 64 * 1024 * k);
    EXPECT_EQ(parts[k].reth()->dma_len.get(), (k < 6 ? 64u : 16u) * 1024);
  }
  for (uint32_t k = 0; k <= 302; ++k) {
    if (k == 300) continue;  // lost
    deliver(from_tita(from_peer(k == 0 ? Opcode::kReadResponseFirst : Opcode::kReadResponseMiddle, kSqPsn + k, 1024)));
  }
  EXPECT_TRUE(sent().empty());  // two past it: may be reordering
  deliver(from_tita(from_peer(Opcode::kReadResponseMiddle, kSqPsn + 303, 1024)));
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].opcode(), static_cast<uint8_t>(Opcode::kReadRequest));
  EXPECT_EQ(f[0].psn(), kSqPsn + 300);
  EXPECT_EQ(f[0].reth()->va.get(), 0x100000u + 300 * 1024);
  // The hole (up to 301, which came), and at least 4 responses: if 300 is lost
  // again, 302 coming twice shows it.
  EXPECT_EQ(f[0].reth()->dma_len.get(), 4u * 1024);
}

// ---------------------------------------------------------------- errors never touch memory

class AccessViolation : public Protocol {
 protected:
  void expect_access_nak(Opcode op, uint32_t payload) {
    const std::vector<uint8_t> before = mem;
    deliver(from_peer(op, kRqPsn, payload));
    auto f = sent();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].opcode(), 0x11);
    EXPECT_EQ(f[0].aeth()->syndrome, 0x62);  // NAK: remote access error
    EXPECT_EQ(f[0].psn(), kRqPsn);
    EXPECT_TRUE(mem == before) << "memory changed";
    QpAttr a;
    eng->query_qp(qpn, &a);
    EXPECT_EQ(a.qp_state, QpState::kError);
    EXPECT_EQ(eng->qp_counters(qpn)->nak_access_sent, 1u);
  }
};

TEST_F(AccessViolation, WrongRkey) {
  va = mr.addr;
  dma_len = 16;
  rkey = mr.rkey ^ 0x100;
  expect_access_nak(Opcode::kWriteOnly, 16);
}

TEST_F(AccessViolation, WriteBeyondTheRegion) {
  va = mr.addr + mem.size() - 8;
  dma_len = 16;
  expect_access_nak(Opcode::kWriteOnly, 16);
}

TEST_F(AccessViolation, WriteBeforeTheRegion) {
  va = mr.addr - 1;
  dma_len = 16;
  expect_access_nak(Opcode::kWriteOnly, 16);
}

TEST_F(AccessViolation, AddressWrapsAround) {
  va = ~0ull - 4;
  dma_len = 16;
  expect_access_nak(Opcode::kWriteOnly, 16);
}

TEST_F(AccessViolation, ReadBeyondTheRegion) {
  va = mr.addr + 100;
  dma_len = static_cast<uint32_t>(mem.size());
  expect_access_nak(Opcode::kReadRequest, 0);
}

TEST_F(AccessViolation, WriteWithoutPermission) {
  MrInfo ro;
  std::vector<uint8_t> other(256, 0x11);
  ASSERT_EQ(eng->reg_mr(pd, other.data(), other.size(), kAccessLocalWrite | kAccessRemoteRead, &ro), 0);
  va = ro.addr;
  dma_len = 16;
  rkey = ro.rkey;
  expect_access_nak(Opcode::kWriteOnly, 16);
  for (uint8_t b : other) ASSERT_EQ(b, 0x11);
}

TEST_F(AccessViolation, ReadWithoutPermission) {
  MrInfo wo;
  std::vector<uint8_t> other(256, 0x11);
  ASSERT_EQ(eng->reg_mr(pd, other.data(), other.size(), kAccessLocalWrite | kAccessRemoteWrite, &wo), 0);
  va = wo.addr;
  dma_len = 16;
  rkey = wo.rkey;
  expect_access_nak(Opcode::kReadRequest, 0);
}

TEST_F(AccessViolation, DeregisteredRegion) {
  const uint32_t key = mr.rkey;
  ASSERT_EQ(eng->dereg_mr(mr.lkey), 0);
  va = mr.addr;
  dma_len = 16;
  rkey = key;
  expect_access_nak(Opcode::kWriteOnly, 16);
}

TEST_F(Protocol, WriteLongerThanItsRethIsInvalid) {
  va = mr.addr;
  dma_len = 1500;  // First carries 1024, Last would have to carry 476
  ack_req = false;
  deliver(from_peer(Opcode::kWriteFirst, kRqPsn, 1024));
  const std::vector<uint8_t> before = mem;
  deliver(from_peer(Opcode::kWriteLast, kRqPsn + 1, 600));
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x61);  // NAK: invalid request
  EXPECT_TRUE(mem == before);
}

TEST_F(Protocol, OpcodeOutOfSequenceIsInvalid) {
  deliver(from_peer(Opcode::kSendMiddle, kRqPsn, 1024));
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x61);
}

TEST_F(Protocol, BadFramesAreCountedAndDropped) {
  auto frame = from_peer(Opcode::kSendOnly, kRqPsn, 8);
  frame[frame.size() - 1] ^= 1;  // ICRC
  deliver(frame);
  frame = from_peer(Opcode::kSendOnly, kRqPsn, 8);
  frame[42 + 5] ^= 0x40;  // another destination QP
  wire::Packet p;
  ASSERT_EQ(wire::parse(frame.data(), static_cast<uint32_t>(frame.size()), &p), wire::ParseError::kBadIcrc);
  frame.resize(20);
  deliver(frame);
  EXPECT_TRUE(sent().empty());
  const EngineCounters& c = eng->counters();
  EXPECT_EQ(c.rx_parse_errors[static_cast<size_t>(wire::ParseError::kBadIcrc)], 1u);
  EXPECT_EQ(c.rx_parse_errors[static_cast<size_t>(wire::ParseError::kTruncated)], 1u);
  EXPECT_EQ(c.rx_dropped, 2u);
}

// ---------------------------------------------------------------- verbs

// ---------------------------------------------------------------- a hostile peer
// What a peer that guesses, overflows, floods and replays gets: the NAK or the
// silent drop IBA prescribes, nothing executed, and state that stays bounded.

TEST_F(AccessViolation, EveryOtherKeyOfTheRegionIsRefused) {
  // Keys are index << 8 | an 8-bit generation: a guesser who knows the index
  // has 255 wrong generations to try, each NAKed with no byte written, and the
  // first wrong one ends the QP (its peer must reconnect to guess again).
  const uint32_t good = mr.rkey;
  for (uint32_t g = 0; g < 256; ++g) {
    const uint32_t key = (good & ~0xffu) | g;
    if (key == good) continue;
    make(Recovery::kGoBackN);
    io.frames.clear();
    taken = 0;
    va = mr.addr;
    dma_len = 16;
    rkey = key;
    expect_access_nak(Opcode::kWriteOnly, 16);
    if (HasFailure()) return;
  }
}

TEST_F(AccessViolation, RandomKeysAndLengthsThatOverflow) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    make(Recovery::kGoBackN);
    io.frames.clear();
    taken = 0;
    va = mr.addr + rng() % mem.size();
    dma_len = i % 2 ? 0xffffffffu : 64;  // a length that wraps the address arithmetic
    rkey = i % 2 ? mr.rkey : (rng() | 1u << 31);
    expect_access_nak(i % 4 == 1 ? Opcode::kReadRequest : Opcode::kWriteFirst, i % 4 == 1 ? 0 : 1024);
    if (HasFailure()) return;
  }
}

TEST_F(Protocol, AFrameFromAnotherAddressIsDroppedSilently) {
  // The right QPN, PSN, rkey and address, from a source that is not the peer.
  const std::vector<uint8_t> before = mem;
  wire::FrameFields f = peer_fields(Opcode::kWriteOnly, kRqPsn);
  f.src_gid = wire::Gid::from_ipv4(0x0a0000aa);
  f.va = mr.addr;
  f.rkey = mr.rkey;
  f.dma_len = 8;
  f.ack_req = true;
  deliver(frame_of(f, std::vector<uint8_t>(8, 0x77)));
  EXPECT_TRUE(sent().empty());
  EXPECT_TRUE(mem == before);
  EXPECT_EQ(eng->counters().rx_wrong_source, 1u);
  // The peer's own frame still lands.
  va = mr.addr;
  dma_len = 8;
  deliver(from_peer(Opcode::kWriteOnly, kRqPsn, 8));
  EXPECT_EQ(mem[0], static_cast<uint8_t>(kRqPsn));
}

TEST_F(Protocol, PsnsFarAheadAndBehindExecuteNothing) {
  va = mr.addr;
  dma_len = 8;
  const std::vector<uint8_t> before = mem;
  // Ahead (within half the PSN space): one sequence NAK for the episode, however many arrive.
  for (uint32_t k = 1; k <= 100; ++k) deliver(from_peer(Opcode::kWriteOnly, kRqPsn + 1000 * k, 8));
  auto f = sent();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].aeth()->syndrome, 0x60);  // NAK: PSN sequence error
  EXPECT_EQ(f[0].psn(), kRqPsn);
  // Behind (a replay of what was never sent, or of long ago): duplicates,
  // answered with an ACK of the last PSN, never executed.
  for (uint32_t k = 1; k <= 100; ++k) deliver(from_peer(Opcode::kWriteOnly, (kRqPsn - 1000 * k) & wire::kPsnMask, 8));
  for (const wire::Packet& p : sent()) EXPECT_EQ(p.aeth()->syndrome & 0x60, 0) << "a NAK for a duplicate";
  EXPECT_TRUE(mem == before) << "a request outside the window executed";
  EXPECT_EQ(eng->qp_counters(qpn)->duplicates_received, 100u);
}

TEST_F(Protocol, AReadFloodBeyondTheResponderResourcesIsRefused) {
  // max_dest_rd_atomic 16 (the default): the 17th outstanding READ is an
  // invalid request; what follows it is dropped (the QP is in error), so a
  // flood of 1000 READs costs 16 response contexts and one NAK.
  io.space = 0;  // no transmit room: the responses stay outstanding
  va = mr.addr;
  dma_len = 64;
  for (uint32_t k = 0; k < 1000; ++k) deliver(from_peer(Opcode::kReadRequest, kRqPsn + k, 0));
  io.space = 1024;
  advance(1000);
  auto f = sent();
  ASSERT_EQ(f.size(), 17u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(f[i].opcode(), static_cast<uint8_t>(Opcode::kReadResponseOnly));
  EXPECT_EQ(f[16].aeth()->syndrome, wire::aeth::nak(wire::aeth::kNakInvalidRequest));
  EXPECT_EQ(f[16].psn(), kRqPsn + 16);
}

TEST_F(Protocol, AReadAskedTwiceAfterItsAnswerNeverCostsANewReadItsPlace) {
  // Open MPI's Allreduce over UCX (max_dest_rd_atomic 128): READ A answered
  // in full, then asked again twice (a requester that timed out before its
  // answer came) while later READs hold the ring. The first repeat is a
  // replay; the second restarted it and the restart used to drop its replay
  // mark, so the ring held a job no request was owed, and the requester's
  // 16th outstanding READ was refused as "more READs and atomics outstanding
  // than max_dest_rd_atomic" (QP_REQ_ERR). The repeat now yields its place.
  // A tita peer (a go-back-N peer's repeat would drop the answers queued
  // behind it: it asks again for those too).
  make(Recovery::kSelectiveRepeat);
  va = mr.addr;
  dma_len = 64;
  deliver(from_tita(from_peer(Opcode::kReadRequest, kRqPsn, 0)));  // A, answered at once
  ASSERT_EQ(sent().size(), 1u);
  io.space = 0;                                         // what follows stays queued
  for (uint32_t k = 1; k < 16; ++k) deliver(from_tita(from_peer(Opcode::kReadRequest, kRqPsn + k, 0)));
  deliver(from_tita(from_peer(Opcode::kReadRequest, kRqPsn, 0)));  // A again: a replay (16 jobs)
  deliver(from_tita(from_peer(Opcode::kReadRequest, kRqPsn, 0)));  // and again: still a replay
  deliver(from_tita(from_peer(Opcode::kReadRequest, kRqPsn + 16, 0)));  // the requester's 16th outstanding
  io.space = 1024;
  advance(1000);
  auto f = sent();
  ASSERT_EQ(f.size(), 16u);
  for (uint32_t k = 0; k < 16; ++k) {
    EXPECT_EQ(f[k].opcode(), static_cast<uint8_t>(Opcode::kReadResponseOnly)) << k;
    EXPECT_EQ(f[k].psn(), kRqPsn + 1 + k);
  }
  EXPECT_EQ(eng->qp_counters(qpn)->nak_invalid_sent, 0u);
}

TEST_F(Protocol, ADuplicateReadWithAnotherKeyReadsOnlyWhatThatKeyNames) {
  // Found by the engine fuzzer: a READ asked again (same PSN) while its first
  // responses were still queued restarted with the new request's address and
  // length, checked against the new key's region, but read from the first
  // request's region: base of one plus the other's offset, anywhere in the
  // process (with a zero-length first READ, at the absolute address asked).
  std::vector<uint8_t> other(4096);
  for (size_t i = 0; i < other.size(); ++i) other[i] = static_cast<uint8_t>(i * 7 + 1);
  MrInfo b;
  for (uint32_t first_len : {64u, 0u}) {
    make(Recovery::kGoBackN);
    ASSERT_EQ(eng->reg_mr(pd, other.data(), other.size(), 0x10000, kAccessRemoteRead, &b), 0);
    io.space = 0;  // the first READ's answer stays queued
    va = mr.addr;
    dma_len = first_len;
    deliver(from_peer(Opcode::kReadRequest, kRqPsn, 0));
    va = b.addr + 128;
    dma_len = 64;
    rkey = b.rkey;
    deliver(from_peer(Opcode::kReadRequest, kRqPsn, 0));  // the same PSN: a duplicate
    rkey = 0;
    io.space = 1024;
    advance(1000);
    auto f = sent();
    ASSERT_EQ(f.size(), 1u) << "first READ of " << first_len << " B";
    EXPECT_EQ(f[0].opcode(), static_cast<uint8_t>(Opcode::kReadResponseOnly));
    ASSERT_EQ(f[0].payload_len, 64u);
    EXPECT_EQ(0, std::memcmp(f[0].payload(), other.data() + 128, 64)) << "first READ of " << first_len << " B";
  }
}

TEST_F(Protocol, AnOutOfOrderFloodInSelectiveRepeatStaysWithinTheWindow) {
  // Selective repeat keeps at most sr_window (256) PSNs ahead of the hole per
  // QP, and at most ooo_slots (8192) frames engine-wide; a burst of 20000 SEND
  // Middles ahead of a hole keeps no more than the window and is dropped beyond it.
  make(Recovery::kSelectiveRepeat);
  post_recv(0, 1 << 15, 1);
  deliver(from_tita(from_peer(Opcode::kSendFirst, kRqPsn, 1024)));
  for (uint32_t k = 2; k < 20002; ++k) deliver(from_tita(from_peer(Opcode::kSendMiddle, kRqPsn + k, 1024)));
  const QpCounters& c = *eng->qp_counters(qpn);
  EXPECT_LE(c.ooo_buffered, 256u);
  EXPECT_GT(c.ooo_buffered, 0u);
  EXPECT_TRUE(completions().empty());
}

TEST_F(Protocol, TheOutOfOrderPoolKeepsAtMostItsSlotsAndEveryKeptFrameExecutesOnceTheHoleFills) {
  // A pool of 40 slots for a window of 256: PSNs 2..100 ahead of the hole at
  // 1, 40 kept and 59 refused (counted); the sender would resend the rest. Once
  // PSN 1 arrives, the 40 kept execute in order: the SEND's first 41 packets
  // are in the receive buffer, byte for byte.
  make(Recovery::kSelectiveRepeat, 1000, 40);
  post_recv(0, 1 << 16, 1);
  deliver(from_tita(from_peer(Opcode::kSendFirst, kRqPsn, 1024)));
  for (uint32_t k = 2; k <= 100; ++k) deliver(from_tita(from_peer(Opcode::kSendMiddle, kRqPsn + k, 1024)));
  EXPECT_EQ(eng->qp_counters(qpn)->ooo_buffered, 40u);
  EXPECT_EQ(eng->counters().ooo_pool_full, 59u);
  deliver(from_tita(from_peer(Opcode::kSendMiddle, kRqPsn + 1, 1024)));
  QpInfo info;
  ASSERT_EQ(eng->qp_info(qpn, &info), 0);
  EXPECT_EQ(info.epsn, wire::psn_add(kRqPsn, 42));  // 0, the hole 1, and 2..41 kept
  for (uint32_t k = 0; k <= 41; ++k) {
    const std::vector<uint8_t> f = from_peer(Opcode::kSendMiddle, kRqPsn + k, 1024);
    wire::Packet p;
    ASSERT_EQ(wire::parse(f.data(), static_cast<uint32_t>(f.size()), &p), wire::ParseError::kOk);
    ASSERT_EQ(0, std::memcmp(mem.data() + k * 1024, p.payload(), 1024)) << "packet " << k;
  }
  EXPECT_TRUE(completions().empty());  // the SEND has no Last yet
}

TEST(Verbs, PostingChecksItsArguments) {
  Capture io;
  Engine eng(EngineConfig{}, &io);
  const uint32_t pd = eng.alloc_pd();
  uint32_t cq, qpn;
  ASSERT_EQ(eng.create_cq(16, &cq), 0);
  EXPECT_EQ(eng.create_qp(pd, {.send_cq = cq, .recv_cq = 7}, &qpn), -EINVAL);
  EXPECT_EQ(eng.create_qp(pd, {.send_cq = cq, .recv_cq = cq, .max_sge = kMaxSge + 1}, &qpn), -EINVAL);
  ASSERT_EQ(eng.create_qp(pd, {.send_cq = cq, .recv_cq = cq, .max_send_wr = 2}, &qpn), 0);
  SendWr wr;
  const SendWr* bad = nullptr;
  EXPECT_EQ(eng.post_send(qpn, &wr, &bad), -EINVAL);  // QP in RESET
  EXPECT_EQ(bad, &wr);
  std::vector<uint8_t> mem(64);
  MrInfo mr;
  EXPECT_EQ(eng.reg_mr(pd, mem.data(), 0, 0, &mr), -EINVAL);
  EXPECT_EQ(eng.reg_mr(pd, mem.data(), 64, kAccessRemoteWrite, &mr), -EINVAL);  // needs local write
  EXPECT_EQ(eng.reg_mr(99, mem.data(), 64, 0, &mr), -EINVAL);
  EXPECT_EQ(eng.dereg_mr(12345), -ENOENT);
}

}  // namespace
}  // namespace tita::engine
