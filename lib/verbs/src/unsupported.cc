// What tita does not have, answered as an rdma-core provider answers for an
// op it lacks: EOPNOTSUPP (which callers probe for), and one line on stderr
// naming what was asked (at the default log level), never EINVAL, never
// silence. Multicast, memory
// windows, XRC, work queues and RSS, flow steering, device memory, thread and
// parent domains, ECE, re-registration, dma-buf regions, imported objects.
// Each moves to a file of its own when tita gains it (as the extended verbs
// did: qp_ex.cc, cq_ex.cc).
#include <cerrno>
#include <type_traits>

#include "interpose.h"

namespace tita::verbs {

int refuse(ibv_context* ctx, const char* what) {
  dev_of(ctx)->log(Config::Log::kError, "%s: not supported by tita", what);
  return EOPNOTSUPP;
}

namespace {

// The object-returning form: NULL with errno.
template <typename T>
T* refuse_object(ibv_context* ctx, const char* what) {
  errno = refuse(ctx, what);
  return nullptr;
}

}  // namespace

void refuse_missing_ops(verbs_context& v) {
  ibv_context_ops& ops = v.context.ops;
  ops.alloc_mw = [](ibv_pd* pd, ibv_mw_type) { return refuse_object<ibv_mw>(pd->context, "ibv_alloc_mw (memory windows)"); };
  ops.bind_mw = [](ibv_qp* qp, ibv_mw*, ibv_mw_bind*) { return refuse(qp->context, "ibv_bind_mw (memory windows)"); };
  ops.dealloc_mw = [](ibv_mw* mw) { return refuse(mw->context, "ibv_dealloc_mw (memory windows)"); };
  v.open_xrcd = [](ibv_context* c, ibv_xrcd_init_attr*) { return refuse_object<ibv_xrcd>(c, "ibv_open_xrcd (XRC)"); };
  v.open_qp = [](ibv_context* c, ibv_qp_open_attr*) { return refuse_object<ibv_qp>(c, "ibv_open_qp (XRC)"); };
  v.ibv_create_flow = [](ibv_qp* qp, ibv_flow_attr*) {
    return refuse_object<ibv_flow>(qp->context, "ibv_create_flow (flow steering)");
  };
  v.query_rt_values = [](ibv_context* c, ibv_values_ex*) {
    return refuse(c, "ibv_query_rt_values_ex (the device's clock)");
  };
  v.create_wq = [](ibv_context* c, ibv_wq_init_attr*) { return refuse_object<ibv_wq>(c, "ibv_create_wq (work queues)"); };
  v.create_rwq_ind_table = [](ibv_context* c, ibv_rwq_ind_table_init_attr*) {
    return refuse_object<ibv_rwq_ind_table>(c, "ibv_create_rwq_ind_table (RSS)");
  };
  v.modify_cq = [](ibv_cq* cq, ibv_modify_cq_attr*) { return refuse(cq->context, "ibv_modify_cq (CQ moderation)"); };
  v.alloc_td = [](ibv_context* c, ibv_td_init_attr*) { return refuse_object<ibv_td>(c, "ibv_alloc_td (thread domains)"); };
  v.alloc_parent_domain = [](ibv_context* c, ibv_parent_domain_init_attr*) {
    return refuse_object<ibv_pd>(c, "ibv_alloc_parent_domain");
  };
  v.modify_qp_rate_limit = [](ibv_qp* qp, ibv_qp_rate_limit_attr*) {
    return refuse(qp->context, "ibv_modify_qp_rate_limit (a QP's rate is its congestion control's)");
  };
  v.create_flow_action_esp = [](ibv_context* c, ibv_flow_action_esp_attr*) {
    return refuse_object<ibv_flow_action>(c, "ibv_create_flow_action_esp (IPsec)");
  };
  v.alloc_dm = [](ibv_context* c, ibv_alloc_dm_attr*) { return refuse_object<ibv_dm>(c, "ibv_alloc_dm (device memory)"); };
  v.create_counters = [](ibv_context* c, ibv_counters_init_attr*) {
    return refuse_object<ibv_counters>(c, "ibv_create_counters (flow counters)");
  };
  v.alloc_null_mr = [](ibv_pd* pd) { return refuse_object<ibv_mr>(pd->context, "ibv_alloc_null_mr"); };
  v.advise_mr = [](ibv_pd* pd, ibv_advise_mr_advice, uint32_t, ibv_sge*, uint32_t) {
    return refuse(pd->context, "ibv_advise_mr (on-demand paging prefetch)");
  };
}

// ---------------------------------------------------------------- what RC QPs on tita do not have

TITA_EXPORT int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_attach_mcast, "IBVERBS_1.1"), EOPNOTSUPP, qp, gid, lid);
  return refuse(qp->context, "ibv_attach_mcast (multicast, for UD QPs)");
}

TITA_EXPORT int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_detach_mcast, "IBVERBS_1.1"), EOPNOTSUPP, qp, gid, lid);
  return refuse(qp->context, "ibv_detach_mcast (multicast, for UD QPs)");
}

TITA_EXPORT ibv_pd* ibv_import_pd(ibv_context* ctx, uint32_t handle) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_import_pd, "IBVERBS_1.10"), nullptr, ctx, handle);
  errno = refuse(ctx, "ibv_import_pd (objects live in one process)");
  return nullptr;
}

TITA_EXPORT ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t handle) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_import_mr, "IBVERBS_1.10"), nullptr, pd, handle);
  errno = refuse(pd->context, "ibv_import_mr (objects live in one process)");
  return nullptr;
}

TITA_EXPORT ibv_dm* ibv_import_dm(ibv_context* ctx, uint32_t handle) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_import_dm, "IBVERBS_1.13"), nullptr, ctx, handle);
  errno = refuse(ctx, "ibv_import_dm (device memory)");
  return nullptr;
}

// ---------------------------------------------------------------- regions

TITA_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  if (!Device::ours(pd->context)) {
    return forward(REAL(ibv_reg_dmabuf_mr, "IBVERBS_1.12"), nullptr, pd, offset, length, iova, fd, access);
  }
  // Device memory of another device: not for a NIC that the CPU drives.
  errno = refuse(pd->context, "ibv_reg_dmabuf_mr (dma-buf regions)");
  return nullptr;
}

TITA_EXPORT int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if (!Device::ours(mr->context)) {
    return forward(REAL(ibv_rereg_mr, "IBVERBS_1.1"), IBV_REREG_MR_ERR_INPUT, mr, flags, pd, addr, length, access);
  }
  errno = refuse(mr->context, "ibv_rereg_mr");
  return IBV_REREG_MR_ERR_INPUT;
}

// ---------------------------------------------------------------- queue pairs

TITA_EXPORT int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_query_ece, "IBVERBS_1.10"), EOPNOTSUPP, qp, ece);
  // librdmacm asks on every connection whatever the program wants: said at info level.
  dev_of(qp->context)->log(Config::Log::kInfo, "ibv_query_ece (enhanced connection establishment): not supported by tita");
  return EOPNOTSUPP;
}

TITA_EXPORT int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_set_ece, "IBVERBS_1.10"), EOPNOTSUPP, qp, ece);
  dev_of(qp->context)->log(Config::Log::kInfo, "ibv_set_ece (enhanced connection establishment): not supported by tita");
  return EOPNOTSUPP;
}

}  // namespace tita::verbs
