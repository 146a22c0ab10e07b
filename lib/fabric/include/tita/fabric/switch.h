// The switch data plane, written once for the DPDK software switch and the ns-3
// switch node. Pure C++: no DPDK, no ns-3, no clock; the host passes now_ns and
// frame bytes, and keeps its packets in whatever it uses (rte_mbuf*,
// ns3::Ptr<ns3::Packet>) through Switch<Handle>.
//
//   ingress   receive(): classify, route (longest prefix), ECMP with the dodge
//             offset, fault injection, shared-buffer admission with PFC (mmu.h);
//             the packet joins the egress (port, priority) queue.
//   egress    dequeue(): strict priority (or round robin) over queues whose
//             priority is not paused by the peer, token-bucket shaper at the
//             port's line rate, RED/ECN marking on the queue left behind, INT
//             hop record, TTL, then an optional delay line. The result is the
//             host's handle plus an EgressEdit that apply_edit() carries out.
//   PFC       pause/resume decisions become pending frames the host builds with
//             pfc_frame() and sends at once on that port; received PFC frames
//             pause egress priorities.
//
// Driving it. DPDK (polling):
//   for each rx'd mbuf m: if (sw.receive(port, m, ref(m), now).verdict != Verdict::kQueued) free(m);
//   sw.poll(now); while ((len = sw.pfc_frame(&p, buf, cap, now)) > 0) send buf on p;
//   for each port: while (sw.dequeue(port, now, &m, &edit)) { append edit.grow_bytes;
//                  apply_edit(edit, mtod(m)); tx m; }
// ns-3 (events): receive() from the NetDevice's receive callback; when the
//   device is idle call dequeue(), else schedule at next_event_ns(); schedule
//   poll() at next_poll_ns(). A port with shaped = false leaves the rate to the
//   device (it still reports rate_bps in INT).
//
// Per-packet calls never allocate, throw or log; every outcome is counted.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tita/fabric/classify.h"
#include "tita/fabric/ecmp.h"
#include "tita/fabric/edit.h"
#include "tita/fabric/mmu.h"
#include "tita/fabric/pfc.h"
#include "tita/fabric/red.h"
#include "tita/fabric/rng.h"
#include "tita/fabric/route.h"
#include "tita/fabric/shaper.h"
#include "tita/fabric/types.h"

namespace tita::fabric {

inline constexpr uint64_t kNever = UINT64_MAX;

// A 5-tuple with wildcards, for the black-hole fault.
struct FlowMatch {
  static constexpr uint8_t kSrc = 1, kDst = 2, kSport = 4, kDport = 8, kProto = 16;
  uint8_t fields = 0;  // which fields must match; 0 matches every packet
  FlowKey key;
  bool matches(const FlowKey& k) const;
};

// Faults of one egress port, applied to packets as routing sends them to it.
struct FaultConfig {
  double drop_probability = 0;  // random loss, each packet independently
  bool drop_all = false;        // silent black hole of every flow whose ECMP choice is this port
  bool black_hole = false;      // silent black hole of the packets black_hole_flow matches
  FlowMatch black_hole_flow;
  uint64_t delay_ns = 0;        // added one-way delay (delay line after the shaper)
  // With a delay: this fraction of the packets skips the delay line and
  // overtakes the ones in it (netem's `delay D reorder P`). 0 without a delay.
  double reorder_probability = 0;
  // RoCEv2 packets (UDP 4791) that leave with one bit of their BTH PSN
  // flipped, which the receiver's ICRC check then catches (netem's `corrupt`,
  // aimed where only the ICRC can see it). Real frames only: the ns-3 hosts
  // do not verify the ICRC, so TitaSwitchNode refuses it.
  double corrupt_probability = 0;
};

struct PortConfig {
  uint64_t rate_bps = 100'000'000'000;  // line rate: shaper, INT rate, PFC quanta, RED defaults
  bool shaped = true;                   // false: the host paces (ns-3 devices)
  uint32_t burst_bytes = 16384;         // shaper bucket depth
  uint32_t overhead_bytes = 0;          // per-frame wire overhead the shaper adds (24: preamble, IFG, FCS)
  uint64_t buffer_bytes = 0;            // egress limit for lossy priorities; 0 = none
  bool ecn = true;
  RedConfig red;                        // unset fields: red_defaults(rate_bps) (red.h)
  bool strict_priority = true;          // false: round robin over priorities
  uint8_t mac[6] = {};                  // source of PFC frames and rewritten frames
  bool rewrite_mac = false;             // source = mac, destination = next_hop_mac
  uint8_t next_hop_mac[6] = {};
  FaultConfig fault;
};

struct SwitchConfig {
  std::vector<PortConfig> ports;
  MmuConfig mmu;
  EcmpConfig ecmp;
  ClassifyConfig classify;
  bool int_enabled = true;
  bool decrement_ttl = true;
  uint16_t pfc_quanta = 0xffff;  // in XOFF frames, refreshed every half pause time
  uint64_t seed = 1;             // RED and random-loss draws
  uint32_t max_packets = 65536;  // descriptors for queued and delayed packets
  // Descriptors allocated up front; more are added (doubling) as packets need
  // them, up to max_packets. 0: all of them up front (no allocation after init:
  // the DPDK switch). A simulation of many switches that are mostly idle
  // allocates what its queues actually reach.
  uint32_t initial_packets = 0;
};

struct QueueCounters {
  uint64_t enqueued_packets = 0;
  uint64_t enqueued_bytes = 0;
  uint64_t dequeued_packets = 0;
  uint64_t dequeued_bytes = 0;  // as accounted at ingress (without INT growth)
  uint64_t dropped_packets = 0;
  uint64_t ecn_marked = 0;
  uint64_t qlen_bytes = 0;
  uint64_t qlen_packets = 0;
  uint64_t max_qlen_bytes = 0;
  double qlen_byte_ns = 0;  // integral of qlen over time
  uint64_t qlen_since_ns = 0;
};

struct PortCounters {
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;  // as they leave, INT records included
  uint64_t drops[kDropReasons] = {};
  uint64_t ecn_marked = 0;
  uint64_t int_pushed = 0;
  uint64_t int_overflowed = 0;
  uint64_t fault_reordered = 0;  // sent ahead of the delay line (FaultConfig::reorder_probability)
  uint64_t fault_corrupted = 0;  // sent with a PSN bit flipped (FaultConfig::corrupt_probability)
  uint64_t pfc_frames_sent = 0;
  uint64_t pfc_frames_received = 0;
  uint64_t pfc_pause_sent[kPriorities] = {};    // priorities with quanta > 0 in frames sent
  uint64_t pfc_resume_sent[kPriorities] = {};
  uint64_t pfc_pause_received[kPriorities] = {};
  uint64_t pfc_resume_received[kPriorities] = {};
  uint64_t qlen_bytes = 0;  // every priority
  uint64_t max_qlen_bytes = 0;
  double qlen_byte_ns = 0;
  uint64_t qlen_since_ns = 0;
  QueueCounters queue[kPriorities];

