// Objects and verbs, receive dispatch, and the scheduling loop of the engine.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "engine_impl.h"

namespace tita::engine {

using wire::Opcode;

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

std::string_view to_string(QpState s) {
  switch (s) {
    case QpState::kReset: return "RESET";
    case QpState::kInit: return "INIT";
    case QpState::kRtr: return "RTR";
    case QpState::kRts: return "RTS";
    case QpState::kError: return "ERROR";
  }
  return "?";
}

Engine::Impl::Impl(const EngineConfig& c, PacketIo* io_)
    : cfg(c),
      io(io_),
      wheel(c.max_qps, std::max<uint32_t>(64, std::bit_ceil(c.timer_slots)), std::max<uint64_t>(1, c.timer_slot_ns)),
      ready(c.max_qps),
      control(c.control_ring) {
  cfg.sr_window = std::clamp<uint32_t>(std::bit_ceil(std::max<uint32_t>(cfg.sr_window, 64)), 64, 1024);
  cfg.ack_req_every = std::max<uint32_t>(cfg.ack_req_every, 1);
  cfg.ack_unsolicited = std::max<uint32_t>(cfg.ack_unsolicited, 1);
  mrs.emplace_back();  // key 0 is never valid
  cc_params.emplace_back("none", cc::Params{});  // line rate, for QPs without set_cc
}

Engine::Engine(const EngineConfig& config, PacketIo* io) : impl_(std::make_unique<Impl>(config, io)) {}
Engine::~Engine() = default;

const EngineConfig& Engine::config() const { return impl_->cfg; }
const EngineCounters& Engine::counters() const { return impl_->counters; }
size_t Engine::qp_state_bytes() { return sizeof(Qp); }

// ---------------------------------------------------------------- resources

uint32_t Engine::alloc_pd() { return impl_->next_pd++; }

namespace {
int register_region(Engine::Impl& m, uint32_t pd, uint8_t* base, uint64_t iova, uint64_t length, uint32_t access,
                    MrInfo* out) {
  constexpr uint32_t kKnownAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  if (pd == 0 || pd >= m.next_pd || length == 0 || (access & ~kKnownAccess) != 0) return -EINVAL;
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
  if (addr == nullptr) return -EINVAL;
  return register_region(*impl_, pd, static_cast<uint8_t*>(addr), reinterpret_cast<uint64_t>(addr), length, access,
                         out);
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

const Mr* Engine::Impl::mr_by_key(uint32_t key) const {
  const uint32_t index = key >> 8;
  if (index == 0 || index >= mrs.size()) return nullptr;
  const Mr& mr = mrs[index];
  return mr.valid && mr.key == key ? &mr : nullptr;
}

int Engine::create_cq(uint32_t entries, uint32_t* cq) {
  if (entries == 0 || entries > (1u << 22)) return -EINVAL;
  Cq c;
  c.ring.resize(entries);
  c.valid = true;
  impl_->cqs.push_back(std::move(c));
  *cq = static_cast<uint32_t>(impl_->cqs.size() - 1);
  return 0;
}

int Engine::create_qp(uint32_t pd, const QpInitAttr& a, uint32_t* qp_num) {
  Impl& m = *impl_;
  if (pd == 0 || pd >= m.next_pd || a.send_cq >= m.cqs.size() || a.recv_cq >= m.cqs.size()) return -EINVAL;
  if (a.max_send_wr == 0 || a.max_recv_wr == 0 || a.max_send_wr > (1u << 20) || a.max_recv_wr > (1u << 20) ||
      a.max_sge == 0 || a.max_sge > kMaxSge) {
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
  }
  auto qp = std::make_unique<Qp>();
  qp->index = index;
  qp->qpn = m.cfg.first_qpn + index;
  qp->pd = pd;
  qp->send_cq = a.send_cq;
  qp->recv_cq = a.recv_cq;
  qp->sq_sig_all = a.sq_sig_all;
  qp->max_sge = static_cast<uint8_t>(a.max_sge);
  qp->valid = true;
  qp->sq.resize(std::bit_ceil(a.max_send_wr + 1));
  qp->rq.resize(std::bit_ceil(a.max_recv_wr + 1));
  const uint32_t words = m.cfg.sr_window / 64;
  qp->sacked.assign(words, 0);
  qp->retx.assign(words, 0);
  qp->retx_done.assign(words, 0);
  qp->cc_params = &m.cc_params.front().second;  // "none" until set_cc
  qp->flow.init(*qp->cc_params, {m.cfg.line_rate_bps, m.cfg.base_rtt_ns, qp->mtu()}, m.now_ns);
  m.path_init(*qp, m.cfg.path);
  *qp_num = qp->qpn;
  m.qps[index] = std::move(qp);
  return 0;
}

int Engine::destroy_qp(uint32_t qp_num) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  if (qp == nullptr) return -EINVAL;
  m.drop_ooo(*qp);
  m.wheel.cancel(qp->index);
  qp->valid = false;  // a stale entry in the ready ring is skipped
  m.free_qps.push_back(qp->index);
  return 0;
}

Qp* Engine::Impl::qp_by_num(uint32_t qpn) {
  const uint32_t index = qpn - cfg.first_qpn;
  if (index >= qps.size() || !qps[index] || !qps[index]->valid) return nullptr;
  return qps[index].get();
}

namespace {

bool valid_mtu(uint32_t mtu) { return mtu >= 256 && mtu <= 4096 && std::has_single_bit(mtu); }

}  // namespace

int Engine::modify_qp(uint32_t qp_num, const QpAttr& a, uint32_t mask, std::string* err) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  auto fail = [err](std::string msg) {
    if (err) *err = std::move(msg);
    return -EINVAL;
  };
  if (qp == nullptr) return fail("modify_qp: no QP " + std::to_string(qp_num));
  const QpState from = qp->state;
  const QpState to = (mask & kQpState) ? a.qp_state : from;
  auto need = [&](uint32_t bits, const char* what) { return (mask & bits) == bits ? nullptr : what; };

