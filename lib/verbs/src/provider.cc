// libibverbs' public entry points, interposed (LD_PRELOAD, libtita-verbs.map
// gives them libibverbs' own symbol versions). Each one checks whether its
// object belongs to the tita device: if so it serves it from the engine, if not
// it calls the real libibverbs, which stays loaded for everything else
// (providers such as libmlx5 use its private ABI). The calls libibverbs makes
// inline (ibv_post_send, ibv_poll_cq, ibv_post_recv, ibv_req_notify_cq,
// ibv_query_port, ibv_query_device_ex, ibv_create_qp_ex) go through the context's
// ops tables, which point here.
//
// Conventions, as rdma-core's: functions that return objects set errno and
// return NULL; the others return an errno value (positive), except those that
// rdma-core documents as returning -1.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>

#include "device.h"
#include "tita/engine/verbs.h"

#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define TITA_EXPORT extern "C" __attribute__((visibility("default")))

namespace tita::verbs {
namespace {

namespace eng = tita::engine;

// ---------------------------------------------------------------- the same numbers

static_assert(static_cast<int>(eng::WrOpcode::kRdmaWrite) == IBV_WR_RDMA_WRITE);
static_assert(static_cast<int>(eng::WrOpcode::kRdmaWriteWithImm) == IBV_WR_RDMA_WRITE_WITH_IMM);
static_assert(static_cast<int>(eng::WrOpcode::kSend) == IBV_WR_SEND);
static_assert(static_cast<int>(eng::WrOpcode::kSendWithImm) == IBV_WR_SEND_WITH_IMM);
static_assert(static_cast<int>(eng::WrOpcode::kRdmaRead) == IBV_WR_RDMA_READ);
static_assert(static_cast<int>(eng::WrOpcode::kAtomicCmpAndSwp) == IBV_WR_ATOMIC_CMP_AND_SWP);
static_assert(static_cast<int>(eng::WrOpcode::kAtomicFetchAndAdd) == IBV_WR_ATOMIC_FETCH_AND_ADD);
constexpr unsigned u(auto v) { return static_cast<unsigned>(v); }
static_assert(u(eng::kSendFence) == IBV_SEND_FENCE && u(eng::kSendSignaled) == IBV_SEND_SIGNALED &&
              u(eng::kSendSolicited) == IBV_SEND_SOLICITED && u(eng::kSendInline) == IBV_SEND_INLINE);
static_assert(u(eng::kAccessLocalWrite) == IBV_ACCESS_LOCAL_WRITE && u(eng::kAccessRemoteWrite) == IBV_ACCESS_REMOTE_WRITE &&
              u(eng::kAccessRemoteRead) == IBV_ACCESS_REMOTE_READ &&
              u(eng::kAccessRemoteAtomic) == IBV_ACCESS_REMOTE_ATOMIC);
static_assert(static_cast<int>(eng::WcStatus::kLocProtErr) == IBV_WC_LOC_PROT_ERR);
static_assert(static_cast<int>(eng::WcStatus::kWrFlushErr) == IBV_WC_WR_FLUSH_ERR);
static_assert(static_cast<int>(eng::WcStatus::kRemAccessErr) == IBV_WC_REM_ACCESS_ERR);
static_assert(static_cast<int>(eng::WcStatus::kRetryExcErr) == IBV_WC_RETRY_EXC_ERR);
static_assert(static_cast<int>(eng::WcStatus::kRnrRetryExcErr) == IBV_WC_RNR_RETRY_EXC_ERR);
static_assert(static_cast<int>(eng::WcOpcode::kCompSwap) == IBV_WC_COMP_SWAP);
static_assert(static_cast<int>(eng::WcOpcode::kRecvRdmaWithImm) == IBV_WC_RECV_RDMA_WITH_IMM);
static_assert(static_cast<int>(eng::QpState::kError) == IBV_QPS_ERR && static_cast<int>(eng::QpState::kRts) == IBV_QPS_RTS);
static_assert(u(eng::kQpState) == IBV_QP_STATE && u(eng::kQpAv) == IBV_QP_AV && u(eng::kQpDestQpn) == IBV_QP_DEST_QPN &&
              u(eng::kQpMaxDestRdAtomic) == IBV_QP_MAX_DEST_RD_ATOMIC && u(eng::kQpRateLimit) == IBV_QP_RATE_LIMIT &&
              u(eng::kQpCap) == IBV_QP_CAP && u(eng::kQpPathMigState) == IBV_QP_PATH_MIG_STATE &&
              u(eng::kQpMinRnrTimer) == IBV_QP_MIN_RNR_TIMER && u(eng::kQpSqPsn) == IBV_QP_SQ_PSN);
// ibv_sge and the engine's Sge are the same 16 bytes: SGE lists pass through.
static_assert(sizeof(eng::Sge) == sizeof(ibv_sge) && offsetof(eng::Sge, addr) == offsetof(ibv_sge, addr) &&
              offsetof(eng::Sge, length) == offsetof(ibv_sge, length) &&
              offsetof(eng::Sge, lkey) == offsetof(ibv_sge, lkey));

constexpr uint32_t kMaxCq = 1u << 16;
constexpr int kMaxCqe = 1 << 22;
constexpr uint32_t kMaxWr = 1u << 20;
constexpr uint8_t kLocalCaAckDelay = 15;

// ---------------------------------------------------------------- the real libibverbs

template <typename F>
F real(const char* name, const char* version) {
  void* p = dlvsym(RTLD_NEXT, name, version);
  return reinterpret_cast<F>(p);
}
#define REAL(fn, ver) (real<decltype(&fn)>(#fn, ver))

// ---------------------------------------------------------------- helpers

Device* dev_of(ibv_context* c) { return context_of(c)->dev; }
Cq* cq_of(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
Qp* qp_of(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
Pd* pd_of(ibv_pd* p) { return reinterpret_cast<Pd*>(p); }

uint32_t mtu_bytes(ibv_mtu m) { return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0; }
ibv_mtu mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
  }
}

// Width and speed in IB terms for an Ethernet rate, as Linux reports RoCE ports
// (the encodings of PortInfo: IBA 14.2.5.6; libibverbs has no names for them).
enum : uint8_t { kWidth1x = 1, kWidth4x = 2, kWidth8x = 4 };
enum : uint8_t {
  kSpeedSdr = 1,    // 2.5 Gb/s per lane
  kSpeedDdr = 2,    // 5
  kSpeedFdr10 = 8,  // 10
  kSpeedEdr = 32,   // 25
  kSpeedHdr = 64,   // 50
  kSpeedNdr = 128,  // 100
};

void ib_speed(uint32_t mbps, uint8_t* width, uint8_t* speed) {
  struct Step {
    uint32_t mbps;
    uint8_t width, speed;
  };
  static constexpr Step kSteps[] = {
      {2500, kWidth1x, kSpeedSdr},    {5000, kWidth1x, kSpeedDdr},     {10000, kWidth1x, kSpeedFdr10},
      {20000, kWidth4x, kSpeedDdr},   {25000, kWidth1x, kSpeedEdr},    {40000, kWidth4x, kSpeedFdr10},
      {50000, kWidth1x, kSpeedHdr},   {100000, kWidth4x, kSpeedEdr},   {200000, kWidth4x, kSpeedHdr},
      {400000, kWidth4x, kSpeedNdr},
  };
  for (const Step& s : kSteps) {
    if (mbps <= s.mbps) {
      *width = s.width;
      *speed = s.speed;
      return;
    }
  }
  *width = kWidth8x;
  *speed = kSpeedNdr;
}

// The UDP source port a RoCE v2 flow label selects (Linux's
// rdma_flow_label_to_udp_sport): the label's 20 bits folded into 14.
uint16_t udp_sport_of_flow_label(uint32_t fl) {
  const uint32_t low = fl & 0x03fff;
  const uint32_t high = (fl & 0xfc000) >> 14;
  return static_cast<uint16_t>((low ^ high) | 0xc000);
}

void fill_device_attr(Device* d, ibv_device_attr* a) {
  std::memset(a, 0, sizeof *a);
  std::snprintf(a->fw_ver, sizeof a->fw_ver, "tita 0.1.0");
  a->node_guid = htobe64(d->node_guid());
  a->sys_image_guid = a->node_guid;
  a->max_mr_size = ~uint64_t{0};
  a->page_size_cap = ~uint64_t{0xfff};
  a->vendor_id = 0;
  a->vendor_part_id = 0;
  a->hw_ver = 0;
  a->max_qp = static_cast<int>(d->config().max_qps);
  a->max_qp_wr = static_cast<int>(kMaxWr);
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_PORT_ACTIVE_EVENT;
  a->max_sge = eng::kMaxSge;
  a->max_sge_rd = eng::kMaxSge;
  a->max_cq = static_cast<int>(kMaxCq);
  a->max_cqe = kMaxCqe;
  a->max_mr = (1 << 24) - 1;
  a->max_pd = 1 << 24;
  a->max_qp_rd_atom = eng::kMaxRdAtomic;
  a->max_res_rd_atom = static_cast<int>(eng::kMaxRdAtomic * d->config().max_qps);
  a->max_qp_init_rd_atom = eng::kMaxRdAtomic;
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = kLocalCaAckDelay;
  a->phys_port_cnt = 1;
}

int fill_port_attr(Device* d, uint8_t port, ibv_port_attr* a) {
  if (port != 1) return EINVAL;
  std::memset(a, 0, sizeof *a);
  a->state = d->link_up() ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a->max_mtu = mtu_enum(d->max_path_mtu());
  a->active_mtu = a->max_mtu;
  a->gid_tbl_len = 1;
  a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
  a->max_msg_sz = static_cast<uint32_t>(eng::kMaxMessageBytes);
  if (eng::EngineCounters c; d->counters(&c)) {
    a->bad_pkey_cntr = static_cast<uint32_t>(std::min<uint64_t>(c.rx_bad_pkey, 0xffff));
  }
  a->pkey_tbl_len = 1;
  a->max_vl_num = 1;
  const uint32_t speed = d->link_speed_mbps();
  ib_speed(speed ? speed : 100'000, &a->active_width, &a->active_speed);
  a->phys_state = d->link_up() ? 5 : 3;  // LinkUp / Disabled
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}

// ---------------------------------------------------------------- the ops libibverbs calls inline

// Up to n completions of the CQ's part on one lane into wc; -1: it overflowed.
int poll_lane(Device* d, Cq* cq, uint32_t lane, int n, ibv_wc* wc) {
  eng::WorkCompletion buf[64];
  int total = 0;
  Device::Lock lock(*d, lane);
  eng::Engine& e = d->engine(lane);
  // A polling application makes the progress itself (receive, timers, send):
  // no hand-off to the device thread, which stands aside while this goes on.
  // With several engines it leaves that to their threads (one application
  // thread stepping every engine would do their work on one core).
  if (d->lanes() == 1) d->step(lane, true);
  while (total < n) {
    const int got = e.poll_cq(cq->id, std::min(n - total, 64), buf);
    if (got < 0) return total > 0 ? total : -1;  // overflowed (IBV_EVENT_CQ_ERR)
    if (got == 0) break;
    for (int i = 0; i < got; ++i) {
      const eng::WorkCompletion& w = buf[i];
      ibv_wc& o = wc[total + i];
      o.wr_id = w.wr_id;
      o.status = static_cast<ibv_wc_status>(w.status);
      o.opcode = static_cast<ibv_wc_opcode>(w.opcode);
      o.vendor_err = 0;
      o.byte_len = w.byte_len;
      o.imm_data = htonl(w.imm_data);
      o.qp_num = w.qp_num;
      o.src_qp = 0;
      o.wc_flags = w.with_imm ? IBV_WC_WITH_IMM : 0;
      o.pkey_index = 0;
      o.slid = 0;
      o.sl = 0;
      o.dlid_path_bits = 0;
    }
    total += got;
    if (got < 64) break;
  }
  return total;
}

int op_poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = cq_of(ibcq);
  Device* d = dev_of(ibcq->context);
  const uint32_t lanes = d->lanes();
  if (lanes == 1) return poll_lane(d, cq, 0, n, wc);
  // Every lane's part, starting from another lane each time.
  const uint32_t first = cq->next_lane.fetch_add(1, std::memory_order_relaxed) % lanes;
  int total = 0;
  for (uint32_t i = 0; i < lanes && total < n; ++i) {
    const int got = poll_lane(d, cq, (first + i) % lanes, n - total, wc + total);
    if (got < 0) return total > 0 ? total : -1;
    total += got;
  }
  return total;
}

int op_req_notify_cq(ibv_cq* ibcq, int solicited_only) {
  Device* d = dev_of(ibcq->context);
  Cq* cq = cq_of(ibcq);
  cq->armed = true;
  for (uint32_t k = 0; k < d->lanes(); ++k) {
    Device::Lock lock(*d, k);
    if (int rc = d->engine(k).req_notify_cq(cq->id, solicited_only != 0); rc != 0) return -rc;
  }
  return 0;
}

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
      if (eng::is_atomic(w.opcode)) {
        w.atomic.remote_addr = wr->wr.atomic.remote_addr;
        w.atomic.compare_add = wr->wr.atomic.compare_add;
        w.atomic.swap = wr->wr.atomic.swap;
        w.atomic.rkey = wr->wr.atomic.rkey;
      } else {
        w.rdma.remote_addr = wr->wr.rdma.remote_addr;
        w.rdma.rkey = wr->wr.rdma.rkey;
      }
      rc = -e.post_send(qp->qpn, &w, nullptr);
    }
    if (rc != 0) {
      if (bad) *bad = wr;
      break;
    }
  }
  // A doorbell: out now, unless the application polls its CQ anyway, whose
  // next step sends what accumulated in one burst.
  if (!d->app_polling(qp->lane)) d->step(qp->lane, false);
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

