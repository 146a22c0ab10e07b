// The engine-wide state (resources, the scheduler, the transmit burst, the
// control ring, the out-of-order pool) and the functions of each role, grouped
// by the file that runs them (doc/architecture.md lists which rule is where).
// A QP's own state, split by role, is in qp.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "tita/cc/cc.h"
#include "tita/engine/engine.h"
#include "tita/engine/timing_wheel.h"
#include "qp.h"
#include "tita/wire/frame.h"
#include "tita/wire/psn.h"

namespace tita::engine {

struct Mr {
  uint8_t* base = nullptr;  // host memory at iova; nullptr for phantom regions
  uint64_t iova = 0;
  uint64_t length = 0;
  uint32_t access = 0;
  uint32_t pd = 0;
  uint32_t key = 0;  // lkey == rkey: index << 8 | generation
  bool valid = false;
  bool phantom = false;

  bool contains(uint64_t va, uint64_t len) const { return va >= iova && len <= length && va - iova <= length - len; }
  uint8_t* at(uint64_t va) const { return base ? base + (va - iova) : nullptr; }
};

// A ring that grows as it fills, up to `limit` slots: doubling from 16, what it
// holds moved over in order to the front. With EngineConfig::grow_on_demand the
// engine's rings (completion queues, the control ring, the ready ring) start
// empty, so an engine of many idle QPs and queues (ns-3 at thousands of hosts)
// costs little; a ring grows a few times at most (log2 of its limit). Without
// it they are made full size and never grow. False at the limit.
template <class T>
bool grow_ring(std::vector<T>& ring, uint32_t& head, uint32_t count, size_t limit) {
  const size_t have = ring.size();
  if (have >= limit) return false;
  std::vector<T> bigger(std::min(limit, std::max<size_t>(16, 2 * have)));
  for (uint32_t i = 0; i < count; ++i) bigger[i] = std::move(ring[(head + i) % have]);
  ring = std::move(bigger);
  head = 0;
  return true;
}

struct Cq {
  enum Arm : uint8_t { kUnarmed, kNext, kSolicited };
  std::vector<WorkCompletion> ring;  // grows to `entries` (grow_ring)
  uint32_t entries = 0;              // what the CQ holds (create_cq, resize_cq)
  uint32_t head = 0;  // next to poll
  uint32_t count = 0;
  Arm armed = kUnarmed;
  bool error = false;  // overflowed: completions after that are lost and counted
  bool valid = false;
};

// A receive WR as its queue keeps it (post_recv, post_srq_recv).
inline RecvWqe to_wqe(const RecvWr& wr) {
  RecvWqe r;
  r.wr_id = wr.wr_id;
  r.num_sge = static_cast<uint8_t>(wr.num_sge);
  for (int i = 0; i < wr.num_sge; ++i) {
    r.sge[i] = wr.sg_list[i];
    r.length += wr.sg_list[i].length;
  }
  return r;
}

// A shared receive queue (srq.cc): receive WQEs that the QPs made with it
// take, one message at a time, into their own one-slot receive ring.
struct Srq {
  std::vector<RecvWqe> ring;  // max_wr + 1 slots (full and empty differ)
  uint32_t head = 0;          // the next WQE a QP takes
  uint32_t tail = 0;          // post_srq_recv's producer index
  uint32_t pd = 0;
  uint32_t max_sge = 0;
  uint32_t limit = 0;         // armed when non-zero
  uint32_t users = 0;         // QPs made with it
  bool valid = false;
  uint32_t size() const { return static_cast<uint32_t>(ring.size()); }
  uint32_t queued() const { return (tail + size() - head) % size(); }
};

// A kept out-of-order frame: its bytes live in the slot's part of an arena
// allocated when the pool grows (at a QP's INIT->RTR), never on the data path.
struct OooSlot {
  uint8_t* frame = nullptr;
  uint32_t len = 0;
  uint32_t psn = 0;
  uint32_t next = kNil;
};

// An ACK or sequence NAK whose frame is built when it leaves: a newer one
// for the QP only updates this (kept in ControlFrame::data until then).
struct PendingAck {
  struct Head {
    uint32_t psn = 0;
    uint32_t msn = 0;
    uint8_t syndrome = 0;
  } head;
  EchoCopy echo;
  // Bytes of an ACK whose echo holds n INT records (what the slot must keep).
  static constexpr size_t bytes(uint32_t n_hops) {
    return offsetof(PendingAck, echo) + offsetof(EchoCopy, hops) + n_hops * sizeof(wire::TelemetryHop);
  }
};

// A control frame (ACK, NAK, CNP, ARP) waiting for tx space.
struct ControlFrame {
  static constexpr uint32_t kBytes = 192;
  static_assert(sizeof(PendingAck) <= kBytes);
  alignas(8) uint8_t data[kBytes];
  uint32_t len = 0;
  uint32_t qp_num = 0;
  uint8_t priority = 0;
  bool loopback = false;  // for this engine itself
  bool pending = false;   // a PendingAck in data, built by flush_control
  // kAck: an ACK or a PSN-sequence NAK, both cumulative (a newer one for the
  // QP supersedes it); kCnp: a CNP (one waiting per QP says all a newer would).
  enum class Kind : uint8_t { kOther, kAck, kCnp } kind = Kind::kOther;
  uint8_t ce_packets = 0;  // the CE marks its echo reports
};

// An address handle (ibv_create_ah): where UD messages go, with the headers
// made once its MAC is known (ud.cc).
struct Ah {
  enum class State : uint8_t { kResolved, kPending, kFailed };
  AhAttr attr;
  wire::HeaderTemplate hdr;  // BTH dest QP and UDP source port are set per frame
  uint32_t pd = 0;
  State state = State::kPending;
  bool loopback = false;  // our own GID: frames go round the internal loop
  bool valid = false;
};

// A frame on the internal loop (to our own GID), whole.
struct LoopFrame {
  std::vector<uint8_t> data;
  uint32_t len = 0;
};

// The neighbour table: IPv4 -> MAC, filled by ARP.
struct NeighbourEntry {
  Neighbour n;
  uint32_t tries = 0;       // requests sent while incomplete
  uint64_t next_ns = 0;     // incomplete: when to ask again (or give up)
};

// What an ACK echoes from the data packet that triggered it.
struct Echo {
  const wire::TelemetryHdr* trailer = nullptr;
  uint8_t ce_packets = 0;
  uint8_t path_hops = 0;
  int32_t sack_psn = -1;  // selective repeat NAK: the out-of-order PSN
  // Sprayed QPs: the UDP source port the packet came with, which its ACK or NAK
  // takes back (0: the QP's own). ACKs spread over the requester's values, and
  // a value it retires for a broken path stops carrying ACKs too.
  uint16_t udp_sport = 0;
};

// A sprayed frame's own UDP source port, in a header the template wrote
// (data frames and control frames alike).
inline void set_udp_sport(const wire::HeaderTemplate& hdr, uint8_t* frame, uint16_t sport) {
  frame[hdr.udp_offset()] = static_cast<uint8_t>(sport >> 8);
  frame[hdr.udp_offset() + 1] = static_cast<uint8_t>(sport);
}

struct Engine::Impl {
  Impl(const EngineConfig& c, PacketIo* io);