  if ((mask & kQpPathMtu) && !valid_mtu(a.path_mtu)) {
    return fail("modify_qp: path_mtu " + std::to_string(a.path_mtu) + " is not 256, 512, 1024, 2048 or 4096");
  }
  if ((mask & kQpTimeout) && a.timeout > 31) return fail("modify_qp: timeout must be 0..31");
  if ((mask & kQpRetryCnt) && a.retry_cnt > 7) return fail("modify_qp: retry_cnt must be 0..7");
  if ((mask & kQpRnrRetry) && a.rnr_retry > 7) return fail("modify_qp: rnr_retry must be 0..7");
  if ((mask & kQpMinRnrTimer) && a.min_rnr_timer > 31) return fail("modify_qp: min_rnr_timer must be 0..31");
  if ((mask & kQpDestQpn) && a.dest_qp_num > wire::kPsnMask) return fail("modify_qp: dest_qp_num exceeds 24 bits");
  if ((mask & kQpMaxDestRdAtomic) && (a.max_dest_rd_atomic == 0)) {
    return fail("modify_qp: max_dest_rd_atomic must be at least 1");
  }

  if (to != from) {
    const char* missing = nullptr;
    bool ok = false;
    if (to == QpState::kReset || to == QpState::kError) {
      ok = true;
    } else if (from == QpState::kReset && to == QpState::kInit) {
      ok = true;
    } else if (from == QpState::kInit && to == QpState::kRtr) {
      ok = true;
      missing = need(kQpAv, "ah_attr (kQpAv)");
      if (!missing) missing = need(kQpPathMtu, "path_mtu");
      if (!missing) missing = need(kQpDestQpn, "dest_qp_num");
      if (!missing) missing = need(kQpRqPsn, "rq_psn");
    } else if (from == QpState::kRtr && to == QpState::kRts) {
      ok = true;
      missing = need(kQpSqPsn, "sq_psn");
    } else if (from == QpState::kRts && to == QpState::kRts) {
      ok = true;
    }
    if (!ok) {
      return fail("modify_qp: no transition from " + std::string(to_string(from)) + " to " +
                  std::string(to_string(to)));
    }
    if (missing) {
      return fail("modify_qp: " + std::string(to_string(from)) + " -> " + std::string(to_string(to)) + " needs " +
                  missing);
    }
  }