  uint64_t dropped() const;
  uint64_t pfc_pause_sent_total() const;
  uint64_t pfc_pause_received_total() const;
};

// A port's scalar counters by the names telemetry, tita-switch's report and
// tita-sim's metrics use, drops by reason as "drop_<reason>": f(name, value).
template <class F>
void for_each_port_counter(const PortCounters& c, F&& f) {
  f("rx_packets", c.rx_packets);
  f("rx_bytes", c.rx_bytes);
  f("tx_packets", c.tx_packets);
  f("tx_bytes", c.tx_bytes);
  f("dropped", c.dropped());
  f("ecn_marked", c.ecn_marked);
  f("int_pushed", c.int_pushed);
  f("int_overflowed", c.int_overflowed);
  f("fault_reordered", c.fault_reordered);
  f("fault_corrupted", c.fault_corrupted);
  f("pfc_frames_sent", c.pfc_frames_sent);
  f("pfc_pause_sent", c.pfc_pause_sent_total());
  f("pfc_frames_received", c.pfc_frames_received);
  f("pfc_pause_received", c.pfc_pause_received_total());
  f("qlen_bytes", c.qlen_bytes);
  f("max_qlen_bytes", c.max_qlen_bytes);
}
// The drop counters, f("drop_<reason>", value), every reason.
template <class F>
void for_each_drop_counter(const PortCounters& c, F&& f) {
  for (int r = 0; r < kDropReasons; ++r) {
    const std::string k = "drop_" + std::string(to_string(static_cast<DropReason>(r)));
    f(k.c_str(), c.drops[r]);
  }
}
// One priority's queue counters (and the port's PFC pauses for it).
template <class F>
void for_each_queue_counter(const PortCounters& c, int q, F&& f) {
  const QueueCounters& qc = c.queue[q];
  f("enqueued_packets", qc.enqueued_packets);
  f("dequeued_packets", qc.dequeued_packets);
  f("dequeued_bytes", qc.dequeued_bytes);
  f("dropped_packets", qc.dropped_packets);
  f("ecn_marked", qc.ecn_marked);
  f("qlen_bytes", qc.qlen_bytes);
  f("max_qlen_bytes", qc.max_qlen_bytes);
  f("pfc_pause_sent", c.pfc_pause_sent[q]);
  f("pfc_pause_received", c.pfc_pause_received[q]);
}

// Optional observers (ns-3 trace sources, samplers). Called synchronously;
// null pointers cost one branch.
struct Hooks {
  void* ctx = nullptr;
  // After every enqueue and dequeue: the queue's and the port's bytes.
  void (*qlen)(void* ctx, uint16_t port, uint8_t prio, uint64_t queue_bytes, uint64_t port_bytes,
               uint64_t now_ns) = nullptr;
  // port: egress once known, else ingress; prio: 0xff before classification.
  void (*drop)(void* ctx, uint16_t port, uint8_t prio, DropReason why, uint32_t bytes, uint64_t now_ns) = nullptr;
  // sent: a frame this switch sends on `port`; otherwise one it received there.
  void (*pfc)(void* ctx, uint16_t port, uint8_t prio, bool pause, bool sent, uint64_t now_ns) = nullptr;
};

enum class Verdict : uint8_t {
  kQueued,   // the switch holds the packet
  kPfc,      // a PFC frame, consumed (the host frees it)
  kDropped,  // the host frees it; `reason` says why
};

struct RxResult {
  Verdict verdict = Verdict::kDropped;
  DropReason reason = DropReason::kMalformed;
  uint16_t out_port = 0;  // kQueued: the egress port; kDropped: the port the drop was counted on
  uint8_t priority = 0;
};

class SwitchCore {
 public:
  // Validates and applies cfg; routes are added afterwards. -EINVAL with a
  // one-line message naming the bad setting.
  int init(const SwitchConfig& cfg, std::string* err);

