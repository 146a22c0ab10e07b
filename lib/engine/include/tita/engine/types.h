// The engine's shared types: its configuration (EngineConfig, path control,
// spraying), counters, events and what tools read of a QP. The Engine facade
// that takes and reports them is in engine.h; the engine's internal headers
// (src/qp.h, src/engine_impl.h) and front ends that only configure or report
// (settings.h, telemetry) need only this one.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tita/cc/cc.h"
#include "tita/engine/verbs.h"
#include "tita/wire/dodge.h"
#include "tita/wire/frame.h"

namespace tita::engine {

// Path control: Hash Dodging (doc/hash-dodging.md). A QP that sees its path
// fail, from protocol state alone, moves its packets to the next dodge value
// (wire/dodge.h): bits of the UDP source port or the DSCP that switches add to
// their ECMP choice, so the new path shares no switch with the old one.
struct PathConfig {
  wire::DodgeField field = wire::DodgeField::kNone;  // kNone: path control off
  uint16_t mask = 0;  // bits of the field; 0: 0x000f of the UDP source port, 0x07 of the DSCP
  // Detection rules; 0 turns a rule off. A congestion signal (CE echoed, a CNP,
  // an INT hop queue of int_queue_bytes or more) holds back the stall, loss and
  // throughput rules: a congested path is slow, a failed one says nothing.
  uint32_t timeouts = 1;             // repath at this many consecutive retransmission timeouts
  uint32_t stall_rtts = 8;           // stall: once anything got through, data outstanding and the responder's
  uint64_t stall_min_ns = 40'000;    //   cumulative ACK still for stall_rtts x max(smoothed RTT, base RTT), at least this
  uint32_t lossy_rounds = 3;         // repath after this many consecutive lossy rounds (a round: one window
  uint32_t loss_permille = 5;        //   acknowledged); lossy: NAKs, SACK holes and READ gaps count >= 0.5% of it
  uint32_t collapse_rtts = 64;       // throughput: over this many RTTs, goodput below
  uint32_t collapse_permille = 100;  //   10% of min(CC rate x time, bytes sent)
  uint32_t int_queue_bytes = 262144;
  bool reset_cc = true;     // congestion control starts afresh on the new path
  bool follow_peer = true;  // ACKs, NAKs and READ responses take the dodge value of the requests they answer
};

// Multipath (doc/multipath.md): one QP's request packets sprayed over several
// entropy values - the dodge bits of the UDP source port, which switches hash
// (or, with hash-offset ECMP, add to their choice: fabric::ecmp_select) - each
// value a path with its own ECN, RTT and loss record. Runs while the QP's
// recovery is selective repeat with a tita peer; otherwise its packets keep
// the one path of its address vector.
enum class SprayPolicy : uint8_t {
  kRoundRobin,  // the values in turn, spread over the mask (value i: i x 7, modulo)
  kReps,        // REPS-like: a value whose ACK came back unmarked is used again
                // next; one that saw CE or a loss is replaced by an unused value
  kOffset,      // consecutive values from the QP's own: with hash-offset ECMP
                // they take different next hops at every tier with >= paths choices
};
std::string_view to_string(SprayPolicy p);  // "round_robin", "reps", "offset"
bool parse_spray_policy(std::string_view name, SprayPolicy* out);

struct SprayConfig {
  uint16_t paths = 0;  // entropy values in use at a time, 2..16; 0: off
  SprayPolicy policy = SprayPolicy::kRoundRobin;
  uint16_t mask = 0;   // bits of the UDP source port that carry the value; 0: 0x000f
  uint32_t retire_losses = 3;  // a value whose packets are lost this many times in a row is replaced
  // A packet is lost once a packet sent this long after it was delivered
  // (RACK's reordering window, for paths of unequal delay); 0: a quarter of
  // the smoothed RTT, at least 2 us.
  uint64_t reorder_ns = 0;
  // 0: each packet takes the next value. Otherwise values change per
  // flowlet: a packet sent within flowlet_ns of the QP's previous one keeps
  // its value, so a burst stays in order on one path, and the policy picks
  // anew after a gap (a gap longer than the paths' delay difference cannot
  // reorder). Resent packets and tail probes still leave the value that
  // lost them.
  uint64_t flowlet_ns = 0;
};

// 0, or -EINVAL and a one-line message: what set_spray refuses in a config
// (for hosts that take it from their users before building an engine).
int check_spray(const SprayConfig& s, const PathConfig& path, std::string* err);

// One entropy value of a spraying QP, for tests and tools.
struct SprayPathInfo {
  uint16_t value = 0;      // the dodge value (bits of the UDP source port under the mask)
  uint16_t udp_sport = 0;  // what its packets carry
  uint64_t sent = 0;       // request packets sent on it (retransmissions too)
  uint64_t delivered = 0;  // acknowledged (cumulatively or selectively)
  uint64_t ce = 0;         // CE marks echoed for its packets
  uint64_t lost = 0;       // declared lost
  uint64_t srtt_ns = 0;
};
struct SprayInfo {
  bool active = false;  // spraying now (selective repeat with a tita peer)
  uint64_t retired = 0;   // values replaced after repeated losses
  uint64_t replaced = 0;  // REPS: values left after CE or a loss
  uint64_t tail_probes = 0;  // last packets resent on another value after no ACK for 2 RTTs
  uint64_t dsacks = 0;       // D-SACKs received: packets resent for nothing (the reordering window widened)
  uint32_t reorder_mult = 1;  // the reordering window's multiplier now (quarters of the minimum RTT)
  std::vector<SprayPathInfo> paths;
};

// Why a QP moved to another path.
enum class RepathReason : uint8_t {
  kTimeout,     // consecutive retransmission timeouts
  kStall,       // nothing delivered for the stall window, without a congestion signal
  kLoss,        // consecutive lossy rounds without a congestion signal
  kThroughput,  // goodput collapsed against what congestion control allowed
  kManual,      // Engine::repath()
  kCount
};
std::string_view to_string(RepathReason r);  // "timeout", "stall", ...

// One path change, for a trace hook (never called per packet).
struct PathEvent {
  uint64_t now_ns = 0;
  uint32_t qp_num = 0;
  RepathReason reason = RepathReason::kTimeout;
  uint16_t old_dodge = 0;
  uint16_t new_dodge = 0;
  uint16_t udp_sport = 0;  // what the QP's requests now carry
  uint8_t dscp = 0;
};
// Runs synchronously inside the engine call that changed the path; it must not
// call back into the engine.
using PathHook = void (*)(void* ctx, const PathEvent& e);

struct EngineConfig {
  uint8_t mac[6] = {0x02, 0, 0, 0, 0, 1};
  wire::Gid gid = wire::Gid::from_ipv4(0x0a000001);
  uint64_t line_rate_bps = 100'000'000'000;  // this NIC port
  // Pace at the line rate even when congestion control allows it: for ports that
  // accept frames faster than any wire would carry them (vdevs, AF_XDP, tap).
  // Off, a QP at line rate skips pacing and the NIC serializes.
  bool pace_line_rate = false;
  // Sending time a QP may catch up when the host polls late (a process that
  // sleeps between polls): the pacer's clock trails now by at most this much.
  // 0: a late packet restarts the pacing clock (no bursts).
  uint64_t pacing_slack_ns = 0;
  uint64_t base_rtt_ns = 10'000;             // congestion control's starting estimate
  bool compute_icrc = true;                  // off: ICRC sent as 0 (simulation speed)
  bool verify_icrc = true;                   // off: received ICRCs not checked
  // The receive fast path (doc/engine.md, "The fast path"): in-order WRITEs
  // and ACKs of RC QPs in RTS checked against what the QP expects instead of
  // the general parse and dispatch, with the same outcome. Off: every frame
  // takes the general path (the reference the differential tests compare with).
  bool fast_path = true;
  bool telemetry = true;       // COLLECT trailers on data; ECHO trailers on ACKs
  // ACK coalescing, as RoCE NICs do: AckReq on every Nth request packet, and on
  // any packet nothing could follow until an ACK (the last of the last WR
  // posted, one that fills a window). Algorithms that want every packet's
  // sample (INT: HPCC, PowerTCP, tita; the ACK echo of CE marks) get AckReq on
  // every packet whatever this says. 1: an ACK per packet for every algorithm.
  uint32_t ack_req_every = 8;
  uint32_t ack_unsolicited = 16;  // ACK after this many in-order packets without AckReq
  uint8_t initial_ttl = 64;    // also how receivers count the routers a packet crossed
  uint8_t cnp_dscp = 48;       // as ConnectX NICs send CNPs
  // How CE marks reach senders: CNPs at most every cnp_interval_ns per QP, or
  // echoed in ACKs (cc::NpParams; both ends alike).
  cc::NpParams np;
  uint32_t max_qps = 65536;
  uint32_t first_qpn = 0x11;   // QPNs are first_qpn + index (QP 0 and 1 are special in IB)
  uint32_t control_ring = 4096;  // ACK/NAK/CNP frames waiting for tx space
  uint32_t ooo_slots = 8192;     // selective repeat: out-of-order frames kept, engine-wide
  uint32_t sr_window = 256;      // selective repeat: PSNs in flight per QP (power of two, <= 1024)
  uint64_t timer_slot_ns = 64;   // timing wheel resolution
  uint32_t timer_slots = 8192;   // timing wheel size (horizon = slots x resolution)
  PathConfig path;               // path control of new QPs (Engine::set_path_config per QP)
  SprayConfig spray;             // spraying of new QPs (Engine::set_spray per QP; check_spray first)
  // The largest frame the host's port carries (Ethernet header through the
  // telemetry trailer, no FCS); 0: no limit. modify_qp refuses a path MTU whose
  // frames would not fit, so nothing is sent that the port would drop.
  uint32_t max_frame_bytes = 0;
  // Frames to this engine's own GID never reach the host: they come straight back
  // in, as every RDMA NIC loops back internally (two QPs of one device talk).
  bool loopback = true;
  uint32_t loopback_slots = 256;  // frames in flight on the internal loop
  // ARP for address vectors without a MAC (AhAttr::dmac all zero): a request
  // every arp_retry_ns, arp_tries times; then the QPs waiting for that address
  // fail with kRetryExcErr. Answers and requests for our IP fill the table.
  uint64_t arp_retry_ns = 1'000'000'000;
  uint32_t arp_tries = 3;
  // Memory on demand: false (a datapath) allocates every ring and the timing
  // wheel at their full size when the engine and its CQs are made, so the
  // per-packet path never allocates; true (a simulation of thousands of mostly
  // idle engines) starts them empty and grows them, doubling, as they fill
  // (completion queues up to their entries, the control ring up to control_ring,
  // the wheel with the QPs created). What an engine does is the same either way.
  bool grow_on_demand = false;
};

struct MrInfo {
  uint64_t addr = 0;  // the virtual address remote peers use (IOVA)
  uint64_t length = 0;
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  uint32_t access = 0;
};

struct QpCounters {
  uint64_t tx_packets = 0;          // every frame sent for this QP
  uint64_t tx_data_packets = 0;     // requests and READ responses
  uint64_t tx_payload_bytes = 0;
  uint64_t rx_packets = 0;
  uint64_t rx_payload_bytes = 0;
  uint64_t retransmitted_packets = 0;
  uint64_t timeouts = 0;
  uint64_t acks_sent = 0;
  uint64_t acks_received = 0;
  uint64_t nak_seq_sent = 0;
  uint64_t nak_seq_received = 0;
  uint64_t rnr_nak_sent = 0;
  uint64_t rnr_nak_received = 0;
  uint64_t nak_access_sent = 0;      // remote access error
  uint64_t nak_access_received = 0;
  uint64_t nak_invalid_sent = 0;     // invalid request
  uint64_t nak_invalid_received = 0;
  uint64_t duplicates_received = 0;
  uint64_t atomics_executed = 0;     // responder: atomics carried out on our memory
  uint64_t atomic_replays = 0;       // responder: duplicate atomics answered from the saved result
  uint64_t out_of_order_received = 0;
  uint64_t read_rerequests = 0;      // READ requests asked again (a part's hole, or its rest after a timeout)
  uint64_t loss_window_cuts = 0;     // losses and timeouts that cut the loss window (cc/loss_window.h)
  uint64_t tail_probes = 0;          // early resends of a silent tail, before the IBA timeout (engine.md)
  // The QP ended in RETRY_EXC_ERR: retry_cnt timeouts (or sequence NAKs) in a
  // row without progress (0 or 1; the verbs layer logs the cause once).
  uint64_t retry_exceeded = 0;
  // Responder: READ responses and atomic answers queued behind a READ that a
  // go-back-N peer asked again, dropped (it asks again for them too).
  uint64_t read_jobs_dropped = 0;
  // Responder: a new READ or atomic found the ring full, and the oldest job
  // was a READ asked again whose every response had already gone once (the
  // requester, counting its own outstanding READs, had it all): dropped so the
  // new one is served.
  uint64_t read_jobs_superseded = 0;
  // Selective repeat was set, but the peer's frames carry no tita trailer:
  // the QP runs go-back-N (0 or 1; the host hears of it once).
  uint64_t sr_fallbacks = 0;
  uint64_t ooo_buffered = 0;         // selective repeat: kept for later
  uint64_t qkey_violations = 0;      // UD: messages dropped for a wrong Q_Key
  uint64_t ud_dropped_no_recv = 0;   // UD: messages dropped, no receive posted
  uint64_t ecn_ce_received = 0;
  uint64_t cnps_sent = 0;
  uint64_t cnps_received = 0;        // CNPs, or ACKs echoing CE marks (EngineConfig::np ack_echo)
  uint64_t int_records_received = 0;  // INT hop records echoed back to this sender
  uint64_t ce_echoed = 0;             // CE marks the peer's ACKs reported (tita peers; coalesced ACKs add theirs up)
  uint64_t rtt_samples = 0;
  uint64_t last_rtt_ns = 0;
  uint64_t path_changes = 0;             // dodges, every reason (the sum of the next five)
  uint64_t path_changes_timeout = 0;
  uint64_t path_changes_stall = 0;
  uint64_t path_changes_loss = 0;
  uint64_t path_changes_throughput = 0;
  uint64_t path_changes_manual = 0;
  uint64_t path_follows = 0;             // responses moved to the peer's new dodge value
  uint64_t ack_path_shifts = 0;          // responses moved on by a round of duplicate requests (their path failed)
  uint64_t spurious_stalls = 0;          // stall repaths after which the old path delivered (stall window doubled)
};

struct EngineCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_dropped = 0;  // sum of the reasons below
  std::array<uint64_t, static_cast<size_t>(wire::ParseError::kCount)> rx_parse_errors{};
  uint64_t rx_not_for_us = 0;  // destination MAC or IP is not this engine's (or an unknown ARP)
  uint64_t rx_wrong_source = 0;  // for a connected QP from another address than its peer's
  uint64_t rx_unknown_qp = 0;
  uint64_t rx_bad_pkey = 0;
  uint64_t rx_qp_not_ready = 0;  // for a QP in RESET/INIT/ERROR
  uint64_t rx_wrong_transport = 0;  // a UD opcode for an RC QP, or the reverse
  uint64_t rx_bad_qkey = 0;         // UD: the DETH's Q_Key is not the QP's (IBA's Q_Key violation)
  uint64_t rx_ud_no_recv = 0;       // UD: no receive posted (UD has no RNR: the message is gone)
  uint64_t tx_frames = 0;
  uint64_t control_ring_full = 0;  // ACK/NAK/CNP dropped: host out of tx space for long
  uint64_t control_coalesced = 0;  // ACKs that replaced their QP's waiting ACK (ring full)
  uint64_t ooo_pool_full = 0;      // out-of-order frame dropped: no free slot (or larger than one)
  uint64_t loopback_frames = 0;    // frames to our own GID, delivered internally
  uint64_t loopback_drops = 0;     // frames to our own GID lost: the loop was full
  uint64_t arp_requests_sent = 0;
  uint64_t arp_replies_sent = 0;
  uint64_t arp_received = 0;       // requests for our IP and replies, both learned from
  uint64_t arp_failures = 0;       // addresses that never answered
  uint64_t cq_overflows = 0;       // completions that found their CQ full (the CQ is then in error)
  uint64_t rx_fast = 0;            // frames the receive fast path took whole (EngineConfig::fast_path)
  uint64_t completions_held = 0;   // send WRs acknowledged whose completion then waited for a host's hold
  uint64_t stale_releases = 0;     // release_payload() for a hold that is gone (QP destroyed or reset)
};

