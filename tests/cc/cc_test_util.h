// Builders for synthetic congestion-control events.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

#include "tita/cc/cc.h"

namespace tita::cc::test {

// 100 Gb/s, 10 us base RTT, 1000 B MTU: BDP = 125000 B, 80 ns per packet.
inline constexpr FlowConfig kLink100g{100'000'000'000, 10'000, 1000};

inline Params make_params(std::string_view algorithm, const FlowConfig& link,
                          std::initializer_list<std::string_view> assignments = {}) {
  Params p;
  std::string err;
  EXPECT_EQ(Params::create(algorithm, link, &p, &err), 0) << err;
  for (std::string_view a : assignments) EXPECT_EQ(p.set(a, &err), 0) << err;
  return p;
}

inline AckSample make_ack(uint64_t ack_seq, uint64_t next_seq, uint32_t rtt_ns,
                          uint64_t acked_bytes = 1000) {
  AckSample s{};
  s.acked_bytes = acked_bytes;
  s.ack_seq_bytes = ack_seq;
  s.next_seq_bytes = next_seq;
  s.inflight_bytes = next_seq - ack_seq;
  s.rtt_ns = rtt_ns;
  s.acked_packets = 1;
  return s;
}

inline AckSample& add_hop(AckSample& s, uint64_t rate_bps, uint32_t ts_ns, uint32_t tx_bytes,
                          uint32_t qlen_bytes) {
  s.hops[s.n_hops++] = IntHop{rate_bps, ts_ns, tx_bytes, qlen_bytes};
  return s;
}

}  // namespace tita::cc::test
