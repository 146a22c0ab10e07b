// Build and parse: round trips for every opcode, every parse error from a crafted
// frame, single-bit corruption, the IPv6 ICRC against an independent definition,
// and the telemetry trailer.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <vector>

#include "tita/wire/frame.h"
#include "tita/wire/psn.h"
#include "tita/wire/text.h"

namespace tita::wire {
namespace {

std::vector<Opcode> all_opcodes() {
  std::vector<Opcode> ops;
  for (int v = 0; v < 256; ++v) {
    if (opcode_info(static_cast<uint8_t>(v)).valid()) ops.push_back(static_cast<Opcode>(v));
  }
  return ops;
}

FrameFields fields(Opcode op, bool ipv6 = false) {
  FrameFields f;
  for (int i = 0; i < 6; ++i) {
    f.dst_mac[i] = static_cast<uint8_t>(0x10 + i);
    f.src_mac[i] = static_cast<uint8_t>(0x20 + i);
  }
  if (ipv6) {
    for (int i = 0; i < 16; ++i) {
      f.src_gid.raw[i] = static_cast<uint8_t>(0xfd + i);
      f.dst_gid.raw[i] = static_cast<uint8_t>(0xfd + 2 * i);
    }
    f.flow_label = 0xabcde;
  } else {
    f.src_gid = Gid::from_ipv4(0xc0a80001);
    f.dst_gid = Gid::from_ipv4(0xc0a80002);
  }
  f.opcode = op;
  f.dscp = 26;
  f.ecn = kEcnEct0;
  f.dest_qp = 0xabcdef;
  f.psn = 0xfffffe;
  f.ack_req = true;
  f.va = 0x0123456789abcdefull;
  f.rkey = 0xfeedf00d;
  f.dma_len = 65536;
  f.syndrome = aeth::nak(aeth::kNakRemoteAccessError);
  f.msn = 0x123456;
  f.imm = 0xcafebabe;
  f.swap_add = 0x1111222233334444ull;
  f.compare = 0x5555666677778888ull;
  f.orig = 0x9999aaaabbbbccccull;
  return f;
}

std::vector<uint8_t> payload_bytes(uint32_t n) {
  std::vector<uint8_t> p(n);
  for (uint32_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 7 + 3);
  return p;
}

std::vector<uint8_t> build(const FrameFields& f, const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> buf(9000);
  const Segment seg{payload.data(), static_cast<uint32_t>(payload.size())};
  const int len = build_frame(f, {&seg, payload.empty() ? 0u : 1u}, buf.data(), static_cast<uint32_t>(buf.size()));
  EXPECT_GT(len, 0);
  buf.resize(static_cast<size_t>(len));
  return buf;
}

TEST(Frame, EveryOpcodeRoundTripsIpv4Ipv6AndVlan) {
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      for (Opcode op : all_opcodes()) {
        SCOPED_TRACE(std::string(opcode_info(op).name) + (ipv6 ? " v6" : " v4") + (vlan ? " vlan" : ""));
        FrameFields f = fields(op, ipv6);
        f.vlan = vlan;
        f.pcp = 5;
        f.vid = 42;
        const OpcodeInfo& info = opcode_info(op);
        for (uint32_t n : {0u, 1u, 2u, 3u, 4u, 1023u, 4096u}) {
          if (!info.has(kHasPayload) && n > 0) continue;
          const auto payload = payload_bytes(n);
          const auto frame = build(f, payload);
          Packet p;
          ASSERT_EQ(parse(frame.data(), static_cast<uint32_t>(frame.size()), &p), ParseError::kOk);
          EXPECT_EQ(p.ip_version, ipv6 ? 6 : 4);
          EXPECT_EQ(p.has_vlan, vlan);
          if (vlan) {
            EXPECT_EQ(p.pcp, 5);
            EXPECT_EQ(p.vid, 42);
          }
          EXPECT_EQ(p.dscp, 26);
          EXPECT_EQ(p.ecn, kEcnEct0);
          EXPECT_EQ(p.src_gid(), f.src_gid);
          EXPECT_EQ(p.dst_gid(), f.dst_gid);
          EXPECT_EQ(p.opcode(), static_cast<uint8_t>(op));
          EXPECT_EQ(p.dest_qp(), 0xabcdefu);
          EXPECT_EQ(p.psn(), 0xfffffeu);
          EXPECT_TRUE(p.bth().ack_requested());
          ASSERT_EQ(p.payload_len, n);
          if (n > 0) {
            EXPECT_EQ(0, std::memcmp(p.payload(), payload.data(), n));
          }
          EXPECT_EQ(p.pad, pad_bytes(n));
          EXPECT_EQ(p.reth() != nullptr, info.has(kHasReth));
          if (const Reth* r = p.reth()) {
            EXPECT_EQ(r->va.get(), f.va);
            EXPECT_EQ(r->rkey.get(), f.rkey);
            EXPECT_EQ(r->dma_len.get(), f.dma_len);
          }
          EXPECT_EQ(p.aeth() != nullptr, info.has(kHasAeth));
          if (const Aeth* a = p.aeth()) {
            EXPECT_EQ(a->syndrome, f.syndrome);
            EXPECT_EQ(a->msn.get(), f.msn);
          }
          EXPECT_EQ(p.imm() != nullptr, info.has(kHasImm));
          if (const ImmDt* i = p.imm()) {
            EXPECT_EQ(i->imm.get(), f.imm);
          }
          if (const AtomicEth* a = p.atomic_eth()) {
            EXPECT_EQ(a->va.get(), f.va);
            EXPECT_EQ(a->swap_add.get(), f.swap_add);
            EXPECT_EQ(a->compare.get(), f.compare);
          }
          if (const AtomicAckEth* a = p.atomic_ack()) {
            EXPECT_EQ(a->orig.get(), f.orig);
          }
          // Headers, payload, pad and ICRC add up to the frame.
          EXPECT_EQ(p.payload_offset + n + p.pad + kIcrcBytes, frame.size());
        }
      }
    }
  }
}

