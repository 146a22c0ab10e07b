// The responder: what a QP does with an incoming request packet, and the
// READ responses and atomic acknowledgements it owes. It writes qp.resp (qp.h).
//
// Each packet walks a small state machine (as rxe_resp.c does): PSN check, then
// opcode sequence, length, resources and access, then execution and the ACK;
// any check may divert to a duplicate, out-of-order or NAK state. Memory is
// touched only in kExecute, after every check passed, so a request that is
// NAKed never writes a byte.
#include <algorithm>
#include <array>
#include <cstring>
#include <string_view>

#include "engine_impl.h"

namespace tita::engine {

using wire::Opcode;
using wire::psn_add;
using wire::psn_diff;
using wire::psn_distance;

namespace {

enum class Step : uint8_t {
  kCheckPsn,
  kDuplicate,
  kOutOfOrder,
  kCheckOpSequence,
  kCheckLength,
  kCheckResources,
  kCheckAccess,
  kExecute,
  kAcknowledge,
  kNakSequence,
  kNakRnr,
  kNakInvalid,
  kNakAccess,
  kNakRemoteOp,
  kDone,
};

[[maybe_unused]] constexpr std::array<std::string_view, 15> kStepNames = {
    "CHECK_PSN",       "DUPLICATE",  "OUT_OF_ORDER", "CHECK_OP_SEQUENCE", "CHECK_LENGTH",
    "CHECK_RESOURCES", "CHECK_ACCESS", "EXECUTE",    "ACKNOWLEDGE",       "NAK_SEQUENCE",
    "NAK_RNR",         "NAK_INVALID", "NAK_ACCESS",  "NAK_REMOTE_OP",     "DONE"};

}  // namespace

// Whether every SGE of a receive WQE lies in an MR of the QP's PD that allows
// local writes: checked before the first byte of a SEND is placed, so a SEND
// that is refused writes nothing.
bool receive_sges_valid(const Engine::Impl& m, const RecvWqe& r, uint32_t pd) {
  for (uint32_t i = 0; i < r.num_sge; ++i) {
    const Sge& s = r.sge[i];
    const Mr* mr = m.mr_by_key(s.lkey);
    if (mr == nullptr || mr->pd != pd || !(mr->access & kAccessLocalWrite) || !mr->contains(s.addr, s.length)) {
      return false;
    }
  }
  return true;
}

namespace {

Opcode read_response_opcode(uint32_t idx, uint32_t npkts) {
  if (npkts == 1) return Opcode::kReadResponseOnly;
  if (idx == 0) return Opcode::kReadResponseFirst;
  if (idx + 1 == npkts) return Opcode::kReadResponseLast;
  return Opcode::kReadResponseMiddle;
}

}  // namespace

// Copies `len` bytes to offset `offset` of an SGE list; false if an SGE is bad
// (its MR was deregistered since the message began).
bool scatter(const Engine::Impl& m, const RecvWqe& r, uint32_t pd, uint32_t offset, const uint8_t* src,
             uint32_t len) {
  for (uint32_t i = 0; i < r.num_sge && len > 0; ++i) {
    const Sge& s = r.sge[i];
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const Mr* mr = m.mr_by_key(s.lkey);
    if (mr == nullptr || mr->pd != pd || !(mr->access & kAccessLocalWrite) || !mr->contains(s.addr, s.length)) {
      return false;
    }
    const uint32_t take = std::min(len, s.length - offset);
    if (uint8_t* dst = mr->at(s.addr + offset)) std::memcpy(dst, src, take);
    src += take;
    len -= take;
    offset = 0;
  }
  return len == 0;
}

namespace {

struct Responder {
  Engine::Impl& m;
  Qp& qp;
  const wire::Packet& pkt;
  bool from_ooo;
  // Kept packets run when the one that fills their gap arrives: their ACKs
  // answer that arrival and take its UDP source port (a sprayed QP's value
  // that works now, not the one a kept packet came on long ago).
  uint16_t arrived_sport = 0;
  const wire::OpcodeInfo& op = *pkt.op;
  const uint32_t psn = pkt.psn();
  const uint32_t len = pkt.payload_len;
  const Mr* mr = nullptr;  // the target of a WRITE or READ, once checked
  bool placed = false;     // the WRITE's payload is in place already (respond_fast)

  Echo echo() const {
    Echo e;
    e.trailer = pkt.telemetry();
    e.ce_packets = qp.resp.ce_unacked;
    const uint8_t ttl = pkt.ip_version == 6 ? pkt.ipv6().hop_limit : pkt.ipv4().ttl;
    e.path_hops = ttl <= m.cfg.initial_ttl ? static_cast<uint8_t>(m.cfg.initial_ttl - ttl) : 0;
    if (qp.spraying()) e.udp_sport = m.echo_sport(qp, arrived_sport != 0 ? arrived_sport : pkt.udp().src_port.get());
    return e;
  }

