#include "tita/fabric/switch.h"

#include <algorithm>
#include <cerrno>

#include "tita/wire/headers.h"
#include "tita/wire/telemetry.h"

namespace tita::fabric {

namespace {

constexpr uint8_t kNoPriority = 0xff;

std::string port_name(size_t i) { return "port " + std::to_string(i); }

}  // namespace

int SwitchCore::init(const SwitchConfig& cfg, std::string* err) {
  if (cfg.ports.empty()) {
    *err = "the switch has no ports";
    return -EINVAL;
  }
  if (cfg.ports.size() > UINT16_MAX) {
    *err = "too many ports (" + std::to_string(cfg.ports.size()) + ")";
    return -EINVAL;
  }
  for (size_t i = 0; i < cfg.ports.size(); ++i) {
    const PortConfig& p = cfg.ports[i];
    if (p.rate_bps == 0) {
      *err = port_name(i) + ": rate must be > 0";
      return -EINVAL;
    }
    const RedParams red = p.red.resolve(p.rate_bps);
    if (red.kmin_bytes > red.kmax_bytes || red.pmax < 0 || red.pmax > 1) {
      *err = port_name(i) + ": ECN needs kmin <= kmax and 0 <= pmax <= 1";
      return -EINVAL;
    }
    if (!(p.fault.drop_probability >= 0 && p.fault.drop_probability <= 1)) {
      *err = port_name(i) + ": drop probability must be in [0, 1]";
      return -EINVAL;
    }
  }
  if (cfg.max_packets == 0 || cfg.max_packets >= kNil / 2) {
    *err = "max_packets must be in [1, 2^31)";
    return -EINVAL;
  }
  if (cfg.initial_packets > cfg.max_packets) {
    *err = "initial_packets " + std::to_string(cfg.initial_packets) + " exceeds max_packets " +
           std::to_string(cfg.max_packets);
    return -EINVAL;
  }
  if (!wire::dodge_mask_valid(cfg.ecmp.dodge_field, cfg.ecmp.dodge_mask)) {
    *err = "dodge mask must select contiguous bits of its field (DSCP: within 0x3f)";
    return -EINVAL;
  }
  for (uint8_t prio : cfg.classify.dscp_priority) {
    if (prio >= kPriorities) {
      *err = "DSCP-to-priority map holds priority " + std::to_string(prio) + " (0..7)";
      return -EINVAL;
    }
  }
  if (cfg.mmu.lossless != 0 && cfg.pfc_quanta == 0) {
    *err = "pfc_quanta must be > 0";
    return -EINVAL;
  }
  const uint16_t n = static_cast<uint16_t>(cfg.ports.size());
  if (int rc = mmu_.init(cfg.mmu, n, err); rc != 0) return rc;

  cfg_ = cfg;
  rng_.seed(cfg.seed);
  routes_.init(n);
  ports_.assign(n, PortState{});
  counters_.assign(n, PortCounters{});
  counters_since_ns_ = 0;
  for (uint16_t i = 0; i < n; ++i) {
    const PortConfig& p = cfg_.ports[i];
    PortState& ps = ports_[i];
    ps.shaper.init(p.shaped ? p.rate_bps : 0, p.burst_bytes, p.overhead_bytes);
    ps.rate_mbps = static_cast<uint32_t>(std::min<uint64_t>(p.rate_bps / 1'000'000, UINT32_MAX));
    ps.pause_ns = pfc_quanta_ns(cfg_.pfc_quanta, p.rate_bps);
    ps.red = p.red.resolve(p.rate_bps);
    mmu_.set_port_limit(i, p.buffer_bytes);
  }
  static_assert(sizeof(Desc) <= 32, "a descriptor per buffered packet: keep it small");
  descs_.clear();
  delay_edits_.clear();
  free_ = kNil;
  const uint32_t first = cfg.initial_packets != 0 ? cfg.initial_packets : cfg.max_packets;
  descs_.assign(first, Desc{});
  for (uint32_t d = 0; d < first; ++d) descs_[d].next = d + 1 < first ? d + 1 : kNil;
  free_ = 0;
  for (const PortConfig& p : cfg_.ports) {
    if (p.fault.delay_ns != 0) delay_edits_.resize(descs_.size());
  }
  held_ = 0;
  pfc_pending_.clear();
  pfc_pending_.reserve(n);  // each port at most once: push_back never allocates
  paused_groups_ = 0;
  return 0;
}

bool SwitchCore::grow_descriptors() {
  const auto have = static_cast<uint32_t>(descs_.size());
  if (have >= cfg_.max_packets) return false;
  const uint32_t want = std::min<uint32_t>(cfg_.max_packets, std::max<uint32_t>(1024, 2 * have));
  descs_.resize(want);
  if (!delay_edits_.empty()) delay_edits_.resize(want);
  // The new ones, in index order, ahead of whatever is free.
  for (uint32_t d = have; d < want; ++d) descs_[d].next = d + 1 < want ? d + 1 : free_;
  free_ = have;
  return true;
}

void SwitchCore::set_fault(uint16_t port, const FaultConfig& f) {
  if (f.delay_ns != 0 && delay_edits_.empty()) delay_edits_.resize(descs_.size());
  cfg_.ports[port].fault = f;
}

void SwitchCore::reset_counters(uint64_t now_ns) {
  for (PortCounters& pc : counters_) {
    PortCounters fresh;
    fresh.qlen_bytes = pc.qlen_bytes;
    fresh.max_qlen_bytes = pc.qlen_bytes;
    fresh.qlen_since_ns = now_ns;
    for (int p = 0; p < kPriorities; ++p) {
      fresh.queue[p].qlen_bytes = pc.queue[p].qlen_bytes;
      fresh.queue[p].qlen_packets = pc.queue[p].qlen_packets;
      fresh.queue[p].max_qlen_bytes = pc.queue[p].qlen_bytes;
      fresh.queue[p].qlen_since_ns = now_ns;
    }
    pc = fresh;
  }
  counters_since_ns_ = now_ns;
}

RxResult SwitchCore::drop(uint16_t port, uint8_t prio, DropReason why, uint32_t bytes, uint64_t now_ns) {
  PortCounters& pc = counters_[port];
  ++pc.drops[static_cast<int>(why)];
  if (prio != kNoPriority) ++pc.queue[prio].dropped_packets;
  if (hooks_.drop != nullptr) hooks_.drop(hooks_.ctx, port, prio, why, bytes, now_ns);
  return {Verdict::kDropped, why, port, prio == kNoPriority ? uint8_t{0} : prio};
}

void SwitchCore::account(uint16_t port, uint8_t prio, int64_t bytes, int packets, uint64_t now_ns) {
  PortCounters& pc = counters_[port];
  QueueCounters& qc = pc.queue[prio];
  if (now_ns > qc.qlen_since_ns) {
    qc.qlen_byte_ns += static_cast<double>(qc.qlen_bytes) * static_cast<double>(now_ns - qc.qlen_since_ns);
    qc.qlen_since_ns = now_ns;
  }
  if (now_ns > pc.qlen_since_ns) {
    pc.qlen_byte_ns += static_cast<double>(pc.qlen_bytes) * static_cast<double>(now_ns - pc.qlen_since_ns);
    pc.qlen_since_ns = now_ns;
  }
  qc.qlen_bytes = static_cast<uint64_t>(static_cast<int64_t>(qc.qlen_bytes) + bytes);
  qc.qlen_packets = static_cast<uint64_t>(static_cast<int64_t>(qc.qlen_packets) + packets);
  pc.qlen_bytes = static_cast<uint64_t>(static_cast<int64_t>(pc.qlen_bytes) + bytes);
  qc.max_qlen_bytes = std::max(qc.max_qlen_bytes, qc.qlen_bytes);
  pc.max_qlen_bytes = std::max(pc.max_qlen_bytes, pc.qlen_bytes);
  if (hooks_.qlen != nullptr) hooks_.qlen(hooks_.ctx, port, prio, qc.qlen_bytes, pc.qlen_bytes, now_ns);
}

double SwitchCore::avg_qlen_bytes(uint16_t port, uint64_t now_ns) const {
  const PortCounters& pc = counters_[port];
  double integral = pc.qlen_byte_ns;
  if (now_ns > pc.qlen_since_ns) integral += static_cast<double>(pc.qlen_bytes) * static_cast<double>(now_ns - pc.qlen_since_ns);
  if (now_ns <= counters_since_ns_) return static_cast<double>(pc.qlen_bytes);
  return integral / static_cast<double>(now_ns - counters_since_ns_);
}

double SwitchCore::avg_queue_bytes(uint16_t port, uint8_t prio, uint64_t now_ns) const {
  const QueueCounters& qc = counters_[port].queue[prio];
  double integral = qc.qlen_byte_ns;
  if (now_ns > qc.qlen_since_ns) integral += static_cast<double>(qc.qlen_bytes) * static_cast<double>(now_ns - qc.qlen_since_ns);
  if (now_ns <= counters_since_ns_) return static_cast<double>(qc.qlen_bytes);
  return integral / static_cast<double>(now_ns - counters_since_ns_);
}

int SwitchCore::forward_port(const FlowKey& key, uint8_t dscp) const {
  const std::span<const uint16_t> group = routes_.lookup(key.dst);
  if (group.empty()) return -1;
  return group[ecmp_select(cfg_.ecmp, key, dscp, static_cast<uint32_t>(group.size()))];
}

RxResult SwitchCore::admit(uint16_t in, const FrameRef& f, uint64_t now_ns, uint32_t* desc) {
  PortCounters& ic = counters_[in];
  ++ic.rx_packets;
  ic.rx_bytes += f.frame_bytes;

  Classified c;
  classify(f, cfg_.classify, cfg_.int_enabled, &c);
  if (c.kind != FrameKind::kIp) [[unlikely]] {
    if (c.kind == FrameKind::kPfc) {
      on_pfc(in, f, now_ns);
      return {Verdict::kPfc, DropReason::kMalformed, in, 0};
    }
    return drop(in, kNoPriority, c.kind == FrameKind::kMalformed ? DropReason::kMalformed : DropReason::kUnsupported,
                f.frame_bytes, now_ns);
  }
  if (cfg_.decrement_ttl && c.ttl <= 1) [[unlikely]] {
    return drop(in, kNoPriority, DropReason::kTtlExpired, f.frame_bytes, now_ns);
  }
  const std::span<const uint16_t> group = routes_.lookup(c.key.dst);
  if (group.empty()) [[unlikely]] return drop(in, kNoPriority, DropReason::kNoRoute, f.frame_bytes, now_ns);
  const uint16_t out = group[ecmp_select(cfg_.ecmp, c.key, c.dscp, static_cast<uint32_t>(group.size()))];
  const uint8_t prio = c.priority;

  const FaultConfig& fault = cfg_.ports[out].fault;
  if (fault.drop_all) [[unlikely]] return drop(out, prio, DropReason::kFaultPortDrop, f.frame_bytes, now_ns);
  if (fault.black_hole && fault.black_hole_flow.matches(c.key)) [[unlikely]] {
    return drop(out, prio, DropReason::kFaultBlackHole, f.frame_bytes, now_ns);
  }
  if (fault.drop_probability > 0 && rng_.uniform() < fault.drop_probability) [[unlikely]] {
    return drop(out, prio, DropReason::kFaultRandom, f.frame_bytes, now_ns);
  }
  // The PSN's three bytes end the 12-byte BTH after the 8-byte UDP header.
  constexpr uint32_t kPsnOffset = sizeof(wire::UdpHdr) + 9;
  const bool corrupt = fault.corrupt_probability > 0 && c.key.dport == wire::kRoceUdpPort && c.l4_offset != 0 &&
                       std::min(f.data_len, f.frame_bytes) >= c.l4_offset + kPsnOffset + 3 &&
                       rng_.uniform() < fault.corrupt_probability;
  if (free_ == kNil && !grow_descriptors()) [[unlikely]] {
    return drop(out, prio, DropReason::kNoDescriptor, f.frame_bytes, now_ns);
  }
  const Admission a = mmu_.admit(in, out, prio, f.frame_bytes);
  if (!a.admitted) [[unlikely]] return drop(out, prio, a.reason, f.frame_bytes, now_ns);
  if (a.xoff) {
    ++paused_groups_;
    request_pfc(in, prio);
  }

  const uint32_t d = free_;
  Desc& x = descs_[d];
  free_ = x.next;
  x.next = kNil;
  x.frame_bytes = f.frame_bytes;
  x.in_port = in;
  x.l3_offset = c.l3_offset;
  x.trailer_offset = c.trailer_offset;
  x.trailer_len = c.trailer_len;
  x.priority = prio;
  x.flags = static_cast<uint8_t>((c.key.ip_version == 6 ? kDescIpv6 : 0) |
                                 (c.ecn == wire::kEcnEct0 || c.ecn == wire::kEcnEct1 ? kDescEct : 0) |
                                 (c.int_action == IntAction::kPush ? kDescPush : 0) |
                                 (c.int_action == IntAction::kOverflow ? kDescOverflow : 0) |
                                 (corrupt ? kDescCorrupt : 0));
  if (corrupt) [[unlikely]] {
    const uint64_t r = rng_.next();
    x.corrupt_offset = static_cast<uint16_t>(c.l4_offset + kPsnOffset + r % 3);
    x.corrupt_mask = static_cast<uint8_t>(1u << (r / 3 % 8));
  }
  PortState& ps = ports_[out];
  Fifo& q = ps.queue[prio];
  if (q.tail == kNil) {
    q.head = d;
  } else {
    descs_[q.tail].next = d;
  }
  q.tail = d;
  ps.nonempty = static_cast<uint8_t>(ps.nonempty | 1u << prio);
  ++held_;
  QueueCounters& qc = counters_[out].queue[prio];
  ++qc.enqueued_packets;
  qc.enqueued_bytes += f.frame_bytes;
  account(out, prio, f.frame_bytes, 1, now_ns);
  *desc = d;
  return {Verdict::kQueued, DropReason::kMalformed, out, prio};
}

void SwitchCore::on_pfc(uint16_t port, const FrameRef& f, uint64_t now_ns) {
  PfcInfo info;
  parse_pfc_frame(f.data, std::min(f.data_len, f.frame_bytes), &info);
  PortCounters& pc = counters_[port];
  PortState& ps = ports_[port];
  ++pc.pfc_frames_received;
  ps.pause.apply(info, now_ns, cfg_.ports[port].rate_bps, 1, [&](uint8_t p, bool pause, uint64_t) {
    ++(pause ? pc.pfc_pause_received[p] : pc.pfc_resume_received[p]);
    if (hooks_.pfc != nullptr) hooks_.pfc(hooks_.ctx, port, p, pause, false, now_ns);
  });
}

void SwitchCore::request_pfc(uint16_t in_port, uint8_t prio) {
  PortState& ps = ports_[in_port];
  ps.pfc_changed = static_cast<uint8_t>(ps.pfc_changed | 1u << prio);
  if (!ps.pfc_queued) {
    ps.pfc_queued = true;
    pfc_pending_.push_back(in_port);
  }
}

void SwitchCore::poll(uint64_t now_ns) {
  if (paused_groups_ == 0) return;
  for (uint16_t i = 0; i < ports_.size(); ++i) {
    PortState& ps = ports_[i];
    if (ps.pfc_refresh_ns > now_ns || ps.pfc_queued) continue;
    uint8_t paused = 0;
    for (uint8_t p = 0; p < kPriorities; ++p) paused = static_cast<uint8_t>(paused | (mmu_.paused(i, p) ? 1u << p : 0));
    if (paused == 0) {
      ps.pfc_refresh_ns = kNever;
      continue;
    }
    ps.pfc_changed = static_cast<uint8_t>(ps.pfc_changed | paused);
    ps.pfc_queued = true;
    pfc_pending_.push_back(i);
  }
}

uint64_t SwitchCore::next_poll_ns() const {
  if (paused_groups_ == 0) return kNever;
  uint64_t t = kNever;
  for (const PortState& ps : ports_) t = std::min(t, ps.pfc_refresh_ns);
  return t;
}

int SwitchCore::pfc_frame(uint16_t* port, uint8_t* buf, uint32_t cap, uint64_t now_ns) {
  if (pfc_pending_.empty()) return 0;
  if (cap < kPfcFrameBytes) return -ENOSPC;
  const uint16_t i = pfc_pending_.back();
  pfc_pending_.pop_back();
  PortState& ps = ports_[i];
  PortCounters& pc = counters_[i];
  PfcInfo info;
  info.class_enable = ps.pfc_changed;
  bool any_paused = false;
  for (uint8_t p = 0; p < kPriorities; ++p) {
    const bool paused = mmu_.paused(i, p);
    any_paused = any_paused || paused;
    if (!((ps.pfc_changed >> p) & 1)) continue;
    info.quanta[p] = paused ? cfg_.pfc_quanta : 0;
    if (paused) {
      ++pc.pfc_pause_sent[p];
    } else {
      ++pc.pfc_resume_sent[p];
    }
    if (hooks_.pfc != nullptr) hooks_.pfc(hooks_.ctx, i, p, paused, true, now_ns);
  }
  ps.pfc_changed = 0;
  ps.pfc_queued = false;
  ps.pfc_refresh_ns = any_paused ? now_ns + std::max<uint64_t>(ps.pause_ns / 2, 1) : kNever;
  ++pc.pfc_frames_sent;
  *port = i;
  return static_cast<int>(build_pfc_frame(buf, cap, cfg_.ports[i].mac, info));
}

int SwitchCore::pick(uint16_t port, uint64_t now_ns) {
  PortState& ps = ports_[port];
  uint8_t ready = ps.nonempty;
  if (ready == 0) return -1;
  ready = ps.pause.unpaused(ready, now_ns);
  if (ready == 0) return -1;
  if (cfg_.ports[port].strict_priority) return 31 - __builtin_clz(ready);
  for (int i = 0; i < kPriorities; ++i) {
    const int p = (ps.rr_next + i) & (kPriorities - 1);
    if ((ready >> p) & 1) {
      ps.rr_next = static_cast<uint8_t>((p + 1) & (kPriorities - 1));
      return p;
    }
  }
  return -1;
}

uint32_t SwitchCore::pop(uint16_t port, uint8_t prio) {
  PortState& ps = ports_[port];
  Fifo& q = ps.queue[prio];
  const uint32_t d = q.head;
  q.head = descs_[d].next;
  if (q.head == kNil) {
    q.tail = kNil;
    ps.nonempty = static_cast<uint8_t>(ps.nonempty & ~(1u << prio));
  }
  return d;
}

void SwitchCore::release_desc(uint32_t d) {
  descs_[d].next = free_;
  free_ = d;
  --held_;
}

uint64_t SwitchCore::depart(uint16_t port, uint8_t prio, Desc& x, uint64_t now_ns, EgressEdit* e) {
  PortState& ps = ports_[port];
  PortCounters& pc = counters_[port];
  QueueCounters& qc = pc.queue[prio];
  const PortConfig& cfg = cfg_.ports[port];
  const uint32_t grow = (x.flags & kDescPush) ? sizeof(wire::TelemetryHop) : 0;
  const uint32_t out_bytes = x.frame_bytes + grow;
  const uint64_t start_ns = ps.shaper.depart(now_ns, out_bytes);

  ++qc.dequeued_packets;
  qc.dequeued_bytes += x.frame_bytes;
  account(port, prio, -static_cast<int64_t>(x.frame_bytes), -1, now_ns);
  if (mmu_.release(x.in_port, port, prio, x.frame_bytes)) {
    --paused_groups_;
    request_pfc(x.in_port, prio);
  }

  *e = EgressEdit{};
  e->l3_offset = x.l3_offset;
  e->trailer_offset = x.trailer_offset;
  e->trailer_len = x.trailer_len;
  e->grow_bytes = grow;
  e->frame_bytes = out_bytes;
  uint8_t flags = (x.flags & kDescIpv6) ? EgressEdit::kIpv6 : 0;
  if (cfg_.decrement_ttl) flags |= EgressEdit::kDecTtl;
  if ((x.flags & kDescEct) && cfg.ecn) {
    // RED on the queue this packet leaves behind, as the HPCC simulator marks.
    const double p = red_mark_probability(qc.qlen_bytes, ps.red);
    if (p >= 1.0 || (p > 0 && rng_.uniform() < p)) {
      flags |= EgressEdit::kMarkCe;
      ++pc.ecn_marked;
      ++qc.ecn_marked;
    }
  }
  if (x.flags & kDescPush) {
    flags |= EgressEdit::kPushHop;
    e->rate_mbps = ps.rate_mbps;
    e->ts_ns = static_cast<uint32_t>(start_ns);
    e->tx_bytes = static_cast<uint32_t>(pc.tx_bytes + out_bytes);
    e->qlen_bytes = static_cast<uint32_t>(std::min<uint64_t>(pc.qlen_bytes, UINT32_MAX));
    ++pc.int_pushed;
  } else if (x.flags & kDescOverflow) {
    flags |= EgressEdit::kOverflow;
    ++pc.int_overflowed;
  }
  if (x.flags & kDescCorrupt) [[unlikely]] {
    flags |= EgressEdit::kCorrupt;
    e->corrupt_offset = x.corrupt_offset;
    e->corrupt_mask = x.corrupt_mask;
    ++pc.fault_corrupted;
  }
  if (cfg.rewrite_mac) {
    flags |= EgressEdit::kRewriteMac;
    e->src_mac = cfg.mac;
    e->dst_mac = cfg.next_hop_mac;
  }
  e->flags = flags;
  ++pc.tx_packets;
  pc.tx_bytes += out_bytes;
  return start_ns;
}

bool SwitchCore::next(uint16_t port, uint64_t now_ns, uint32_t* desc, EgressEdit* edit) {
  PortState& ps = ports_[port];
  const uint64_t delay_ns = cfg_.ports[port].fault.delay_ns;
  if (delay_ns == 0 && ps.delay.head == kNil) {
    if (!ps.shaper.ready(now_ns)) return false;
    const int prio = pick(port, now_ns);
    if (prio < 0) return false;
    const uint32_t d = pop(port, static_cast<uint8_t>(prio));
    depart(port, static_cast<uint8_t>(prio), descs_[d], now_ns, edit);
    release_desc(d);
    *desc = d;
    return true;
  }
  // Delay line: what the shaper lets go waits delay_ns, in departure order,
  // but for the reorder fraction, which leaves at once, ahead of it.
  const double reorder = cfg_.ports[port].fault.reorder_probability;
  while (ps.shaper.ready(now_ns)) {
    const int prio = pick(port, now_ns);
    if (prio < 0) break;
    const uint32_t d = pop(port, static_cast<uint8_t>(prio));
    Desc& x = descs_[d];
    if (reorder > 0 && rng_.uniform() < reorder) [[unlikely]] {
      depart(port, static_cast<uint8_t>(prio), x, now_ns, edit);
      ++counters_[port].fault_reordered;
      release_desc(d);
      *desc = d;
      return true;
    }
    x.release_ns = depart(port, static_cast<uint8_t>(prio), x, now_ns, &delay_edits_[d]) + delay_ns;
    x.next = kNil;
    if (ps.delay.tail == kNil) {
      ps.delay.head = d;
    } else {
      descs_[ps.delay.tail].next = d;
    }
    ps.delay.tail = d;
  }
  const uint32_t d = ps.delay.head;
  if (d == kNil || descs_[d].release_ns > now_ns) return false;
  ps.delay.head = descs_[d].next;
  if (ps.delay.head == kNil) ps.delay.tail = kNil;
  *edit = delay_edits_[d];
  release_desc(d);
  *desc = d;
  return true;
}

bool SwitchCore::take_any(uint32_t* desc) {
  for (uint16_t port = 0; port < ports_.size(); ++port) {
    PortState& ps = ports_[port];
    if (ps.delay.head != kNil) {
      const uint32_t d = ps.delay.head;
      ps.delay.head = descs_[d].next;
      if (ps.delay.head == kNil) ps.delay.tail = kNil;
      release_desc(d);
      *desc = d;
      return true;
    }
    for (uint8_t prio = 0; prio < kPriorities; ++prio) {
      if (ps.queue[prio].head == kNil) continue;
      const uint32_t d = pop(port, prio);
      const Desc& x = descs_[d];
      account(port, prio, -static_cast<int64_t>(x.frame_bytes), -1, counters_[port].qlen_since_ns);
      if (mmu_.release(x.in_port, port, prio, x.frame_bytes)) {
        --paused_groups_;
        request_pfc(x.in_port, prio);
      }
      release_desc(d);
      *desc = d;
      return true;
    }
  }
  return false;
}

uint64_t SwitchCore::next_event_ns(uint16_t port, uint64_t now_ns) const {
  const PortState& ps = ports_[port];
  uint64_t t = ps.delay.head != kNil ? descs_[ps.delay.head].release_ns : kNever;
  if (ps.nonempty != 0) {
    uint64_t unpause = kNever;
    bool ready = false;
    for (uint8_t p = 0; p < kPriorities; ++p) {
      if (!((ps.nonempty >> p) & 1)) continue;
      if (ps.pause.paused(p, now_ns)) {
        unpause = std::min(unpause, ps.pause.paused_until(p));
      } else {
        ready = true;
      }
    }
    const uint64_t link_ns = ps.shaper.rate_bps() != 0 ? ps.shaper.free_ns() : 0;
    const uint64_t q = std::max({ready ? now_ns : unpause, link_ns, now_ns});
    t = std::min(t, q);
  }
  return t;
}

}  // namespace tita::fabric
