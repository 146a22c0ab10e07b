// tita's RC engine: a RoCEv2 reliable-connection transport that depends on
// nothing but a clock value, a PacketIo and the caller's polling.
//
//   Engine eng(config, &io);
//   uint32_t pd = eng.alloc_pd();
//   MrInfo mr;  eng.reg_mr(pd, buf, len, kAccessLocalWrite | kAccessRemoteWrite, &mr);
//   uint32_t cq;  eng.create_cq(1024, &cq);
//   uint32_t qpn; eng.create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &qpn);
//   eng.modify_qp(qpn, attr, kQpState | ..., &err);      // RESET -> INIT -> RTR -> RTS
//   eng.set_cc(qpn, "hpcc", {"eta=0.95"}, &err);
//   eng.post_send(qpn, &wr, &bad);
//   loop: eng.receive(now, frame, len) for each frame; eng.poll(now);
//         eng.poll_cq(cq, n, wc); sleep until eng.next_wakeup_ns()
//
// Handles are plain integers (QP numbers, CQ and PD indices, keys). Control
// functions return 0 or -errno (and a one-line message where they take `err`);
// errors on the wire reach the application as completion statuses.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tita/engine/host.h"
#include "tita/engine/verbs.h"
#include "tita/wire/frame.h"

namespace tita::engine {

struct EngineConfig {
  uint8_t mac[6] = {0x02, 0, 0, 0, 0, 1};
  wire::Gid gid = wire::Gid::from_ipv4(0x0a000001);
  uint64_t line_rate_bps = 100'000'000'000;  // this NIC port
  // Pace at the line rate even when congestion control allows it: for ports that
  // accept frames faster than any wire would carry them (vdevs, AF_XDP, tap).
  // Off, a QP at line rate skips pacing and the NIC serializes.
  bool pace_line_rate = false;
  // Sending time a QP may catch up when the host polls late (a process that
  // sleeps between polls): the pacer's clock trails now by at most this much.
  // 0: a late packet restarts the pacing clock (no bursts).
  uint64_t pacing_slack_ns = 0;
  uint64_t base_rtt_ns = 10'000;             // congestion control's starting estimate
  bool compute_icrc = true;                  // off: ICRC sent as 0 (simulation speed)
  bool verify_icrc = true;                   // off: received ICRCs not checked
  bool telemetry = true;       // COLLECT trailers on data; ECHO trailers on ACKs
  uint32_t ack_req_every = 1;  // AckReq on every Nth data packet (and every last one)
  uint32_t ack_unsolicited = 16;  // ACK after this many in-order packets without AckReq
  uint8_t initial_ttl = 64;    // also how receivers count the routers a packet crossed
  uint8_t cnp_dscp = 48;       // as ConnectX NICs send CNPs
  uint32_t max_qps = 65536;
  uint32_t first_qpn = 0x11;   // QPNs are first_qpn + index (QP 0 and 1 are special in IB)
  uint32_t control_ring = 4096;  // ACK/NAK/CNP frames waiting for tx space
  uint32_t ooo_slots = 8192;     // selective repeat: out-of-order frames kept, engine-wide
  uint32_t sr_window = 256;      // selective repeat: PSNs in flight per QP (power of two, <= 1024)
  uint64_t timer_slot_ns = 64;   // timing wheel resolution
  uint32_t timer_slots = 8192;   // timing wheel size (horizon = slots x resolution)
};

struct MrInfo {
  uint64_t addr = 0;  // the virtual address remote peers use (IOVA)
  uint64_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint32_t access = 0;
};

struct QpCounters {
  uint64_t tx_packets = 0;          // every frame sent for this QP
  uint64_t tx_data_packets = 0;     // requests and READ responses
  uint64_t tx_payload_bytes = 0;
  uint64_t rx_packets = 0;
  uint64_t rx_payload_bytes = 0;
  uint64_t retransmitted_packets = 0;
  uint64_t timeouts = 0;
  uint64_t acks_sent = 0;
  uint64_t acks_received = 0;
  uint64_t nak_seq_sent = 0;
  uint64_t nak_seq_received = 0;
  uint64_t rnr_nak_sent = 0;
  uint64_t rnr_nak_received = 0;
  uint64_t nak_access_sent = 0;      // remote access error
  uint64_t nak_access_received = 0;
  uint64_t nak_invalid_sent = 0;     // invalid request
  uint64_t nak_invalid_received = 0;
  uint64_t duplicates_received = 0;
  uint64_t out_of_order_received = 0;
  uint64_t ooo_buffered = 0;         // selective repeat: kept for later
  uint64_t ecn_ce_received = 0;
  uint64_t cnps_sent = 0;
  uint64_t cnps_received = 0;
  uint64_t int_records_received = 0;  // INT hop records echoed back to this sender
  uint64_t rtt_samples = 0;
  uint64_t last_rtt_ns = 0;
};

struct EngineCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_dropped = 0;  // sum of the reasons below
  std::array<uint64_t, static_cast<size_t>(wire::ParseError::kCount)> rx_parse_errors{};
  uint64_t rx_unknown_qp = 0;
  uint64_t rx_bad_pkey = 0;
  uint64_t rx_qp_not_ready = 0;  // for a QP in RESET/INIT/ERROR
  uint64_t tx_frames = 0;
  uint64_t control_ring_full = 0;  // ACK/NAK/CNP dropped: host out of tx space for long
  uint64_t ooo_pool_full = 0;      // out-of-order frame dropped: no slot
};

