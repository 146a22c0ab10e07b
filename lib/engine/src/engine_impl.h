// Engine internals shared by engine.cc (objects, verbs, dispatch, scheduling),
// requester.cc (what a QP sends), responder.cc (what it does with requests) and
// completer.cc (what it does with responses).
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
#include "tita/wire/frame.h"
#include "tita/wire/psn.h"

namespace tita::engine {

inline constexpr uint64_t kNever = TimingWheel::kNever;
inline constexpr uint32_t kNil = TimingWheel::kNone;

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

struct SendWqe {
  uint64_t wr_id = 0;
  uint64_t remote_addr = 0;
  uint64_t seq_start = 0;  // cumulative payload bytes of the QP before this WR
  uint64_t compare_add = 0;  // atomics
  uint64_t swap = 0;
  uint32_t rkey = 0;
  uint32_t length = 0;
  uint32_t imm = 0;
  uint32_t first_psn = 0;  // assigned when the WR starts
  uint32_t npkts = 0;      // SEND/WRITE: request packets; READ: response packets; atomic: 1
  uint32_t read_pkts = 0;  // READ and atomic: response packets received in order
  WrOpcode opcode = WrOpcode::kSend;
  uint8_t num_sge = 0;
  bool signaled = false;
  bool solicited = false;
  bool fence = false;
  bool inline_data = false;  // the payload is in the QP's inline slot of this WQE
  bool started = false;
  Sge sge[kMaxSge];