  // A request refused, with the rule it broke: kept on the QP for the async
  // event that follows, so a user learns why (the PSN and opcode with it).
  Step refuse(Step nak, const char* why) {
    qp.cold.refused_why = why;
    qp.cold.refused_psn = psn;
    qp.cold.refused_opcode = static_cast<uint8_t>(pkt.bth().opcode);
    return nak;
  }
  Step invalid(const char* why) { return refuse(Step::kNakInvalid, why); }
  Step access(const char* why) { return refuse(Step::kNakAccess, why); }

  Step check_psn() {
    const int32_t d = psn_diff(psn, qp.resp.epsn);
    if (d < 0) return Step::kDuplicate;
    if (d > 0) return Step::kOutOfOrder;
    return Step::kCheckOpSequence;
  }

  Step duplicate() {
    ++qp.cold.counters.duplicates_received;
    m.path_on_duplicate(qp, psn);
    if (op.kind == wire::Kind::kAtomic) {
      // Never executed twice (IBA 9.7.5.1.4): answered again from the saved
      // result, unless its answer is still queued; too old to remember: dropped.
      for (uint32_t k = 0; k < qp.resp.reads_count; ++k) {
        const ReadJob& job = qp.cold.reads[(qp.cold.reads_head + k) % qp.cold.reads.size()];
        if (job.atomic && job.first_psn == psn) return Step::kDone;
      }
      for (const AtomicResult& r : qp.cold.atomic_results) {
        if (r.valid && r.psn == psn) {
          if (qp.resp.reads_count == qp.cold.reads.size()) return Step::kDone;
          push_atomic(r.orig);
          ++qp.cold.counters.atomic_replays;
          return Step::kDone;
        }
      }
      return Step::kDone;
    }
    if (op.kind == wire::Kind::kReadRequest) {
      // A READ whose responses were lost is asked again from the first missing one:
      // answer from there. If its first answer is still going out, restart that.
      // Everything comes from this request, checked as a new one: its key may
      // name another region than the first one did.
      if (check_access() != Step::kExecute) return Step::kDone;
      for (uint32_t k = 0; k < qp.resp.reads_count; ++k) {
        ReadJob& job = qp.cold.reads[(qp.cold.reads_head + k) % qp.cold.reads.size()];
        if (!job.atomic && wire::psn_distance(psn, job.first_psn) < job.npkts) {
          const bool replay = job.replay;  // a replay asked again is still one
          start_read(job);
          job.replay = replay;
          // A go-back-N requester (Linux rxe, a RoCE NIC) asks again for
          // everything after this READ too, and drops any response before
          // those arrive: the answers queued behind it would be sent twice.
          // A tita requester asks for holes only and keeps the rest.
          if (!qp.peer_tita) drop_later();
          return Step::kDone;
        }
      }
      // Its first answer is done. From a go-back-N peer, what is queued for
      // later requests goes: it will ask for them again too.
      if (!qp.peer_tita) drop_later();
      if (qp.resp.reads_count < qp.cold.reads.size()) {
        push_read();
        qp.cold.reads[(qp.cold.reads_head + qp.resp.reads_count - 1) % qp.cold.reads.size()].replay = true;
      }
      return Step::kDone;
    }
    // Re-acknowledge, so a sender whose ACK was lost moves on. A
    // selective-repeat peer learns which packet came twice: a SACK of a PSN
    // the ACK already covers (a D-SACK, as TCP's RFC 2883) says its resend
    // was not needed, and a sprayed sender widens its reordering window.
    if (pkt.bth().ack_requested()) {
      Echo e = echo();
      if (qp.selective()) e.sack_psn = static_cast<int32_t>(psn);
      m.ack(qp, wire::aeth::ack(), psn_add(qp.resp.epsn, wire::kPsnMask), &e);
    }
    return Step::kDone;
  }

  Step out_of_order() {
    ++qp.cold.counters.out_of_order_received;
    if (!qp.selective()) {
      // Go-back-N: one NAK per gap; later packets are dropped until the gap fills.
      return qp.resp.nak_sent ? Step::kDone : Step::kNakSequence;
    }
    if (from_ooo) return Step::kDone;
    const int32_t d = psn_diff(psn, qp.resp.epsn);
    if (static_cast<uint32_t>(d) >= m.cfg.sr_window) return Step::kDone;  // beyond what the sender may have out
    keep();
    Echo e = echo();
    e.sack_psn = static_cast<int32_t>(psn);
    m.ack(qp, wire::aeth::nak(wire::aeth::kNakPsnSequenceError), qp.resp.epsn, &e);
    ++qp.cold.counters.nak_seq_sent;
    return Step::kDone;
  }