// A neighbour-table entry (ARP), for tools.
struct Neighbour {
  uint32_t ipv4 = 0;  // host order
  uint8_t mac[6] = {};
  enum class State : uint8_t { kIncomplete, kReachable, kStatic, kFailed } state = State::kIncomplete;
};

// Events outside the completion stream: completion events of armed CQs
// (ibv_get_cq_event) and asynchronous errors (ibv_get_async_event).
enum class EventKind : uint8_t {
  kCqNotify,         // a completion reached a CQ armed by req_notify_cq (once per arming)
  kCqError,          // IBV_EVENT_CQ_ERR: a completion found the CQ full; its QPs went to error
  kQpFatal,          // IBV_EVENT_QP_FATAL: the responder could not execute a request
  kQpRequestError,   // IBV_EVENT_QP_REQ_ERR: the responder NAKed an invalid request
  kQpAccessError,    // IBV_EVENT_QP_ACCESS_ERR: the responder NAKed a remote access violation
  kCommEstablished,  // IBV_EVENT_COMM_EST: the first request reached a QP in RTR
  // Not an IBV event: the QP went to error with RETRY_EXC_ERR (retry_cnt
  // timeouts or sequence NAKs in a row without progress; QpCounters say
  // more). For the host's log: the completion alone says little.
  kQpRetryExceeded,
  // Not an IBV event: selective repeat was set (QpAttr::recovery), but the
  // peer speaks no tita trailer; the QP runs go-back-N. Once per QP.
  kQpRecoveryFallback,
  kSrqLimitReached,  // IBV_EVENT_SRQ_LIMIT_REACHED: the SRQ (Event::srq) fell below its armed limit
  kQpLastWqeReached, // IBV_EVENT_QP_LAST_WQE_REACHED: a QP of an SRQ went to error
};
std::string_view to_string(EventKind k);