int op_post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  if (bad) *bad = wr;
  return EOPNOTSUPP;
}

int op_query_port(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len) {
  ibv_port_attr a;
  if (int rc = fill_port_attr(dev_of(ctx), port, &a); rc != 0) return rc;
  std::memset(attr, 0, len);
  std::memcpy(attr, &a, std::min(len, sizeof a));
  return 0;
}

int op_query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                       size_t len) {
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  ibv_device_attr_ex a{};
  fill_device_attr(dev_of(ctx), &a.orig_attr);
  a.max_dm_size = 0;
  std::memset(attr, 0, len);
  std::memcpy(attr, &a, std::min(len, sizeof a));
  return 0;
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);

ibv_qp* op_create_qp_ex(ibv_context*, ibv_qp_init_attr_ex* attr) {
  // Only what ibv_create_qp offers: a PD (and no send-ops flags, create flags or extensions).
  if ((attr->comp_mask & ~IBV_QP_INIT_ATTR_PD) != 0 || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  ibv_qp_init_attr a{};
  a.qp_context = attr->qp_context;
  a.send_cq = attr->send_cq;
  a.recv_cq = attr->recv_cq;
  a.srq = attr->srq;
  a.cap = attr->cap;
  a.qp_type = attr->qp_type;
  a.sq_sig_all = attr->sq_sig_all;
  ibv_qp* qp = create_qp(attr->pd, &a);
  if (qp != nullptr) attr->cap = a.cap;
  return qp;
}

// ---------------------------------------------------------------- objects

void init_context(Context* c, Device* d) {
  verbs_context& v = c->vctx;
  v.sz = sizeof(verbs_context);
  v.query_port = op_query_port;
  v.query_device_ex = op_query_device_ex;
  v.create_qp_ex = op_create_qp_ex;
  ibv_context& ctx = v.context;
  ctx.device = d->ibv();
  ctx.ops.poll_cq = op_poll_cq;
  ctx.ops.req_notify_cq = op_req_notify_cq;
  ctx.ops.post_send = op_post_send;
  ctx.ops.post_recv = op_post_recv;
  ctx.ops.post_srq_recv = op_post_srq_recv;
  ctx.cmd_fd = -1;
  ctx.async_fd = c->async_pipe[0];
  ctx.num_comp_vectors = 1;
  pthread_mutex_init(&ctx.mutex, nullptr);
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  c->dev = d;
}

ibv_qp* create_qp(ibv_pd* ibpd, ibv_qp_init_attr* attr) {
  Device* d = dev_of(ibpd->context);
  Context* c = context_of(ibpd->context);
  if (attr->qp_type != IBV_QPT_RC) {
    d->log(Config::Log::kError, "ibv_create_qp: QP type %d: tita has RC QPs only", attr->qp_type);
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (attr->srq != nullptr) {
    d->log(Config::Log::kError, "ibv_create_qp: shared receive queues are not supported");
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (attr->send_cq == nullptr || attr->recv_cq == nullptr || !Device::ours(attr->send_cq->context) ||
      !Device::ours(attr->recv_cq->context) || attr->cap.max_send_sge > eng::kMaxSge ||
      attr->cap.max_recv_sge > eng::kMaxSge || attr->cap.max_inline_data > eng::kMaxInlineData ||
      attr->cap.max_send_wr > kMaxWr || attr->cap.max_recv_wr > kMaxWr) {
    d->log(Config::Log::kError, "ibv_create_qp: caps beyond the device (max %u WRs, %u SGEs, %u bytes inline)",
           kMaxWr, eng::kMaxSge, eng::kMaxInlineData);
    errno = EINVAL;
    return nullptr;
  }
  eng::QpInitAttr init;
  init.send_cq = cq_of(attr->send_cq)->id;
  init.recv_cq = cq_of(attr->recv_cq)->id;
  init.max_send_wr = attr->cap.max_send_wr;
  init.max_recv_wr = attr->cap.max_recv_wr;
  init.max_sge = std::max<uint32_t>({attr->cap.max_send_sge, attr->cap.max_recv_sge, 1});
  init.max_inline_data = attr->cap.max_inline_data;
  init.sq_sig_all = attr->sq_sig_all != 0;
  auto* qp = new (std::nothrow) Qp();
  if (qp == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  qp->lane = d->next_qp_lane();
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
  q.srq = nullptr;
  q.handle = qp->qpn;
  q.qp_num = qp->qpn;
  q.state = IBV_QPS_RESET;
  q.qp_type = IBV_QPT_RC;
  pthread_mutex_init(&q.mutex, nullptr);
  pthread_cond_init(&q.cond, nullptr);
  q.events_completed = 0;
  d->bind_qp(qp->qpn, qp);
  std::lock_guard lock(c->async_mu);
  c->qps.insert(qp);
  return &q;
}

// Events for an object being destroyed that nobody has read yet are dropped
// (their bytes in the pipe are skipped by ibv_get_async_event).
template <typename Match>
void forget_events(Context* c, Match match) {
  std::lock_guard lock(c->async_mu);
  c->async_events.erase(std::remove_if(c->async_events.begin(), c->async_events.end(), match), c->async_events.end());
}

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
    pthread_mutex_lock(&qp->qp.mutex);
    while (qp->qp.events_completed != qp->async_events_sent) pthread_cond_wait(&qp->qp.cond, &qp->qp.mutex);
    pthread_mutex_unlock(&qp->qp.mutex);
  }
  Context* c = context_of(qp->qp.context);
  {
    std::lock_guard lock(c->async_mu);
    c->qps.erase(qp);
  }
  pthread_cond_destroy(&qp->qp.cond);
  pthread_mutex_destroy(&qp->qp.mutex);
  delete qp;
  return 0;
}

int destroy_cq(Cq* cq, bool wait_events) {
  Device* d = dev_of(cq->cq.context);
  {
    // Busy on any lane is busy: asked before the CQ goes from any of them.
    Context* c = context_of(cq->cq.context);
    std::lock_guard lock(c->async_mu);
    for (const Qp* qp : c->qps) {
      if (qp->qp.send_cq == &cq->cq || qp->qp.recv_cq == &cq->cq) return EBUSY;
    }
  }
  if (int rc = d->on_every_lane([cq](eng::Engine& e, uint32_t) { return e.destroy_cq(cq->id); }); rc != 0) {
    return -rc;
  }
  d->unbind_cq(cq->id);
  forget_events(context_of(cq->cq.context),
                [cq](const ibv_async_event& e) { return e.event_type == IBV_EVENT_CQ_ERR && e.element.cq == &cq->cq; });
  if (cq->cq.channel != nullptr) {  // completion events nobody read go with it
    auto* ch = reinterpret_cast<Channel*>(cq->cq.channel);
    std::lock_guard lock(ch->mu);
    ch->events.erase(std::remove(ch->events.begin(), ch->events.end(), cq), ch->events.end());
  }
  if (wait_events) {
    pthread_mutex_lock(&cq->cq.mutex);
    while (cq->cq.comp_events_completed != cq->comp_events_sent ||
           cq->cq.async_events_completed != cq->async_events_sent) {
      pthread_cond_wait(&cq->cq.cond, &cq->cq.mutex);
    }
    pthread_mutex_unlock(&cq->cq.mutex);
  }
  if (cq->cq.channel != nullptr) {
    pthread_mutex_lock(&cq->cq.context->mutex);
    --cq->cq.channel->refcnt;
    pthread_mutex_unlock(&cq->cq.context->mutex);
  }
  Context* c = context_of(cq->cq.context);
  {
    std::lock_guard lock(c->async_mu);
    c->cqs.erase(cq);
  }
  pthread_cond_destroy(&cq->cq.cond);
  pthread_mutex_destroy(&cq->cq.mutex);
  delete cq;
  return 0;
}

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
  if (access & ~static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                      IBV_ACCESS_REMOTE_ATOMIC)) {
    d->log(Config::Log::kError, "ibv_reg_mr: access 0x%x: memory windows and other access bits are not supported",
           access);
    errno = EINVAL;
    return nullptr;
  }
  auto* mr = new (std::nothrow) Mr();
  if (mr == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
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
  std::lock_guard lock(c->async_mu);
  c->mrs.insert(mr);
  return &mr->mr;
}

int dereg_mr(Mr* mr) {
  Device* d = dev_of(mr->mr.context);
  if (d->on_every_lane([mr](eng::Engine& e, uint32_t) { return e.dereg_mr(mr->mr.lkey); }) != 0) return EINVAL;
  Context* c = context_of(mr->mr.context);
  {
    std::lock_guard lock(c->async_mu);
    c->mrs.erase(mr);
  }
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
  {
    std::lock_guard lock(c->async_mu);
    c->pds.erase(pd);
  }
  delete pd;
  return 0;
}

// The kernel-device lists we extended, to free them with what they came from.
std::mutex g_lists_mu;
std::unordered_map<ibv_device**, ibv_device**> g_lists;

std::once_flag g_error_once;

}  // namespace
}  // namespace tita::verbs