  // Selective repeat: keeps a copy of the frame in PSN order, once.
  void keep() {
    const uint32_t slot = pkt.frame_len <= m.ooo_slot_bytes ? m.ooo_alloc() : kNil;
    if (slot == kNil) {
      ++m.counters.ooo_pool_full;
      return;
    }
    uint32_t* link = &qp.resp.ooo_head;
    while (*link != kNil && psn_diff(m.ooo[*link].psn, psn) < 0) link = &m.ooo[*link].next;
    if (*link != kNil && m.ooo[*link].psn == psn) {
      // Already kept: the requester resent what our SACK said had arrived, so
      // the SACK was lost. A duplicate for path control's reverse-path rule.
      m.ooo_release(slot);
      m.path_on_duplicate(qp, psn);
      return;
    }
    OooSlot& s = m.ooo[slot];
    std::memcpy(s.frame, pkt.frame, pkt.frame_len);
    s.len = pkt.frame_len;
    s.psn = psn;
    s.next = *link;
    *link = slot;
    ++qp.resp.ooo_count;
    ++qp.cold.counters.ooo_buffered;
  }

  Step check_op_sequence() {
    switch (qp.resp.in_message) {
      case InMessage::kSend:
        return op.kind == wire::Kind::kSend && !op.starts_message()
                   ? Step::kCheckLength
                   : invalid("a packet that does not continue the SEND in progress");
      case InMessage::kWrite:
        return op.kind == wire::Kind::kWrite && !op.starts_message()
                   ? Step::kCheckLength
                   : invalid("a packet that does not continue the WRITE in progress");
      case InMessage::kNone:
        return op.starts_message() ? Step::kCheckLength : invalid("a middle or last packet with no message in progress");
    }
    return invalid("a packet out of its message's sequence");
  }

  Step check_length() {
    const bool full = op.position == wire::Position::kFirst || op.position == wire::Position::kMiddle;
    if (full ? len != qp.mtu() : len > qp.mtu()) {
      return invalid(full ? "a first or middle packet whose payload is not the path MTU" : "a payload longer than the path MTU");
    }
    return Step::kCheckResources;
  }

  bool consumes_receive() const {
    // A SEND takes its receive at its first packet; a WRITE with immediate at its last.
    return op.kind == wire::Kind::kSend ? op.starts_message() : op.kind == wire::Kind::kWrite && op.has(wire::kHasImm);
  }

  Step check_resources() {
    if (consumes_receive() && qp.resp.rq_head == qp.resp.rq_tail && (qp.cold.init.srq == 0 || !m.srq_take(qp))) {
      return Step::kNakRnr;  // no receive posted (on the QP, or on its SRQ)
    }
    if (op.kind == wire::Kind::kSend && op.starts_message() && !receive_sges_valid(m, qp.resp.rq[qp.resp.rq_head], qp.pd)) {
      // The posted buffer is not writable memory of this PD: the receive fails
      // with a protection error and the sender learns that we could not execute.
      m.complete(qp.recv_cq, {qp.resp.rq[qp.resp.rq_head].wr_id, WcStatus::kLocProtErr, WcOpcode::kRecv, false, 0, 0, qp.qpn});
      qp.resp.rq_head = (qp.resp.rq_head + 1) & qp.resp.rq_mask;
      return refuse(Step::kNakRemoteOp, "a posted receive that is not writable memory of the QP's PD");
    }
    if (op.kind == wire::Kind::kSend && qp.resp.recv_offset + len > qp.resp.rq[qp.resp.rq_head].length) {
      // The message is longer than the posted buffer: the receive fails, the sender is told.
      m.complete(qp.recv_cq, {qp.resp.rq[qp.resp.rq_head].wr_id, WcStatus::kLocLenErr, WcOpcode::kRecv, false, 0, 0, qp.qpn});
      qp.resp.rq_head = (qp.resp.rq_head + 1) & qp.resp.rq_mask;
      return invalid("a SEND longer than the receive posted for it");
    }
    // READs and atomics hold a responder resource until answered. A replay
    // (a repeated READ answered anew) holds none: a new request takes its slot,
    // and the requester asks again if it still misses those responses. Nor
    // does a READ asked again that its first answer had covered to the end:
    // a requester may complete it from those (the repeat was only late) and
    // post the next, and it never has more than max_rd_atomic outstanding,
    // oldest first, so the oldest job is then one it no longer waits for.
    if ((op.kind == wire::Kind::kReadRequest || op.kind == wire::Kind::kAtomic) && qp.resp.reads_count == qp.cold.reads.size() &&
        !drop_replay() && !drop_superseded()) {
      return invalid("more READs and atomics outstanding than max_dest_rd_atomic");
    }
    return Step::kCheckAccess;
  }

