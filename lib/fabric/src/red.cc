#include "tita/fabric/red.h"

namespace tita::fabric {

double red_mark_probability(uint64_t qlen_bytes, const RedParams& p) {
  if (qlen_bytes > p.kmax_bytes) return 1.0;
  if (qlen_bytes <= p.kmin_bytes) return 0.0;
  return p.pmax * static_cast<double>(qlen_bytes - p.kmin_bytes) /
         static_cast<double>(p.kmax_bytes - p.kmin_bytes);
}

RedParams red_defaults(uint64_t port_rate_bps) {
  const double scale = static_cast<double>(port_rate_bps) / 25e9;
  return {static_cast<uint64_t>(100'000 * scale), static_cast<uint64_t>(400'000 * scale), 0.2};
}

RedParams RedConfig::resolve(uint64_t port_rate_bps) const {
  const RedParams d = red_defaults(port_rate_bps);
  const double scale =
      base_rate_bps == 0 ? 1.0 : static_cast<double>(port_rate_bps) / static_cast<double>(base_rate_bps);
  auto at_port = [&](uint64_t bytes) {
    return base_rate_bps == 0 ? bytes : static_cast<uint64_t>(static_cast<double>(bytes) * scale);
  };
  return {kmin_bytes ? at_port(*kmin_bytes) : d.kmin_bytes, kmax_bytes ? at_port(*kmax_bytes) : d.kmax_bytes,
          pmax.value_or(d.pmax)};
}

}  // namespace tita::fabric
