// Parsing and building whole RoCEv2 frames.
//
//   Ethernet [802.1Q] / IPv4 or IPv6 / UDP 4791 / BTH / ext headers / payload / pad / ICRC
//   [/ tita telemetry trailer, outside the IP datagram]
//
// parse() turns a frame into a Packet view (offsets into the caller's buffer) or
// says precisely what is wrong with it; it never reads past frame + len.
// build_headers() + finish_frame() write a frame around payload that stays where
// it is (zero copy); build_frame() does both into one buffer.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

#include "tita/wire/headers.h"
#include "tita/wire/icrc.h"
#include "tita/wire/opcode.h"
#include "tita/wire/telemetry.h"

namespace tita::wire {

// A RoCE GID: an IPv6 address, or an IPv4 address mapped as ::ffff:a.b.c.d.
struct Gid {
  uint8_t raw[16] = {};

  static Gid from_ipv4(uint32_t addr_host_order);
  static Gid from_ipv4_bytes(const uint8_t addr[4]) {
    Gid g;
    g.raw[10] = g.raw[11] = 0xff;
    std::memcpy(g.raw + 12, addr, 4);
    return g;
  }
  bool is_ipv4() const {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(raw, kPrefix, sizeof kPrefix) == 0;
  }
  uint32_t ipv4() const;  // host order; meaningful when is_ipv4()
  const uint8_t* ipv4_bytes() const { return raw + 12; }
  static Gid from_raw(const uint8_t bytes[16]) {
    Gid g;
    std::memcpy(g.raw, bytes, 16);
    return g;
  }
  friend bool operator==(const Gid& a, const Gid& b) { return std::memcmp(a.raw, b.raw, 16) == 0; }
};

enum class ParseError : uint8_t {
  kOk = 0,
  kTruncated,       // the frame ends before the headers it announces
  kNotIp,           // ethertype (after an optional 802.1Q tag) is neither IPv4 nor IPv6
  kBadIpVersion,    // IP version field disagrees with the ethertype
  kBadIpHeader,     // IPv4 header length below 20 bytes, or a fragment
  kBadIpChecksum,
  kNotUdp,          // IP protocol / next header is not UDP
  kNotRoce,         // UDP destination port is not 4791
  kLengthMismatch,  // IP and UDP lengths disagree, or are too short for the opcode's headers and ICRC
  kBadVersion,      // BTH transport version is not 0
  kUnknownOpcode,   // not an RC or UD SEND opcode, nor a CNP
  kBadPadCount,     // pad on an opcode that carries no payload, or padded payload not 4-byte aligned
  kBadIcrc,
  kCount
};
std::string_view to_string(ParseError e);

// A parsed frame: offsets into the caller's buffer, valid while it is.
struct Packet {
  const uint8_t* frame = nullptr;
  uint32_t frame_len = 0;
  uint16_t l3_offset = 0;       // IP header
  uint16_t l4_offset = 0;       // UDP header
  uint16_t bth_offset = 0;
  uint32_t payload_offset = 0;  // first payload byte (after extension headers)
  uint32_t payload_len = 0;     // payload bytes, without pad
  uint32_t icrc_offset = 0;
  uint32_t trailer_offset = 0;  // telemetry trailer, when trailer_len > 0
  uint32_t trailer_len = 0;
  uint8_t pad = 0;
  uint8_t ip_version = 0;  // 4 or 6
  uint8_t dscp = 0;
  uint8_t ecn = 0;
  bool has_vlan = false;
  uint8_t pcp = 0;
  uint16_t vid = 0;
  const OpcodeInfo* op = nullptr;

  const EthHdr& eth() const { return *reinterpret_cast<const EthHdr*>(frame); }
  const Ipv4Hdr& ipv4() const { return *reinterpret_cast<const Ipv4Hdr*>(frame + l3_offset); }
  const Ipv6Hdr& ipv6() const { return *reinterpret_cast<const Ipv6Hdr*>(frame + l3_offset); }
  const UdpHdr& udp() const { return *reinterpret_cast<const UdpHdr*>(frame + l4_offset); }
  const Bth& bth() const { return *reinterpret_cast<const Bth*>(frame + bth_offset); }
  uint8_t opcode() const { return bth().opcode; }
  uint32_t psn() const { return bth().psn.get(); }
  uint32_t dest_qp() const { return bth().dest_qp.get(); }
  Gid src_gid() const { return ip_version == 6 ? Gid::from_raw(ipv6().src) : Gid::from_ipv4_bytes(ipv4().src); }
  Gid dst_gid() const { return ip_version == 6 ? Gid::from_raw(ipv6().dst) : Gid::from_ipv4_bytes(ipv4().dst); }
  // Whether the source address is g (without making a Gid of it).
  bool src_is(const Gid& g) const {
    return ip_version == 6 ? std::memcmp(ipv6().src, g.raw, 16) == 0
                           : g.is_ipv4() && std::memcmp(ipv4().src, g.ipv4_bytes(), 4) == 0;
  }
  // Extension headers: nullptr when the opcode has none of that kind.
  const Deth* deth() const { return ext<Deth>(kHasDeth); }
  const Reth* reth() const { return ext<Reth>(kHasReth); }
  const Aeth* aeth() const { return ext<Aeth>(kHasAeth); }
  const ImmDt* imm() const { return ext<ImmDt>(kHasImm); }
  const AtomicEth* atomic_eth() const { return ext<AtomicEth>(kHasAtomicEth); }
  const AtomicAckEth* atomic_ack() const { return ext<AtomicAckEth>(kHasAtomicAckEth); }
  const uint8_t* payload() const { return frame + payload_offset; }
  const TelemetryHdr* telemetry() const {
    return trailer_len ? reinterpret_cast<const TelemetryHdr*>(frame + trailer_offset) : nullptr;
  }
  uint32_t icrc() const { return load_le32(frame + icrc_offset); }

