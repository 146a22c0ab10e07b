// The engine on a DPDK port: a PacketIo over mbufs and the polling step that
// feeds received frames to the engine and sends what it produces.
//
//   Port port;  port.open("net_vhost0", {}, &err);
//   EngineHost host(port, /*queue=*/0, engine_config, {});
//   host.register_memory(buf, len);       // zero-copy transmit from this region
//   Engine& eng = host.engine();          // verbs as in tita/engine/engine.h
//   for (;;) host.poll_once(clock.now_ns());
//
// Transmit takes the engine's frames a burst at a time, their mbufs allocated in
// one call, and queues them in a ring until the port takes them. It builds one
// mbuf per frame: headers, payload and tail copied into a
// single segment, or (zero copy, when the port takes chained mbufs and the
// payload lies in memory given to register_memory) a header mbuf chained to
// external-buffer mbufs that point at the payload where it lies, and a tail
// segment. The ICRC is computed over those pieces without gathering them.
//
// A zero-copy frame of a send WR carries a hold (engine::TxFrame::hold): its
// external buffers share a record whose free callback, run by whoever frees
// the last of them (this port's transmit path, a NIC's descriptor cleanup, a
// net_ring peer on another lcore), hands the record back (a list when it runs
// in this host's poll, else a multi-producer ring); poll_once() then releases
// the hold, and the WR's completion, which returns the memory to the
// application, can come.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tita/dpdk/port.h"
#include "tita/engine/engine.h"
#include "tita/fabric/pfc.h"

struct rte_mbuf_ext_shared_info;
struct rte_ring;

namespace tita::dpdk {

// Several engines on one port, one per lcore, each on its own queue pair with its
// own range of QP numbers: engine k owns [first_qpn + k*qpn_stride, + qpn_stride).
// A frame that arrives on another engine's queue (RSS does not know QPs) is
// handed to its owner through the owner's inbox ring; rules that steer by the
// peer's UDP source port (steer_qp) make that rare where the port has rte_flow.
// ARP frames reach every engine (each keeps its own neighbour table).
struct Steering {
  uint16_t self = 0;
  uint32_t qpn_stride = 1u << 16;
  std::vector<rte_ring*> inbox;  // one per engine: multi-producer, single-consumer

  // Rings for `engines` engines; names are prefixed with `tag`. Empty on failure.
  static std::vector<rte_ring*> make_inboxes(const std::string& tag, uint16_t engines, unsigned size = 4096);
};

struct HostOptions {
  bool zero_copy = true;     // external-buffer payload where possible
  // Zero-copy frames of send WRs the port may hold at once (each takes a
  // record until the port frees it); beyond that frames are copied (counted).
  // 0 turns zero copy off.
  uint32_t hold_records = 8192;
  uint16_t burst = 32;       // frames per rx/tx burst
  bool port_mac = true;      // source MAC from the port; false: the engine config's
                             // (for ports whose kernel twin owns the port MAC, like net_tap on a bridge)
  const Steering* steering = nullptr;  // one of several engines on this port (copied)
  // Honour 802.1Qbb PFC frames from the link as a NIC's MAC does: a paused
  // priority's frames wait (the others go on); its priority is the frame's PCP
  // when tagged, else DSCP >> 3 (lib/fabric's classification, the NIC default).
  bool honour_pfc = true;
  // A fault, for tita-doctor's tests: from the first poll on, this host sends
  // an XOFF (quanta 0xffff) for this 802.1p priority every kPfcStormEveryNs,
  // as a NIC whose receive path is wedged does (a PFC storm). -1: off; tita's
  // hosts send no PFC frames otherwise.
  int pfc_storm_priority = -1;
};

inline constexpr uint64_t kPfcStormEveryNs = 1'000'000;

// A poll this much later than the engine asked for counts as late (HostCounters).
inline constexpr uint64_t kLatePollNs = 1'000'000;

struct HostCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_linearized = 0;   // multi-segment frames copied into one buffer for the parser
  uint64_t tx_frames = 0;
  uint64_t tx_zero_copy = 0;    // frames whose payload went out as external buffers
  uint64_t tx_copied = 0;
  uint64_t tx_holds_full = 0;   // frames copied: every hold record was out (HostOptions::hold_records)
  uint64_t holds_released = 0;  // zero-copy frames the port has freed, their holds released
  uint64_t tx_done_cleanups = 0;  // rte_eth_tx_done_cleanup calls made to free held frames
  uint64_t tx_no_mbuf = 0;      // frames dropped: mempool empty
  uint64_t tx_oversize = 0;     // frames dropped: larger than the port's mbuf data room
                                // (modify_qp refuses such path MTUs: a bug if ever seen)
  uint64_t tx_overrun = 0;      // frames dropped: more than tx_space() said (a bug if ever seen)
  uint64_t rx_handed_off = 0;   // frames for another engine's QP, passed to its inbox
  uint64_t rx_from_inbox = 0;   // frames other engines passed to this one
  uint64_t rx_inbox_full = 0;   // frames dropped: the owner's inbox was full
  uint64_t flow_rules = 0;      // rte_flow rules steering a peer's UDP port to this queue
  uint64_t polls = 0;
  uint64_t rx_pfc_pauses = 0;   // PFC frames that paused a priority (XOFF)
  uint64_t rx_pfc_resumes = 0;  // ... that resumed one (quanta 0)
  uint64_t pfc_held = 0;        // transmit bursts in which a paused priority's frames waited
  uint64_t tx_pfc_frames = 0;   // PFC frames sent (only the pfc_storm_priority fault sends any)
  // Polls that came more than kLatePollNs after the engine's next deadline (a
  // send, ACK or timer it asked to be polled for): the host was not running.
  uint64_t late_polls = 0;
  uint64_t late_ns = 0;         // total of those delays
};