  Step check_access() {
    if (op.kind == wire::Kind::kSend) return Step::kExecute;
    if (op.kind == wire::Kind::kWrite && !op.starts_message()) {
      // Middle and Last continue the checked range; Last must end it exactly.
      if (len > qp.resp.write_remaining) return invalid("a WRITE longer than its RETH's length");
      if (op.ends_message() && len != qp.resp.write_remaining) return invalid("a WRITE ending short of its RETH's length");
      mr = &m.mrs[qp.resp.write_mr];
      return Step::kExecute;
    }
    if (op.kind == wire::Kind::kAtomic) {
      const wire::AtomicEth& a = *pkt.atomic_eth();
      const uint64_t va = a.va.get();
      mr = m.mr_by_key(a.rkey.get());
      if (mr == nullptr || mr->pd != qp.pd || !(mr->access & kAccessRemoteAtomic) ||
          !(qp.cold.attr.qp_access_flags & kAccessRemoteAtomic) || !mr->contains(va, sizeof(uint64_t))) {
        return access("an atomic's R_Key, PD, access rights or address range");
      }
      // Atomics work on naturally aligned 64-bit words: a misaligned one is an
      // invalid request (IBA C9-? / rxe's misaligned-atomic NAK).
      if (va % sizeof(uint64_t) != 0) return invalid("an atomic on a word not 8-byte aligned");
      return Step::kExecute;
    }
    const wire::Reth& reth = *pkt.reth();
    if (reth.dma_len.get() == 0) {
      // A zero-length READ or WRITE needs no valid R_Key or address (IBA C9-88).
      mr = nullptr;
      if (op.kind == wire::Kind::kWrite && !op.ends_message()) return invalid("a zero-length WRITE in several packets");
      return len == 0 ? Step::kExecute : invalid("payload on a zero-length READ or WRITE");
    }
    const uint32_t want = op.kind == wire::Kind::kWrite ? kAccessRemoteWrite : kAccessRemoteRead;
    mr = m.mr_by_key(reth.rkey.get());
    if (mr == nullptr) return access("an R_Key that names no memory region");
    if (mr->pd != qp.pd) return access("an R_Key of another protection domain");
    if (!(mr->access & want) || !(qp.cold.attr.qp_access_flags & want)) {
      return access("remote access the memory region or QP does not allow");
    }
    if (!mr->contains(reth.va.get(), reth.dma_len.get())) return access("a range outside the memory region");
    if (op.kind == wire::Kind::kWrite) {
      // First carries a full packet of a longer write; Only carries all of it.
      const uint32_t dma = reth.dma_len.get();
      if (op.ends_message() ? len != dma : len >= dma) return invalid("a WRITE whose first packet does not match its RETH's length");
    }
    return Step::kExecute;
  }

  // The responses to this READ request, from the region check_access() found.
  void start_read(ReadJob& job) {
    const wire::Reth& reth = *pkt.reth();
    job = ReadJob{};
    job.va = reth.va.get();
    job.remaining = reth.dma_len.get();
    job.psn = job.first_psn = psn;
    job.npkts = qp.packets_for(job.remaining);
    job.mr = mr ? static_cast<uint32_t>(mr - m.mrs.data()) : 0;
  }

  // Drops the queued answers to requests after this one (answers to earlier
  // ones, replays the peer asked for just before, stay), keeping the order.
  void drop_later() {
    const uint32_t size = static_cast<uint32_t>(qp.cold.reads.size());
    uint32_t kept = 0;
    for (uint32_t k = 0; k < qp.resp.reads_count; ++k) {
      const ReadJob& job = qp.cold.reads[(qp.cold.reads_head + k) % size];
      if (wire::psn_after(job.first_psn, psn)) {
        ++qp.cold.counters.read_jobs_dropped;
        continue;
      }
      if (kept != k) qp.cold.reads[(qp.cold.reads_head + kept) % size] = job;
      ++kept;
    }
    qp.resp.reads_count = kept;
  }

  // Removes the k-th job of the ring (the later ones move up).
  void remove_job(uint32_t k) {
    const uint32_t size = static_cast<uint32_t>(qp.cold.reads.size());
    for (uint32_t j = k; j + 1 < qp.resp.reads_count; ++j) {
      qp.cold.reads[(qp.cold.reads_head + j) % size] = qp.cold.reads[(qp.cold.reads_head + j + 1) % size];
    }
    --qp.resp.reads_count;
  }

  // Removes the oldest replay job from the ring; false if none.
  bool drop_replay() {
    const uint32_t size = static_cast<uint32_t>(qp.cold.reads.size());
    for (uint32_t k = 0; k < qp.resp.reads_count; ++k) {
      if (!qp.cold.reads[(qp.cold.reads_head + k) % size].replay) continue;
      remove_job(k);
      return true;
    }
    return false;
  }