 private:
  template <typename T>
  const T* ext(HeaderMask h) const {
    return op->has(h) ? reinterpret_cast<const T*>(frame + bth_offset + ext_offset(*op, h)) : nullptr;
  }
};

struct ParseOptions {
  bool verify_icrc = true;
  bool verify_ip_checksum = true;
};

// Parses `len` bytes at `frame` (starting with the Ethernet header, no FCS).
ParseError parse(const uint8_t* frame, uint32_t len, Packet* out, ParseOptions opts = {});
// parse()'s second half: UDP, BTH, extension headers, payload, pad, ICRC and
// trailer of a frame whose Ethernet and IP fields `p` already holds (frame,
// frame_len, the L3/L4 offsets, IP version, DSCP, ECN, VLAN), its IP datagram
// ending at `end` (checked to lie within len). The engine's fast path checks
// Ethernet and IP against what a QP expects and runs this for the rest.
ParseError parse_transport(const uint8_t* frame, uint32_t len, uint32_t end, Packet* p, ParseOptions opts = {});

// The ICRC check of a packet parsed with verify_icrc off, its payload copied to
// `dst` (payload_len bytes; nullptr: none) in the same pass over the bytes
// (crc32_copy). False: the ICRC is wrong, and dst holds the bytes anyway; a
// caller copies only to where the good packet will put its own.
bool icrc_check_copy(const Packet& p, uint8_t* dst);

// What stays the same for every packet of a flow: addresses, class, ports, QP.
struct PathFields {
  // Ethernet
  uint8_t dst_mac[6] = {};
  uint8_t src_mac[6] = {};
  bool vlan = false;  // add an 802.1Q tag carrying pcp (for PFC) and vid
  uint8_t pcp = 0;
  uint16_t vid = 0;
  // IP: IPv4 when both GIDs are IPv4-mapped, IPv6 otherwise
  Gid src_gid;
  Gid dst_gid;
  uint8_t dscp = 0;
  uint8_t ttl = 64;  // hop limit for IPv6
  uint16_t ip_id = 0;
  uint32_t flow_label = 0;
  // UDP
  uint16_t udp_src_port = 0xc000;
  // BTH
  uint16_t pkey = kDefaultPkey;
  uint32_t dest_qp = 0;
};

// What each packet sets: ECN, the BTH's opcode, flags and PSN, and the fields of
// whichever extension headers the opcode has.
struct TransportFields {
  uint8_t ecn = kEcnEct0;
  Opcode opcode = Opcode::kSendOnly;
  bool se = false;
  bool mig_req = false;
  bool fecn = false;
  bool becn = false;
  bool ack_req = false;
  uint32_t psn = 0;
  // DETH (UD)
  uint32_t qkey = 0;
  uint32_t src_qp = 0;
  // RETH (and the va/rkey of AtomicETH)
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_len = 0;
  // AETH
  uint8_t syndrome = aeth::ack();
  uint32_t msn = 0;
  // ImmDt
  uint32_t imm = 0;
  // AtomicETH, AtomicAckETH
  uint64_t swap_add = 0;
  uint64_t compare = 0;
  uint64_t orig = 0;
};

// Everything needed to write a frame's headers.
struct FrameFields : PathFields, TransportFields {};

// A flow's headers prepared once; each packet copies them and patches lengths,
// the IPv4 checksum, the BTH and the extension headers. build_headers() is this
// with a template made for one packet.
class HeaderTemplate {
 public:
  static constexpr uint32_t kMaxFixedBytes = sizeof(EthHdr) + sizeof(VlanTag) + sizeof(Ipv6Hdr) + sizeof(UdpHdr) +
                                             sizeof(Bth);