  EngineConfig cfg;
  PacketIo* io;
  bool host_sums_icrc = false;  // io->sums_icrc(): data frames leave with the ICRC pending
  bool host_holds = false;      // io->holds_payload(): data frames of send WRs carry hold tokens
  EngineCounters counters;
  uint32_t next_pd = 1;
  std::vector<Mr> mrs;
  std::vector<Cq> cqs;
  std::vector<Srq> srqs;  // by handle; [0] unused (0: no SRQ)
  std::vector<std::unique_ptr<Qp>> qps;
  std::vector<uint32_t> free_qps;
  uint32_t gsi_index = UINT32_MAX;  // the QP that answers to number 1 (QpInitAttr::gsi), if any
  std::deque<std::pair<std::string, cc::Params>> cc_params;  // stable addresses
  TimingWheel wheel;
  std::vector<uint32_t> ready;  // ring of QP indices (grow_ring, no limit: stale entries of destroyed QPs stay)
  uint32_t ready_head = 0;
  uint32_t ready_count = 0;
  std::vector<ControlFrame> control;  // ring of up to cfg.control_ring (grow_ring)
  uint32_t control_head = 0;
  uint32_t control_count = 0;
  uint64_t control_popped = 0;  // control frames sent so far: the head's absolute position
  std::vector<OooSlot> ooo;
  // Left uninitialised: an arena is address space until slots are written
  // (large allocations are mapped on demand), so an engine of many idle
  // selective-repeat QPs (ns-3 at thousands of hosts) stays small.
  std::vector<std::unique_ptr<uint8_t[]>> ooo_arenas;
  uint32_t ooo_free = kNil;
  uint64_t ooo_wanted = 0;     // sr_window per selective-repeat QP in RTR or RTS
  uint32_t ooo_slot_bytes = 0;  // the largest frame a slot keeps
  uint64_t now_ns = 0;
  PathHook path_hook = nullptr;
  void* path_ctx = nullptr;
  EventHook event_hook = nullptr;
  void* event_ctx = nullptr;
  std::vector<uint8_t> pds;          // live PDs, by number
  std::vector<uint32_t> cq_errors;   // CQs that overflowed: their QPs go to error at the next settle()
  std::vector<NeighbourEntry> neighbours;
  uint64_t arp_deadline_ns = kNever;  // the earliest next_ns of an incomplete entry
  std::vector<Ah> ahs;                // address handles, by number (0: none)
  std::vector<LoopFrame> loop;        // ring of cfg.loopback_slots, allocated on first use
  uint32_t loop_head = 0;
  uint32_t loop_count = 0;
  // Frames go to the host in bursts (PacketIo::transmit_burst): one call per
  // kTxBurst frames, and at the end of every flush_control(). A data frame's
  // headers and tail are built in its slot's scratch; a control frame points
  // into the control ring, which nothing changes before flush_control() hands
  // the burst over.
  static constexpr uint32_t kTxBurst = 32;
  struct TxScratch {
    uint8_t hdr[128];
    uint8_t tail[8 + wire::kMaxTelemetryBytes];
  };
  TxFrame tx_burst[kTxBurst];
  TxScratch tx_scratch[kTxBurst];
  uint32_t tx_count = 0;
  void tx_flush() {
    if (tx_count == 0) return;
    io->transmit_burst(now_ns, tx_burst, tx_count);
    counters.tx_frames += tx_count;
    tx_count = 0;
  }

