// The verbs and the resources they make: the engine itself, protection
// domains, memory regions, completion queues (and completions into them),
// QPs created and destroyed, posting send and receive WRs, and what tools
// read (qp_info, counters).
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "engine_impl.h"

namespace tita::engine {

std::string_view to_string(WcStatus s) {
  switch (s) {
    case WcStatus::kSuccess: return "IBV_WC_SUCCESS";
    case WcStatus::kLocLenErr: return "IBV_WC_LOC_LEN_ERR";
    case WcStatus::kLocQpOpErr: return "IBV_WC_LOC_QP_OP_ERR";
    case WcStatus::kLocProtErr: return "IBV_WC_LOC_PROT_ERR";
    case WcStatus::kWrFlushErr: return "IBV_WC_WR_FLUSH_ERR";
    case WcStatus::kBadRespErr: return "IBV_WC_BAD_RESP_ERR";
    case WcStatus::kLocAccessErr: return "IBV_WC_LOC_ACCESS_ERR";
    case WcStatus::kRemInvReqErr: return "IBV_WC_REM_INV_REQ_ERR";
    case WcStatus::kRemAccessErr: return "IBV_WC_REM_ACCESS_ERR";
    case WcStatus::kRemOpErr: return "IBV_WC_REM_OP_ERR";
    case WcStatus::kRetryExcErr: return "IBV_WC_RETRY_EXC_ERR";
    case WcStatus::kRnrRetryExcErr: return "IBV_WC_RNR_RETRY_EXC_ERR";
  }
  return "IBV_WC_?";
}

std::string_view to_string(WcOpcode o) {
  switch (o) {
    case WcOpcode::kSend: return "IBV_WC_SEND";
    case WcOpcode::kRdmaWrite: return "IBV_WC_RDMA_WRITE";
    case WcOpcode::kRdmaRead: return "IBV_WC_RDMA_READ";
    case WcOpcode::kCompSwap: return "IBV_WC_COMP_SWAP";
    case WcOpcode::kFetchAdd: return "IBV_WC_FETCH_ADD";
    case WcOpcode::kRecv: return "IBV_WC_RECV";
    case WcOpcode::kRecvRdmaWithImm: return "IBV_WC_RECV_RDMA_WITH_IMM";
  }
  return "IBV_WC_?";
}

std::string_view to_string(EventKind k) {
  switch (k) {
    case EventKind::kCqNotify: return "completion";
    case EventKind::kCqError: return "IBV_EVENT_CQ_ERR";
    case EventKind::kQpFatal: return "IBV_EVENT_QP_FATAL";
    case EventKind::kQpRequestError: return "IBV_EVENT_QP_REQ_ERR";
    case EventKind::kQpAccessError: return "IBV_EVENT_QP_ACCESS_ERR";
    case EventKind::kCommEstablished: return "IBV_EVENT_COMM_EST";
    case EventKind::kQpRetryExceeded: return "retry count exceeded";  // issue 29
    case EventKind::kQpRecoveryFallback: return "selective repeat refused by the peer";
    case EventKind::kSrqLimitReached: return "IBV_EVENT_SRQ_LIMIT_REACHED";
    case EventKind::kQpLastWqeReached: return "IBV_EVENT_QP_LAST_WQE_REACHED";
  }
  return "?";
}

Engine::Impl::Impl(const EngineConfig& c, PacketIo* io_)
    : cfg(c),
      io(io_),
      host_sums_icrc(io_ != nullptr && io_->sums_icrc()),
      host_holds(io_ != nullptr && io_->holds_payload()),
      wheel(0, std::max<uint32_t>(64, std::bit_ceil(c.timer_slots)), std::max<uint64_t>(1, c.timer_slot_ns)) {
  cfg.sr_window = std::clamp<uint32_t>(std::bit_ceil(std::max<uint32_t>(cfg.sr_window, 64)), 64, 1024);
  cfg.ack_req_every = std::max<uint32_t>(cfg.ack_req_every, 1);
  cfg.ack_unsolicited = std::max<uint32_t>(cfg.ack_unsolicited, 1);
  mrs.emplace_back();  // key 0 is never valid
  pds.push_back(0);    // PD 0 is never valid
  cc_params.emplace_back("none", cc::Params{});  // line rate, for QPs without set_cc
  if (!cfg.grow_on_demand) {
    wheel.add_ids(cfg.max_qps);
    ready.resize(cfg.max_qps);
    control.resize(cfg.control_ring);
  }
}

Engine::Engine(const EngineConfig& config, PacketIo* io) : impl_(std::make_unique<Impl>(config, io)) {}
Engine::~Engine() = default;

const EngineConfig& Engine::config() const { return impl_->cfg; }
const EngineCounters& Engine::counters() const { return impl_->counters; }
size_t Engine::qp_state_bytes() { return sizeof(Qp); }
size_t Engine::qp_hot_bytes() { return sizeof(QpHot); }

uint32_t Engine::alloc_pd() {
  Impl& m = *impl_;
  for (uint32_t pd = 1; pd < m.pds.size(); ++pd) {
    if (!m.pds[pd]) {
      m.pds[pd] = 1;
      return pd;
    }
  }
  m.pds.push_back(1);
  return static_cast<uint32_t>(m.pds.size() - 1);
}

int Engine::dealloc_pd(uint32_t pd) {
  Impl& m = *impl_;
  if (pd == 0 || pd >= m.pds.size() || !m.pds[pd]) return -EINVAL;
  for (const Mr& mr : m.mrs) {
    if (mr.valid && mr.pd == pd) return -EBUSY;
  }
  for (const auto& qp : m.qps) {
    if (qp && qp->valid && qp->pd == pd) return -EBUSY;
  }
  for (const Srq& s : m.srqs) {
    if (s.valid && s.pd == pd) return -EBUSY;
  }
  for (const Ah& ah : m.ahs) {
    if (ah.valid && ah.pd == pd) return -EBUSY;
  }
  m.pds[pd] = 0;
  return 0;
}

namespace {

bool pd_live(const Engine::Impl& m, uint32_t pd) { return m.pd_live(pd); }

int register_region(Engine::Impl& m, uint32_t pd, uint8_t* base, uint64_t iova, uint64_t length, uint32_t access,
                    MrInfo* out) {
  constexpr uint32_t kKnownAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  if (!pd_live(m, pd) || length == 0 || (access & ~kKnownAccess) != 0) return -EINVAL;
  if (iova + length < iova) return -EINVAL;  // the region would wrap the address space
  // IBA: remote write or atomic access requires local write access.
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(access & kAccessLocalWrite)) return -EINVAL;
  uint32_t index = 1;
  while (index < m.mrs.size() && m.mrs[index].valid) ++index;
  if (index == m.mrs.size()) m.mrs.emplace_back();
  if (index >= (1u << 24)) return -ENOSPC;
  Mr& mr = m.mrs[index];
  const uint32_t generation = ((mr.key & 0xff) + 1) & 0xff;
  mr = Mr{base, iova, length, access, pd, index << 8 | generation, true, base == nullptr};
  *out = MrInfo{iova, length, mr.key, mr.key, access};
  return 0;
}

}  // namespace

