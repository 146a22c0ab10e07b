// A QP's state, split by the role that owns it, as rxe keeps qp->req,
// qp->resp and qp->comp apart (rxe_verbs.h):
//
//   req    the requester (requester.cc): segments send WRs into request
//          packets, paces them, resends what the completer or spraying
//          declared lost.
//   comp   the completer (completer.cc): ACKs, NAKs and READ responses
//          retire send WRs; the retransmission timer and the retry budgets.
//   resp   the responder (responder.cc): checks, executes and acknowledges
//          the peer's requests, answers its READs and atomics.
//   flow   congestion control (cc/), fed by the completer, read by the
//          requester's pacing.
//   cold   what the data path reads but does not write per packet, or
//          touches only on rare events: attributes, header templates,
//          counters, the storage behind the queues, path control and
//          spraying (dodge.cc, spray.cc).
//
// Each role writes its own part. A role that needs another to act calls the
// owner's function (the completer asks the requester to rewind() or to
// resend a PSN, mark_lost(); the requester asks the completer to arm_rto());
// it reads other parts freely. Transitions of the whole QP - modify_qp, the
// move to ERROR, RESET, a path change - set every part, each through its
// reset or its owner's function where one exists.
//
// The hot parts (identity, req, comp, resp, flow) come first and fit in
// kMaxHotBytes; the cold part starts on a cache line of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "tita/cc/cc.h"
#include "tita/cc/loss_window.h"
#include "tita/engine/types.h"
#include "tita/engine/timing_wheel.h"
#include "tita/wire/frame.h"
#include "tita/wire/psn.h"

namespace tita::engine {

inline constexpr uint64_t kNever = TimingWheel::kNever;
inline constexpr uint32_t kNil = TimingWheel::kNone;

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
  uint32_t read_pkts = 0;  // READ and atomic: response packets of its parts completed (the completer's)
  uint32_t asked_pkts = 0;  // READ and atomic: response packets its parts asked for (the requester's)
  WrOpcode opcode = WrOpcode::kSend;
  uint8_t num_sge = 0;
  bool signaled = false;
  bool solicited = false;
  bool fence = false;
  bool inline_data = false;  // the payload is in the QP's inline slot of this WQE
  bool started = false;
  Sge sge[kMaxSge];
  // UD: the address handle, destination QP and Q_Key of the message.
  uint32_t ud_ah = 0;
  uint32_t ud_qpn = 0;
  uint32_t ud_qkey = 0;

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

// A READ request the requester has out: a READ WR is asked for in parts of
// at most kReadPartPackets responses (an atomic is one part of one), each its
// own request with its own responder resource at the peer, so that a loss
// costs a part, not the rest of a large READ, and a hole can be asked again
// within what the responder still remembers. Parts live in a ring
// (cold.parts) from comp.parts_head (the oldest incomplete) to
// req.parts_tail; the requester fills and (re-)asks, the completer marks
// what arrived and retires complete parts in order.
inline constexpr uint32_t kReadPartPackets = 64;
struct ReadPart {
  uint64_t got = 0;          // bit i: response first_psn + i arrived (the completer's)
  uint64_t asked = 0;        // bits asked for and still expected: the part's share of comp.read_in_flight
  uint32_t first_psn = 0;    // of its responses (and of its request)
  uint32_t wqe = 0;          // its WR's SQ slot
  uint32_t offset_pkts = 0;  // its first response's position in the WR
  uint8_t npkts = 0;         // 1..kReadPartPackets
  // The start of its latest request. It only grows: Linux rxe serves a
  // repeated READ only from where the last one it served started
  // (rxe_resp.c, duplicate_request()), so a requester never asks from before it.
  uint8_t asked_from = 0;
  static constexpr uint8_t kNoHole = 0xff;
  // The start and length of its latest re-request (kNoHole: none since the
  // last timeout), whose answer the completer watches.
  uint8_t hole = kNoHole;
  bool rereq = false;        // a re-request of [rereq_from, +rereq_len) is to go
  bool reasked = false;      // asked again at least once (its responses may be replays)
  bool spurious = false;     // its latest re-request proved needless (its hole came twice)
  uint8_t rereq_from = 0;
  uint8_t rereq_len = 0;