  // ---- completer.cc: zero copy's holds (Engine::hold_payload)
  // A token names a QP slot, the QP object in it (its hold_epoch) and an SQ
  // slot: kHoldSlotBits + kHoldEpochBits + 24 bits of QP index (max_qps <= 2^24).
  static constexpr uint32_t kHoldSlotBits = 21;   // SQ rings hold at most 2^21 slots (max_send_wr <= 2^20)
  static constexpr uint32_t kHoldEpochBits = 19;
  uint32_t hold_epochs = 0;  // the last hold_epoch given to a QP object (never 0)
  uint32_t next_hold_epoch() {
    hold_epochs = (hold_epochs + 1) & ((1u << kHoldEpochBits) - 1);
    if (hold_epochs == 0) hold_epochs = 1;
    return hold_epochs;
  }
  static uint64_t hold_token(const Qp& qp, uint32_t wqe) {
    return uint64_t{qp.index} << (kHoldSlotBits + kHoldEpochBits) | uint64_t{qp.cold.hold_epoch} << kHoldSlotBits | wqe;
  }
  // The held count a token names; nullptr (counted) for a stale token. *qp_out: its QP.
  uint32_t* held_of(uint64_t token, Qp** qp_out, bool allocate);
  // Completes, in order, the acknowledged WRs whose payload nothing holds.
  void retire_released(Qp& qp);

  // ---- verbs.cc: resources, posting, completions
  Qp* qp_by_num(uint32_t qpn);
  bool pd_live(uint32_t pd) const { return pd != 0 && pd < pds.size() && pds[pd]; }
  const Mr* mr_by_key(uint32_t key) const {
    const uint32_t index = key >> 8;
    if (index == 0 || index >= mrs.size()) return nullptr;
    const Mr& mr = mrs[index];
    return mr.valid && mr.key == key ? &mr : nullptr;
  }
  void raise(EventKind kind, uint32_t cq, uint32_t qp_num) {
    if (event_hook != nullptr) event_hook(event_ctx, Event{kind, cq, qp_num});
  }
  void raise(const Event& e) {
    if (event_hook != nullptr) event_hook(event_ctx, e);
  }
  // Queues a completion; `solicited`: a receive of a message with SE set (for
  // CQs armed solicited-only; errors always notify).
  void complete(uint32_t cq, const WorkCompletion& wc, bool solicited = false);
  // What engine calls leave to their end: QPs of overflowed CQs to error.
  void settle() {
    if (!cq_errors.empty()) [[unlikely]] fail_cq_qps();
  }
  void fail_cq_qps();