  bool is_read() const { return opcode == WrOpcode::kRdmaRead; }
  bool is_atomic() const { return engine::is_atomic(opcode); }
  // READs and atomics complete with the responder's response, not an ACK.
  bool needs_response() const { return is_read() || is_atomic(); }
  uint32_t last_psn() const { return wire::psn_add(first_psn, npkts - 1); }
};

struct RecvWqe {
  uint64_t wr_id = 0;
  uint32_t length = 0;  // sum of the SGEs
  uint8_t num_sge = 0;
  Sge sge[kMaxSge];
};

// A READ or atomic the responder is answering (its responder resource).
struct ReadJob {
  uint64_t va = 0;
  uint64_t orig = 0;       // atomic: the value before the operation
  uint32_t remaining = 0;  // bytes still to send
  uint32_t psn = 0;        // next response PSN
  uint32_t first_psn = 0;
  uint32_t npkts = 0;
  uint32_t mr = 0;         // MR index (0: none, a zero-length READ)
  bool atomic = false;     // answered with one Atomic Acknowledge
};

// The result of an executed atomic, kept to answer a duplicate of it (IBA
// 9.7.5.1.4: a duplicate atomic is never executed twice).
struct AtomicResult {
  uint32_t psn = 0;
  uint64_t orig = 0;
  bool valid = false;
};

struct Cq {
  enum Arm : uint8_t { kUnarmed, kNext, kSolicited };
  std::vector<WorkCompletion> ring;
  uint32_t head = 0;  // next to poll
  uint32_t count = 0;
  Arm armed = kUnarmed;
  bool error = false;  // overflowed: completions after that are lost and counted
  bool valid = false;
};

// Where a multi-packet request message stands at the responder.
enum class InMessage : uint8_t { kNone, kSend, kWrite };

// Path control (Hash Dodging, path.cc): the dodge values in use and what the
// detection rules have seen.
struct PathState {
  PathConfig cfg;
  bool on = false;
  uint16_t mask = 0;        // cfg.mask resolved
  uint16_t dodge = 0;       // carried by this QP's requests
  uint16_t resp_dodge = 0;  // carried by its responses (the peer's requests')
  bool progressed = false;  // the responder acknowledged something once (the stall rule waits for it)
  uint8_t stalls = 0;       // stall repaths since the last progress
  uint8_t patience = 0;     // stall windows doubled this often: stall repaths proved spurious
  bool stall_open = false;  // a stall repath whose verdict is out (spurious or not)
  uint64_t stall_ns = 0;    // when it happened
  uint32_t timeouts = 0;    // RTOs since the last progress
  uint64_t progress_ns = 0;       // the responder's cumulative ACK last moved (or data left into an empty pipe)
  uint64_t deadline_ns = kNever;  // next stall check
  uint64_t congestion_ns = 0;     // last congestion signal; 0: none
  bool congested = false;         // a congestion signal was ever seen (congestion_ns valid)
  uint64_t srtt_ns = 0;
  // Rounds: a round ends when the ACK covers what was out when it began (the
  // first round: what was out at its first ACK).
  bool round_open = false;
  bool round_end_set = false;
  bool round_congested = false;
  uint32_t round_start = 0;      // snd_una when the round began
  uint32_t round_end = 0;        // the round ends when snd_una passes this PSN
  uint32_t round_lost = 0;       // packets a NAK, a SACK hole or a READ gap said were lost
  uint32_t lossy_rounds = 0;
  // Throughput window (kNever: not started, the QP was idle).
  uint64_t win_start_ns = kNever;
  uint64_t win_una_bytes = 0;
  uint64_t win_sent_bytes = 0;
  uint64_t win_rate_bps = 0;
  bool win_congested = false;
  wire::HeaderTemplate resp_hdr;  // the QP's ACKs, NAKs and READ responses (follow the peer's dodge)
};

// Spraying (spray.cc): the QP's entropy values and, per PSN in the
// selective-repeat window, the value it went out on and when.
struct SprayPath {
  uint16_t value = 0;
  uint8_t generation = 0;  // bumped when the value is replaced: older packets are not its
  bool class_kept = false;  // offset policy: replaced within its class (spray.cc, replace)
  uint32_t lost_in_row = 0;
  uint64_t delivered_ns = 0;       // when one of its packets was last acknowledged
  uint64_t delivered_sent_ns = 0;  // the send time of the latest-sent one acknowledged (or of its first)
  uint64_t echoed_ns = 0;          // when an ACK came back on it (its own: both directions work)
  SprayPathInfo stats;
};
struct SprayState {
  SprayConfig cfg;
  uint16_t mask = 0;
  uint16_t base = 0;              // the QP's own dodge value
  std::vector<SprayPath> paths;   // cfg.paths of them
  uint32_t next = 0;              // round robin
  std::vector<uint8_t> recycle;   // REPS: paths whose last ACK was clean, FIFO (a ring)
  uint32_t recycle_head = 0;
  uint32_t recycle_count = 0;
  uint32_t fresh = 0;             // where the search for an unused value resumes
  std::vector<uint8_t> retired_values;  // by value: lost its packets (skipped until all are)
  std::vector<uint8_t> psn_path;      // by PSN mod sr_window
  std::vector<uint8_t> psn_generation;  // the path's generation when it was sent
  std::vector<uint64_t> psn_sent_ns;  // by PSN mod sr_window
  uint64_t rack_sent_ns = 0;      // send time of the latest-sent packet known delivered
  uint64_t rack_rtt_ns = 0;       // and how long it took to be acknowledged
  uint64_t rack_deadline_ns = kNever;
  uint64_t probed_rack_sent_ns = UINT64_MAX;  // rack_sent_ns when the tail was last probed
  uint32_t probes_unanswered = 0;  // probes sent since rack_sent_ns last moved
  uint64_t retired = 0;
  uint64_t replaced = 0;
  uint64_t tail_probes = 0;
};

struct Qp {
  // ---- identity and attributes
  uint32_t index = 0;
  uint32_t qpn = 0;
  uint32_t pd = 0;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  QpState state = QpState::kReset;
  bool valid = false;
  bool sq_sig_all = false;
  bool in_ready = false;
  bool mac_pending = false;  // the AV's MAC waits for ARP: nothing is sent until it resolves
  bool loopback = false;     // the peer is this engine: frames loop back internally
  bool comm_est = false;     // kCommEstablished raised
  // The peer is tita: its frames carry the telemetry trailer. Selective repeat
  // runs only then (a go-back-N peer, such as Linux rxe or a RoCE NIC, would
  // restart its go-back-N on every SACK-bearing NAK).
  bool peer_tita = false;
  uint8_t max_sge = kMaxSge;
  uint32_t mtu_bytes = 1024;  // payload of a full packet: path_mtu, or QpAttr::payload_bytes
  uint16_t udp_sport = 0;
  QpInitAttr init;           // as create_qp settled it
  QpAttr attr;
  wire::HeaderTemplate hdr;  // this QP's frames to its peer, made at RTR
  std::vector<uint8_t> inline_buf;  // one slot of init.max_inline_data bytes per send WQE

