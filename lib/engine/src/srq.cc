// Shared receive queues (ibv_create_srq, ibv_post_srq_recv, ibv_modify_srq,
// ibv_query_srq, ibv_destroy_srq). A QP made with an SRQ has a receive ring of
// one slot: when a message needs a receive (a SEND's first packet, a WRITE
// with immediate's last) and the slot is empty, the responder's
// CHECK_RESOURCES moves the SRQ's oldest WQE there (srq_take); everything
// after - scatter, length and protection errors, completion, flush at error -
// is the QP's ordinary receive path. An empty SRQ is an RNR NAK, as an empty
// receive queue is.
#include <algorithm>
#include <cerrno>
#include <string>

#include "engine_impl.h"

namespace tita::engine {

namespace {
constexpr uint32_t kMaxSrqWr = 1u << 20;
}

bool Engine::Impl::srq_take(Qp& qp) {
  Srq& s = srqs[qp.cold.init.srq];
  if (s.head == s.tail) return false;
  qp.resp.rq[qp.resp.rq_tail] = s.ring[s.head];
  qp.resp.rq_tail = (qp.resp.rq_tail + 1) & qp.resp.rq_mask;
  s.head = (s.head + 1) % s.size();
  if (s.limit != 0 && s.queued() < s.limit) {
    // Once per arming (IBA 11.5.2.4): the application arms it again with modify_srq.
    s.limit = 0;
    Event e;
    e.kind = EventKind::kSrqLimitReached;
    e.qp_num = qp.qpn;
    e.srq = qp.cold.init.srq;
    raise(e);
  }
  return true;
}

int Engine::create_srq(uint32_t pd, SrqAttr* attr, uint32_t* srq) {
  Impl& m = *impl_;
  if (!m.pd_live(pd) || attr->max_wr == 0 || attr->max_wr > kMaxSrqWr || attr->max_sge == 0 ||
      attr->max_sge > kMaxSge || attr->srq_limit > attr->max_wr) {
    return -EINVAL;
  }
  if (m.srqs.empty()) m.srqs.emplace_back();  // handle 0 is "none"
  uint32_t index = 1;
  while (index < m.srqs.size() && m.srqs[index].valid) ++index;
  if (index == m.srqs.size()) m.srqs.emplace_back();
  Srq& s = m.srqs[index];
  s = Srq{};
  s.ring.resize(attr->max_wr + 1);
  s.pd = pd;
  s.max_sge = attr->max_sge;
  s.limit = attr->srq_limit;
  s.valid = true;
  *srq = index;
  return 0;
}

int Engine::modify_srq(uint32_t srq, const SrqAttr& attr, uint32_t mask, std::string* err) {
  Impl& m = *impl_;
  auto fail = [err](std::string why) {
    if (err) *err = "modify_srq: " + std::move(why);
    return -EINVAL;
  };
  if (!m.srq_live(srq)) return fail("no SRQ " + std::to_string(srq));
  if (mask & ~(kSrqMaxWr | kSrqLimit)) return fail("attribute mask bits beyond IBV_SRQ_MAX_WR and IBV_SRQ_LIMIT");
  Srq& s = m.srqs[srq];
  const uint32_t max_wr = (mask & kSrqMaxWr) ? attr.max_wr : s.size() - 1;
  if (mask & kSrqMaxWr) {
    if (attr.max_wr == 0 || attr.max_wr > kMaxSrqWr) return fail("max_wr " + std::to_string(attr.max_wr) + " outside 1..2^20");
    if (attr.max_wr < s.queued()) {
      return fail("max_wr " + std::to_string(attr.max_wr) + " is below the " + std::to_string(s.queued()) +
                  " WQEs queued");
    }
  }
  if ((mask & kSrqLimit) && attr.srq_limit > max_wr) {
    return fail("srq_limit " + std::to_string(attr.srq_limit) + " is above max_wr " + std::to_string(max_wr));
  }
  if ((mask & kSrqMaxWr) && attr.max_wr + 1 != s.size()) {
    std::vector<RecvWqe> ring(attr.max_wr + 1);
    const uint32_t n = s.queued();
    for (uint32_t i = 0; i < n; ++i) ring[i] = s.ring[(s.head + i) % s.size()];
    s.ring = std::move(ring);
    s.head = 0;
    s.tail = n;
  }
  if (mask & kSrqLimit) s.limit = attr.srq_limit;
  return 0;
}

int Engine::query_srq(uint32_t srq, SrqAttr* attr) const {
  const Impl& m = *impl_;
  if (!m.srq_live(srq)) return -EINVAL;
  const Srq& s = m.srqs[srq];
  attr->max_wr = s.size() - 1;
  attr->max_sge = s.max_sge;
  attr->srq_limit = s.limit;
  return 0;
}

int Engine::destroy_srq(uint32_t srq) {
  Impl& m = *impl_;
  if (!m.srq_live(srq)) return -EINVAL;
  if (m.srqs[srq].users != 0) return -EBUSY;
  m.srqs[srq] = Srq{};
  return 0;
}

int Engine::post_srq_recv(uint32_t srq, const RecvWr* wr, const RecvWr** bad) {
  Impl& m = *impl_;
  Srq* s = m.srq_live(srq) ? &m.srqs[srq] : nullptr;
  for (; wr != nullptr; wr = wr->next) {
    int rc = 0;
    if (s == nullptr || wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > s->max_sge ||
        (wr->num_sge > 0 && wr->sg_list == nullptr)) {
      rc = -EINVAL;
    } else if ((s->tail + 1) % s->size() == s->head) {
      rc = -ENOMEM;
    }
    if (rc != 0) {
      if (bad) *bad = wr;
      return rc;
    }
    s->ring[s->tail] = to_wqe(*wr);
    s->tail = (s->tail + 1) % s->size();
  }
  return 0;
}

}  // namespace tita::engine
