// The dctcp plug-in through tita's cc::Flow, on a fake clock: loaded as a host
// loads it, it starts at line rate, halves its window within a few windows of
// fully marked ACKs, grows back one MTU per window without marks, and takes
// its parameters with tita's checks.
#include <tita/cc/cc.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace cc = tita::cc;

static int failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::fprintf(stderr, "%s:%d: CHECK(%s)\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::string err;
  if (cc::load_plugin(argv[1], &err) != 0) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  const cc::FlowConfig link{.line_rate_bps = 100'000'000'000, .base_rtt_ns = 10'000, .mtu_bytes = 1024};
  cc::Params params;
  CHECK(cc::Params::create("dctcp", link, &params, &err) == 0);
  CHECK(params.set("g=0.25", &err) == 0);
  CHECK(params.set("g=2", &err) != 0 && err.find("out of range") != std::string::npos);
  CHECK(params.set("gain=1", &err) != 0 && err.find("known: g, min_window_mtus") != std::string::npos);

  cc::Flow flow;
  uint64_t now = 0;
  flow.init(params, link, now);
  const uint64_t bdp = link.line_rate_bps / 8 * link.base_rtt_ns / 1'000'000'000;
  CHECK(flow.cwnd_bytes() == bdp);
  CHECK(flow.rate_bps() == link.line_rate_bps);
  CHECK(!flow.wants_int());

  // ACKs of one MTU each, every one CE-marked, for ten windows.
  uint64_t acked = 0;
  auto ack = [&](bool marked) {
    now += 100;
    acked += link.mtu_bytes;
    cc::AckSample s;
    s.acked_bytes = link.mtu_bytes;
    s.acked_packets = 1;
    s.ce_packets = marked ? 1 : 0;
    s.ack_seq_bytes = acked;
    s.next_seq_bytes = acked + flow.cwnd_bytes();
    flow.on_ack(now, s);
  };
  for (int i = 0; i < 10 * 122; ++i) ack(true);
  const uint64_t cut = flow.cwnd_bytes();
  std::printf("after 10 marked windows: window %llu B (BDP %llu B)\n", (unsigned long long)cut,
              (unsigned long long)bdp);
  CHECK(cut < bdp / 4);
  CHECK(cut >= 2 * link.mtu_bytes);
  CHECK(flow.rate_bps() < link.line_rate_bps / 4);
  // Without marks the window grows, about one MTU per window.
  const uint64_t before = flow.cwnd_bytes();
  for (int i = 0; i < 200; ++i) ack(false);
  std::printf("after 200 clean ACKs: window %llu B\n", (unsigned long long)flow.cwnd_bytes());
  CHECK(flow.cwnd_bytes() > before);
  CHECK(flow.cwnd_bytes() <= bdp);
  // A timeout falls back to the smallest window.
  flow.on_timeout(now);
  CHECK(flow.cwnd_bytes() == 2 * link.mtu_bytes);
  if (failures == 0) std::printf("dctcp plug-in: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