TEST(Frame, SegmentedPayloadGivesTheSameFrameAsContiguous) {
  const auto payload = payload_bytes(3001);
  const FrameFields f = fields(Opcode::kWriteOnly);
  const auto contiguous = build(f, payload);

  // Headers in one buffer, the payload in three pieces elsewhere, pad+ICRC in a third.
  std::array<uint8_t, 128> hdr{};
  const uint32_t hdr_len = build_headers(f, 3001, hdr.data(), hdr.size());
  ASSERT_EQ(hdr_len, header_bytes(f));
  const Segment segs[] = {{payload.data(), 1}, {payload.data() + 1, 2000}, {payload.data() + 2001, 1000}};
  uint8_t tail[8];
  finish_frame(hdr.data(), hdr_len, segs, tail);
  std::vector<uint8_t> gathered(hdr.begin(), hdr.begin() + hdr_len);
  gathered.insert(gathered.end(), payload.begin(), payload.end());
  gathered.insert(gathered.end(), tail, tail + pad_bytes(3001) + kIcrcBytes);
  EXPECT_EQ(gathered, contiguous);
}

TEST(Frame, PeekDestQpFindsTheBthCheaply) {
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      FrameFields f = fields(Opcode::kSendOnly, ipv6);
      f.vlan = vlan;
      const auto frame = build(f, payload_bytes(10));
      EXPECT_EQ(peek_dest_qp(frame.data(), static_cast<uint32_t>(frame.size())), 0xabcdef);
      // Not enough bytes for the BTH, or not RoCEv2: -1.
      EXPECT_EQ(peek_dest_qp(frame.data(), 14 + (vlan ? 4 : 0) + (ipv6 ? 40 : 20) + 8 + 4), -1);
      auto other = frame;
      other[14 + (vlan ? 4 : 0) + (ipv6 ? 40 : 20) + 3] ^= 1;  // UDP destination port
      EXPECT_EQ(peek_dest_qp(other.data(), static_cast<uint32_t>(other.size())), -1);
    }
  }
}