struct Event {
  EventKind kind = EventKind::kCqNotify;
  uint32_t cq = 0;      // kCqNotify, kCqError
  uint32_t qp_num = 0;  // the QP events
  // kQpRetryExceeded: the oldest unacknowledged PSN, how many retries were
  // spent on it, and whether the last was a sequence NAK (else a timeout).
  uint32_t psn = 0;
  uint8_t retries = 0;
  bool by_nak = false;
  uint32_t srq = 0;  // kSrqLimitReached
  // kQpRequestError, kQpAccessError, kQpFatal from the responder: the refused
  // request's PSN (in psn), its BTH opcode and the rule it broke (static text).
  uint8_t opcode = 0;
  const char* why = nullptr;
};
// Runs synchronously inside the engine call that raised the event; it must not
// call back into the engine.
using EventHook = void (*)(void* ctx, const Event& e);

// A QP's transport and congestion state, for tools and traces.
struct QpInfo {
  QpState state = QpState::kReset;
  uint64_t rate_bps = 0;
  uint64_t cwnd_bytes = 0;     // UINT64_MAX: rate-based
  uint64_t inflight_bytes = 0;
  uint32_t snd_una = 0;
  uint32_t snd_nxt = 0;
  uint32_t epsn = 0;
  uint32_t send_queue_depth = 0;  // posted, not completed
  uint32_t recv_queue_depth = 0;
  std::string_view cc;
  uint16_t dodge = 0;      // the dodge value of the QP's requests (path control)
  uint16_t udp_sport = 0;  // the UDP source port they carry
};

