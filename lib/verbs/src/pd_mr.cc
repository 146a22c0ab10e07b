// Protection domains and memory regions. Both exist on every lane (engine)
// with the same number and key, so an MR is good on any QP; ibv_dealloc_pd
// answers EBUSY from the context's own view before any lane is touched.
#include <cerrno>

#include "interpose.h"
#include "tita/engine/verbs.h"

namespace tita::verbs {
namespace {

ibv_mr* reg_mr(ibv_pd* ibpd, void* addr, size_t length, uint64_t iova, unsigned access) {
  Device* d = dev_of(ibpd->context);
  // Optional flags a device may ignore, ignored; hints that change nothing here
  // (on-demand paging: tita touches memory with the CPU, pinning nothing;
  // hugetlb) accepted; memory windows and the rest refused.
  access &= ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
  access &= ~static_cast<unsigned>(IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB);
  if (access & IBV_ACCESS_ZERO_BASED) {
    iova = 0;
    access &= ~static_cast<unsigned>(IBV_ACCESS_ZERO_BASED);
  }
  const unsigned unsupported = access & ~static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                              IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  if (unsupported != 0) {
    // What a provider lacks is EOPNOTSUPP (callers probe for it: rdma-core's
    // tests skip memory windows on that answer).
    d->log(Config::Log::kError, "ibv_reg_mr: access bits 0x%x (%s) are not supported", unsupported,
           (unsupported & IBV_ACCESS_MW_BIND) ? "memory windows" : "not a local/remote read/write/atomic right");
    errno = EOPNOTSUPP;
    return nullptr;
  }
  auto* mr = make<Mr>();
  if (mr == nullptr) return nullptr;
  // The same region on every lane, with the same key (an MR is good on any QP).
  eng::MrInfo info;
  uint32_t failed = 0;
  const int rc = d->on_every_lane(
      [&](eng::Engine& e, uint32_t k) {
        eng::MrInfo got;
        if (int r = e.reg_mr(pd_of(ibpd)->id, addr, length, iova, access, &got); r != 0) return r;
        if (k == 0) info = got;
        return got.lkey == info.lkey ? 0 : -EIO;  // cannot happen: every lane numbers alike
      },
      &failed);
  if (rc != 0) {
    for (uint32_t k = 0; k < failed; ++k) {
      Device::Lock lock(*d, k);
      d->engine(k).dereg_mr(info.lkey);
    }
    if (rc == -EIO) d->log(Config::Log::kError, "ibv_reg_mr: the engines gave the region different keys");
    delete mr;
    errno = -rc;
    return nullptr;
  }
  mr->mr.context = ibpd->context;
  mr->mr.pd = ibpd;
  mr->mr.addr = addr;
  mr->mr.length = length;
  mr->mr.handle = info.lkey;
  mr->mr.lkey = info.lkey;
  mr->mr.rkey = info.rkey;
  Context* c = context_of(ibpd->context);
  track(c, c->mrs, mr);
  return &mr->mr;
}

}  // namespace

// ---------------------------------------------------------------- destruction (also by ibv_close_device)

int dereg_mr(Mr* mr) {
  Device* d = dev_of(mr->mr.context);
  if (d->on_every_lane([mr](eng::Engine& e, uint32_t) { return e.dereg_mr(mr->mr.lkey); }) != 0) return EINVAL;
  Context* c = context_of(mr->mr.context);
  untrack(c, c->mrs, mr);
  delete mr;
  return 0;
}

int dealloc_pd(Pd* pd) {
  Device* d = dev_of(pd->pd.context);
  {
    Context* c = context_of(pd->pd.context);
    std::lock_guard lock(c->async_mu);
    for (const Qp* qp : c->qps) {
      if (qp->qp.pd == &pd->pd) return EBUSY;
    }
    for (const Mr* mr : c->mrs) {
      if (mr->mr.pd == &pd->pd) return EBUSY;
    }
  }
  if (int rc = d->on_every_lane([pd](eng::Engine& e, uint32_t) { return e.dealloc_pd(pd->id); }); rc != 0) {
    return -rc;
  }
  Context* c = context_of(pd->pd.context);
  untrack(c, c->pds, pd);
  delete pd;
  return 0;
}

// ---------------------------------------------------------------- protection domains and regions

TITA_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_alloc_pd, "IBVERBS_1.1"), nullptr, ctx);
  Device* d = dev_of(ctx);
  auto* pd = make<Pd>();
  if (pd == nullptr) return nullptr;
  d->on_every_lane([pd](eng::Engine& e, uint32_t k) {
    const uint32_t id = e.alloc_pd();
    if (k == 0) pd->id = id;
    return id == pd->id ? 0 : -EIO;  // every lane numbers alike
  });
  pd->pd.context = ctx;
  pd->pd.handle = pd->id;
  Context* c = context_of(ctx);
  track(c, c->pds, pd);
  return &pd->pd;
}

TITA_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_dealloc_pd, "IBVERBS_1.1"), EINVAL, pd);
  return dealloc_pd(pd_of(pd));
}

TITA_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_reg_mr, "IBVERBS_1.1"), nullptr, pd, addr, length, access);
  return reg_mr(pd, addr, length, reinterpret_cast<uint64_t>(addr), static_cast<unsigned>(access));
}

TITA_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  if (!Device::ours(pd->context)) {
    return forward(REAL(ibv_reg_mr_iova, "IBVERBS_1.7"), nullptr, pd, addr, length, iova, access);
  }
  return reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

TITA_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (!Device::ours(pd->context)) {
    return forward(REAL(ibv_reg_mr_iova2, "IBVERBS_1.8"), nullptr, pd, addr, length, iova, access);
  }
  return reg_mr(pd, addr, length, iova, access);
}

TITA_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  if (!Device::ours(mr->context)) return forward(REAL(ibv_dereg_mr, "IBVERBS_1.1"), EINVAL, mr);
  return dereg_mr(reinterpret_cast<Mr*>(mr));
}

}  // namespace tita::verbs
