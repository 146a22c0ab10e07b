// The device list (tita0 first, then the kernel's devices), opening and
// closing a device (a context, and what it holds: ibv_close_device releases
// what the application left behind), and asynchronous events, which reach the
// application through a pipe as the kernel's event file does.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "interpose.h"

namespace tita::verbs {
namespace {

void init_context(Context* c, Device* d) {
  verbs_context& v = c->vctx;
  v.sz = sizeof(verbs_context);
  v.query_port = op_query_port;
  v.query_device_ex = op_query_device_ex;
  v.create_qp_ex = op_create_qp_ex;
  v.create_cq_ex = op_create_cq_ex;
  v.create_srq_ex = op_create_srq_ex;
  v.get_srq_num = op_get_srq_num;
  refuse_missing_ops(v);
  ibv_context& ctx = v.context;
  ctx.device = d->ibv();
  ctx.ops.poll_cq = op_poll_cq;
  ctx.ops.req_notify_cq = op_req_notify_cq;
  ctx.ops.post_send = op_post_send;
  ctx.ops.post_recv = op_post_recv;
  ctx.ops.post_srq_recv = op_post_srq_recv;
  ctx.cmd_fd = c->cmd_file;
  ctx.async_fd = c->async_pipe[0];
  ctx.num_comp_vectors = 1;
  pthread_mutex_init(&ctx.mutex, nullptr);
  ctx.abi_compat = __VERBS_ABI_IS_EXTENDED;
  c->dev = d;
}

// The kernel-device lists we extended, to free them with what they came from.
std::mutex g_lists_mu;
std::unordered_map<ibv_device**, ibv_device**> g_lists;

std::once_flag g_error_once;

}  // namespace

// ---------------------------------------------------------------- the device list

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
  return forward(REAL(ibv_get_device_name, "IBVERBS_1.1"), nullptr, device);
}

TITA_EXPORT __be64 ibv_get_device_guid(ibv_device* device) {
  std::string err;
  if (Device::ours(device)) return htobe64(Device::get(&err)->node_guid());
  return forward(REAL(ibv_get_device_guid, "IBVERBS_1.1"), 0, device);
}

TITA_EXPORT int ibv_get_device_index(ibv_device* device) {
  if (Device::ours(device)) return -1;  // no kernel device index
  return forward(REAL(ibv_get_device_index, "IBVERBS_1.9"), -1, device);
}

// ---------------------------------------------------------------- contexts

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
  auto* c = make<Context>();
  if (c == nullptr) return nullptr;
  if (pipe2(c->async_pipe, O_CLOEXEC) != 0) {
    delete c;
    return nullptr;
  }
  // The context's command file: a kernel context's is its uverbs file, which
  // programs may dup() and hand to ibv_import_device; tita's is a file of its
  // own (distinct inode), which ibv_import_device recognises and refuses.
  c->cmd_file = memfd_create("tita-verbs-context", MFD_CLOEXEC);
  init_context(c, d);
  d->attach(c);
  return &c->vctx.context;
}

TITA_EXPORT int ibv_close_device(ibv_context* ctx) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_close_device, "IBVERBS_1.1"), EINVAL, ctx);
  Context* c = context_of(ctx);
  Device* d = c->dev;
  // What the application left behind goes with its context.
  std::vector<Qp*> qps(c->qps.begin(), c->qps.end());
  for (Qp* q : qps) destroy_qp(q, false);
  std::vector<Srq*> srqs(c->srqs.begin(), c->srqs.end());
  for (Srq* s : srqs) destroy_srq(s, false);
  std::vector<Mr*> mrs(c->mrs.begin(), c->mrs.end());
  for (Mr* m : mrs) dereg_mr(m);
  std::vector<Cq*> cqs(c->cqs.begin(), c->cqs.end());
  for (Cq* q : cqs) destroy_cq(q, false);
  std::vector<Ah*> ahs(c->ahs.begin(), c->ahs.end());
  for (Ah* a : ahs) destroy_ah(a);
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
  if (c->cmd_file >= 0) close(c->cmd_file);
  pthread_mutex_destroy(&ctx->mutex);
  delete c;
  return 0;
}

// A dup() of a context's command file, handed over to share its objects:
// tita's objects live in one process.
TITA_EXPORT ibv_context* ibv_import_device(int cmd_fd) {
  struct stat st;
  if (fstat(cmd_fd, &st) == 0) {
    std::string err;
    if (Device* d = Device::get(&err); d != nullptr) {
      if (Context* c = d->context_of_file(st.st_dev, st.st_ino)) {
        errno = refuse(&c->vctx.context, "ibv_import_device (objects live in one process)");
        return nullptr;
      }
    }
  }
  return forward(REAL(ibv_import_device, "IBVERBS_1.10"), nullptr, cmd_fd);
}

// ---------------------------------------------------------------- asynchronous events

TITA_EXPORT int ibv_get_async_event(ibv_context* ctx, ibv_async_event* event) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_get_async_event, "IBVERBS_1.1"), -1, ctx, event);
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
    count_handed_out(cq->cq, &cq->async_events_sent);
  } else if (event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
    Srq* srq = srq_of(event->element.srq);
    count_handed_out(srq->srq, &srq->async_events_sent);
  } else if (event->event_type != IBV_EVENT_PORT_ACTIVE && event->event_type != IBV_EVENT_PORT_ERR) {
    Qp* qp = qp_of(event->element.qp);
    count_handed_out(qp->qp, &qp->async_events_sent);
  }
  return 0;
}

TITA_EXPORT void ibv_ack_async_event(ibv_async_event* event) {
  switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
      if (Device::ours(event->element.cq->context)) {
        count_acked(*event->element.cq, &event->element.cq->async_events_completed, 1);
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
        count_acked(*event->element.qp, &event->element.qp->events_completed, 1);
        return;
      }
      break;
    case IBV_EVENT_SRQ_LIMIT_REACHED:
    case IBV_EVENT_SRQ_ERR:
      if (Device::ours(event->element.srq->context)) {
        count_acked(*event->element.srq, &event->element.srq->events_completed, 1);
        return;
      }
      break;
    default:
      break;  // port events count nothing, in libibverbs too
  }
  if (auto f = REAL(ibv_ack_async_event, "IBVERBS_1.1")) f(event);
}

}  // namespace tita::verbs