  // ---- qp.cc: the QP state machine
  // What a QP keeps across RESET besides its number, PD, CQs and creation
  // attributes: its congestion control's parameters, its path control and
  // spraying configuration (spray nullptr: off).
  struct QpSettings {
    const cc::Params* cc = nullptr;
    const PathConfig* path = nullptr;
    const SprayConfig* spray = nullptr;
  };
  // The one way a QP is made, by create_qp and again by RESET: every part
  // fresh, its storage sized from `init` (as create_qp settled it), each
  // part's own reset run (init_flow, path_init, spray_init).
  std::unique_ptr<Qp> new_qp(uint32_t index, uint32_t pd, const QpInitAttr& init, const QpSettings& s);
  // modify_qp's steps: the attribute values checked (after the transition
  // table), applied, and INIT -> RTR's actions.
  int check_qp_attr(const Qp& qp, QpState from, QpState to, const QpAttr& a, uint32_t mask, std::string* why) const;
  void apply_qp_attr(Qp& qp, const QpAttr& a, uint32_t mask);
  void qp_to_rtr(Qp& qp);
  // Moves the QP to ERROR: the WR at `failed` (default: the oldest) completes with
  // status, every other outstanding WR and every receive is flushed.
  void to_error(Qp& qp, WcStatus status, uint32_t failed = kNil);
  // Largest frame a QP sends at path MTU `mtu` (for EngineConfig::max_frame_bytes).
  uint32_t max_frame_for(const AhAttr& ah, uint32_t mtu) const;

  // ---- flow.cc: a QP's congestion control
  // (Re)starts the QP's congestion control on its parameters, and the ACK
  // rate the algorithm needs.
  void init_flow(Qp& qp);
  void set_ack_every(Qp& qp);  // the AckReq rate the QP's algorithm (and spraying) needs

  // ---- receive.cc: receive dispatch
  void receive_frame(const uint8_t* frame, uint32_t len);

  // ---- fast_path.cc: the receive fast path (EngineConfig::fast_path)
  // What the QP expects of its peer's frames, after every successful modify_qp.
  void fast_path_prepare(Qp& qp);
  // Takes the frame if it is one the fast path handles whole (an ACK, or an
  // in-order WRITE without immediate that passes every check, to an RC QP in
  // RTS) and returns true; false: nothing changed, the general path takes it.
  bool receive_fast(const uint8_t* frame, uint32_t len);

  // ---- scheduler.cc: the ready ring and the timing wheel
  void reconsider(Qp& qp);
  void make_ready(Qp& qp);
  void wake(Qp& qp);
  // One turn of a ready QP: READ responses it owes first, then its requests.
  bool send_turn(Qp& qp);

  // ---- transmit.cc: data frames out
  wire::PathFields path_fields(const Qp& qp) const { return path_fields(qp, qp.path() ? qp.path()->dodge : 0); }
  // The QP's path fields with `dodge` in its dodge field (path control on).
  wire::PathFields path_fields(const Qp& qp, uint16_t dodge) const;
  // Builds one data frame into the transmit burst (or onto the internal loop);
  // returns its length (without the trailer).
  // `udp_sport`: the UDP source port instead of the template's (spraying); 0: the template's.
  // `hold`: the token of the WR whose payload it carries (TxFrame::hold), 0: none.
  uint32_t send_frame(Qp& qp, const wire::TransportFields& t, const wire::Segment* payload, uint32_t n_payload,
                      uint32_t payload_len, bool phantom, bool collect, uint16_t udp_sport = 0, uint64_t hold = 0);
  // Where one frame goes besides its template: the per-frame UDP source port
  // (0: the template's) and destination QP, its egress class, the internal loop.
  struct FrameRoute {
    static constexpr uint32_t kTemplateQp = ~uint32_t{0};
    uint16_t udp_sport = 0;
    uint32_t dest_qp = kTemplateQp;
    uint8_t priority = 0;
    bool loopback = false;
    bool transient = false;  // TxFrame::transient
    uint64_t hold = 0;       // TxFrame::hold
  };
  // send_frame's work for any template: a connected QP's (send_frame) or an
  // address handle's (UD, ud.cc).
  uint32_t emit_frame(Qp& qp, const wire::HeaderTemplate& hdr, const FrameRoute& route, const wire::TransportFields& t,
                      const wire::Segment* payload, uint32_t n_payload, uint32_t payload_len, bool phantom,
                      bool collect);