  // Control path: forwarding, faults, port state.
  int add_route(const uint8_t prefix[16], int len, std::span<const uint16_t> ports, std::string* err) {
    return routes_.add(prefix, len, ports, err);
  }
  void clear_routes() { routes_.clear(); }
  void set_port_up(uint16_t port, bool up) { routes_.set_port_up(port, up); }
  // The egress port that routing and ECMP (with the dodge offset) choose for a
  // packet of `key` carrying `dscp`, as receive() does before faults and the
  // buffer; -1 when no route has a port up. For walking paths (tests, tools).
  int forward_port(const FlowKey& key, uint8_t dscp) const;
  void set_fault(uint16_t port, const FaultConfig& f);
  void set_hooks(const Hooks& h) { hooks_ = h; }
  void reset_counters(uint64_t now_ns);

  // Re-sends XOFF for priorities still paused (every half pause time).
  void poll(uint64_t now_ns);
  // Builds the next pending PFC frame into buf and names the port to send it
  // on; returns its length, 0 when none is pending, -ENOSPC if cap < 60.
  int pfc_frame(uint16_t* port, uint8_t* buf, uint32_t cap, uint64_t now_ns);
  bool pfc_pending() const { return !pfc_pending_.empty(); }

  // When dequeue(port) may next return a packet (kNever: nothing queued), and
  // when poll() next has work.
  uint64_t next_event_ns(uint16_t port, uint64_t now_ns) const;
  uint64_t next_poll_ns() const;

  // State.
  uint16_t ports() const { return static_cast<uint16_t>(cfg_.ports.size()); }
  const SwitchConfig& config() const { return cfg_; }
  const PortConfig& port_config(uint16_t port) const { return cfg_.ports[port]; }
  const PortCounters& counters(uint16_t port) const { return counters_[port]; }
  uint64_t qlen_bytes(uint16_t port) const { return counters_[port].qlen_bytes; }
  uint64_t queue_bytes(uint16_t port, uint8_t prio) const { return counters_[port].queue[prio].qlen_bytes; }
  double avg_qlen_bytes(uint16_t port, uint64_t now_ns) const;
  double avg_queue_bytes(uint16_t port, uint8_t prio, uint64_t now_ns) const;
  bool egress_paused(uint16_t port, uint8_t prio, uint64_t now_ns) const {
    return ports_[port].pause.paused(prio, now_ns);
  }
  const Mmu& mmu() const { return mmu_; }
  const RouteTable& routes() const { return routes_; }
  uint32_t held_packets() const { return held_; }  // queued + delayed
  uint32_t descriptors() const { return static_cast<uint32_t>(descs_.size()); }  // allocated so far
  bool idle() const { return held_ == 0; }

 protected:
  static constexpr uint32_t kNil = UINT32_MAX;

  // The host-independent halves of Switch<Handle>. admit() takes a descriptor
  // when it queues the packet; next() and take_any() give one back (already
  // free: the caller reads its handle slot before the next admit()).
  RxResult admit(uint16_t in_port, const FrameRef& f, uint64_t now_ns, uint32_t* desc);
  bool next(uint16_t port, uint64_t now_ns, uint32_t* desc, EgressEdit* edit);
  bool take_any(uint32_t* desc);