using namespace tita::verbs;
namespace eng = tita::engine;

// ---------------------------------------------------------------- devices

TITA_EXPORT ibv_device** ibv_get_device_list(int* num) {
  auto real_get = REAL(ibv_get_device_list, "IBVERBS_1.1");
  int n_real = 0;
  ibv_device** kernel = real_get ? real_get(&n_real) : nullptr;
  const int saved = errno;
  std::string err;
  Device* d = Device::get(&err);
  if (d == nullptr) {
    std::call_once(g_error_once, [&] { std::fprintf(stderr, "tita: no tita device: %s\n", err.c_str()); });
    if (num) *num = n_real;
    errno = saved;
    return kernel;
  }
  auto** list = static_cast<ibv_device**>(std::calloc(static_cast<size_t>(n_real) + 2, sizeof(ibv_device*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  list[0] = d->ibv();  // first: programs that take the first device get tita
  for (int i = 0; i < n_real; ++i) list[i + 1] = kernel[i];
  {
    std::lock_guard lock(g_lists_mu);
    g_lists[list] = kernel;
  }
  if (num) *num = n_real + 1;
  return list;
}

TITA_EXPORT void ibv_free_device_list(ibv_device** list) {
  ibv_device** kernel = nullptr;
  {
    std::lock_guard lock(g_lists_mu);
    auto it = g_lists.find(list);
    if (it == g_lists.end()) {
      if (auto f = REAL(ibv_free_device_list, "IBVERBS_1.1")) f(list);
      return;
    }
    kernel = it->second;
    g_lists.erase(it);
  }
  if (kernel != nullptr) {
    if (auto f = REAL(ibv_free_device_list, "IBVERBS_1.1")) f(kernel);
  }
  std::free(list);
}

TITA_EXPORT const char* ibv_get_device_name(ibv_device* device) {
  if (Device::ours(device)) return device->name;
  auto f = REAL(ibv_get_device_name, "IBVERBS_1.1");
  return f ? f(device) : nullptr;
}

TITA_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
  std::string err;
  if (Device::ours(device)) return htobe64(Device::get(&err)->node_guid());
  auto f = REAL(ibv_get_device_guid, "IBVERBS_1.1");
  return f ? f(device) : 0;
}

TITA_EXPORT int ibv_get_device_index(ibv_device* device) {
  if (Device::ours(device)) return -1;  // no kernel device index
  auto f = REAL(ibv_get_device_index, "IBVERBS_1.9");
  return f ? f(device) : -1;
}

TITA_EXPORT ibv_context* ibv_open_device(ibv_device* device) {
  if (!Device::ours(device)) {
    auto f = REAL(ibv_open_device, "IBVERBS_1.1");
    if (f == nullptr) {
      errno = ENODEV;
      return nullptr;
    }
    return f(device);
  }
  std::string err;
  Device* d = Device::get(&err);
  auto* c = new (std::nothrow) Context();
  if (c == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  if (pipe2(c->async_pipe, O_CLOEXEC) != 0) {
    delete c;
    return nullptr;
  }
  init_context(c, d);
  d->attach(c);
  return &c->vctx.context;
}

TITA_EXPORT int ibv_close_device(ibv_context* ctx) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_close_device, "IBVERBS_1.1");
    return f ? f(ctx) : EINVAL;
  }
  Context* c = context_of(ctx);
  Device* d = c->dev;
  // What the application left behind goes with its context.
  std::vector<Qp*> qps(c->qps.begin(), c->qps.end());
  for (Qp* q : qps) destroy_qp(q, false);
  std::vector<Mr*> mrs(c->mrs.begin(), c->mrs.end());
  for (Mr* m : mrs) dereg_mr(m);
  std::vector<Cq*> cqs(c->cqs.begin(), c->cqs.end());
  for (Cq* q : cqs) destroy_cq(q, false);
  std::vector<Pd*> pds(c->pds.begin(), c->pds.end());
  for (Pd* p : pds) dealloc_pd(p);
  for (Channel* ch : c->channels) {
    close(ch->ch.fd);
    close(ch->write_fd);
    delete ch;
  }
  d->detach(c);
  close(c->async_pipe[0]);
  close(c->async_pipe[1]);
  pthread_mutex_destroy(&ctx->mutex);
  delete c;
  return 0;
}