int Engine::reg_mr(uint32_t pd, void* addr, uint64_t length, uint32_t access, MrInfo* out) {
  return reg_mr(pd, addr, length, reinterpret_cast<uint64_t>(addr), access, out);
}

int Engine::reg_mr(uint32_t pd, void* addr, uint64_t length, uint64_t iova, uint32_t access, MrInfo* out) {
  if (addr == nullptr) return -EINVAL;
  if (reinterpret_cast<uint64_t>(addr) + length < reinterpret_cast<uint64_t>(addr)) return -EINVAL;
  return register_region(*impl_, pd, static_cast<uint8_t*>(addr), iova, length, access, out);
}

int Engine::reg_phantom_mr(uint32_t pd, uint64_t iova, uint64_t length, uint32_t access, MrInfo* out) {
  return register_region(*impl_, pd, nullptr, iova, length, access, out);
}

int Engine::dereg_mr(uint32_t lkey) {
  const uint32_t index = lkey >> 8;
  if (index == 0 || index >= impl_->mrs.size() || !impl_->mrs[index].valid || impl_->mrs[index].key != lkey) {
    return -ENOENT;
  }
  impl_->mrs[index].valid = false;
  return 0;
}

namespace {
constexpr uint32_t kMaxCqEntries = 1u << 22;
}

