// Shared receive queues (lib/engine/src/srq.cc): two QPs of one engine's
// internal loop send to two QPs that share one SRQ. Receives are taken in
// the order messages arrive, an empty SRQ is an RNR NAK and the SEND goes
// through once a receive is posted, the limit event comes once per arming,
// and the resource rules hold (destroy refused while QPs use it, post_recv
// refused on a QP of an SRQ).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "sim_net.h"
#include "tita/engine/engine.h"

namespace tita::engine {
namespace {

constexpr uint32_t kAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
constexpr uint32_t kSlot = 8192;  // bytes of each receive buffer

class SrqTest : public testing::Test {
 protected:
  SrqTest() : net(1, 100'000'000'000, 1'000) {}

  void SetUp() override {
    Engine& e = eng();
    e.set_event_hook(
        [](void* ctx, const Event& ev) { static_cast<SrqTest*>(ctx)->events.push_back(ev); }, this);
    pd = e.alloc_pd();
    buf.assign(64 * kSlot, 0);
    ASSERT_EQ(e.reg_mr(pd, buf.data(), buf.size(), kAccess, &mr), 0);
    ASSERT_EQ(e.create_cq(1024, &cq), 0);
    SrqAttr sa{.max_wr = 16, .max_sge = 2, .srq_limit = 0};
    ASSERT_EQ(e.create_srq(pd, &sa, &srq), 0);
    EXPECT_NE(srq, 0u);
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(e.create_qp(pd, {.send_cq = cq, .recv_cq = cq, .max_send_wr = 64, .max_recv_wr = 64}, &snd[i]), 0);
      QpInitAttr ra{.send_cq = cq, .recv_cq = cq, .max_send_wr = 64, .max_recv_wr = 64, .srq = srq};
      ASSERT_EQ(e.create_qp(pd, &ra, &rcv[i]), 0);
      EXPECT_EQ(ra.max_recv_wr, 0u);  // as a provider reports a QP of an SRQ
    }
    for (int i = 0; i < 2; ++i) {
      connect(snd[i], rcv[i]);
      connect(rcv[i], snd[i]);
    }
  }

  Engine& eng() { return net.engine(0); }

  void connect(uint32_t qp, uint32_t peer) {
    std::string err;
    QpAttr a;
    a.timeout = 10;
    a.rnr_retry = 7;
    a.min_rnr_timer = 1;  // 10 us
    a.qp_state = QpState::kInit;
    a.qp_access_flags = kAccess;
    ASSERT_EQ(eng().modify_qp(qp, a, kQpState | kQpToInitRequired, &err), 0) << err;
    a.qp_state = QpState::kRtr;
    a.dest_qp_num = peer;
    a.ah_attr.dgid = net.gid(0);
    ASSERT_EQ(eng().modify_qp(qp, a, kQpState | kQpToRtrRequired, &err), 0) << err;
    a.qp_state = QpState::kRts;
    ASSERT_EQ(eng().modify_qp(qp, a, kQpState | kQpToRtsRequired, &err), 0) << err;
  }

  // A receive of buffer slot `slot`, wr_id 1000 + slot.
  int post_srq(uint32_t slot) {
    const Sge sge{reinterpret_cast<uint64_t>(buf.data() + size_t{slot} * kSlot), kSlot, mr.lkey};
    RecvWr wr{.wr_id = 1000u + slot, .next = nullptr, .sg_list = &sge, .num_sge = 1};
    return eng().post_srq_recv(srq, &wr, nullptr);
  }