  // Apply.
  QpAttr& q = qp->attr;
  if (mask & kQpAccessFlags) q.qp_access_flags = a.qp_access_flags;
  if (mask & kQpPathMtu) {
    q.path_mtu = a.path_mtu;
    qp->mtu_shift = static_cast<uint8_t>(std::countr_zero(a.path_mtu));
  }
  if (mask & kQpAv) q.ah_attr = a.ah_attr;
  if (mask & kQpDestQpn) q.dest_qp_num = a.dest_qp_num;
  if (mask & kQpRqPsn) {
    q.rq_psn = a.rq_psn & wire::kPsnMask;
    qp->epsn = q.rq_psn;
  }
  if (mask & kQpMaxDestRdAtomic) q.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & kQpMinRnrTimer) q.min_rnr_timer = a.min_rnr_timer;
  if (mask & kQpSqPsn) {
    q.sq_psn = a.sq_psn & wire::kPsnMask;
    qp->snd_una = qp->snd_nxt = qp->snd_max = q.sq_psn;
    qp->acked_psn = wire::psn_add(q.sq_psn, wire::kPsnMask);
  }
  if (mask & kQpTimeout) q.timeout = a.timeout;
  if (mask & kQpRetryCnt) q.retry_cnt = qp->retry_left = a.retry_cnt;
  if (mask & kQpRnrRetry) q.rnr_retry = qp->rnr_left = a.rnr_retry;
  if (mask & kQpMaxQpRdAtomic) q.max_rd_atomic = a.max_rd_atomic;
  if (mask & kQpRecovery) q.recovery = a.recovery;

  if (to == QpState::kRtr && from != QpState::kRtr) {
    qp->udp_sport = q.ah_attr.udp_sport ? q.ah_attr.udp_sport : roce_udp_sport(qp->qpn, q.dest_qp_num);
    m.path_at_rtr(*qp);  // builds hdr (and resp_hdr) with the dodge value the port carries
    qp->reads.assign(q.max_dest_rd_atomic, ReadJob{});
    qp->flow.init(*qp->cc_params, {m.cfg.line_rate_bps, m.cfg.base_rtt_ns, qp->mtu()}, m.now_ns);
  }
  if (to == QpState::kError && from != QpState::kError) {
    qp->state = QpState::kRts;  // to_error flushes from any live state
    m.to_error(*qp, WcStatus::kWrFlushErr);
    return 0;
  }
  if (to == QpState::kReset) {
    // Back to a fresh QP with the same number and queues.
    auto fresh = std::make_unique<Qp>();
    std::swap(fresh->sq, qp->sq);
    std::swap(fresh->rq, qp->rq);
    std::swap(fresh->sacked, qp->sacked);
    std::swap(fresh->retx, qp->retx);
    std::swap(fresh->retx_done, qp->retx_done);
    std::fill(fresh->sacked.begin(), fresh->sacked.end(), 0);
    std::fill(fresh->retx.begin(), fresh->retx.end(), 0);
    std::fill(fresh->retx_done.begin(), fresh->retx_done.end(), 0);
    m.drop_ooo(*qp);
    m.wheel.cancel(qp->index);
    fresh->index = qp->index;
    fresh->qpn = qp->qpn;
    fresh->pd = qp->pd;
    fresh->send_cq = qp->send_cq;
    fresh->recv_cq = qp->recv_cq;
    fresh->sq_sig_all = qp->sq_sig_all;
    fresh->max_sge = qp->max_sge;
    fresh->valid = true;
    fresh->in_ready = qp->in_ready;
    fresh->cc_params = qp->cc_params;
    fresh->flow.init(*fresh->cc_params, {m.cfg.line_rate_bps, m.cfg.base_rtt_ns, fresh->mtu()}, m.now_ns);
    m.path_init(*fresh, qp->path ? qp->path->cfg : PathConfig{});
    m.qps[qp->index] = std::move(fresh);
    return 0;
  }
  qp->state = to;
  if (to == QpState::kRts) m.reconsider(*qp);
  return 0;
}