TITA_EXPORT int ibv_get_async_event(ibv_context* ctx, ibv_async_event* event) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_get_async_event, "IBVERBS_1.1");
    return f ? f(ctx, event) : -1;
  }
  Context* c = context_of(ctx);
  for (;;) {
    char one;
    if (read(ctx->async_fd, &one, 1) != 1) return -1;
    std::lock_guard lock(c->async_mu);
    if (c->async_events.empty()) continue;  // its object was destroyed before anyone read it
    *event = c->async_events.front();
    c->async_events.pop_front();
    break;
  }
  // Counted once handed out: destroying the object waits for this one's ack.
  if (event->event_type == IBV_EVENT_CQ_ERR) {
    Cq* cq = cq_of(event->element.cq);
    pthread_mutex_lock(&cq->cq.mutex);
    ++cq->async_events_sent;
    pthread_mutex_unlock(&cq->cq.mutex);
  } else if (event->event_type != IBV_EVENT_PORT_ACTIVE && event->event_type != IBV_EVENT_PORT_ERR) {
    Qp* qp = qp_of(event->element.qp);
    pthread_mutex_lock(&qp->qp.mutex);
    ++qp->async_events_sent;
    pthread_mutex_unlock(&qp->qp.mutex);
  }
  return 0;
}

TITA_EXPORT void ibv_ack_async_event(ibv_async_event* event) {
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      if (Device::ours(event->element.cq->context)) {
        ibv_cq* cq = event->element.cq;
        pthread_mutex_lock(&cq->mutex);
        ++cq->async_events_completed;
        pthread_cond_signal(&cq->cond);
        pthread_mutex_unlock(&cq->mutex);
        return;
      }
      break;
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED:
      if (Device::ours(event->element.qp->context)) {
        ibv_qp* qp = event->element.qp;
        pthread_mutex_lock(&qp->mutex);
        ++qp->events_completed;
        pthread_cond_signal(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
        return;
      }
      break;
    default:
      break;  // port events count nothing, in libibverbs too
  }
  if (auto f = REAL(ibv_ack_async_event, "IBVERBS_1.1")) f(event);
}