TEST(Frame, BuildRefusesSmallBuffers) {
  const auto payload = payload_bytes(100);
  const Segment seg{payload.data(), 100};
  uint8_t buf[256];
  const FrameFields f = fields(Opcode::kSendOnly);
  EXPECT_EQ(build_frame(f, {&seg, 1}, buf, 100), -ENOSPC);
  EXPECT_EQ(build_headers(f, 100, buf, header_bytes(f) - 1), 0u);
  EXPECT_GT(build_frame(f, {&seg, 1}, buf, sizeof buf), 0);
}

// ---- Parse errors: one crafted frame per code ----

struct Crafted {
  ParseError expect;
  std::vector<uint8_t> frame;
};

void refresh_ip_checksum(std::vector<uint8_t>& f, uint32_t l3 = 14) {
  auto* ip = reinterpret_cast<Ipv4Hdr*>(f.data() + l3);
  ip->checksum.set(ipv4_checksum(*ip));
}

// Recomputes the ICRC of an IPv4 frame without VLAN, after an edit.
void refresh_icrc(std::vector<uint8_t>& f) {
  const uint32_t end = 14 + reinterpret_cast<const Ipv4Hdr*>(f.data() + 14)->total_len.get();
  store_le32(f.data() + end - 4, icrc_compute(f.data() + 14, end - 4 - 14));
}

std::vector<Crafted> crafted_frames() {
  const auto good = build(fields(Opcode::kWriteOnly), payload_bytes(9));
  const auto ack = build(fields(Opcode::kAck), {});
  std::vector<Crafted> out;
  auto edit = [&](ParseError e, std::vector<uint8_t> f, auto&& fn) {
    fn(f);
    out.push_back({e, std::move(f)});
  };
  edit(ParseError::kTruncated, good, [](auto& f) { f.resize(10); });
  edit(ParseError::kTruncated, good, [](auto& f) { f.resize(f.size() - 1); });
  edit(ParseError::kNotIp, good, [](auto& f) { f[12] = 0x08, f[13] = 0x06; });  // ARP
  edit(ParseError::kBadIpVersion, good, [](auto& f) { f[14] = 0x65; });
  edit(ParseError::kBadIpHeader, good, [](auto& f) {
    f[14] = 0x44;  // IHL 4 words: shorter than the fixed header
  });
  edit(ParseError::kBadIpHeader, good, [](auto& f) {
    f[20] = 0x20;  // more fragments
    refresh_ip_checksum(f);
  });
  edit(ParseError::kBadIpChecksum, good, [](auto& f) { f[14 + 8] ^= 1; });  // TTL changed, checksum not
  edit(ParseError::kNotUdp, good, [](auto& f) {
    f[14 + 9] = 6;  // TCP
    refresh_ip_checksum(f);
  });
  edit(ParseError::kNotRoce, good, [](auto& f) { f[34 + 3] = 0x35; });  // UDP dst 4661
  edit(ParseError::kLengthMismatch, good, [](auto& f) { f[34 + 5] -= 4; });  // UDP length 4 short
  edit(ParseError::kLengthMismatch, ack, [](auto& f) {
    // An ACK whose lengths say 4 bytes too few for its AETH and ICRC.
    f.resize(f.size() - 4);
    auto* ip = reinterpret_cast<Ipv4Hdr*>(f.data() + 14);
    ip->total_len.set(static_cast<uint16_t>(ip->total_len.get() - 4));
    reinterpret_cast<UdpHdr*>(f.data() + 34)->length.set(static_cast<uint16_t>(ip->total_len.get() - 20));
    refresh_ip_checksum(f);
  });
  edit(ParseError::kBadVersion, good, [](auto& f) { f[42 + 1] |= 0x01; });
  edit(ParseError::kUnknownOpcode, good, [](auto& f) { f[42] = 0x24; });  // UC SEND Only: tita has no UC
  edit(ParseError::kBadPadCount, ack, [](auto& f) {
    f[42 + 1] |= 0x10;  // pad on an ACK
    refresh_icrc(f);
  });
  edit(ParseError::kBadPadCount, build(fields(Opcode::kWriteOnly), {}), [](auto& f) {
    f[42 + 1] |= 0x10;  // one pad byte, but no payload bytes at all
  });
  edit(ParseError::kBadIcrc, good, [](auto& f) { f[f.size() - 1] ^= 0x80; });
  edit(ParseError::kBadIcrc, good, [](auto& f) { f[60] ^= 0x01; });  // payload byte
  return out;
}