int Engine::query_qp(uint32_t qp_num, QpAttr* attr) const {
  const Qp* qp = impl_->qp_by_num(qp_num);
  if (qp == nullptr) return -EINVAL;
  *attr = qp->attr;
  attr->qp_state = qp->state;
  return 0;
}

int Engine::set_cc(uint32_t qp_num, std::string_view algorithm, std::span<const std::string> params,
                   std::string* err) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  if (qp == nullptr) {
    if (err) *err = "set_cc: no QP " + std::to_string(qp_num);
    return -EINVAL;
  }
  // QPs with the same algorithm and parameters share one Params.
  std::string key(algorithm);
  for (const std::string& p : params) key += " " + p;
  const cc::Params* shared = nullptr;
  for (const auto& [k, p] : m.cc_params) {
    if (k == key) shared = &p;
  }
  if (shared == nullptr) {
    cc::Params p;
    const cc::FlowConfig link{m.cfg.line_rate_bps, m.cfg.base_rtt_ns, qp->mtu()};
    std::string msg;
    if (int rc = cc::Params::create(algorithm, link, &p, &msg); rc != 0) {
      if (err) *err = msg;
      return rc;
    }
    for (const std::string& assignment : params) {
      if (int rc = p.set(assignment, &msg); rc != 0) {
        if (err) *err = msg;
        return rc;
      }
    }
    m.cc_params.emplace_back(key, p);
    shared = &m.cc_params.back().second;
  }
  qp->cc_params = shared;
  qp->flow.init(*shared, {m.cfg.line_rate_bps, m.cfg.base_rtt_ns, qp->mtu()}, m.now_ns);
  m.reconsider(*qp);
  return 0;
}

// ---------------------------------------------------------------- posting

int Engine::post_send(uint32_t qp_num, const SendWr* wr, const SendWr** bad) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  for (; wr != nullptr; wr = wr->next) {
    int rc = 0;
    if (qp == nullptr || qp->state == QpState::kReset || qp->state == QpState::kInit || qp->state == QpState::kRtr) {
      rc = -EINVAL;
    } else if (wr->opcode == WrOpcode::kAtomicCmpAndSwp || wr->opcode == WrOpcode::kAtomicFetchAndAdd) {
      rc = -EOPNOTSUPP;
    } else if (wr->num_sge < 0 || wr->num_sge > qp->max_sge || (wr->num_sge > 0 && wr->sg_list == nullptr)) {
      rc = -EINVAL;
    } else if (((qp->sq_tail + 1) & (qp->sq_size() - 1)) == qp->sq_head) {
      rc = -ENOMEM;
    }
    uint64_t length = 0;
    for (int i = 0; rc == 0 && i < wr->num_sge; ++i) length += wr->sg_list[i].length;
    if (rc == 0 && length > (1u << 31)) rc = -EINVAL;
    if (rc != 0) {
      if (bad) *bad = wr;
      return rc;
    }
    SendWqe& w = qp->sq[qp->sq_tail];
    w = SendWqe{};
    w.wr_id = wr->wr_id;
    w.opcode = wr->opcode;
    w.remote_addr = wr->rdma.remote_addr;
    w.rkey = wr->rdma.rkey;
    w.imm = wr->imm_data;
    w.length = static_cast<uint32_t>(length);
    w.num_sge = static_cast<uint8_t>(wr->num_sge);
    std::copy(wr->sg_list, wr->sg_list + wr->num_sge, w.sge);
    w.signaled = qp->sq_sig_all || (wr->send_flags & kSendSignaled);
    w.solicited = wr->send_flags & kSendSolicited;
    qp->sq_tail = (qp->sq_tail + 1) & (qp->sq_size() - 1);
    if (qp->state == QpState::kError) {
      // Flushed at once, as ibv_post_send does on a QP in error.
      m.complete(qp->send_cq, {w.wr_id, WcStatus::kWrFlushErr, WcOpcode::kSend, false, 0, 0, qp->qpn});
      qp->sq_head = qp->sq_next = qp->sq_tail;
    }
  }
  if (qp != nullptr) m.reconsider(*qp);
  return 0;
}

