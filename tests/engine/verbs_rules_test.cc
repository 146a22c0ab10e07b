// The IBA rules a verbs user relies on, one test each: the QP transition table,
// atomics (executed once, duplicates answered from the saved result), inline
// data, fences, CQ overflow and completion events, a refused SEND writing
// nothing, zero-length operations, PSN wrap, 2^31-byte messages, duplicate READs,
// unlimited RNR retries, RESET and reuse, ARP, frames for someone else, the
// internal loop and the port's frame size. Frames the engine emits are parsed
// and checked ("Expect:"); end-to-end cases run two engines on the in-memory
// network and compare every byte.
#include <gtest/gtest.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "pair.h"
#include "scripted_peer.h"
#include "tita/engine/engine.h"
#include "tita/wire/arp.h"
#include "tita/wire/psn.h"
#include "workload.h"

namespace tita::engine {
namespace {

using test::CaptureIo;
using test::kPeerQpn;
using test::kRqPsn;
using test::kSqPsn;
using wire::Opcode;

constexpr uint32_t kAllAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

// ---------------------------------------------------------------- the transition table

class Transitions : public testing::Test {
 protected:
  void SetUp() override {
    eng = std::make_unique<Engine>(EngineConfig{}, &io);
    pd = eng->alloc_pd();
    ASSERT_EQ(eng->create_cq(16, &cq), 0);
    ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &qpn), 0);
    a.ah_attr.dgid = wire::Gid::from_ipv4(0x0a000002);
    a.ah_attr.dmac[5] = 2;
  }
  int to(QpState s, uint32_t mask) {
    a.qp_state = s;
    return eng->modify_qp(qpn, a, kQpState | mask, &err);
  }
  QpState state() {
    QpAttr q;
    eng->query_qp(qpn, &q);
    return q.qp_state;
  }
  void up_to_rts() {
    ASSERT_EQ(to(QpState::kInit, kQpToInitRequired), 0) << err;
    ASSERT_EQ(to(QpState::kRtr, kQpToRtrRequired), 0) << err;
    ASSERT_EQ(to(QpState::kRts, kQpToRtsRequired), 0) << err;
  }

  CaptureIo io;
  std::unique_ptr<Engine> eng;
  uint32_t pd = 0, cq = 0, qpn = 0;
  QpAttr a;
  std::string err;
};

TEST_F(Transitions, PayloadBytesIsCheckedAgainstThePathMtu) {
  ASSERT_EQ(to(QpState::kInit, kQpToInitRequired), 0) << err;
  a.path_mtu = 1024;
  for (uint32_t bad : {1001u, 60u, 2048u}) {
    a.payload_bytes = bad;
    EXPECT_EQ(to(QpState::kRtr, kQpToRtrRequired), -EINVAL) << bad;
    EXPECT_EQ(err, "modify_qp: payload_bytes " + std::to_string(bad) +
                       " is not a multiple of 4 from 64 to path_mtu 1024");
  }
  a.payload_bytes = 1000;
  EXPECT_EQ(to(QpState::kRtr, kQpToRtrRequired), 0) << err;
}

TEST_F(Transitions, EachTransitionRequiresExactlyItsAttributes) {
  EXPECT_EQ(to(QpState::kInit, kQpAccessFlags), -EINVAL);
  EXPECT_EQ(err, "modify_qp: RESET->INIT needs IBV_QP_PKEY_INDEX, IBV_QP_PORT");
  ASSERT_EQ(to(QpState::kInit, kQpToInitRequired), 0) << err;
  EXPECT_EQ(to(QpState::kRtr, kQpToRtrRequired & ~kQpMinRnrTimer), -EINVAL);
  EXPECT_EQ(err, "modify_qp: INIT->RTR needs IBV_QP_MIN_RNR_TIMER");
  EXPECT_EQ(to(QpState::kRtr, kQpToRtrRequired | kQpSqPsn), -EINVAL);
  EXPECT_NE(err.find("INIT->RTR does not take IBV_QP_SQ_PSN"), std::string::npos) << err;
  EXPECT_EQ(state(), QpState::kInit);  // a refused modify changes nothing
  ASSERT_EQ(to(QpState::kRtr, kQpToRtrRequired), 0) << err;
  EXPECT_EQ(to(QpState::kRts, kQpSqPsn), -EINVAL);
  EXPECT_EQ(err, "modify_qp: RTR->RTS needs IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY, "
                 "IBV_QP_MAX_QP_RD_ATOMIC");
  ASSERT_EQ(to(QpState::kRts, kQpToRtsRequired), 0) << err;
  EXPECT_EQ(state(), QpState::kRts);
}

TEST_F(Transitions, ConnectRcAppliesEachFieldAtItsTransitionAndStopsAtTheFirstRefusal) {
  a.qp_access_flags = kAccessRemoteRead;
  a.path_mtu = 2048;
  a.dest_qp_num = 0x123;
  a.rq_psn = 77;
  a.sq_psn = 99;
  a.timeout = 9;
  a.retry_cnt = 5;
  a.max_dest_rd_atomic = 3;
  a.recovery = Recovery::kSelectiveRepeat;
  a.qp_state = QpState::kSqe;  // ignored
  ASSERT_EQ(connect_rc(*eng, qpn, a, &err), 0) << err;
  QpAttr q;
  ASSERT_EQ(eng->query_qp(qpn, &q), 0);
  EXPECT_EQ(q.qp_state, QpState::kRts);
  EXPECT_EQ(q.qp_access_flags, kAccessRemoteRead);
  EXPECT_EQ(q.path_mtu, 2048u);
  EXPECT_EQ(q.dest_qp_num, 0x123u);
  EXPECT_EQ(q.rq_psn, 77u);
  EXPECT_EQ(q.sq_psn, 99u);
  EXPECT_EQ(q.timeout, 9);
  EXPECT_EQ(q.retry_cnt, 5);
  EXPECT_EQ(q.max_dest_rd_atomic, 3);
  EXPECT_EQ(q.recovery, Recovery::kSelectiveRepeat);
  // A QP already in RTS: RESET->INIT is refused with modify_qp's message.
  EXPECT_EQ(connect_rc(*eng, qpn, a, &err), -EINVAL);
  EXPECT_NE(err.find("RTS->INIT"), std::string::npos) << err;
  // A path MTU the IBA lacks: the QP stays in INIT, where the ladder stopped.
  uint32_t other = 0;
  ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &other), 0);
  a.path_mtu = 3000;
  EXPECT_EQ(connect_rc(*eng, other, a, &err), -EINVAL);
  ASSERT_EQ(eng->query_qp(other, &q), 0);
  EXPECT_EQ(q.qp_state, QpState::kInit);
}

TEST_F(Transitions, RtsToRtsCannotRewriteThePathOrThePsns) {
  up_to_rts();
  a.path_mtu = 4096;
  EXPECT_EQ(to(QpState::kRts, kQpPathMtu), -EINVAL);
  EXPECT_NE(err.find("RTS->RTS does not take IBV_QP_PATH_MTU"), std::string::npos) << err;
  EXPECT_EQ(to(QpState::kRts, kQpSqPsn), -EINVAL);
  EXPECT_EQ(to(QpState::kRts, kQpRqPsn), -EINVAL);
  EXPECT_EQ(to(QpState::kRts, kQpDestQpn), -EINVAL);
  EXPECT_EQ(to(QpState::kRts, kQpAv), -EINVAL);
  // What RTS->RTS may change: access flags and the RNR timer.
  a.qp_access_flags = kAccessRemoteRead;
  a.min_rnr_timer = 12;
  ASSERT_EQ(to(QpState::kRts, kQpAccessFlags | kQpMinRnrTimer), 0) << err;
  QpAttr q;
  eng->query_qp(qpn, &q);
  EXPECT_EQ(q.path_mtu, 1024u);
  EXPECT_EQ(q.qp_access_flags, kAccessRemoteRead);
  EXPECT_EQ(q.min_rnr_timer, 12);
  // Without IBV_QP_STATE the transition is RTS->RTS.
  EXPECT_EQ(eng->modify_qp(qpn, a, kQpMinRnrTimer, &err), 0) << err;
  EXPECT_EQ(eng->modify_qp(qpn, a, kQpTimeout, &err), -EINVAL);
}

