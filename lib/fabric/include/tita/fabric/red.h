// RED/ECN marking at a switch egress queue: the rule and its settings, used by
// the switch data plane (switch.h) for apps/tita-switch and the ns-3 switch.
//
// Marking follows the HPCC artifact's switch (switch-node.cc): on the queue a
// packet leaves behind, probability 0 up to Kmin, Pmax (qlen - Kmin)/(Kmax - Kmin)
// up to Kmax, 1 above Kmax.
//
// Thresholds are bytes of the egress queue at the port they apply to. A setting
// left unset takes the HPCC artifact's default at that port's rate. Given with a
// base rate, the thresholds are bytes at the base rate and scale linearly with
// each port's rate (the artifact's KMIN_MAP/KMAX_MAP: 400/1600 KB per 100 Gb/s).
#pragma once

#include <cstdint>
#include <optional>

namespace tita::fabric {

// The marking curve of one port, thresholds in bytes at that port.
struct RedParams {
  uint64_t kmin_bytes = 0;
  uint64_t kmax_bytes = 0;
  double pmax = 0;
};

// The probability of marking a packet that leaves qlen_bytes behind.
double red_mark_probability(uint64_t qlen_bytes, const RedParams& p);

// The HPCC artifact's settings: Kmin/Kmax 100/400 KB at 25 Gb/s (400/1600 KB at
// 100 Gb/s), linear in port rate, Pmax 0.2. KB = 1000 bytes.
RedParams red_defaults(uint64_t port_rate_bps);

// RED as configured (tita-switch's ports[].ecn, the ns-3 switch's Red*
// attributes): any field left unset takes red_defaults() at the port's rate.
struct RedConfig {
  std::optional<uint64_t> kmin_bytes;
  std::optional<uint64_t> kmax_bytes;
  std::optional<double> pmax;
  // 0: the thresholds are bytes at the port. Otherwise bytes at this rate,
  // scaled by port rate / base_rate_bps.
  uint64_t base_rate_bps = 0;

  // The curve of a port of port_rate_bps: the one place defaults and scaling apply.
  RedParams resolve(uint64_t port_rate_bps) const;
};

}  // namespace tita::fabric