  // ---- control_frames.cc: ACKs, NAKs and CNPs
  // Builds an ACK, NAK or CNP now, to leave before data when tx space allows.
  // What queue_control did with a frame.
  enum class Queued : uint8_t { kNew, kMerged, kDropped };
  // `echo`: what an ACK or NAK echoes (copy_echo), nullptr for none.
  Queued queue_control(Qp& qp, const wire::HeaderTemplate& hdr, const wire::TransportFields& t,
                       const EchoCopy* echo);
  // What an ACK or NAK echoes of the data packet that triggered it, copied
  // out of the packet (on: only with EngineConfig::telemetry).
  EchoCopy copy_echo(const Echo& e) const;
  ControlFrame* waiting_control(uint32_t position, uint32_t qpn, ControlFrame::Kind kind);
  // Writes a control frame's bytes: headers from `hdr`, ICRC, the echo trailer.
  void build_control(ControlFrame& c, const wire::HeaderTemplate& hdr, const wire::TransportFields& t,
                     const EchoCopy* echo);
  void flush_control();

  // ---- loopback.cc: the internal loop, a whole frame to ourselves, and delivering what is on it
  bool loop_push(const uint8_t* hdr, uint32_t hdr_len, const wire::Segment* payload, uint32_t n_payload,
                 const uint8_t* tail, uint32_t tail_len);
  void loop_deliver();

  // ---- ud.cc: UD QPs and address handles
  // The largest UD message: the path MTU the port carries.
  uint32_t ud_mtu() const;
  // post_send's checks of a UD WR of `length` bytes: 0 or -EINVAL.
  int ud_check_wr(const Qp& qp, const SendWr& wr, uint64_t length) const;
  bool ud_has_work(const Qp& qp) const;
  bool ud_send_one(Qp& qp);  // one message of the oldest WR; false: nothing sent
  void ud_receive(Qp& qp, const wire::Packet& pkt);
  // The neighbour table learned or gave up on an address: the AHs waiting for it.
  void ah_learned(uint32_t ipv4, const uint8_t mac[6]);
  void ah_failed(uint32_t ipv4);
  void ah_build(Ah& ah);  // its header template, MAC known

  // ---- neighbour.cc (ARP)
  void resolve(Qp& qp);  // at RTR: the AV's MAC from the table, or asked for
  // The MAC of an IPv4 neighbour into mac: true if known, else false and asked
  // for by ARP (learn() and arp_tick() tell the waiting QPs and AHs).
  bool neighbour_mac(uint32_t ipv4, uint8_t mac[6]);
  void on_arp(const uint8_t* frame, uint32_t len);
  void arp_tick();       // arp_deadline_ns passed: ask again or give up
  void learn(uint32_t ipv4, const uint8_t mac[6], bool permanent);
  void send_arp(uint16_t oper, const uint8_t dst_mac[6], const uint8_t target_mac[6], uint32_t target_ip);

  // ---- ooo_pool.cc: the out-of-order pool
  // The pool grows to sr_window slots per selective-repeat QP (at most
  // ooo_slots) when a QP reaches RTR; drop_ooo() gives the QP's share back.
  void ooo_reserve(Qp& qp);
  uint32_t ooo_alloc();  // a free slot, or kNil
  void ooo_release(uint32_t slot);
  void drop_ooo(Qp& qp);  // frees the QP's kept frames and its share