TEST_F(Transitions, TransitionsThatDoNotExist) {
  EXPECT_EQ(to(QpState::kRts, 0), -EINVAL);
  EXPECT_EQ(err, "modify_qp: no transition RESET->RTS");
  EXPECT_EQ(to(QpState::kError, 0), -EINVAL);  // RESET->ERR is not in the table
  ASSERT_EQ(to(QpState::kInit, kQpToInitRequired), 0);
  EXPECT_EQ(to(QpState::kRts, kQpToRtsRequired), -EINVAL);
  EXPECT_EQ(err, "modify_qp: no transition INIT->RTS");
  // INIT->INIT takes what RESET->INIT takes, optionally.
  EXPECT_EQ(to(QpState::kInit, kQpAccessFlags), 0) << err;
  ASSERT_EQ(to(QpState::kRtr, kQpToRtrRequired), 0);
  EXPECT_EQ(to(QpState::kRtr, 0), -EINVAL);  // RTR->RTR does not exist
  EXPECT_EQ(to(QpState::kSqd, 0), -EINVAL);  // nor RTR->SQD
  ASSERT_EQ(to(QpState::kRts, kQpToRtsRequired), 0);
  EXPECT_EQ(to(QpState::kSqd, 0), -EOPNOTSUPP);
  EXPECT_NE(err.find("SQD"), std::string::npos);
  EXPECT_EQ(to(QpState::kError, 0), 0);
  EXPECT_EQ(to(QpState::kRts, 0), -EINVAL);  // ERROR goes only to RESET (or stays)
  EXPECT_EQ(to(QpState::kError, 0), 0);
  EXPECT_EQ(to(QpState::kReset, 0), 0);
  EXPECT_EQ(state(), QpState::kReset);
}

// RESET makes the QP again the way create_qp made it: the same creation
// attributes (queue sizes as rounded up), an empty send queue of the same
// capacity, fresh counters, and its settings kept (congestion control, path
// control).
TEST_F(Transitions, ResetMakesTheQpAgainAsCreateQpDid) {
  QpInitAttr init{.send_cq = cq, .recv_cq = cq, .max_send_wr = 5, .max_inline_data = 10};
  uint32_t q;
  ASSERT_EQ(eng->create_qp(pd, &init, &q), 0);
  EXPECT_EQ(init.max_send_wr, 7u);       // a ring of 8
  EXPECT_EQ(init.max_inline_data, 64u);  // whole 64-byte slots
  ASSERT_EQ(eng->set_cc(q, "dcqcn", {}, &err), 0) << err;
  ASSERT_EQ(eng->set_path_config(q, PathConfig{.field = wire::DodgeField::kUdpSport}, &err), 0) << err;
  qpn = q;
  up_to_rts();
  SendWr wr;
  wr.opcode = WrOpcode::kRdmaWrite;
  const auto fill = [&] {
    int posted = 0;
    while (eng->post_send(q, &wr, nullptr) == 0) ++posted;
    return posted;
  };
  EXPECT_EQ(fill(), 7);
  ASSERT_EQ(eng->repath(q), 0);
  ASSERT_EQ(to(QpState::kReset, 0), 0) << err;

  QpInitAttr after;
  ASSERT_EQ(eng->query_qp_init(q, &after), 0);
  EXPECT_EQ(after.max_send_wr, 7u);
  EXPECT_EQ(after.max_recv_wr, init.max_recv_wr);
  EXPECT_EQ(after.max_inline_data, 64u);
  QpInfo info;
  ASSERT_EQ(eng->qp_info(q, &info), 0);
  EXPECT_EQ(info.state, QpState::kReset);
  EXPECT_EQ(info.send_queue_depth, 0u);
  EXPECT_EQ(info.cc, "dcqcn");
  up_to_rts();
  EXPECT_EQ(fill(), 7);  // the same capacity, nothing left of the first life
  EXPECT_EQ(eng->repath(q), 0);  // path control still on (off: -EINVAL)
  EXPECT_EQ(eng->qp_counters(q)->path_changes, 1u);  // counters start again
}

TEST_F(Transitions, ValuesAreCheckedToo) {
  a.pkey_index = 1;
  EXPECT_EQ(to(QpState::kInit, kQpToInitRequired), -EINVAL);
  EXPECT_EQ(err, "modify_qp: pkey_index 1: the P_Key table has one entry (index 0)");
  a.pkey_index = 0;
  a.port_num = 2;
  EXPECT_EQ(to(QpState::kInit, kQpToInitRequired), -EINVAL);
  EXPECT_EQ(err, "modify_qp: port_num 2: the device has one port (1)");
  a.port_num = 1;
  ASSERT_EQ(to(QpState::kInit, kQpToInitRequired), 0);
  a.path_mtu = 1500;
  EXPECT_EQ(to(QpState::kRtr, kQpToRtrRequired), -EINVAL);
  EXPECT_EQ(err, "modify_qp: path_mtu 1500 is not 256, 512, 1024, 2048 or 4096");
  a.path_mtu = 1024;
  a.max_dest_rd_atomic = 200;
  EXPECT_EQ(to(QpState::kRtr, kQpToRtrRequired), -EINVAL);
  EXPECT_NE(err.find("max_dest_rd_atomic 200 is above"), std::string::npos) << err;
  a.max_dest_rd_atomic = 0;  // accepts no READs or atomics: allowed
  a.ah_attr.dgid = wire::Gid{};
  EXPECT_EQ(to(QpState::kRtr, kQpToRtrRequired), -EINVAL);
  EXPECT_EQ(err, "modify_qp: ah_attr: the destination GID is zero");
  a.ah_attr.dgid = wire::Gid::from_ipv4(0x0a000002);
  ASSERT_EQ(to(QpState::kRtr, kQpToRtrRequired), 0) << err;
  a.cur_qp_state = QpState::kRts;
  EXPECT_EQ(to(QpState::kRts, kQpToRtsRequired | kQpCurState), -EINVAL);
  EXPECT_EQ(err, "modify_qp: cur_qp_state RTS but the QP is RTR");
  a.cur_qp_state = QpState::kRtr;
  EXPECT_EQ(to(QpState::kRts, kQpToRtsRequired | kQpCurState), 0) << err;
  EXPECT_EQ(eng->modify_qp(qpn + 1000, a, kQpState, &err), -EINVAL);
  EXPECT_EQ(err, "modify_qp: no QP " + std::to_string(qpn + 1000));
}

TEST(PortFrames, PathMtuBeyondThePortIsRefusedAtModify) {
  CaptureIo io;
  EngineConfig cfg;
  cfg.max_frame_bytes = 1518;  // a standard Ethernet port
  Engine eng(cfg, &io);
  const uint32_t pd = eng.alloc_pd();
  uint32_t cq, qpn;
  ASSERT_EQ(eng.create_cq(16, &cq), 0);
  ASSERT_EQ(eng.create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &qpn), 0);
  std::string err;
  QpAttr a;
  a.qp_state = QpState::kInit;
  ASSERT_EQ(eng.modify_qp(qpn, a, kQpState | kQpToInitRequired, &err), 0);
  a.qp_state = QpState::kRtr;
  a.ah_attr.dgid = wire::Gid::from_ipv4(0x0a000002);
  a.ah_attr.dmac[5] = 2;
  a.path_mtu = 2048;
  EXPECT_EQ(eng.modify_qp(qpn, a, kQpState | kQpToRtrRequired, &err), -EINVAL);
  EXPECT_NE(err.find("path_mtu 2048 needs frames of"), std::string::npos) << err;
  EXPECT_NE(err.find("the port carries at most 1518"), std::string::npos) << err;
  a.path_mtu = 1024;
  EXPECT_EQ(eng.modify_qp(qpn, a, kQpState | kQpToRtrRequired, &err), 0) << err;
}

// ---------------------------------------------------------------- the scripted peer

class Rules : public test::ScriptedPeerTest {
 protected:
  void SetUp() override { make({}); }

  void make(EngineConfig cfg, uint8_t max_dest_rd_atomic = 4) {
    cfg.ack_req_every = 1000;
    cfg.ack_unsolicited = 1000;
    QpAttr a;
    a.timeout = 4;  // 65.5 us
    a.retry_cnt = 3;
    a.max_dest_rd_atomic = max_dest_rd_atomic;
    open(cfg, a);
    std::string err;
    // Atomic access too, for the atomic rules.
    a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    ASSERT_EQ(eng->modify_qp(qpn, a, kQpAccessFlags, &err), 0) << err;
    ASSERT_EQ(eng->dereg_mr(mr.lkey), 0);
    ASSERT_EQ(eng->reg_mr(pd, mem.data(), mem.size(), kAllAccess, &mr), 0);
  }

  std::vector<WorkCompletion> completions() {
    std::vector<WorkCompletion> out(64);
    out.resize(static_cast<size_t>(std::max(0, eng->poll_cq(cq, 64, out.data()))));
    return out;
  }

  void advance(uint64_t ns) {
    now += ns;
    eng->poll(now);
  }

  // An atomic from the peer on our memory.
  std::vector<uint8_t> peer_atomic(Opcode op, uint32_t psn, uint64_t va, uint64_t swap_add, uint64_t compare,
                                   uint32_t rkey = 0) {
    wire::FrameFields f = peer_fields(op, psn);
    f.va = va;
    f.rkey = rkey ? rkey : mr.rkey;
    f.swap_add = swap_add;
    f.compare = compare;
    f.ack_req = true;
    return frame_of(f, {});
  }

