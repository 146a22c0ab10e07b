// The QP state machine: the RC transition table, modify_qp (a check against
// the table and the attribute values, then the attributes applied and the
// transition's actions), the move to ERROR, and connect_rc.
#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <string>

#include "engine_impl.h"

namespace tita::engine {

using wire::Opcode;

std::string_view to_string(QpState s) {
  switch (s) {
    case QpState::kReset: return "RESET";
    case QpState::kInit: return "INIT";
    case QpState::kRtr: return "RTR";
    case QpState::kRts: return "RTS";
    case QpState::kSqd: return "SQD";
    case QpState::kSqe: return "SQE";
    case QpState::kError: return "ERROR";
  }
  return "?";
}

namespace {

bool valid_mtu(uint32_t mtu) { return mtu >= 256 && mtu <= 4096 && std::has_single_bit(mtu); }

// ---- the RC transition table (IBA 11.2.4.2, as Linux's qp_state_table has it):
// which transitions exist, what each requires and what it also accepts.
struct Transition {
  bool valid = false;
  uint32_t required = 0;
  uint32_t optional = 0;
};

constexpr uint32_t kRtsOptional = kQpCurState | kQpAccessFlags | kQpAltPath | kQpPathMigState | kQpMinRnrTimer;

constexpr std::array<std::array<Transition, kQpStates>, kQpStates> make_transitions() {
  std::array<std::array<Transition, kQpStates>, kQpStates> t{};
  auto set = [&t](QpState from, QpState to, uint32_t required, uint32_t optional) {
    t[static_cast<int>(from)][static_cast<int>(to)] = {true, required, optional};
  };
  using S = QpState;
  set(S::kReset, S::kReset, 0, 0);
  set(S::kReset, S::kInit, kQpToInitRequired, kQpRecovery);
  set(S::kInit, S::kReset, 0, 0);
  set(S::kInit, S::kError, 0, 0);
  set(S::kInit, S::kInit, 0, kQpPkeyIndex | kQpPort | kQpAccessFlags | kQpRecovery);
  set(S::kInit, S::kRtr, kQpToRtrRequired, kQpAltPath | kQpAccessFlags | kQpPkeyIndex | kQpRecovery);
  set(S::kRtr, S::kReset, 0, 0);
  set(S::kRtr, S::kError, 0, 0);
  set(S::kRtr, S::kRts, kQpToRtsRequired, kRtsOptional);
  set(S::kRts, S::kReset, 0, 0);
  set(S::kRts, S::kError, 0, 0);
  set(S::kRts, S::kRts, 0, kRtsOptional);
  set(S::kRts, S::kSqd, 0, kQpEnSqdAsyncNotify);
  set(S::kSqd, S::kReset, 0, 0);
  set(S::kSqd, S::kError, 0, 0);
  set(S::kSqd, S::kRts, 0, kRtsOptional);
  set(S::kSqd, S::kSqd, 0,
      kQpPort | kQpAv | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic | kQpMaxDestRdAtomic |
          kQpAltPath | kQpAccessFlags | kQpPkeyIndex | kQpMinRnrTimer | kQpPathMigState);
  set(S::kSqe, S::kReset, 0, 0);
  set(S::kSqe, S::kError, 0, 0);
  set(S::kError, S::kReset, 0, 0);
  set(S::kError, S::kError, 0, 0);
  return t;
}

constexpr auto kTransitions = make_transitions();

// The UD table (Linux's qp_state_table, IB_QPT_UD columns): a Q_Key instead of
// access rights, no peer at RTR, only the send PSN at RTS.
constexpr std::array<std::array<Transition, kQpStates>, kQpStates> make_ud_transitions() {
  auto t = make_transitions();  // RESET, ERROR and SQD moves are the same
  auto set = [&t](QpState from, QpState to, uint32_t required, uint32_t optional) {
    t[static_cast<int>(from)][static_cast<int>(to)] = {true, required, optional};
  };
  using S = QpState;
  set(S::kReset, S::kInit, kUdToInitRequired, 0);
  set(S::kInit, S::kInit, 0, kQpPkeyIndex | kQpPort | kQpQkey);
  set(S::kInit, S::kRtr, kUdToRtrRequired, kQpPkeyIndex | kQpQkey);
  set(S::kRtr, S::kRts, kUdToRtsRequired, kQpCurState | kQpQkey);
  set(S::kRts, S::kRts, 0, kQpCurState | kQpQkey);
  set(S::kRts, S::kSqd, 0, kQpEnSqdAsyncNotify);
  set(S::kSqd, S::kRts, 0, kQpCurState | kQpQkey);
  set(S::kSqd, S::kSqd, 0, kQpPkeyIndex | kQpQkey);
  return t;
}

constexpr auto kUdTransitions = make_ud_transitions();

std::string hex(uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%x", v);
  return b;
}

// The IBV_QP_* names of the bits in `mask`, comma separated.
std::string mask_names(uint32_t mask) {
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {kQpState, "IBV_QP_STATE"},
      {kQpCurState, "IBV_QP_CUR_STATE"},
      {kQpEnSqdAsyncNotify, "IBV_QP_EN_SQD_ASYNC_NOTIFY"},
      {kQpAccessFlags, "IBV_QP_ACCESS_FLAGS"},
      {kQpPkeyIndex, "IBV_QP_PKEY_INDEX"},
      {kQpPort, "IBV_QP_PORT"},
      {kQpQkey, "IBV_QP_QKEY"},
      {kQpAv, "IBV_QP_AV"},
      {kQpPathMtu, "IBV_QP_PATH_MTU"},
      {kQpTimeout, "IBV_QP_TIMEOUT"},
      {kQpRetryCnt, "IBV_QP_RETRY_CNT"},
      {kQpRnrRetry, "IBV_QP_RNR_RETRY"},
      {kQpRqPsn, "IBV_QP_RQ_PSN"},
      {kQpMaxQpRdAtomic, "IBV_QP_MAX_QP_RD_ATOMIC"},
      {kQpAltPath, "IBV_QP_ALT_PATH"},
      {kQpMinRnrTimer, "IBV_QP_MIN_RNR_TIMER"},
      {kQpSqPsn, "IBV_QP_SQ_PSN"},
      {kQpMaxDestRdAtomic, "IBV_QP_MAX_DEST_RD_ATOMIC"},
      {kQpPathMigState, "IBV_QP_PATH_MIG_STATE"},
      {kQpCap, "IBV_QP_CAP"},
      {kQpDestQpn, "IBV_QP_DEST_QPN"},
      {kQpRateLimit, "IBV_QP_RATE_LIMIT"},
      {kQpRecovery, "recovery (tita)"},
  };
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(mask & bit)) continue;
    if (!out.empty()) out += ", ";
    out += name;
    mask &= ~bit;
  }
  if (mask != 0) {
    if (!out.empty()) out += ", ";
    out += "unknown bits " + hex(mask);
  }
  return out;
}

