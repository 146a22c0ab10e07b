// What the interposed libibverbs entry points share. libtita-verbs.so exports
// libibverbs' public entry points (LD_PRELOAD; libtita-verbs.map gives them
// libibverbs' own symbol versions). Each one checks whether its object belongs
// to the tita device: if so it serves it from the engine, if not it calls the
// real libibverbs, which stays loaded for everything else (providers such as
// libmlx5 use its private ABI). The calls libibverbs makes inline
// (ibv_post_send, ibv_poll_cq, ibv_post_recv, ibv_req_notify_cq,
// ibv_query_port, ibv_query_device_ex, ibv_create_qp_ex) go through the
// context's ops tables, which point into the same files.
//
// One file per object family, as rdma-core's providers keep verbs.c, cq.c,
// qp.c apart:
//   context.cc      the device list, opening and closing a device, asynchronous events
//   query.cc        the device's, port's, GID's and P_Key's attributes; sysfs; L2 address of a GID
//   pd_mr.cc        protection domains and memory regions
//   cq.cc           completion queues, completion channels and their events, polling
//   qp.cc           RC queue pairs: create, modify, query, destroy; posting work
//   qp_ex.cc        the extended send API (ibv_create_qp_ex with send-ops flags, ibv_wr_*)
//   cq_ex.cc        extended CQs (ibv_create_cq_ex, start_poll/next_poll/end_poll, read_*)
//   srq.cc          shared receive queues
//   ah.cc           address handles (ibv_create_ah, ibv_init_ah_from_wc, ...), for UD QPs
//   ud.cc           what UD QPs add to qp.cc: their transitions' attributes and ibv_post_send
//   rdma_cm.cc      librdmacm's kernel interface (/dev/infiniband/rdma_cm) and the IB CM on QP 1
//   unsupported.cc  what tita does not have (multicast, memory windows, ...): EOPNOTSUPP, one line
//   interpose.cc    the engine's numbers checked against libibverbs'; the library's unload
// A new family (SRQ, UD and address handles, extended verbs, a CM) is a file
// of its own, with what the others need of it declared here.
//
// Conventions, as rdma-core's: functions that return objects set errno and
// return NULL; the others return an errno value (positive), except those that
// rdma-core documents as returning -1.
#pragma once

#include <dlfcn.h>
#include <pthread.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <new>
#include <set>
#include <type_traits>

#include "device.h"

#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define TITA_EXPORT extern "C" __attribute__((visibility("default")))

namespace tita::verbs {

namespace eng = tita::engine;

// ---------------------------------------------------------------- the device's limits

constexpr uint32_t kMaxCq = 1u << 16;
constexpr int kMaxCqe = 1 << 22;
constexpr uint32_t kMaxWr = 1u << 20;
constexpr uint8_t kLocalCaAckDelay = 15;
// A software device's vendor, as Linux's rxe reports it (IEEE has assigned
// no OUI to software RoCE): non-zero, so tools that require one (rdma-core's
// test suite) accept it, and unknown to those that tune per vendor (perftest).
constexpr uint32_t kVendorId = 0xFFFFFF;
// GID entries of the port: index 0 is the device's address; the rest are
// empty (room for more addresses, as a kernel RoCE port has).
constexpr int kGidTableLen = 16;

// ---------------------------------------------------------------- the real libibverbs

template <typename F>
F real(const char* name, const char* version) {
  void* p = dlvsym(RTLD_NEXT, name, version);
  return reinterpret_cast<F>(p);
}
#define REAL(fn, ver) (real<decltype(&fn)>(#fn, ver))

// What an entry point does with an object that is not ours: the real
// libibverbs' function `f` with the same arguments, or `absent` where
// libibverbs lacks it.
template <typename R, typename... P, typename... A>
R forward(R (*f)(P...), std::type_identity_t<R> absent, A... args) {
  return f != nullptr ? f(args...) : absent;
}

// ---------------------------------------------------------------- helpers

inline Device* dev_of(ibv_context* c) { return context_of(c)->dev; }
inline Cq* cq_of(ibv_cq* c) { return reinterpret_cast<Cq*>(c); }
inline Qp* qp_of(ibv_qp* q) { return reinterpret_cast<Qp*>(q); }
inline Pd* pd_of(ibv_pd* p) { return reinterpret_cast<Pd*>(p); }
inline Srq* srq_of(ibv_srq* s) { return reinterpret_cast<Srq*>(s); }
inline Ah* ah_of(ibv_ah* a) { return reinterpret_cast<Ah*>(a); }

// The UDP source port a RoCE v2 flow label selects (Linux's
// rdma_flow_label_to_udp_sport): the label's 20 bits folded into 14.
inline uint16_t udp_sport_of_flow_label(uint32_t fl) {
  const uint32_t low = fl & 0x03fff;
  const uint32_t high = (fl & 0xfc000) >> 14;
  return static_cast<uint16_t>((low ^ high) | 0xc000);
}

// A new object for the application, or nullptr with errno = ENOMEM.
template <typename T>
T* make() {
  T* obj = new (std::nothrow) T();
  if (obj == nullptr) errno = ENOMEM;
  return obj;
}

inline uint32_t mtu_bytes(ibv_mtu m) { return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128u << m : 0; }
inline ibv_mtu mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 1024: return IBV_MTU_1024;
    case 2048: return IBV_MTU_2048;
    default: return IBV_MTU_4096;
  }
}

// Events for an object being destroyed that nobody has read yet are dropped
// (their bytes in the pipe are skipped by ibv_get_async_event).
template <typename Match>
void forget_events(Context* c, Match match) {
  std::lock_guard lock(c->async_mu);
  c->async_events.erase(std::remove_if(c->async_events.begin(), c->async_events.end(), match), c->async_events.end());
}