  uint64_t word(uint64_t off) {
    uint64_t v;
    std::memcpy(&v, mem.data() + off, 8);
    return v;
  }
  void set_word(uint64_t off, uint64_t v) { std::memcpy(mem.data() + off, &v, 8); }

  int post_atomic(WrOpcode op, uint64_t local_off, uint64_t remote, uint64_t compare_add, uint64_t swap,
                  uint64_t wr_id = 1) {
    Sge sge{mr.addr + local_off, 8, mr.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.atomic.remote_addr = remote;
    wr.atomic.rkey = 0x4242;
    wr.atomic.compare_add = compare_add;
    wr.atomic.swap = swap;
    const int rc = eng->post_send(qpn, &wr, nullptr);
    eng->poll(now);
    return rc;
  }

  int post(WrOpcode op, uint64_t off, uint32_t len, uint32_t flags = kSendSignaled, uint64_t wr_id = 1) {
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

  std::vector<uint8_t> peer_ack(uint32_t psn, uint8_t syndrome = wire::aeth::ack()) {
    wire::FrameFields f = peer_fields(Opcode::kAck, psn);
    f.syndrome = syndrome;
    return frame_of(f, {});
  }

  std::vector<uint8_t> peer_atomic_ack(uint32_t psn, uint64_t orig) {
    wire::FrameFields f = peer_fields(Opcode::kAtomicAck, psn);
    f.orig = orig;
    return frame_of(f, {});
  }

  std::vector<Event> events;
  static void on_event(void* ctx, const Event& e) { static_cast<Rules*>(ctx)->events.push_back(e); }
};

TEST_F(Rules, AtomicRequestsCarryTheirOperandsAndPlaceTheOriginalValue) {
  ASSERT_EQ(post_atomic(WrOpcode::kAtomicCmpAndSwp, 64, 0x9000, 5, 7, 11), 0);
  ASSERT_EQ(post_atomic(WrOpcode::kAtomicFetchAndAdd, 72, 0x9008, 3, 0, 12), 0);
  // Expect: CmpSwap PSN 100 {va, rkey, swap 7, compare 5}, FetchAdd PSN 101 {add 3}, both asking for an ACK.
  auto out = sent();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kCompareSwap));
  EXPECT_EQ(out[0].psn(), kSqPsn);
  EXPECT_EQ(out[0].atomic_eth()->va.get(), 0x9000u);
  EXPECT_EQ(out[0].atomic_eth()->rkey.get(), 0x4242u);
  EXPECT_EQ(out[0].atomic_eth()->swap_add.get(), 7u);
  EXPECT_EQ(out[0].atomic_eth()->compare.get(), 5u);
  EXPECT_TRUE(out[0].bth().ack_requested());
  EXPECT_EQ(out[1].opcode(), static_cast<uint8_t>(Opcode::kFetchAdd));
  EXPECT_EQ(out[1].psn(), kSqPsn + 1);
  EXPECT_EQ(out[1].atomic_eth()->swap_add.get(), 3u);
  deliver(peer_atomic_ack(kSqPsn, 5));
  deliver(peer_atomic_ack(kSqPsn + 1, 0x1122334455667788ull));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 11u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kCompSwap);
  EXPECT_EQ(wc[0].byte_len, 8u);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kFetchAdd);
  EXPECT_EQ(word(64), 5u);
  EXPECT_EQ(word(72), 0x1122334455667788ull);
}

TEST_F(Rules, AtomicPostingRulesMatchADevice) {
  Sge two[2] = {{mr.addr, 4, mr.lkey}, {mr.addr + 4, 4, mr.lkey}};
  SendWr wr;
  wr.opcode = WrOpcode::kAtomicFetchAndAdd;
  wr.sg_list = two;
  wr.num_sge = 2;
  EXPECT_EQ(eng->post_send(qpn, &wr, nullptr), -EINVAL);  // one 8-byte SGE
  two[0].length = 16;
  wr.num_sge = 1;
  EXPECT_EQ(eng->post_send(qpn, &wr, nullptr), -EINVAL);
  two[0].length = 8;
  wr.send_flags = kSendSignaled | kSendInline;
  EXPECT_EQ(eng->post_send(qpn, &wr, nullptr), -EINVAL);
  EXPECT_TRUE(sent().empty());
}

TEST_F(Rules, ResponderExecutesAtomicsOnceAndAnswersDuplicatesFromTheSavedResult) {
  set_word(0x100, 5);
  // Expect: CmpSwap(compare 5, swap 9) -> Atomic ACK orig 5, memory 9.
  deliver(peer_atomic(Opcode::kCompareSwap, kRqPsn, mr.addr + 0x100, 9, 5));
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kAtomicAck));
  EXPECT_EQ(out[0].psn(), kRqPsn);
  EXPECT_EQ(out[0].atomic_ack()->orig.get(), 5u);
  EXPECT_EQ(wire::aeth::type(out[0].aeth()->syndrome), wire::aeth::kAck);
  EXPECT_EQ(word(0x100), 9u);
  // A failing compare returns the current value and writes nothing.
  deliver(peer_atomic(Opcode::kCompareSwap, kRqPsn + 1, mr.addr + 0x100, 1, 5));
  out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].atomic_ack()->orig.get(), 9u);
  EXPECT_EQ(word(0x100), 9u);
  // FetchAdd: returns 9, leaves 9 + 100.
  deliver(peer_atomic(Opcode::kFetchAdd, kRqPsn + 2, mr.addr + 0x100, 100, 0));
  out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].atomic_ack()->orig.get(), 9u);
  EXPECT_EQ(word(0x100), 109u);
  // Its ACK was lost and the requester asks again: the same answer, not a second add.
  deliver(peer_atomic(Opcode::kFetchAdd, kRqPsn + 2, mr.addr + 0x100, 100, 0));
  out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].psn(), kRqPsn + 2);
  EXPECT_EQ(out[0].atomic_ack()->orig.get(), 9u);
  EXPECT_EQ(word(0x100), 109u);
  // So is the first one, three atomics back (max_dest_rd_atomic results are kept).
  deliver(peer_atomic(Opcode::kCompareSwap, kRqPsn, mr.addr + 0x100, 9, 5));
  out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].atomic_ack()->orig.get(), 5u);
  EXPECT_EQ(word(0x100), 109u);
  const QpCounters& c = *eng->qp_counters(qpn);
  EXPECT_EQ(c.atomics_executed, 3u);
  EXPECT_EQ(c.atomic_replays, 2u);
}

TEST_F(Rules, MisalignedAtomicIsAnInvalidRequest) {
  eng->set_event_hook(&Rules::on_event, this);
  set_word(0x100, 1);
  deliver(peer_atomic(Opcode::kFetchAdd, kRqPsn, mr.addr + 0x104, 1, 0));
  // Expect: NAK Invalid Request, memory untouched, the QP in error with IBV_EVENT_QP_REQ_ERR.
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kAck));
  EXPECT_EQ(out[0].aeth()->syndrome, wire::aeth::nak(wire::aeth::kNakInvalidRequest));
  EXPECT_EQ(word(0x100), 1u);
  EXPECT_EQ(word(0x104 - 4), 1u);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::kQpRequestError);
  EXPECT_EQ(events[0].qp_num, qpn);
  // The event says which request and which rule, for the log line users read.
  EXPECT_EQ(events[0].psn, kRqPsn);
  EXPECT_EQ(events[0].opcode, static_cast<uint8_t>(Opcode::kFetchAdd));
  ASSERT_NE(events[0].why, nullptr);
  EXPECT_NE(std::string_view(events[0].why).find("aligned"), std::string_view::npos) << events[0].why;
}

TEST_F(Rules, AtomicsNeedAtomicAccessAndBounds) {
  eng->set_event_hook(&Rules::on_event, this);
  MrInfo ro;  // a region without remote atomic access
  ASSERT_EQ(eng->reg_mr(pd, mem.data() + 0x8000, 0x1000, kAccessLocalWrite | kAccessRemoteWrite, &ro), 0);
  set_word(0x8000, 42);
  deliver(peer_atomic(Opcode::kFetchAdd, kRqPsn, ro.addr, 1, 0, ro.rkey));
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth()->syndrome, wire::aeth::nak(wire::aeth::kNakRemoteAccessError));
  EXPECT_EQ(word(0x8000), 42u);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::kQpAccessError);
  ASSERT_NE(events[0].why, nullptr);
  EXPECT_NE(std::string_view(events[0].why).find("atomic"), std::string_view::npos) << events[0].why;
}

TEST_F(Rules, AtomicBeyondTheRegionEndIsAnAccessError) {
  deliver(peer_atomic(Opcode::kFetchAdd, kRqPsn, mr.addr + mem.size() - 4, 1, 0));
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth()->syndrome, wire::aeth::nak(wire::aeth::kNakRemoteAccessError));
}

