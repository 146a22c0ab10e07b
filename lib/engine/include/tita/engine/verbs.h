// The verbs-shaped types of tita's RC engine. Names follow libibverbs (ibv_send_wr,
// ibv_wc, IBV_WC_*, IBV_QPS_*, IBV_QP_* masks) so an rdma-core user reads them at
// once, and every enumerator has the numeric value of its IBV_* twin, so the verbs
// layer (lib/verbs) converts by a cast that its static_asserts check. The engine
// that takes them is in engine.h.
#pragma once

#include "tita/wire/cm.h"

#include <cstdint>
#include <string_view>

#include "tita/wire/frame.h"

namespace tita::engine {

// Memory region access (IBV_ACCESS_*). Local read is always allowed.
enum Access : uint32_t {
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,
  kAccessRemoteAtomic = 1u << 3,
};

// Scatter/gather element (ibv_sge): addr is a virtual address inside the MR of lkey.
struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

// Send work request opcodes (IBV_WR_*).
enum class WrOpcode : uint8_t {
  kRdmaWrite = 0,
  kRdmaWriteWithImm = 1,
  kSend = 2,
  kSendWithImm = 3,
  kRdmaRead = 4,
  kAtomicCmpAndSwp = 5,   // 8 bytes at remote_addr: if == compare_add, becomes swap
  kAtomicFetchAndAdd = 6, // 8 bytes at remote_addr += compare_add
};

// What a work request's opcode is, in one place for every layer.
constexpr bool is_atomic(WrOpcode op) { return op == WrOpcode::kAtomicCmpAndSwp || op == WrOpcode::kAtomicFetchAndAdd; }
constexpr bool is_send(WrOpcode op) { return op == WrOpcode::kSend || op == WrOpcode::kSendWithImm; }
constexpr bool has_imm(WrOpcode op) { return op == WrOpcode::kSendWithImm || op == WrOpcode::kRdmaWriteWithImm; }

// Send flags (IBV_SEND_*).
enum SendFlags : uint32_t {
  kSendFence = 1u << 0,      // start only after every earlier READ and atomic completed
  kSendSignaled = 1u << 1,   // generate a completion on success
  kSendSolicited = 1u << 2,  // set SE in the last packet
  kSendInline = 1u << 3,     // copy the data at post time (lkeys ignored); SEND and WRITE only
};

// ibv_send_wr: a linked list, posted in order.
struct SendWr {
  uint64_t wr_id = 0;
  SendWr* next = nullptr;
  const Sge* sg_list = nullptr;
  int num_sge = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t send_flags = kSendSignaled;
  uint32_t imm_data = 0;  // host order
  struct {
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
  } rdma;
  // Atomics: one SGE of exactly 8 bytes receives the original remote value.
  struct {
    uint64_t remote_addr = 0;  // 8-byte aligned, or the responder NAKs it
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    uint32_t rkey = 0;
  } atomic;
  // UD QPs (ibv_send_wr.wr.ud): the address handle (Engine::create_ah), the
  // destination QP and its Q_Key. A Q_Key with the high bit set stands for the
  // sending QP's own Q_Key (IBA 10.2.5; GSI and the CM use it).
  struct {
    uint32_t ah = 0;
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;
  } ud;
};

// ibv_recv_wr.
struct RecvWr {
  uint64_t wr_id = 0;
  RecvWr* next = nullptr;
  const Sge* sg_list = nullptr;
  int num_sge = 0;
};

// Completion statuses (IBV_WC_*).
enum class WcStatus : uint8_t {
  kSuccess = 0,
  kLocLenErr = 1,        // receive buffer too small for the incoming SEND
  kLocQpOpErr = 2,
  kLocProtErr = 4,       // an SGE outside its MR, or a bad lkey
  kWrFlushErr = 5,       // the QP went to error before this WR completed
  kBadRespErr = 7,
  kLocAccessErr = 8,     // a READ response or SEND targets memory without local write access
  kRemInvReqErr = 9,     // the responder NAKed the request as invalid (e.g. too long, misaligned atomic)
  kRemAccessErr = 10,    // the responder NAKed: bad rkey, out of bounds, or no permission
  kRemOpErr = 11,        // the responder could not execute it (e.g. a bad receive buffer)
  kRetryExcErr = 12,     // no ACK after retry_cnt retransmissions, or the peer's MAC never resolved
  kRnrRetryExcErr = 13,  // still no receive posted after rnr_retry RNR NAKs
};
std::string_view to_string(WcStatus s);  // "IBV_WC_SUCCESS", ...

// Completion opcodes (IBV_WC_*).
enum class WcOpcode : uint8_t {
  kSend = 0,
  kRdmaWrite = 1,
  kRdmaRead = 2,
  kCompSwap = 3,
  kFetchAdd = 4,
  kRecv = 128,
  kRecvRdmaWithImm = 129,
};
std::string_view to_string(WcOpcode o);

// ibv_wc.
struct WorkCompletion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  bool with_imm = false;
  uint32_t byte_len = 0;  // receive completions: bytes received; READ and atomics: bytes placed
  uint32_t imm_data = 0;  // host order, when with_imm
  uint32_t qp_num = 0;
  // UD receives: the sender's QP (from its DETH), and that the first
  // kGrhBytes of the buffer hold the GRH (IBV_WC_GRH; always, on RoCEv2).
  uint32_t src_qp = 0;
  bool grh = false;
  uint8_t sl = 0;  // service level: RoCE has none on the wire (0), as rxe reports
};