// ---------------------------------------------------------------- queries

TITA_EXPORT int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_query_device, "IBVERBS_1.1");
    return f ? f(ctx, attr) : EINVAL;
  }
  fill_device_attr(dev_of(ctx), attr);
  return 0;
}

TITA_EXPORT int ibv_query_port(ibv_context* ctx, uint8_t port, _compat_ibv_port_attr* attr) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_query_port, "IBVERBS_1.1");
    return f ? f(ctx, port, attr) : EINVAL;
  }
  // The old, shorter struct: without the fields added since (port_cap_flags2).
  ibv_port_attr a;
  if (int rc = fill_port_attr(dev_of(ctx), port, &a); rc != 0) return rc;
  std::memcpy(attr, &a, offsetof(ibv_port_attr, port_cap_flags2));
  return 0;
}

TITA_EXPORT int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_query_gid, "IBVERBS_1.1");
    return f ? f(ctx, port, index, gid) : -1;
  }
  if (port != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  std::memcpy(gid->raw, dev_of(ctx)->gid().raw, 16);
  return 0;
}

// A private libibverbs symbol, but ibv_devinfo calls it.
enum TitaGidTypeSysfs { kGidTypeSysfsRoceV1 = 0, kGidTypeSysfsRoceV2 = 1 };
TITA_EXPORT int ibv_query_gid_type(ibv_context* ctx, uint8_t port, unsigned int index, int* type) {
  if (!Device::ours(ctx)) {
    auto f = real<int (*)(ibv_context*, uint8_t, unsigned int, int*)>("ibv_query_gid_type", "IBVERBS_PRIVATE_34");
    return f ? f(ctx, port, index, type) : EINVAL;
  }
  if (port != 1 || index != 0) return EINVAL;
  *type = kGidTypeSysfsRoceV2;
  return 0;
}

TITA_EXPORT int _ibv_query_gid_ex(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                                  uint32_t flags, size_t entry_size) {
  if (!Device::ours(ctx)) {
    auto f = REAL(_ibv_query_gid_ex, "IBVERBS_1.11");
    return f ? f(ctx, port, index, entry, flags, entry_size) : EINVAL;
  }
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  if (port != 1) return EINVAL;
  if (index != 0) return ENODATA;
  std::memset(entry, 0, entry_size);
  std::memcpy(entry->gid.raw, dev_of(ctx)->gid().raw, 16);
  entry->gid_index = 0;
  entry->port_num = 1;
  entry->gid_type = IBV_GID_TYPE_ROCE_V2;
  entry->ndev_ifindex = 0;
  return 0;
}