  // ---- requester
  std::vector<SendWqe> sq;  // ring, power-of-two size
  uint32_t sq_head = 0;     // oldest WR not completed
  uint32_t sq_next = 0;     // WR that the next new packet comes from
  uint32_t sq_tail = 0;     // next free slot
  uint32_t snd_una = 0;     // oldest unacknowledged PSN
  uint32_t snd_nxt = 0;     // next PSN to send (moves back on go-back-N)
  uint32_t snd_max = 0;     // one past the highest PSN ever sent
  uint32_t acked_psn = 0;   // highest PSN the responder has acknowledged (ACK, or NAK - 1)
  uint64_t una_bytes = 0;   // payload bytes acknowledged (sequence space)
  uint64_t nxt_bytes = 0;   // position of snd_nxt in sequence space
  uint64_t max_bytes = 0;   // position of snd_max
  uint64_t next_seq = 0;    // sequence space handed out to started WRs
  uint64_t next_send_ps = 0;  // pacing: earliest time of the next data packet, picoseconds
  uint64_t rto_deadline_ns = kNever;
  uint64_t rnr_deadline_ns = kNever;
  uint32_t reads_outstanding = 0;
  uint32_t rnr_psn = 0;        // where to resume after the RNR wait
  uint32_t read_retry_psn = 0;  // last READ response PSN re-requested (one retry per gap)
  bool read_retry_armed = false;
  // RTT measured here, toward a peer that echoes no telemetry (rxe, a RoCE
  // NIC): one probe at a time, an AckReq packet sent once and answered by an
  // ACK; a resend of it voids the probe (Karn), so loss never inflates a sample.
  uint32_t probe_psn = 0;
  uint64_t probe_sent_ns = 0;
  bool probe_armed = false;
  uint8_t retry_left = 7;
  uint8_t rnr_left = 7;
  uint8_t backoff = 0;
  // selective repeat, bitmaps over PSN mod sr_window
  std::vector<uint64_t> sacked;
  std::vector<uint64_t> retx;       // to retransmit
  std::vector<uint64_t> retx_done;  // retransmitted since the last timeout
  uint32_t retx_count = 0;

  // ---- responder
  std::vector<RecvWqe> rq;
  uint32_t rq_head = 0;
  uint32_t rq_tail = 0;
  uint32_t epsn = 0;  // expected PSN
  uint32_t msn = 0;
  uint32_t recv_offset = 0;  // bytes of the current SEND placed in rq[rq_head]
  InMessage in_message = InMessage::kNone;
  uint64_t write_va = 0;
  uint32_t write_remaining = 0;
  uint32_t write_total = 0;
  uint32_t write_mr = 0;
  bool nak_sent = false;   // go-back-N: a sequence NAK for epsn is out
  uint32_t unacked = 0;    // in-order packets since the last ACK
  uint8_t ce_unacked = 0;  // of those, CE-marked
  std::vector<ReadJob> reads;  // ring of max_dest_rd_atomic
  uint32_t reads_head = 0;
  uint32_t reads_count = 0;
  std::vector<AtomicResult> atomic_results;  // the last max_dest_rd_atomic atomics executed
  uint32_t atomic_next = 0;
  // An ACK/NAK held back until READ responses before it have gone (IBA ordering).
  // The QP's ACK (or sequence NAK) and CNP waiting in the control ring, as
  // absolute ring positions (Impl::control_popped counts); kNoControl if none.
  static constexpr uint64_t kNoControl = ~uint64_t{0};
  uint64_t waiting_ack = kNoControl;
  uint64_t waiting_cnp = kNoControl;
  bool deferred_ack = false;
  uint8_t deferred_syndrome = 0;
  uint32_t deferred_psn = 0;
  // A fatal NAK waiting behind READ responses and atomic ACKs owed for earlier
  // requests: the QP accepts nothing more and goes to error once it is sent.
  bool closing = false;
  EventKind closing_event = EventKind::kQpFatal;
  uint32_t ooo_head = kNil;  // selective repeat: kept frames, by PSN
  uint32_t ooo_count = 0;
  bool ooo_share = false;    // selective repeat in RTR/RTS: counts sr_window slots towards the pool
  cc::NpState np;

  // ---- congestion control
  const cc::Params* cc_params = nullptr;
  cc::Flow flow;
  // AckReq on every Nth packet: 1 for algorithms defined on a sample per packet
  // (INT, the ACK echo of CE marks), else EngineConfig::ack_req_every (init_flow).
  uint32_t ack_every = 1;
  uint32_t asked_psn = 0;  // the newest request packet sent with AckReq
  bool asked = false;