// A QP's transport and congestion state, for tools and traces.
struct QpInfo {
  QpState state = QpState::kReset;
  uint64_t rate_bps = 0;
  uint64_t cwnd_bytes = 0;     // UINT64_MAX: rate-based
  uint64_t inflight_bytes = 0;
  uint32_t snd_una = 0;
  uint32_t snd_nxt = 0;
  uint32_t epsn = 0;
  uint32_t send_queue_depth = 0;  // posted, not completed
  uint32_t recv_queue_depth = 0;
  std::string_view cc;
};

class Engine {
 public:
  Engine(const EngineConfig& config, PacketIo* io);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineConfig& config() const;

  // ---- resources (ibv_alloc_pd, ibv_reg_mr, ibv_create_cq, ibv_create_qp ...)
  uint32_t alloc_pd();
  // Registers [addr, addr+length) for local access and the remote access in
  // `access`. -EINVAL: unknown PD, zero length, or unknown access bits.
  int reg_mr(uint32_t pd, void* addr, uint64_t length, uint32_t access, MrInfo* out);
  // A region without memory behind it, for simulation: iova is the address peers
  // use; writes into it are checked and counted but store nothing, and data sent
  // from it are virtual zeros.
  int reg_phantom_mr(uint32_t pd, uint64_t iova, uint64_t length, uint32_t access, MrInfo* out);
  int dereg_mr(uint32_t lkey);  // -ENOENT
  int create_cq(uint32_t entries, uint32_t* cq);
  // -EINVAL: unknown PD or CQ, queue sizes 0, max_sge above kMaxSge; -ENOSPC: max_qps reached.
  int create_qp(uint32_t pd, const QpInitAttr& attr, uint32_t* qp_num);
  int destroy_qp(uint32_t qp_num);
  // State transitions as ibv_modify_qp: RESET->INIT (access flags), INIT->RTR (path MTU,
  // AV, dest QPN, RQ PSN, max_dest_rd_atomic, min_rnr_timer), RTR->RTS (SQ PSN, timeout,
  // retry_cnt, rnr_retry, max_rd_atomic), any->ERROR, any->RESET. -EINVAL with a
  // message naming the missing or bad attribute.
  int modify_qp(uint32_t qp_num, const QpAttr& attr, uint32_t mask, std::string* err);
  int query_qp(uint32_t qp_num, QpAttr* attr) const;
  // Congestion control for the QP's sends, by name and "name=value" parameters (cc/).
  // Allowed in any state; resets the algorithm's state. -ENOENT / -EINVAL with a message.
  int set_cc(uint32_t qp_num, std::string_view algorithm, std::span<const std::string> params, std::string* err);

  // ---- data path (ibv_post_send, ibv_post_recv, ibv_poll_cq)
  // -EINVAL: bad QP, num_sge, or a READ/SEND longer than 2^31; -ENOMEM: queue full;
  // -EOPNOTSUPP: atomics. *bad is the first WR not posted. WRs posted to a QP in
  // ERROR complete with kWrFlushErr. SGEs are checked against their MRs when
  // the WR starts: a bad one completes it with kLocProtErr.
  int post_send(uint32_t qp_num, const SendWr* wr, const SendWr** bad);
  int post_recv(uint32_t qp_num, const RecvWr* wr, const RecvWr** bad);
  int poll_cq(uint32_t cq, int max_entries, WorkCompletion* wc);

  // ---- host side
  // One received frame (Ethernet onwards, no FCS). Bad frames are counted and dropped.
  void receive(uint64_t now_ns, const uint8_t* frame, uint32_t len);
  // Runs expired timers and sends what pacing, windows and tx space allow.
  void poll(uint64_t now_ns);
  // The earliest time poll() has something to do; UINT64_MAX when idle.
  uint64_t next_wakeup_ns() const;

  const EngineCounters& counters() const;
  const QpCounters* qp_counters(uint32_t qp_num) const;
  // The numbers of the QPs that exist, in creation order.
  std::vector<uint32_t> qp_numbers() const;
  int qp_info(uint32_t qp_num, QpInfo* out) const;
  // Bytes of engine state per QP (fixed part, without its work queues).
  static size_t qp_state_bytes();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tita::engine