bool mac_zero(const uint8_t m[6]) { return (m[0] | m[1] | m[2] | m[3] | m[4] | m[5]) == 0; }

// The transition from -> to with the attributes in `mask`, against the table:
// 0, or -errno and what is wrong in *why.
int check_transition(bool ud, QpState from, QpState to, uint32_t mask, std::string* why) {
  auto fail = [why](std::string msg, int rc = -EINVAL) {
    *why = std::move(msg);
    return rc;
  };
  const std::string step = std::string(ud ? "UD " : "") + std::string(to_string(from)) + "->" +
                           std::string(to_string(to));
  const Transition& t = (ud ? kUdTransitions : kTransitions)[static_cast<int>(from)][static_cast<int>(to)];
  if (!t.valid) return fail("no transition " + step);
  if (to == QpState::kSqd || from == QpState::kSqd || from == QpState::kSqe) {
    return fail(step + ": tita has no SQD/SQE states (send queue drain is not supported)", -EOPNOTSUPP);
  }
  if ((mask & kQpCurState) && from != QpState::kRtr && from != QpState::kRts) {
    return fail(step + ": IBV_QP_CUR_STATE is only meaningful from RTR, RTS, SQD or SQE");
  }
  if (const uint32_t missing = t.required & ~mask; missing != 0) return fail(step + " needs " + mask_names(missing));
  if (const uint32_t extra = mask & ~(t.required | t.optional | kQpState); extra != 0) {
    return fail(step + " does not take " + mask_names(extra) +
                (t.optional ? " (it accepts " + mask_names(t.optional) + ")" : ""));
  }
  return 0;
}

}  // namespace

