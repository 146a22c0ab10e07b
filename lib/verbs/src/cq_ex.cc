// Extended completion queues: ibv_create_cq_ex, and the polling API that
// reads one completion at a time (ibv_start_poll, ibv_next_poll,
// ibv_end_poll and the ibv_wc_read_* accessors).
//
// An extended CQ is a CQ like any other (the engine's, on every lane;
// ibv_poll_cq, events and destruction work on it unchanged) whose ibv_cq_ex
// carries the polling ops. start_poll takes a batch of completions from the
// engine; each start_poll/next_poll exposes the next one (wr_id and status in
// the struct, the rest through the read_* ops) and consumes it. A batch the
// application leaves unconsumed (end_poll before ENOENT) stays here and is
// handed out first, by the next start_poll or by ibv_poll_cq. Between
// start_poll and end_poll the CQ is the polling thread's (a lock, as
// rdma-core's providers take one).
//
// The completion fields tita has are those of ibv_wc (IBV_WC_STANDARD_FLAGS);
// timestamps, CVLAN, flow tags and tag-matching info, a parent domain and
// ignoring overruns are refused with EOPNOTSUPP.
#include <cerrno>
#include <mutex>

#include "interpose.h"

namespace tita::verbs {

struct CqEx {
  static constexpr int kBatch = 32;
  std::mutex mu;  // between start_poll and end_poll
  ibv_wc wc[kBatch];
  int n = 0;    // polled from the engine
  int pos = 0;  // the next to expose
  int cur = 0;  // the one exposed
};

namespace {

Cq* cq_ex_of(ibv_cq_ex* c) { return reinterpret_cast<Cq*>(c); }
const ibv_wc& current(ibv_cq_ex* c) {
  const CqEx& x = *cq_ex_of(c)->ex;
  return x.wc[x.cur];
}

// The next completion into the struct; ENOENT when there is none, EIO when
// the CQ overflowed (IBV_EVENT_CQ_ERR) and held nothing more.
int expose_next(Cq* cq) {
  CqEx& x = *cq->ex;
  if (x.pos == x.n) {
    x.pos = x.n = 0;
    const int got = poll_engine(cq, CqEx::kBatch, x.wc);
    if (got < 0) return EIO;
    if (got == 0) return ENOENT;
    x.n = got;
  }
  x.cur = x.pos++;
  cq->cqx.wr_id = x.wc[x.cur].wr_id;
  cq->cqx.status = x.wc[x.cur].status;
  return 0;
}

int start_poll(ibv_cq_ex* c, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) return EINVAL;
  Cq* cq = cq_ex_of(c);
  cq->ex->mu.lock();
  const int rc = expose_next(cq);
  if (rc != 0) cq->ex->mu.unlock();  // as providers do: no end_poll follows a failed start_poll
  return rc;
}

int next_poll(ibv_cq_ex* c) { return expose_next(cq_ex_of(c)); }

void end_poll(ibv_cq_ex* c) { cq_ex_of(c)->ex->mu.unlock(); }

ibv_wc_opcode read_opcode(ibv_cq_ex* c) { return current(c).opcode; }
uint32_t read_vendor_err(ibv_cq_ex* c) { return current(c).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) { return current(c).byte_len; }
__be32 read_imm_data(ibv_cq_ex* c) { return current(c).imm_data; }
uint32_t read_qp_num(ibv_cq_ex* c) { return current(c).qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) { return current(c).src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* c) { return current(c).wc_flags; }
uint32_t read_slid(ibv_cq_ex* c) { return current(c).slid; }
uint8_t read_sl(ibv_cq_ex* c) { return current(c).sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* c) { return current(c).dlid_path_bits; }

}  // namespace

ibv_cq_ex* op_create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr) {
  if (attr->wc_flags & ~static_cast<uint64_t>(IBV_WC_STANDARD_FLAGS)) {
    errno = refuse(ctx, "ibv_create_cq_ex: wc_flags beyond IBV_WC_STANDARD_FLAGS (completion timestamps, CVLAN, "
                        "flow tag, tag matching)");
    return nullptr;
  }
  if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
    errno = refuse(ctx, "ibv_create_cq_ex: a parent domain");
    return nullptr;
  }
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED) != 0) {
    // A single-threaded CQ is a hint that changes nothing here; an overrun is
    // an error that tita reports (IBV_EVENT_CQ_ERR), which it cannot ignore.
    errno = refuse(ctx, "ibv_create_cq_ex: IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN");
    return nullptr;
  }
  auto* ex = new (std::nothrow) CqEx();
  if (ex == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  ibv_cq* base = ibv_create_cq(ctx, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                               static_cast<int>(attr->comp_vector));
  if (base == nullptr) {
    delete ex;
    return nullptr;
  }
  Cq* cq = cq_of(base);
  cq->ex = ex;
  ibv_cq_ex& x = cq->cqx;
  x.comp_mask = 0;
  x.start_poll = start_poll;
  x.next_poll = next_poll;
  x.end_poll = end_poll;
  x.read_opcode = read_opcode;
  x.read_vendor_err = read_vendor_err;
  x.read_byte_len = read_byte_len;
  x.read_imm_data = read_imm_data;
  x.read_qp_num = read_qp_num;
  x.read_src_qp = read_src_qp;
  x.read_wc_flags = read_wc_flags;
  x.read_slid = read_slid;
  x.read_sl = read_sl;
  x.read_dlid_path_bits = read_dlid_path_bits;
  return &x;
}

int take_polled(Cq* cq, int n, ibv_wc* wc) {
  CqEx& x = *cq->ex;
  std::lock_guard lock(x.mu);
  int k = 0;
  while (k < n && x.pos < x.n) wc[k++] = x.wc[x.pos++];
  return k;
}

void release_cq_ex(Cq* cq) {
  delete cq->ex;
  cq->ex = nullptr;
}

}  // namespace tita::verbs