  // A SEND of `len` bytes of `fill` from QP snd[i] (from the buffer's last slots).
  void send(int i, uint32_t len, uint8_t fill, uint64_t wr_id) {
    uint8_t* src = buf.data() + static_cast<size_t>(60 + i) * kSlot;
    std::memset(src, fill, len);
    const Sge sge{reinterpret_cast<uint64_t>(src), len, mr.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = kSendSignaled;
    ASSERT_EQ(eng().post_send(snd[i], &wr, nullptr), 0);
  }

  // Runs until `n` completions came (or 10 ms of virtual time), returning them.
  std::vector<WorkCompletion> wait(size_t n, uint64_t ns = 10'000'000) {
    std::vector<WorkCompletion> out;
    net.run_until(
        [&] {
          WorkCompletion wc[16];
          const int k = eng().poll_cq(cq, 16, wc);
          for (int j = 0; j < k; ++j) out.push_back(wc[j]);
          return out.size() >= n;
        },
        net.now() + ns);
    return out;
  }

  // The receive completion among `wcs` (exactly one expected).
  static WorkCompletion recv_of(const std::vector<WorkCompletion>& wcs) {
    WorkCompletion r;
    int found = 0;
    for (const auto& wc : wcs) {
      if (wc.opcode == WcOpcode::kRecv) {
        r = wc;
        ++found;
      }
    }
    EXPECT_EQ(found, 1);
    return r;
  }

  test::SimNet net;
  uint32_t pd = 0;
  MrInfo mr;
  std::vector<uint8_t> buf;
  uint32_t cq = 0;
  uint32_t srq = 0;
  uint32_t snd[2] = {};
  uint32_t rcv[2] = {};
  std::vector<Event> events;
};

TEST_F(SrqTest, SendsTakeReceivesInArrivalOrderAcrossQps) {
  for (uint32_t s = 0; s < 6; ++s) ASSERT_EQ(post_srq(s), 0);
  // Alternating senders, one message at a time; sizes from one packet to
  // several (1 KB path MTU): the WQE a message takes stays its own.
  const uint32_t lens[6] = {100, 5000, 1, 1024, 4097, 0};
  for (uint32_t k = 0; k < 6; ++k) {
    const int i = static_cast<int>(k % 2);
    send(i, lens[k], static_cast<uint8_t>(0x10 + k), k);
    const auto wcs = wait(2);
    ASSERT_EQ(wcs.size(), 2u) << "message " << k;
    for (const auto& wc : wcs) EXPECT_EQ(wc.status, WcStatus::kSuccess) << to_string(wc.status);
    const WorkCompletion r = recv_of(wcs);
    EXPECT_EQ(r.wr_id, 1000u + k);  // the SRQ's WQEs in order, whichever QP received
    EXPECT_EQ(r.qp_num, rcv[i]);
    EXPECT_EQ(r.byte_len, lens[k]);
    const uint8_t* dst = buf.data() + size_t{k} * kSlot;
    for (uint32_t b = 0; b < lens[k]; ++b) ASSERT_EQ(dst[b], 0x10 + k) << "message " << k << " byte " << b;
    EXPECT_EQ(dst[lens[k]], 0) << "message " << k << ": a byte past its end";
  }
}

TEST_F(SrqTest, EmptySrqIsRnrThenTheSendGoesThrough) {
  send(0, 300, 0xab, 7);
  EXPECT_TRUE(wait(1, 1'000'000).empty());  // 1 ms: RNR NAKs, no completion
  const QpCounters* sc = eng().qp_counters(snd[0]);
  const QpCounters* rc = eng().qp_counters(rcv[0]);
  EXPECT_GT(rc->rnr_nak_sent, 0u);
  EXPECT_GT(sc->rnr_nak_received, 0u);
  ASSERT_EQ(post_srq(3), 0);
  const auto wcs = wait(2);
  ASSERT_EQ(wcs.size(), 2u);
  for (const auto& wc : wcs) EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_EQ(recv_of(wcs).wr_id, 1003u);
  EXPECT_EQ(buf[3 * kSlot + 299], 0xab);
}

TEST_F(SrqTest, LimitEventOncePerArming) {
  for (uint32_t s = 0; s < 4; ++s) ASSERT_EQ(post_srq(s), 0);
  std::string err;
  ASSERT_EQ(eng().modify_srq(srq, {.max_wr = 0, .max_sge = 0, .srq_limit = 3}, kSrqLimit, &err), 0) << err;
  SrqAttr q;
  ASSERT_EQ(eng().query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 3u);
  EXPECT_EQ(q.max_wr, 16u);
  EXPECT_EQ(q.max_sge, 2u);
  auto limit_events = [&] {
    int n = 0;
    for (const auto& ev : events) n += ev.kind == EventKind::kSrqLimitReached;
    return n;
  };
  send(0, 10, 1, 1);
  ASSERT_EQ(wait(2).size(), 2u);
  EXPECT_EQ(limit_events(), 0);  // 3 left: not below 3
  send(1, 10, 2, 2);
  ASSERT_EQ(wait(2).size(), 2u);
  ASSERT_EQ(limit_events(), 1);  // 2 left
  for (const auto& ev : events) {
    if (ev.kind == EventKind::kSrqLimitReached) {
      EXPECT_EQ(ev.srq, srq);
    }
  }
  ASSERT_EQ(eng().query_srq(srq, &q), 0);
  EXPECT_EQ(q.srq_limit, 0u);  // disarmed
  send(0, 10, 3, 3);
  ASSERT_EQ(wait(2).size(), 2u);
  EXPECT_EQ(limit_events(), 1);  // not again until armed again
  ASSERT_EQ(eng().modify_srq(srq, {.max_wr = 0, .max_sge = 0, .srq_limit = 2}, kSrqLimit, &err), 0) << err;
  send(1, 10, 4, 4);
  ASSERT_EQ(wait(2).size(), 2u);
  EXPECT_EQ(limit_events(), 2);
}

TEST_F(SrqTest, ResizeKeepsWhatIsQueued) {
  for (uint32_t s = 0; s < 5; ++s) ASSERT_EQ(post_srq(s), 0);
  std::string err;
  EXPECT_EQ(eng().modify_srq(srq, {.max_wr = 4, .max_sge = 0, .srq_limit = 0}, kSrqMaxWr, &err), -EINVAL);
  EXPECT_NE(err.find("below the 5 WQEs queued"), std::string::npos) << err;
  EXPECT_EQ(eng().modify_srq(srq, {.max_wr = 8, .max_sge = 0, .srq_limit = 9}, kSrqMaxWr | kSrqLimit, &err),
            -EINVAL);
  ASSERT_EQ(eng().modify_srq(srq, {.max_wr = 5, .max_sge = 0, .srq_limit = 0}, kSrqMaxWr, &err), 0) << err;
  EXPECT_EQ(post_srq(5), -ENOMEM);  // full at 5
  for (uint32_t k = 0; k < 5; ++k) {
    send(0, 64, static_cast<uint8_t>(k), k);
    const auto wcs = wait(2);
    ASSERT_EQ(wcs.size(), 2u);
    EXPECT_EQ(recv_of(wcs).wr_id, 1000u + k);
  }
}

TEST_F(SrqTest, ResourceRules) {
  // post_recv on a QP of an SRQ is refused; a QP of another PD may not use it.
  const Sge sge{reinterpret_cast<uint64_t>(buf.data()), 64, mr.lkey};
  RecvWr wr{.wr_id = 1, .next = nullptr, .sg_list = &sge, .num_sge = 1};
  const RecvWr* bad = nullptr;
  EXPECT_EQ(eng().post_recv(rcv[0], &wr, &bad), -EINVAL);
  EXPECT_EQ(bad, &wr);
  const Sge three[3] = {sge, sge, sge};
  RecvWr wide{.wr_id = 2, .next = nullptr, .sg_list = three, .num_sge = 3};
  EXPECT_EQ(eng().post_srq_recv(srq, &wide, nullptr), -EINVAL);  // max_sge 2
  const uint32_t pd2 = eng().alloc_pd();
  uint32_t q = 0;
  EXPECT_EQ(eng().create_qp(pd2, {.send_cq = cq, .recv_cq = cq, .srq = srq}, &q), -EINVAL);
  EXPECT_EQ(eng().create_qp(pd, {.send_cq = cq, .recv_cq = cq, .srq = 99}, &q), -EINVAL);
  SrqAttr too_big{.max_wr = (1u << 20) + 1, .max_sge = 1, .srq_limit = 0};
  EXPECT_EQ(eng().create_srq(pd, &too_big, &q), -EINVAL);
  // Destroy refused while QPs use it (and its PD with it), allowed after.
  EXPECT_EQ(eng().destroy_srq(srq), -EBUSY);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(eng().destroy_qp(rcv[i]), 0);
  EXPECT_EQ(eng().dealloc_pd(pd2), 0);
  for (int i = 0; i < 2; ++i) ASSERT_EQ(eng().destroy_qp(snd[i]), 0);
  ASSERT_EQ(eng().dereg_mr(mr.lkey), 0);
  EXPECT_EQ(eng().dealloc_pd(pd), -EBUSY);  // the SRQ still uses it
  EXPECT_EQ(eng().destroy_srq(srq), 0);
  EXPECT_EQ(eng().destroy_srq(srq), -EINVAL);
  EXPECT_EQ(eng().dealloc_pd(pd), 0);
}

TEST_F(SrqTest, ErrorFlushesOnlyTheTakenWqeAndSaysLastWqe) {
  for (uint32_t s = 0; s < 3; ++s) ASSERT_EQ(post_srq(s), 0);
  // A message longer than its receive: that receive fails, the QP goes to
  // error (LAST_WQE_REACHED); the SRQ's other WQEs stay for the other QP.
  send(0, kSlot + 1, 0x55, 1);
  const auto wcs = wait(2);
  ASSERT_GE(wcs.size(), 1u);
  bool len_err = false;
  for (const auto& wc : wcs) {
    if (wc.opcode == WcOpcode::kRecv) {
      EXPECT_EQ(wc.wr_id, 1000u);
      EXPECT_EQ(wc.status, WcStatus::kLocLenErr);
      len_err = true;
    }
  }
  EXPECT_TRUE(len_err);
  wait(100, 1'000'000);  // the rest settles
  QpAttr qa;
  ASSERT_EQ(eng().query_qp(rcv[0], &qa), 0);
  EXPECT_EQ(qa.qp_state, QpState::kError);  // an invalid request moves the responder to error
  int last_wqe = 0;
  for (const auto& ev : events) last_wqe += ev.kind == EventKind::kQpLastWqeReached && ev.qp_num == rcv[0];
  EXPECT_EQ(last_wqe, 1);
  send(1, 200, 0x66, 2);
  const auto ok = wait(2);
  ASSERT_EQ(ok.size(), 2u);
  EXPECT_EQ(recv_of(ok).wr_id, 1001u);
  EXPECT_EQ(recv_of(ok).status, WcStatus::kSuccess);
}

}  // namespace
}  // namespace tita::engine