int Engine::create_cq(uint32_t entries, uint32_t* cq) {
  Impl& m = *impl_;
  if (entries == 0 || entries > kMaxCqEntries) return -EINVAL;
  uint32_t index = 0;
  while (index < m.cqs.size() && m.cqs[index].valid) ++index;
  if (index == m.cqs.size()) m.cqs.emplace_back();
  Cq& c = m.cqs[index];
  c = Cq{};
  c.entries = entries;
  if (!m.cfg.grow_on_demand) c.ring.resize(entries);
  c.valid = true;
  *cq = index;
  return 0;
}

int Engine::destroy_cq(uint32_t cq) {
  Impl& m = *impl_;
  if (cq >= m.cqs.size() || !m.cqs[cq].valid) return -EINVAL;
  for (const auto& qp : m.qps) {
    if (qp && qp->valid && (qp->send_cq == cq || qp->recv_cq == cq)) return -EBUSY;
  }
  m.cqs[cq] = Cq{};
  return 0;
}

int Engine::resize_cq(uint32_t cq, uint32_t entries) {
  Impl& m = *impl_;
  if (cq >= m.cqs.size() || !m.cqs[cq].valid) return -EINVAL;
  Cq& c = m.cqs[cq];
  if (entries == 0 || entries > kMaxCqEntries || entries < c.count) return -EINVAL;
  // What it holds, to the front of the new ring (one just large enough when it
  // grows on demand).
  std::vector<WorkCompletion> ring(m.cfg.grow_on_demand ? c.count : entries);
  const auto size = static_cast<uint32_t>(c.ring.size());
  for (uint32_t i = 0; i < c.count; ++i) ring[i] = c.ring[(c.head + i) % size];
  c.ring = std::move(ring);
  c.head = 0;
  c.entries = entries;
  return 0;
}

int Engine::req_notify_cq(uint32_t cq, bool solicited_only) {
  Impl& m = *impl_;
  if (cq >= m.cqs.size() || !m.cqs[cq].valid) return -EINVAL;
  Cq& c = m.cqs[cq];
  // A solicited-only request does not weaken an earlier request for the next completion.
  if (!solicited_only) {
    c.armed = Cq::kNext;
  } else if (c.armed == Cq::kUnarmed) {
    c.armed = Cq::kSolicited;
  }
  return 0;
}

int Engine::create_qp(uint32_t pd, const QpInitAttr& attr, uint32_t* qp_num) {
  QpInitAttr a = attr;
  return create_qp(pd, &a, qp_num);
}

