// Completion queues and completion channels. A CQ exists on every lane
// (engine) with one number: ibv_poll_cq drains its part on each in turn,
// ibv_req_notify_cq arms each, and the first lane's event is the arming's one
// event. Completion events reach the application through the channel's pipe;
// ibv_destroy_cq waits for the acknowledgement of those it read.
#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "interpose.h"
#include "tita/engine/verbs.h"

namespace tita::verbs {
namespace {

constexpr uint8_t kRoceV2Ipv4PacketType = 0x8 | 0x2;

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
      o.src_qp = w.src_qp;
      o.wc_flags = (w.with_imm ? IBV_WC_WITH_IMM : 0) | (w.grh ? IBV_WC_GRH : 0);
      o.pkey_index = 0;
      o.slid = 0;
      // RoCE has no SL on the wire. For a UD receive, sl says which network
      // header the GRH area holds, as ConnectX reports it (bit 3: a UDP
      // header, RoCEv2; bits 2:0: 2 IPv4, 1 IPv6); UCX's ud_verbs reads it to
      // find the destination address there. tita0's GID is IPv4: always 0xa.
      o.sl = w.grh ? kRoceV2Ipv4PacketType : w.sl;
      o.dlid_path_bits = 0;
    }
    total += got;
    if (got < 64) break;
  }
  return total;
}

}  // namespace

// ---------------------------------------------------------------- the ops libibverbs calls inline

int op_poll_cq(ibv_cq* ibcq, int n, ibv_wc* wc) {
  Cq* cq = cq_of(ibcq);
  if (cq->ex != nullptr) {  // an extended CQ: what start_poll took and nobody consumed comes first
    const int got = take_polled(cq, n, wc);
    if (got > 0) return got;
  }
  return poll_engine(cq, n, wc);
}

int poll_engine(Cq* cq, int n, ibv_wc* wc) {
  Device* d = dev_of(cq->cq.context);
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

// ---------------------------------------------------------------- destruction (also by ibv_close_device)

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
    wait_acked(cq->cq, [cq] {
      return cq->cq.comp_events_completed == cq->comp_events_sent &&
             cq->cq.async_events_completed == cq->async_events_sent;
    });
  }
  if (cq->cq.channel != nullptr) {
    pthread_mutex_lock(&cq->cq.context->mutex);
    --cq->cq.channel->refcnt;
    pthread_mutex_unlock(&cq->cq.context->mutex);
  }
  Context* c = context_of(cq->cq.context);
  untrack(c, c->cqs, cq);
  destroy_event_sync(cq->cq);
  release_cq_ex(cq);
  delete cq;
  return 0;
}

// ---------------------------------------------------------------- completion queues and channels

TITA_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_create_comp_channel, "IBVERBS_1.0"), nullptr, ctx);
  auto* ch = make<Channel>();
  if (ch == nullptr) return nullptr;
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
  track(c, c->channels, ch);
  return &ch->ch;
}

TITA_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (!Device::ours(channel->context)) return forward(REAL(ibv_destroy_comp_channel, "IBVERBS_1.0"), EINVAL, channel);
  pthread_mutex_lock(&channel->context->mutex);
  const bool busy = channel->refcnt != 0;
  pthread_mutex_unlock(&channel->context->mutex);
  if (busy) return EBUSY;
  auto* ch = reinterpret_cast<Channel*>(channel);
  Context* c = context_of(channel->context);
  untrack(c, c->channels, ch);
  close(ch->ch.fd);
  close(ch->write_fd);
  delete ch;
  return 0;
}

TITA_EXPORT ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                                  int comp_vector) {
  if (!Device::ours(ctx)) {
    return forward(REAL(ibv_create_cq, "IBVERBS_1.1"), nullptr, ctx, cqe, cq_context, channel, comp_vector);
  }
  Device* d = dev_of(ctx);
  if (cqe < 1 || cqe > kMaxCqe || comp_vector != 0 || (channel != nullptr && channel->context != ctx)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* cq = make<Cq>();
  if (cq == nullptr) return nullptr;
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
  init_event_sync(q);
  q.comp_events_completed = 0;
  q.async_events_completed = 0;
  if (channel != nullptr) {
    pthread_mutex_lock(&ctx->mutex);
    ++channel->refcnt;
    pthread_mutex_unlock(&ctx->mutex);
  }
  d->bind_cq(cq->id, cq);
  Context* c = context_of(ctx);
  track(c, c->cqs, cq);
  return &q;
}

TITA_EXPORT int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (!Device::ours(cq->context)) return forward(REAL(ibv_resize_cq, "IBVERBS_1.1"), EINVAL, cq, cqe);
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
  if (!Device::ours(cq->context)) return forward(REAL(ibv_destroy_cq, "IBVERBS_1.1"), EINVAL, cq);
  return destroy_cq(cq_of(cq), true);
}

TITA_EXPORT int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  if (!Device::ours(channel->context)) {
    return forward(REAL(ibv_get_cq_event, "IBVERBS_1.1"), -1, channel, cq, cq_context);
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
  count_handed_out(c->cq, &c->comp_events_sent);
  *cq = &c->cq;
  *cq_context = c->cq.cq_context;
  return 0;
}

TITA_EXPORT void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (!Device::ours(cq->context)) {
    if (auto f = REAL(ibv_ack_cq_events, "IBVERBS_1.1")) f(cq, nevents);
    return;
  }
  count_acked(*cq, &cq->comp_events_completed, nevents);
}

}  // namespace tita::verbs