TEST_F(Rules, ResponderResourcesAreSharedByReadsAndAtomics) {
  make({}, 2);  // two outstanding READs or atomics
  set_word(0x200, 0);
  io.space = 0;  // hold the responses back
  wire::FrameFields f = peer_fields(Opcode::kReadRequest, kRqPsn);
  f.va = mr.addr;
  f.rkey = mr.rkey;
  f.dma_len = 64;
  deliver(frame_of(f, {}));
  deliver(peer_atomic(Opcode::kFetchAdd, kRqPsn + 1, mr.addr + 0x200, 1, 0));
  deliver(peer_atomic(Opcode::kFetchAdd, kRqPsn + 2, mr.addr + 0x200, 1, 0));
  io.space = 1024;
  advance(1000);
  // Expect: READ Response Only (PSN 500), Atomic ACK (501), NAK Invalid Request (502).
  auto out = sent();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kReadResponseOnly));
  EXPECT_EQ(out[1].opcode(), static_cast<uint8_t>(Opcode::kAtomicAck));
  EXPECT_EQ(out[1].psn(), kRqPsn + 1);
  EXPECT_EQ(out[2].aeth()->syndrome, wire::aeth::nak(wire::aeth::kNakInvalidRequest));
  EXPECT_EQ(out[2].psn(), kRqPsn + 2);
  EXPECT_EQ(word(0x200), 1u);  // the third never executed
}

TEST_F(Rules, LostAtomicAckIsAskedAgainNotExecutedAgain) {
  // Requester side: the atomic's answer is lost; later ACKs show the
  // responder went a reordering window (3 PSNs) past it; the atomic is asked
  // again with the same PSN.
  ASSERT_EQ(post_atomic(WrOpcode::kAtomicFetchAndAdd, 64, 0x9000, 1, 0, 1), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 16, kSendSignaled, 2), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 16, kSendSignaled, 3), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 16, kSendSignaled, 4), 0);
  auto out = sent();
  ASSERT_EQ(out.size(), 4u);
  deliver(peer_ack(kSqPsn + 2));  // two PSNs past it: may be reordering
  EXPECT_TRUE(sent().empty());
  deliver(peer_ack(kSqPsn + 3));  // the last WRITE's ACK: the atomic's answer went missing
  // Expect: the FetchAdd again with its PSN (then, go-back-N, the WRITE again,
  // which the responder answers as a duplicate).
  out = sent();
  ASSERT_GE(out.size(), 1u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kFetchAdd));
  EXPECT_EQ(out[0].psn(), kSqPsn);
  for (size_t k = 1; k < out.size(); ++k) EXPECT_EQ(out[k].opcode(), static_cast<uint8_t>(Opcode::kWriteOnly));
  EXPECT_TRUE(completions().empty());  // in order: nothing completes before the atomic
  deliver(peer_atomic_ack(kSqPsn, 77));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 4u);
  for (uint64_t k = 0; k < 4; ++k) EXPECT_EQ(wc[k].wr_id, k + 1);
  EXPECT_EQ(word(64), 77u);
}

TEST_F(Rules, EmptyInlineSendOnAQpWithoutInlineRoom) {
  // Found by the api fuzzer (tests/fuzz/seeds/api/regress-inline-empty-no-slot):
  // a zero-byte inline SEND fits a QP with no inline room, which has no slot to
  // copy into: nothing is copied (it was memcpy to a null slot, UB).
  EXPECT_EQ(post(WrOpcode::kSend, 0, 0, kSendSignaled | kSendInline), 0);
  EXPECT_EQ(post(WrOpcode::kSend, 0, 1, kSendSignaled | kSendInline), -EINVAL);
}

TEST_F(Rules, InlineDataIsCopiedAtPostTime) {
  // A QP with inline room.
  uint32_t q2;
  QpInitAttr init{.send_cq = cq, .recv_cq = cq, .max_inline_data = 100};
  ASSERT_EQ(eng->create_qp(pd, &init, &q2), 0);
  EXPECT_EQ(init.max_inline_data, 128u);  // rounded up, as a provider reports it
  QpInitAttr back;
  ASSERT_EQ(eng->query_qp_init(q2, &back), 0);
  EXPECT_EQ(back.max_inline_data, 128u);
  // On the scripted QP (no inline room) inline is refused.
  EXPECT_EQ(post(WrOpcode::kSend, 0, 16, kSendSignaled | kSendInline), -EINVAL);
  std::string err;
  QpAttr a;
  a.qp_state = QpState::kInit;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToInitRequired, &err), 0);
  a.qp_state = QpState::kRtr;
  a.dest_qp_num = kPeerQpn + 1;
  a.rq_psn = kRqPsn;
  a.ah_attr.dgid = peer_gid;
  std::memcpy(a.ah_attr.dmac, peer_mac, 6);
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToRtrRequired, &err), 0) << err;
  a.qp_state = QpState::kRts;
  a.sq_psn = kSqPsn;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToRtsRequired, &err), 0) << err;
  // Not registered memory at all: inline ignores lkeys.
  std::vector<uint8_t> data(128);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(0x30 + i);
  Sge sge{reinterpret_cast<uint64_t>(data.data()), 100, 0xdead};
  SendWr wr;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = kSendSignaled | kSendInline;
  wr.rdma.remote_addr = 0x5000;
  wr.rdma.rkey = 7;
  io.space = 0;  // nothing leaves before the buffer is reused
  ASSERT_EQ(eng->post_send(q2, &wr, nullptr), 0);
  std::memset(data.data(), 0, data.size());
  io.space = 1024;
  eng->poll(now);
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].payload_len, 100u);
  for (uint32_t i = 0; i < 100; ++i) ASSERT_EQ(out[0].payload()[i], static_cast<uint8_t>(0x30 + i));
  sge.length = 129;  // beyond the QP's inline room
  EXPECT_EQ(eng->post_send(q2, &wr, nullptr), -EINVAL);
  wr.opcode = WrOpcode::kRdmaRead;
  sge.length = 8;
  EXPECT_EQ(eng->post_send(q2, &wr, nullptr), -EINVAL);  // no inline READs
}

TEST_F(Rules, FencedWorkRequestWaitsForEarlierReads) {
  ASSERT_EQ(post(WrOpcode::kRdmaRead, 0, 64, kSendSignaled, 1), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 4096, 64, kSendSignaled | kSendFence, 2), 0);
  // Expect: only the READ; the fenced WRITE waits for its response.
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kReadRequest));
  wire::FrameFields f = peer_fields(Opcode::kReadResponseOnly, kSqPsn);
  std::vector<uint8_t> payload(64, 0x5a);
  deliver(frame_of(f, payload));
  out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kWriteOnly));
}

TEST_F(Rules, AFullCqIsAnErrorNotALostCompletion) {
  // A 2-entry CQ for a second QP.
  uint32_t small_cq, q2;
  ASSERT_EQ(eng->create_cq(2, &small_cq), 0);
  ASSERT_EQ(eng->create_qp(pd, {.send_cq = small_cq, .recv_cq = small_cq}, &q2), 0);
  eng->set_event_hook(&Rules::on_event, this);
  std::string err;
  QpAttr a;
  a.qp_state = QpState::kInit;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToInitRequired, &err), 0);
  // Four receives; moving the QP to error flushes all four into two slots.
  for (uint64_t i = 0; i < 4; ++i) {
    RecvWr r;
    r.wr_id = i;
    ASSERT_EQ(eng->post_recv(q2, &r, nullptr), 0);
  }
  a.qp_state = QpState::kError;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState, &err), 0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].kind, EventKind::kCqError);
  EXPECT_EQ(events[0].cq, small_cq);
  WorkCompletion wc[8];
  EXPECT_EQ(eng->poll_cq(small_cq, 8, wc), 2);  // what it held
  EXPECT_EQ(eng->poll_cq(small_cq, 8, wc), -EIO);  // then the error
  EXPECT_EQ(eng->counters().cq_overflows, 2u);
  // The other QP's CQ is unaffected.
  EXPECT_EQ(eng->poll_cq(cq, 8, wc), 0);
}

