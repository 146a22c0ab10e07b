// UD QPs and address handles: the UD transition table, the frames a UD SEND
// makes (DETH, no AckReq, no ACK back), delivery with the 40-byte GRH area
// first, Q_Key checks, messages above the MTU refused at post, no receive
// posted, buffers too small, address handles resolved by ARP or failing.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "scripted_peer.h"
#include "sim_net.h"
#include "tita/engine/engine.h"
#include "tita/wire/frame.h"

namespace tita::engine {
namespace {

using test::CaptureIo;

constexpr uint32_t kQkey = 0x11111111;

// A UD QP of its own PD, CQ and 16 KB region, brought to RTS.
struct UdSide {
  Engine* eng = nullptr;
  uint32_t pd = 0, cq = 0, qpn = 0;
  MrInfo mr;
  std::vector<uint8_t> buf = std::vector<uint8_t>(16384, 0xee);

  void open(Engine& e, uint32_t qkey = kQkey) {
    eng = &e;
    pd = e.alloc_pd();
    ASSERT_EQ(e.reg_mr(pd, buf.data(), buf.size(), kAccessLocalWrite, &mr), 0);
    ASSERT_EQ(e.create_cq(64, &cq), 0);
    ASSERT_EQ(e.create_qp(pd, {.qp_type = QpType::kUd, .send_cq = cq, .recv_cq = cq}, &qpn), 0);
    QpAttr a;
    a.qkey = qkey;
    a.sq_psn = 1000;
    std::string err;
    a.qp_state = QpState::kInit;
    ASSERT_EQ(e.modify_qp(qpn, a, kQpState | kUdToInitRequired, &err), 0) << err;
    a.qp_state = QpState::kRtr;
    ASSERT_EQ(e.modify_qp(qpn, a, kQpState, &err), 0) << err;
    a.qp_state = QpState::kRts;
    ASSERT_EQ(e.modify_qp(qpn, a, kQpState | kUdToRtsRequired, &err), 0) << err;
  }
  void post_recv(uint64_t wr_id, uint32_t offset, uint32_t len) {
    const Sge sge{reinterpret_cast<uint64_t>(buf.data() + offset), len, mr.lkey};
    const RecvWr wr{.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
    ASSERT_EQ(eng->post_recv(qpn, &wr, nullptr), 0);
  }
  int post_send(uint64_t wr_id, uint32_t ah, uint32_t dest_qpn, uint32_t qkey, uint32_t offset, uint32_t len,
                WrOpcode op = WrOpcode::kSend, uint32_t imm = 0) {
    const Sge sge{reinterpret_cast<uint64_t>(buf.data() + offset), len, mr.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.imm_data = imm;
    wr.ud = {ah, dest_qpn, qkey};
    return eng->post_send(qpn, &wr, nullptr);
  }
  std::vector<WorkCompletion> poll() {
    std::vector<WorkCompletion> out(64);
    const int n = eng->poll_cq(cq, 64, out.data());
    out.resize(n > 0 ? n : 0);
    return out;
  }
};

// ---------------------------------------------------------------- the transition table

TEST(UdTransitions, EachTransitionRequiresItsUdAttributes) {
  CaptureIo io;
  Engine e(EngineConfig{}, &io);
  const uint32_t pd = e.alloc_pd();
  uint32_t cq, qpn;
  ASSERT_EQ(e.create_cq(8, &cq), 0);
  ASSERT_EQ(e.create_qp(pd, {.qp_type = QpType::kUd, .send_cq = cq, .recv_cq = cq}, &qpn), 0);
  QpAttr a;
  std::string err;
  a.qp_state = QpState::kInit;
  EXPECT_EQ(e.modify_qp(qpn, a, kQpState | kQpPkeyIndex | kQpPort, &err), -EINVAL);
  EXPECT_EQ(err, "modify_qp: UD RESET->INIT needs IBV_QP_QKEY");
  EXPECT_EQ(e.modify_qp(qpn, a, kQpState | kUdToInitRequired | kQpAccessFlags, &err), -EINVAL);
  EXPECT_NE(err.find("UD RESET->INIT does not take IBV_QP_ACCESS_FLAGS"), std::string::npos) << err;
  a.qkey = 0x1234;
  ASSERT_EQ(e.modify_qp(qpn, a, kQpState | kUdToInitRequired, &err), 0) << err;
  a.qp_state = QpState::kRtr;
  EXPECT_EQ(e.modify_qp(qpn, a, kQpState | kQpAv | kQpDestQpn, &err), -EINVAL);  // no peer on UD
  ASSERT_EQ(e.modify_qp(qpn, a, kQpState, &err), 0) << err;
  a.qp_state = QpState::kRts;
  EXPECT_EQ(e.modify_qp(qpn, a, kQpState, &err), -EINVAL);
  EXPECT_EQ(err, "modify_qp: UD RTR->RTS needs IBV_QP_SQ_PSN");
  a.sq_psn = 7;
  a.qkey = 0x5678;
  ASSERT_EQ(e.modify_qp(qpn, a, kQpState | kQpSqPsn | kQpQkey, &err), 0) << err;
  QpAttr q;
  ASSERT_EQ(e.query_qp(qpn, &q), 0);
  EXPECT_EQ(q.qp_state, QpState::kRts);
  EXPECT_EQ(q.qkey, 0x5678u);
  EXPECT_EQ(q.sq_psn, 7u);
  // RC QPs take no Q_Key.
  uint32_t rc;
  ASSERT_EQ(e.create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &rc), 0);
  a.qp_state = QpState::kInit;
  EXPECT_EQ(e.modify_qp(rc, a, kQpState | kQpToInitRequired | kQpQkey, &err), -EINVAL);
}

// ---------------------------------------------------------------- on the wire

TEST(UdWire, SendOnlyCarriesTheDethAndNoAckComesBack) {
  CaptureIo io;
  EngineConfig cfg;
  Engine e(cfg, &io);
  UdSide s;
  s.open(e);
  AhAttr av;
  av.dgid = wire::Gid::from_ipv4(0x0a000002);
  av.dmac[5] = 2;
  av.traffic_class = 26 << 2;
  uint32_t ah;
  ASSERT_EQ(e.create_ah(s.pd, av, &ah), 0);
  EXPECT_EQ(e.query_ah(ah), 0);
  std::memcpy(s.buf.data(), "hello", 5);
  ASSERT_EQ(s.post_send(1, ah, 0x2345, 0x42, 0, 5, WrOpcode::kSendWithImm, 0xabcd), 0);
  ASSERT_EQ(s.post_send(2, ah, 0x2346, 0x80000000, 0, 100), 0);  // high bit: the QP's own Q_Key
  e.poll(1000);
  // Expect: two UD SEND Only frames, PSNs from sq_psn, DETH with the Q_Key and our QPN, no AckReq.
  ASSERT_EQ(io.frames.size(), 2u);
  wire::Packet p;
  ASSERT_EQ(wire::parse(io.frames[0].data(), static_cast<uint32_t>(io.frames[0].size()), &p), wire::ParseError::kOk);
  EXPECT_EQ(p.opcode(), static_cast<uint8_t>(wire::Opcode::kUdSendOnlyImm));
  EXPECT_EQ(p.dest_qp(), 0x2345u);
  EXPECT_EQ(p.psn(), 1000u);
  EXPECT_FALSE(p.bth().ack_requested());
  ASSERT_NE(p.deth(), nullptr);
  EXPECT_EQ(p.deth()->qkey.get(), 0x42u);
  EXPECT_EQ(p.deth()->src_qp.get(), s.qpn);
  EXPECT_EQ(p.imm()->imm.get(), 0xabcdu);
  EXPECT_EQ(p.payload_len, 5u);
  EXPECT_EQ(std::memcmp(p.payload(), "hello", 5), 0);
  EXPECT_EQ(p.dscp, 26);
  EXPECT_EQ(p.udp().src_port.get(), roce_udp_sport(s.qpn, 0x2345));
  EXPECT_EQ(p.trailer_len, 0u);  // no telemetry trailer: nobody answers a datagram
  ASSERT_EQ(wire::parse(io.frames[1].data(), static_cast<uint32_t>(io.frames[1].size()), &p), wire::ParseError::kOk);
  EXPECT_EQ(p.opcode(), static_cast<uint8_t>(wire::Opcode::kUdSendOnly));
  EXPECT_EQ(p.psn(), 1001u);
  EXPECT_EQ(p.deth()->qkey.get(), kQkey);
  // Both complete at once, nothing waits for an ACK; no timer stays armed. So
  // their payload is the application's again as soon as the host has them: a
  // zero-copy host is told to copy it (transient, nothing to hold).
  EXPECT_EQ(io.transients, 2u);
  EXPECT_EQ(io.holds, (std::vector<uint64_t>{0, 0}));
  const auto wc = s.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(e.next_wakeup_ns(), UINT64_MAX);
}

TEST(UdWire, PostRefusesWhatUdCannotCarry) {
  CaptureIo io;
  EngineConfig cfg;
  cfg.max_frame_bytes = 1514 + 8;  // a 1500-byte port: path MTU 1024
  Engine e(cfg, &io);
  UdSide s;
  s.open(e);
  EXPECT_EQ(e.ud_max_message_bytes(), 1024u);
  AhAttr av;
  av.dgid = wire::Gid::from_ipv4(0x0a000002);
  av.dmac[5] = 2;
  uint32_t ah;
  ASSERT_EQ(e.create_ah(s.pd, av, &ah), 0);
  EXPECT_EQ(s.post_send(1, ah, 5, kQkey, 0, 1025), -EINVAL);  // above the MTU: one packet per message
  EXPECT_EQ(s.post_send(2, ah, 5, kQkey, 0, 1024), 0);
  EXPECT_EQ(s.post_send(3, ah, 5, kQkey, 0, 8, WrOpcode::kRdmaWrite), -EINVAL);  // SENDs only
  EXPECT_EQ(s.post_send(4, 0, 5, kQkey, 0, 8), -EINVAL);                         // no address handle
  EXPECT_EQ(s.post_send(5, ah + 7, 5, kQkey, 0, 8), -EINVAL);
  const uint32_t other_pd = e.alloc_pd();
  uint32_t foreign;
  ASSERT_EQ(e.create_ah(other_pd, av, &foreign), 0);
  EXPECT_EQ(s.post_send(6, foreign, 5, kQkey, 0, 8), -EINVAL);  // an AH of another PD
  EXPECT_EQ(e.dealloc_pd(other_pd), -EBUSY);
  EXPECT_EQ(e.destroy_ah(foreign), 0);
  EXPECT_EQ(e.dealloc_pd(other_pd), 0);
  AhAttr v6;
  v6.dgid.raw[0] = 0xfd;
  EXPECT_EQ(e.create_ah(s.pd, v6, &foreign), -EINVAL);  // IPv6 without a MAC: no ARP for it
  EXPECT_EQ(e.create_ah(s.pd, AhAttr{}, &foreign), -EINVAL);
}

// A frame built by hand, as a peer would send it.
std::vector<uint8_t> ud_frame(const Engine& e, uint32_t dest_qp, uint32_t qkey, uint32_t src_qp,
                              const std::vector<uint8_t>& payload, wire::Opcode op = wire::Opcode::kUdSendOnly) {
  wire::FrameFields f;
  const uint8_t peer_mac[6] = {0x02, 0, 0, 0, 0, 0x09};
  std::memcpy(f.src_mac, peer_mac, 6);
  std::memcpy(f.dst_mac, e.config().mac, 6);
  f.src_gid = wire::Gid::from_ipv4(0x0a000009);
  f.dst_gid = e.config().gid;
  f.ttl = 61;
  f.opcode = op;
  f.dest_qp = dest_qp;
  f.qkey = qkey;
  f.src_qp = src_qp;
  f.imm = 0x01020304;
  const wire::Segment seg{payload.data(), static_cast<uint32_t>(payload.size())};
  std::vector<uint8_t> out(payload.size() + 128);
  const int n = wire::build_frame(f, {&seg, 1}, out.data(), static_cast<uint32_t>(out.size()));
  out.resize(n > 0 ? n : 0);
  return out;
}

TEST(UdReceive, GrhAreaHoldsTheIpv4HeaderInItsLast20Bytes) {
  CaptureIo io;
  Engine e(EngineConfig{}, &io);
  UdSide s;
  s.open(e);
  s.post_recv(7, 0, 200);
  const std::vector<uint8_t> payload = {1, 2, 3, 4, 5, 6, 7};
  const auto frame = ud_frame(e, s.qpn, kQkey, 0x777, payload, wire::Opcode::kUdSendOnlyImm);
  e.receive(0, frame.data(), static_cast<uint32_t>(frame.size()));
  const auto wc = s.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 7u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[0].byte_len, kGrhBytes + 7);
  EXPECT_EQ(wc[0].src_qp, 0x777u);
  EXPECT_TRUE(wc[0].grh);
  EXPECT_TRUE(wc[0].with_imm);
  EXPECT_EQ(wc[0].imm_data, 0x01020304u);
  // Expect: 20 zero bytes, then the IPv4 header as it arrived, then the payload.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.buf[i], 0) << i;
  wire::Packet p;
  ASSERT_EQ(wire::parse(frame.data(), static_cast<uint32_t>(frame.size()), &p), wire::ParseError::kOk);
  EXPECT_EQ(std::memcmp(s.buf.data() + 20, frame.data() + p.l3_offset, 20), 0);
  EXPECT_EQ(s.buf[20], 0x45);
  EXPECT_EQ(s.buf[20 + 8], 61);   // TTL
  EXPECT_EQ(s.buf[20 + 9], 17);   // UDP
  EXPECT_EQ(s.buf[20 + 12], 10);  // source 10.0.0.9
  EXPECT_EQ(s.buf[20 + 15], 9);
  EXPECT_EQ(std::memcmp(s.buf.data() + 40, payload.data(), payload.size()), 0);
  EXPECT_EQ(s.buf[47], 0xee);  // nothing beyond the message
  // No ACK for a datagram.
  e.poll(10);
  EXPECT_TRUE(io.frames.empty());
}

// The GSI (QpInitAttr::gsi): one UD QP per engine that answers to QP number 1,
// where the CM's MADs arrive; a second is refused, an RC one too.
TEST(UdGsi, TheGsiAnswersToQpOneAndIsAlone) {
  CaptureIo io;
  Engine e(EngineConfig{}, &io);
  UdSide s;
  s.eng = &e;
  s.pd = e.alloc_pd();
  ASSERT_EQ(e.reg_mr(s.pd, s.buf.data(), s.buf.size(), kAccessLocalWrite, &s.mr), 0);
  ASSERT_EQ(e.create_cq(64, &s.cq), 0);
  uint32_t other = 0;
  EXPECT_EQ(e.create_qp(s.pd, {.send_cq = s.cq, .recv_cq = s.cq, .gsi = true}, &other), -EINVAL);  // RC
  ASSERT_EQ(e.create_qp(s.pd, {.qp_type = QpType::kUd, .send_cq = s.cq, .recv_cq = s.cq, .gsi = true}, &s.qpn), 0);
  EXPECT_EQ(s.qpn, kGsiQpn);
  EXPECT_EQ(e.create_qp(s.pd, {.qp_type = QpType::kUd, .send_cq = s.cq, .recv_cq = s.cq, .gsi = true}, &other),
            -EINVAL);
  QpAttr a;
  a.qkey = wire::cm::kGsiQkey;
  std::string err;
  a.qp_state = QpState::kInit;
  ASSERT_EQ(e.modify_qp(s.qpn, a, kQpState | kUdToInitRequired, &err), 0) << err;
  a.qp_state = QpState::kRtr;
  ASSERT_EQ(e.modify_qp(s.qpn, a, kQpState, &err), 0) << err;
  s.post_recv(5, 0, 400);
  const std::vector<uint8_t> mad(256, 0x07);
  const auto frame = ud_frame(e, kGsiQpn, wire::cm::kGsiQkey, 1, mad, wire::Opcode::kUdSendOnly);
  e.receive(0, frame.data(), static_cast<uint32_t>(frame.size()));
  const auto wc = s.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].byte_len, kGrhBytes + 256);
  EXPECT_EQ(wc[0].src_qp, 1u);
  // Gone, the number is free again, and the next QP 1 is allowed.
  ASSERT_EQ(e.destroy_qp(kGsiQpn), 0);
  ASSERT_EQ(e.create_qp(s.pd, {.qp_type = QpType::kUd, .send_cq = s.cq, .recv_cq = s.cq, .gsi = true}, &other), 0);
  EXPECT_EQ(other, kGsiQpn);
}