  // ---- requester.cc: writes qp.req (and the retx bitmaps)
  bool has_work(const Qp& qp) const;
  bool can_send_new(const Qp& qp) const;
  bool send_one(Qp& qp);  // a resend first, then a new packet; false: nothing sent
  bool start_wqe(Qp& qp, SendWqe& w);
  // READs and atomics: `read_pkts` responses from psn.
  void send_request(Qp& qp, SendWqe& w, uint32_t psn, bool retransmission, uint32_t read_pkts = 0);
  // READ parts (requester.cc, "READ parts")
  uint32_t part_limit(const Qp& qp) const;
  uint32_t loss_in_flight(const Qp& qp) const;
  bool loss_allows(const Qp& qp, bool read = false) const;
  ReadPart* part_holding(Qp& qp, uint32_t psn);
  void ask_part(Qp& qp, ReadPart& p, uint32_t from, uint32_t len, bool again);
  void send_part(Qp& qp, SendWqe& w);
  void skip_answered(Qp& qp);
  bool send_rerequest(Qp& qp);
  void forget_asked(Qp& qp, uint32_t psn, bool all);
  bool ack_request_wanted(const Qp& qp, const SendWqe& w, uint32_t psn, uint32_t len, bool last) const;
  // The QP's pacing clock, which READ responses share: a data frame of
  // frame_bytes just left.
  void pace(Qp& qp, uint32_t frame_bytes);
  // Go-back-N: send again from psn (never before snd_una). `forget_resent`:
  // also forget which PSNs selective repeat resent since the last timeout
  // (a timeout, a stall repath: the receiver may have dropped what it kept).
  void rewind(Qp& qp, uint32_t psn, bool forget_resent = false);
  // Selective repeat: resend psn - once until a timeout (IRN's holes), or
  // `again` whatever was resent before (RACK, a tail probe, a path change);
  // true if it was newly marked.
  bool mark_lost(Qp& qp, uint32_t psn, bool again = false);
  // The completer moved snd_una from `old_una`: marks below it are void, and a
  // go-back-N rewind that went below it moves up to it.
  void on_una(Qp& qp, uint32_t old_una);
  uint32_t wqe_index_of(const Qp& qp, uint32_t psn) const;
  uint64_t seq_position(const Qp& qp, uint32_t psn) const;

  // ---- completer.cc: writes qp.comp
  void complete_response(Qp& qp, const wire::Packet& pkt);
  void on_cnp(Qp& qp);
  void arm_rto(Qp& qp);
  void on_timeout(Qp& qp);
  // retry_cnt tries without progress: the WR at `failed` (kNil: the oldest)
  // fails with RETRY_EXC_ERR, counted, and the host hears of it once.
  void retry_exceeded(Qp& qp, uint32_t failed, bool by_nak);
  void on_rnr_wait_over(Qp& qp);
  // The requester sent an AckReq packet or a READ request: an RTT probe, if
  // none is out and the peer echoes no telemetry in answer to it (READ
  // responses never do); probe_void_from: a PSN from psn on goes out again (Karn).
  void probe_sent(Qp& qp, uint32_t psn, bool read = false);
  void probe_answered(Qp& qp, uint64_t rtt_ns);
  // RFC 6298's smoothing of one RTT sample into the tail-loss probe's clock.
  static void rtt_smooth(RttProbe& p, uint64_t rtt_ns);
  void probe_void_from(Qp& qp, uint32_t psn);

  // ---- responder.cc: writes qp.resp
  void respond(Qp& qp, const wire::Packet& pkt, bool from_ooo);
  // The fast path's responder: an in-order WRITE (First, Middle, Last, Only;
  // no immediate) that passes every check is executed and acknowledged as
  // respond() would; anything else returns false having changed nothing.
  // The caller has made sure that respond()'s other work cannot apply
  // (nothing kept out of order, no READ or atomic owed, not closing).
  bool respond_fast(Qp& qp, const wire::Packet& pkt, bool icrc_unchecked);
  bool send_read_response(Qp& qp);
  void ack(Qp& qp, uint8_t syndrome, uint32_t psn, const Echo* echo);
  void send_ack(Qp& qp, uint8_t syndrome, uint32_t psn, const EchoCopy* echo);  // now, not deferred
  void send_cnp(Qp& qp);
  void finish_deferred_ack(Qp& qp);
  void fail_responder(Qp& qp, EventKind event);

  // ---- srq.cc: shared receive queues
  bool srq_live(uint32_t srq) const { return srq != 0 && srq < srqs.size() && srqs[srq].valid; }
  // A message needs a receive and the QP's own ring is empty: the SRQ's
  // oldest WQE moves there (and the limit event, when it falls below);
  // false when the SRQ is empty too (RNR).
  bool srq_take(Qp& qp);

