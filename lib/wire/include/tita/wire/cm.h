// InfiniBand Communication Management (IBA vol. 1, chapter 12) as RoCE NICs
// and Linux's CM speak it: 256-byte MADs on QP1 (the GSI, Q_Key 0x80010000),
// each a 24-byte common MAD header (management class 0x07, class version 2,
// method Send) and a 232-byte message whose attribute ID names it: REQ, MRA,
// REJ, REP, RTU, DREQ, DREP. Fields sit at the byte and bit positions of the
// IBA's tables 106-113; a field narrower than its bytes starts at the most
// significant bit. Private data follows the fixed fields. SIDR_REQ and
// SIDR_REP (Service ID Resolution, IBA 12.11) carry no connection: a UD
// requester asks which QP and Q_Key serve a service ID, the responder says.
//
// rdma_cm's own layer (librdmacm and Linux's rdma_cm) rides in private data:
// a connection on an IP port space is the service ID (port space << 16) |
// port, and a REQ's private data begins with a 36-byte header carrying the
// IP addresses and the source port (CmaHeader); the application's private
// data follows it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tita/wire/frame.h"

namespace tita::wire::cm {

inline constexpr size_t kMadBytes = 256;
inline constexpr size_t kMadHeaderBytes = 24;
inline constexpr uint8_t kBaseVersion = 1;
inline constexpr uint8_t kMgmtClassCm = 0x07;
inline constexpr uint8_t kClassVersion = 2;
inline constexpr uint8_t kMethodSend = 0x03;
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;

enum class Attr : uint16_t {
  kClassPortInfo = 0x0001,
  kReq = 0x0010,
  kMra = 0x0011,
  kRej = 0x0012,
  kRep = 0x0013,
  kRtu = 0x0014,
  kDreq = 0x0015,
  kDrep = 0x0016,
  kSidrReq = 0x0017,
  kSidrRep = 0x0018,
  kLap = 0x0019,
  kApr = 0x001a,
};

// What each message leaves for private data (IBA table 104's sizes).
inline constexpr size_t kReqPrivate = 92;
inline constexpr size_t kMraPrivate = 222;
inline constexpr size_t kRejPrivate = 148;
inline constexpr size_t kRepPrivate = 196;
inline constexpr size_t kRtuPrivate = 224;
inline constexpr size_t kDreqPrivate = 220;
inline constexpr size_t kDrepPrivate = 224;
inline constexpr size_t kSidrReqPrivate = 216;
inline constexpr size_t kSidrRepPrivate = 136;

// REJ reasons (IBA table 109) that tita sends or reads.
enum class RejReason : uint16_t {
  kTimeout = 1,
  kInvalidServiceId = 8,
  kStaleConnection = 10,
  kConsumerDefined = 28,
};

// SIDR_REP status (IBA 12.11.2).
enum class SidrStatus : uint8_t {
  kSuccess = 0,
  kUnsupported = 1,  // no such service ID
  kReject = 2,
  kNoQp = 3,
  kRedirect = 4,
  kUnsupportedVersion = 5,
};

// MRA / REJ: which message a reply is about.
enum class Which : uint8_t { kReq = 0, kRep = 1, kOther = 2 };

struct MadHeader {
  uint8_t base_version = kBaseVersion;
  uint8_t mgmt_class = kMgmtClassCm;
  uint8_t class_version = kClassVersion;
  uint8_t method = kMethodSend;
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;
  Attr attr = Attr::kReq;
  uint32_t attr_mod = 0;
};

struct Req {
  uint32_t local_comm_id = 0;
  uint64_t service_id = 0;
  uint64_t local_ca_guid = 0;  // host order
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t remote_cm_response_timeout = 0;  // 4.096 us * 2^t
  uint8_t transport_service = 0;           // 0: RC, 1: UC, 3: XRC (2 is RD)
  bool end_to_end_flow_control = false;
  uint32_t starting_psn = 0;
  uint8_t local_cm_response_timeout = 0;
  uint8_t retry_count = 0;
  uint16_t pkey = 0xffff;
  uint8_t path_mtu = 0;  // IBV_MTU_* (1: 256 ... 5: 4096)
  uint8_t rnr_retry_count = 0;
  uint8_t max_cm_retries = 0;
  bool srq = false;
  uint16_t primary_local_lid = 0;
  uint16_t primary_remote_lid = 0;
  Gid primary_local_gid;   // the requester's
  Gid primary_remote_gid;  // the responder's
  uint32_t flow_label = 0;
  uint8_t packet_rate = 0;
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 0;
  uint8_t sl = 0;
  bool subnet_local = false;
  uint8_t local_ack_timeout = 0;
  uint8_t private_data[kReqPrivate] = {};
};

struct Rep {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t target_ack_delay = 0;
  uint8_t failover_accepted = 0;
  bool end_to_end_flow_control = false;
  uint8_t rnr_retry_count = 0;
  bool srq = false;
  uint64_t local_ca_guid = 0;
  uint8_t private_data[kRepPrivate] = {};
};

struct Rej {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;  // 0 when rejecting a REQ whose sender we do not know
  Which rejected = Which::kReq;
  uint8_t ari_length = 0;
  uint16_t reason = 0;
  uint8_t ari[72] = {};
  uint8_t private_data[kRejPrivate] = {};
};

struct Mra {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  Which mraed = Which::kReq;
  uint8_t service_timeout = 0;
};

// RTU, DREQ and DREP: the two communication IDs (DREQ adds the QP it ends).
struct Short {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t remote_qpn = 0;  // DREQ only
};

struct SidrReq {
  uint32_t request_id = 0;
  uint16_t pkey = 0xffff;
  uint64_t service_id = 0;
  uint8_t private_data[kSidrReqPrivate] = {};
};

struct SidrRep {
  uint32_t request_id = 0;
  SidrStatus status = SidrStatus::kSuccess;
  uint8_t info_length = 0;
  uint32_t qpn = 0;
  uint64_t service_id = 0;
  uint32_t qkey = 0;
  uint8_t info[72] = {};
  uint8_t private_data[kSidrRepPrivate] = {};
};

// Reading: the header of a MAD, false (and nothing read) when it is shorter
// than a MAD or is not a CM MAD of class version 2.
bool parse_header(const uint8_t* mad, size_t len, MadHeader* h);
void parse(const uint8_t* mad, Req* m);
void parse(const uint8_t* mad, Rep* m);
void parse(const uint8_t* mad, Rej* m);
void parse(const uint8_t* mad, Mra* m);
void parse(const uint8_t* mad, Short* m);  // RTU, DREQ, DREP
void parse(const uint8_t* mad, SidrReq* m);
void parse(const uint8_t* mad, SidrRep* m);

// Writing: a whole MAD (kMadBytes, zeros where a field is absent) with the
// given transaction ID; Short needs the attribute it is (RTU, DREQ or DREP)
// and private data at most that message's room.
void build(const Req& m, uint64_t tid, uint8_t* mad);
void build(const Rep& m, uint64_t tid, uint8_t* mad);
void build(const Rej& m, uint64_t tid, uint8_t* mad);
void build(const Mra& m, uint64_t tid, uint8_t* mad);
void build(const SidrReq& m, uint64_t tid, uint8_t* mad);
void build(const SidrRep& m, uint64_t tid, uint8_t* mad);
void build(Attr attr, const Short& m, uint64_t tid, uint8_t* mad, const uint8_t* priv = nullptr, size_t priv_len = 0);
// A message's private data inside a MAD, and its room.
const uint8_t* private_data(Attr attr, const uint8_t* mad, size_t* len);

// ---------------------------------------------------------------- rdma_cm's layer

// rdma_cm's port spaces (RDMA_PS_*) and service IDs.
inline constexpr uint16_t kPsTcp = 0x0106;
inline constexpr uint16_t kPsUdp = 0x0111;
inline constexpr uint16_t kPsIb = 0x013f;
inline constexpr uint16_t kPsIpoib = 0x0002;
// The Q_Key of every UD QP on the UDP port space (RDMA_UDP_QKEY).
inline constexpr uint32_t kUdpQkey = 0x01234567;
constexpr uint64_t service_id(uint16_t ps, uint16_t port) { return (uint64_t{ps} << 16) | port; }
constexpr uint16_t service_port(uint64_t sid) { return static_cast<uint16_t>(sid & 0xffff); }
constexpr uint16_t service_ps(uint64_t sid) { return static_cast<uint16_t>((sid >> 16) & 0xffff); }

// The header rdma_cm puts first in a REQ's (and a SIDR_REQ's) private data: version 0, the IP
// version in the high nibble, the requester's port, then both addresses as
// 16 bytes each (an IPv4 address in the last four).
inline constexpr size_t kCmaHeaderBytes = 36;
struct CmaHeader {
  uint8_t ip_version = 4;
  uint16_t src_port = 0;
  Gid src;  // IPv4 as ::ffff:a.b.c.d
  Gid dst;
};
// False when the header is not version 0 with IPv4 or IPv6.
bool parse_cma_header(const uint8_t* p, CmaHeader* h);
void build_cma_header(const CmaHeader& h, uint8_t* p);

}  // namespace tita::wire::cm