TEST(Parse, EveryErrorCodeFromACraftedFrame) {
  std::array<bool, static_cast<size_t>(ParseError::kCount)> seen{};
  seen[0] = true;  // kOk: every other test
  for (const Crafted& c : crafted_frames()) {
    SCOPED_TRACE(std::string(to_string(c.expect)));
    Packet p;
    EXPECT_EQ(parse(c.frame.data(), static_cast<uint32_t>(c.frame.size()), &p), c.expect);
    seen[static_cast<size_t>(c.expect)] = true;
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_TRUE(seen[i]) << "no crafted frame for " << to_string(static_cast<ParseError>(i));
    EXPECT_NE(to_string(static_cast<ParseError>(i)), "invalid");
  }
}

TEST(Parse, NeverReadsPastAShortenedFrame) {
  // Every prefix of a valid frame, copied to an exactly-sized heap buffer (ASan
  // catches a read past it) parses to an error, never to ok.
  const auto frame = build(fields(Opcode::kWriteOnlyImm, true), payload_bytes(33));
  for (size_t n = 0; n < frame.size(); ++n) {
    std::vector<uint8_t> prefix(frame.begin(), frame.begin() + static_cast<ptrdiff_t>(n));
    Packet p;
    EXPECT_NE(parse(prefix.data(), static_cast<uint32_t>(n), &p), ParseError::kOk) << n;
  }
}

// Byte ranges a single-bit flip may change without any check noticing: the MAC
// addresses (protected by the Ethernet FCS, not by RoCE) and the fields the ICRC
// masks because routers rewrite them and nothing else covers. IPv4 TOS and TTL are
// masked too, but the IPv4 header checksum catches them.
bool invariant_exempt(size_t i, int bit, bool ipv6) {
  if (i < 12) return true;  // destination and source MAC
  const size_t l3 = 14;
  const size_t l4 = l3 + (ipv6 ? 40 : 20);
  if (ipv6) {
    if (i == l3) return bit < 4;            // low nibble of byte 0 is traffic class; the version is checked
    if (i > l3 && i < l3 + 4) return true;  // traffic class, flow label
    if (i == l3 + 7) return true;           // hop limit
  }
  if (i == l4 + 6 || i == l4 + 7) return true;  // UDP checksum
  return i == l4 + 8 + 4;                       // BTH FECN/BECN/reserved
}

TEST(Parse, EverySingleBitFlipIsCaught) {
  for (bool ipv6 : {false, true}) {
    for (Opcode op : {Opcode::kWriteFirst, Opcode::kSendLastImm, Opcode::kAck, Opcode::kReadRequest, Opcode::kCnp}) {
      const OpcodeInfo& info = opcode_info(op);
      const auto frame = build(fields(op, ipv6), info.has(kHasPayload) ? payload_bytes(21) : std::vector<uint8_t>{});
      for (size_t i = 0; i < frame.size(); ++i) {
        for (int bit = 0; bit < 8; ++bit) {
          auto bad = frame;
          bad[i] ^= static_cast<uint8_t>(1 << bit);
          Packet p;
          const ParseError e = parse(bad.data(), static_cast<uint32_t>(bad.size()), &p);
          if (invariant_exempt(i, bit, ipv6)) {
            EXPECT_EQ(e, ParseError::kOk) << info.name << " byte " << i << " bit " << bit;
          } else {
            EXPECT_NE(e, ParseError::kOk) << info.name << (ipv6 ? " v6" : " v4") << " byte " << i << " bit " << bit;
          }
        }
      }
    }
  }
}
// ---- IPv6 ICRC against an independent definition ----

// Bitwise CRC-32 (reflected 0xEDB88320), no tables, no ISA-L.
uint32_t reference_crc32(const std::vector<uint8_t>& data) {
  uint32_t crc = 0xffffffff;
  for (uint8_t b : data) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
  }
  return ~crc;
}