uint32_t Engine::Impl::max_frame_for(const AhAttr& ah, uint32_t mtu) const {
  const bool ipv4 = cfg.gid.is_ipv4() && ah.dgid.is_ipv4();
  // The largest headers a payload-carrying packet has: RDMA WRITE Only with Immediate.
  const uint32_t hdr = sizeof(wire::EthHdr) + (ah.vlan ? sizeof(wire::VlanTag) : 0) +
                       (ipv4 ? sizeof(wire::Ipv4Hdr) : sizeof(wire::Ipv6Hdr)) + sizeof(wire::UdpHdr) +
                       sizeof(wire::Bth) + wire::opcode_info(Opcode::kWriteOnlyImm).ext_bytes;
  const uint32_t trailer = cfg.telemetry ? wire::telemetry_bytes(0) : 0;
  return hdr + mtu + wire::kIcrcBytes + trailer;
}

// The values of the attributes in `mask` (the transition already checked):
// 0, or -errno and what is wrong in *why.
int Engine::Impl::check_qp_attr(const Qp& qp, QpState from, QpState to, const QpAttr& a, uint32_t mask,
                                std::string* why) const {
  auto fail = [why](std::string msg, int rc = -EINVAL) {
    *why = std::move(msg);
    return rc;
  };
  if ((mask & kQpCurState) && a.cur_qp_state != from) {
    return fail("cur_qp_state " + std::string(to_string(a.cur_qp_state)) + " but the QP is " +
                std::string(to_string(from)));
  }
  if ((mask & kQpAltPath)) return fail("alternate paths (APM, IBV_QP_ALT_PATH) are not supported", -EOPNOTSUPP);
  if ((mask & kQpPkeyIndex) && a.pkey_index != 0) {
    return fail("pkey_index " + std::to_string(a.pkey_index) + ": the P_Key table has one entry (index 0)");
  }
  if ((mask & kQpPort) && a.port_num != 1) {
    return fail("port_num " + std::to_string(a.port_num) + ": the device has one port (1)");
  }
  if ((mask & kQpAccessFlags) &&
      (a.qp_access_flags & ~(kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic))) {
    return fail("qp_access_flags " + hex(a.qp_access_flags) +
                " has bits other than local write and remote write, read and atomic");
  }
  if ((mask & kQpPathMtu) && !valid_mtu(a.path_mtu)) {
    return fail("path_mtu " + std::to_string(a.path_mtu) + " is not 256, 512, 1024, 2048 or 4096");
  }
  if ((mask & kQpPathMtu) && a.payload_bytes != 0 &&
      (a.payload_bytes % 4 != 0 || a.payload_bytes < 64 || a.payload_bytes > a.path_mtu)) {
    return fail("payload_bytes " + std::to_string(a.payload_bytes) + " is not a multiple of 4 from 64 to path_mtu " +
                std::to_string(a.path_mtu));
  }
  if ((mask & kQpTimeout) && a.timeout > 31) return fail("timeout must be 0..31");
  if ((mask & kQpRetryCnt) && a.retry_cnt > 7) return fail("retry_cnt must be 0..7");
  if ((mask & kQpRnrRetry) && a.rnr_retry > 7) return fail("rnr_retry must be 0..7");
  if ((mask & kQpMinRnrTimer) && a.min_rnr_timer > 31) return fail("min_rnr_timer must be 0..31");
  if ((mask & kQpDestQpn) && a.dest_qp_num > wire::kPsnMask) return fail("dest_qp_num exceeds 24 bits");
  if ((mask & kQpMaxQpRdAtomic) && a.max_rd_atomic > kMaxRdAtomic) {
    return fail("max_rd_atomic " + std::to_string(a.max_rd_atomic) + " is above the device's " +
                std::to_string(kMaxRdAtomic));
  }
  if ((mask & kQpMaxDestRdAtomic) && a.max_dest_rd_atomic > kMaxRdAtomic) {
    return fail("max_dest_rd_atomic " + std::to_string(a.max_dest_rd_atomic) + " is above the device's " +
                std::to_string(kMaxRdAtomic));
  }
  if (mask & kQpAv) {
    const AhAttr& ah = a.ah_attr;
    if (ah.dgid == wire::Gid{}) return fail("ah_attr: the destination GID is zero");
    if (mac_zero(ah.dmac) && !ah.dgid.is_ipv4() && !(ah.dgid == cfg.gid)) {
      return fail("ah_attr: an IPv6 GID needs the peer's MAC (tita resolves IPv4-mapped GIDs by ARP only)");
    }
  }
  if (to == QpState::kRtr && from == QpState::kInit && !qp.ud && cfg.max_frame_bytes != 0) {
    const uint32_t frame = max_frame_for(a.ah_attr, a.path_mtu);
    if (frame > cfg.max_frame_bytes) {
      return fail("path_mtu " + std::to_string(a.path_mtu) + " needs frames of " + std::to_string(frame) +
                  " bytes; the port carries at most " + std::to_string(cfg.max_frame_bytes));
    }
  }
  return 0;
}