int Engine::post_recv(uint32_t qp_num, const RecvWr* wr, const RecvWr** bad) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  const uint32_t mask = qp ? static_cast<uint32_t>(qp->rq.size() - 1) : 0;
  for (; wr != nullptr; wr = wr->next) {
    int rc = 0;
    if (qp == nullptr || qp->state == QpState::kReset) {
      rc = -EINVAL;
    } else if (wr->num_sge < 0 || wr->num_sge > qp->max_sge || (wr->num_sge > 0 && wr->sg_list == nullptr)) {
      rc = -EINVAL;
    } else if (((qp->rq_tail + 1) & mask) == qp->rq_head) {
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
    RecvWqe& r = qp->rq[qp->rq_tail];
    r.wr_id = wr->wr_id;
    r.num_sge = static_cast<uint8_t>(wr->num_sge);
    r.length = 0;
    for (int i = 0; i < wr->num_sge; ++i) {
      r.sge[i] = wr->sg_list[i];
      r.length += wr->sg_list[i].length;
    }
    qp->rq_tail = (qp->rq_tail + 1) & mask;
  }
  return 0;
}

int Engine::poll_cq(uint32_t cq, int max_entries, WorkCompletion* wc) {
  if (cq >= impl_->cqs.size()) return -EINVAL;
  Cq& c = impl_->cqs[cq];
  int n = 0;
  while (n < max_entries && c.count > 0) {
    wc[n++] = c.ring[c.head];
    c.head = (c.head + 1) % static_cast<uint32_t>(c.ring.size());
    --c.count;
  }
  return n;
}

void Engine::Impl::complete(uint32_t cq, const WorkCompletion& wc) {
  Cq& c = cqs[cq];
  if (c.count == c.ring.size()) {
    ++c.overflows;  // the application polls too slowly for its CQ size
    return;
  }
  c.ring[(c.head + c.count) % c.ring.size()] = wc;
  ++c.count;
}

void Engine::Impl::to_error(Qp& qp, WcStatus status, uint32_t failed) {
  if (qp.state == QpState::kError) return;
  qp.state = QpState::kError;
  const uint32_t smask = qp.sq_size() - 1;
  if (failed == kNil) failed = qp.sq_head;
  // Errors always complete, signaled or not: the failed WR with its status, the rest flushed.
  for (uint32_t i = qp.sq_head; i != qp.sq_tail; i = (i + 1) & smask) {
    const SendWqe& w = qp.sq[i];
    complete(qp.send_cq, {w.wr_id, i == failed ? status : WcStatus::kWrFlushErr, wc_opcode(w.opcode), false, 0, 0,
                          qp.qpn});
  }
  qp.sq_head = qp.sq_next = qp.sq_tail;
  const uint32_t rmask = static_cast<uint32_t>(qp.rq.size() - 1);
  for (uint32_t i = qp.rq_head; i != qp.rq_tail; i = (i + 1) & rmask) {
    complete(qp.recv_cq, {qp.rq[i].wr_id, WcStatus::kWrFlushErr, WcOpcode::kRecv, false, 0, 0, qp.qpn});
  }
  qp.rq_head = qp.rq_tail;
  qp.reads_count = 0;
  qp.deferred_ack = false;
  qp.rto_deadline_ns = qp.rnr_deadline_ns = kNever;
  drop_ooo(qp);
  wheel.cancel(qp.index);
}

// ---------------------------------------------------------------- receive