int Engine::create_qp(uint32_t pd, QpInitAttr* attr, uint32_t* qp_num) {
  Impl& m = *impl_;
  QpInitAttr& a = *attr;
  auto cq_live = [&m](uint32_t cq) { return cq < m.cqs.size() && m.cqs[cq].valid; };
  if (!pd_live(m, pd) || !cq_live(a.send_cq) || !cq_live(a.recv_cq)) return -EINVAL;
  if (a.qp_type != QpType::kRc && a.qp_type != QpType::kUd) return -EOPNOTSUPP;
  if (a.srq != 0 && a.qp_type == QpType::kUd) return -EOPNOTSUPP;  // a UD QP receives into its own queue
  if (a.gsi && (a.qp_type != QpType::kUd || m.gsi_index != UINT32_MAX)) return -EINVAL;
  if (a.srq != 0) {
    // Receives come from the SRQ (of the same PD, as IBA requires).
    if (!m.srq_live(a.srq) || m.srqs[a.srq].pd != pd) return -EINVAL;
    a.max_recv_wr = 1;  // the QP's own ring holds the WQE of the message in progress
  }
  if (a.max_send_wr == 0 || a.max_recv_wr == 0 || a.max_send_wr > (1u << 20) || a.max_recv_wr > (1u << 20) ||
      a.max_sge == 0 || a.max_sge > kMaxSge || a.max_inline_data > kMaxInlineData) {
    return -EINVAL;
  }
  uint32_t index;
  if (!m.free_qps.empty()) {
    index = m.free_qps.back();
    m.free_qps.pop_back();
  } else {
    if (m.qps.size() >= m.cfg.max_qps) return -ENOSPC;
    index = static_cast<uint32_t>(m.qps.size());
    m.qps.emplace_back();
    m.wheel.add_ids(index + 1);
  }
  // The rings hold one slot more than the QP holds (full and empty differ);
  // what it can hold is reported back, as a provider rounds ibv_qp_cap up.
  a.max_send_wr = std::bit_ceil(a.max_send_wr + 1) - 1;
  a.max_recv_wr = std::bit_ceil(a.max_recv_wr + 1) - 1;
  if (a.max_inline_data > 0) a.max_inline_data = (a.max_inline_data + 63) & ~63u;
  const SprayConfig* spray = check_spray(m.cfg.spray, m.cfg.path, nullptr) == 0 ? &m.cfg.spray : nullptr;
  // Congestion control "none" until set_cc.
  m.qps[index] = m.new_qp(index, pd, a, {&m.cc_params.front().second, &m.cfg.path, spray});
  if (a.gsi) m.gsi_index = index;
  *qp_num = m.qps[index]->qpn;
  if (a.srq != 0) {
    ++m.srqs[a.srq].users;
    a.max_recv_wr = 0;  // as a provider reports a QP of an SRQ
  }
  return 0;
}

int Engine::destroy_qp(uint32_t qp_num) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  if (qp == nullptr) return -EINVAL;
  m.drop_ooo(*qp);
  m.wheel.cancel(qp->index);
  if (qp->cold.init.srq != 0) --m.srqs[qp->cold.init.srq].users;
  m.free_qps.push_back(qp->index);
  if (qp->index == m.gsi_index) m.gsi_index = UINT32_MAX;
  // Its memory goes back now (a stale entry in the ready ring, a control frame
  // still waiting for it, find no QP and are skipped): an engine holds the QPs
  // it has, not the most it ever had.
  m.qps[qp->index].reset();
  return 0;
}

Qp* Engine::Impl::qp_by_num(uint32_t qpn) {
  uint32_t index = qpn - cfg.first_qpn;
  if (index >= qps.size()) [[unlikely]] {
    if (qpn != kGsiQpn || gsi_index == UINT32_MAX) return nullptr;
    index = gsi_index;
  }
  if (!qps[index] || !qps[index]->valid) return nullptr;
  return qps[index].get();
}

