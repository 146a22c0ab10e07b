// RC and UD queue pairs: creation (on one lane, in turn), ibv_modify_qp (the
// engine checks every transition against the IBA table; here only what
// libibverbs' structs can say that a RoCE device refuses), ibv_query_qp,
// destruction, and posting work requests (ibv_post_send rings the doorbell).
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>

#include "interpose.h"
#include "tita/engine/verbs.h"

namespace tita::verbs {
namespace {

// The attributes libibverbs and the engine name and encode alike, copied as
// they are: into the engine (ibv_modify_qp) and back (ibv_query_qp).
template <typename From, typename To>
void copy_same_attrs(const From& from, To* to) {
  to->pkey_index = from.pkey_index;
  to->rq_psn = from.rq_psn;
  to->sq_psn = from.sq_psn;
  to->dest_qp_num = from.dest_qp_num;
  to->timeout = from.timeout;
  to->retry_cnt = from.retry_cnt;
  to->rnr_retry = from.rnr_retry;
  to->min_rnr_timer = from.min_rnr_timer;
  to->max_rd_atomic = from.max_rd_atomic;
  to->max_dest_rd_atomic = from.max_dest_rd_atomic;
}

ibv_qp* create_qp(ibv_pd* ibpd, ibv_qp_init_attr* attr, bool gsi = false) {
  Device* d = dev_of(ibpd->context);
  Context* c = context_of(ibpd->context);
  if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD) {
    d->log(Config::Log::kError, "ibv_create_qp: QP type %d: tita has RC and UD QPs", attr->qp_type);
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (attr->srq != nullptr && (!Device::ours(attr->srq->context) || attr->srq->pd != ibpd)) {
    d->log(Config::Log::kError, "ibv_create_qp: the SRQ is not of this device and PD");
    errno = EINVAL;
    return nullptr;
  }
  if (attr->send_cq == nullptr || attr->recv_cq == nullptr || !Device::ours(attr->send_cq->context) ||
      !Device::ours(attr->recv_cq->context) || attr->cap.max_send_sge > eng::kMaxSge ||
      attr->cap.max_recv_sge > eng::kMaxSge || attr->cap.max_inline_data > eng::kMaxInlineData ||
      attr->cap.max_send_wr > kMaxWr || (attr->srq == nullptr && attr->cap.max_recv_wr > kMaxWr)) {
    // Only the inline size too large: UCX asks for less and less until a QP
    // is made (its way of finding the most), so that is said at info level.
    const bool inline_only = attr->send_cq != nullptr && attr->recv_cq != nullptr &&
                             Device::ours(attr->send_cq->context) && Device::ours(attr->recv_cq->context) &&
                             attr->cap.max_send_sge <= eng::kMaxSge && attr->cap.max_recv_sge <= eng::kMaxSge &&
                             attr->cap.max_send_wr <= kMaxWr && attr->cap.max_recv_wr <= kMaxWr;
    d->log(inline_only ? Config::Log::kInfo : Config::Log::kError,
           "ibv_create_qp: caps beyond the device: asked %u/%u WRs, %u/%u SGEs, %u bytes inline (send/receive; "
           "the most: %u WRs, %u SGEs, %u bytes inline)",
           attr->cap.max_send_wr, attr->cap.max_recv_wr, attr->cap.max_send_sge, attr->cap.max_recv_sge,
           attr->cap.max_inline_data, kMaxWr, eng::kMaxSge, eng::kMaxInlineData);
    errno = EINVAL;
    return nullptr;
  }
  eng::QpInitAttr init;
  init.qp_type = attr->qp_type == IBV_QPT_UD ? eng::QpType::kUd : eng::QpType::kRc;
  init.send_cq = cq_of(attr->send_cq)->id;
  init.recv_cq = cq_of(attr->recv_cq)->id;
  init.max_send_wr = attr->cap.max_send_wr;
  init.max_recv_wr = attr->cap.max_recv_wr;
  init.max_sge = std::max<uint32_t>({attr->cap.max_send_sge, attr->cap.max_recv_sge, 1});
  init.max_inline_data = attr->cap.max_inline_data;
  init.sq_sig_all = attr->sq_sig_all != 0;
  init.gsi = gsi;
  if (attr->srq != nullptr) {
    init.srq = srq_of(attr->srq)->id;  // its receives come from the SRQ: max_recv_wr is ignored
    init.max_recv_wr = 1;
  }
  auto* qp = make<Qp>();
  if (qp == nullptr) return nullptr;
  qp->lane = attr->srq != nullptr || gsi ? 0 : d->next_qp_lane();  // with its SRQ's engine; QP 1 on lane 0
  {
    Device::Lock lock(*d, qp->lane);
    eng::Engine& e = d->engine(qp->lane);
    if (int rc = e.create_qp(pd_of(ibpd)->id, &init, &qp->qpn); rc != 0) {
      delete qp;
      errno = -rc;
      return nullptr;
    }
    std::string err;
    if (int rc = e.set_cc(qp->qpn, d->config().cc, d->config().cc_params, &err); rc != 0) {
      e.destroy_qp(qp->qpn);
      d->log(Config::Log::kError, "cc %s: %s", d->config().cc.c_str(), err.c_str());
      delete qp;
      errno = -rc;
      return nullptr;
    }
  }
  qp->cap.max_send_wr = init.max_send_wr;
  qp->cap.max_recv_wr = init.max_recv_wr;
  qp->cap.max_send_sge = init.max_sge;
  qp->cap.max_recv_sge = init.max_sge;
  qp->cap.max_inline_data = init.max_inline_data;
  qp->sq_sig_all = init.sq_sig_all;
  attr->cap = qp->cap;  // what the QP got, as providers report it
  ibv_qp& q = qp->qp;
  q.context = ibpd->context;
  q.qp_context = attr->qp_context;
  q.pd = ibpd;
  q.send_cq = attr->send_cq;
  q.recv_cq = attr->recv_cq;
  q.srq = attr->srq;
  q.handle = qp->qpn;
  q.qp_num = qp->qpn;
  q.state = IBV_QPS_RESET;
  q.qp_type = attr->qp_type;
  init_event_sync(q);
  q.events_completed = 0;
  d->bind_qp(qp->qpn, qp);
  track(c, c->qps, qp);
  return &q;
}

}  // namespace

// ---------------------------------------------------------------- the ops libibverbs calls inline

int op_post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = qp_of(ibqp);
  Device* d = dev_of(ibqp->context);
  Device::Lock lock(*d, qp->lane);
  eng::Engine& e = d->engine(qp->lane);
  int rc = 0;
  for (; wr != nullptr; wr = wr->next) {
    eng::SendWr w;
    w.wr_id = wr->wr_id;
    w.sg_list = reinterpret_cast<const eng::Sge*>(wr->sg_list);
    w.num_sge = wr->num_sge;
    if (wr->opcode > IBV_WR_ATOMIC_FETCH_AND_ADD || wr->num_sge > static_cast<int>(qp->cap.max_send_sge) ||
        (wr->send_flags & ~(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE)) != 0) {
      rc = EINVAL;  // memory windows, local invalidate, TSO, IP checksum: not on an RC QP of tita
    } else {
      w.opcode = static_cast<eng::WrOpcode>(wr->opcode);
      w.send_flags = wr->send_flags;
      w.imm_data = ntohl(wr->imm_data);
      if (ibqp->qp_type == IBV_QPT_UD) {
        rc = ud_send_wr(qp, wr, &w);
      } else if (eng::is_atomic(w.opcode)) {
        w.atomic.remote_addr = wr->wr.atomic.remote_addr;
        w.atomic.compare_add = wr->wr.atomic.compare_add;
        w.atomic.swap = wr->wr.atomic.swap;
        w.atomic.rkey = wr->wr.atomic.rkey;
      } else {
        w.rdma.remote_addr = wr->wr.rdma.remote_addr;
        w.rdma.rkey = wr->wr.rdma.rkey;
      }
      if (rc == 0) rc = -e.post_send(qp->qpn, &w, nullptr);
    }
    if (rc != 0) {
      d->log(Config::Log::kDebug, "ibv_post_send(QP %#x): %s: opcode %d, %d SGEs, flags %#x", qp->qpn, strerror(rc),
             wr->opcode, wr->num_sge, wr->send_flags);
      if (bad) *bad = wr;
      break;
    }
  }
  doorbell(d, qp->lane);
  return rc;
}