  // ---- dodge.cc: path control, Hash Dodging (only while qp.path() is set, but path_init and path_at_rtr)
  void path_init(Qp& qp, const PathConfig& p);
  void path_at_rtr(Qp& qp);
  void path_on_send(Qp& qp, uint32_t payload_len);
  void path_on_progress(Qp& qp);
  void path_on_una(Qp& qp);  // snd_una moved: rounds and the throughput window
  void path_on_congestion(Qp& qp);
  // An ACK's sample: the path's RTT, and whether it says congested (CE, INT queues).
  void path_on_sample(Qp& qp, const cc::AckSample& s);
  void path_on_timeout(Qp& qp);
  void path_check(Qp& qp);   // the stall deadline passed
  void path_follow(Qp& qp, const wire::Packet& request);
  // A duplicate request arrived: a round of them moves the QP's answers on (dodge.cc).
  void path_on_duplicate(Qp& qp, uint32_t psn);
  // The UDP source port a sprayed QP's ACK echoes for a request that came on `arrived`.
  uint16_t echo_sport(const Qp& qp, uint16_t arrived) const;
  void repath(Qp& qp, RepathReason why);

  // ---- spray.cc (only while qp.spraying(), but spray_init)
  void spray_init(Qp& qp, const SprayConfig& s);  // s checked (check_spray); paths 0: off
  // The path for request packet `psn` of WR w (a retransmission leaves the path
  // that lost it); records it and returns the UDP source port to carry, or 0
  // for a READ or atomic request (the QP's own path).
  uint16_t spray_pick(Qp& qp, const SendWqe& w, uint32_t psn, bool retransmission);
  // Packets [from, to) were acknowledged (cumulatively, or `to` - 1 selectively);
  // `ce`: CE marks the ACK echoed, `rtt_ns` its sample (0: none), both for the
  // packet that triggered it (`trigger`).
  void spray_delivered(Qp& qp, uint32_t from, uint32_t to, uint32_t trigger, uint32_t ce, uint64_t rtt_ns);
  // RACK: marks for retransmission the unacknowledged packets sent a
  // reordering window before the latest delivered one; returns bytes marked.
  uint64_t spray_detect_losses(Qp& qp);
  // A retransmission timeout: values that delivered nothing since then are replaced.
  void spray_on_timeout(Qp& qp, uint64_t silent_since_ns);
  // A D-SACK for psn: it was resent for nothing; the reordering window
  // widens, and the value its first sending took is credited with it.
  void spray_on_dsack(Qp& qp, uint32_t psn);
};

// Shared by the RC requester and responder and UD (requester.cc, responder.cc):
// the payload pieces of [offset, offset + len) of a send WR (ok false: an MR
// went away); whether a receive WQE's SGEs all lie in local-write MRs of the
// PD; placing len bytes at offset of a receive WQE (false: a bad SGE).
uint32_t gather(const Engine::Impl& m, const SendWqe& w, uint32_t offset, uint32_t len, wire::Segment* out,
                bool* phantom, bool* ok);
bool receive_sges_valid(const Engine::Impl& m, const RecvWqe& r, uint32_t pd);
bool scatter(const Engine::Impl& m, const RecvWqe& r, uint32_t pd, uint32_t offset, const uint8_t* src, uint32_t len);

inline WcOpcode wc_opcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm: return WcOpcode::kRdmaWrite;
    case WrOpcode::kRdmaRead: return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCmpAndSwp: return WcOpcode::kCompSwap;
    case WrOpcode::kAtomicFetchAndAdd: return WcOpcode::kFetchAdd;
    default: return WcOpcode::kSend;
  }
}

// Bits of the selective-repeat bitmaps.
inline bool bit_test(const std::vector<uint64_t>& b, uint32_t i) { return b[i >> 6] >> (i & 63) & 1; }
inline void bit_set(std::vector<uint64_t>& b, uint32_t i) { b[i >> 6] |= uint64_t{1} << (i & 63); }
inline void bit_clear(std::vector<uint64_t>& b, uint32_t i) { b[i >> 6] &= ~(uint64_t{1} << (i & 63)); }

}  // namespace tita::engine
