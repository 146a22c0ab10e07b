// The verbs-shaped types of tita's RC engine. Names follow libibverbs (ibv_send_wr,
// ibv_wc, IBV_WC_*, IBV_QPS_*, IBV_QP_* masks) so an rdma-core user reads them at
// once; the engine that takes them is in engine.h.
#pragma once

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
  kRdmaWrite,
  kRdmaWriteWithImm,
  kSend,
  kSendWithImm,
  kRdmaRead,
  kAtomicCmpAndSwp,    // rejected: post_send returns -EOPNOTSUPP
  kAtomicFetchAndAdd,  // rejected: post_send returns -EOPNOTSUPP
};

// Send flags (IBV_SEND_*).
enum SendFlags : uint32_t {
  kSendSignaled = 1u << 0,   // generate a completion on success
  kSendSolicited = 1u << 1,  // set SE in the last packet
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
  kSuccess,
  kLocLenErr,        // receive buffer too small for the incoming SEND
  kLocQpOpErr,
  kLocProtErr,       // an SGE outside its MR, or a bad lkey
  kWrFlushErr,       // the QP went to error before this WR completed
  kBadRespErr,
  kLocAccessErr,     // a READ response or SEND targets memory without local write access
  kRemInvReqErr,     // the responder NAKed the request as invalid (e.g. too long)
  kRemAccessErr,     // the responder NAKed: bad rkey, out of bounds, or no permission
  kRemOpErr,
  kRetryExcErr,      // no ACK after retry_cnt retransmissions
  kRnrRetryExcErr,   // still no receive posted after rnr_retry RNR NAKs
};
std::string_view to_string(WcStatus s);  // "IBV_WC_SUCCESS", ...

// Completion opcodes (IBV_WC_*).
enum class WcOpcode : uint8_t { kSend, kRdmaWrite, kRdmaRead, kCompSwap, kFetchAdd, kRecv, kRecvRdmaWithImm };
std::string_view to_string(WcOpcode o);

// ibv_wc.
struct WorkCompletion {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  bool with_imm = false;
  uint32_t byte_len = 0;  // receive completions: bytes received
  uint32_t imm_data = 0;  // host order, when with_imm
  uint32_t qp_num = 0;
};

// QP states (IBV_QPS_*).
enum class QpState : uint8_t { kReset, kInit, kRtr, kRts, kError };
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
  uint32_t path_mtu = 1024;  // 256, 512, 1024, 2048 or 4096 bytes
  uint32_t dest_qp_num = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  AhAttr ah_attr;
  uint32_t qp_access_flags = 0;  // remote access the responder grants (Access bits)
  uint8_t timeout = 14;          // local ACK timeout 4.096 us * 2^timeout; 0 = none
  uint8_t retry_cnt = 7;         // retransmissions without progress before kRetryExcErr
  uint8_t rnr_retry = 7;         // RNR NAK retries; 7 = unlimited
  uint8_t min_rnr_timer = 1;     // RNR NAK timer code this responder sends (1 = 10 us)
  uint8_t max_rd_atomic = 16;    // READs this requester keeps outstanding
  uint8_t max_dest_rd_atomic = 16;  // READs this responder accepts outstanding
  Recovery recovery = Recovery::kGoBackN;
};

// Which QpAttr fields modify_qp applies (IBV_QP_*).
enum QpAttrMask : uint32_t {
  kQpState = 1u << 0,
  kQpAccessFlags = 1u << 1,
  kQpPathMtu = 1u << 2,
  kQpAv = 1u << 3,
  kQpDestQpn = 1u << 4,
  kQpRqPsn = 1u << 5,
  kQpMaxDestRdAtomic = 1u << 6,
  kQpMinRnrTimer = 1u << 7,
  kQpSqPsn = 1u << 8,
  kQpTimeout = 1u << 9,
  kQpRetryCnt = 1u << 10,
  kQpRnrRetry = 1u << 11,
  kQpMaxQpRdAtomic = 1u << 12,
  kQpRecovery = 1u << 13,
};

struct QpInitAttr {
  uint32_t send_cq = 0;  // CQ handles from create_cq
  uint32_t recv_cq = 0;
  uint32_t max_send_wr = 256;
  uint32_t max_recv_wr = 256;
  uint32_t max_sge = 4;  // at most kMaxSge
  bool sq_sig_all = false;
};

inline constexpr uint32_t kMaxSge = 4;

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