TITA_EXPORT ssize_t _ibv_query_gid_table(ibv_context* ctx, ibv_gid_entry* entries, size_t max_entries,
                                         uint32_t flags, size_t entry_size) {
  if (!Device::ours(ctx)) {
    auto f = REAL(_ibv_query_gid_table, "IBVERBS_1.11");
    return f ? f(ctx, entries, max_entries, flags, entry_size) : -EINVAL;
  }
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < 1) return -EINVAL;
  _ibv_query_gid_ex(ctx, 1, 0, entries, 0, entry_size);
  return 1;
}

TITA_EXPORT int ibv_query_pkey(ibv_context* ctx, uint8_t port, int index, __be16* pkey) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_query_pkey, "IBVERBS_1.1");
    return f ? f(ctx, port, index, pkey) : -1;
  }
  if (port != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htons(0xffff);
  return 0;
}

TITA_EXPORT int ibv_get_pkey_index(ibv_context* ctx, uint8_t port, __be16 pkey) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_get_pkey_index, "IBVERBS_1.5");
    return f ? f(ctx, port, pkey) : -1;
  }
  if (port == 1 && ntohs(pkey) == 0xffff) return 0;
  errno = ENOENT;
  return -1;
}

// The sysfs files of a kernel device; for tita0's invented path, the one
// ibv_devinfo prints.
TITA_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  std::string err;
  if (Device* d = Device::get(&err); d != nullptr && std::strcmp(dir, d->ibv()->ibdev_path) == 0) {
    if (std::strcmp(file, "board_id") == 0) {
      const int n = std::snprintf(buf, size, "tita on DPDK port %s", d->port_name().c_str());
      return std::min<int>(n, static_cast<int>(size) - 1);
    }
    errno = ENOENT;
    return -1;
  }
  auto f = REAL(ibv_read_sysfs_file, "IBVERBS_1.0");
  return f ? f(dir, file, buf, size) : -1;
}

// ---------------------------------------------------------------- protection domains and regions

TITA_EXPORT ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_alloc_pd, "IBVERBS_1.1");
    return f ? f(ctx) : nullptr;
  }
  Device* d = dev_of(ctx);
  auto* pd = new (std::nothrow) Pd();
  if (pd == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  d->on_every_lane([pd](eng::Engine& e, uint32_t k) {
    const uint32_t id = e.alloc_pd();
    if (k == 0) pd->id = id;
    return id == pd->id ? 0 : -EIO;  // every lane numbers alike
  });
  pd->pd.context = ctx;
  pd->pd.handle = pd->id;
  Context* c = context_of(ctx);
  std::lock_guard lock(c->async_mu);
  c->pds.insert(pd);
  return &pd->pd;
}

TITA_EXPORT int ibv_dealloc_pd(ibv_pd* pd) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_dealloc_pd, "IBVERBS_1.1");
    return f ? f(pd) : EINVAL;
  }
  return dealloc_pd(pd_of(pd));
}

TITA_EXPORT ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_reg_mr, "IBVERBS_1.1");
    return f ? f(pd, addr, length, access) : nullptr;
  }
  return reg_mr(pd, addr, length, reinterpret_cast<uint64_t>(addr), static_cast<unsigned>(access));
}

TITA_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_reg_mr_iova, "IBVERBS_1.7");
    return f ? f(pd, addr, length, iova, access) : nullptr;
  }
  return reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

TITA_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_reg_mr_iova2, "IBVERBS_1.8");
    return f ? f(pd, addr, length, iova, access) : nullptr;
  }
  return reg_mr(pd, addr, length, iova, access);
}

TITA_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_reg_dmabuf_mr, "IBVERBS_1.12");
    return f ? f(pd, offset, length, iova, fd, access) : nullptr;
  }
  errno = EOPNOTSUPP;  // device memory of another device: not for a CPU-driven NIC
  return nullptr;
}

TITA_EXPORT int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if (!Device::ours(mr->context)) {
    auto f = REAL(ibv_rereg_mr, "IBVERBS_1.1");
    return f ? f(mr, flags, pd, addr, length, access) : IBV_REREG_MR_ERR_INPUT;
  }
  errno = EOPNOTSUPP;
  return IBV_REREG_MR_ERR_INPUT;
}

TITA_EXPORT int ibv_dereg_mr(ibv_mr* mr) {
  if (!Device::ours(mr->context)) {
    auto f = REAL(ibv_dereg_mr, "IBVERBS_1.1");
    return f ? f(mr) : EINVAL;
  }
  return dereg_mr(reinterpret_cast<Mr*>(mr));
}

// ---------------------------------------------------------------- completion queues and channels

TITA_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_create_comp_channel, "IBVERBS_1.0");
    return f ? f(ctx) : nullptr;
  }
  auto* ch = new (std::nothrow) Channel();
  if (ch == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    delete ch;
    return nullptr;
  }
  ch->ch.context = ctx;
  ch->ch.fd = fds[0];
  ch->ch.refcnt = 0;
  ch->write_fd = fds[1];
  Context* c = context_of(ctx);
  std::lock_guard lock(c->async_mu);
  c->channels.insert(ch);
  return &ch->ch;
}

TITA_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (!Device::ours(channel->context)) {
    auto f = REAL(ibv_destroy_comp_channel, "IBVERBS_1.0");
    return f ? f(channel) : EINVAL;
  }
  pthread_mutex_lock(&channel->context->mutex);
  const bool busy = channel->refcnt != 0;
  pthread_mutex_unlock(&channel->context->mutex);
  if (busy) return EBUSY;
  auto* ch = reinterpret_cast<Channel*>(channel);
  Context* c = context_of(channel->context);
  {
    std::lock_guard lock(c->async_mu);
    c->channels.erase(ch);
  }
  close(ch->ch.fd);
  close(ch->write_fd);
  delete ch;
  return 0;
}