  // ---- path control: allocated only while it is on, so that a QP without it
  // pays a pointer, not the state and a second header template.
  std::unique_ptr<PathState> path;
  bool path_on() const { return path != nullptr; }
  // Its ACKs, NAKs and READ responses: the peer's dodge value when path control is on.
  const wire::HeaderTemplate& resp_hdr() const { return path ? path->resp_hdr : hdr; }

  // ---- spraying: allocated only while it is configured
  std::unique_ptr<SprayState> spray;
  bool spraying() const { return spray != nullptr && selective(); }

  QpCounters counters;

  uint32_t sq_size() const { return static_cast<uint32_t>(sq.size()); }
  uint8_t* inline_slot(uint32_t wqe) { return inline_buf.data() + size_t{wqe} * init.max_inline_data; }
  // READs and atomics the requester may have outstanding (0 still allows one).
  uint32_t rd_atomic_limit() const { return std::max<uint32_t>(attr.max_rd_atomic, 1); }
  uint32_t mtu() const { return mtu_bytes; }
  // Packets of a message of `length` bytes (a zero-length one takes one).
  uint32_t packets_for(uint32_t length) const { return engine::packets_for(length, mtu_bytes); }
  // Selective repeat as configured and as the peer speaks it.
  bool selective() const { return attr.recovery == Recovery::kSelectiveRepeat && peer_tita; }
  uint64_t inflight_bytes() const { return nxt_bytes - una_bytes; }
};

// A frame the responder keeps until the packets before it arrive.
// A kept out-of-order frame: its bytes live in the slot's part of an arena
// allocated when the pool grows (at a QP's INIT->RTR), never on the data path.
struct OooSlot {
  uint8_t* frame = nullptr;
  uint32_t len = 0;
  uint32_t psn = 0;
  uint32_t next = kNil;
};

// A finished control frame (ACK, NAK, CNP, ARP) waiting for tx space.
struct ControlFrame {
  static constexpr uint32_t kBytes = 192;
  uint8_t data[kBytes];
  uint32_t len = 0;
  uint32_t qp_num = 0;
  uint8_t priority = 0;
  bool loopback = false;  // for this engine itself
  // kAck: an ACK or a PSN-sequence NAK, both cumulative (a newer one for the
  // QP supersedes it); kCnp: a CNP (one waiting per QP says all a newer would).
  enum class Kind : uint8_t { kOther, kAck, kCnp } kind = Kind::kOther;
  uint8_t ce_packets = 0;  // the CE marks its echo reports
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

struct Engine::Impl {
  Impl(const EngineConfig& c, PacketIo* io);

  EngineConfig cfg;
  PacketIo* io;
  EngineCounters counters;
  uint32_t next_pd = 1;
  std::vector<Mr> mrs;
  std::vector<Cq> cqs;
  std::vector<std::unique_ptr<Qp>> qps;
  std::vector<uint32_t> free_qps;
  std::deque<std::pair<std::string, cc::Params>> cc_params;  // stable addresses
  TimingWheel wheel;
  std::vector<uint32_t> ready;  // ring of QP indices
  uint32_t ready_head = 0;
  uint32_t ready_count = 0;
  std::vector<ControlFrame> control;
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