  void init(const PathFields& p);
  // Bytes write() produces for an opcode: Ethernet through extension headers.
  uint32_t header_bytes(Opcode op) const { return bth_offset_ + sizeof(Bth) + opcode_info(op).ext_bytes; }
  // Writes the headers of one packet with `payload_len` bytes of payload into
  // `out`, which has room for header_bytes(t.opcode). Returns that many.
  uint32_t write(const TransportFields& t, uint32_t payload_len, uint8_t* out) const;
  // Where the UDP header starts in what write() produces (its source port: the
  // first two bytes, big-endian).
  uint32_t udp_offset() const { return l3_offset_ + (ipv4_ ? sizeof(Ipv4Hdr) : sizeof(Ipv6Hdr)); }

 private:
  uint8_t bytes_[kMaxFixedBytes] = {};
  uint8_t l3_offset_ = 0;
  uint8_t bth_offset_ = 0;
  bool ipv4_ = true;
  uint32_t ip_sum_ = 0;  // IPv4 header words, without TOS, total length and checksum
};

// Bytes of headers (Ethernet through extension headers) build_headers() writes.
uint32_t header_bytes(const FrameFields& f);
constexpr uint32_t pad_bytes(uint32_t payload_len) { return (4 - (payload_len & 3)) & 3; }

// Writes Ethernet through extension headers for a packet with `payload_len` bytes
// of payload; the IP and UDP lengths also count pad and ICRC. Returns the number of
// bytes written, or 0 when `cap` is too small.
uint32_t build_headers(const FrameFields& f, uint32_t payload_len, uint8_t* buf, uint32_t cap);

// Writes pad and ICRC (pad_bytes(payload) + 4 bytes) at `tail`, for the headers
// build_headers() wrote at `hdr` and payload that may lie anywhere.
void finish_frame(const uint8_t* hdr, uint32_t hdr_len, std::span<const Segment> payload, uint8_t* tail);

// Copies the segments one after another to dst (a segment with data ==
// nullptr as zeros: phantom memory); returns the end of what was written.
uint8_t* gather_segments(std::span<const Segment> segments, uint8_t* dst);

// finish_frame() for a host that copies the payload into its frame: the segments
// are copied one after another to `dst` and summed as they are copied, one pass
// over the bytes (crc32_copy). A segment with data == nullptr is written as zeros.
void finish_frame_copy(const uint8_t* hdr, uint32_t hdr_len, std::span<const Segment> payload, uint8_t* dst,
                       uint8_t* tail);

// A whole frame in one buffer: headers, payload copied from the segments, pad, ICRC.
// Returns the frame length, or -ENOSPC when `cap` is too small.
int build_frame(const FrameFields& f, std::span<const Segment> payload, uint8_t* buf, uint32_t cap);

// IPv4 header checksum (RFC 1071) of `len` bytes with the checksum field as zero.
uint16_t ipv4_checksum(const Ipv4Hdr& ip, uint32_t len = sizeof(Ipv4Hdr));

// Switch side of the telemetry trailer: appends one hop record to a frame whose
// trailer asks for collection. Returns the new frame length; the old one when the
// frame has no COLLECT trailer (or is not IP); sets OVERFLOW instead when the
// trailer is full or `cap` leaves no room.
uint32_t telemetry_push(uint8_t* frame, uint32_t len, uint32_t cap, uint32_t rate_mbps, uint32_t ts_ns,
                        uint32_t tx_bytes, uint32_t qlen_bytes);

// The BTH destination QP of a RoCEv2 frame (UDP port 4791), or -1 when the frame
// is not one; a cheap look for steering, no validation beyond bounds.
int32_t peek_dest_qp(const uint8_t* frame, uint32_t len);

// The Ethernet header and an optional 802.1Q tag: the one L2 walk of the tree
// (parser, switch classifier, ns-3 frames). False when `len` ends inside them.
struct EthernetView {
  uint16_t ethertype = 0;  // after the tag, if any
  uint16_t l3_offset = 0;
  bool vlan = false;
  uint8_t pcp = 0;
  uint16_t vid = 0;
};
bool parse_ethernet(const uint8_t* frame, uint32_t len, EthernetView* out);

// Offset of the first byte after the IP datagram, as its IP header says; 0 if
// the frame is not IPv4/IPv6, if the `len` bytes at hand (the headers at least)
// end before the IP length field, or if the datagram would end past
// `frame_len` (the whole frame's length). A cheap walk, no other validation.
uint32_t datagram_end(const uint8_t* frame, uint32_t len, uint32_t frame_len);
inline uint32_t datagram_end(const uint8_t* frame, uint32_t len) { return datagram_end(frame, len, len); }

}  // namespace tita::wire