int Engine::post_send(uint32_t qp_num, const SendWr* wr, const SendWr** bad) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  for (; wr != nullptr; wr = wr->next) {
    int rc = 0;
    const bool atomic = is_atomic(wr->opcode);
    const bool inl = wr->send_flags & kSendInline;
    if (qp == nullptr || qp->state == QpState::kReset || qp->state == QpState::kInit || qp->state == QpState::kRtr) {
      rc = -EINVAL;
    } else if (static_cast<uint8_t>(wr->opcode) > static_cast<uint8_t>(WrOpcode::kAtomicFetchAndAdd)) {
      rc = -EINVAL;
    } else if (wr->num_sge < 0 || wr->num_sge > qp->cold.max_sge || (wr->num_sge > 0 && wr->sg_list == nullptr)) {
      rc = -EINVAL;
    } else if (atomic && (wr->num_sge != 1 || wr->sg_list[0].length != 8 || inl)) {
      rc = -EINVAL;  // the original value lands in one 8-byte buffer
    } else if (inl && wr->opcode == WrOpcode::kRdmaRead) {
      rc = -EINVAL;
    } else if (((qp->req.sq_tail + 1) & (qp->sq_size() - 1)) == qp->comp.sq_head) {
      rc = -ENOMEM;
    }
    uint64_t length = 0;
    for (int i = 0; rc == 0 && i < wr->num_sge; ++i) length += wr->sg_list[i].length;
    if (rc == 0 && (length > kMaxMessageBytes || (inl && length > qp->cold.init.max_inline_data))) rc = -EINVAL;
    if (rc == 0 && qp->ud) rc = m.ud_check_wr(*qp, *wr, length);
    if (rc != 0) {
      if (bad) *bad = wr;
      return rc;
    }
    SendWqe& w = qp->req.sq[qp->req.sq_tail];
    w = SendWqe{};
    w.wr_id = wr->wr_id;
    w.opcode = wr->opcode;
    w.remote_addr = atomic ? wr->atomic.remote_addr : wr->rdma.remote_addr;
    w.rkey = atomic ? wr->atomic.rkey : wr->rdma.rkey;
    w.compare_add = wr->atomic.compare_add;
    w.swap = wr->atomic.swap;
    w.imm = wr->imm_data;
    w.length = static_cast<uint32_t>(length);
    w.signaled = qp->cold.sq_sig_all || (wr->send_flags & kSendSignaled);
    w.solicited = wr->send_flags & kSendSolicited;
    w.fence = wr->send_flags & kSendFence;
    w.ud_ah = wr->ud.ah;
    w.ud_qpn = wr->ud.remote_qpn;
    w.ud_qkey = wr->ud.remote_qkey;
    if (inl) {
      // The bytes are the WR's from now on: the application may reuse its buffers.
      uint8_t* p = qp->inline_slot(qp->req.sq_tail);
      for (int i = 0; i < wr->num_sge; ++i) {
        if (wr->sg_list[i].length == 0) continue;  // a QP without inline room has no slot (p is null)
        std::memcpy(p, reinterpret_cast<const void*>(static_cast<uintptr_t>(wr->sg_list[i].addr)),
                    wr->sg_list[i].length);
        p += wr->sg_list[i].length;
      }
      w.inline_data = true;
      w.num_sge = w.length > 0 ? 1 : 0;
      w.sge[0] = Sge{reinterpret_cast<uint64_t>(qp->inline_slot(qp->req.sq_tail)), w.length, 0};
    } else {
      w.num_sge = static_cast<uint8_t>(wr->num_sge);
      std::copy(wr->sg_list, wr->sg_list + wr->num_sge, w.sge);
    }
    qp->req.sq_tail = (qp->req.sq_tail + 1) & (qp->sq_size() - 1);
    if (qp->state == QpState::kError) {
      // Flushed at once, as ibv_post_send does on a QP in error.
      m.complete(qp->send_cq, {w.wr_id, WcStatus::kWrFlushErr, wc_opcode(w.opcode), false, 0, 0, qp->qpn});
      qp->comp.sq_head = qp->req.sq_next = qp->req.sq_tail;
    }
  }
  if (qp != nullptr) m.reconsider(*qp);
  m.settle();
  return 0;
}

int Engine::post_recv(uint32_t qp_num, const RecvWr* wr, const RecvWr** bad) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  const uint32_t mask = qp ? static_cast<uint32_t>(qp->rq_size() - 1) : 0;
  for (; wr != nullptr; wr = wr->next) {
    int rc = 0;
    if (qp == nullptr || qp->state == QpState::kReset || qp->cold.init.srq != 0) {
      rc = -EINVAL;  // a QP of an SRQ takes its receives from the SRQ (post_srq_recv)
    } else if (wr->num_sge < 0 || wr->num_sge > qp->cold.max_sge || (wr->num_sge > 0 && wr->sg_list == nullptr)) {
      rc = -EINVAL;
    } else if (((qp->resp.rq_tail + 1) & mask) == qp->resp.rq_head) {
      rc = -ENOMEM;
    }
    if (rc != 0) {
      if (bad) *bad = wr;
      return rc;
    }
    if (qp->state == QpState::kError) {
      m.complete(qp->recv_cq, {wr->wr_id, WcStatus::kWrFlushErr, WcOpcode::kRecv, false, 0, 0, qp->qpn});
      continue;
    }
    qp->resp.rq[qp->resp.rq_tail] = to_wqe(*wr);
    qp->resp.rq_tail = (qp->resp.rq_tail + 1) & mask;
  }
  return 0;
}

