// on_ack_loop ALGORITHM HOPS N [PLUGIN.so]: N calls of Flow::on_ack on one
// synthetic ACK stream (line-rate ACKs of 1000 B, an RTT that wanders, a CE mark
// every 64th, HOPS INT records with a queue at the first), then prints a sum of
// the decisions so nothing is optimised away. A target for callgrind (the
// instruction difference of two N is the cost per ACK) and for timing whole runs;
// scripts/cc-dispatch-cost.sh builds it against the tree with and without the
// plug-in slot.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tita/cc/cc.h"
#include "tita/cc/plugin.h"

using namespace tita::cc;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: on_ack_loop ALGORITHM HOPS N [PLUGIN.so]\n");
    return 2;
  }
  const std::string algo = argv[1];
  const int hops = std::atoi(argv[2]);
  const long n = std::atol(argv[3]);
  std::string err;
  if (argc > 4 && load_plugin(argv[4], &err) != 0) {
    std::fprintf(stderr, "on_ack_loop: %s\n", err.c_str());
    return 2;
  }
  if (hops < 0 || hops > kMaxIntHops) {
    std::fprintf(stderr, "on_ack_loop: HOPS must be 0 to %d\n", kMaxIntHops);
    return 2;
  }
  const FlowConfig link{100'000'000'000, 10'000, 1000};
  Params p;
  if (Params::create(algo, link, &p, &err) != 0) {
    std::fprintf(stderr, "on_ack_loop: %s\n", err.c_str());
    return 2;
  }
  Flow f;
  f.init(p, link, 0);
  AckSample s{};
  s.acked_bytes = 1000;
  s.acked_packets = 1;
  s.n_hops = static_cast<uint8_t>(hops);
  for (int h = 0; h < hops; ++h) s.hops[h] = {100'000'000'000, 0, 0, 0};
  uint64_t now = 0, sink = 0;
  for (long i = 1; i <= n; ++i) {
    now += 80;
    s.ack_seq_bytes += 1000;
    s.next_seq_bytes = s.ack_seq_bytes + 125'000;
    s.inflight_bytes = 125'000;
    s.rtt_ns = 10'000 + static_cast<uint32_t>(i & 0xff) * 8;
    s.ce_packets = (i & 0x3f) == 0;
    for (int h = 0; h < hops; ++h) {
      s.hops[h].ts_ns += 80;
      s.hops[h].tx_bytes += (i & 7) ? 1000 : 0;
      s.hops[h].qlen_bytes = h == 0 ? static_cast<uint32_t>(i & 0xff) * 100 : 0;
    }
    f.on_ack(now, s);
    sink += f.rate_bps() + f.cwnd_bytes();
  }
  std::printf("%llu\n", static_cast<unsigned long long>(sink));
  return 0;
}