TEST(Icrc, Ipv6MatchesTheDefinition) {
  std::mt19937 rng(7);
  for (Opcode op : all_opcodes()) {
    const uint32_t n = opcode_info(op).has(kHasPayload) ? rng() % 300 : 0;
    FrameFields f = fields(op, true);
    f.ttl = static_cast<uint8_t>(rng());
    const auto frame = build(f, payload_bytes(n));
    // 8 x 0xFF, then IPv6 with TC/flow label/hop limit set to ones, UDP with the
    // checksum set to ones, BTH with byte 4 set to ones, the rest as sent.
    std::vector<uint8_t> m(8, 0xff);
    m.insert(m.end(), frame.begin() + 14, frame.end() - 4);
    const size_t ip = 8;
    m[ip + 0] = 0x6f;
    m[ip + 1] = m[ip + 2] = m[ip + 3] = 0xff;
    m[ip + 7] = 0xff;
    m[ip + 40 + 6] = m[ip + 40 + 7] = 0xff;
    m[ip + 48 + 4] = 0xff;
    EXPECT_EQ(load_le32(frame.data() + frame.size() - 4), reference_crc32(m)) << opcode_info(op).name;
  }
}

TEST(Icrc, EcnMarkingAndBecnLeaveItValid) {
  // Switches set CE and NICs set BECN without recomputing the ICRC.
  auto frame = build(fields(Opcode::kWriteMiddle), payload_bytes(64));
  auto* ip = reinterpret_cast<Ipv4Hdr*>(frame.data() + 14);
  ip->set_tos(ip->dscp(), kEcnCe);
  ip->ttl = 3;
  ip->checksum.set(ipv4_checksum(*ip));
  frame[42 + 4] |= Bth::kBecn;
  Packet p;
  ASSERT_EQ(parse(frame.data(), static_cast<uint32_t>(frame.size()), &p), ParseError::kOk);
  EXPECT_EQ(p.ecn, kEcnCe);
  EXPECT_TRUE(p.bth().becn());
}

// The one-pass copy gives the CRC of the bytes and the bytes, whatever the
// length (the copy-then-CRC below 1 KB; the fold's 256, 64 and 16-byte steps
// and the bytes after them above), the
// alignment of either side and the running CRC it continues; it writes nothing
// outside the destination.
TEST(Crc32Copy, IsTheCopyAndTheCrcOfTheBytes) {
  std::mt19937 rng(11);
  std::vector<uint32_t> lengths;
  for (uint32_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (uint32_t n = 1000; n <= 1400; ++n) lengths.push_back(n);  // the fold from 1 KB: each step's remainders
  for (int i = 0; i < 400; ++i) lengths.push_back(rng() % 9200);
  for (uint32_t n : lengths) {
    const uint32_t src_off = rng() % 64, dst_off = rng() % 64;
    std::vector<uint8_t> src(n + 64), dst(n + 128, 0xee);
    for (auto& b : src) b = static_cast<uint8_t>(rng());
    const uint32_t seed = n % 3 == 0 ? 0 : rng();
    const uint8_t* from = src.data() + src_off;
    const uint32_t got = crc32_copy(dst.data() + dst_off, from, n, seed);
    ASSERT_EQ(got, crc32(seed, from, n)) << n << " bytes";
    if (seed == 0) {
      ASSERT_EQ(got, reference_crc32({from, from + n})) << n << " bytes";
    }
    ASSERT_EQ(0, std::memcmp(dst.data() + dst_off, from, n)) << n << " bytes";
    for (uint32_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], 0xee) << n << " bytes: written before";
    for (size_t i = dst_off + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xee) << n << " bytes: written after";
  }
}