TEST(UdReceive, GrhAreaHoldsTheWholeIpv6Header) {
  CaptureIo io;
  EngineConfig cfg;
  cfg.gid.raw[0] = 0xfd;
  cfg.gid.raw[15] = 1;
  Engine e(cfg, &io);
  UdSide s;
  s.open(e);
  s.post_recv(1, 0, 100);
  wire::FrameFields f;
  std::memcpy(f.dst_mac, cfg.mac, 6);
  f.src_mac[5] = 9;
  f.src_gid.raw[0] = 0xfd;
  f.src_gid.raw[15] = 9;
  f.dst_gid = cfg.gid;
  f.flow_label = 0x12345;
  f.opcode = wire::Opcode::kUdSendOnly;
  f.dest_qp = s.qpn;
  f.qkey = kQkey;
  f.src_qp = 0x99;
  const uint8_t data[4] = {9, 8, 7, 6};
  const wire::Segment seg{data, 4};
  uint8_t frame[256];
  const int n = wire::build_frame(f, {&seg, 1}, frame, sizeof frame);
  ASSERT_GT(n, 0);
  e.receive(0, frame, static_cast<uint32_t>(n));
  const auto wc = s.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].byte_len, kGrhBytes + 4);
  EXPECT_EQ(std::memcmp(s.buf.data(), frame + 14, 40), 0);  // the IPv6 header fills the area
  EXPECT_EQ(s.buf[0] >> 4, 6);
  EXPECT_EQ(std::memcmp(s.buf.data() + 40, data, 4), 0);
}