void Engine::receive(uint64_t now_ns, const uint8_t* frame, uint32_t len) {
  Impl& m = *impl_;
  m.now_ns = std::max(m.now_ns, now_ns);
  ++m.counters.rx_frames;
  wire::Packet pkt;
  const wire::ParseError e =
      wire::parse(frame, len, &pkt, {.verify_icrc = m.cfg.verify_icrc, .verify_ip_checksum = true});
  if (e != wire::ParseError::kOk) [[unlikely]] {
    ++m.counters.rx_parse_errors[static_cast<size_t>(e)];
    ++m.counters.rx_dropped;
    return;
  }
  Qp* qp = m.qp_by_num(pkt.dest_qp());
  if (qp == nullptr) [[unlikely]] {
    ++m.counters.rx_unknown_qp;
    ++m.counters.rx_dropped;
    return;
  }
  if (pkt.bth().pkey.get() != wire::kDefaultPkey) [[unlikely]] {
    ++m.counters.rx_bad_pkey;
    ++m.counters.rx_dropped;
    return;
  }
  const bool ready = qp->state == QpState::kRtr || qp->state == QpState::kRts;
  if (!ready) [[unlikely]] {
    ++m.counters.rx_qp_not_ready;
    ++m.counters.rx_dropped;
    return;
  }
  ++qp->counters.rx_packets;
  const wire::OpcodeInfo& op = *pkt.op;
  if (op.kind == wire::Kind::kCnp) {
    m.on_cnp(*qp);
  } else if (op.is_request()) {
    if (qp->path && qp->path->cfg.follow_peer) m.path_follow(*qp, pkt);
    m.respond(*qp, pkt, false);
  } else if (qp->state == QpState::kRts) {
    m.complete_response(*qp, pkt);
  } else {
    ++m.counters.rx_qp_not_ready;
    ++m.counters.rx_dropped;
  }
  m.reconsider(*qp);
}

// ---------------------------------------------------------------- scheduling

void Engine::Impl::make_ready(Qp& qp) {
  if (qp.in_ready) return;
  qp.in_ready = true;
  ready[(ready_head + ready_count) % ready.size()] = qp.index;
  ++ready_count;
}

// Puts the QP where it belongs: in the ready ring if it may send now, and in the
// timing wheel at its earliest deadline (pacing, RTO, RNR wait, CC timer).
void Engine::Impl::reconsider(Qp& qp) {
  if (qp.state != QpState::kRts && qp.state != QpState::kRtr) return;
  uint64_t wake = std::min({qp.rto_deadline_ns, qp.rnr_deadline_ns, qp.flow.next_timer_ns(),
                           qp.path ? qp.path->deadline_ns : kNever});
  if (has_work(qp)) {
    const uint64_t pace_ns = (qp.next_send_ps + 999) / 1000;
    if (pace_ns <= now_ns) {
      make_ready(qp);
    } else {
      wake = std::min(wake, pace_ns);
    }
  }
  // The wheel entry only moves earlier: a later deadline is found when it fires.
  if (wake != kNever && (!wheel.scheduled(qp.index) || wake < wheel.deadline(qp.index))) {
    wheel.schedule(qp.index, wake);
  }
}

void Engine::Impl::wake(Qp& qp) {
  if (qp.state != QpState::kRts && qp.state != QpState::kRtr) return;
  if (qp.rnr_deadline_ns <= now_ns) {
    qp.rnr_deadline_ns = kNever;
    rewind(qp, qp.rnr_psn);
    if (qp.path) qp.path->progress_ns = now_ns;  // the wait was the responder's request, not a stall
  }
  if (qp.rto_deadline_ns <= now_ns) on_timeout(qp);
  if (qp.flow.next_timer_ns() <= now_ns) qp.flow.on_timer(now_ns);
  if (qp.path && qp.path->deadline_ns <= now_ns) path_check(qp);
  reconsider(qp);
}

void Engine::poll(uint64_t now_ns) {
  Impl& m = *impl_;
  m.now_ns = std::max(m.now_ns, now_ns);
  m.flush_control();
  m.wheel.advance(m.now_ns, [&m](uint32_t index) {
    if (m.qps[index] && m.qps[index]->valid) m.wake(*m.qps[index]);
  });
  // Round robin over the QPs that may send: one packet per turn.
  uint32_t budget = m.io->tx_space();
  uint32_t turns = m.ready_count;
  while (budget > 0 && m.ready_count > 0) {
    const uint32_t index = m.ready[m.ready_head];
    m.ready_head = (m.ready_head + 1) % static_cast<uint32_t>(m.ready.size());
    --m.ready_count;
    Qp* qp = m.qps[index].get();
    if (qp == nullptr || !qp->valid) continue;
    qp->in_ready = false;
    if (m.send_one(*qp)) --budget;
    m.reconsider(*qp);
    if (--turns == 0) {
      // Every ready QP had a turn; control frames made meanwhile go first.
      m.flush_control();
      budget = std::min(budget, m.io->tx_space());
      turns = m.ready_count;
    }
  }
  m.flush_control();
}