// The frame a copying host finishes is the frame build_frame() makes and the
// tail finish_frame() writes for the payload where it lies (phantom segments
// as zeros).
TEST(FinishFrameCopy, EqualsFinishFrameOverTheSameBytes) {
  std::mt19937 rng(5);
  for (uint32_t a : {0u, 3u, 300u, 1001u}) {
    for (uint32_t b : {0u, 1u, 255u, 2999u}) {
      std::vector<uint8_t> p1 = payload_bytes(a), p2 = payload_bytes(b), zeros(77, 0);
      for (auto& x : p2) x = static_cast<uint8_t>(rng());
      const Segment copied[3] = {{p1.data(), a}, {nullptr, 77}, {p2.data(), b}};
      const Segment in_place[3] = {{p1.data(), a}, {zeros.data(), 77}, {p2.data(), b}};
      FrameFields f = fields(Opcode::kWriteMiddle);
      const uint32_t len = a + 77 + b;
      uint8_t hdr[128], tail[8], copy_tail[8];
      const uint32_t hdr_len = build_headers(f, len, hdr, sizeof hdr);
      std::vector<uint8_t> dst(len);
      finish_frame(hdr, hdr_len, in_place, tail);
      finish_frame_copy(hdr, hdr_len, copied, dst.data(), copy_tail);
      const uint32_t tail_len = pad_bytes(len) + kIcrcBytes;
      EXPECT_EQ(0, std::memcmp(tail, copy_tail, tail_len)) << a << "+77+" << b;
      std::vector<uint8_t> gathered(p1);
      gathered.insert(gathered.end(), zeros.begin(), zeros.end());
      gathered.insert(gathered.end(), p2.begin(), p2.end());
      EXPECT_EQ(dst, gathered);
      // And the whole frame parses with its ICRC checked.
      std::vector<uint8_t> frame(hdr, hdr + hdr_len);
      frame.insert(frame.end(), dst.begin(), dst.end());
      frame.insert(frame.end(), copy_tail, copy_tail + tail_len);
      Packet pkt;
      EXPECT_EQ(parse(frame.data(), static_cast<uint32_t>(frame.size()), &pkt), ParseError::kOk);
    }
  }
}

TEST(Frame, EthernetWalkAndDatagramEndFromTheHeadersAlone) {
  FrameFields f = fields(Opcode::kWriteOnly);
  f.vlan = true;
  f.pcp = 5;
  auto frame = build(f, payload_bytes(1000));
  const auto len = static_cast<uint32_t>(frame.size());
  EthernetView e;
  ASSERT_TRUE(parse_ethernet(frame.data(), len, &e));
  EXPECT_EQ(e.ethertype, kEtherTypeIpv4);
  EXPECT_EQ(e.l3_offset, 18);
  EXPECT_TRUE(e.vlan);
  EXPECT_EQ(e.pcp, 5);
  EXPECT_FALSE(parse_ethernet(frame.data(), 16, &e));  // ends inside the tag
  // The datagram is the whole frame here; only the headers need be at hand.
  EXPECT_EQ(datagram_end(frame.data(), len), len);
  EXPECT_EQ(datagram_end(frame.data(), 64, len), len);
  EXPECT_EQ(datagram_end(frame.data(), 64, len - 1), 0u);  // would end past the frame
  EXPECT_EQ(datagram_end(frame.data(), 20, len), 0u);       // no IP length at hand
}

// ---- Telemetry trailer ----

TEST(Telemetry, SwitchesAppendHopsOutsideTheDatagram) {
  auto frame = build(fields(Opcode::kSendOnly), payload_bytes(100));
  const size_t datagram = frame.size();
  frame.resize(datagram + kMaxTelemetryBytes + 16);
  uint32_t len = static_cast<uint32_t>(datagram) +
                 telemetry_write(frame.data() + datagram, TelemetryHdr::kCollect, 123456789);
  for (uint32_t hop = 0; hop < 7; ++hop) {
    len = telemetry_push(frame.data(), len, static_cast<uint32_t>(frame.size()), 100'000, 1000 * hop, 5000 + hop,
                         80 * hop);
  }
  ASSERT_EQ(len, datagram + telemetry_bytes(kMaxTelemetryHops));
  Packet p;
  ASSERT_EQ(parse(frame.data(), len, &p), ParseError::kOk);  // ICRC untouched
  const TelemetryHdr* t = p.telemetry();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->hops(), kMaxTelemetryHops);
  EXPECT_TRUE(t->overflow());  // hops 6 and 7 found it full
  EXPECT_EQ(t->ts_ns.get(), 123456789u);
  const TelemetryHop* h = telemetry_hops(t);
  for (int i = 0; i < kMaxTelemetryHops; ++i) {
    EXPECT_EQ(h[i].rate_mbps.get(), 100'000u);
    EXPECT_EQ(h[i].ts_ns.get(), 1000u * i);
    EXPECT_EQ(h[i].tx_bytes.get(), 5000u + i);
    EXPECT_EQ(h[i].qlen_bytes.get(), 80u * i);
  }
}