  uint64_t full() const { return npkts >= 64 ? ~uint64_t{0} : (uint64_t{1} << npkts) - 1; }
  bool complete() const { return got == full(); }
  // The first response at or after `from` not yet received (npkts: none).
  uint32_t first_missing(uint32_t from = 0) const {
    const uint64_t missing = ~got & full() & (from >= 64 ? 0 : ~uint64_t{0} << from);
    return missing == 0 ? npkts : static_cast<uint32_t>(__builtin_ctzll(missing));
  }
  // The first received response at or after `from` (npkts: none).
  uint32_t next_received(uint32_t from) const {
    const uint64_t have = got & (from >= 64 ? 0 : ~uint64_t{0} << from);
    return have == 0 ? npkts : std::min<uint32_t>(npkts, static_cast<uint32_t>(__builtin_ctzll(have)));
  }
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
  // Made for a repeated READ whose first answer was done: it holds no
  // resource of its own, and yields its slot to a new READ or atomic.
  bool replay = false;
};

// The result of an executed atomic, kept to answer a duplicate of it (IBA
// 9.7.5.1.4: a duplicate atomic is never executed twice).
struct AtomicResult {
  uint32_t psn = 0;
  uint64_t orig = 0;
  bool valid = false;
};

// Where a multi-packet request message stands at the responder.
enum class InMessage : uint8_t { kNone, kSend, kWrite };

// Path control (Hash Dodging, dodge.cc): the dodge values in use and what the
// detection rules have seen.
struct PathState {
  PathConfig cfg;
  bool on = false;
  uint16_t mask = 0;        // cfg.mask resolved
  uint16_t dodge = 0;       // carried by this QP's requests
  uint16_t resp_dodge = 0;  // carried by its responses (the peer's requests')
  bool progressed = false;  // the responder acknowledged something once (till then the stall window is 8x)
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
  uint64_t marked_ns = 0;          // when an ACK last echoed CE for one of its packets
  SprayPathInfo stats;
};
struct SprayState {
  SprayConfig cfg;
  uint16_t mask = 0;
  uint16_t base = 0;              // the QP's own dodge value
  std::vector<SprayPath> paths;   // cfg.paths of them
  uint32_t next = 0;              // round robin
  uint8_t flowlet_path = 0xff;    // flowlets: the path of the current one (0xff: none yet)
  uint8_t flowlet_generation = 0;  // its generation then (a replaced value ends the flowlet)
  uint64_t flowlet_sent_ns = 0;   // when the QP last sent a new packet
  std::vector<uint8_t> recycle;   // REPS: paths whose last ACK was clean, FIFO (a ring)
  uint32_t recycle_head = 0;
  uint32_t recycle_count = 0;
  uint32_t fresh = 0;             // where the search for an unused value resumes
  std::vector<uint8_t> retired_values;  // by value: lost its packets (skipped until all are)
  std::vector<uint8_t> psn_path;      // by PSN mod sr_window
  std::vector<uint8_t> psn_generation;  // the path's generation when it was sent
  std::vector<uint64_t> psn_sent_ns;  // by PSN mod sr_window
  // A resent PSN's earlier sending (its path, that path's generation, when):
  // a D-SACK for it says that one arrived after all, late, not lost.
  struct Sending {
    uint64_t sent_ns;
    uint8_t path;
    uint8_t generation;
  };
  std::vector<Sending> psn_prev;  // by PSN mod sr_window
  uint64_t rack_sent_ns = 0;      // send time of the latest-sent packet known delivered
  uint64_t rack_rtt_ns = 0;       // and how long it took to be acknowledged
  uint64_t rack_deadline_ns = kNever;
  // RFC 8985's reordering window multiplier: one more quarter of the minimum
  // RTT per round trip that saw a D-SACK (a resend for nothing), back to 1
  // after 16 round trips without one.
  uint32_t reo_mult = 1;
  uint64_t dsack_ns = 0;       // when reo_mult last grew
  uint64_t probed_rack_sent_ns = UINT64_MAX;  // rack_sent_ns when the tail was last probed
  uint32_t probes_unanswered = 0;  // probes sent since rack_sent_ns last moved
  uint64_t retired = 0;
  uint64_t replaced = 0;
  uint64_t tail_probes = 0;
  uint64_t dsacks = 0;
};

// What an ACK or NAK echoes, copied out of the data packet that triggered it
// (whose frame is gone by the time the ACK is built).
struct EchoCopy {
  bool on = false;         // an ECHO trailer (EngineConfig::telemetry)
  bool overflow = false;   // the data packet's trailer had overflowed
  uint8_t ce_packets = 0;
  uint8_t path_hops = 0;
  uint8_t n_hops = 0;      // INT records in hops
  uint16_t udp_sport = 0;  // sprayed: the port to answer on (0: the template's)
  int32_t sack_psn = -1;
  uint32_t ts_ns = 0;
  uint8_t hops[wire::kMaxTelemetryHops * sizeof(wire::TelemetryHop)];
};

// ---- requester (requester.cc)
struct ReqState {
  SendWqe* sq = nullptr;    // ring of sq_mask + 1 (cold.sq_ring)
  uint32_t sq_mask = 0;
  uint32_t sq_next = 0;     // WR that the next new packet comes from
  uint32_t sq_tail = 0;     // next free slot (post_send: the application's producer index)
  uint32_t snd_nxt = 0;     // next PSN to send (moves back on go-back-N)
  uint32_t snd_max = 0;     // one past the highest PSN ever sent
  uint32_t retx_count = 0;  // selective repeat: PSNs marked to resend (bits in sr_bits, kRetx)
  uint64_t nxt_bytes = 0;   // position of snd_nxt in sequence space
  uint64_t max_bytes = 0;   // position of snd_max
  uint64_t next_seq = 0;    // sequence space handed out to started WRs
  uint64_t next_send_ps = 0;  // pacing: earliest time of the next data packet, picoseconds
  uint32_t parts_tail = 0;     // READ parts: next slot of cold.parts (absolute, modulo 2^32)
  uint32_t asked_psn = 0;   // the newest request packet sent with AckReq
  // AckReq on every Nth packet: 1 for algorithms defined on a sample per packet
  // (INT, the ACK echo of CE marks), else EngineConfig::ack_req_every (init_flow).
  uint32_t ack_every = 1;
  bool asked = false;
  uint16_t rereq_count = 0;    // parts with a re-request to send (ReadPart::rereq; at most kMaxRdAtomic)
};

// ---- completer (completer.cc)
// Tail-loss probe (Engine::Impl::arm_rto): the first wait after progress is
// this many smoothed round trips or RFC 6298's srtt + 4 rttvar, whichever is
// longer, never shorter than kTailProbeMinNs (a responder's ACK turnaround and
// a host's scheduling hiccups are not loss).
inline constexpr uint64_t kTailProbeRtts = 3;
inline constexpr uint64_t kTailProbeMinNs = 200'000;
struct CompState {
  uint32_t sq_head = 0;    // oldest WR not completed
  uint32_t snd_una = 0;    // oldest unacknowledged PSN
  // Highest PSN the responder has acknowledged (ACK, or NAK - 1) or answered
  // (a READ response): how far READ responses have run past a hole.
  uint32_t acked_psn = 0;
  uint32_t parts_head = 0;  // READ parts: the oldest incomplete (see ReqState::parts_tail)
  uint64_t una_bytes = 0;  // payload bytes acknowledged (sequence space)
  uint64_t rto_deadline_ns = kNever;
  uint64_t rnr_deadline_ns = kNever;  // an RNR NAK's wait; the requester holds new packets meanwhile
  uint32_t rnr_psn = 0;        // where to resume after the RNR wait
  uint32_t read_in_flight = 0;  // READ responses asked for and still expected (ReadPart::asked)
  // Responses a hole may lag behind acked_psn before it counts as lost: grows
  // to the lag of any response that arrived after its hole would have been
  // declared lost (reordering, not loss).
  uint16_t reorder_pkts = 3;
  uint8_t retry_left = 7;
  uint8_t rnr_left = 7;
  uint8_t backoff = 0;
  bool tail_probe = false;  // rto_deadline_ns is a tail-loss probe's (arm_rto)
  bool probed = false;      // a tail-loss probe went since the last progress
  bool holding = false;     // a host holds frames of its WRs (zero copy: cold.holds, cold.held)
};

// RTT measured by the completer toward a peer that echoes no telemetry (rxe,
// a RoCE NIC): one probe at a time, an AckReq packet sent once and answered by
// an ACK; a resend of it voids the probe (Karn), so loss never inflates a
// sample. Once per round trip: cold. Toward a tita peer only READ requests are
// timed (their responses echo nothing) and every echoed timestamp feeds the
// smoothed RTT: the tail-loss probe's clock either way.
struct RttProbe {
  bool armed = false;
  // A READ request's, timed to its first response: for the tail-loss probe's
  // clock only (a READ's answer time is not the path's RTT for congestion control).
  bool read = false;
  uint32_t psn = 0;
  uint64_t sent_ns = 0;
  uint64_t srtt_ns = 0;    // smoothed (RFC 6298: 1/8 per sample): the tail-loss probe's clock
  uint64_t rttvar_ns = 0;  // and its variation (1/4 per sample)
};

// ---- responder (responder.cc)
struct RespState {
  RecvWqe* rq = nullptr;  // ring of rq_mask + 1 (cold.rq_ring)
  uint32_t rq_mask = 0;
  uint32_t rq_head = 0;
  uint32_t rq_tail = 0;   // post_recv: the application's producer index
  uint32_t epsn = 0;      // expected PSN
  uint32_t msn = 0;
  uint32_t recv_offset = 0;  // bytes of the current SEND placed in rq[rq_head]
  uint64_t write_va = 0;
  uint32_t write_remaining = 0;
  uint32_t write_total = 0;
  uint32_t write_mr = 0;
  uint32_t unacked = 0;    // in-order packets since the last ACK
  uint32_t reads_count = 0;  // READ responses and atomic ACKs owed (cold.reads ring)
  uint32_t ooo_head = kNil;  // selective repeat: kept frames, by PSN
  uint32_t ooo_count = 0;
  // The QP's ACK (or sequence NAK) and CNP waiting in the control ring, as
  // absolute ring positions modulo 2^32 (Impl::control_popped counts; the
  // frame there is checked to be the QP's, of that kind); kNoControl if none.
  static constexpr uint32_t kNoControl = ~uint32_t{0};
  uint32_t waiting_ack = kNoControl;
  uint32_t waiting_cnp = kNoControl;
  InMessage in_message = InMessage::kNone;
  uint8_t ce_unacked = 0;  // of the unacked packets, CE-marked
  bool nak_sent = false;   // go-back-N: a sequence NAK for epsn is out
  bool ooo_share = false;  // selective repeat in RTR/RTS: counts sr_window slots towards the pool
  // A fatal NAK waiting behind READ responses and atomic ACKs owed for earlier
  // requests: the QP accepts nothing more and goes to error once it is sent.
  bool closing = false;
};

// The receive fast path's picture of the peer's frames (fast_path.cc): the
// first kBytes bytes of an untagged IPv4 frame to this QP from its peer, as
// 64-bit words compared under a mask (our MAC, IPv4 without options and not
// a fragment, UDP, the peer's and our address, port 4791, BTH version 0, the
// default P_Key, this QP). Set when modify_qp succeeds; off: the QP's
// frames all take the general path.
struct RxExpect {
  static constexpr uint32_t kWords = 7;
  static constexpr uint32_t kBytes = kWords * 8;
  uint64_t word[kWords] = {};
  bool on = false;
};

// ---- read-mostly and rare state
struct QpCold {
  QpInitAttr init;  // as create_qp settled it
  QpAttr attr;
  wire::HeaderTemplate hdr;  // this QP's frames to its peer, made at RTR
  RxExpect rx_expect;        // its peer's frames to it, as the fast path checks them
  const cc::Params* cc_params = nullptr;
  uint16_t udp_sport = 0;
  uint8_t max_sge = kMaxSge;
  bool sq_sig_all = false;
  bool comm_est = false;  // kCommEstablished raised
  // The responder's READ/atomic ring (max_dest_rd_atomic; its count is hot).
  uint32_t reads_head = 0;
  // The PSN after the last READ response or atomic answer sent so far (the
  // highest): a job that ends at or before it was answered in full once.
  uint32_t reads_sent_end = 0;
  // An ACK/NAK held back until READ responses before it have gone (IBA
  // ordering), with what it echoes (a SACK, CE marks, INT: a selective-repeat
  // NAK without its SACK would read as go-back-N).
  bool deferred_ack = false;
  bool deferred_has_echo = false;
  uint8_t deferred_syndrome = 0;
  uint32_t deferred_psn = 0;
  EchoCopy deferred_echo;
  EventKind closing_event = EventKind::kQpFatal;
  // The request the responder refused last, and the rule it broke (a static
  // string), for the async event that reports it.
  const char* refused_why = nullptr;
  uint32_t refused_psn = 0;
  uint8_t refused_opcode = 0;
  uint32_t atomic_next = 0;
  // The responder's half of path control (dodge.cc, path_on_duplicate): its
  // responses go ack_shift dodge values on from the one they follow; moved
  // at the first round of duplicates (one not after the last duplicate's
  // PSN) and at each round that starts where the one before it did.
  uint8_t ack_shift = 0;
  bool dup_seen = false;
  uint32_t dup_last_psn = 0;
  uint32_t dup_round_psn = 0;  // where the latest round started
  cc::NpState np;  // CNP pacing: touched for CE-marked packets only
  RttProbe probe;  // the completer's
  // What the QP keeps in flight after loss, whatever its congestion control
  // (go-back-N request packets and READ responses; not selective repeat).
  // Off (one compare per packet) until the first loss.
  cc::LossWindow loss;
  QpCounters counters;