int op_post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = qp_of(ibqp);
  Device* d = dev_of(ibqp->context);
  Device::Lock lock(*d, qp->lane);
  eng::Engine& e = d->engine(qp->lane);
  for (; wr != nullptr; wr = wr->next) {
    eng::RecvWr w;
    w.wr_id = wr->wr_id;
    w.sg_list = reinterpret_cast<const eng::Sge*>(wr->sg_list);
    w.num_sge = wr->num_sge;
    int rc = wr->num_sge > static_cast<int>(qp->cap.max_recv_sge) ? EINVAL : -e.post_recv(qp->qpn, &w, nullptr);
    if (rc != 0) {
      if (bad) *bad = wr;
      return rc;
    }
  }
  return 0;
}

// The send opcodes of the extended API that tita's RC QPs carry.
constexpr uint64_t kSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_SEND |
                              IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ |
                              IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

ibv_qp* op_create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
  // What ibv_create_qp offers, create flags of none, and the send-ops flags
  // of the opcodes above (the ibv_wr_* API, qp_ex.cc).
  const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD)) {
    dev_of(ctx)->log(Config::Log::kError, "ibv_create_qp_ex: no PD (comp_mask lacks IBV_QP_INIT_ATTR_PD)");
    errno = EINVAL;
    return nullptr;
  }
  if (attr->comp_mask & ~known) {
    errno = refuse(ctx, (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) ? "ibv_create_qp_ex: XRC domains"
                        : (attr->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH))
                            ? "ibv_create_qp_ex: RSS (indirection tables, RX hash)"
                            : "ibv_create_qp_ex: comp_mask beyond PD, create flags and send-ops flags (TSO, ...)");
    return nullptr;
  }
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags != 0) {
    errno = refuse(ctx, "ibv_create_qp_ex: create_flags (scatter FCS, CVLAN stripping, source QPN, ...)");
    return nullptr;
  }
  const bool send_ops = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (send_ops && (attr->send_ops_flags & ~kSendOps) != 0) {
    errno = refuse(ctx, "ibv_create_qp_ex: send_ops_flags beyond WRITE, WRITE_WITH_IMM, SEND, SEND_WITH_IMM, READ "
                        "and the two atomics (memory windows, local invalidate, TSO, atomic write)");
    return nullptr;
  }
  ibv_qp_init_attr a{.qp_context = attr->qp_context, .send_cq = attr->send_cq, .recv_cq = attr->recv_cq,
                     .srq = attr->srq, .cap = attr->cap, .qp_type = attr->qp_type, .sq_sig_all = attr->sq_sig_all};
  ibv_qp* qp = create_qp(attr->pd, &a);
  if (qp == nullptr) return nullptr;
  attr->cap = a.cap;
  if (send_ops) enable_qp_ex(qp_of(qp));
  return qp;
}

