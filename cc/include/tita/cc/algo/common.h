// What every algorithm shares: its output, default hooks, and the few helpers
// the control laws have in common (one EWMA, one rate clamp, one window<->rate
// conversion).
#pragma once

#include <algorithm>
#include <cstdint>

#include "tita/cc/param.h"
#include "tita/cc/types.h"

namespace tita::cc {

// The decision of an algorithm; the Flow exposes it to the host.
struct FlowOutput {
  uint64_t rate_bps = 0;               // pacing rate, in [min rate, line rate]
  uint64_t cwnd_bytes = kNoWindow;     // in-flight cap
  uint64_t next_timer_ns = kNoTimer;   // when to call on_timer
};

// Hooks an algorithm does not override do nothing. Algorithms derive from this
// and hide the hooks they implement; dispatch is static (std::visit).
struct NoHooks {
  void on_send(uint64_t /*now_ns*/, uint32_t /*bytes*/, FlowOutput& /*out*/) {}
  void on_ack(uint64_t /*now_ns*/, const AckSample& /*s*/, FlowOutput& /*out*/) {}
  void on_cnp(uint64_t /*now_ns*/, FlowOutput& /*out*/) {}
  void on_loss(uint64_t /*now_ns*/, const LossSample& /*s*/, FlowOutput& /*out*/) {}
  void on_timeout(uint64_t /*now_ns*/, FlowOutput& /*out*/) {}
  void on_timer(uint64_t /*now_ns*/, FlowOutput& /*out*/) {}
};

// avg <- (1 - gain) avg + gain sample, the form the papers write.
constexpr double ewma(double avg, double sample, double gain) {
  return (1.0 - gain) * avg + gain * sample;
}

// A rate in [min_bps, line_bps] (min_bps is capped at line_bps), as integer
// bits per second. NaN maps to min_bps.
constexpr uint64_t clamp_rate_bps(double rate_bps, double min_bps, uint64_t line_bps) {
  const double hi = static_cast<double>(line_bps);
  const double lo = std::min(min_bps, hi);
  if (!(rate_bps >= lo)) return static_cast<uint64_t>(lo);
  if (rate_bps >= hi) return line_bps;
  return static_cast<uint64_t>(rate_bps);
}

// Bytes that `rate_bps` puts in flight over `time_ns`, and back. PathScale
// below is the same for a fixed time with the division done once.
constexpr double bytes_in(double rate_bps, double time_ns) {
  return rate_bps * time_ns / 8e9;
}
constexpr double rate_of(double bytes, double time_ns) { return bytes * 8e9 / time_ns; }

// A flow's base RTT T and the window<->rate conversions window algorithms make
// per ACK, with 1/T precomputed so the hot path multiplies instead of dividing.
struct PathScale {
  double t_ns = 0;   // T
  double inv_t = 0;  // 1/T, per ns

  static PathScale of(uint64_t base_rtt_ns) {
    const double t = static_cast<double>(base_rtt_ns);
    return {t, 1 / t};
  }
  // Bytes in flight over T at rate_bps, and the rate of a window per T.
  double window_of(double rate_bps) const { return rate_bps * t_ns * 0.125e-9; }
  double rate_of(double window_bytes) const { return window_bytes * 8e9 * inv_t; }
};

// The in-flight cap a window algorithm publishes: its window, but never less
// than one MTU (a flow paced below one packet per RTT still needs one packet
// in flight; its rate, derived from the unfloored window, does the limiting).
constexpr uint64_t cwnd_out(double window_bytes, uint32_t mtu_bytes) {
  return std::max(static_cast<uint64_t>(window_bytes), static_cast<uint64_t>(mtu_bytes));
}

// A line-rate-relative default: `rate_at_100g_bps` scaled linearly with the
// link, the way the HPCC artifact's run.py scales its AI steps with NIC speed.
constexpr double scaled_from_100g(double rate_at_100g_bps, uint64_t line_rate_bps) {
  return rate_at_100g_bps * static_cast<double>(line_rate_bps) / 100e9;
}

}  // namespace tita::cc