TEST(Telemetry, EchoTrailersAndPaddingAreLeftAlone) {
  auto frame = build(fields(Opcode::kAck), {});
  const size_t datagram = frame.size();
  frame.resize(datagram + 64);
  const uint32_t len = static_cast<uint32_t>(datagram) +
                       telemetry_write(frame.data() + datagram, TelemetryHdr::kEcho, 42, 3, 4);
  EXPECT_EQ(telemetry_push(frame.data(), len, 200, 1, 2, 3, 4), len);
  Packet p;
  ASSERT_EQ(parse(frame.data(), len, &p), ParseError::kOk);
  ASSERT_NE(p.telemetry(), nullptr);
  EXPECT_TRUE(p.telemetry()->echo());
  EXPECT_EQ(p.telemetry()->ce_packets, 3);
  EXPECT_EQ(p.telemetry()->path_hops, 4);

  // A selective-repeat NAK's trailer carries the out-of-order PSN before any hops.
  auto nak = build(fields(Opcode::kAck), {});
  const size_t nak_end = nak.size();
  nak.resize(nak_end + telemetry_bytes(1, true));
  uint8_t* t = nak.data() + nak_end;
  telemetry_write(t, TelemetryHdr::kEcho, 7);
  t[1] |= TelemetryHdr::kSack | 1;
  reinterpret_cast<TelemetrySack*>(t + sizeof(TelemetryHdr))->psn.set(0xabcdef);
  reinterpret_cast<TelemetryHop*>(t + sizeof(TelemetryHdr) + sizeof(TelemetrySack))->qlen_bytes.set(99);
  ASSERT_EQ(parse(nak.data(), static_cast<uint32_t>(nak.size()), &p), ParseError::kOk);
  ASSERT_NE(p.telemetry(), nullptr);
  ASSERT_NE(telemetry_sack(p.telemetry()), nullptr);
  EXPECT_EQ(telemetry_sack(p.telemetry())->psn.get(), 0xabcdefu);
  EXPECT_EQ(telemetry_hops(p.telemetry())[0].qlen_bytes.get(), 99u);

  // Ethernet padding after a short frame is not a trailer, and not an error.
  auto padded = build(fields(Opcode::kSendOnly), {});
  padded.resize(60 + 6, 0);
  ASSERT_EQ(parse(padded.data(), static_cast<uint32_t>(padded.size()), &p), ParseError::kOk);
  EXPECT_EQ(p.telemetry(), nullptr);
  EXPECT_EQ(telemetry_push(padded.data(), static_cast<uint32_t>(padded.size()), 100, 1, 2, 3, 4), padded.size());
}

}  // namespace
}  // namespace tita::wire

// Addresses as tools read them from configurations and command lines (wire/text.h).
TEST(Text, MacAndIpv4AreReadAsEveryToolReadsThem) {
  uint8_t mac[6] = {};
  ASSERT_TRUE(tita::wire::parse_mac("02:00:0a:ff:00:01", mac));
  EXPECT_EQ(tita::wire::mac_string(mac), "02:00:0a:ff:00:01");
  for (const char* bad : {"02:00:0a:ff:00", "02:00:0a:ff:00:01:07", "02:00:0a:ff:00:1ff", "zz:00:00:00:00:01", ""}) {
    EXPECT_FALSE(tita::wire::parse_mac(bad, mac)) << bad;
  }
  uint32_t ip = 0;
  ASSERT_TRUE(tita::wire::parse_ipv4("10.0.0.7", &ip));
  EXPECT_EQ(ip, 0x0a000007u);
  for (const char* bad : {"10.0.0", "10.0.0.256", "10.0.0.1 ", "::1"}) EXPECT_FALSE(tita::wire::parse_ipv4(bad, &ip)) << bad;
}