  // ---- engine.cc
  Qp* qp_by_num(uint32_t qpn);
  const Mr* mr_by_key(uint32_t key) const;
  void raise(EventKind kind, uint32_t cq, uint32_t qp_num) {
    if (event_hook != nullptr) event_hook(event_ctx, Event{kind, cq, qp_num});
  }
  // Queues a completion; `solicited`: a receive of a message with SE set (for
  // CQs armed solicited-only; errors always notify).
  void complete(uint32_t cq, const WorkCompletion& wc, bool solicited = false);
  // What engine calls leave to their end: QPs of overflowed CQs to error.
  void settle();
  void receive_frame(const uint8_t* frame, uint32_t len);
  // Moves the QP to ERROR: the WR at `failed` (default: the oldest) completes with
  // status, every other outstanding WR and every receive is flushed.
  void to_error(Qp& qp, WcStatus status, uint32_t failed = kNil);
  void reconsider(Qp& qp);
  // (Re)starts the QP's congestion control on its parameters, and the ACK
  // rate the algorithm needs.
  void init_flow(Qp& qp);
  void set_ack_every(Qp& qp);  // the AckReq rate the QP's algorithm (and spraying) needs
  void make_ready(Qp& qp);
  void wake(Qp& qp);
  wire::PathFields path_fields(const Qp& qp) const { return path_fields(qp, qp.path ? qp.path->dodge : 0); }
  // The QP's path fields with `dodge` in its dodge field (path control on).
  wire::PathFields path_fields(const Qp& qp, uint16_t dodge) const;
  // Builds one data frame into the transmit burst (or onto the internal loop);
  // returns its length (without the trailer).
  // `udp_sport`: the UDP source port instead of the template's (spraying); 0: the template's.
  uint32_t send_frame(Qp& qp, const wire::TransportFields& t, const wire::Segment* payload, uint32_t n_payload,
                      uint32_t payload_len, bool phantom, bool collect, uint16_t udp_sport = 0);
  // Builds an ACK, NAK or CNP now, to leave before data when tx space allows.
  // What queue_control did with a frame.
  enum class Queued : uint8_t { kNew, kMerged, kDropped };
  Queued queue_control(Qp& qp, const wire::HeaderTemplate& hdr, const wire::TransportFields& t, const Echo* echo);
  ControlFrame* waiting_control(uint64_t position, uint32_t qpn);
  void flush_control();
  // The internal loop: a whole frame to ourselves, and delivering what is on it.
  bool loop_push(const uint8_t* hdr, uint32_t hdr_len, const wire::Segment* payload, uint32_t n_payload,
                 const uint8_t* tail, uint32_t tail_len);
  void loop_deliver();
  // Largest frame a QP sends at path MTU `mtu` (for EngineConfig::max_frame_bytes).
  uint32_t max_frame_for(const AhAttr& ah, uint32_t mtu) const;
  // ---- neighbour.cc (ARP)
  void resolve(Qp& qp);  // at RTR: the AV's MAC from the table, or asked for
  void on_arp(const uint8_t* frame, uint32_t len);
  void arp_tick();       // arp_deadline_ns passed: ask again or give up
  void learn(uint32_t ipv4, const uint8_t mac[6], bool permanent);
  void send_arp(uint16_t oper, const uint8_t dst_mac[6], const uint8_t target_mac[6], uint32_t target_ip);
  // The pool grows to sr_window slots per selective-repeat QP (at most
  // ooo_slots) when a QP reaches RTR; drop_ooo() gives the QP's share back.
  void ooo_reserve(Qp& qp);
  uint32_t ooo_alloc();  // a free slot, or kNil
  void ooo_release(uint32_t slot);
  void drop_ooo(Qp& qp);  // frees the QP's kept frames and its share

  // ---- requester.cc
  bool has_work(const Qp& qp) const;
  bool can_send_new(const Qp& qp) const;
  bool send_one(Qp& qp);
  bool start_wqe(Qp& qp, SendWqe& w);
  void send_request(Qp& qp, SendWqe& w, uint32_t psn, bool retransmission);
  bool ack_request_wanted(const Qp& qp, const SendWqe& w, uint32_t psn, uint32_t len, bool last) const;
  bool send_read_response(Qp& qp);
  void rewind(Qp& qp, uint32_t psn);
  void arm_rto(Qp& qp);
  void on_timeout(Qp& qp);
  uint32_t wqe_index_of(const Qp& qp, uint32_t psn) const;
  uint64_t seq_position(const Qp& qp, uint32_t psn) const;

  // ---- responder.cc
  void respond(Qp& qp, const wire::Packet& pkt, bool from_ooo);
  void ack(Qp& qp, uint8_t syndrome, uint32_t psn, const Echo* echo);
  void send_cnp(Qp& qp);
  void finish_deferred_ack(Qp& qp);
  void fail_responder(Qp& qp, EventKind event);

  // ---- completer.cc
  void complete_response(Qp& qp, const wire::Packet& pkt);
  void on_cnp(Qp& qp);

  // ---- path.cc (only while qp.path is set, except path_init and path_at_rtr)
  void path_init(Qp& qp, const PathConfig& p);
  void path_at_rtr(Qp& qp);
  void path_on_send(Qp& qp, uint32_t payload_len);
  void path_on_progress(Qp& qp);
  void path_on_una(Qp& qp);  // snd_una moved: rounds and the throughput window
  void path_on_congestion(Qp& qp);
  void path_on_rtt(Qp& qp, uint64_t rtt_ns);
  void path_on_timeout(Qp& qp);
  void path_check(Qp& qp);   // the stall deadline passed
  void path_follow(Qp& qp, const wire::Packet& request);
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
};

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