TEST_F(Rules, OverflowPutsTheCqsQpsInError) {
  uint32_t small_cq, q2;
  ASSERT_EQ(eng->create_cq(1, &small_cq), 0);
  ASSERT_EQ(eng->create_qp(pd, {.send_cq = small_cq, .recv_cq = cq}, &q2), 0);
  std::string err;
  QpAttr a;
  a.qp_state = QpState::kInit;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToInitRequired, &err), 0);
  a.qp_state = QpState::kRtr;
  a.dest_qp_num = kPeerQpn + 1;
  a.ah_attr.dgid = peer_gid;
  std::memcpy(a.ah_attr.dmac, peer_mac, 6);
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToRtrRequired, &err), 0);
  a.qp_state = QpState::kRts;
  a.sq_psn = 0;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToRtsRequired, &err), 0);
  for (uint64_t i = 0; i < 3; ++i) {
    Sge sge{mr.addr, 8, mr.lkey};
    SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ASSERT_EQ(eng->post_send(q2, &wr, nullptr), 0);
  }
  eng->poll(now);
  sent();
  // ACK all three: the first completion fills the CQ, the second overflows it.
  wire::FrameFields f = peer_fields(Opcode::kAck, 2);
  f.dest_qp = q2;
  deliver(frame_of(f, {}));
  QpAttr q;
  eng->query_qp(q2, &q);
  EXPECT_EQ(q.qp_state, QpState::kError);
  eng->query_qp(qpn, &q);
  EXPECT_EQ(q.qp_state, QpState::kRts);  // its CQ was fine
}

TEST_F(Rules, CompletionEventsFireOncePerArming) {
  eng->set_event_hook(&Rules::on_event, this);
  ASSERT_EQ(eng->req_notify_cq(cq, false), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 8, kSendSignaled, 1), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 8, kSendSignaled, 2), 0);
  deliver(peer_ack(kSqPsn));
  deliver(peer_ack(kSqPsn + 1));
  ASSERT_EQ(events.size(), 1u);  // two completions, one event
  EXPECT_EQ(events[0].kind, EventKind::kCqNotify);
  EXPECT_EQ(events[0].cq, cq);
  EXPECT_EQ(completions().size(), 2u);
  // Solicited only: a receive without SE raises nothing, one with SE does.
  ASSERT_EQ(eng->req_notify_cq(cq, true), 0);
  for (uint64_t i = 0; i < 2; ++i) {
    Sge sge{mr.addr + 0x1000 * (i + 1), 64, mr.lkey};
    RecvWr r;
    r.wr_id = 100 + i;
    r.sg_list = &sge;
    r.num_sge = 1;
    ASSERT_EQ(eng->post_recv(qpn, &r, nullptr), 0);
  }
  wire::FrameFields f = peer_fields(Opcode::kSendOnly, kRqPsn);
  deliver(frame_of(f, std::vector<uint8_t>(16, 1)));
  EXPECT_EQ(events.size(), 1u);
  f = peer_fields(Opcode::kSendOnly, kRqPsn + 1);
  f.se = true;
  deliver(frame_of(f, std::vector<uint8_t>(16, 2)));
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, EventKind::kCqNotify);
}

TEST_F(Rules, SendRefusedForABadReceiveBufferWritesNoByte) {
  // Two SGEs: the first fine, the second with a key that names nothing.
  Sge sges[2] = {{mr.addr + 0x2000, 1024, mr.lkey}, {mr.addr + 0x3000, 1024, mr.lkey + 0x10000}};
  RecvWr r;
  r.wr_id = 9;
  r.sg_list = sges;
  r.num_sge = 2;
  ASSERT_EQ(eng->post_recv(qpn, &r, nullptr), 0);
  wire::FrameFields f = peer_fields(Opcode::kSendFirst, kRqPsn);
  deliver(frame_of(f, std::vector<uint8_t>(1024, 0x77)));
  // Expect: NAK Remote Operational Error; not one byte in either buffer; the
  // receive completes with a protection error.
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth()->syndrome, wire::aeth::nak(wire::aeth::kNakRemoteOperationalError));
  for (uint32_t i = 0; i < 2048; ++i) ASSERT_EQ(mem[0x2000 + i], 0xee) << i;
  auto wc = completions();
  ASSERT_GE(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 9u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
}

TEST_F(Rules, ZeroLengthOperationsNeedNoKeyOrAddress) {
  // Responder: a zero-length WRITE and READ with a garbage R_Key and address (C9-88).
  wire::FrameFields f = peer_fields(Opcode::kWriteOnly, kRqPsn);
  f.va = 0xdeadbeef;
  f.rkey = 0x12345678;
  f.dma_len = 0;
  f.ack_req = true;
  deliver(frame_of(f, {}));
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].aeth()->syndrome, wire::aeth::ack());
  f = peer_fields(Opcode::kReadRequest, kRqPsn + 1);
  f.va = 0xdeadbeef;
  f.rkey = 0x12345678;
  f.dma_len = 0;
  deliver(frame_of(f, {}));
  out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kReadResponseOnly));
  EXPECT_EQ(out[0].payload_len, 0u);
  // Requester: zero-length SEND, WRITE and READ go out as one packet each and complete.
  ASSERT_EQ(post(WrOpcode::kSend, 0, 0, kSendSignaled, 1), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 0, kSendSignaled, 2), 0);
  ASSERT_EQ(post(WrOpcode::kRdmaRead, 0, 0, kSendSignaled, 3), 0);
  out = sent();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kSendOnly));
  EXPECT_EQ(out[1].opcode(), static_cast<uint8_t>(Opcode::kWriteOnly));
  EXPECT_EQ(out[1].reth()->dma_len.get(), 0u);
  EXPECT_EQ(out[2].opcode(), static_cast<uint8_t>(Opcode::kReadRequest));
  EXPECT_EQ(out[2].reth()->dma_len.get(), 0u);
  deliver(peer_ack(kSqPsn + 1));
  deliver(frame_of(peer_fields(Opcode::kReadResponseOnly, kSqPsn + 2), {}));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 3u);
  for (const auto& c : wc) EXPECT_EQ(c.status, WcStatus::kSuccess);
}

TEST_F(Rules, DuplicateReadFromTheMiddleIsAnsweredFromThere) {
  // The peer READs 4 KB (4 responses at MTU 1024), then asks again from the third.
  wire::FrameFields f = peer_fields(Opcode::kReadRequest, kRqPsn);
  f.va = mr.addr;
  f.rkey = mr.rkey;
  f.dma_len = 4096;
  deliver(frame_of(f, {}));
  ASSERT_EQ(sent().size(), 4u);
  f = peer_fields(Opcode::kReadRequest, kRqPsn + 2);
  f.va = mr.addr + 2048;
  f.rkey = mr.rkey;
  f.dma_len = 2048;
  deliver(frame_of(f, {}));
  // Expect: Response First (PSN 502), Response Last (503), the bytes from 2048 on.
  auto out = sent();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kReadResponseFirst));
  EXPECT_EQ(out[0].psn(), kRqPsn + 2);
  EXPECT_EQ(out[1].opcode(), static_cast<uint8_t>(Opcode::kReadResponseLast));
  EXPECT_EQ(out[1].psn(), kRqPsn + 3);
  EXPECT_EQ(std::memcmp(out[0].payload(), mem.data() + 2048, 1024), 0);
  EXPECT_EQ(eng->qp_counters(qpn)->duplicates_received, 1u);
}

TEST_F(Rules, RnrRetrySevenRetriesForever) {
  // rnr_retry 7 (the default) and a peer that stays without receives for 50 rounds.
  ASSERT_EQ(post(WrOpcode::kSend, 0, 8), 0);
  sent();
  for (int i = 0; i < 50; ++i) {
    deliver(peer_ack(kSqPsn, wire::aeth::rnr_nak(1)));
    advance(1'000'000);  // well past the RNR timer
    auto out = sent();
    ASSERT_EQ(out.size(), 1u) << "round " << i;
    EXPECT_EQ(out[0].opcode(), static_cast<uint8_t>(Opcode::kSendOnly));
  }
  EXPECT_TRUE(completions().empty());
  deliver(peer_ack(kSqPsn));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(eng->qp_counters(qpn)->rnr_nak_received, 50u);
}

TEST_F(Rules, CommunicationEstablishedIsRaisedForTheFirstRequestInRtr) {
  // A QP in RTR (never RTS) receiving its first WRITE.
  uint32_t q2;
  ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &q2), 0);
  eng->set_event_hook(&Rules::on_event, this);
  std::string err;
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.qp_access_flags = kAccessRemoteWrite;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToInitRequired, &err), 0);
  a.qp_state = QpState::kRtr;
  a.dest_qp_num = kPeerQpn + 2;
  a.rq_psn = 7;
  a.ah_attr.dgid = peer_gid;
  std::memcpy(a.ah_attr.dmac, peer_mac, 6);
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToRtrRequired, &err), 0);
  for (uint32_t psn = 7; psn < 9; ++psn) {
    wire::FrameFields f = peer_fields(Opcode::kWriteOnly, psn);
    f.dest_qp = q2;
    f.va = mr.addr;
    f.rkey = mr.rkey;
    f.dma_len = 8;
    deliver(frame_of(f, std::vector<uint8_t>(8, 3)));
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::kCommEstablished);
  EXPECT_EQ(events[0].qp_num, q2);
}