TITA_EXPORT ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                                  int comp_vector) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_create_cq, "IBVERBS_1.1");
    return f ? f(ctx, cqe, cq_context, channel, comp_vector) : nullptr;
  }
  Device* d = dev_of(ctx);
  if (cqe < 1 || cqe > kMaxCqe || comp_vector != 0 || (channel != nullptr && channel->context != ctx)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = new (std::nothrow) Cq();
  if (cq == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  // The CQ's part on every lane, with one number.
  uint32_t failed = 0;
  const int rc = d->on_every_lane(
      [&](eng::Engine& e, uint32_t k) {
        uint32_t id;
        if (int r = e.create_cq(static_cast<uint32_t>(cqe), &id); r != 0) return r;
        if (k == 0) cq->id = id;
        return id == cq->id ? 0 : -EIO;  // cannot happen: every lane numbers alike
      },
      &failed);
  if (rc != 0) {
    for (uint32_t k = 0; k < failed; ++k) {
      Device::Lock lock(*d, k);
      d->engine(k).destroy_cq(cq->id);
    }
    delete cq;
    errno = -rc;
    return nullptr;
  }
  ibv_cq& q = cq->cq;
  q.context = ctx;
  q.channel = channel;
  q.cq_context = cq_context;
  q.handle = cq->id;
  q.cqe = cqe;
  pthread_mutex_init(&q.mutex, nullptr);
  pthread_cond_init(&q.cond, nullptr);
  q.comp_events_completed = 0;
  q.async_events_completed = 0;
  if (channel != nullptr) {
    pthread_mutex_lock(&ctx->mutex);
    ++channel->refcnt;
    pthread_mutex_unlock(&ctx->mutex);
  }
  d->bind_cq(cq->id, cq);
  Context* c = context_of(ctx);
  std::lock_guard lock(c->async_mu);
  c->cqs.insert(cq);
  return &q;
}

TITA_EXPORT int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (!Device::ours(cq->context)) {
    auto f = REAL(ibv_resize_cq, "IBVERBS_1.1");
    return f ? f(cq, cqe) : EINVAL;
  }
  if (cqe < 1 || cqe > kMaxCqe) return EINVAL;
  Device* d = dev_of(cq->context);
  const uint32_t id = cq_of(cq)->id;
  if (int rc = d->on_every_lane([&](eng::Engine& e, uint32_t) { return e.resize_cq(id, static_cast<uint32_t>(cqe)); });
      rc != 0) {
    return -rc;
  }
  cq->cqe = cqe;
  return 0;
}

TITA_EXPORT int ibv_destroy_cq(ibv_cq* cq) {
  if (!Device::ours(cq->context)) {
    auto f = REAL(ibv_destroy_cq, "IBVERBS_1.1");
    return f ? f(cq) : EINVAL;
  }
  return destroy_cq(cq_of(cq), true);
}

TITA_EXPORT int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  if (!Device::ours(channel->context)) {
    auto f = REAL(ibv_get_cq_event, "IBVERBS_1.1");
    return f ? f(channel, cq, cq_context) : -1;
  }
  auto* ch = reinterpret_cast<Channel*>(channel);
  dev_of(channel->context)->app_blocks();  // the device thread takes over the work now
  Cq* c = nullptr;
  while (c == nullptr) {
    char one;
    if (read(channel->fd, &one, 1) != 1) return -1;
    std::lock_guard lock(ch->mu);
    if (ch->events.empty()) continue;  // its CQ was destroyed before anyone read it
    c = ch->events.front();
    ch->events.pop_front();
  }
  // Counted once read, as the kernel counts them: ibv_destroy_cq waits for the acks.
  pthread_mutex_lock(&c->cq.mutex);
  ++c->comp_events_sent;
  pthread_mutex_unlock(&c->cq.mutex);
  *cq = &c->cq;
  *cq_context = c->cq.cq_context;
  return 0;
}

TITA_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (!Device::ours(cq->context)) {
    if (auto f = REAL(ibv_ack_cq_events, "IBVERBS_1.1")) f(cq, nevents);
    return;
  }
  pthread_mutex_lock(&cq->mutex);
  cq->comp_events_completed += nevents;
  pthread_cond_signal(&cq->cond);
  pthread_mutex_unlock(&cq->mutex);
}

// ---------------------------------------------------------------- queue pairs

TITA_EXPORT ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_create_qp, "IBVERBS_1.1");
    return f ? f(pd, attr) : nullptr;
  }
  return create_qp(pd, attr);
}

TITA_EXPORT int ibv_modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask) {
  if (!Device::ours(ibqp->context)) {
    auto f = REAL(ibv_modify_qp, "IBVERBS_1.1");
    return f ? f(ibqp, attr, attr_mask) : EINVAL;
  }
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
  a.pkey_index = attr->pkey_index;
  a.port_num = attr->port_num;
  a.rq_psn = attr->rq_psn;
  a.sq_psn = attr->sq_psn;
  a.dest_qp_num = attr->dest_qp_num;
  a.timeout = attr->timeout;
  a.retry_cnt = attr->retry_cnt;
  a.rnr_retry = attr->rnr_retry;
  a.min_rnr_timer = attr->min_rnr_timer;
  a.max_rd_atomic = attr->max_rd_atomic;
  a.max_dest_rd_atomic = attr->max_dest_rd_atomic;
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
  if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR && d->config().selective_repeat) {
    a.recovery = eng::Recovery::kSelectiveRepeat;
    m |= eng::kQpRecovery;
  }
  std::string err;
  int rc;
  {
    Device::Lock lock(*d, qp->lane);
    rc = d->engine(qp->lane).modify_qp(qp->qpn, a, m, &err);
    if (rc == 0 && d->lanes() > 1 && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RTR) {
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
    auto f = REAL(ibv_query_qp, "IBVERBS_1.1");
    return f ? f(ibqp, attr, attr_mask, init_attr) : EINVAL;
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
  attr->rq_psn = a.rq_psn;
  attr->sq_psn = a.sq_psn;
  attr->dest_qp_num = a.dest_qp_num;
  attr->qp_access_flags = static_cast<int>(a.qp_access_flags);
  attr->cap = qp->cap;
  attr->ah_attr.is_global = 1;
  std::memcpy(attr->ah_attr.grh.dgid.raw, a.ah_attr.dgid.raw, 16);
  attr->ah_attr.grh.sgid_index = qp->sgid_index;
  attr->ah_attr.grh.hop_limit = a.ah_attr.hop_limit;
  attr->ah_attr.grh.traffic_class = a.ah_attr.traffic_class;
  attr->ah_attr.grh.flow_label = qp->flow_label;
  attr->ah_attr.sl = qp->sl;
  attr->ah_attr.port_num = 1;
  attr->pkey_index = a.pkey_index;
  attr->max_rd_atomic = a.max_rd_atomic;
  attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
  attr->min_rnr_timer = a.min_rnr_timer;
  attr->port_num = 1;
  attr->timeout = a.timeout;
  attr->retry_cnt = a.retry_cnt;
  attr->rnr_retry = a.rnr_retry;
  if (init_attr != nullptr) {
    std::memset(init_attr, 0, sizeof *init_attr);
    init_attr->qp_context = ibqp->qp_context;
    init_attr->send_cq = ibqp->send_cq;
    init_attr->recv_cq = ibqp->recv_cq;
    init_attr->cap = qp->cap;
    init_attr->qp_type = IBV_QPT_RC;
    init_attr->sq_sig_all = qp->sq_sig_all ? 1 : 0;
  }
  if (attr_mask & IBV_QP_STATE) ibqp->state = attr->qp_state;
  return 0;
}

TITA_EXPORT int ibv_destroy_qp(ibv_qp* qp) {
  if (!Device::ours(qp->context)) {
    auto f = REAL(ibv_destroy_qp, "IBVERBS_1.1");
    return f ? f(qp) : EINVAL;
  }
  return destroy_qp(qp_of(qp), true);
}

TITA_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  if (!Device::ours(qp->context)) {
    auto f = REAL(ibv_qp_to_qp_ex, "IBVERBS_1.6");
    return f ? f(qp) : nullptr;
  }
  return nullptr;  // no extended (ibv_wr_*) send API: create_qp_ex refuses send-ops flags
}

