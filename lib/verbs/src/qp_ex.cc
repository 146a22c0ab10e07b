// The extended send API: a QP made by ibv_create_qp_ex with send-ops flags
// carries the ibv_wr_* ops in its ibv_qp_ex (ibv_qp_to_qp_ex hands it out).
// ibv_wr_start opens a batch; each opcode call (ibv_wr_rdma_write, _send,
// _rdma_read, the atomics, ...) starts a WR with the qp_ex's wr_id and
// wr_flags, and ibv_wr_set_sge(_list) / ibv_wr_set_inline_data(_list) give it
// its data; ibv_wr_complete posts the batch to the engine (one doorbell) and
// ibv_wr_abort drops it.
//
// A WR here is the engine's SendWr, the same one ibv_post_send builds, so
// every rule (queue full, SGE count, inline size, atomics of one 8-byte SGE)
// is the engine's. The builders return nothing: the first error of a batch
// (a setter without an opcode before it, more SGEs or inline bytes than the
// QP was made for) is kept and answered by ibv_wr_complete, which says it in
// one line and posts nothing. An error the engine finds (the send queue full) stops the batch
// there: the WRs before it are posted, as ibv_post_send's *bad_wr says.
// Between ibv_wr_start and ibv_wr_complete/abort the QP's batch is its
// caller's (a lock, as rdma-core's providers take one).
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "interpose.h"
#include "tita/engine/verbs.h"

namespace tita::verbs {

struct QpEx {
  struct Wr {
    eng::SendWr wr;
    eng::Sge sge[eng::kMaxSge];
    std::string inline_bytes;  // IBV_SEND_INLINE: the bytes, copied when given
  };
  std::mutex mu;  // from ibv_wr_start to ibv_wr_complete / ibv_wr_abort
  std::vector<Wr> batch;
  int err = 0;  // the batch's first error
  const char* why = nullptr;  // ... said by ibv_wr_complete