TEST_F(Rules, ResetThenReuse) {
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 8, kSendSignaled, 1), 0);
  sent();
  std::string err;
  QpAttr a;
  a.qp_state = QpState::kReset;
  ASSERT_EQ(eng->modify_qp(qpn, a, kQpState, &err), 0);
  EXPECT_TRUE(completions().empty());  // RESET discards without completions
  deliver(peer_ack(kSqPsn));            // a late ACK for the old life is dropped
  EXPECT_GE(eng->counters().rx_qp_not_ready, 1u);
  // A second life with other PSNs and another peer QP.
  a.qp_state = QpState::kInit;
  a.qp_access_flags = kAccessRemoteWrite;
  ASSERT_EQ(eng->modify_qp(qpn, a, kQpState | kQpToInitRequired, &err), 0) << err;
  a.qp_state = QpState::kRtr;
  a.dest_qp_num = kPeerQpn;
  a.rq_psn = 0xfffffe;
  a.ah_attr.dgid = peer_gid;
  std::memcpy(a.ah_attr.dmac, peer_mac, 6);
  ASSERT_EQ(eng->modify_qp(qpn, a, kQpState | kQpToRtrRequired, &err), 0) << err;
  a.qp_state = QpState::kRts;
  a.sq_psn = 0x123456;
  ASSERT_EQ(eng->modify_qp(qpn, a, kQpState | kQpToRtsRequired, &err), 0) << err;
  ASSERT_EQ(post(WrOpcode::kRdmaWrite, 0, 8, kSendSignaled, 2), 0);
  auto out = sent();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].psn(), 0x123456u);
  deliver(peer_ack(0x123456));
  auto wc = completions();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

TEST_F(Rules, DestroyedQpNumberIsReusedCleanly) {
  uint32_t q2, q3;
  ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &q2), 0);
  ASSERT_EQ(eng->destroy_qp(q2), 0);
  EXPECT_EQ(eng->destroy_qp(q2), -EINVAL);
  ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &q3), 0);
  QpAttr q;
  ASSERT_EQ(eng->query_qp(q3, &q), 0);
  EXPECT_EQ(q.qp_state, QpState::kReset);
}

TEST_F(Rules, ACqThatGrowsOnDemandHoldsItsEntriesInOrderAndNoMore) {
  // The engine of a simulation (grow_on_demand): rings start empty and double
  // from 16 as they fill. A 40-entry CQ takes 40 flushed receives in order
  // (through 16 and 32 slots), then is in error, as a CQ made full-size is.
  EngineConfig c;
  c.grow_on_demand = true;
  make(c);
  uint32_t cq40, q2;
  ASSERT_EQ(eng->create_cq(40, &cq40), 0);
  ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq40, .recv_cq = cq40, .max_recv_wr = 63}, &q2), 0);
  std::string err;
  QpAttr a;
  a.qp_state = QpState::kInit;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState | kQpToInitRequired, &err), 0);
  for (uint64_t i = 0; i < 45; ++i) {
    RecvWr r;
    r.wr_id = i;
    ASSERT_EQ(eng->post_recv(q2, &r, nullptr), 0);
  }
  a.qp_state = QpState::kError;
  ASSERT_EQ(eng->modify_qp(q2, a, kQpState, &err), 0);
  WorkCompletion wc[64];
  ASSERT_EQ(eng->poll_cq(cq40, 64, wc), 40);
  for (uint64_t i = 0; i < 40; ++i) EXPECT_EQ(wc[i].wr_id, i);
  EXPECT_EQ(eng->poll_cq(cq40, 64, wc), -EIO);
  EXPECT_EQ(eng->counters().cq_overflows, 5u);
  // Resized, it keeps what it holds and grows to the new size.
  uint32_t cq8;
  ASSERT_EQ(eng->create_cq(8, &cq8), 0);
  EXPECT_EQ(eng->resize_cq(cq8, 64), 0);
}

TEST_F(Rules, ResourcesInUseCannotBeFreed) {
  EXPECT_EQ(eng->dealloc_pd(pd), -EBUSY);  // the MR and QP use it
  EXPECT_EQ(eng->destroy_cq(cq), -EBUSY);
  EXPECT_EQ(eng->dealloc_pd(pd + 10), -EINVAL);
  const uint32_t pd2 = eng->alloc_pd();
  EXPECT_EQ(eng->dealloc_pd(pd2), 0);
  EXPECT_EQ(eng->dealloc_pd(pd2), -EINVAL);
  uint32_t cq2;
  ASSERT_EQ(eng->create_cq(4, &cq2), 0);
  EXPECT_EQ(eng->resize_cq(cq2, 64), 0);
  EXPECT_EQ(eng->destroy_cq(cq2), 0);
  EXPECT_EQ(eng->destroy_cq(cq2), -EINVAL);
}

TEST_F(Rules, RegionsAreAddressedByTheirIova) {
  std::vector<uint8_t> buf(4096, 0);
  MrInfo m;
  ASSERT_EQ(eng->reg_mr(pd, buf.data(), buf.size(), 0x10000000, kAccessLocalWrite | kAccessRemoteWrite, &m), 0);
  EXPECT_EQ(m.addr, 0x10000000u);
  wire::FrameFields f = peer_fields(Opcode::kWriteOnly, kRqPsn);
  f.va = 0x10000000 + 100;
  f.rkey = m.rkey;
  f.dma_len = 4;
  f.ack_req = true;
  deliver(frame_of(f, {1, 2, 3, 4}));
  EXPECT_EQ(buf[100], 1);
  EXPECT_EQ(buf[103], 4);
  EXPECT_EQ(eng->reg_mr(pd, buf.data(), buf.size(), ~uint64_t{0} - 10, kAccessLocalWrite, &m), -EINVAL);
}

// ---------------------------------------------------------------- frames for someone else

TEST_F(Rules, FramesForAnotherMacOrAddressAreNotRoceForUs) {
  wire::FrameFields f = peer_fields(Opcode::kWriteOnly, kRqPsn);
  f.va = mr.addr;
  f.rkey = mr.rkey;
  f.dma_len = 4;
  f.ack_req = true;
  f.dst_mac[5] ^= 1;  // another host's MAC on a promiscuous port
  deliver(frame_of(f, {9, 9, 9, 9}));
  f.dst_mac[5] ^= 1;
  f.dst_gid = wire::Gid::from_ipv4(0x0a0000fe);  // our MAC, another IP
  deliver(frame_of(f, {9, 9, 9, 9}));
  EXPECT_EQ(eng->counters().rx_not_for_us, 2u);
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(mem[0], 0xee);
}

// ---------------------------------------------------------------- ARP

class Arp : public test::ScriptedPeerTest {
 protected:
  void SetUp() override {
    EngineConfig cfg;
    cfg.arp_retry_ns = 1'000'000;
    cfg.arp_tries = 3;
    eng = std::make_unique<Engine>(cfg, &io);
    eng->poll(now);  // the engine's clock starts where the test's does
    pd = eng->alloc_pd();
    mem.assign(4096, 0xee);
    ASSERT_EQ(eng->reg_mr(pd, mem.data(), mem.size(), kAccessLocalWrite | kAccessRemoteWrite, &mr), 0);
    ASSERT_EQ(eng->create_cq(64, &cq), 0);
    ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &qpn), 0);
    std::string err;
    QpAttr a;
    a.qp_state = QpState::kInit;
    ASSERT_EQ(eng->modify_qp(qpn, a, kQpState | kQpToInitRequired, &err), 0);
    a.qp_state = QpState::kRtr;
    a.dest_qp_num = kPeerQpn;
    a.ah_attr.dgid = peer_gid;  // and no MAC
    ASSERT_EQ(eng->modify_qp(qpn, a, kQpState | kQpToRtrRequired, &err), 0) << err;
    a.qp_state = QpState::kRts;
    a.sq_psn = kSqPsn;
    ASSERT_EQ(eng->modify_qp(qpn, a, kQpState | kQpToRtsRequired, &err), 0) << err;
  }

  std::vector<wire::ArpInfo> arps() {
    std::vector<wire::ArpInfo> out;
    for (; taken < io.frames.size(); ++taken) {
      wire::ArpInfo a;
      if (wire::parse_arp(io.frames[taken].data(), static_cast<uint32_t>(io.frames[taken].size()), &a)) {
        out.push_back(a);
      } else {
        other.push_back(io.frames[taken]);
      }
    }
    return out;
  }

  std::vector<uint8_t> arp_frame(uint16_t oper, const uint8_t* eth_dst, uint32_t spa, const uint8_t* tha,
                                 uint32_t tpa) {
    std::vector<uint8_t> b(wire::kArpFrameBytes);
    wire::build_arp(b.data(), oper, eth_dst, peer_mac, spa, tha, tpa);
    return b;
  }

  int post_write() {
    Sge sge{mr.addr, 16, mr.lkey};
    SendWr wr;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.rdma.remote_addr = 0x100;
    wr.rdma.rkey = 1;
    const int rc = eng->post_send(qpn, &wr, nullptr);
    eng->poll(now);
    return rc;
  }

  std::vector<std::vector<uint8_t>> other;
};

