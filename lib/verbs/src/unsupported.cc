// What RC QPs on tita do not have, answered as an rdma-core provider answers
// for an op it lacks (EOPNOTSUPP, which callers probe for): shared receive
// queues, address handles (UD), multicast, the extended send API, ECE,
// re-registration, dma-buf regions, imported objects. Each moves to a file of
// its own when tita gains it.
#include <cerrno>

#include "interpose.h"

namespace tita::verbs {

int op_post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  if (bad) *bad = wr;
  return EOPNOTSUPP;
}

// ---------------------------------------------------------------- what RC QPs on tita do not have

TITA_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_create_srq, "IBVERBS_1.1"), nullptr, pd, attr);
  dev_of(pd->context)->log(Config::Log::kError, "ibv_create_srq: shared receive queues are not supported");
  errno = EOPNOTSUPP;
  return nullptr;
}

TITA_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_create_ah, "IBVERBS_1.1"), nullptr, pd, attr);
  errno = EOPNOTSUPP;  // address handles serve UD QPs; tita has RC QPs only
  return nullptr;
}

TITA_EXPORT int ibv_init_ah_from_wc(ibv_context* ctx, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                                    ibv_ah_attr* ah_attr) {
  if (!Device::ours(ctx)) {
    return forward(REAL(ibv_init_ah_from_wc, "IBVERBS_1.1"), EOPNOTSUPP, ctx, port, wc, grh, ah_attr);
  }
  return EOPNOTSUPP;
}

TITA_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  if (!Device::ours(pd->context)) {
    return forward(REAL(ibv_create_ah_from_wc, "IBVERBS_1.1"), nullptr, pd, wc, grh, port);
  }
  errno = EOPNOTSUPP;
  return nullptr;
}

TITA_EXPORT int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_attach_mcast, "IBVERBS_1.1"), EOPNOTSUPP, qp, gid, lid);
  return EOPNOTSUPP;  // multicast is for UD QPs
}

TITA_EXPORT int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_detach_mcast, "IBVERBS_1.1"), EOPNOTSUPP, qp, gid, lid);
  return EOPNOTSUPP;
}

TITA_EXPORT ibv_pd* ibv_import_pd(ibv_context* ctx, uint32_t handle) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_import_pd, "IBVERBS_1.10"), nullptr, ctx, handle);
  errno = EOPNOTSUPP;  // objects live in one process
  return nullptr;
}

TITA_EXPORT ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t handle) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_import_mr, "IBVERBS_1.10"), nullptr, pd, handle);
  errno = EOPNOTSUPP;
  return nullptr;
}

TITA_EXPORT ibv_dm* ibv_import_dm(ibv_context* ctx, uint32_t handle) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_import_dm, "IBVERBS_1.13"), nullptr, ctx, handle);
  errno = EOPNOTSUPP;
  return nullptr;
}

// ---------------------------------------------------------------- regions

TITA_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  if (!Device::ours(pd->context)) {
    return forward(REAL(ibv_reg_dmabuf_mr, "IBVERBS_1.12"), nullptr, pd, offset, length, iova, fd, access);
  }
  errno = EOPNOTSUPP;  // device memory of another device: not for a CPU-driven NIC
  return nullptr;
}

TITA_EXPORT int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if (!Device::ours(mr->context)) {
    return forward(REAL(ibv_rereg_mr, "IBVERBS_1.1"), IBV_REREG_MR_ERR_INPUT, mr, flags, pd, addr, length, access);
  }
  errno = EOPNOTSUPP;
  return IBV_REREG_MR_ERR_INPUT;
}

// ---------------------------------------------------------------- queue pairs

TITA_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_qp_to_qp_ex, "IBVERBS_1.6"), nullptr, qp);
  return nullptr;  // no extended (ibv_wr_*) send API: create_qp_ex refuses send-ops flags
}

TITA_EXPORT int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_query_ece, "IBVERBS_1.10"), EOPNOTSUPP, qp, ece);
  return EOPNOTSUPP;
}

TITA_EXPORT int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_set_ece, "IBVERBS_1.10"), EOPNOTSUPP, qp, ece);
  return EOPNOTSUPP;
}

}  // namespace tita::verbs