  // Keeps the batch's first error.
  void error(int e, const char* what) {
    if (err != 0) return;
    err = e;
    why = what;
  }
};

namespace {

Qp* qp_of_ex(ibv_qp_ex* x) { return reinterpret_cast<Qp*>(x); }

// A new WR of the batch, with the qp_ex's wr_id and flags.
eng::SendWr& begin(ibv_qp_ex* x, eng::WrOpcode op) {
  QpEx& q = *qp_of_ex(x)->ex;
  QpEx::Wr& w = q.batch.emplace_back();
  w.wr.wr_id = x->wr_id;
  w.wr.opcode = op;
  if (x->wr_flags & ~static_cast<unsigned>(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |
                                           IBV_SEND_INLINE)) {
    q.error(EINVAL, "wr_flags beyond FENCE, SIGNALED, SOLICITED and INLINE");
  }
  w.wr.send_flags = x->wr_flags & ~static_cast<unsigned>(IBV_SEND_INLINE);  // inline: set_inline_data says
  return w.wr;
}

// The WR that the setters complete; nullptr (and the batch's error) when no
// opcode call came first.
QpEx::Wr* last(ibv_qp_ex* x) {
  QpEx& q = *qp_of_ex(x)->ex;
  if (q.batch.empty()) {
    q.error(EINVAL, "an SGE or inline data with no WR before it (ibv_wr_<opcode> first)");
    return nullptr;
  }
  return &q.batch.back();
}

void rdma(ibv_qp_ex* x, eng::WrOpcode op, uint32_t rkey, uint64_t remote_addr) {
  eng::SendWr& w = begin(x, op);
  w.rdma.rkey = rkey;
  w.rdma.remote_addr = remote_addr;
}

void wr_rdma_write(ibv_qp_ex* x, uint32_t rkey, uint64_t addr) { rdma(x, eng::WrOpcode::kRdmaWrite, rkey, addr); }
void wr_rdma_write_imm(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, __be32 imm) {
  rdma(x, eng::WrOpcode::kRdmaWriteWithImm, rkey, addr);
  qp_of_ex(x)->ex->batch.back().wr.imm_data = ntohl(imm);
}
void wr_rdma_read(ibv_qp_ex* x, uint32_t rkey, uint64_t addr) { rdma(x, eng::WrOpcode::kRdmaRead, rkey, addr); }
void wr_send(ibv_qp_ex* x) { begin(x, eng::WrOpcode::kSend); }
void wr_send_imm(ibv_qp_ex* x, __be32 imm) { begin(x, eng::WrOpcode::kSendWithImm).imm_data = ntohl(imm); }

void wr_atomic_cmp_swp(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap) {
  eng::SendWr& w = begin(x, eng::WrOpcode::kAtomicCmpAndSwp);
  w.atomic.rkey = rkey;
  w.atomic.remote_addr = addr;
  w.atomic.compare_add = compare;
  w.atomic.swap = swap;
}
void wr_atomic_fetch_add(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, uint64_t add) {
  eng::SendWr& w = begin(x, eng::WrOpcode::kAtomicFetchAndAdd);
  w.atomic.rkey = rkey;
  w.atomic.remote_addr = addr;
  w.atomic.compare_add = add;
}

void wr_set_sge(ibv_qp_ex* x, uint32_t lkey, uint64_t addr, uint32_t length) {
  QpEx::Wr* w = last(x);
  if (w == nullptr) return;
  w->sge[0] = eng::Sge{addr, length, lkey};
  w->wr.num_sge = 1;
}

void wr_set_sge_list(ibv_qp_ex* x, size_t n, const ibv_sge* list) {
  QpEx::Wr* w = last(x);
  if (w == nullptr) return;
  if (n > qp_of_ex(x)->cap.max_send_sge) {
    qp_of_ex(x)->ex->error(EINVAL, "more SGEs than the QP's max_send_sge");
    return;
  }
  for (size_t i = 0; i < n; ++i) w->sge[i] = eng::Sge{list[i].addr, list[i].length, list[i].lkey};
  w->wr.num_sge = static_cast<int>(n);
}

void wr_set_inline_data_list(ibv_qp_ex* x, size_t n, const ibv_data_buf* bufs) {
  QpEx::Wr* w = last(x);
  if (w == nullptr) return;
  size_t length = 0;
  for (size_t i = 0; i < n; ++i) length += bufs[i].length;
  if (length > qp_of_ex(x)->cap.max_inline_data) {
    qp_of_ex(x)->ex->error(EINVAL, "more inline bytes than the QP's max_inline_data");
    return;
  }
  w->inline_bytes.clear();
  for (size_t i = 0; i < n; ++i) w->inline_bytes.append(static_cast<const char*>(bufs[i].addr), bufs[i].length);
  w->wr.send_flags |= IBV_SEND_INLINE;
}

void wr_set_inline_data(ibv_qp_ex* x, void* addr, size_t length) {
  const ibv_data_buf one{addr, length};
  wr_set_inline_data_list(x, 1, &one);
}

void wr_start(ibv_qp_ex* x) {
  QpEx& q = *qp_of_ex(x)->ex;
  q.mu.lock();
  q.batch.clear();
  q.err = 0;
  q.why = nullptr;
}

void wr_abort(ibv_qp_ex* x) {
  QpEx& q = *qp_of_ex(x)->ex;
  q.batch.clear();
  q.mu.unlock();
}

int wr_complete(ibv_qp_ex* x) {
  Qp* qp = qp_of_ex(x);
  QpEx& q = *qp->ex;
  int rc = q.err;
  if (rc != 0) {
    dev_of(qp->qp.context)->log(Config::Log::kError, "ibv_wr_complete(QP %#x): %s: nothing of the batch is posted",
                                qp->qpn, q.why);
  }
  if (rc == 0 && !q.batch.empty()) {
    // The chain, its lists pointing into the batch (which no longer grows).
    for (size_t i = 0; i < q.batch.size(); ++i) {
      QpEx::Wr& w = q.batch[i];
      if (w.wr.send_flags & IBV_SEND_INLINE) {
        w.sge[0] = eng::Sge{reinterpret_cast<uint64_t>(w.inline_bytes.data()),
                            static_cast<uint32_t>(w.inline_bytes.size()), 0};
        w.wr.num_sge = w.inline_bytes.empty() ? 0 : 1;
      }
      w.wr.sg_list = w.sge;
      w.wr.next = i + 1 < q.batch.size() ? &q.batch[i + 1].wr : nullptr;
    }
    Device* d = dev_of(qp->qp.context);
    Device::Lock lock(*d, qp->lane);
    rc = -d->engine(qp->lane).post_send(qp->qpn, &q.batch.front().wr, nullptr);
    doorbell(d, qp->lane);
  }
  q.batch.clear();
  q.mu.unlock();
  return rc;
}

// Builders of what tita's RC QPs lack: create_qp_ex refuses their send-ops
// flags; a program that calls them anyway gets EOPNOTSUPP from ibv_wr_complete.
void refuse_op(ibv_qp_ex* x) {
  QpEx& q = *qp_of_ex(x)->ex;
  q.batch.emplace_back();
  q.error(EOPNOTSUPP, "an opcode tita's QPs lack (memory windows, invalidate, TSO, XRC addressing)");
}
void wr_bind_mw(ibv_qp_ex* x, ibv_mw*, uint32_t, const ibv_mw_bind_info*) { refuse_op(x); }
void wr_local_inv(ibv_qp_ex* x, uint32_t) { refuse_op(x); }
void wr_send_inv(ibv_qp_ex* x, uint32_t) { refuse_op(x); }
void wr_send_tso(ibv_qp_ex* x, void*, uint16_t, uint16_t) { refuse_op(x); }
// UD QPs: the WR's destination (ud.cc says the same for ibv_post_send).
void wr_set_ud_addr(ibv_qp_ex* x, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  QpEx::Wr* w = last(x);
  if (w == nullptr) return;
  if (x->qp_base.qp_type != IBV_QPT_UD || ah == nullptr || ah->context != x->qp_base.context) {
    qp_of_ex(x)->ex->error(EINVAL, "ibv_wr_set_ud_addr on a QP that is not UD, or with an AH of another context");
    return;
  }
  w->wr.ud = {ah_of(ah)->id, remote_qpn, remote_qkey};
}
void wr_set_xrc_srqn(ibv_qp_ex* x, uint32_t) { refuse_op(x); }
void wr_atomic_write(ibv_qp_ex* x, uint32_t, uint64_t, const void*) { refuse_op(x); }

}  // namespace

void enable_qp_ex(Qp* qp) {
  qp->ex = new QpEx();
  ibv_qp_ex& x = qp->qpx;
  x.comp_mask = 0;
  x.wr_rdma_write = wr_rdma_write;
  x.wr_rdma_write_imm = wr_rdma_write_imm;
  x.wr_rdma_read = wr_rdma_read;
  x.wr_send = wr_send;
  x.wr_send_imm = wr_send_imm;
  x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  x.wr_atomic_fetch_add = wr_atomic_fetch_add;
  x.wr_set_sge = wr_set_sge;
  x.wr_set_sge_list = wr_set_sge_list;
  x.wr_set_inline_data = wr_set_inline_data;
  x.wr_set_inline_data_list = wr_set_inline_data_list;
  x.wr_start = wr_start;
  x.wr_complete = wr_complete;
  x.wr_abort = wr_abort;
  x.wr_bind_mw = wr_bind_mw;
  x.wr_local_inv = wr_local_inv;
  x.wr_send_inv = wr_send_inv;
  x.wr_send_tso = wr_send_tso;
  x.wr_set_ud_addr = wr_set_ud_addr;
  x.wr_set_xrc_srqn = wr_set_xrc_srqn;
  x.wr_atomic_write = wr_atomic_write;
}

void release_qp_ex(Qp* qp) {
  delete qp->ex;
  qp->ex = nullptr;
}

TITA_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_qp_to_qp_ex, "IBVERBS_1.6"), nullptr, qp);
  Qp* q = qp_of(qp);
  return q->ex != nullptr ? &q->qpx : nullptr;  // made without send-ops flags: no extended API, as libibverbs says
}

}  // namespace tita::verbs