  // Removes the job of the earliest request (by PSN, wherever it stands in the
  // ring) if every response of it has gone at least once: only a repeat of it
  // can then still be queued. False if not.
  bool drop_superseded() {
    if (qp.resp.reads_count == 0) return false;  // no ring (max_dest_rd_atomic 0), or nothing in it
    const uint32_t size = static_cast<uint32_t>(qp.cold.reads.size());
    uint32_t oldest = 0;
    for (uint32_t k = 1; k < qp.resp.reads_count; ++k) {
      if (wire::psn_before(qp.cold.reads[(qp.cold.reads_head + k) % size].first_psn,
                           qp.cold.reads[(qp.cold.reads_head + oldest) % size].first_psn)) {
        oldest = k;
      }
    }
    const ReadJob& job = qp.cold.reads[(qp.cold.reads_head + oldest) % size];
    if (wire::psn_after(psn_add(job.first_psn, job.npkts), qp.cold.reads_sent_end)) return false;
    remove_job(oldest);
    ++qp.cold.counters.read_jobs_superseded;
    return true;
  }

  void push_read() {
    start_read(qp.cold.reads[(qp.cold.reads_head + qp.resp.reads_count) % qp.cold.reads.size()]);
    ++qp.resp.reads_count;
  }

  // Queues the Atomic Acknowledge behind the READ responses still owed.
  void push_atomic(uint64_t orig) {
    ReadJob& job = qp.cold.reads[(qp.cold.reads_head + qp.resp.reads_count) % qp.cold.reads.size()];
    job = ReadJob{};
    job.atomic = true;
    job.orig = orig;
    job.psn = job.first_psn = psn;
    job.npkts = 1;
    ++qp.resp.reads_count;
  }