// The attributes in `mask` into the QP, each with the state it starts (PSNs,
// retry budgets, the full packet's payload).
void Engine::Impl::apply_qp_attr(Qp& qp, const QpAttr& a, uint32_t mask) {
  QpAttr& q = qp.cold.attr;
  if (mask & kQpAccessFlags) q.qp_access_flags = a.qp_access_flags;
  if (mask & kQpPkeyIndex) q.pkey_index = a.pkey_index;
  if (mask & kQpPort) q.port_num = a.port_num;
  if (mask & kQpPathMtu) {
    q.path_mtu = a.path_mtu;
    q.payload_bytes = a.payload_bytes;
    qp.mtu_bytes = a.full_payload_bytes();
  }
  if (mask & kQpAv) q.ah_attr = a.ah_attr;
  if (mask & kQpDestQpn) q.dest_qp_num = a.dest_qp_num;
  if (mask & kQpRqPsn) {
    q.rq_psn = a.rq_psn & wire::kPsnMask;
    qp.resp.epsn = q.rq_psn;
  }
  if (mask & kQpMaxDestRdAtomic) q.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & kQpMinRnrTimer) q.min_rnr_timer = a.min_rnr_timer;
  if (mask & kQpSqPsn) {
    q.sq_psn = a.sq_psn & wire::kPsnMask;
    qp.comp.snd_una = qp.req.snd_nxt = qp.req.snd_max = q.sq_psn;
    qp.comp.acked_psn = wire::psn_add(q.sq_psn, wire::kPsnMask);
  }
  if (mask & kQpTimeout) q.timeout = a.timeout;
  if (mask & kQpRetryCnt) q.retry_cnt = qp.comp.retry_left = a.retry_cnt;
  if (mask & kQpRnrRetry) q.rnr_retry = qp.comp.rnr_left = a.rnr_retry;
  if (mask & kQpMaxQpRdAtomic) q.max_rd_atomic = a.max_rd_atomic;
  if (mask & kQpQkey) q.qkey = a.qkey;
  if (mask & kQpRecovery) {
    q.recovery = a.recovery;
    q.peer_tita = a.peer_tita;
    qp.sr = a.recovery == Recovery::kSelectiveRepeat;
  }
}