uint64_t Engine::next_wakeup_ns() const {
  Impl& m = *impl_;
  if (m.control_count > 0 || m.ready_count > 0) {
    if (m.io->tx_space() > 0) return m.now_ns;
  }
  return m.wheel.next_expiry_ns();
}

// ---------------------------------------------------------------- frames

wire::PathFields Engine::Impl::path_fields(const Qp& qp, uint16_t dodge) const {
  wire::PathFields f;
  const AhAttr& ah = qp.attr.ah_attr;
  std::memcpy(f.dst_mac, ah.dmac, 6);
  std::memcpy(f.src_mac, cfg.mac, 6);
  f.vlan = ah.vlan;
  f.pcp = ah.pcp;
  f.vid = ah.vid;
  f.src_gid = cfg.gid;
  f.dst_gid = ah.dgid;
  f.dscp = ah.traffic_class >> 2;
  f.ttl = cfg.initial_ttl;
  f.flow_label = qp.udp_sport;
  f.udp_src_port = qp.udp_sport;
  f.dest_qp = qp.attr.dest_qp_num;
  if (qp.path == nullptr) return f;
  const PathState& p = *qp.path;
  if (p.cfg.field == wire::DodgeField::kUdpSport) {
    f.udp_src_port = wire::dodge_set(p.mask, qp.udp_sport, dodge);
    f.flow_label = f.udp_src_port;  // IPv6 switches that hash the flow label move too
  } else if (p.cfg.field == wire::DodgeField::kDscp) {
    f.dscp = static_cast<uint8_t>(wire::dodge_set(p.mask, f.dscp, dodge));
  }
  return f;
}

uint32_t Engine::Impl::send_frame(Qp& qp, const wire::TransportFields& t, const wire::Segment* payload,
                                  uint32_t n_payload, uint32_t payload_len, bool phantom, bool collect) {
  TxFrame tx;
  tx.hdr = tx_hdr;
  // READ responses answer the peer's requests: they follow its dodge value.
  const bool response = qp.path && wire::opcode_info(t.opcode).kind == wire::Kind::kReadResponse;
  tx.hdr_len = (response ? qp.path->resp_hdr : qp.hdr).write(t, payload_len, tx_hdr);
  for (uint32_t i = 0; i < n_payload; ++i) tx.payload[i] = payload[i];
  tx.n_payload = n_payload;
  const uint32_t pad = wire::pad_bytes(payload_len);
  if (cfg.compute_icrc && !phantom) {
    wire::finish_frame(tx_hdr, tx.hdr_len, {payload, n_payload}, tx_tail);
  } else {
    std::memset(tx_tail, 0, pad + wire::kIcrcBytes);  // ICRC left zero: receivers skip the check
  }
  tx.tail = tx_tail;
  tx.tail_len = pad + wire::kIcrcBytes;
  const uint32_t frame_len = tx.hdr_len + payload_len + tx.tail_len;
  if (collect && cfg.telemetry) {
    tx.tail_len += wire::telemetry_write(tx_tail + tx.tail_len, wire::TelemetryHdr::kCollect,
                                         static_cast<uint32_t>(now_ns));
  }
  tx.priority = qp.attr.ah_attr.vlan ? qp.attr.ah_attr.pcp : 0;
  tx.qp_num = qp.qpn;
  io->transmit(now_ns, tx);
  ++counters.tx_frames;
  ++qp.counters.tx_packets;
  return frame_len;
}

