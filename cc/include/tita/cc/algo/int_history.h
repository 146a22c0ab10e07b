// The previous INT record of every hop on a flow's path, and the per-hop deltas
// between it and the records of a new ACK. Shared by HPCC, PowerTCP and tita.
//
// Records carry 32-bit switch counters (ts_ns, tx_bytes) that wrap; deltas are
// unsigned 32-bit differences, so they are right only while the true gap is
// below half the wrap. A pair of records is not used when:
//   - the hop count, the partial flag or a hop's link rate (to 134 Mb/s) changed
//     (another path);
//   - the previous record is older than kIntStaleRtts base RTTs, or 10 ms, on
//     the sender's clock. 10 ms keeps tx_bytes (wraps after 2^31 B = 10.7 ms at
//     1.6 Tb/s) and ts_ns unambiguous; 64 RTTs is "a few RTTs" generous enough
//     that a flow at its minimum rate (100 Mb/s on 100 Gb/s: one 1 KB packet every
//     80 us = 8 base RTTs of 10 us) still measures;
//   - the switch clock did not advance, or went back (duplicate or reordered
//     record: then the old record is kept);
//   - tx_bytes went back (counter reset).
// An unusable pair resets that hop's history to the new record.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tita/cc/types.h"

namespace tita::cc {

inline constexpr double kIntStaleRtts = 64;
inline constexpr double kIntMaxGapNs = 10e6;

// What one hop did between two records (raw counters: consumers convert what
// they use; no division on the hot path).
struct IntHopDelta {
  uint32_t dt_ns;            // switch clock advance, > 0
  uint32_t dtx_bytes;        // bytes the port sent in between
  uint32_t qlen_bytes;       // queue in the new record
  uint32_t qlen_prev_bytes;  // queue in the previous record
  uint64_t link_rate_bps;    // > 0
};

// HPCC's per-hop utilisation u_i = min(q_i, q_prev_i)/(B_i T) + txRate_i/B_i
// with txRate_i = dtx_i/dt_i, maximised over the hops: feed it every delta, then
// read the max and the dt of its hop. u_i = num_i/den_i with
// num_i = 8e9 (min_q_i dt_i + dtx_i T), den_i = B_i T dt_i; hops are compared by
// cross-multiplication, so an ACK costs one division however many hops it has.
class MaxUtilisation {
 public:
  explicit MaxUtilisation(double base_rtt_ns) : t_ns_(base_rtt_ns) {}
  void operator()(const IntHopDelta& d) {
    const double dt = d.dt_ns;
    const double num =
        static_cast<double>(uint64_t{std::min(d.qlen_bytes, d.qlen_prev_bytes)} * d.dt_ns) +
        d.dtx_bytes * t_ns_;
    const double den = static_cast<double>(static_cast<int64_t>(d.link_rate_bps)) * t_ns_ * dt;
    if (num * den_ > num_ * den) {
      num_ = num;
      den_ = den;
      dt_ns_ = dt;
    }
  }
  double u() const { return num_ * 8e9 / den_; }
  double dt_ns() const { return dt_ns_; }  // 0 when no hop was fed

 private:
  double t_ns_;
  double num_ = 0;
  double den_ = 1;
  double dt_ns_ = 0;
};

class IntHistory {
 public:
  void reset() { n_hops_ = 0; }

  // Calls on_delta(const IntHopDelta&) for each hop of `s` that has a usable
  // previous record, keeps the records of `s` for next time, and returns how
  // many hops it reported. An ACK without INT (n_hops == 0) clears the history.
  // base_rtt_ns: the flow's T.
  template <class OnDelta>
  int update(uint64_t now_ns, const AckSample& s, double base_rtt_ns, OnDelta&& on_delta) {
    const double max_gap_ns = std::min(kIntStaleRtts * base_rtt_ns, kIntMaxGapNs);
    const int n = std::min<int>(s.n_hops, kMaxIntHops);
    const bool same_path = n == n_hops_ && s.int_partial == partial_ &&
                           static_cast<double>(now_ns - last_ns_) <= max_gap_ns;
    int used = 0;
    for (int i = 0; i < n; ++i) {
      const IntHop& h = s.hops[i];
      const auto rate_id = static_cast<uint16_t>(std::min<uint64_t>(h.rate_bps >> 27, 0xffff));
      if (same_path && rate_id == rate_id_[i]) {
        const uint32_t dts = h.ts_ns - ts_ns_[i];
        const uint32_t dtx = h.tx_bytes - tx_bytes_[i];
        if (dts == 0 || dts >= 0x8000'0000u) continue;  // duplicate / reordered: keep the old
        if (dts <= max_gap_ns && dtx < 0x8000'0000u && h.rate_bps != 0) {
          on_delta(IntHopDelta{dts, dtx, h.qlen_bytes, qlen_bytes_[i], h.rate_bps});
          ++used;
        }
      }
      ts_ns_[i] = h.ts_ns;
      tx_bytes_[i] = h.tx_bytes;
      qlen_bytes_[i] = h.qlen_bytes;
      rate_id_[i] = rate_id;
    }
    n_hops_ = static_cast<uint8_t>(n);
    partial_ = s.int_partial;
    last_ns_ = now_ns;
    return used;
  }

 private:
  uint64_t last_ns_ = 0;  // sender time of the kept records
  uint32_t ts_ns_[kMaxIntHops] = {};
  uint32_t tx_bytes_[kMaxIntHops] = {};
  uint32_t qlen_bytes_[kMaxIntHops] = {};
  uint16_t rate_id_[kMaxIntHops] = {};  // link rate in 2^27 b/s (134 Mb/s) units: a new path
  uint8_t n_hops_ = 0;
  bool partial_ = false;
};

}  // namespace tita::cc