// INIT -> RTR: the QP learns its peer; headers, responder resources and the
// out-of-order share follow from the attributes just applied.
void Engine::Impl::qp_to_rtr(Qp& qp) {
  const QpAttr& q = qp.cold.attr;
  qp.cold.udp_sport = q.ah_attr.udp_sport ? q.ah_attr.udp_sport : roce_udp_sport(qp.qpn, q.dest_qp_num);
  qp.loopback = cfg.loopback && q.ah_attr.dgid == cfg.gid;
  if (q.peer_tita) qp.peer_tita = true;
  // A QP whose peer is not known to be tita may face a responder that drops
  // what arrives faster than it takes in (rxe), and recovers by go-back-N
  // until the peer shows otherwise (selective repeat needs both ends): its
  // flight starts small (cc/loss_window.h), until the peer's first trailer.
  qp.cold.loss.reset();
  if (!qp.peer_tita) qp.cold.loss.start();
  qp.state = QpState::kRtr;
  resolve(qp);      // the peer's MAC: given, known, or asked for by ARP
  path_at_rtr(qp);  // builds hdr (and resp_hdr) with the dodge value the port carries
  if (qp.cold.spray) spray_init(qp, qp.cold.spray->cfg);  // its values start from the port's
  qp.cold.reads.assign(q.max_dest_rd_atomic, ReadJob{});
  qp.cold.atomic_results.assign(q.max_dest_rd_atomic, AtomicResult{});
  qp.cold.atomic_next = 0;
  qp.cold.reads_sent_end = qp.resp.epsn;
  init_flow(qp);
  if (q.recovery == Recovery::kSelectiveRepeat) ooo_reserve(qp);
}

// The one constructor (engine_impl.h): identity, storage, then each part's
// own reset.
std::unique_ptr<Qp> Engine::Impl::new_qp(uint32_t index, uint32_t pd, const QpInitAttr& init, const QpSettings& s) {
  auto qp = std::make_unique<Qp>();
  qp->index = index;
  qp->qpn = init.gsi ? kGsiQpn : cfg.first_qpn + index;
  qp->pd = pd;
  qp->send_cq = init.send_cq;
  qp->recv_cq = init.recv_cq;
  qp->valid = true;
  qp->ud = init.qp_type == QpType::kUd;
  QpCold& c = qp->cold;
  c.init = init;
  c.sq_sig_all = init.sq_sig_all;
  c.max_sge = static_cast<uint8_t>(init.max_sge);
  // The rings hold one slot more than the QP holds (full and empty differ).
  c.sq_ring.resize(init.max_send_wr + 1);
  c.rq_ring.resize(init.max_recv_wr + 1);
  qp->bind();
  c.inline_buf.resize(size_t{qp->sq_size()} * init.max_inline_data);
  c.hold_epoch = next_hold_epoch();
  const uint32_t words = cfg.sr_window / 64;
  c.sacked.assign(words, 0);
  c.retx.assign(words, 0);
  c.retx_done.assign(words, 0);
  c.cc_params = s.cc;
  init_flow(*qp);
  path_init(*qp, *s.path);
  if (s.spray != nullptr) spray_init(*qp, *s.spray);
  return qp;
}

int Engine::modify_qp(uint32_t qp_num, const QpAttr& a, uint32_t mask, std::string* err) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  const QpState from = qp ? qp->state : QpState::kReset;
  const QpState to = (mask & kQpState) ? a.qp_state : from;
  std::string why;
  int rc = 0;
  if (qp == nullptr) {
    why = "no QP " + std::to_string(qp_num);
    rc = -EINVAL;
  } else if (static_cast<int>(to) >= kQpStates) {
    why = "qp_state " + std::to_string(static_cast<int>(to)) + " is not a QP state";
    rc = -EINVAL;
  } else {
    rc = check_transition(qp->ud, from, to, mask, &why);
    if (rc == 0) rc = m.check_qp_attr(*qp, from, to, a, mask, &why);
  }
  if (rc != 0) {
    if (err) *err = "modify_qp: " + std::move(why);
    return rc;
  }

  m.apply_qp_attr(*qp, a, mask);
  if (to == QpState::kRtr && from == QpState::kInit && !qp->ud) m.qp_to_rtr(*qp);  // UD: no peer to learn
  if (to == QpState::kError) {
    if (from != QpState::kError) {
      qp->state = QpState::kRts;  // to_error flushes from any live state
      m.to_error(*qp, WcStatus::kWrFlushErr);
    }
    m.settle();
    return 0;
  }
  if (to == QpState::kReset) {
    // Back to a fresh QP with the same number, queues and creation attributes,
    // made as create_qp makes one; everything posted is gone without
    // completions, as IBA's RESET says. Its congestion control, path control
    // and spraying configuration survive RESET, their state does not.
    m.drop_ooo(*qp);
    m.wheel.cancel(qp->index);
    const PathConfig path_off;
    auto fresh = m.new_qp(qp->index, qp->pd, qp->cold.init,
                          {qp->cold.cc_params, qp->cold.path ? &qp->cold.path->cfg : &path_off,
                           qp->cold.spray ? &qp->cold.spray->cfg : nullptr});
    fresh->in_ready = qp->in_ready;  // its entry in the ready ring stays (a turn before RTS sends nothing)
    m.qps[qp->index] = std::move(fresh);
    return 0;
  }
  qp->state = to;
  m.fast_path_prepare(*qp);
  if (to == QpState::kRts) m.reconsider(*qp);
  return 0;
}

