// Control frames (ACKs, NAKs, CNPs): queued in the control ring while the
// port has no room, merged per QP where a newer one says all an older one
// would, built when they leave, and handed to the host ahead of data.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "engine_impl.h"

namespace tita::engine {

using wire::Opcode;

ControlFrame* Engine::Impl::waiting_control(uint32_t position, uint32_t qpn, ControlFrame::Kind kind) {
  const uint32_t ahead = position - static_cast<uint32_t>(control_popped);  // modulo 2^32, as stored
  if (position == RespState::kNoControl || ahead >= control_count) return nullptr;
  ControlFrame& c = control[(control_head + ahead) % control.size()];
  return c.qp_num == qpn && c.kind == kind && !c.loopback ? &c : nullptr;
}

// Control frames wait here while the port has no room (a PFC pause, or data
// filling the port), and ACKs at least until the end of the receive burst.
// ACKs and sequence NAKs without a SACK are cumulative: a new one takes the
// place of the QP's one still waiting, adding its CE count, so a paused NIC
// neither loses the last ACK of a message nor a CE mark, and its ring holds at
// most one per QP. Their frames are built when they leave (flush_control):
// what a newer one changes is a few fields, and an ACK per packet for the
// algorithms that ask for it costs one frame per burst. A CNP waiting says
// what a new one would. Any other control frame (a fatal NAK) is built now and
// keeps its order: later ACKs queue behind it.
EchoCopy Engine::Impl::copy_echo(const Echo& e) const {
  EchoCopy c;
  c.on = cfg.telemetry;
  c.ce_packets = e.ce_packets;
  c.path_hops = e.path_hops;
  c.udp_sport = e.udp_sport;
  c.sack_psn = e.sack_psn;
  if (const wire::TelemetryHdr* in = e.trailer; in != nullptr && c.on) {
    c.ts_ns = in->ts_ns.get();
    c.n_hops = in->hops();
    c.overflow = in->overflow();
    std::memcpy(c.hops, wire::telemetry_hops(in), c.n_hops * sizeof(wire::TelemetryHop));
  }
  return c;
}

Engine::Impl::Queued Engine::Impl::queue_control(Qp& qp, const wire::HeaderTemplate& hdr,
                                                 const wire::TransportFields& t, const EchoCopy* echo) {
  using Kind = ControlFrame::Kind;
  // A selective-repeat NAK names one packet that arrived (its SACK): a newer
  // one does not say that packet arrived too, so each is sent (a sender that
  // sprays over paths learns from every one which packets got through).
  const bool sack = echo != nullptr && echo->sack_psn >= 0;
  const bool cumulative = t.opcode == Opcode::kAck && !sack &&
                          (wire::aeth::type(t.syndrome) == wire::aeth::kAck ||
                           t.syndrome == wire::aeth::nak(wire::aeth::kNakPsnSequenceError));
  const Kind kind = cumulative ? Kind::kAck : t.opcode == Opcode::kCnp ? Kind::kCnp : Kind::kOther;
  ControlFrame* w = kind == Kind::kAck ? waiting_control(qp.resp.waiting_ack, qp.qpn, kind)
                    : kind == Kind::kCnp ? waiting_control(qp.resp.waiting_cnp, qp.qpn, kind)
                                         : nullptr;
  Queued result = Queued::kNew;
  uint8_t ce_before = 0;
  EchoCopy none;
  none.on = cfg.telemetry;
  if (w != nullptr) {
    ++counters.control_coalesced;
    if (kind == Kind::kCnp) return Queued::kMerged;
    ce_before = w->ce_packets;  // the one it replaces echoed marks: they are not lost
    if (echo == nullptr) echo = &none;
    result = Queued::kMerged;
  } else if (control_count == control.size() && !grow_ring(control, control_head, control_count, cfg.control_ring))
      [[unlikely]] {
    ++counters.control_ring_full;
    return Queued::kDropped;
  } else {
    const auto position = static_cast<uint32_t>(control_popped + control_count);
    w = &control[(control_head + control_count) % control.size()];
    ++control_count;
    if (kind == Kind::kAck) qp.resp.waiting_ack = position;
    if (kind == Kind::kCnp) qp.resp.waiting_cnp = position;
    if (kind == Kind::kOther) qp.resp.waiting_ack = RespState::kNoControl;
  }
  ControlFrame& c = *w;
  c.kind = kind;
  c.qp_num = qp.qpn;
  c.priority = qp.cold.attr.ah_attr.vlan ? qp.cold.attr.ah_attr.pcp : 0;
  c.loopback = qp.loopback;
  c.ce_packets = echo != nullptr ? static_cast<uint8_t>(std::min(255, echo->ce_packets + ce_before)) : 0;
  if (kind == Kind::kAck) {
    // Into the slot, as bytes: the fields, the echo's used part (its INT
    // records are most of it) with the CE marks of the ACK it replaces.
    const PendingAck::Head head{t.psn, t.msn, t.syndrome};
    std::memcpy(c.data, &head, sizeof head);
    uint8_t* e = c.data + offsetof(PendingAck, echo);
    const uint32_t hops = echo != nullptr ? echo->n_hops : 0;
    std::memcpy(e, echo != nullptr ? echo : &none, PendingAck::bytes(hops) - offsetof(PendingAck, echo));
    if (echo == nullptr) e[offsetof(EchoCopy, on)] = 0;  // no trailer
    e[offsetof(EchoCopy, ce_packets)] = c.ce_packets;
    c.pending = true;
    c.len = 0;
    return result;
  }
  // Other control frames are never merged: the echo as it is.
  c.pending = false;
  build_control(c, hdr, t, echo);
  return result;
}

void Engine::Impl::build_control(ControlFrame& c, const wire::HeaderTemplate& hdr, const wire::TransportFields& t,
                                 const EchoCopy* echo) {
  c.len = hdr.write(t, 0, c.data);
  if (echo != nullptr && echo->udp_sport != 0) {  // before the ICRC, which covers it
    set_udp_sport(hdr, c.data, echo->udp_sport);
  }
  if (cfg.compute_icrc) {
    wire::finish_frame(c.data, c.len, {}, c.data + c.len);
  } else {
    std::memset(c.data + c.len, 0, wire::kIcrcBytes);
  }
  c.len += wire::kIcrcBytes;
  if (echo != nullptr && echo->on) {
    uint8_t* tr = c.data + c.len;
    c.len += wire::telemetry_write(tr, wire::TelemetryHdr::kEcho, echo->ts_ns, echo->ce_packets, echo->path_hops);
    if (echo->sack_psn >= 0) {
      tr[1] |= wire::TelemetryHdr::kSack;
      reinterpret_cast<wire::TelemetrySack*>(c.data + c.len)->psn.set(static_cast<uint32_t>(echo->sack_psn));
      c.len += sizeof(wire::TelemetrySack);
    }
    if (echo->n_hops > 0) {
      const uint32_t bytes = echo->n_hops * sizeof(wire::TelemetryHop);
      std::memcpy(c.data + c.len, echo->hops, bytes);
      c.len += bytes;
      tr[1] = static_cast<uint8_t>(tr[1] | echo->n_hops | (echo->overflow ? wire::TelemetryHdr::kOverflow : 0));
    }
  }
}

void Engine::Impl::flush_control() {
  // Data frames of this burst not yet handed over take their room first.
  const uint32_t room = control_count ? io->tx_space() : 0;
  uint32_t space = room > tx_count ? room - tx_count : 0;
  while (control_count > 0) {
    ControlFrame& c = control[control_head];
    if (c.pending) {
      // Built now, from the QP's current headers; dropped if the QP is gone.
      c.pending = false;
      Qp* qp = qp_by_num(c.qp_num);
      if (qp != nullptr) {
        PendingAck a;  // out of the slot first: the frame is built over it
        uint8_t n_hops;
        std::memcpy(&n_hops, c.data + offsetof(PendingAck, echo) + offsetof(EchoCopy, n_hops), 1);
        std::memcpy(&a, c.data, PendingAck::bytes(n_hops));
        wire::TransportFields t;
        t.opcode = Opcode::kAck;
        t.psn = a.head.psn;
        t.syndrome = a.head.syndrome;
        t.msn = a.head.msn;
        t.ecn = wire::kEcnNotEct;
        build_control(c, qp->resp_hdr(), t, &a.echo);
      }
    }
    if (c.len == 0) {  // its QP was destroyed meanwhile
      control_head = (control_head + 1) % static_cast<uint32_t>(control.size());
      --control_count;
      ++control_popped;
      continue;
    }
    if (c.loopback) {
      if (!loop_push(c.data, c.len, nullptr, 0, nullptr, 0)) break;
    } else {
      if (space == 0) break;
      --space;
      if (tx_count == kTxBurst) tx_flush();
      TxFrame& tx = tx_burst[tx_count++];
      tx.hdr = c.data;
      tx.hdr_len = c.len;
      tx.n_payload = 0;
      tx.tail = nullptr;
      tx.tail_len = 0;
      tx.priority = c.priority;
      tx.qp_num = c.qp_num;
      tx.control = true;
      tx.icrc_pending = false;  // summed when the frame was made
      tx.transient = false;
      tx.hold = 0;
    }
    control_head = (control_head + 1) % static_cast<uint32_t>(control.size());
    --control_count;
    ++control_popped;
  }
  tx_flush();  // before anything may queue a control frame into a slot popped here
}

}  // namespace tita::engine
