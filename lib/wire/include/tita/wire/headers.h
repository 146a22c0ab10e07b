// RoCEv2 frame headers: Ethernet (optional 802.1Q), IPv4/IPv6, UDP, and the
// InfiniBand transport headers (BTH and its extensions). Layouts follow the
// InfiniBand Architecture Specification vol. 1 rel. 1.4 and its RoCEv2 annex (A17).
//
// Every struct has alignment 1 and a static_assert'ed size, so a pointer into a
// received frame can be read through it at any offset.
#pragma once

#include <cstdint>

#include "tita/wire/endian.h"

namespace tita::wire {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeMacControl = 0x8808;  // PAUSE and PFC
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr uint16_t kRoceUdpPort = 4791;
inline constexpr uint16_t kDefaultPkey = 0xffff;
inline constexpr uint32_t kIcrcBytes = 4;

// IP ECN codepoints (RFC 3168).
inline constexpr uint8_t kEcnNotEct = 0;
inline constexpr uint8_t kEcnEct1 = 1;
inline constexpr uint8_t kEcnEct0 = 2;
inline constexpr uint8_t kEcnCe = 3;

using MacAddr = uint8_t[6];

struct EthHdr {
  uint8_t dst[6];
  uint8_t src[6];
  be16 ethertype;
};
static_assert(sizeof(EthHdr) == 14 && alignof(EthHdr) == 1);

// 802.1Q tag, between the source address and the ethertype of the payload.
struct VlanTag {
  be16 tci;  // PCP 3 bits, DEI 1 bit, VID 12 bits
  be16 ethertype;

  uint8_t pcp() const { return static_cast<uint8_t>(tci.get() >> 13); }
  uint16_t vid() const { return tci.get() & 0x0fff; }
  void set(uint8_t pcp, uint16_t vid) { tci.set(static_cast<uint16_t>((pcp & 7) << 13 | (vid & 0x0fff))); }
};
static_assert(sizeof(VlanTag) == 4 && alignof(VlanTag) == 1);

struct Ipv4Hdr {
  uint8_t version_ihl;
  uint8_t tos;  // DSCP 6 bits, ECN 2 bits
  be16 total_len;
  be16 id;
  be16 frag;  // flags 3 bits, fragment offset 13 bits
  uint8_t ttl;
  uint8_t protocol;
  be16 checksum;
  uint8_t src[4];
  uint8_t dst[4];

  uint8_t version() const { return version_ihl >> 4; }
  uint32_t header_bytes() const { return (version_ihl & 0x0fu) * 4u; }
  uint8_t dscp() const { return tos >> 2; }
  uint8_t ecn() const { return tos & 3; }
  void set_tos(uint8_t dscp, uint8_t ecn) { tos = static_cast<uint8_t>(dscp << 2 | (ecn & 3)); }
  // More-fragments flag or a non-zero offset: RoCEv2 never fragments.
  bool is_fragment() const { return (frag.get() & 0x3fff) != 0; }
};
static_assert(sizeof(Ipv4Hdr) == 20 && alignof(Ipv4Hdr) == 1);

struct Ipv6Hdr {
  be32 version_tc_flow;  // version 4 bits, traffic class 8 bits, flow label 20 bits
  be16 payload_len;
  uint8_t next_header;
  uint8_t hop_limit;
  uint8_t src[16];
  uint8_t dst[16];

  uint8_t version() const { return static_cast<uint8_t>(version_tc_flow.get() >> 28); }
  uint8_t traffic_class() const { return static_cast<uint8_t>(version_tc_flow.get() >> 20); }
  uint32_t flow_label() const { return version_tc_flow.get() & 0xfffff; }
  void set(uint8_t traffic_class, uint32_t flow_label) {
    version_tc_flow.set(6u << 28 | uint32_t{traffic_class} << 20 | (flow_label & 0xfffff));
  }
};
static_assert(sizeof(Ipv6Hdr) == 40 && alignof(Ipv6Hdr) == 1);

struct UdpHdr {
  be16 src_port;  // flow entropy for ECMP
  be16 dst_port;  // 4791
  be16 length;
  be16 checksum;  // 0: none (allowed for RoCEv2)
};
static_assert(sizeof(UdpHdr) == 8 && alignof(UdpHdr) == 1);

// Base Transport Header.
struct Bth {
  static constexpr uint8_t kSolicitedEvent = 0x80;
  static constexpr uint8_t kMigReq = 0x40;
  static constexpr uint8_t kPadMask = 0x30;
  static constexpr uint8_t kTverMask = 0x0f;
  static constexpr uint8_t kFecn = 0x80;
  static constexpr uint8_t kBecn = 0x40;
  static constexpr uint8_t kAckReq = 0x80;