TEST_F(Arp, UnknownPeerIsAskedForAndNothingIsSentUntilItAnswers) {
  ASSERT_EQ(post_write(), 0);
  // Expect: one broadcast ARP request for the peer's IP, no RoCE frame.
  auto a = arps();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].oper, wire::kArpRequest);
  EXPECT_EQ(a[0].tpa, peer_gid.ipv4());
  EXPECT_EQ(a[0].spa, eng->config().gid.ipv4());
  EXPECT_EQ(a[0].eth_dst[0], 0xff);
  EXPECT_TRUE(other.empty());
  const uint8_t our_mac[6] = {0x02, 0, 0, 0, 0, 1};
  deliver(arp_frame(wire::kArpReply, our_mac, peer_gid.ipv4(), our_mac, eng->config().gid.ipv4()));
  // Expect: the WRITE, to the peer's MAC.
  arps();
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(std::memcmp(other[0].data(), peer_mac, 6), 0);
  auto n = eng->neighbours();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].state, Neighbour::State::kReachable);
}

TEST_F(Arp, NobodyAnsweringFailsTheWorkRequestWithRetryExceeded) {
  ASSERT_EQ(post_write(), 0);
  for (int i = 0; i < 5; ++i) {
    now += 1'000'000;
    eng->poll(now);
  }
  // Expect: three requests a millisecond apart, then IBV_WC_RETRY_EXC_ERR.
  EXPECT_EQ(arps().size(), 3u);
  WorkCompletion wc[4];
  ASSERT_EQ(eng->poll_cq(cq, 4, wc), 1);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(eng->counters().arp_failures, 1u);
}

TEST_F(Arp, RequestsForOurAddressAreAnsweredAndTheirSenderLearned) {
  const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  const uint8_t zero[6] = {};
  eng->poll(now);
  arps();  // (the QP's own request at RTR)
  deliver(arp_frame(wire::kArpRequest, bcast, peer_gid.ipv4(), zero, eng->config().gid.ipv4()));
  auto a = arps();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].oper, wire::kArpReply);
  EXPECT_EQ(std::memcmp(a[0].eth_dst, peer_mac, 6), 0);
  EXPECT_EQ(std::memcmp(a[0].sha, eng->config().mac, 6), 0);
  EXPECT_EQ(a[0].tpa, peer_gid.ipv4());
  // The waiting QP learned the peer from its request and sends now.
  ASSERT_EQ(post_write(), 0);
  arps();
  ASSERT_EQ(other.size(), 1u);
  // Requests for someone else are not answered.
  deliver(arp_frame(wire::kArpRequest, bcast, 0x0a000077, zero, 0x0a000078));
  EXPECT_TRUE(arps().empty());
  EXPECT_GE(eng->counters().rx_not_for_us, 1u);
}

TEST_F(Arp, StaticEntriesResolveAtOnce) {
  const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0x55};
  ASSERT_EQ(eng->add_neighbour(peer_gid.ipv4(), mac), 0);
  ASSERT_EQ(post_write(), 0);
  arps();
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(std::memcmp(other[0].data(), mac, 6), 0);
  const uint8_t bad[6] = {0x01, 0, 0, 0, 0, 1};
  EXPECT_EQ(eng->add_neighbour(1, bad), -EINVAL);
}

// ---------------------------------------------------------------- end to end

using tita::test::Pair;