TEST(UdReceive, WrongQkeyIsDroppedAndCountedAndTheReceiveStaysPosted) {
  CaptureIo io;
  Engine e(EngineConfig{}, &io);
  UdSide s;
  s.open(e);
  s.post_recv(1, 0, 100);
  const std::vector<uint8_t> payload(10, 0x5a);
  const auto bad = ud_frame(e, s.qpn, kQkey + 1, 0x10, payload);
  e.receive(0, bad.data(), static_cast<uint32_t>(bad.size()));
  EXPECT_TRUE(s.poll().empty());
  EXPECT_EQ(e.counters().rx_bad_qkey, 1u);
  EXPECT_EQ(e.qp_counters(s.qpn)->qkey_violations, 1u);
  EXPECT_EQ(s.buf[40], 0xee);  // not a byte written
  const auto good = ud_frame(e, s.qpn, kQkey, 0x10, payload);
  e.receive(0, good.data(), static_cast<uint32_t>(good.size()));
  const auto wc = s.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(s.buf[40], 0x5a);
}

TEST(UdReceive, NoReceiveDropsAndASmallBufferFailsOnlyItsWqe) {
  CaptureIo io;
  Engine e(EngineConfig{}, &io);
  UdSide s;
  s.open(e);
  const std::vector<uint8_t> payload(100, 1);
  const auto frame = ud_frame(e, s.qpn, kQkey, 0x10, payload);
  e.receive(0, frame.data(), static_cast<uint32_t>(frame.size()));
  EXPECT_EQ(e.counters().rx_ud_no_recv, 1u);
  EXPECT_EQ(e.qp_counters(s.qpn)->ud_dropped_no_recv, 1u);
  EXPECT_TRUE(s.poll().empty());
  s.post_recv(1, 0, 139);  // one byte short of GRH + payload
  s.post_recv(2, 1000, 140);
  e.receive(0, frame.data(), static_cast<uint32_t>(frame.size()));
  e.receive(0, frame.data(), static_cast<uint32_t>(frame.size()));
  const auto wc = s.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].byte_len, 140u);
  QpAttr q;
  ASSERT_EQ(e.query_qp(s.qpn, &q), 0);
  EXPECT_EQ(q.qp_state, QpState::kRts);  // a datagram's error ends no QP
}