  // Carries out the atomic on the target word, atomically with respect to every
  // other access through this engine and to the host's CPUs.
  uint64_t execute_atomic() {
    const wire::AtomicEth& a = *pkt.atomic_eth();
    uint8_t* p = mr->at(a.va.get());
    if (p == nullptr) return 0;  // phantom memory: reads as zero, stores nothing
    auto* word = reinterpret_cast<uint64_t*>(p);
    if (static_cast<Opcode>(pkt.opcode()) == Opcode::kFetchAdd) {
      return __atomic_fetch_add(word, a.swap_add.get(), __ATOMIC_SEQ_CST);
    }
    uint64_t expected = a.compare.get();
    __atomic_compare_exchange_n(word, &expected, a.swap_add.get(), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;  // the old value, whether or not it matched
  }

  Step execute() {
    qp.cold.counters.rx_payload_bytes += len;
    switch (op.kind) {
      case wire::Kind::kSend: {
        const RecvWqe& r = qp.resp.rq[qp.resp.rq_head];
        if (!scatter(m, r, qp.pd, qp.resp.recv_offset, pkt.payload(), len)) {
          return refuse(Step::kNakRemoteOp, "a posted receive that is not writable memory of the QP's PD");
        }
        qp.resp.recv_offset += len;
        qp.resp.in_message = op.ends_message() ? InMessage::kNone : InMessage::kSend;
        if (op.ends_message()) {
          const bool imm = op.has(wire::kHasImm);
          m.complete(qp.recv_cq,
                     {r.wr_id, WcStatus::kSuccess, WcOpcode::kRecv, imm, qp.resp.recv_offset, imm ? pkt.imm()->imm.get() : 0,
                      qp.qpn},
                     pkt.bth().se());
          qp.resp.rq_head = (qp.resp.rq_head + 1) & qp.resp.rq_mask;
          qp.resp.recv_offset = 0;
          qp.resp.msn = psn_add(qp.resp.msn, 1);
        }
        break;
      }
      case wire::Kind::kWrite: {
        if (op.starts_message()) {
          const wire::Reth& reth = *pkt.reth();
          qp.resp.write_mr = mr ? static_cast<uint32_t>(mr - m.mrs.data()) : 0;
          qp.resp.write_va = reth.va.get();
          qp.resp.write_remaining = reth.dma_len.get();
          qp.resp.write_total = qp.resp.write_remaining;
        }
        if (len > 0 && !placed) {
          if (uint8_t* dst = mr->at(qp.resp.write_va)) std::memcpy(dst, pkt.payload(), len);
        }
        qp.resp.write_va += len;
        qp.resp.write_remaining -= len;
        qp.resp.in_message = op.ends_message() ? InMessage::kNone : InMessage::kWrite;
        if (op.ends_message()) {
          qp.resp.msn = psn_add(qp.resp.msn, 1);
          if (op.has(wire::kHasImm)) {
            m.complete(qp.recv_cq,
                       {qp.resp.rq[qp.resp.rq_head].wr_id, WcStatus::kSuccess, WcOpcode::kRecvRdmaWithImm, true, qp.resp.write_total,
                        pkt.imm()->imm.get(), qp.qpn},
                       pkt.bth().se());
            qp.resp.rq_head = (qp.resp.rq_head + 1) & qp.resp.rq_mask;
          }
        }
        break;
      }
      case wire::Kind::kReadRequest:
        push_read();
        qp.resp.msn = psn_add(qp.resp.msn, 1);
        // A READ takes one PSN per response packet.
        qp.resp.epsn = psn_add(qp.resp.epsn, qp.cold.reads[(qp.cold.reads_head + qp.resp.reads_count - 1) % qp.cold.reads.size()].npkts - 1);
        break;
      case wire::Kind::kAtomic: {
        const uint64_t orig = execute_atomic();
        AtomicResult& r = qp.cold.atomic_results[qp.cold.atomic_next];
        r = AtomicResult{psn, orig, true};
        qp.cold.atomic_next = (qp.cold.atomic_next + 1) % static_cast<uint32_t>(qp.cold.atomic_results.size());
        push_atomic(orig);
        qp.resp.msn = psn_add(qp.resp.msn, 1);
        ++qp.cold.counters.atomics_executed;
        break;
      }
      default:
        return invalid("an opcode the responder does not serve");
    }
    if (qp.state == QpState::kRtr && !qp.cold.comm_est) {
      qp.cold.comm_est = true;  // the first request reached a QP that is not yet sending
      m.raise(EventKind::kCommEstablished, 0, qp.qpn);
    }
    qp.resp.epsn = psn_add(qp.resp.epsn, 1);
    qp.resp.nak_sent = false;
    if (pkt.ecn == wire::kEcnCe) {
      ++qp.cold.counters.ecn_ce_received;
      if (qp.resp.ce_unacked < 255) ++qp.resp.ce_unacked;
    }
    if (pkt.ecn == wire::kEcnCe && cc::np_on_data(m.cfg.np, qp.cold.np, m.now_ns, true)) m.send_cnp(qp);
    return Step::kAcknowledge;
  }

  Step acknowledge() {
    // READ responses and the Atomic Acknowledge answer those requests.
    if (op.kind == wire::Kind::kReadRequest || op.kind == wire::Kind::kAtomic) return Step::kDone;
    ++qp.resp.unacked;
    if (pkt.bth().ack_requested() || qp.resp.unacked >= m.cfg.ack_unsolicited) {
      const Echo e = echo();
      m.ack(qp, wire::aeth::ack(), psn, &e);
    }
    return Step::kDone;
  }

  Step nak(uint8_t syndrome, uint32_t nak_psn, bool fatal, EventKind event = EventKind::kQpFatal) {
    if (fatal && qp.resp.reads_count > 0) {
      // IBA orders responses: what earlier READs and atomics are owed goes first,
      // then the NAK, then the QP stops (finish_deferred_ack).
      qp.cold.deferred_ack = true;
      qp.cold.deferred_syndrome = syndrome;
      qp.cold.deferred_psn = nak_psn;
      qp.resp.closing = true;
      qp.cold.closing_event = event;
      return Step::kDone;
    }
    const Echo e = echo();
    m.ack(qp, syndrome, nak_psn, &e);
    if (fatal) m.fail_responder(qp, event);
    return Step::kDone;
  }

  void run() {
    // The steps of an in-order request in their order, each taking the next
    // only when the one before chose it; any other choice (a duplicate, a
    // NAK) goes on through the state machine below.
    Step s = check_psn();
    if (s == Step::kCheckOpSequence) s = check_op_sequence();
    if (s == Step::kCheckLength) s = check_length();
    if (s == Step::kCheckResources) s = check_resources();
    if (s == Step::kCheckAccess) s = check_access();
    if (s == Step::kExecute) s = execute();
    if (s == Step::kAcknowledge) s = acknowledge();
    while (s != Step::kDone) {
      switch (s) {
        case Step::kCheckPsn: s = check_psn(); break;
        case Step::kDuplicate: s = duplicate(); break;
        case Step::kOutOfOrder: s = out_of_order(); break;
        case Step::kCheckOpSequence: s = check_op_sequence(); break;
        case Step::kCheckLength: s = check_length(); break;
        case Step::kCheckResources: s = check_resources(); break;
        case Step::kCheckAccess: s = check_access(); break;
        case Step::kExecute: s = execute(); break;
        case Step::kAcknowledge: s = acknowledge(); break;
        case Step::kNakSequence:
          qp.resp.nak_sent = true;
          ++qp.cold.counters.nak_seq_sent;
          s = nak(wire::aeth::nak(wire::aeth::kNakPsnSequenceError), qp.resp.epsn, false);
          break;
        case Step::kNakRnr:
          ++qp.cold.counters.rnr_nak_sent;
          s = nak(wire::aeth::rnr_nak(qp.cold.attr.min_rnr_timer), psn, false);
          break;
        case Step::kNakInvalid:
          ++qp.cold.counters.nak_invalid_sent;
          s = nak(wire::aeth::nak(wire::aeth::kNakInvalidRequest), psn, true, EventKind::kQpRequestError);
          break;
        case Step::kNakAccess:
          ++qp.cold.counters.nak_access_sent;
          s = nak(wire::aeth::nak(wire::aeth::kNakRemoteAccessError), psn, true, EventKind::kQpAccessError);
          break;
        case Step::kNakRemoteOp:
          s = nak(wire::aeth::nak(wire::aeth::kNakRemoteOperationalError), psn, true);
          break;
        case Step::kDone: break;
      }
    }
  }
};

}  // namespace

void Engine::Impl::respond(Qp& qp, const wire::Packet& pkt, bool from_ooo) {
  if (qp.resp.closing) [[unlikely]] return;  // a fatal NAK is queued: nothing more is accepted
  const uint32_t before = qp.resp.epsn;
  Responder{*this, qp, pkt, from_ooo}.run();
  if (qp.resp.epsn == before || qp.resp.ooo_head == kNil || qp.state == QpState::kError) return;
  // Selective repeat: the gap moved; execute what was kept and is now in order.
  while (qp.resp.ooo_head != kNil && qp.state != QpState::kError) {
    const uint32_t slot = qp.resp.ooo_head;
    const int32_t d = psn_diff(ooo[slot].psn, qp.resp.epsn);
    if (d > 0) break;
    qp.resp.ooo_head = ooo[slot].next;
    --qp.resp.ooo_count;
    if (d == 0) {
      wire::Packet kept;
      const OooSlot& s = ooo[slot];
      if (wire::parse(s.frame, s.len, &kept, {.verify_icrc = false}) ==
          wire::ParseError::kOk) {
        Responder{*this, qp, kept, true, pkt.udp().src_port.get()}.run();
      }
    }
    ooo_release(slot);
  }
}

bool Engine::Impl::respond_fast(Qp& qp, const wire::Packet& pkt, bool icrc_unchecked) {
  // run()'s in-order steps, none of which may choose another (every check of
  // a WRITE without immediate but check_resources is free of side effects,
  // and that one has nothing to check for it).
  Responder r{*this, qp, pkt, false};
  if (r.check_psn() != Step::kCheckOpSequence || r.check_op_sequence() != Step::kCheckLength ||
      r.check_length() != Step::kCheckResources || r.check_access() != Step::kExecute) {
    return false;
  }
  if (icrc_unchecked) {
    // A Middle or Last in order: its bytes go where this WRITE's next bytes
    // go, so the ICRC is checked as they are placed (one pass). A wrong one
    // leaves them in bytes the WRITE has yet to deliver, which the resent
    // packet overwrites before the WRITE can complete (and a WRITE that
    // fails leaves its target undefined anyway); the general path then finds
    // the ICRC wrong, counts the frame and drops it.
    if (!wire::icrc_check_copy(pkt, r.mr->at(qp.resp.write_va))) return false;
    r.placed = true;
  }
  if (r.execute() == Step::kAcknowledge) r.acknowledge();
  return true;
}

void Engine::Impl::ack(Qp& qp, uint8_t syndrome, uint32_t psn, const Echo* echo) {
  if (qp.mac_pending) return;  // no address to answer to yet; the requester will retry
  const bool fatal = wire::aeth::type(syndrome) == wire::aeth::kNak &&
                     wire::aeth::value(syndrome) != wire::aeth::kNakPsnSequenceError;
  if (qp.resp.reads_count > 0 && !fatal) {
    // IBA orders responses: an ACK must not overtake READ responses still to
    // go. It waits with what it echoes (a selective-repeat NAK's SACK, CE
    // marks); a newer one replaces it, adding the CE marks of the one before.
    const uint8_t ce_before = qp.cold.deferred_ack && qp.cold.deferred_has_echo ? qp.cold.deferred_echo.ce_packets : 0;
    qp.cold.deferred_ack = true;
    qp.cold.deferred_syndrome = syndrome;
    qp.cold.deferred_psn = psn;
    qp.cold.deferred_has_echo = echo != nullptr || ce_before > 0;
    if (echo != nullptr) qp.cold.deferred_echo = copy_echo(*echo);
    qp.cold.deferred_echo.ce_packets =
        static_cast<uint8_t>(std::min(255, (echo != nullptr ? echo->ce_packets : 0) + ce_before));
    return;
  }
  const EchoCopy copy = echo != nullptr ? copy_echo(*echo) : EchoCopy{};
  send_ack(qp, syndrome, psn, echo != nullptr ? &copy : nullptr);
}

void Engine::Impl::send_ack(Qp& qp, uint8_t syndrome, uint32_t psn, const EchoCopy* echo) {
  wire::TransportFields t;
  t.opcode = Opcode::kAck;
  t.psn = psn;
  t.syndrome = syndrome;
  t.msn = qp.resp.msn;
  t.ecn = wire::kEcnNotEct;
  const Queued q = queue_control(qp, qp.resp_hdr(), t, echo);
  if (wire::aeth::type(syndrome) == wire::aeth::kAck) {
    qp.cold.counters.acks_sent += q == Queued::kNew;
    qp.resp.unacked = 0;
    qp.resp.ce_unacked = 0;
  }
}

void Engine::Impl::finish_deferred_ack(Qp& qp) {
  if (!qp.cold.deferred_ack) return;
  qp.cold.deferred_ack = false;
  send_ack(qp, qp.cold.deferred_syndrome, qp.cold.deferred_psn,
           qp.cold.deferred_has_echo ? &qp.cold.deferred_echo : nullptr);
  if (qp.resp.closing) fail_responder(qp, qp.cold.closing_event);
}

// No WQE reports a responder's error: the QP goes to error and its owner
// learns why from an asynchronous event.
void Engine::Impl::fail_responder(Qp& qp, EventKind event) {
  qp.resp.closing = false;
  to_error(qp, WcStatus::kWrFlushErr);
  Event e{event, 0, qp.qpn};
  e.psn = qp.cold.refused_psn;
  e.opcode = qp.cold.refused_opcode;
  e.why = qp.cold.refused_why;
  raise(e);
}

namespace {

// Moves the high-water mark of answers sent (a repeat sends below it).
void note_sent(Qp& qp, uint32_t end) {
  if (wire::psn_after(end, qp.cold.reads_sent_end)) qp.cold.reads_sent_end = end;
}

}  // namespace

bool Engine::Impl::send_read_response(Qp& qp) {
  ReadJob& job = qp.cold.reads[qp.cold.reads_head];
  if (job.atomic) {
    // The Atomic Acknowledge: AETH and the value the target held before.
    wire::TransportFields f;
    f.opcode = Opcode::kAtomicAck;
    f.psn = job.psn;
    f.syndrome = wire::aeth::ack();
    f.msn = qp.resp.msn;
    f.orig = job.orig;
    f.ecn = wire::kEcnNotEct;
    const uint32_t frame_bytes = send_frame(qp, f, nullptr, 0, 0, false, true);
    pace(qp, frame_bytes);
    note_sent(qp, psn_add(job.psn, 1));
    qp.cold.reads_head = (qp.cold.reads_head + 1) % static_cast<uint32_t>(qp.cold.reads.size());
    --qp.resp.reads_count;
    if (qp.resp.reads_count == 0) finish_deferred_ack(qp);
    return true;
  }
  const Mr& mr = mrs[job.mr];
  const uint32_t idx = psn_distance(job.psn, job.first_psn);
  const uint32_t len = std::min(qp.mtu(), job.remaining);
  wire::TransportFields f;
  f.opcode = read_response_opcode(idx, job.npkts);
  f.psn = job.psn;
  f.syndrome = wire::aeth::ack();
  f.msn = qp.resp.msn;
  const wire::Segment seg{mr.at(job.va), len};
  const uint32_t frame_bytes = send_frame(qp, f, &seg, len ? 1 : 0, len, mr.phantom, true);
  ++qp.cold.counters.tx_data_packets;
  qp.cold.counters.tx_payload_bytes += len;
  qp.flow.on_send(now_ns, len);
  pace(qp, frame_bytes);
  job.va += len;
  job.remaining -= len;
  job.psn = psn_add(job.psn, 1);
  note_sent(qp, job.psn);
  if (psn_distance(job.psn, job.first_psn) >= job.npkts) {
    qp.cold.reads_head = (qp.cold.reads_head + 1) % static_cast<uint32_t>(qp.cold.reads.size());
    --qp.resp.reads_count;
    if (qp.resp.reads_count == 0) finish_deferred_ack(qp);
  }
  return true;
}

void Engine::Impl::send_cnp(Qp& qp) {
  // As ConnectX NICs send it: DSCP 48, UDP source port 0, BECN, PSN 0.
  wire::PathFields path = path_fields(qp);
  path.dscp = cfg.cnp_dscp;
  path.udp_src_port = 0;
  wire::HeaderTemplate cnp;
  cnp.init(path);
  wire::TransportFields t;
  t.opcode = Opcode::kCnp;
  t.becn = true;
  qp.cold.counters.cnps_sent += queue_control(qp, cnp, t, nullptr) == Queued::kNew;
}

}  // namespace tita::engine
