// Known answers from outside tita: a CNP captured from a ConnectX-4 Lx NIC (the
// vector in scapy's test/contrib/roce.uts), and CRC-32 check values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tita/wire/frame.h"
#include "tita/wire/psn.h"

namespace tita::wire {
namespace {

std::vector<uint8_t> from_hex(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  return out;
}

const std::vector<uint8_t> kCx4Cnp = from_hex(
    "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b7002800008100ffff40000118000000000000"
    "000000000000000000000000000082fd002a");

TEST(KnownAnswer, Crc32CheckValue) {
  // The CRC-32 (IEEE) check value of "123456789" is 0xCBF43926.
  EXPECT_EQ(crc32(0, "123456789", 9), 0xcbf43926u);
  // Continuation: any split gives the same result.
  EXPECT_EQ(crc32(crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
  const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(crc32(0, ff, 8), 0x2144df1cu);  // the constant icrc.cc starts from
}

TEST(KnownAnswer, Cx4CnpParsesAndVerifies) {
  Packet p;
  ASSERT_EQ(parse(kCx4Cnp.data(), static_cast<uint32_t>(kCx4Cnp.size()), &p), ParseError::kOk);
  EXPECT_EQ(p.ip_version, 4);
  EXPECT_EQ(p.dscp, 48);
  EXPECT_EQ(p.ecn, kEcnEct0);
  EXPECT_EQ(p.udp().src_port.get(), 0);
  EXPECT_EQ(p.opcode(), 0x81);
  EXPECT_EQ(p.op->kind, Kind::kCnp);
  EXPECT_EQ(p.bth().pkey.get(), 0xffff);
  EXPECT_TRUE(p.bth().becn());
  EXPECT_FALSE(p.bth().fecn());
  EXPECT_EQ(p.dest_qp(), 0x000118u);
  EXPECT_EQ(p.psn(), 0u);
  EXPECT_EQ(p.payload_len, 0u);
  EXPECT_EQ(p.icrc(), 0x2a00fd82u);  // bytes 82 fd 00 2a on the wire, least significant first
  EXPECT_EQ(p.trailer_len, 0u);
  EXPECT_EQ(p.src_gid().ipv4(), 0x0a001101u);
  EXPECT_EQ(p.dst_gid().ipv4(), 0x0a001201u);
}

TEST(KnownAnswer, Cx4CnpRebuiltFromFieldsIsIdentical) {
  FrameFields f;
  const uint8_t dst[6] = {0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2};
  const uint8_t src[6] = {0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32};
  std::copy(dst, dst + 6, f.dst_mac);
  std::copy(src, src + 6, f.src_mac);
  f.src_gid = Gid::from_ipv4(0x0a001101);
  f.dst_gid = Gid::from_ipv4(0x0a001201);
  f.dscp = 48;
  f.ecn = kEcnEct0;
  f.ip_id = 0x718c;
  f.ttl = 64;
  f.udp_src_port = 0;
  f.opcode = Opcode::kCnp;
  f.becn = true;
  f.dest_qp = 0x118;
  f.psn = 0;
  uint8_t buf[128];
  const int len = build_frame(f, {}, buf, sizeof buf);
  ASSERT_EQ(len, static_cast<int>(kCx4Cnp.size()));
  EXPECT_EQ(std::vector<uint8_t>(buf, buf + len), kCx4Cnp);
}

TEST(KnownAnswer, RnrTimerTable) {
  EXPECT_EQ(aeth::rnr_timer_ns(0), 655'360'000u);
  EXPECT_EQ(aeth::rnr_timer_ns(1), 10'000u);
  EXPECT_EQ(aeth::rnr_timer_ns(14), 1'280'000u);
  EXPECT_EQ(aeth::rnr_timer_ns(31), 491'520'000u);
  EXPECT_EQ(aeth::rnr_timer_code(10'000), 1);
  EXPECT_EQ(aeth::rnr_timer_code(10'001), 2);
  EXPECT_EQ(aeth::rnr_timer_code(1'000'000), 14);
  EXPECT_EQ(aeth::rnr_timer_code(500'000'000), 0);
}

TEST(Psn, HalfSpaceOrder) {
  EXPECT_EQ(psn_add(0xfffffe, 3), 1u);
  EXPECT_TRUE(psn_after(1, 0xfffffe));
  EXPECT_TRUE(psn_before(0xfffffe, 1));
  EXPECT_EQ(psn_diff(1, 0xfffffe), 3);
  EXPECT_EQ(psn_diff(0xfffffe, 1), -3);
  EXPECT_EQ(psn_distance(1, 0xfffffe), 3u);
  EXPECT_FALSE(psn_after(7, 7));
  EXPECT_FALSE(psn_before(7, 7));
  // Exactly half the space away counts as before.
  EXPECT_TRUE(psn_before(0x800000, 0));
  EXPECT_TRUE(psn_after(0x7fffff, 0));
}

}  // namespace
}  // namespace tita::wire
