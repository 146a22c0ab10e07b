// Shared receive queues: ibv_create_srq (and ibv_create_srq_ex for the basic
// type), ibv_post_srq_recv, ibv_modify_srq (resize, and the limit whose
// crossing is IBV_EVENT_SRQ_LIMIT_REACHED), ibv_query_srq, ibv_get_srq_num and
// ibv_destroy_srq (EBUSY while QPs use it). The SRQ is the engine's
// (lib/engine/src/srq.cc); it lives on lane 0, and the QPs made with it too
// (qp.cc). XRC and tag-matching SRQs are refused (EOPNOTSUPP, one line).
#include <cerrno>
#include <mutex>
#include <string>

#include "interpose.h"
#include "tita/engine/verbs.h"

namespace tita::verbs {
namespace {

ibv_srq* create_srq(ibv_pd* ibpd, void* srq_context, ibv_srq_attr* attr) {
  Device* d = dev_of(ibpd->context);
  Context* c = context_of(ibpd->context);
  if (attr->max_wr == 0 || attr->max_wr > kMaxWr || attr->max_sge == 0 || attr->max_sge > eng::kMaxSge ||
      attr->srq_limit > attr->max_wr) {
    d->log(Config::Log::kError, "ibv_create_srq: max_wr %u, max_sge %u, srq_limit %u: the device takes 1..%u WRs, "
           "1..%u SGEs and a limit up to max_wr", attr->max_wr, attr->max_sge, attr->srq_limit, kMaxWr, eng::kMaxSge);
    errno = EINVAL;
    return nullptr;
  }
  auto* srq = make<Srq>();
  if (srq == nullptr) return nullptr;
  eng::SrqAttr a{.max_wr = attr->max_wr, .max_sge = attr->max_sge, .srq_limit = attr->srq_limit};
  {
    Device::Lock lock(*d, 0);
    if (int rc = d->engine(0).create_srq(pd_of(ibpd)->id, &a, &srq->id); rc != 0) {
      delete srq;
      errno = -rc;
      return nullptr;
    }
  }
  srq->max_sge = a.max_sge;
  attr->max_wr = a.max_wr;  // what it got, as providers report it
  attr->max_sge = a.max_sge;
  ibv_srq& s = srq->srq;
  s.context = ibpd->context;
  s.srq_context = srq_context;
  s.pd = ibpd;
  s.handle = srq->id;
  init_event_sync(s);
  s.events_completed = 0;
  d->bind_srq(srq->id, srq);
  track(c, c->srqs, srq);
  return &s;
}

}  // namespace

int op_post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* srq = srq_of(ibsrq);
  Device* d = dev_of(ibsrq->context);
  Device::Lock lock(*d, 0);
  eng::Engine& e = d->engine(0);
  for (; wr != nullptr; wr = wr->next) {
    eng::RecvWr w;
    w.wr_id = wr->wr_id;
    w.sg_list = reinterpret_cast<const eng::Sge*>(wr->sg_list);
    w.num_sge = wr->num_sge;
    if (const int rc = -e.post_srq_recv(srq->id, &w, nullptr); rc != 0) {
      if (bad) *bad = wr;
      return rc;
    }
  }
  return 0;
}

ibv_srq* op_create_srq_ex(ibv_context* ctx, ibv_srq_init_attr_ex* attr) {
  // libibverbs calls this only for what ibv_create_srq cannot take: another
  // type, or more than a PD.
  const bool basic = !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) || attr->srq_type == IBV_SRQT_BASIC;
  if (!basic || (attr->comp_mask & ~(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ))) {
    errno = refuse(ctx, attr->srq_type == IBV_SRQT_XRC ? "ibv_create_srq_ex: XRC SRQs"
                        : attr->srq_type == IBV_SRQT_TM ? "ibv_create_srq_ex: tag-matching SRQs"
                                                        : "ibv_create_srq_ex: comp_mask beyond type and PD");
    return nullptr;
  }
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd == nullptr || attr->pd->context != ctx) {
    dev_of(ctx)->log(Config::Log::kError, "ibv_create_srq_ex: no PD of this context (IBV_SRQ_INIT_ATTR_PD)");
    errno = EINVAL;
    return nullptr;
  }
  return create_srq(attr->pd, attr->srq_context, &attr->attr);
}