// ---------------------------------------------------------------- destruction (also by ibv_close_device)

int destroy_qp(Qp* qp, bool wait_events) {
  Device* d = dev_of(qp->qp.context);
  {
    Device::Lock lock(*d, qp->lane);
    d->report_qp(qp->lane, qp->qpn);
    if (int rc = d->engine(qp->lane).destroy_qp(qp->qpn); rc != 0) return -rc;
  }
  d->unbind_qp(qp->qpn);
  forget_events(context_of(qp->qp.context), [qp](const ibv_async_event& e) {
    return e.event_type != IBV_EVENT_CQ_ERR && e.event_type != IBV_EVENT_PORT_ACTIVE &&
           e.event_type != IBV_EVENT_PORT_ERR && e.element.qp == &qp->qp;
  });
  if (wait_events) {
    // As libibverbs does: every asynchronous event reported for it is acknowledged first.
    wait_acked(qp->qp, [qp] { return qp->qp.events_completed == qp->async_events_sent; });
  }
  Context* c = context_of(qp->qp.context);
  untrack(c, c->qps, qp);
  destroy_event_sync(qp->qp);
  release_qp_ex(qp);
  delete qp;
  return 0;
}

// ---------------------------------------------------------------- queue pairs

ibv_qp* create_gsi_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  attr->qp_type = IBV_QPT_UD;
  return create_qp(pd, attr, true);
}