  // Storage behind the hot parts' pointers (Qp::bind).
  std::vector<SendWqe> sq_ring;
  std::vector<RecvWqe> rq_ring;
  std::vector<ReadJob> reads;
  std::vector<AtomicResult> atomic_results;  // the last max_dest_rd_atomic atomics executed
  std::vector<ReadPart> parts;  // the requester's READ parts: a power of two >= max_rd_atomic, made at the first READ
  std::vector<uint8_t> inline_buf;  // one slot of init.max_inline_data bytes per send WQE
  // Selective repeat, bitmaps over PSN mod sr_window: what the peer has
  // selectively acknowledged (the completer's), what to resend and what was
  // resent since the last timeout (the requester's).
  std::vector<uint64_t> sacked;
  std::vector<uint64_t> retx;
  std::vector<uint64_t> retx_done;

  // Zero copy (Engine::hold_payload): per SQ slot, the frames of its WR whose
  // payload a host still refers to; allocated at the first hold. hold_epoch
  // tells this QP's tokens from those of a QP before it in the same slot.
  std::vector<uint32_t> held;
  uint32_t holds = 0;  // their sum (comp.holding: holds != 0)
  uint32_t hold_epoch = 0;

  // Path control and spraying: allocated only while on, so that a QP without
  // them pays a pointer each.
  std::unique_ptr<PathState> path;
  std::unique_ptr<SprayState> spray;
};

// The hot parts: identity, state and what every role reads per packet, then
// the requester, completer, responder and congestion control.
struct QpHot {
  uint32_t index = 0;
  uint32_t qpn = 0;
  uint32_t pd = 0;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  uint32_t mtu_bytes = 1024;  // payload of a full packet: path_mtu, or QpAttr::payload_bytes
  QpState state = QpState::kReset;
  bool valid = false;
  bool in_ready = false;
  bool mac_pending = false;  // the AV's MAC waits for ARP: nothing is sent until it resolves
  bool loopback = false;     // the peer is this engine: frames loop back internally
  bool ud = false;           // an unreliable-datagram QP (ud.cc): none of req/comp/resp's RC state is used
  bool sr = false;           // recovery configured as selective repeat (attr.recovery)
  // The peer is tita: its frames carry the telemetry trailer. Selective repeat
  // runs only then (a go-back-N peer, such as Linux rxe or a RoCE NIC, would
  // restart its go-back-N on every SACK-bearing NAK).
  bool peer_tita = false;