TEST(UdReceive, TransportsDoNotMix) {
  CaptureIo io;
  Engine e(EngineConfig{}, &io);
  UdSide s;
  s.open(e);
  s.post_recv(1, 0, 100);
  // An RC SEND to the UD QP.
  wire::FrameFields f;
  std::memcpy(f.dst_mac, e.config().mac, 6);
  f.src_mac[5] = 9;
  f.src_gid = wire::Gid::from_ipv4(0x0a000009);
  f.dst_gid = e.config().gid;
  f.opcode = wire::Opcode::kSendOnly;
  f.dest_qp = s.qpn;
  uint8_t frame[128];
  const int n = wire::build_frame(f, {}, frame, sizeof frame);
  e.receive(0, frame, static_cast<uint32_t>(n));
  EXPECT_EQ(e.counters().rx_wrong_transport, 1u);
  EXPECT_TRUE(s.poll().empty());
}

// ---------------------------------------------------------------- end to end

TEST(UdLoopback, TwoUdQpsOfOneEngine) {
  tita::test::SimNet net(1, 100'000'000'000, 1'000);
  Engine& e = net.engine(0);
  UdSide a, b;
  a.open(e);
  b.open(e);
  AhAttr av;
  av.dgid = net.gid(0);
  uint32_t ah;
  ASSERT_EQ(e.create_ah(a.pd, av, &ah), 0);
  EXPECT_EQ(e.query_ah(ah), 0);  // our own GID: resolved at once
  for (int i = 0; i < 4; ++i) b.post_recv(10 + i, 2048 * i, 2048);
  for (int i = 0; i < 4; ++i) {
    std::memset(a.buf.data() + 100 * i, 'a' + i, 100);
    ASSERT_EQ(a.post_send(i, ah, b.qpn, kQkey, 100 * i, 100), 0);
  }
  net.run_for(100'000);
  EXPECT_EQ(a.poll().size(), 4u);
  const auto wc = b.poll();
  ASSERT_EQ(wc.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(wc[i].wr_id, 10u + i);
    EXPECT_EQ(wc[i].src_qp, a.qpn);
    EXPECT_EQ(wc[i].byte_len, 140u);
    EXPECT_EQ(b.buf[2048 * i + 40], 'a' + i);
    EXPECT_EQ(b.buf[2048 * i + 139], 'a' + i);
  }
  EXPECT_EQ(net.stats().frames, 0u);  // all on the internal loop
}

TEST(UdNet, AddressHandleResolvesByArpThenDatagramsFlowBothWays) {
  tita::test::SimNet net(2, 100'000'000'000, 1'000);
  UdSide a, b;
  a.open(net.engine(0));
  b.open(net.engine(1));
  AhAttr to_b;
  to_b.dgid = net.gid(1);  // no MAC: ARP
  uint32_t ah;
  ASSERT_EQ(net.engine(0).create_ah(a.pd, to_b, &ah), 0);
  EXPECT_EQ(net.engine(0).query_ah(ah), -EAGAIN);
  b.post_recv(1, 0, 4096);
  std::memset(a.buf.data(), 'x', 1024);
  ASSERT_EQ(a.post_send(5, ah, b.qpn, kQkey, 0, 1024), 0);  // waits for the answer
  net.run_for(1'000'000);
  AhAttr got;
  EXPECT_EQ(net.engine(0).query_ah(ah, &got), 0);
  uint8_t mac_b[6];
  net.mac(1, mac_b);
  EXPECT_EQ(std::memcmp(got.dmac, mac_b, 6), 0);
  auto wa = a.poll();
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  auto wb = b.poll();
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].src_qp, a.qpn);
  EXPECT_EQ(wb[0].byte_len, 1064u);
  EXPECT_EQ(b.buf[40], 'x');
  EXPECT_EQ(b.buf[20 + 12], 10);  // the GRH names the sender: 10.0.0.1
  EXPECT_EQ(b.buf[20 + 15], 1);
  // The reply goes to an AH made from what the receive said (the sender's GID
  // from the GRH, its QPN from the completion), as ibv_create_ah_from_wc does.
  AhAttr back;
  back.dgid = wire::Gid::from_ipv4_bytes(b.buf.data() + 20 + 12);
  uint32_t ah_back;
  ASSERT_EQ(net.engine(1).create_ah(b.pd, back, &ah_back), 0);
  EXPECT_EQ(net.engine(1).query_ah(ah_back), 0);  // learned from A's ARP request
  a.post_recv(2, 0, 4096);
  ASSERT_EQ(b.post_send(6, ah_back, wb[0].src_qp, kQkey, 0, 10), 0);
  net.run_for(1'000'000);
  wa = a.poll();
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].src_qp, b.qpn);
  // Data frames: one each way, and nothing acknowledged them.
  EXPECT_EQ(net.engine(0).counters().tx_frames, 2u);  // ARP request + datagram
  EXPECT_EQ(net.engine(1).counters().tx_frames, 2u);  // ARP reply + datagram
}

TEST(UdNet, AnAddressNobodyAnswersFailsItsWrsNotTheQp) {
  tita::test::SimNet net(2, 100'000'000'000, 1'000, 1, [](EngineConfig& c, int) {
    c.arp_retry_ns = 1'000'000;
    c.arp_tries = 2;
  });
  UdSide a;
  a.open(net.engine(0));
  AhAttr nowhere;
  nowhere.dgid = wire::Gid::from_ipv4(0x0a0000fe);
  uint32_t ah;
  ASSERT_EQ(net.engine(0).create_ah(a.pd, nowhere, &ah), 0);
  ASSERT_EQ(a.post_send(1, ah, 5, kQkey, 0, 10), 0);
  net.run_for(10'000'000);
  EXPECT_EQ(net.engine(0).query_ah(ah), -EHOSTUNREACH);
  const auto wc = a.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExcErr);
  QpAttr q;
  ASSERT_EQ(net.engine(0).query_qp(a.qpn, &q), 0);
  EXPECT_EQ(q.qp_state, QpState::kRts);
}

}  // namespace
}  // namespace tita::engine