TITA_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_create_qp, "IBVERBS_1.1"), nullptr, pd, attr);
  return create_qp(pd, attr);
}

TITA_EXPORT int ibv_modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask) {
  if (!Device::ours(ibqp->context)) return forward(REAL(ibv_modify_qp, "IBVERBS_1.1"), EINVAL, ibqp, attr, attr_mask);
  Qp* qp = qp_of(ibqp);
  Device* d = dev_of(ibqp->context);
  const auto mask = static_cast<uint32_t>(attr_mask);
  auto refuse = [&](const char* why) {
    d->log(Config::Log::kError, "ibv_modify_qp(QP %#x): %s", qp->qpn, why);
    return EINVAL;
  };
  eng::QpAttr a;
  a.qp_state = static_cast<eng::QpState>(attr->qp_state);
  a.cur_qp_state = static_cast<eng::QpState>(attr->cur_qp_state);
  a.qp_access_flags = static_cast<uint32_t>(attr->qp_access_flags) & ~static_cast<uint32_t>(IBV_ACCESS_MW_BIND);
  a.port_num = attr->port_num;
  a.qkey = attr->qkey;
  copy_same_attrs(*attr, &a);
  if ((mask & IBV_QP_STATE) && attr->qp_state > IBV_QPS_ERR) return refuse("qp_state is not a QP state");
  if (mask & IBV_QP_PATH_MTU) {
    a.path_mtu = mtu_bytes(attr->path_mtu);
    if (a.path_mtu == 0) return refuse("path_mtu is not an ibv_mtu (IBV_MTU_256 .. IBV_MTU_4096)");
  }
  if (mask & IBV_QP_AV) {
    const ibv_ah_attr& ah = attr->ah_attr;
    if (!ah.is_global) {
      return refuse("RoCE address vectors need a GRH: ah_attr.is_global = 1 with the peer's GID "
                    "(ibv_rc_pingpong: -g 0)");
    }
    if (ah.grh.sgid_index != 0) return refuse("ah_attr.grh.sgid_index: the GID table has one entry (index 0)");
    if (ah.port_num != 1) return refuse("ah_attr.port_num: the device has one port (1)");
    std::memcpy(a.ah_attr.dgid.raw, ah.grh.dgid.raw, 16);
    a.ah_attr.traffic_class = ah.grh.traffic_class;
    a.ah_attr.hop_limit = ah.grh.hop_limit;
    if (ah.grh.flow_label != 0) a.ah_attr.udp_sport = udp_sport_of_flow_label(ah.grh.flow_label);
    // The MAC stays zero: the engine resolves the GID's address (ARP), as a kernel does.
    qp->sgid_index = ah.grh.sgid_index;
    qp->sl = ah.sl;
    qp->flow_label = ah.grh.flow_label;
  }
  uint32_t m = mask;
  const bool ud = ibqp->qp_type == IBV_QPT_UD;
  if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR && d->config().selective_repeat && !ud) {
    a.recovery = eng::Recovery::kSelectiveRepeat;
    m |= eng::kQpRecovery;
  }
  std::string err;
  int rc;
  {
    Device::Lock lock(*d, qp->lane);
    rc = d->engine(qp->lane).modify_qp(qp->qpn, a, m, &err);
    if (rc == 0 && !ud && d->lanes() > 1 && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR) {
      // Several engines: the peer's frames for this QP straight to its
      // engine's queue where the port has rte_flow; otherwise they come by
      // RSS or queue pairing, and the inbox hands over what lands elsewhere.
      std::string why;
      if (d->steer_qp(qp->lane, qp->qpn, attr->dest_qp_num, &why) != 0) {
        d->log(Config::Log::kDebug, "QP %#x: no flow rule (%s): frames reach its engine by the inbox", qp->qpn,
               why.c_str());
      }
    }
  }
  if (rc != 0) {
    const std::string_view why = std::string_view(err).starts_with("modify_qp: ") ? std::string_view(err).substr(11)
                                                                                   : std::string_view(err);
    d->log(Config::Log::kError, "ibv_modify_qp(QP %#x): %.*s", qp->qpn, static_cast<int>(why.size()), why.data());
    return -rc;
  }
  if (mask & IBV_QP_STATE) ibqp->state = attr->qp_state;
  return 0;
}