  uint8_t opcode;
  uint8_t flags;  // SE, MigReq, PadCnt, TVer
  be16 pkey;
  uint8_t fecn_becn;  // FECN, BECN, 6 reserved bits (masked in the ICRC)
  be24 dest_qp;
  uint8_t ack_req;  // AckReq, 7 reserved bits
  be24 psn;

  bool se() const { return flags & kSolicitedEvent; }
  bool mig_req() const { return flags & kMigReq; }
  uint8_t pad_count() const { return (flags & kPadMask) >> 4; }
  uint8_t tver() const { return flags & kTverMask; }
  bool fecn() const { return fecn_becn & kFecn; }
  bool becn() const { return fecn_becn & kBecn; }
  bool ack_requested() const { return ack_req & kAckReq; }
};
static_assert(sizeof(Bth) == 12 && alignof(Bth) == 1);

// Datagram Extended Transport Header: on every UD packet, right after the BTH.
// The receiver checks the Q_Key against its QP's; the source QP is what the
// receive completion reports (ibv_wc.src_qp).
struct Deth {
  be32 qkey;
  uint8_t reserved;
  be24 src_qp;
};
static_assert(sizeof(Deth) == 8 && alignof(Deth) == 1);

// RDMA Extended Transport Header: WRITE First/Only and READ Request.
struct Reth {
  be64 va;
  be32 rkey;
  be32 dma_len;
};
static_assert(sizeof(Reth) == 16 && alignof(Reth) == 1);

// ACK Extended Transport Header: ACK, READ Response First/Last/Only, Atomic ACK.
struct Aeth {
  uint8_t syndrome;
  be24 msn;
};
static_assert(sizeof(Aeth) == 4 && alignof(Aeth) == 1);

// Immediate data.
struct ImmDt {
  be32 imm;
};
static_assert(sizeof(ImmDt) == 4 && alignof(ImmDt) == 1);

// Atomic Extended Transport Header: Compare&Swap and Fetch&Add.
struct AtomicEth {
  be64 va;
  be32 rkey;
  be64 swap_add;
  be64 compare;
};
static_assert(sizeof(AtomicEth) == 28 && alignof(AtomicEth) == 1);

// Atomic ACK Extended Transport Header: the original remote value.
struct AtomicAckEth {
  be64 orig;
};
static_assert(sizeof(AtomicAckEth) == 8 && alignof(AtomicAckEth) == 1);

// The 16 reserved bytes after the BTH of a RoCEv2 CNP (opcode 0x81).
struct CnpBody {
  uint8_t reserved[16];
};
static_assert(sizeof(CnpBody) == 16 && alignof(CnpBody) == 1);

// AETH syndrome: bits 6:5 give the type, bits 4:0 the credit, timer or NAK code.
namespace aeth {
inline constexpr uint8_t kTypeMask = 0x60;
inline constexpr uint8_t kAck = 0x00;
inline constexpr uint8_t kRnrNak = 0x20;
inline constexpr uint8_t kNak = 0x60;
inline constexpr uint8_t kValueMask = 0x1f;
inline constexpr uint8_t kCreditUnlimited = 0x1f;
// NAK codes (syndrome = kNak | code).
inline constexpr uint8_t kNakPsnSequenceError = 0;
inline constexpr uint8_t kNakInvalidRequest = 1;
inline constexpr uint8_t kNakRemoteAccessError = 2;
inline constexpr uint8_t kNakRemoteOperationalError = 3;
inline constexpr uint8_t kNakInvalidRdRequest = 4;

constexpr uint8_t type(uint8_t syndrome) { return syndrome & kTypeMask; }
constexpr uint8_t value(uint8_t syndrome) { return syndrome & kValueMask; }
constexpr uint8_t ack(uint8_t credit = kCreditUnlimited) { return kAck | (credit & kValueMask); }
constexpr uint8_t nak(uint8_t code) { return kNak | (code & kValueMask); }
constexpr uint8_t rnr_nak(uint8_t timer_code) { return kRnrNak | (timer_code & kValueMask); }
// The RNR NAK timer code as a delay: code 0 is 655.36 ms, codes 1..31 from 0.01 ms to 491.52 ms.
uint64_t rnr_timer_ns(uint8_t timer_code);
// The code of the shortest delay that is at least delay_ns (0, the longest, beyond 491.52 ms).
uint8_t rnr_timer_code(uint64_t delay_ns);
}  // namespace aeth

// IEEE 802.1Qbb priority flow control frame (MAC control opcode 0x0101), after the
// Ethernet header with destination 01:80:c2:00:00:01 and ethertype 0x8808.
struct PfcFrame {
  static constexpr uint16_t kOpcode = 0x0101;
  be16 opcode;
  be16 class_enable;  // bit p set: quanta[p] is valid
  be16 quanta[8];     // pause time per priority, in 512-bit-time quanta; 0 = resume
};
static_assert(sizeof(PfcFrame) == 20 && alignof(PfcFrame) == 1);
inline constexpr uint8_t kPfcDstMac[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};

}  // namespace tita::wire
