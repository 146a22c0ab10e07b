// Scheduling: the ready ring of QPs that may send now, the timing wheel of
// their deadlines (pacing, RTO, RNR wait, CC timer, path and RACK checks),
// and Engine::poll, which runs both and hands frames to the host.
#include <algorithm>

#include "engine_impl.h"

namespace tita::engine {

void Engine::Impl::make_ready(Qp& qp) {
  if (qp.in_ready) return;
  qp.in_ready = true;
  if (ready_count == ready.size()) grow_ring(ready, ready_head, ready_count, SIZE_MAX);
  ready[(ready_head + ready_count) % ready.size()] = qp.index;
  ++ready_count;
}

// Puts the QP where it belongs: in the ready ring if it may send now, and in the
// timing wheel at its earliest deadline (pacing, RTO, RNR wait, CC timer).
void Engine::Impl::reconsider(Qp& qp) {
  if (qp.state != QpState::kRts && qp.state != QpState::kRtr) return;
  uint64_t wake = std::min({qp.comp.rto_deadline_ns, qp.comp.rnr_deadline_ns, qp.flow.next_timer_ns(),
                           qp.cold.path ? qp.cold.path->deadline_ns : kNever, qp.cold.spray ? qp.cold.spray->rack_deadline_ns : kNever});
  // A QP already in the ready ring gets its turn (and is reconsidered then).
  if (!qp.in_ready && has_work(qp)) {
    const uint64_t pace_ns = (qp.req.next_send_ps + 999) / 1000;
    if (pace_ns <= now_ns) {
      make_ready(qp);
    } else {
      wake = std::min(wake, pace_ns);
    }
  }
  // The wheel entry only moves earlier: a later deadline is found when it fires.
  if (wake != kNever && (!wheel.scheduled(qp.index) || wake < wheel.deadline(qp.index))) {
    wheel.schedule(qp.index, wake);
  }
}

void Engine::Impl::wake(Qp& qp) {
  if (qp.state != QpState::kRts && qp.state != QpState::kRtr) return;
  if (qp.comp.rnr_deadline_ns <= now_ns) on_rnr_wait_over(qp);
  if (qp.comp.rto_deadline_ns <= now_ns) on_timeout(qp);
  if (qp.flow.next_timer_ns() <= now_ns) qp.flow.on_timer(now_ns);
  if (qp.cold.path && qp.cold.path->deadline_ns <= now_ns) path_check(qp);
  if (qp.cold.spray && qp.cold.spray->rack_deadline_ns <= now_ns) {
    if (qp.spraying()) {
      spray_detect_losses(qp);
    } else {
      qp.cold.spray->rack_deadline_ns = kNever;
    }
  }
  reconsider(qp);
}

bool Engine::Impl::send_turn(Qp& qp) {
  if (qp.ud) return ud_send_one(qp);
  if (qp.resp.reads_count > 0 && (qp.state == QpState::kRts || qp.state == QpState::kRtr)) {
    return send_read_response(qp);
  }
  return send_one(qp);
}

void Engine::poll(uint64_t now_ns) {
  Impl& m = *impl_;
  m.now_ns = std::max(m.now_ns, now_ns);
  if (m.now_ns >= m.arp_deadline_ns) [[unlikely]] m.arp_tick();
  m.loop_deliver();
  m.flush_control();
  m.wheel.advance(m.now_ns, [&m](uint32_t index) {
    if (m.qps[index] && m.qps[index]->valid) m.wake(*m.qps[index]);
  });
  // Round robin over the QPs that may send: one packet per turn.
  uint32_t budget = m.io->tx_space();
  uint32_t turns = m.ready_count;
  while (budget > 0 && m.ready_count > 0) {
    const uint32_t index = m.ready[m.ready_head];
    m.ready_head = (m.ready_head + 1) % static_cast<uint32_t>(m.ready.size());
    --m.ready_count;
    Qp* qp = m.qps[index].get();
    if (qp == nullptr || !qp->valid) continue;
    qp->in_ready = false;
    // A QP talking to this engine sends onto the loop: empty it first, here
    // between turns, where delivering (and what it changes) is safe.
    if (qp->loopback && m.loop_count + 2 > m.loop.size()) m.loop_deliver();
    if (m.send_turn(*qp)) --budget;
    m.reconsider(*qp);
    if (--turns == 0) {
      // Every ready QP had a turn; control frames made meanwhile go first.
      // (Data frames go to the host a burst at a time, not per round.)
      if (m.control_count > 0) {
        m.flush_control();
        budget = std::min(budget, m.io->tx_space());
      }
      turns = m.ready_count;
    }
  }
  m.flush_control();
  m.loop_deliver();
  m.settle();
}

uint64_t Engine::next_wakeup_ns() const {
  Impl& m = *impl_;
  if (m.loop_count > 0) return m.now_ns;
  if (m.control_count > 0 || m.ready_count > 0) {
    if (m.io->tx_space() > 0) return m.now_ns;
  }
  return std::min(m.wheel.next_expiry_ns(), m.arp_deadline_ns);
}

}  // namespace tita::engine