int op_get_srq_num(ibv_srq* srq, uint32_t* srq_num) {
  *srq_num = srq_of(srq)->id;
  return 0;
}

int destroy_srq(Srq* srq, bool wait_events) {
  Device* d = dev_of(srq->srq.context);
  {
    Device::Lock lock(*d, 0);
    if (int rc = d->engine(0).destroy_srq(srq->id); rc != 0) {
      if (rc == -EBUSY) d->log(Config::Log::kError, "ibv_destroy_srq(SRQ %u): QPs still use it", srq->id);
      return -rc;
    }
  }
  d->unbind_srq(srq->id);
  Context* c = context_of(srq->srq.context);
  forget_events(c, [srq](const ibv_async_event& e) {
    return (e.event_type == IBV_EVENT_SRQ_LIMIT_REACHED || e.event_type == IBV_EVENT_SRQ_ERR) &&
           e.element.srq == &srq->srq;
  });
  if (wait_events) wait_acked(srq->srq, [srq] { return srq->srq.events_completed == srq->async_events_sent; });
  untrack(c, c->srqs, srq);
  destroy_event_sync(srq->srq);
  delete srq;
  return 0;
}

// ---------------------------------------------------------------- entry points

TITA_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_create_srq, "IBVERBS_1.1"), nullptr, pd, attr);
  return create_srq(pd, attr->srq_context, &attr->attr);
}

TITA_EXPORT int ibv_modify_srq(ibv_srq* ibsrq, ibv_srq_attr* attr, int attr_mask) {
  if (!Device::ours(ibsrq->context)) return forward(REAL(ibv_modify_srq, "IBVERBS_1.1"), EINVAL, ibsrq, attr, attr_mask);
  Srq* srq = srq_of(ibsrq);
  Device* d = dev_of(ibsrq->context);
  const auto mask = static_cast<uint32_t>(attr_mask);
  if (mask & ~static_cast<uint32_t>(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) {
    d->log(Config::Log::kError, "ibv_modify_srq(SRQ %u): attr_mask %#x: only IBV_SRQ_MAX_WR and IBV_SRQ_LIMIT exist",
           srq->id, mask);
    return EINVAL;
  }
  const eng::SrqAttr a{.max_wr = attr->max_wr, .max_sge = srq->max_sge, .srq_limit = attr->srq_limit};
  uint32_t m = 0;
  if (mask & IBV_SRQ_MAX_WR) m |= eng::kSrqMaxWr;
  if (mask & IBV_SRQ_LIMIT) m |= eng::kSrqLimit;
  std::string err;
  int rc;
  {
    Device::Lock lock(*d, 0);
    rc = d->engine(0).modify_srq(srq->id, a, m, &err);
  }
  if (rc != 0) {
    d->log(Config::Log::kError, "ibv_modify_srq(SRQ %u): %s", srq->id, err.c_str());
    return -rc;
  }
  return 0;
}

TITA_EXPORT int ibv_query_srq(ibv_srq* ibsrq, ibv_srq_attr* attr) {
  if (!Device::ours(ibsrq->context)) return forward(REAL(ibv_query_srq, "IBVERBS_1.1"), EINVAL, ibsrq, attr);
  Srq* srq = srq_of(ibsrq);
  Device* d = dev_of(ibsrq->context);
  eng::SrqAttr a;
  {
    Device::Lock lock(*d, 0);
    if (int rc = d->engine(0).query_srq(srq->id, &a); rc != 0) return -rc;
  }
  attr->max_wr = a.max_wr;
  attr->max_sge = a.max_sge;
  attr->srq_limit = a.srq_limit;
  return 0;
}

TITA_EXPORT int ibv_destroy_srq(ibv_srq* srq) {
  if (!Device::ours(srq->context)) return forward(REAL(ibv_destroy_srq, "IBVERBS_1.1"), EINVAL, srq);
  return destroy_srq(srq_of(srq), true);
}

}  // namespace tita::verbs