// Two QPs of one engine: every verb over the internal loop, nothing on the port.
TEST(Loopback, TwoQpsOfOneEngineTalk) {
  tita::test::SimNet net(1, 100'000'000'000, 1'000);
  Engine& e = net.engine(0);
  tita::test::Side s[2];
  uint64_t bytes;
  const auto msgs = tita::test::verb_workload(1024, 300, 5, &bytes, 65536);
  for (auto& side : s) {
    side.pd = e.alloc_pd();
    side.buf.resize(bytes);
    ASSERT_EQ(e.reg_mr(side.pd, side.buf.data(), side.buf.size(), kAllAccess, &side.mr), 0);
    ASSERT_EQ(e.create_cq(4096, &side.cq), 0);
    ASSERT_EQ(e.create_qp(side.pd, {.send_cq = side.cq, .recv_cq = side.cq, .max_send_wr = 512, .max_recv_wr = 512},
                          &side.qp),
              0);
  }
  QpAttr attr;
  attr.timeout = 10;
  // The AV names our own GID and no MAC: resolved to ourselves without ARP.
  for (int i = 0; i < 2; ++i) {
    std::string err;
    QpAttr a = attr;
    a.qp_state = QpState::kInit;
    a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead;
    ASSERT_EQ(e.modify_qp(s[i].qp, a, kQpState | kQpToInitRequired, &err), 0);
    a.qp_state = QpState::kRtr;
    a.dest_qp_num = s[1 - i].qp;
    a.ah_attr.dgid = net.gid(0);
    ASSERT_EQ(e.modify_qp(s[i].qp, a, kQpState | kQpToRtrRequired, &err), 0) << err;
    a.qp_state = QpState::kRts;
    ASSERT_EQ(e.modify_qp(s[i].qp, a, kQpState | kQpToRtsRequired, &err), 0) << err;
  }
  const tita::test::Endpoint a{&e, s[0].qp, s[0].cq, s[0].mr, s[0].buf.data(), s[0].buf.size()};
  const tita::test::Endpoint b{&e, s[1].qp, s[1].cq, s[1].mr, s[1].buf.data(), s[1].buf.size()};
  const uint64_t deadline = net.now() + 10'000'000'000;
  auto step = [&] { return net.step() && net.now() <= deadline; };
  auto settle = [&] { net.run_for(100'000); };
  ASSERT_TRUE(tita::test::run_verb_workload(a, b, msgs, step, settle));
  EXPECT_EQ(net.stats().frames, 0u);  // not one frame reached the port
  EXPECT_GT(e.counters().loopback_frames, 300u);
  EXPECT_EQ(e.counters().arp_requests_sent, 0u);
}

// The PSN space wraps at 2^24 in the middle of messages, with loss, both recovery modes.
TEST(PsnWrap, TransfersAcrossTheWrapUnderLoss) {
  for (Recovery rec : {Recovery::kGoBackN, Recovery::kSelectiveRepeat}) {
    QpAttr attr;
    attr.recovery = rec;
    attr.timeout = 8;
    attr.sq_psn = attr.rq_psn = wire::kPsnMask - 300;  // 300 packets before the wrap
    uint64_t bytes;
    const auto msgs = tita::test::verb_workload(1024, 400, 17, &bytes, 65536);
    Pair p(25'000'000'000, 2'000, bytes, attr, 3);
    p.net.set_faults_both({.loss = 0.01});
    const tita::test::Endpoint a{&p.eng(0), p.side[0].qp, p.side[0].cq, p.side[0].mr, p.side[0].buf.data(),
                           p.side[0].buf.size()};
    const tita::test::Endpoint b{&p.eng(1), p.side[1].qp, p.side[1].cq, p.side[1].mr, p.side[1].buf.data(),
                           p.side[1].buf.size()};
    const uint64_t deadline = p.net.now() + 30'000'000'000;
    auto step = [&] { return p.net.step() && p.net.now() <= deadline; };
    auto settle = [&] { p.net.run_for(100'000); };
    ASSERT_TRUE(tita::test::run_verb_workload(a, b, msgs, step, settle)) << p.describe();
    QpInfo info;
    p.eng(0).qp_info(p.side[0].qp, &info);
    EXPECT_LT(info.snd_una, 1'000'000u) << "the PSNs did not wrap";
  }
}

// 2^31-byte messages (the IBA maximum) as WRITE, SEND and READ, over phantom
// regions (checked and counted, no memory behind them).
TEST(LargeMessages, TwoGigabyteMessagesComplete) {
  QpAttr attr;
  attr.path_mtu = 4096;
  attr.timeout = 12;
  Pair p(400'000'000'000, 1'000, 4096, attr, 1, [](EngineConfig& c, int) {
    c.compute_icrc = false;
    c.verify_icrc = false;
    c.telemetry = false;
  });
  constexpr uint64_t kLen = kMaxMessageBytes;
  MrInfo src, dst;
  ASSERT_EQ(p.eng(0).reg_phantom_mr(p.side[0].pd, 1ull << 40, kLen, kAllAccess, &src), 0);
  ASSERT_EQ(p.eng(1).reg_phantom_mr(p.side[1].pd, 1ull << 40, kLen, kAllAccess, &dst), 0);
  Sge rsge{dst.addr, static_cast<uint32_t>(kLen), dst.lkey};
  RecvWr r;
  r.sg_list = &rsge;
  r.num_sge = 1;
  ASSERT_EQ(p.eng(1).post_recv(p.side[1].qp, &r, nullptr), 0);
  Sge sge{src.addr, static_cast<uint32_t>(kLen), src.lkey};
  for (WrOpcode op : {WrOpcode::kRdmaWrite, WrOpcode::kSend, WrOpcode::kRdmaRead}) {
    SendWr wr;
    wr.wr_id = static_cast<uint64_t>(op);
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.rdma.remote_addr = dst.addr;
    wr.rdma.rkey = dst.rkey;
    ASSERT_EQ(p.eng(0).post_send(p.side[0].qp, &wr, nullptr), 0);
  }
  sge.length = static_cast<uint32_t>(kLen) + 1;  // one byte over: refused
  SendWr big;
  big.sg_list = &sge;
  big.num_sge = 1;
  EXPECT_EQ(p.eng(0).post_send(p.side[0].qp, &big, nullptr), -EINVAL);
  ASSERT_TRUE(p.run(3, 1, 60'000'000'000)) << p.describe();
  for (const auto& wc : p.completions[0]) {
    EXPECT_EQ(wc.status, WcStatus::kSuccess);
    if (wc.opcode == WcOpcode::kRdmaRead) {
      EXPECT_EQ(wc.byte_len, kLen);
    }
  }
  EXPECT_EQ(p.completions[1][0].byte_len, kLen);
}

// ARP between two engines, neither told the other's MAC.
TEST(ArpEndToEnd, EnginesFindEachOther) {
  QpAttr attr;
  attr.timeout = 10;
  tita::test::SimNet net(2, 25'000'000'000, 2'000);
  tita::test::Side s[2];
  for (int i = 0; i < 2; ++i) {
    Engine& e = net.engine(i);
    s[i].pd = e.alloc_pd();
    s[i].buf.assign(65536, static_cast<uint8_t>(i));
    ASSERT_EQ(e.reg_mr(s[i].pd, s[i].buf.data(), s[i].buf.size(), kAllAccess, &s[i].mr), 0);
    ASSERT_EQ(e.create_cq(64, &s[i].cq), 0);
    ASSERT_EQ(e.create_qp(s[i].pd, {.send_cq = s[i].cq, .recv_cq = s[i].cq}, &s[i].qp), 0);
  }
  for (int i = 0; i < 2; ++i) {
    Engine& e = net.engine(i);
    std::string err;
    QpAttr a = attr;
    a.qp_state = QpState::kInit;
    a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    ASSERT_EQ(e.modify_qp(s[i].qp, a, kQpState | kQpToInitRequired, &err), 0);
    a.qp_state = QpState::kRtr;
    a.dest_qp_num = s[1 - i].qp;
    a.ah_attr.dgid = net.gid(1 - i);
    ASSERT_EQ(e.modify_qp(s[i].qp, a, kQpState | kQpToRtrRequired, &err), 0) << err;
    a.qp_state = QpState::kRts;
    ASSERT_EQ(e.modify_qp(s[i].qp, a, kQpState | kQpToRtsRequired, &err), 0) << err;
  }
  // A WRITE and an atomic from 0 to 1.
  Sge sge{s[0].mr.addr, 1024, s[0].mr.lkey};
  SendWr w;
  w.wr_id = 1;
  w.opcode = WrOpcode::kRdmaWrite;
  w.sg_list = &sge;
  w.num_sge = 1;
  w.rdma.remote_addr = s[1].mr.addr + 4096;
  w.rdma.rkey = s[1].mr.rkey;
  ASSERT_EQ(net.engine(0).post_send(s[0].qp, &w, nullptr), 0);
  Sge res{s[0].mr.addr + 8192, 8, s[0].mr.lkey};
  SendWr fa;
  fa.wr_id = 2;
  fa.opcode = WrOpcode::kAtomicFetchAndAdd;
  fa.sg_list = &res;
  fa.num_sge = 1;
  fa.atomic.remote_addr = s[1].mr.addr;
  fa.atomic.rkey = s[1].mr.rkey;
  fa.atomic.compare_add = 5;
  ASSERT_EQ(net.engine(0).post_send(s[0].qp, &fa, nullptr), 0);
  std::vector<WorkCompletion> done;
  ASSERT_TRUE(net.run_until(
      [&] {
        WorkCompletion wc[4];
        int n = net.engine(0).poll_cq(s[0].cq, 4, wc);
        for (int k = 0; k < n; ++k) done.push_back(wc[k]);
        return done.size() == 2;
      },
      1'000'000'000));
  for (const auto& wc : done) EXPECT_EQ(wc.status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(s[1].buf.data() + 4096, s[0].buf.data(), 1024), 0);
  uint64_t orig, now_val;
  std::memcpy(&orig, s[0].buf.data() + 8192, 8);
  std::memcpy(&now_val, s[1].buf.data(), 8);
  EXPECT_EQ(orig, 0x0101010101010101ull);
  EXPECT_EQ(now_val, 0x0101010101010101ull + 5);
  // Both asked at RTR and both answered; one round was enough.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(net.engine(i).counters().arp_requests_sent, 1u);
    EXPECT_EQ(net.engine(i).counters().arp_replies_sent, 1u);
    EXPECT_EQ(net.engine(i).neighbours().size(), 1u);
  }
}

// Atomics under contention: four QPs of one engine add to one word through
// another engine, with loss; every add lands exactly once.
TEST(AtomicContention, EveryAddLandsOnceUnderLoss) {
  constexpr int kQps = 4;
  constexpr int kAdds = 200;
  tita::test::SimNet net(2, 25'000'000'000, 2'000, 9);
  net.set_faults_both({.loss = 0.02, .duplicate = 0.01});
  std::vector<uint8_t> target(64, 0), results(kQps * kAdds * 8, 0);
  Engine& e0 = net.engine(0);
  Engine& e1 = net.engine(1);
  const uint32_t pd0 = e0.alloc_pd(), pd1 = e1.alloc_pd();
  MrInfo m0, m1;
  ASSERT_EQ(e0.reg_mr(pd0, results.data(), results.size(), kAllAccess, &m0), 0);
  ASSERT_EQ(e1.reg_mr(pd1, target.data(), target.size(), kAllAccess, &m1), 0);
  uint32_t cq0, cq1;
  ASSERT_EQ(e0.create_cq(4096, &cq0), 0);
  ASSERT_EQ(e1.create_cq(4096, &cq1), 0);
  uint32_t q0[kQps], q1[kQps];
  QpAttr attr;
  attr.timeout = 8;
  attr.max_rd_atomic = 16;
  attr.max_dest_rd_atomic = 16;
  for (int i = 0; i < kQps; ++i) {
    ASSERT_EQ(e0.create_qp(pd0, {.send_cq = cq0, .recv_cq = cq0, .max_send_wr = 512}, &q0[i]), 0);
    ASSERT_EQ(e1.create_qp(pd1, {.send_cq = cq1, .recv_cq = cq1}, &q1[i]), 0);
    tita::test::connect(net, 0, q0[i], 1, q1[i], attr, kAccessRemoteAtomic);
  }
  for (int k = 0; k < kAdds; ++k) {
    for (int i = 0; i < kQps; ++i) {
      Sge sge{m0.addr + (static_cast<uint64_t>(i) * kAdds + k) * 8, 8, m0.lkey};
      SendWr wr;
      wr.wr_id = static_cast<uint64_t>(i) * kAdds + k;
      wr.opcode = WrOpcode::kAtomicFetchAndAdd;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.atomic.remote_addr = m1.addr;
      wr.atomic.rkey = m1.rkey;
      wr.atomic.compare_add = 1;
      ASSERT_EQ(e0.post_send(q0[i], &wr, nullptr), 0);
    }
  }
  size_t done = 0;
  ASSERT_TRUE(net.run_until(
      [&] {
        WorkCompletion wc[64];
        int n;
        while ((n = e0.poll_cq(cq0, 64, wc)) > 0) {
          for (int k = 0; k < n; ++k) EXPECT_EQ(wc[k].status, WcStatus::kSuccess);
          done += static_cast<size_t>(n);
        }
        return done == kQps * kAdds;
      },
      60'000'000'000));
  uint64_t total;
  std::memcpy(&total, target.data(), 8);
  EXPECT_EQ(total, static_cast<uint64_t>(kQps * kAdds));
  // Every original value 0..N-1 was handed out exactly once.
  std::vector<int> seen(kQps * kAdds, 0);
  for (int j = 0; j < kQps * kAdds; ++j) {
    uint64_t v;
    std::memcpy(&v, results.data() + j * 8, 8);
    ASSERT_LT(v, seen.size());
    ++seen[v];
  }
  for (int c : seen) ASSERT_EQ(c, 1);
  uint64_t replays = 0;
  for (int i = 0; i < kQps; ++i) replays += e1.qp_counters(q1[i])->atomic_replays;
  EXPECT_GT(replays, 0u) << "the loss never exercised the duplicate path";
}

}  // namespace
}  // namespace tita::engine