int Engine::poll_cq(uint32_t cq, int max_entries, WorkCompletion* wc) {
  if (cq >= impl_->cqs.size() || !impl_->cqs[cq].valid) return -EINVAL;
  Cq& c = impl_->cqs[cq];
  int n = 0;
  while (n < max_entries && c.count > 0) {
    wc[n++] = c.ring[c.head];
    c.head = (c.head + 1) % static_cast<uint32_t>(c.ring.size());
    --c.count;
  }
  if (n == 0 && c.error) return -EIO;
  return n;
}

void Engine::Impl::complete(uint32_t cq, const WorkCompletion& wc, bool solicited) {
  Cq& c = cqs[cq];
  if (c.error) [[unlikely]] {
    ++counters.cq_overflows;  // lost: the CQ already reported its overflow
    return;
  }
  if (c.count == c.ring.size() && !grow_ring(c.ring, c.head, c.count, c.entries)) [[unlikely]] {
    // A completion with nowhere to go: the CQ is in error (IBV_EVENT_CQ_ERR) and
    // the QPs that use it stop, rather than losing completions silently.
    ++counters.cq_overflows;
    c.error = true;
    cq_errors.push_back(cq);
    raise(EventKind::kCqError, cq, wc.qp_num);
    return;
  }
  c.ring[(c.head + c.count) % c.ring.size()] = wc;
  ++c.count;
  if (c.armed != Cq::kUnarmed &&
      (c.armed == Cq::kNext || solicited || wc.status != WcStatus::kSuccess)) {
    c.armed = Cq::kUnarmed;
    raise(EventKind::kCqNotify, cq, wc.qp_num);
  }
}

void Engine::Impl::fail_cq_qps() {
  const std::vector<uint32_t> failed = std::move(cq_errors);
  cq_errors.clear();
  for (auto& qp : qps) {
    if (!qp || !qp->valid) continue;
    for (uint32_t cq : failed) {
      if (qp->send_cq == cq || qp->recv_cq == cq) {
        to_error(*qp, WcStatus::kWrFlushErr);
        break;
      }
    }
  }
}

void Engine::set_event_hook(EventHook fn, void* ctx) {
  impl_->event_hook = fn;
  impl_->event_ctx = ctx;
}

std::vector<uint32_t> Engine::qp_numbers() const {
  std::vector<uint32_t> out;
  for (const auto& qp : impl_->qps) {
    if (qp && qp->valid) out.push_back(qp->qpn);
  }
  return out;
}

const QpCounters* Engine::qp_counters(uint32_t qp_num) const {
  const Qp* qp = impl_->qp_by_num(qp_num);
  return qp ? &qp->cold.counters : nullptr;
}

int Engine::qp_info(uint32_t qp_num, QpInfo* out) const {
  const Qp* qp = impl_->qp_by_num(qp_num);
  if (qp == nullptr) return -EINVAL;
  out->state = qp->state;
  out->rate_bps = qp->flow.rate_bps();
  out->cwnd_bytes = qp->flow.cwnd_bytes();
  out->inflight_bytes = qp->inflight_bytes();
  out->snd_una = qp->comp.snd_una;
  out->snd_nxt = qp->req.snd_nxt;
  out->epsn = qp->resp.epsn;
  out->send_queue_depth = (qp->req.sq_tail - qp->comp.sq_head) & (qp->sq_size() - 1);
  out->recv_queue_depth = static_cast<uint32_t>((qp->resp.rq_tail - qp->resp.rq_head) & (qp->rq_size() - 1));
  out->cc = qp->cold.cc_params->algorithm();
  out->dodge = qp->cold.path ? qp->cold.path->dodge : 0;
  out->udp_sport = impl_->path_fields(*qp).udp_src_port;
  return 0;
}

}  // namespace tita::engine