int Engine::query_qp(uint32_t qp_num, QpAttr* attr) const {
  const Qp* qp = impl_->qp_by_num(qp_num);
  if (qp == nullptr) return -EINVAL;
  *attr = qp->cold.attr;
  attr->qp_state = attr->cur_qp_state = qp->state;
  return 0;
}

int Engine::query_qp_init(uint32_t qp_num, QpInitAttr* attr) const {
  const Qp* qp = impl_->qp_by_num(qp_num);
  if (qp == nullptr) return -EINVAL;
  *attr = qp->cold.init;
  if (attr->srq != 0) attr->max_recv_wr = 0;  // its one-slot ring is the engine's own
  return 0;
}

void Engine::Impl::to_error(Qp& qp, WcStatus status, uint32_t failed) {
  if (qp.state == QpState::kError) return;
  qp.state = QpState::kError;
  const uint32_t smask = qp.sq_size() - 1;
  if (failed == kNil) failed = qp.comp.sq_head;
  // Errors always complete, signaled or not: the failed WR with its status, the rest flushed.
  for (uint32_t i = qp.comp.sq_head; i != qp.req.sq_tail; i = (i + 1) & smask) {
    const SendWqe& w = qp.req.sq[i];
    complete(qp.send_cq, {w.wr_id, i == failed ? status : WcStatus::kWrFlushErr, wc_opcode(w.opcode), false, 0, 0,
                          qp.qpn});
  }
  qp.comp.sq_head = qp.req.sq_next = qp.req.sq_tail;
  const uint32_t rmask = static_cast<uint32_t>(qp.rq_size() - 1);
  for (uint32_t i = qp.resp.rq_head; i != qp.resp.rq_tail; i = (i + 1) & rmask) {
    complete(qp.recv_cq, {qp.resp.rq[i].wr_id, WcStatus::kWrFlushErr, WcOpcode::kRecv, false, 0, 0, qp.qpn});
  }
  qp.resp.rq_head = qp.resp.rq_tail;
  // A QP of an SRQ takes no more of its WQEs (IBA 10.2.9.5).
  if (qp.cold.init.srq != 0) raise(EventKind::kQpLastWqeReached, 0, qp.qpn);
  qp.resp.reads_count = 0;
  qp.comp.parts_head = qp.req.parts_tail;  // READ parts: none open (requester.cc)
  qp.comp.read_in_flight = 0;
  qp.req.rereq_count = 0;
  qp.req.retx_count = 0;
  qp.cold.deferred_ack = false;
  qp.resp.closing = false;
  qp.mac_pending = false;
  qp.comp.rto_deadline_ns = qp.comp.rnr_deadline_ns = kNever;
  drop_ooo(qp);
  wheel.cancel(qp.index);
}

int connect_rc(Engine& eng, uint32_t qp_num, const QpAttr& attr, std::string* err) {
  constexpr QpState kSteps[] = {QpState::kInit, QpState::kRtr, QpState::kRts};
  constexpr uint32_t kMasks[] = {kQpToInitRequired, kQpToRtrRequired | kQpRecovery, kQpToRtsRequired};
  QpAttr a = attr;
  for (int i = 0; i < 3; ++i) {
    a.qp_state = kSteps[i];
    if (int rc = eng.modify_qp(qp_num, a, kQpState | kMasks[i], err); rc != 0) return rc;
  }
  return 0;
}

}  // namespace tita::engine