// Bytes a UD receive buffer gives the GRH ahead of the payload (IBA 11.4.1.1).
// On RoCEv2 the network header sits there: an IPv6 header fills all 40, an
// IPv4 header the last 20 after 20 zero bytes (Linux's rdma_network_hdr).
inline constexpr uint32_t kGrhBytes = 40;

// Transport service of a QP (IBV_QPT_*).
enum class QpType : uint8_t {
  kRc = 2,  // reliable connection
  kUd = 4,  // unreliable datagram: SEND only, one packet per message, Q_Key, address handles
};

// QP states (IBV_QPS_*). SQD and SQE exist in the transition table but tita never
// enters them (modify_qp refuses with -EOPNOTSUPP).
enum class QpState : uint8_t { kReset = 0, kInit = 1, kRtr = 2, kRts = 3, kSqd = 4, kSqe = 5, kError = 6 };
inline constexpr int kQpStates = 7;
std::string_view to_string(QpState s);

// How the requester recovers lost packets.
enum class Recovery : uint8_t {
  kGoBackN,          // as hardware RoCE: the responder NAKs the first gap, drops the rest
  kSelectiveRepeat,  // IRN-style: the responder keeps out-of-order packets and names
                     // each in a SACK; the sender resends only what is missing
};

// Address vector (ibv_ah_attr with a RoCEv2 GID): where the peer is.
struct AhAttr {
  wire::Gid dgid;
  // The next hop's MAC. All zero: resolved by ARP from dgid's IPv4 address (the
  // engine's neighbour table), as a kernel resolves a RoCE AV.
  uint8_t dmac[6] = {};
  uint8_t traffic_class = 0;  // DSCP << 2; the ECN bits are set by the engine (ECT(0))
  uint8_t hop_limit = 64;
  uint16_t udp_sport = 0;     // 0: derived from the QP numbers, in 0xC000-0xFFFF as Linux does
  bool vlan = false;          // tag frames with 802.1Q, for PFC priorities
  uint8_t pcp = 0;
  uint16_t vid = 0;
};

// ibv_qp_attr, with tita's recovery mode.
struct QpAttr {
  QpState qp_state = QpState::kReset;
  QpState cur_qp_state = QpState::kReset;  // kQpCurState: must equal the QP's state
  uint32_t path_mtu = 1024;  // 256, 512, 1024, 2048 or 4096 bytes
  // Payload of every packet but a message's last; 0: path_mtu. Not an IBA
  // attribute (the verbs layer never sets it): for runs that compare with
  // simulators whose packets carry 1000 B. A multiple of 4, 64 to path_mtu;
  // applied with kQpPathMtu.
  uint32_t payload_bytes = 0;
  // The payload of a full packet: payload_bytes, or the path MTU.
  constexpr uint32_t full_payload_bytes() const { return payload_bytes != 0 ? payload_bytes : path_mtu; }
  uint32_t dest_qp_num = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  AhAttr ah_attr;
  uint32_t qp_access_flags = 0;  // remote access the responder grants (Access bits)
  uint16_t pkey_index = 0;       // the P_Key table holds one entry, the default P_Key
  uint8_t port_num = 1;          // one port
  uint8_t timeout = 14;          // local ACK timeout 4.096 us * 2^timeout; 0 = none
  uint8_t retry_cnt = 7;         // retransmissions without progress before kRetryExcErr
  uint8_t rnr_retry = 7;         // RNR NAK retries; 7 = unlimited
  uint8_t min_rnr_timer = 1;     // RNR NAK timer code this responder sends (1 = 10 us)
  uint8_t max_rd_atomic = 16;    // READs and atomics this requester keeps outstanding
  uint8_t max_dest_rd_atomic = 16;  // READs and atomics this responder accepts outstanding
  Recovery recovery = Recovery::kGoBackN;
  uint32_t qkey = 0;  // UD: receives carrying another Q_Key are dropped (and counted)
  // tita's own, applied with kQpRecovery: the peer is known to be a tita
  // engine (told out of band, as RDMA CM private data would say). Selective
  // repeat and spraying then hold from the first packet; otherwise they start
  // once the peer's first frame shows its telemetry trailer, and a new
  // connection's first round trip goes on one path with IBA's recovery.
  bool peer_tita = false;
};

