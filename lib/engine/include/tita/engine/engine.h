// tita's RC engine: a RoCEv2 reliable-connection transport that depends on
// nothing but a clock value, a PacketIo and the caller's polling.
//
//   Engine eng(config, &io);
//   uint32_t pd = eng.alloc_pd();
//   MrInfo mr;  eng.reg_mr(pd, buf, len, kAccessLocalWrite | kAccessRemoteWrite, &mr);
//   uint32_t cq;  eng.create_cq(1024, &cq);
//   uint32_t qpn; eng.create_qp(pd, {.send_cq = cq, .recv_cq = cq}, &qpn);
//   attr.dest_qp_num = peer_qpn; attr.rq_psn = peer_psn; attr.ah_attr = ...;
//   connect_rc(eng, qpn, attr, &err);  // RESET -> INIT -> RTR -> RTS (modify_qp)
//   eng.set_cc(qpn, "hpcc", {"eta=0.95"}, &err);
//   eng.post_send(qpn, &wr, &bad);
//   loop: eng.receive(now, frame, len) for each frame; eng.poll(now);
//         eng.poll_cq(cq, n, wc); sleep until eng.next_wakeup_ns()
//
// Handles are plain integers (QP numbers, CQ and PD indices, keys). Control
// functions return 0 or -errno (and a one-line message where they take `err`);
// errors on the wire reach the application as completion statuses.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tita/engine/host.h"
#include "tita/engine/types.h"
#include "tita/engine/verbs.h"

namespace tita::engine {

class Engine {
 public:
  Engine(const EngineConfig& config, PacketIo* io);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const EngineConfig& config() const;

  // ---- resources (ibv_alloc_pd, ibv_reg_mr, ibv_create_cq, ibv_create_qp ...)
  uint32_t alloc_pd();
  // -EINVAL: no such PD; -EBUSY: MRs, QPs or address handles still use it.
  int dealloc_pd(uint32_t pd);
  // Registers [addr, addr+length) for local access and the remote access in
  // `access`, addressed by peers at `iova` (ibv_reg_mr_iova2; the first form:
  // iova = addr). -EINVAL: unknown PD, zero length, unknown access bits, remote
  // write or atomic access without local write, or iova + length overflowing.
  int reg_mr(uint32_t pd, void* addr, uint64_t length, uint32_t access, MrInfo* out);
  int reg_mr(uint32_t pd, void* addr, uint64_t length, uint64_t iova, uint32_t access, MrInfo* out);
  // A region without memory behind it, for simulation: iova is the address peers
  // use; writes into it are checked and counted but store nothing, and data sent
  // from it are virtual zeros.
  int reg_phantom_mr(uint32_t pd, uint64_t iova, uint64_t length, uint32_t access, MrInfo* out);
  int dereg_mr(uint32_t lkey);  // -ENOENT
  // -EINVAL: entries 0 or above 2^22.
  int create_cq(uint32_t entries, uint32_t* cq);
  // -EINVAL: no such CQ; -EBUSY: QPs still use it.
  int destroy_cq(uint32_t cq);
  // Grows or shrinks the ring, keeping what is queued. -EINVAL: no such CQ, a
  // size below the completions waiting in it, or above 2^22.
  int resize_cq(uint32_t cq, uint32_t entries);
  // Arms the CQ (ibv_req_notify_cq): the next completion, or with solicited_only
  // the next solicited receive or error completion, raises kCqNotify once.
  int req_notify_cq(uint32_t cq, bool solicited_only);
  // -EINVAL: unknown PD or CQ, queue sizes 0, max_sge above kMaxSge; -ENOSPC: max_qps reached.
  // *attr is updated to what the QP got (queue sizes and inline data rounded up).
  // -EINVAL: unknown PD or CQ, queue sizes 0 or above 2^20, max_sge above kMaxSge,
  // max_inline_data above kMaxInlineData; -ENOSPC: max_qps reached.
  int create_qp(uint32_t pd, QpInitAttr* attr, uint32_t* qp_num);
  int create_qp(uint32_t pd, const QpInitAttr& attr, uint32_t* qp_num);
  int destroy_qp(uint32_t qp_num);
  // Shared receive queues (ibv_create_srq ...; srq.cc). Handles from 1.
  // create: -EINVAL: unknown PD, max_wr 0 or above 2^20, max_sge 0 or above
  // kMaxSge, a limit above max_wr; *attr comes back with what it got.
  int create_srq(uint32_t pd, SrqAttr* attr, uint32_t* srq);
  // kSrqMaxWr grows or shrinks the ring keeping what is queued (-EINVAL below
  // the WQEs queued), kSrqLimit arms the limit (-EINVAL above max_wr).
  int modify_srq(uint32_t srq, const SrqAttr& attr, uint32_t mask, std::string* err);
  int query_srq(uint32_t srq, SrqAttr* attr) const;
  int destroy_srq(uint32_t srq);  // -EINVAL: no such SRQ; -EBUSY: QPs still use it
  // As post_recv. -EINVAL: no such SRQ, num_sge; -ENOMEM: full.
  int post_srq_recv(uint32_t srq, const RecvWr* wr, const RecvWr** bad);
  // State transitions as ibv_modify_qp, checked against the IBA transition table
  // (the attributes each transition requires, kQpTo*Required, and those it
  // allows): RESET->INIT, INIT->INIT, INIT->RTR, RTR->RTS, RTS->RTS, any->RESET,
  // any but RESET->ERROR. Values are checked too (path MTU against the port,
  // pkey_index 0, port 1, ranges). -EINVAL with a message naming the missing,
  // extra or bad attribute; -EOPNOTSUPP for SQD/SQE.
  int modify_qp(uint32_t qp_num, const QpAttr& attr, uint32_t mask, std::string* err);
  int query_qp(uint32_t qp_num, QpAttr* attr) const;
  // The QP's creation attributes as create_qp settled them.
  int query_qp_init(uint32_t qp_num, QpInitAttr* attr) const;
  // Congestion control for the QP's sends, by name and "name=value" parameters (cc/).
  // Allowed in any state; resets the algorithm's state. -ENOENT / -EINVAL with a message.
  int set_cc(uint32_t qp_num, std::string_view algorithm, std::span<const std::string> params, std::string* err);