// The context's record of the objects it made, which ibv_close_device
// releases if the application does not; changed under the context's lock.
template <typename T>
void track(Context* c, std::set<T*>& made, T* obj) {
  std::lock_guard lock(c->async_mu);
  made.insert(obj);
}
template <typename T>
void untrack(Context* c, std::set<T*>& made, T* obj) {
  std::lock_guard lock(c->async_mu);
  made.erase(obj);
}

// ---------------------------------------------------------------- libibverbs' event accounting

// A CQ or QP (ibv_cq, ibv_qp) counts, under the mutex libibverbs gives it, the
// events handed to the application and those the application acknowledged
// (ibv_ack_cq_events, ibv_ack_async_event); destroying it waits, on its cond,
// until the two meet.
template <typename Obj>
void init_event_sync(Obj& o) {
  pthread_mutex_init(&o.mutex, nullptr);
  pthread_cond_init(&o.cond, nullptr);
}
template <typename Obj>
void destroy_event_sync(Obj& o) {
  pthread_cond_destroy(&o.cond);
  pthread_mutex_destroy(&o.mutex);
}
template <typename Obj>
void count_handed_out(Obj& o, uint32_t* handed_out) {
  pthread_mutex_lock(&o.mutex);
  ++*handed_out;
  pthread_mutex_unlock(&o.mutex);
}
template <typename Obj>
void count_acked(Obj& o, uint32_t* acked, uint32_t n) {
  pthread_mutex_lock(&o.mutex);
  *acked += n;
  pthread_cond_signal(&o.cond);
  pthread_mutex_unlock(&o.mutex);
}
template <typename Obj, typename AllAcked>
void wait_acked(Obj& o, AllAcked all_acked) {
  pthread_mutex_lock(&o.mutex);
  while (!all_acked()) pthread_cond_wait(&o.cond, &o.mutex);
  pthread_mutex_unlock(&o.mutex);
}

// ---------------------------------------------------------------- across the families

// The ops libibverbs calls inline, which init_context (context.cc) puts in a
// context's tables.
int op_poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc);                      // cq.cc
int op_req_notify_cq(ibv_cq* ibcq, int solicited_only);               // cq.cc
int op_post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad);   // qp.cc
int op_post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad);   // qp.cc
ibv_qp* op_create_qp_ex(ibv_context*, ibv_qp_init_attr_ex* attr);     // qp.cc
int op_post_srq_recv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad);   // srq.cc
ibv_srq* op_create_srq_ex(ibv_context* ctx, ibv_srq_init_attr_ex* attr);  // srq.cc
int op_get_srq_num(ibv_srq* srq, uint32_t* srq_num);                  // srq.cc
ibv_cq_ex* op_create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr);  // cq_ex.cc
int op_query_port(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len);  // query.cc
int op_query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                       size_t len);                                   // query.cc

// What tita lacks (unsupported.cc): one line naming `what`, and EOPNOTSUPP
// (to return, or to put in errno). refuse_missing_ops fills the context's
// slots of features tita lacks with such refusals, so that libibverbs' inline
// functions (ibv_alloc_mw, ibv_open_xrcd, ...) say why too.
int refuse(ibv_context* ctx, const char* what);
void refuse_missing_ops(verbs_context& v);

// The extended send API (qp_ex.cc): the ibv_wr_* ops of a QP made with
// send-ops flags (those checked by the caller), and their release.
void enable_qp_ex(Qp* qp);
void release_qp_ex(Qp* qp);
// Extended CQs (cq_ex.cc): completions start_poll took from the engine that
// the application has not consumed come first in ibv_poll_cq; their release.
int take_polled(Cq* cq, int n, ibv_wc* wc);
// Up to n completions from the engine (every lane), none taken before: what
// ibv_poll_cq does for a plain CQ (cq.cc). -1: the CQ overflowed.
int poll_engine(Cq* cq, int n, ibv_wc* wc);
void release_cq_ex(Cq* cq);

// A doorbell after posting on a lane (the caller holds its lock): the work
// leaves now, unless the application polls its CQ anyway, whose next step
// sends what accumulated in one burst.
inline void doorbell(Device* d, uint32_t lane) {
  if (!d->app_polling(lane)) d->step(lane, false);
}

// Destruction, for the entry points and for ibv_close_device, which releases
// what the application left behind. `wait_events`: wait for the application's
// acknowledgement of the events it read (not at close).
int destroy_qp(Qp* qp, bool wait_events);  // qp.cc
int destroy_cq(Cq* cq, bool wait_events);  // cq.cc
int dereg_mr(Mr* mr);                      // pd_mr.cc
int dealloc_pd(Pd* pd);                    // pd_mr.cc
int destroy_srq(Srq* srq, bool wait_events);  // srq.cc
int destroy_ah(Ah* ah);                    // ah.cc

// UD QPs (ud.cc): one WR of ibv_post_send on a UD QP into the engine's form
// (0, or an errno value); the attributes ibv_modify_qp and ibv_query_qp add.
int ud_send_wr(Qp* qp, const ibv_send_wr* wr, eng::SendWr* out);
// The device's QP 1 (rdma_cm.cc's Communication Manager sends and receives
// its MADs there): a UD QP on lane 0 that answers to number 1.
ibv_qp* create_gsi_qp(ibv_pd* pd, ibv_qp_init_attr* attr);  // qp.cc
// Stops the CM's thread, if one runs (rdma_cm.cc), before the device goes.
void cm_shutdown();

}  // namespace tita::verbs
