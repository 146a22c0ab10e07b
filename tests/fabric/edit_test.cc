// Classification and the egress edit: ECN marking, TTL, INT records, MAC
// rewrite; the frame stays valid RoCEv2 (IPv4 checksum and ICRC).
#include <gtest/gtest.h>

#include <cstring>

#include "frames.h"
#include "tita/fabric/classify.h"
#include "tita/fabric/edit.h"

namespace tita::fabric {
namespace {

using test::frame;
using test::frame_ref;
using test::Spec;

wire::ParseError parse(const std::vector<uint8_t>& f, wire::Packet* p) {
  return wire::parse(f.data(), static_cast<uint32_t>(f.size()), p);
}

TEST(Classify, FieldsOfARoceFrame) {
  Spec s;
  s.sport = 0xc123;
  s.ttl = 9;
  const auto f = frame(s);
  Classified c;
  classify(frame_ref(f), ClassifyConfig{}, true, &c);
  ASSERT_EQ(c.kind, FrameKind::kIp);
  EXPECT_EQ(c.key.ip_version, 4);
  EXPECT_EQ(c.key.sport, 0xc123);
  EXPECT_EQ(c.key.dport, 4791);
  EXPECT_EQ(c.key.proto, 17);
  EXPECT_EQ(std::memcmp(c.key.dst, s.dst.raw, 16), 0);
  EXPECT_EQ(c.l3_offset, 14);
  EXPECT_EQ(c.dscp, 26);
  EXPECT_EQ(c.ecn, wire::kEcnEct0);
  EXPECT_EQ(c.ttl, 9);
  EXPECT_EQ(c.priority, 3);  // DSCP 26 >> 3
  EXPECT_EQ(c.int_action, IntAction::kNone);
}

TEST(Classify, PriorityFromPcpOrDscpMap) {
  Spec s;
  s.vlan = true;
  s.pcp = 5;
  s.dscp = 48;
  const auto f = frame(s);
  ClassifyConfig cfg;
  Classified c;
  classify(frame_ref(f), cfg, false, &c);
  EXPECT_EQ(c.priority, 5);
  EXPECT_EQ(c.l3_offset, 18);
  cfg.trust_pcp = false;
  classify(frame_ref(f), cfg, false, &c);
  EXPECT_EQ(c.priority, 6);  // CS6
  cfg.dscp_priority[48] = 2;
  classify(frame_ref(f), cfg, false, &c);
  EXPECT_EQ(c.priority, 2);
}

TEST(Classify, TelemetryTrailerInFrameOrApart) {
  Spec s;
  s.collect = true;
  s.hops = 2;
  const auto f = frame(s);
  Classified c;
  classify(frame_ref(f, 16), ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.int_action, IntAction::kPush);
  EXPECT_EQ(c.trailer_hops, 2);
  EXPECT_EQ(c.trailer_len, wire::telemetry_bytes(2));
  EXPECT_EQ(c.trailer_offset, f.size() - wire::telemetry_bytes(2));
  classify(frame_ref(f, 15), ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.int_action, IntAction::kOverflow);  // no room for a record
  classify(frame_ref(f), ClassifyConfig{}, false, &c);
  EXPECT_EQ(c.int_action, IntAction::kNone);  // INT off

  // ns-3 style: headers only in data, the trailer in its own buffer.
  const uint32_t tl = wire::telemetry_bytes(2);
  FrameRef r;
  r.data = f.data();
  r.data_len = 80;
  r.frame_bytes = static_cast<uint32_t>(f.size());
  r.trailer = f.data() + f.size() - tl;
  r.trailer_len = tl;
  r.trailer_room = 64;
  classify(r, ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.kind, FrameKind::kIp);
  EXPECT_EQ(c.int_action, IntAction::kPush);
  EXPECT_EQ(c.trailer_len, tl);

  s.hops = 5;
  classify(frame_ref(frame(s)), ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.int_action, IntAction::kOverflow);  // full
  // ECHO trailers pass untouched.
  auto echo = frame(Spec{});
  uint8_t t[8];
  wire::telemetry_write(t, wire::TelemetryHdr::kEcho, 1);
  echo.insert(echo.end(), t, t + 8);
  classify(frame_ref(echo), ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.int_action, IntAction::kNone);
}

TEST(Classify, MalformedAndUnsupported) {
  auto f = frame(Spec{});
  Classified c;
  FrameRef r = frame_ref(f);
  r.data_len = r.frame_bytes = 30;  // cut inside the IPv4 header
  classify(r, ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.kind, FrameKind::kMalformed);
  auto g = f;
  g[14] = 0x55;  // IP version 5
  classify(frame_ref(g), ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.kind, FrameKind::kMalformed);
  g = f;
  g[16] = 0x7f;  // total length beyond the frame
  classify(frame_ref(g), ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.kind, FrameKind::kMalformed);
  g = f;
  g[12] = 0x08;
  g[13] = 0x06;  // ARP
  classify(frame_ref(g), ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.kind, FrameKind::kUnsupported);
  classify(FrameRef{}, ClassifyConfig{}, true, &c);
  EXPECT_EQ(c.kind, FrameKind::kMalformed);
}

TEST(Edit, EcnMarkFixesTheIpv4ChecksumAndKeepsTheIcrc) {
  for (uint8_t ecn : {wire::kEcnEct0, wire::kEcnEct1}) {
    Spec s;
    s.ecn = ecn;
    auto f = frame(s);
    uint8_t* l3 = f.data() + 14;
    ASSERT_TRUE(mark_ce(l3, false));
    wire::Packet p;
    ASSERT_EQ(parse(f, &p), wire::ParseError::kOk);  // checksum and ICRC verified
    EXPECT_EQ(p.ecn, wire::kEcnCe);
    EXPECT_EQ(p.dscp, 26);
    const auto& ip = *reinterpret_cast<const wire::Ipv4Hdr*>(l3);
    EXPECT_EQ(ip.checksum.get(), wire::ipv4_checksum(ip));
  }
  Spec s;
  s.ecn = wire::kEcnNotEct;
  auto f = frame(s);
  const auto before = f;
  EXPECT_FALSE(mark_ce(f.data() + 14, false));
  EXPECT_EQ(f, before);
  s.ecn = wire::kEcnCe;
  f = frame(s);
  EXPECT_FALSE(mark_ce(f.data() + 14, false));
}

TEST(Edit, EcnMarkIpv6) {
  Spec s;
  s.src = test::v6(1);
  s.dst = test::v6(2);
  auto f = frame(s);
  ASSERT_TRUE(mark_ce(f.data() + 14, true));
  wire::Packet p;
  ASSERT_EQ(parse(f, &p), wire::ParseError::kOk);
  EXPECT_EQ(p.ecn, wire::kEcnCe);
  EXPECT_EQ(p.dscp, 26);
  EXPECT_EQ(p.ipv6().flow_label(), 0u);
}

TEST(Edit, TtlDecrementKeepsFramesValid) {
  auto f = frame(Spec{});
  decrement_ttl(f.data() + 14, false);
  wire::Packet p;
  ASSERT_EQ(parse(f, &p), wire::ParseError::kOk);
  EXPECT_EQ(p.ipv4().ttl, 63);
  Spec s;
  s.src = test::v6(1);
  s.dst = test::v6(2);
  f = frame(s);
  decrement_ttl(f.data() + 14, true);
  ASSERT_EQ(parse(f, &p), wire::ParseError::kOk);
  EXPECT_EQ(p.ipv6().hop_limit, 63);
  // Incremental update: a frame that came with a bad checksum keeps it bad by the same amount.
  f = frame(Spec{});
  f[14 + 11] ^= 0x01;
  decrement_ttl(f.data() + 14, false);
  auto& ip = *reinterpret_cast<wire::Ipv4Hdr*>(f.data() + 14);
  EXPECT_EQ(ip.checksum.get() ^ 0x01, wire::ipv4_checksum(ip));
}

TEST(Edit, HopRecordEqualsWireTelemetryPush) {
  Spec s;
  s.collect = true;
  s.hops = 1;
  auto a = frame(s);
  auto b = a;
  Classified c;
  classify(frame_ref(a), ClassifyConfig{}, true, &c);
  ASSERT_EQ(c.int_action, IntAction::kPush);
  EgressEdit e;
  e.flags = EgressEdit::kPushHop;
  e.l3_offset = c.l3_offset;
  e.trailer_offset = c.trailer_offset;
  e.trailer_len = c.trailer_len;
  e.grow_bytes = 16;
  e.rate_mbps = 25'000;
  e.ts_ns = 0xdeadbeef;
  e.tx_bytes = 123'456;
  e.qlen_bytes = 7777;
  a.resize(a.size() + 16);
  apply_edit(e, a.data());
  const uint32_t len = static_cast<uint32_t>(b.size());
  b.resize(b.size() + 16);
  ASSERT_EQ(wire::telemetry_push(b.data(), len, len + 16, 25'000, 0xdeadbeef, 123'456, 7777), len + 16);
  EXPECT_EQ(a, b);
  wire::Packet p;
  ASSERT_EQ(parse(a, &p), wire::ParseError::kOk);
  ASSERT_NE(p.telemetry(), nullptr);
  EXPECT_EQ(p.telemetry()->hops(), 2);
  const wire::TelemetryHop& hop = wire::telemetry_hops(p.telemetry())[1];
  EXPECT_EQ(hop.rate_mbps.get(), 25'000u);
  EXPECT_EQ(hop.ts_ns.get(), 0xdeadbeefu);
  EXPECT_EQ(hop.tx_bytes.get(), 123'456u);
  EXPECT_EQ(hop.qlen_bytes.get(), 7777u);

  // The same edit on headers and a trailer kept apart gives the same bytes.
  auto whole = frame(s);
  const uint32_t tl = c.trailer_len;
  std::vector<uint8_t> headers(whole.begin(), whole.end() - tl);
  std::vector<uint8_t> trailer(whole.end() - tl, whole.end());
  trailer.resize(tl + 16);
  apply_edit(e, headers.data(), trailer.data());
  headers.insert(headers.end(), trailer.begin(), trailer.end());
  EXPECT_EQ(headers, a);
}

TEST(Edit, OverflowAndMacRewrite) {
  Spec s;
  s.collect = true;
  s.hops = 5;
  auto f = frame(s);
  Classified c;
  classify(frame_ref(f), ClassifyConfig{}, true, &c);
  const uint8_t src[6] = {2, 0, 0, 0, 0, 0xaa}, dst[6] = {2, 0, 0, 0, 0, 0xbb};
  EgressEdit e;
  e.flags = EgressEdit::kOverflow | EgressEdit::kRewriteMac | EgressEdit::kDecTtl | EgressEdit::kMarkCe;
  e.l3_offset = c.l3_offset;
  e.trailer_offset = c.trailer_offset;
  e.trailer_len = c.trailer_len;
  e.src_mac = src;
  e.dst_mac = dst;
  apply_edit(e, f.data());
  wire::Packet p;
  ASSERT_EQ(parse(f, &p), wire::ParseError::kOk);
  EXPECT_TRUE(p.telemetry()->overflow());
  EXPECT_EQ(p.telemetry()->hops(), 5);
  EXPECT_EQ(p.ecn, wire::kEcnCe);
  EXPECT_EQ(p.ipv4().ttl, 63);
  EXPECT_EQ(std::memcmp(p.eth().src, src, 6), 0);
  EXPECT_EQ(std::memcmp(p.eth().dst, dst, 6), 0);
}

}  // namespace
}  // namespace tita::fabric