  // Path control of one QP (new QPs take EngineConfig::path). Allowed in any
  // state; the dodge value starts as the one its address vector's UDP source
  // port (or DSCP) carries, so the first header is the usual one.
  // -EINVAL with a message: no such QP, or a mask that is not one run of bits
  // of its field.
  int set_path_config(uint32_t qp_num, const PathConfig& p, std::string* err);
  // Moves the QP to its next dodge value now, as detection would (reason
  // kManual). -EINVAL: no such QP, or path control is off for it.
  int repath(uint32_t qp_num);
  // Observer of every path change (fn nullptr: none).
  void set_path_hook(PathHook fn, void* ctx);
  // Spraying of one QP's requests over several entropy values (SprayConfig;
  // paths 0 turns it off). Allowed in any state. -EINVAL with a message: no
  // such QP, paths not 0 or 2..16, more paths than the mask holds, a mask that
  // is not one run of bits, or Hash Dodging on the UDP source port (both would
  // own its dodge bits). It sprays while the QP runs selective repeat with a
  // tita peer (QpAttr::recovery, known at RTR; the peer, at its first frame).
  int set_spray(uint32_t qp_num, const SprayConfig& s, std::string* err);
  int spray_info(uint32_t qp_num, SprayInfo* out) const;  // -EINVAL: no such QP or spraying off
  // Receiver of completion and asynchronous events (fn nullptr: none).
  void set_event_hook(EventHook fn, void* ctx);

  // ---- address handles (ibv_create_ah), for UD QPs (ud.cc)
  // Where UD messages go: a RoCEv2 address vector (the destination GID; its
  // MAC as given, ours for our own GID, else from the neighbour table or asked
  // for by ARP, as RC QPs resolve theirs). -EINVAL: unknown PD, zero GID, an
  // IPv6 GID without a MAC.
  int create_ah(uint32_t pd, const AhAttr& attr, uint32_t* ah);
  int destroy_ah(uint32_t ah);  // -EINVAL: no such AH
  // 0: ready (its MAC known; *out, if given, the AV with it); -EAGAIN: ARP
  // still asking (UD sends to it wait); -EHOSTUNREACH: nobody answered (sends
  // to it fail with kRetryExcErr); -EINVAL: no such AH.
  int query_ah(uint32_t ah, AhAttr* out = nullptr) const;
  // The largest UD message (the path MTU the port carries): post_send
  // refuses longer ones.
  uint32_t ud_max_message_bytes() const;