 private:
  struct Desc {
    uint32_t next = kNil;
    uint32_t frame_bytes = 0;
    uint16_t in_port = 0;
    uint16_t l3_offset = 0;
    uint16_t trailer_offset = 0;
    uint16_t trailer_len = 0;
    uint8_t priority = 0;
    uint8_t flags = 0;
    uint16_t corrupt_offset = 0;  // kDescCorrupt: the byte and bit to flip
    uint8_t corrupt_mask = 0;
    uint64_t release_ns = 0;  // delay line
  };
  static constexpr uint8_t kDescIpv6 = 1, kDescEct = 2, kDescPush = 4, kDescOverflow = 8, kDescCorrupt = 16;

  struct Fifo {
    uint32_t head = kNil;
    uint32_t tail = kNil;
  };
  struct PortState {
    Shaper shaper;
    Fifo queue[kPriorities];
    Fifo delay;
    uint8_t nonempty = 0;  // bit p: queue p holds packets
    uint8_t rr_next = 0;
    uint8_t pfc_changed = 0;  // priorities to put in the next PFC frame
    bool pfc_queued = false;  // in pfc_pending_
    uint64_t pfc_refresh_ns = kNever;
    PauseState pause;  // egress paused by the peer (ns)
    uint32_t rate_mbps = 0;
    uint64_t pause_ns = 0;  // what pfc_quanta pauses at this rate
    RedParams red;  // the port's RedConfig, resolved
  };

  RxResult drop(uint16_t port, uint8_t prio, DropReason why, uint32_t bytes, uint64_t now_ns);
  // Adds descriptors (doubling, up to max_packets); false when at the limit.
  bool grow_descriptors();
  void on_pfc(uint16_t port, const FrameRef& f, uint64_t now_ns);
  void request_pfc(uint16_t in_port, uint8_t prio);
  int pick(uint16_t port, uint64_t now_ns);
  uint32_t pop(uint16_t port, uint8_t prio);
  uint64_t depart(uint16_t port, uint8_t prio, Desc& d, uint64_t now_ns, EgressEdit* e);
  void release_desc(uint32_t d);
  void account(uint16_t port, uint8_t prio, int64_t bytes, int packets, uint64_t now_ns);

  SwitchConfig cfg_;
  RouteTable routes_;
  Mmu mmu_;
  Rng rng_;
  Hooks hooks_;
  std::vector<PortState> ports_;
  std::vector<PortCounters> counters_;
  std::vector<Desc> descs_;
  std::vector<EgressEdit> delay_edits_;  // per descriptor, once a port has a delay
  uint32_t free_ = kNil;
  uint32_t held_ = 0;
  std::vector<uint16_t> pfc_pending_;  // ports with a PFC frame to send
  uint32_t paused_groups_ = 0;         // ingress groups in XOFF
  uint64_t counters_since_ns_ = 0;
};

// The switch over the host's packet handles. Handle is anything default-
// constructible and movable (rte_mbuf*, ns3::Ptr<ns3::Packet>, an index); the
// switch keeps one per descriptor and gives it back at dequeue.
template <class Handle>
class Switch : public SwitchCore {
 public:
  int init(const SwitchConfig& cfg, std::string* err) {
    const int rc = SwitchCore::init(cfg, err);
    if (rc == 0) {
      handles_.clear();
      handles_.resize(descriptors());
    }
    return rc;
  }

  // Takes h (moves it in) only when the verdict is kQueued; otherwise the host
  // still owns it and frees it.
  RxResult receive(uint16_t in_port, Handle& h, const FrameRef& f, uint64_t now_ns) {
    uint32_t d;
    const RxResult r = admit(in_port, f, now_ns, &d);
    if (r.verdict == Verdict::kQueued) {
      if (d >= handles_.size()) [[unlikely]] handles_.resize(descriptors());  // the core grew
      handles_[d] = std::move(h);
    }
    return r;
  }

  // The next packet `port` sends at now_ns, if any: its handle and the edit to
  // apply before transmitting it.
  bool dequeue(uint16_t port, uint64_t now_ns, Handle* h, EgressEdit* edit) {
    uint32_t d;
    if (!next(port, now_ns, &d, edit)) return false;
    *h = std::move(handles_[d]);
    handles_[d] = Handle{};
    return true;
  }

  // Up to n packets of `port`; returns how many.
  uint32_t dequeue_burst(uint16_t port, uint64_t now_ns, Handle* hs, EgressEdit* edits, uint32_t n) {
    uint32_t i = 0;
    while (i < n && dequeue(port, now_ns, &hs[i], &edits[i])) ++i;
    return i;
  }

  // Hands back any packet still held (queued or delayed), for shutdown.
  bool drain(Handle* h) {
    uint32_t d;
    if (!take_any(&d)) return false;
    *h = std::move(handles_[d]);
    handles_[d] = Handle{};
    return true;
  }

 private:
  std::vector<Handle> handles_;
};

}  // namespace tita::fabric