TITA_EXPORT int ibv_query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
  if (!Device::ours(ibqp->context)) {
    return forward(REAL(ibv_query_qp, "IBVERBS_1.1"), EINVAL, ibqp, attr, attr_mask, init_attr);
  }
  Qp* qp = qp_of(ibqp);
  Device* d = dev_of(ibqp->context);
  eng::QpAttr a;
  {
    Device::Lock lock(*d, qp->lane);
    if (int rc = d->engine(qp->lane).query_qp(qp->qpn, &a); rc != 0) return -rc;
  }
  std::memset(attr, 0, sizeof *attr);
  attr->qp_state = static_cast<ibv_qp_state>(a.qp_state);
  attr->cur_qp_state = attr->qp_state;
  attr->path_mtu = mtu_enum(a.path_mtu);
  attr->path_mig_state = IBV_MIG_MIGRATED;
  copy_same_attrs(a, attr);
  attr->qp_access_flags = static_cast<int>(a.qp_access_flags);
  attr->qkey = a.qkey;
  attr->cap = qp->cap;
  attr->ah_attr.is_global = 1;
  std::memcpy(attr->ah_attr.grh.dgid.raw, a.ah_attr.dgid.raw, 16);
  attr->ah_attr.grh.sgid_index = qp->sgid_index;
  attr->ah_attr.grh.hop_limit = a.ah_attr.hop_limit;
  attr->ah_attr.grh.traffic_class = a.ah_attr.traffic_class;
  attr->ah_attr.grh.flow_label = qp->flow_label;
  attr->ah_attr.sl = qp->sl;
  attr->ah_attr.port_num = 1;
  attr->port_num = 1;
  if (init_attr != nullptr) {
    std::memset(init_attr, 0, sizeof *init_attr);
    init_attr->qp_context = ibqp->qp_context;
    init_attr->send_cq = ibqp->send_cq;
    init_attr->recv_cq = ibqp->recv_cq;
    init_attr->srq = ibqp->srq;
    init_attr->cap = qp->cap;
    init_attr->qp_type = ibqp->qp_type;
    init_attr->sq_sig_all = qp->sq_sig_all ? 1 : 0;
  }
  if (attr_mask & IBV_QP_STATE) ibqp->state = attr->qp_state;
  return 0;
}

TITA_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_destroy_qp, "IBVERBS_1.1"), EINVAL, qp);
  return destroy_qp(qp_of(qp), true);
}

TITA_EXPORT int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  if (!Device::ours(qp->context)) return forward(REAL(ibv_query_qp_data_in_order, "IBVERBS_1.14"), 0, qp, op, flags);
  // Payload is placed in PSN order (selective repeat places kept packets in order too).
  return 1;
}

}  // namespace tita::verbs