void Engine::Impl::queue_control(Qp& qp, const wire::HeaderTemplate& hdr, const wire::TransportFields& t,
                                 const Echo* echo) {
  if (control_count == control.size()) [[unlikely]] {
    ++counters.control_ring_full;
    return;
  }
  ControlFrame& c = control[(control_head + control_count) % control.size()];
  c.len = hdr.write(t, 0, c.data);
  if (cfg.compute_icrc) {
    wire::finish_frame(c.data, c.len, {}, c.data + c.len);
  } else {
    std::memset(c.data + c.len, 0, wire::kIcrcBytes);
  }
  c.len += wire::kIcrcBytes;
  if (echo != nullptr && cfg.telemetry) {
    uint8_t* tr = c.data + c.len;
    const wire::TelemetryHdr* in = echo->trailer;
    const uint32_t ts = in ? in->ts_ns.get() : 0;
    c.len += wire::telemetry_write(tr, wire::TelemetryHdr::kEcho, ts, echo->ce_packets, echo->path_hops);
    if (echo->sack_psn >= 0) {
      tr[1] |= wire::TelemetryHdr::kSack;
      reinterpret_cast<wire::TelemetrySack*>(c.data + c.len)->psn.set(static_cast<uint32_t>(echo->sack_psn));
      c.len += sizeof(wire::TelemetrySack);
    }
    if (in != nullptr && in->hops() > 0) {
      const uint32_t bytes = in->hops() * sizeof(wire::TelemetryHop);
      std::memcpy(c.data + c.len, wire::telemetry_hops(in), bytes);
      c.len += bytes;
      tr[1] = static_cast<uint8_t>(tr[1] | in->hops() | (in->overflow() ? wire::TelemetryHdr::kOverflow : 0));
    }
  }
  c.qp_num = qp.qpn;
  c.priority = qp.attr.ah_attr.vlan ? qp.attr.ah_attr.pcp : 0;
  ++control_count;
}

void Engine::Impl::flush_control() {
  uint32_t space = control_count ? io->tx_space() : 0;
  while (control_count > 0 && space-- > 0) {
    const ControlFrame& c = control[control_head];
    TxFrame tx;
    tx.hdr = c.data;
    tx.hdr_len = c.len;
    tx.priority = c.priority;
    tx.qp_num = c.qp_num;
    io->transmit(now_ns, tx);
    ++counters.tx_frames;
    control_head = (control_head + 1) % static_cast<uint32_t>(control.size());
    --control_count;
  }
}

// ---------------------------------------------------------------- out-of-order slots

uint32_t Engine::Impl::ooo_alloc() {
  if (ooo_free != kNil) {
    const uint32_t s = ooo_free;
    ooo_free = ooo[s].next;
    return s;
  }
  if (ooo.size() >= cfg.ooo_slots) return kNil;
  ooo.emplace_back();
  return static_cast<uint32_t>(ooo.size() - 1);
}

void Engine::Impl::ooo_release(uint32_t slot) {
  ooo[slot].next = ooo_free;
  ooo_free = slot;
}

void Engine::Impl::drop_ooo(Qp& qp) {
  for (uint32_t s = qp.ooo_head; s != kNil;) {
    const uint32_t next = ooo[s].next;
    ooo_release(s);
    s = next;
  }
  qp.ooo_head = kNil;
  qp.ooo_count = 0;
}

// ---------------------------------------------------------------- introspection

std::vector<uint32_t> Engine::qp_numbers() const {
  std::vector<uint32_t> out;
  for (const auto& qp : impl_->qps) {
    if (qp && qp->valid) out.push_back(qp->qpn);
  }
  return out;
}

const QpCounters* Engine::qp_counters(uint32_t qp_num) const {
  const Qp* qp = impl_->qp_by_num(qp_num);
  return qp ? &qp->counters : nullptr;
}

int Engine::qp_info(uint32_t qp_num, QpInfo* out) const {
  const Qp* qp = impl_->qp_by_num(qp_num);
  if (qp == nullptr) return -EINVAL;
  out->state = qp->state;
  out->rate_bps = qp->flow.rate_bps();
  out->cwnd_bytes = qp->flow.cwnd_bytes();
  out->inflight_bytes = qp->inflight_bytes();
  out->snd_una = qp->snd_una;
  out->snd_nxt = qp->snd_nxt;
  out->epsn = qp->epsn;
  out->send_queue_depth = (qp->sq_tail - qp->sq_head) & (qp->sq_size() - 1);
  out->recv_queue_depth = static_cast<uint32_t>((qp->rq_tail - qp->rq_head) & (qp->rq.size() - 1));
  out->cc = qp->cc_params->algorithm();
  out->dodge = qp->path ? qp->path->dodge : 0;
  out->udp_sport = impl_->path_fields(*qp).udp_src_port;
  return 0;
}

}  // namespace tita::engine
