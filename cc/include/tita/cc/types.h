// Events that drive a congestion-control algorithm, and what it decides.
//
// Units are in every name: *_ns nanoseconds, *_bps bits per second, *_bytes bytes.
// Time is always passed in (now_ns); nothing in cc/ reads a clock or schedules.
#pragma once

#include <cstdint>
#include <limits>

namespace tita::cc {

// Most switch hops a packet collects telemetry from (host-ToR-Agg-Core-Agg-ToR-host).
inline constexpr int kMaxIntHops = 5;

// Returned by next_timer_ns() when the algorithm wants no timer.
inline constexpr uint64_t kNoTimer = std::numeric_limits<uint64_t>::max();

// Returned by cwnd_bytes() by purely rate-based algorithms: no in-flight cap.
inline constexpr uint64_t kNoWindow = std::numeric_limits<uint64_t>::max();

// One switch egress port's telemetry, recorded when the packet left its queue.
// ts_ns and tx_bytes are free-running counters that wrap at 2^32: consumers take
// unsigned 32-bit differences between two records of the same hop.
struct IntHop {
  uint64_t rate_bps = 0;     // egress link rate
  uint32_t ts_ns = 0;        // switch clock at dequeue
  uint32_t tx_bytes = 0;     // bytes the port has transmitted, up to this packet
  uint32_t qlen_bytes = 0;   // egress queue length seen by this packet
};

// Everything the sender learns from one ACK (or READ response acting as one).
struct AckSample {
  uint64_t acked_bytes = 0;     // bytes newly acknowledged by this ACK
  uint64_t ack_seq_bytes = 0;   // cumulative bytes acknowledged on the flow
  uint64_t next_seq_bytes = 0;  // cumulative bytes sent on the flow so far (snd_nxt)
  uint64_t inflight_bytes = 0;  // bytes sent and not yet acknowledged, after this ACK
  uint32_t rtt_ns = 0;          // RTT sample carried by this ACK; 0 = none
  uint32_t acked_packets = 0;   // data packets this ACK covers
  uint32_t ce_packets = 0;      // of those, how many arrived CE-marked (ECN echo)
  uint8_t n_hops = 0;           // INT records echoed by the receiver; 0 = no INT
  bool int_partial = false;     // some switch on the path did not push a record
  IntHop hops[kMaxIntHops];
};

// A loss signal short of a timeout: a sequence-error NAK (go-back-N) or a
// selective-repeat hole report.
struct LossSample {
  uint64_t lost_bytes = 0;      // bytes the sender will retransmit
  uint64_t inflight_bytes = 0;
};

// What a flow is created with: the path it starts on.
struct FlowConfig {
  uint64_t line_rate_bps = 100'000'000'000;  // the sender NIC's line rate
  uint64_t base_rtt_ns = 10'000;             // unloaded RTT of the path
  uint32_t mtu_bytes = 1024;                 // RoCE payload MTU
};

}  // namespace tita::cc
