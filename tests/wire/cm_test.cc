// CM MADs (lib/wire/cm.h): fields where IBA's tables put them, and what is
// built reads back the same.
#include "tita/wire/cm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace tita::wire::cm {
namespace {

constexpr size_t H = kMadHeaderBytes;

TEST(CmMad, ReqFieldsSitWhereTable106PutsThem) {
  Req q;
  q.local_comm_id = 0x11223344;
  q.service_id = service_id(kPsTcp, 7174);
  q.local_ca_guid = 0x0102030405060708;
  q.local_qpn = 0xabcdef;
  q.responder_resources = 16;
  q.initiator_depth = 8;
  q.remote_cm_response_timeout = 18;
  q.starting_psn = 0x123456;
  q.local_cm_response_timeout = 20;
  q.retry_count = 7;
  q.path_mtu = 3;  // IBV_MTU_1024
  q.rnr_retry_count = 6;
  q.max_cm_retries = 15;
  q.srq = true;
  q.primary_local_gid = Gid::from_ipv4(0x0a000002);
  q.primary_remote_gid = Gid::from_ipv4(0x0a000001);
  q.hop_limit = 64;
  q.local_ack_timeout = 14;
  q.private_data[0] = 0xaa;
  uint8_t mad[kMadBytes];
  build(q, 0x42, mad);
  // The common MAD header: CM class, version 2, Send, attribute REQ.
  EXPECT_EQ(mad[0], 1);
  EXPECT_EQ(mad[1], 0x07);
  EXPECT_EQ(mad[2], 2);
  EXPECT_EQ(mad[3], 0x03);
  EXPECT_EQ(mad[15], 0x42);
  EXPECT_EQ(mad[16], 0x00);
  EXPECT_EQ(mad[17], 0x10);
  // Table 106: comm ID at 0, service ID at 8 (0x0106 << 16 | port), QPN at 32..34,
  // responder resources at 35, PSN at 44..46, timeout and retry count share 47.
  EXPECT_EQ(mad[H + 0], 0x11);
  EXPECT_EQ(mad[H + 3], 0x44);
  const uint8_t sid[8] = {0, 0, 0, 0, 0x01, 0x06, 0x1c, 0x06};
  EXPECT_EQ(std::memcmp(mad + H + 8, sid, 8), 0);
  EXPECT_EQ(mad[H + 16], 0x01);
  EXPECT_EQ(mad[H + 32], 0xab);
  EXPECT_EQ(mad[H + 34], 0xef);
  EXPECT_EQ(mad[H + 35], 16);
  EXPECT_EQ(mad[H + 39], 8);
  EXPECT_EQ(mad[H + 43], 18 << 3);  // timeout in the top five bits; RC (0), no flow control
  EXPECT_EQ(mad[H + 44], 0x12);
  EXPECT_EQ(mad[H + 46], 0x56);
  EXPECT_EQ(mad[H + 47], (20 << 3) | 7);
  EXPECT_EQ(mad[H + 48], 0xff);  // P_Key
  EXPECT_EQ(mad[H + 50], (3 << 4) | 6);
  EXPECT_EQ(mad[H + 51], (15 << 4) | (1 << 3));
  EXPECT_EQ(mad[H + 56 + 10], 0xff);  // the requester's GID, IPv4-mapped
  EXPECT_EQ(mad[H + 56 + 15], 0x02);
  EXPECT_EQ(mad[H + 72 + 15], 0x01);
  EXPECT_EQ(mad[H + 93], 64);
  EXPECT_EQ(mad[H + 95], 14 << 3);
  EXPECT_EQ(mad[H + 140], 0xaa);

  MadHeader h;
  ASSERT_TRUE(parse_header(mad, sizeof mad, &h));
  EXPECT_EQ(h.attr, Attr::kReq);
  EXPECT_EQ(h.tid, 0x42u);
  Req back;
  parse(mad, &back);
  EXPECT_EQ(back.local_comm_id, q.local_comm_id);
  EXPECT_EQ(back.service_id, q.service_id);
  EXPECT_EQ(service_port(back.service_id), 7174);
  EXPECT_EQ(back.local_ca_guid, q.local_ca_guid);
  EXPECT_EQ(back.local_qpn, q.local_qpn);
  EXPECT_EQ(back.starting_psn, q.starting_psn);
  EXPECT_EQ(back.retry_count, 7);
  EXPECT_EQ(back.rnr_retry_count, 6);
  EXPECT_EQ(back.path_mtu, 3);
  EXPECT_TRUE(back.srq);
  EXPECT_EQ(back.primary_local_gid, q.primary_local_gid);
  EXPECT_EQ(back.local_ack_timeout, 14);
}

TEST(CmMad, RepRejAndShortMessagesReadBack) {
  Rep p;
  p.local_comm_id = 7;
  p.remote_comm_id = 9;
  p.local_qpn = 0x12;
  p.starting_psn = 0xfedcba;
  p.responder_resources = 4;
  p.initiator_depth = 2;
  p.target_ack_delay = 15;
  p.rnr_retry_count = 7;
  p.local_ca_guid = 0xdeadbeef;
  p.private_data[195] = 0x5a;
  uint8_t mad[kMadBytes];
  build(p, 1, mad);
  EXPECT_EQ(mad[H + 12 + 2], 0x12);  // table 110: QPN at 12..14
  EXPECT_EQ(mad[H + 27], 7 << 5);    // RNR retry count in the top three bits
  Rep pb;
  parse(mad, &pb);
  EXPECT_EQ(pb.remote_comm_id, 9u);
  EXPECT_EQ(pb.starting_psn, 0xfedcbau);
  EXPECT_EQ(pb.target_ack_delay, 15);
  EXPECT_EQ(pb.local_ca_guid, 0xdeadbeefu);
  EXPECT_EQ(pb.private_data[195], 0x5a);

  Rej r;
  r.local_comm_id = 3;
  r.remote_comm_id = 4;
  r.rejected = Which::kReq;
  r.reason = static_cast<uint16_t>(RejReason::kInvalidServiceId);
  build(r, 2, mad);
  EXPECT_EQ(mad[H + 11], 8);  // table 108: reason at 10..11
  Rej rb;
  parse(mad, &rb);
  EXPECT_EQ(rb.reason, 8);
  EXPECT_EQ(rb.remote_comm_id, 4u);

  const uint8_t priv[3] = {1, 2, 3};
  build(Attr::kDreq, Short{5, 6, 0x77}, 3, mad, priv, sizeof priv);
  Short d;
  parse(mad, &d);
  EXPECT_EQ(d.local_comm_id, 5u);
  EXPECT_EQ(d.remote_comm_id, 6u);
  EXPECT_EQ(d.remote_qpn, 0x77u);
  size_t room = 0;
  const uint8_t* pd = private_data(Attr::kDreq, mad, &room);
  EXPECT_EQ(room, kDreqPrivate);
  EXPECT_EQ(pd[2], 3);
  build(Attr::kRtu, Short{5, 6, 0}, 3, mad);
  parse(mad, &d);
  EXPECT_EQ(d.remote_qpn, 0u);  // an RTU has no QPN field
}

TEST(CmMad, SidrFieldsSitWhereIbaPutsThem) {
  SidrReq q;
  q.request_id = 0x01020304;
  q.service_id = service_id(kPsUdp, 7174);
  q.private_data[0] = 0x00;
  q.private_data[1] = 0x40;  // rdma_cm's header: IPv4
  q.private_data[215] = 0x99;
  uint8_t mad[kMadBytes];
  build(q, 0x77, mad);
  EXPECT_EQ(mad[17], 0x17);  // attribute SIDR_REQ
  EXPECT_EQ(mad[H + 3], 0x04);
  EXPECT_EQ(mad[H + 4], 0xff);  // P_Key at 4..5: the default partition
  EXPECT_EQ(mad[H + 5], 0xff);
  const uint8_t sid[8] = {0, 0, 0, 0, 0x01, 0x11, 0x1c, 0x06};
  EXPECT_EQ(std::memcmp(mad + H + 8, sid, 8), 0);
  EXPECT_EQ(mad[H + 17], 0x40);  // private data from 16
  EXPECT_EQ(mad[kMadBytes - 1], 0x99);
  SidrReq qb;
  parse(mad, &qb);
  EXPECT_EQ(qb.request_id, q.request_id);
  EXPECT_EQ(qb.service_id, q.service_id);
  EXPECT_EQ(qb.pkey, 0xffff);
  EXPECT_EQ(qb.private_data[215], 0x99);

  SidrRep p;
  p.request_id = 0x01020304;
  p.status = SidrStatus::kSuccess;
  p.qpn = 0xabcdef;
  p.service_id = q.service_id;
  p.qkey = kUdpQkey;
  p.private_data[135] = 0x5a;
  build(p, 0x77, mad);
  EXPECT_EQ(mad[17], 0x18);
  EXPECT_EQ(mad[H + 4], 0);     // status
  EXPECT_EQ(mad[H + 8], 0xab);  // QPN in the top 24 bits of 8..11
  EXPECT_EQ(mad[H + 10], 0xef);
  EXPECT_EQ(mad[H + 11], 0);
  EXPECT_EQ(std::memcmp(mad + H + 12, sid, 8), 0);
  EXPECT_EQ(mad[H + 20], 0x01);  // Q_Key at 20..23
  EXPECT_EQ(mad[H + 23], 0x67);
  EXPECT_EQ(mad[kMadBytes - 1], 0x5a);  // private data from 96, 136 bytes: to the MAD's end
  size_t room = 0;
  EXPECT_EQ(private_data(Attr::kSidrRep, mad, &room), mad + H + 96);
  EXPECT_EQ(room, kSidrRepPrivate);
  p.status = SidrStatus::kUnsupported;
  build(p, 0x77, mad);
  SidrRep pb;
  parse(mad, &pb);
  EXPECT_EQ(pb.status, SidrStatus::kUnsupported);
  EXPECT_EQ(pb.qpn, 0xabcdefu);
  EXPECT_EQ(pb.qkey, kUdpQkey);
  EXPECT_EQ(pb.private_data[135], 0x5a);
}

TEST(CmMad, NotACmMadIsNotRead) {
  uint8_t mad[kMadBytes] = {};
  MadHeader h;
  mad[1] = 0x07;
  mad[2] = 2;
  EXPECT_FALSE(parse_header(mad, kMadBytes - 1, &h));  // short
  mad[1] = 0x01;                                        // subnet management
  EXPECT_FALSE(parse_header(mad, kMadBytes, &h));
}

TEST(CmMad, RdmaCmHeaderCarriesIpv4InTheLastFourBytes) {
  CmaHeader c;
  c.src_port = 40000;
  c.src = Gid::from_ipv4(0x0a000002);
  c.dst = Gid::from_ipv4(0x0a000001);
  uint8_t p[kCmaHeaderBytes];
  build_cma_header(c, p);
  EXPECT_EQ(p[0], 0);       // version
  EXPECT_EQ(p[1], 4 << 4);  // IPv4
  EXPECT_EQ(p[2], 40000 >> 8);
  for (int i = 4; i < 16; ++i) EXPECT_EQ(p[i], 0) << i;  // no ::ffff: prefix, as Linux's cma_hdr
  EXPECT_EQ(p[19], 2);
  EXPECT_EQ(p[35], 1);
  CmaHeader b;
  ASSERT_TRUE(parse_cma_header(p, &b));
  EXPECT_EQ(b.src_port, 40000);
  EXPECT_EQ(b.src, c.src);
  EXPECT_EQ(b.dst, c.dst);
  p[0] = 1;
  EXPECT_FALSE(parse_cma_header(p, &b));
}

// MADs Linux 6.1's CM sent over rxe (captured on the VM's tap during
// interop-rxe's rdmacm group: rping from the VM to tita, and rping from tita
// to the VM), as hex of the 256-byte MAD, zeros after the last byte shown.
constexpr const char* kLinuxReq =
    "01070203000000000000000270ea2ec10010000000000000c12eea7000000000"
    "0000000001061c06505400fffe00000100000000000000000000110100000001"
    "000000a03dfe12a7ffff37f0ffffffff00000000000000000000ffff0a000002"
    "00000000000000000000ffff0a000001c9790000004000980000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "000000000040eb360000000000000000000000000a0000020000000000000000"
    "000000000a000001";
constexpr const char* kLinuxRep =
    "0107020300000000fbefb12d000000010013000000000000e30333e7fbefb12d"
    "0000000000001100000000002e67dc00000078e0505400fffe000001";
constexpr const char* kLinuxRej =
    "0107020300000000fbefb12e00000001001200000000000000000000fbefb12e"
    "00000008";
// udaddy's SIDR exchange (captured the same way during the rdmacm group's
// udaddy runs): the VM's SIDR_REQ to tita, and its SIDR_REP to tita's.
constexpr const char* kLinuxSidrReq =
    "010702030000000000000002e50e769e00170000000000009e760ee5ffff0000"
    "0000000001111c06004093900000000000000000000000000a00000200000000"
    "00000000000000000a000001";
constexpr const char* kLinuxSidrRep =
    "01070203000000000f9fdb010000000300180000000000000f9fdb0100000000"
    "000011000000000001111c0601234567";
constexpr const char* kLinuxDreq =
    "01070203000000000000000270ea2ec10015000000000000c12eea7037072f1d"
    "000012";

std::vector<uint8_t> mad_of(const char* hex) {
  std::vector<uint8_t> m(kMadBytes, 0);
  for (size_t i = 0; hex[2 * i] != '\0' && i < kMadBytes; ++i) {
    m[i] = static_cast<uint8_t>(std::stoi(std::string(hex + 2 * i, 2), nullptr, 16));
  }
  return m;
}

// A captured MAD read as M, its header into *h; building M again from its
// fields must give the same 256 bytes.
template <class M>
M read_and_rebuild(const std::vector<uint8_t>& mad, MadHeader* h) {
  M m;
  EXPECT_TRUE(parse_header(mad.data(), mad.size(), h));
  parse(mad.data(), &m);
  uint8_t again[kMadBytes];
  build(m, h->tid, again);
  EXPECT_EQ(std::memcmp(again, mad.data(), kMadBytes), 0) << "attribute " << static_cast<int>(h->attr);
  return m;
}

TEST(CmMadFromLinux, ItsReqReadsAsRdmaCmSentItAndRebuildsByteForByte) {
  MadHeader h;
  const Req q = read_and_rebuild<Req>(mad_of(kLinuxReq), &h);
  EXPECT_EQ(h.attr, Attr::kReq);
  EXPECT_EQ(h.tid, 0x0000000270ea2ec1u);
  EXPECT_EQ(q.local_comm_id, 0xc12eea70u);
  EXPECT_EQ(q.service_id, service_id(kPsTcp, 7174));  // rping's port
  EXPECT_EQ(q.local_ca_guid, 0x505400fffe000001u);     // from the VM's MAC 52:54:00:00:00:01
  EXPECT_EQ(q.local_qpn, 0x11u);
  EXPECT_EQ(q.responder_resources, 1);
  EXPECT_EQ(q.initiator_depth, 1);
  EXPECT_EQ(q.remote_cm_response_timeout, 20);
  EXPECT_EQ(q.transport_service, 0);
  EXPECT_EQ(q.starting_psn, 0x3dfe12u);
  EXPECT_EQ(q.local_cm_response_timeout, 20);
  EXPECT_EQ(q.retry_count, 7);
  EXPECT_EQ(q.pkey, 0xffff);
  EXPECT_EQ(q.path_mtu, 3);  // 1024 on a 1500-byte Ethernet
  EXPECT_EQ(q.rnr_retry_count, 7);
  EXPECT_EQ(q.max_cm_retries, 15);
  EXPECT_FALSE(q.srq);
  EXPECT_EQ(q.primary_local_lid, 0xffff);  // permissive: RoCE has no LIDs
  EXPECT_EQ(q.primary_local_gid, Gid::from_ipv4(0x0a000002));
  EXPECT_EQ(q.primary_remote_gid, Gid::from_ipv4(0x0a000001));
  EXPECT_EQ(q.flow_label, 0xc9790u);
  EXPECT_EQ(q.hop_limit, 64);
  EXPECT_EQ(q.local_ack_timeout, 19);
  CmaHeader c;
  ASSERT_TRUE(parse_cma_header(q.private_data, &c));
  EXPECT_EQ(c.ip_version, 4);
  EXPECT_EQ(c.src, Gid::from_ipv4(0x0a000002));
  EXPECT_EQ(c.dst, Gid::from_ipv4(0x0a000001));
  EXPECT_EQ(c.src_port, 0xeb36);
}

TEST(CmMadFromLinux, ItsRepRejAndDreqRead) {
  MadHeader h;
  const Rep p = read_and_rebuild<Rep>(mad_of(kLinuxRep), &h);
  EXPECT_EQ(h.attr, Attr::kRep);
  EXPECT_EQ(p.local_comm_id, 0xe30333e7u);
  EXPECT_EQ(p.remote_comm_id, 0xfbefb12du);  // tita's REQ's
  EXPECT_EQ(p.local_qpn, 0x11u);
  EXPECT_EQ(p.starting_psn, 0x2e67dcu);
  EXPECT_EQ(p.target_ack_delay, 15);
  EXPECT_EQ(p.rnr_retry_count, 7);
  EXPECT_EQ(p.local_ca_guid, 0x505400fffe000001u);

  const auto rej = mad_of(kLinuxRej);
  Rej r;
  parse(rej.data(), &r);
  EXPECT_EQ(r.remote_comm_id, 0xfbefb12eu);
  EXPECT_EQ(r.rejected, Which::kReq);
  EXPECT_EQ(r.reason, static_cast<uint16_t>(RejReason::kInvalidServiceId));  // nobody listened yet

  const auto dreq = mad_of(kLinuxDreq);
  Short d;
  parse(dreq.data(), &d);
  EXPECT_EQ(d.local_comm_id, 0xc12eea70u);
  EXPECT_EQ(d.remote_comm_id, 0x37072f1du);
  EXPECT_EQ(d.remote_qpn, 0x12u);  // tita's QP
}

TEST(CmMadFromLinux, ItsSidrReqAndRepReadAndRebuildByteForByte) {
  MadHeader h;
  const SidrReq q = read_and_rebuild<SidrReq>(mad_of(kLinuxSidrReq), &h);
  EXPECT_EQ(h.attr, Attr::kSidrReq);
  EXPECT_EQ(q.request_id, 0x9e760ee5u);
  EXPECT_EQ(q.pkey, 0xffff);
  EXPECT_EQ(q.service_id, service_id(kPsUdp, 7174));  // udaddy's port
  CmaHeader c;
  ASSERT_TRUE(parse_cma_header(q.private_data, &c));
  EXPECT_EQ(c.src, Gid::from_ipv4(0x0a000002));
  EXPECT_EQ(c.dst, Gid::from_ipv4(0x0a000001));
  EXPECT_EQ(c.src_port, 0x9390);

  const SidrRep p = read_and_rebuild<SidrRep>(mad_of(kLinuxSidrRep), &h);
  EXPECT_EQ(h.attr, Attr::kSidrRep);
  EXPECT_EQ(p.request_id, 0x0f9fdb01u);  // tita's SIDR_REQ's
  EXPECT_EQ(p.status, SidrStatus::kSuccess);
  EXPECT_EQ(p.qpn, 0x11u);                // the VM's UD QP
  EXPECT_EQ(p.service_id, service_id(kPsUdp, 7174));
  EXPECT_EQ(p.qkey, kUdpQkey);            // RDMA_UDP_QKEY, as tita's own SIDR_REP says
}

}  // namespace
}  // namespace tita::wire::cm