// Packets of a message of `length` bytes whose full packets carry
// `payload_bytes` (a zero-length message takes one).
constexpr uint32_t packets_for(uint64_t length, uint32_t payload_bytes) {
  return length == 0 ? 1 : static_cast<uint32_t>((length + payload_bytes - 1) / payload_bytes);
}

// Which QpAttr fields modify_qp applies: the IBV_QP_* bits, same values.
enum QpAttrMask : uint32_t {
  kQpState = 1u << 0,
  kQpCurState = 1u << 1,
  kQpEnSqdAsyncNotify = 1u << 2,
  kQpAccessFlags = 1u << 3,
  kQpPkeyIndex = 1u << 4,
  kQpPort = 1u << 5,
  kQpQkey = 1u << 6,
  kQpAv = 1u << 7,
  kQpPathMtu = 1u << 8,
  kQpTimeout = 1u << 9,
  kQpRetryCnt = 1u << 10,
  kQpRnrRetry = 1u << 11,
  kQpRqPsn = 1u << 12,
  kQpMaxQpRdAtomic = 1u << 13,
  kQpAltPath = 1u << 14,
  kQpMinRnrTimer = 1u << 15,
  kQpSqPsn = 1u << 16,
  kQpMaxDestRdAtomic = 1u << 17,
  kQpPathMigState = 1u << 18,
  kQpCap = 1u << 19,
  kQpDestQpn = 1u << 20,
  kQpRateLimit = 1u << 25,
  kQpRecovery = 1u << 30,  // tita's own: QpAttr::recovery and peer_tita (RESET->INIT, INIT->INIT, INIT->RTR)
};

// What each RC transition requires, as the IBA (11.2.4.2) and Linux's
// qp_state_table say; modify_qp checks every call against the whole table
// (required and optional attributes of each transition, qp.cc).
inline constexpr uint32_t kQpToInitRequired = kQpPkeyIndex | kQpPort | kQpAccessFlags;
inline constexpr uint32_t kQpToRtrRequired =
    kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer;
inline constexpr uint32_t kQpToRtsRequired = kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic;
// The same for UD QPs: no peer, no path; a Q_Key instead of access flags.
inline constexpr uint32_t kUdToInitRequired = kQpPkeyIndex | kQpPort | kQpQkey;
inline constexpr uint32_t kUdToRtrRequired = 0;
inline constexpr uint32_t kUdToRtsRequired = kQpSqPsn;

struct QpInitAttr {
  QpType qp_type = QpType::kRc;
  uint32_t send_cq = 0;  // CQ handles from create_cq
  uint32_t recv_cq = 0;
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
  uint32_t max_sge = 4;          // at most kMaxSge
  uint32_t max_inline_data = 0;  // at most kMaxInlineData; create_qp rounds it up
  bool sq_sig_all = false;
  // A shared receive queue (a handle from create_srq, 0: none): the QP's
  // receives come from it, max_recv_wr is ignored (reported as 0) and
  // post_recv refuses.
  uint32_t srq = 0;
  // A UD QP only: the engine's General Services Interface, which answers to
  // QP number 1 (where Communication Management MADs go, Q_Key 0x80010000)
  // instead of a number of its own. One per engine.
  bool gsi = false;
};

// ibv_srq_attr: a shared receive queue's size and its limit. The limit armed
// (non-zero), a receive taken that leaves fewer than srq_limit WQEs raises
// kSrqLimitReached once and disarms it (srq_limit reads 0 again).
struct SrqAttr {
  uint32_t max_wr = 256;
  uint32_t max_sge = 4;  // at most kMaxSge
  uint32_t srq_limit = 0;
};
// Which SrqAttr fields modify_srq applies (IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT).
enum SrqAttrMask : uint32_t {
  kSrqMaxWr = 1u << 0,
  kSrqLimit = 1u << 1,
};

inline constexpr uint32_t kGsiQpn = wire::cm::kGsiQpn;  // QpInitAttr::gsi
inline constexpr uint32_t kMaxSge = 8;  // UCX's UD and RC transports ask for 6 send SGEs
inline constexpr uint32_t kMaxInlineData = 512;
inline constexpr uint32_t kMaxRdAtomic = 128;  // max_rd_atomic and max_dest_rd_atomic
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 31;

// The UDP source port a QP uses towards its peer unless its AV sets one: Linux's
// derivation (ib_verbs.h rdma_calc_flow_label folded by rdma_flow_label_to_udp_sport
// into 0xC000-0xFFFF), so ECMP spreads tita and kernel QPs alike. A receiver can
// compute the port its peer sends from, to steer by it.
constexpr uint16_t roce_udp_sport(uint32_t local_qpn, uint32_t remote_qpn) {
  const uint64_t v = uint64_t{local_qpn} * remote_qpn;
  const uint32_t fl = static_cast<uint32_t>((v ^ (v >> 20) ^ (v >> 40)) & 0xfffff);
  const uint32_t low = (fl & 0x3fff) ^ ((fl & 0xfc000) >> 14);
  return static_cast<uint16_t>(low | 0xc000);
}

}  // namespace tita::engine