  ReqState req;
  CompState comp;
  RespState resp;
  cc::Flow flow;
};

struct Qp : QpHot {
  alignas(64) QpCold cold;

  // Points the hot parts at the storage in cold (after it is (re)allocated).
  void bind() {
    req.sq = cold.sq_ring.data();
    req.sq_mask = static_cast<uint32_t>(cold.sq_ring.size() - 1);
    resp.rq = cold.rq_ring.data();
    resp.rq_mask = static_cast<uint32_t>(cold.rq_ring.size() - 1);
  }

  PathState* path() const { return cold.path.get(); }
  SprayState* spray() const { return cold.spray.get(); }
  bool path_on() const { return cold.path != nullptr; }
  QpCounters& counters() { return cold.counters; }
  // Its ACKs, NAKs and READ responses: the peer's dodge value when path control is on.
  const wire::HeaderTemplate& resp_hdr() const { return cold.path ? cold.path->resp_hdr : cold.hdr; }
  bool spraying() const { return cold.spray != nullptr && selective(); }

  uint32_t sq_size() const { return req.sq_mask + 1; }
  // Whether a host holds payload of the WR in SQ slot `wqe` (zero copy).
  bool payload_held(uint32_t wqe) const { return comp.holding && cold.held[wqe] != 0; }
  uint32_t rq_size() const { return resp.rq_mask + 1; }
  uint8_t* inline_slot(uint32_t wqe) { return cold.inline_buf.data() + size_t{wqe} * cold.init.max_inline_data; }
  // READs and atomics the requester may have outstanding (0 still allows one).
  uint32_t rd_atomic_limit() const { return cold.attr.max_rd_atomic > 1 ? cold.attr.max_rd_atomic : 1; }
  // READ parts (and atomics) asked for and not complete: what the peer's
  // responder resources hold, counted from the oldest incomplete one (rxe
  // reuses its resources in ring order).
  uint32_t parts_open() const { return req.parts_tail - comp.parts_head; }
  ReadPart& part(uint32_t n) { return cold.parts[n & (cold.parts.size() - 1)]; }
  const ReadPart& part(uint32_t n) const { return cold.parts[n & (cold.parts.size() - 1)]; }
  uint32_t mtu() const { return mtu_bytes; }
  // Packets of a message of `length` bytes (a zero-length one takes one).
  uint32_t packets_for(uint32_t length) const { return engine::packets_for(length, mtu_bytes); }
  // Selective repeat as configured and as the peer speaks it.
  bool selective() const { return sr && peer_tita; }
  uint64_t inflight_bytes() const { return req.nxt_bytes - comp.una_bytes; }
  cc::LossWindow& loss() { return cold.loss; }
  const cc::LossWindow& loss() const { return cold.loss; }
  // The peer's first trailer: it is tita (selective repeat if configured, and
  // the loss window started for an unknown peer goes off).
  void learn_peer_tita() {
    peer_tita = true;
    cold.loss.peer_is_tita();
  }
};

// What a QP's per-packet state may take (issue 17: 64k QPs per engine).
inline constexpr size_t kMaxHotBytes = 512;
static_assert(sizeof(QpHot) <= kMaxHotBytes, "a QP's hot state must stay within 512 bytes");

}  // namespace tita::engine