TITA_EXPORT int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  if (!Device::ours(qp->context)) {
    auto f = REAL(ibv_query_qp_data_in_order, "IBVERBS_1.14");
    return f ? f(qp, op, flags) : 0;
  }
  // Payload is placed in PSN order (selective repeat places kept packets in order too).
  return 1;
}

TITA_EXPORT int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  if (!Device::ours(qp->context)) {
    auto f = REAL(ibv_query_ece, "IBVERBS_1.10");
    return f ? f(qp, ece) : EOPNOTSUPP;
  }
  return EOPNOTSUPP;
}

TITA_EXPORT int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  if (!Device::ours(qp->context)) {
    auto f = REAL(ibv_set_ece, "IBVERBS_1.10");
    return f ? f(qp, ece) : EOPNOTSUPP;
  }
  return EOPNOTSUPP;
}

// ---------------------------------------------------------------- what RC QPs on tita do not have

TITA_EXPORT ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_create_srq, "IBVERBS_1.1");
    return f ? f(pd, attr) : nullptr;
  }
  dev_of(pd->context)->log(Config::Log::kError, "ibv_create_srq: shared receive queues are not supported");
  errno = EOPNOTSUPP;
  return nullptr;
}

TITA_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_create_ah, "IBVERBS_1.1");
    return f ? f(pd, attr) : nullptr;
  }
  errno = EOPNOTSUPP;  // address handles serve UD QPs; tita has RC QPs only
  return nullptr;
}

TITA_EXPORT int ibv_init_ah_from_wc(ibv_context* ctx, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                                    ibv_ah_attr* ah_attr) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_init_ah_from_wc, "IBVERBS_1.1");
    return f ? f(ctx, port, wc, grh, ah_attr) : EOPNOTSUPP;
  }
  return EOPNOTSUPP;
}

TITA_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_create_ah_from_wc, "IBVERBS_1.1");
    return f ? f(pd, wc, grh, port) : nullptr;
  }
  errno = EOPNOTSUPP;
  return nullptr;
}

TITA_EXPORT int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (!Device::ours(qp->context)) {
    auto f = REAL(ibv_attach_mcast, "IBVERBS_1.1");
    return f ? f(qp, gid, lid) : EOPNOTSUPP;
  }
  return EOPNOTSUPP;  // multicast is for UD QPs
}

TITA_EXPORT int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  if (!Device::ours(qp->context)) {
    auto f = REAL(ibv_detach_mcast, "IBVERBS_1.1");
    return f ? f(qp, gid, lid) : EOPNOTSUPP;
  }
  return EOPNOTSUPP;
}

TITA_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context* ctx, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                            uint16_t* vid) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1");
    return f ? f(ctx, attr, eth_mac, vid) : EOPNOTSUPP;
  }
  Device* d = dev_of(ctx);
  const tita::wire::Gid g = [&] {
    tita::wire::Gid x;
    std::memcpy(x.raw, attr->grh.dgid.raw, 16);
    return x;
  }();
  if (vid) *vid = 0xffff;  // no VLAN
  if (g == d->gid()) {
    std::memcpy(eth_mac, d->mac(), 6);
    return 0;
  }
  for (uint32_t k = 0; k < d->lanes(); ++k) {  // every engine keeps a table (all hear every ARP frame)
    Device::Lock lock(*d, k);
    for (const eng::Neighbour& n : d->engine(k).neighbours()) {
      if (g.is_ipv4() && n.ipv4 == g.ipv4() &&
          (n.state == eng::Neighbour::State::kReachable || n.state == eng::Neighbour::State::kStatic)) {
        std::memcpy(eth_mac, n.mac, 6);
        return 0;
      }
    }
  }
  return ENOENT;  // not (yet) known: a QP with this GID resolves it by itself
}

TITA_EXPORT ibv_pd* ibv_import_pd(ibv_context* ctx, uint32_t handle) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_import_pd, "IBVERBS_1.10");
    return f ? f(ctx, handle) : nullptr;
  }
  errno = EOPNOTSUPP;  // objects live in one process
  return nullptr;
}

TITA_EXPORT ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t handle) {
  if (!Device::ours(pd->context)) {
    auto f = REAL(ibv_import_mr, "IBVERBS_1.10");
    return f ? f(pd, handle) : nullptr;
  }
  errno = EOPNOTSUPP;
  return nullptr;
}

TITA_EXPORT ibv_dm* ibv_import_dm(ibv_context* ctx, uint32_t handle) {
  if (!Device::ours(ctx)) {
    auto f = REAL(ibv_import_dm, "IBVERBS_1.13");
    return f ? f(ctx, handle) : nullptr;
  }
  errno = EOPNOTSUPP;
  return nullptr;
}

// ---------------------------------------------------------------- unload

__attribute__((destructor)) static void tita_verbs_unload() { Device::shutdown(); }