// A QP's numbers by the names telemetry (/tita/qp) and tita-sim's metrics use:
// f(name, value) for its CC output, sequence state, queue depths and counters.
template <class F>
void for_each_qp_value(const QpInfo& info, const QpCounters& q, F&& f) {
  f("rate_bps", info.rate_bps);
  f("cwnd_bytes", info.cwnd_bytes == UINT64_MAX ? 0 : info.cwnd_bytes);
  f("inflight_bytes", info.inflight_bytes);
  f("snd_una", info.snd_una);
  f("snd_nxt", info.snd_nxt);
  f("epsn", info.epsn);
  f("send_queue_depth", info.send_queue_depth);
  f("recv_queue_depth", info.recv_queue_depth);
  f("tx_packets", q.tx_packets);
  f("tx_data_packets", q.tx_data_packets);
  f("tx_payload_bytes", q.tx_payload_bytes);
  f("rx_packets", q.rx_packets);
  f("rx_payload_bytes", q.rx_payload_bytes);
  f("retransmitted_packets", q.retransmitted_packets);
  f("timeouts", q.timeouts);
  f("acks_sent", q.acks_sent);
  f("acks_received", q.acks_received);
  f("nak_seq_sent", q.nak_seq_sent);
  f("nak_seq_received", q.nak_seq_received);
  f("rnr_nak_sent", q.rnr_nak_sent);
  f("rnr_nak_received", q.rnr_nak_received);
  f("nak_access_sent", q.nak_access_sent);
  f("nak_access_received", q.nak_access_received);
  f("nak_invalid_sent", q.nak_invalid_sent);
  f("nak_invalid_received", q.nak_invalid_received);
  f("duplicates_received", q.duplicates_received);
  f("out_of_order_received", q.out_of_order_received);
  f("read_rerequests", q.read_rerequests);
  f("loss_window_cuts", q.loss_window_cuts);
  f("tail_probes", q.tail_probes);
  f("retry_exceeded", q.retry_exceeded);
  f("read_jobs_dropped", q.read_jobs_dropped);
  f("read_jobs_superseded", q.read_jobs_superseded);
  f("sr_fallbacks", q.sr_fallbacks);
  f("ecn_ce_received", q.ecn_ce_received);
  f("cnps_sent", q.cnps_sent);
  f("cnps_received", q.cnps_received);
  f("int_records_received", q.int_records_received);
  f("ce_echoed", q.ce_echoed);
  f("rtt_samples", q.rtt_samples);
  f("last_rtt_ns", q.last_rtt_ns);
  f("path_changes", q.path_changes);
  f("path_changes_timeout", q.path_changes_timeout);
  f("path_changes_stall", q.path_changes_stall);
  f("path_changes_loss", q.path_changes_loss);
  f("path_changes_throughput", q.path_changes_throughput);
  f("path_changes_manual", q.path_changes_manual);
  f("path_follows", q.path_follows);
  f("ack_path_shifts", q.ack_path_shifts);
}

}  // namespace tita::engine