  // ---- neighbours (ARP)
  // A permanent entry (a static ARP entry); QPs waiting for the address proceed.
  // -EINVAL: a zero or multicast MAC.
  int add_neighbour(uint32_t ipv4, const uint8_t mac[6]);
  std::vector<Neighbour> neighbours() const;

  // ---- data path (ibv_post_send, ibv_post_recv, ibv_poll_cq)
  // UD QPs take SEND and SEND with immediate of at most
  // ud_max_message_bytes() to wr->ud's address handle (-EINVAL otherwise).
  // -EINVAL: bad QP or state, num_sge, a message longer than 2^31, an atomic
  // without exactly one 8-byte SGE, inline data on a READ or atomic or longer
  // than the QP's max_inline_data; -ENOMEM: queue full. *bad is the first WR not
  // posted. WRs posted to a QP in ERROR complete with kWrFlushErr. SGEs are
  // checked against their MRs when the WR starts: a bad one completes it with
  // kLocProtErr.
  int post_send(uint32_t qp_num, const SendWr* wr, const SendWr** bad);
  int post_recv(uint32_t qp_num, const RecvWr* wr, const RecvWr** bad);
  // Completions, oldest first. -EINVAL: no such CQ; -EIO: the CQ overflowed
  // (kCqError) and everything it held has been polled.
  int poll_cq(uint32_t cq, int max_entries, WorkCompletion* wc);

  // ---- host side
  // One received frame (Ethernet onwards, no FCS). Bad frames are counted and dropped.
  void receive(uint64_t now_ns, const uint8_t* frame, uint32_t len);
  // Runs expired timers and sends what pacing, windows and tx space allow.
  void poll(uint64_t now_ns);
  // The earliest time poll() has something to do; UINT64_MAX when idle.
  uint64_t next_wakeup_ns() const;
  // Zero copy (TxFrame::hold): a host that still refers to a frame's payload
  // after transmit_burst() returned holds it, and releases it once its port
  // has let the buffer go; a send WR completes only when the responder has
  // acknowledged it and nothing holds its payload (WRs after it wait too:
  // completions stay in order). Tokens of QPs since destroyed or reset, and
  // releases without a hold, are counted (stale_releases) and ignored. A QP
  // that fails flushes its WRs without waiting (the application learns of
  // the error at once).
  void hold_payload(uint64_t token);
  void release_payload(uint64_t token);

  const EngineCounters& counters() const;
  const QpCounters* qp_counters(uint32_t qp_num) const;
  // The numbers of the QPs that exist, in creation order.
  std::vector<uint32_t> qp_numbers() const;
  int qp_info(uint32_t qp_num, QpInfo* out) const;
  // Bytes of engine state per QP (fixed part, without its work queues), and
  // of that the part the data path writes per packet (requester, completer,
  // responder, congestion control), which comes first; the rest (attributes,
  // header templates, counters, path control) lies apart.
  static size_t qp_state_bytes();
  static size_t qp_hot_bytes();
  // Every value of a QP's protocol state - requester, completer, responder,
  // congestion control's output, the responder's deferred ACK, the
  // selective-repeat bitmaps and kept frames - as text, for tests that hold
  // two engines to the same behaviour (the fast path's differential test).
  std::string qp_state_text(uint32_t qp_num) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Moves an RC QP from RESET to RTS in the three modify_qp calls a program
// makes after the out-of-band exchange (perftest's TCP, rdma_cm), each
// transition taking the fields of `attr` the IBA asks of it:
//   RESET -> INIT  qp_access_flags, pkey_index, port_num
//   INIT  -> RTR   ah_attr (the peer's GID and MAC), path_mtu (payload_bytes),
//                  dest_qp_num, rq_psn (the peer's first PSN),
//                  max_dest_rd_atomic, min_rnr_timer, recovery
//   RTR   -> RTS   sq_psn (ours, as told to the peer), timeout, retry_cnt,
//                  rnr_retry, max_rd_atomic
// attr.qp_state is ignored. 0, or modify_qp's -errno with its message (the
// QP is left in the state it reached).
int connect_rc(Engine& eng, uint32_t qp_num, const QpAttr& attr, std::string* err);

}  // namespace tita::engine