class EngineHost final : public engine::PacketIo {
 public:
  EngineHost(Port& port, uint16_t queue, const engine::EngineConfig& config, const HostOptions& options = {});
  ~EngineHost() override;

  engine::Engine& engine() { return *engine_; }
  const engine::Engine& engine() const { return *engine_; }
  Port& port() { return port_; }
  const Port& port() const { return port_; }
  const HostCounters& counters() const { return counters_; }
  // Whether zero copy is on: asked for, and the port sends external buffers
  // (Port::external_tx_refused says why not).
  bool zero_copy_on() const { return options_.zero_copy; }
  // The time the engine has been waiting for its next poll beyond kLatePollNs,
  // now (0 if not): from another thread (telemetry), a host that is not
  // running at all is seen late before its next poll counts it.
  uint64_t overdue_ns() const;
  // Zero-copy frames whose external buffers the port has not freed yet.
  uint32_t holds_out() const;

  // Makes [addr, addr+len) transmittable without copying (rte_extmem_register and
  // a DMA mapping for the port's device, where the device needs one). Call it for
  // memory you also register with the engine. 0 or -errno with a message.
  int register_memory(void* addr, size_t len, std::string* err);

  // Asks the port to deliver frames from the peer of our QP `qpn` (peer QP
  // `peer_qpn`, sending from the UDP port Linux's derivation gives them) to this
  // engine's queue. 0, or -errno when the port has no such rte_flow support
  // (frames then reach us through the inboxes).
  int steer_qp(uint32_t qpn, uint32_t peer_qpn, std::string* err);

  // One step: receive a burst and hand it to the engine, run the engine's timers
  // and pacing, and send what it produced. Returns frames received.
  uint32_t poll_once(uint64_t now_ns);

  // engine::PacketIo
  uint32_t tx_space() override;
  void transmit_burst(uint64_t now_ns, const engine::TxFrame* frames, uint32_t n) override;
  bool sums_icrc() const override { return true; }  // build(): copy_to() or finish_icrc()
  bool holds_payload() const override { return holds_ != nullptr; }  // zero copy on

 private:
  struct Region {
    uint8_t* base;
    size_t len;
    rte_mbuf_ext_shared_info* shinfo;
  };
  const Region* region_of(const void* p, size_t len) const;
  struct HoldPool;  // host.cc
  void drain_releases();
  // Frees what the port has done with where it can (rte_eth_tx_done_cleanup),
  // so that completions waiting on holds come without more transmits.
  void cleanup_held(uint64_t now_ns);
  bool zero_copy(const engine::TxFrame& f) const;  // its payload can go out where it lies
  // Fills the head mbuf m with frame f (chaining more for zero copy); false:
  // m was freed and the frame counted as dropped.
  bool build(const engine::TxFrame& f, rte_mbuf* m);
  // The pending ring: frames built, not yet taken by the port, oldest first.
  uint32_t pending_count() const { return pending_tail_ - pending_head_; }
  rte_mbuf*& pending_at(uint32_t i) { return pending_[(pending_head_ + i) & pending_mask_]; }
  void pending_push(rte_mbuf* m) { pending_[pending_tail_++ & pending_mask_] = m; }
  uint32_t pending_send(uint32_t n);  // hands up to n frames from the head to the port
  void flush();
  void deliver(uint64_t now_ns, rte_mbuf* m);
  void share_with_others(rte_mbuf* m);  // an ARP frame: a reference to every other engine's inbox
  bool on_pfc(uint64_t now_ns, const rte_mbuf* m);  // true: m was a PFC frame (consumed)
  void send_pfc_storm(uint64_t now_ns);             // the pfc_storm_priority fault
  bool paused(const rte_mbuf* m) const;

  Port& port_;
  uint16_t queue_;
  HostOptions options_;
  std::unique_ptr<engine::Engine> engine_;
  std::vector<rte_mbuf*> pending_;  // ring of a power-of-two size (4 bursts at least)
  uint32_t pending_mask_ = 0;
  uint32_t pending_head_ = 0;       // free-running positions
  uint32_t pending_tail_ = 0;
  std::vector<Region> regions_;
  HoldPool* holds_ = nullptr;       // owned; left to late free callbacks if frames outlive the host
  uint64_t cleanup_next_ns_ = 0;
  bool cleanup_unsupported_ = false;
  std::vector<uint8_t> linear_;     // scratch for multi-segment receives
  Steering steering_;               // inbox empty: the only engine on its queue
  HostCounters counters_;
  uint64_t due_ns_ = UINT64_MAX;    // when the engine wanted its next poll
  uint64_t now_ns_ = 0;             // the current poll's time
  uint64_t due_in_ns_ = UINT64_MAX; // at the last poll's end: how long until due_ns_
  uint64_t last_poll_tsc_ = 0;      // and when that was, in TSC cycles
  fabric::PauseState pause_;        // PFC from the link (ns)
  std::vector<rte_mbuf*> pfc_go_, pfc_wait_;  // flush()'s partition while paused
  uint64_t storm_next_ns_ = 0;      // the pfc_storm_priority fault's next XOFF
};

}  // namespace tita::dpdk
