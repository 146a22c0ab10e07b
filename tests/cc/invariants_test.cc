// Invariants of every algorithm under long random event sequences (fixed seeds):
// rate in [min rate, line rate], window > 0, timers never in the past, no NaN in
// the state, and deterministic replay.
#include <cmath>
#include <random>
#include <vector>

#include "cc_test_util.h"

namespace tita::cc::test {
namespace {

enum class Ev : uint8_t { kSend, kAck, kCnp, kLoss, kTimeout, kTimer };

struct Event {
  uint64_t now_ns;
  Ev kind;
  AckSample ack;
  uint32_t bytes;
};

// A hostile but well-formed trace: RTTs from 0 (none) to 2 ms, INT stacks of 0-5
// hops with counters that wrap, repeat, jump back, links that change rate,
// partial stacks, CE marks, CNP storms, losses, timeouts and late timers.
std::vector<Event> random_trace(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t lo, uint64_t hi) {
    return lo + rng() % (hi - lo + 1);
  };
  std::vector<Event> trace;
  uint64_t now = 0, acked = 0, sent = 0;
  uint32_t ts[kMaxIntHops] = {}, tx[kMaxIntHops] = {};
  for (size_t i = 0; i < n; ++i) {
    now += pick(0, 3) == 0 ? pick(0, 2'000'000) : pick(0, 5'000);
    Event e{now, Ev::kAck, {}, 0};
    const uint64_t r = pick(0, 99);
    if (r < 30) {
      e.kind = Ev::kSend;
      e.bytes = static_cast<uint32_t>(pick(1, 4096));
      sent += e.bytes;
    } else if (r < 80) {
      AckSample& s = e.ack;
      s.acked_bytes = pick(0, 3) == 0 ? 0 : pick(1, 64 * 1024);
      acked = std::min(sent, acked + s.acked_bytes);
      s.ack_seq_bytes = acked;
      s.next_seq_bytes = sent;
      s.inflight_bytes = sent - acked;
      s.rtt_ns = pick(0, 9) == 0 ? 0 : static_cast<uint32_t>(pick(1, 2'000'000));
      s.acked_packets = static_cast<uint32_t>(pick(0, 64));
      s.ce_packets = static_cast<uint32_t>(pick(0, s.acked_packets));
      s.n_hops = static_cast<uint8_t>(pick(0, 3) == 0 ? 0 : pick(1, kMaxIntHops));
      s.int_partial = pick(0, 9) == 0;
      for (int h = 0; h < s.n_hops; ++h) {
        const uint64_t rates[] = {0, 25'000'000'000, 100'000'000'000, 400'000'000'000};
        const uint64_t k = pick(0, 19);
        ts[h] += k == 0 ? -static_cast<uint32_t>(pick(0, 1'000)) : static_cast<uint32_t>(pick(0, 200'000));
        tx[h] += k == 1 ? 0x9000'0000u : static_cast<uint32_t>(pick(0, 2'000'000));
        s.hops[h] = {rates[pick(0, 9) == 0 ? 0 : pick(1, 3)], ts[h], tx[h],
                     static_cast<uint32_t>(pick(0, 1) == 0 ? 0 : pick(0, 1u << 24))};
      }
    } else if (r < 88) {
      e.kind = Ev::kCnp;
    } else if (r < 91) {
      e.kind = Ev::kLoss;
    } else if (r < 92) {
      e.kind = Ev::kTimeout;
    } else {
      e.kind = Ev::kTimer;
    }
    trace.push_back(e);
  }
  return trace;
}

struct Out {
  uint64_t rate_bps, cwnd_bytes, next_timer_ns;
  bool operator==(const Out&) const = default;
};

// Applies one event. Timer events run at the flow's deadline if one is due by
// then (the host's duty), otherwise are skipped.
void apply(Flow& f, const Event& e) {
  switch (e.kind) {
    case Ev::kSend: f.on_send(e.now_ns, e.bytes); break;
    case Ev::kAck: f.on_ack(e.now_ns, e.ack); break;
    case Ev::kCnp: f.on_cnp(e.now_ns); break;
    case Ev::kLoss: f.on_loss(e.now_ns, LossSample{1'000, 10'000}); break;
    case Ev::kTimeout: f.on_timeout(e.now_ns); break;
    case Ev::kTimer:
      if (f.next_timer_ns() <= e.now_ns) f.on_timer(e.now_ns);
      break;
  }
}

// The doubles inside each algorithm's state that must stay finite.
std::vector<double> state_values(const Flow& f) {
  if (const auto* s = f.state<DcqcnFlow>())
    return {s->current_rate_bps(), s->target_rate_bps()};
  if (const auto* s = f.state<TimelyFlow>()) return {s->rtt_diff_ns()};
  if (const auto* s = f.state<HpccFlow>())
    return {s->utilisation(), s->window_bytes(), s->committed_window_bytes()};
  if (const auto* s = f.state<SwiftFlow>()) return {s->cwnd_packets()};
  if (const auto* s = f.state<PowertcpFlow>())
    return {s->norm_power(), s->window_bytes(), s->committed_window_bytes()};
  if (const auto* s = f.state<NsccFlow>()) return {s->cwnd_bytes(), s->avg_qdelay_ns()};
  if (const auto* s = f.state<TitaFlow>())
    return {s->utilisation(), s->window_bytes(), s->committed_window_bytes(), s->ecn_fraction()};
  return {};
}

class InvariantsTest : public ::testing::TestWithParam<std::string_view> {};

TEST_P(InvariantsTest, RandomEventsKeepEveryOutputSane) {
  for (const FlowConfig& link : {kLink100g, FlowConfig{25'000'000'000, 3'000, 4096},
                                 FlowConfig{400'000'000'000, 50'000, 1000}}) {
    const Params p = make_params(GetParam(), link);
    double min_rate = 0;
    if (p.get("min_rate_bps", &min_rate) != 0) min_rate = 1;
    min_rate = std::min(min_rate, static_cast<double>(link.line_rate_bps));
    for (uint64_t seed : {1, 2, 3}) {
      const std::vector<Event> trace = random_trace(seed * 7919 + link.base_rtt_ns, 5'000);
      Flow f, replay;
      f.init(p, link, 0);
      replay.init(p, link, 0);
      for (size_t i = 0; i < trace.size(); ++i) {
        const Event& e = trace[i];
        apply(f, e);
        apply(replay, e);
        SCOPED_TRACE(testing::Message() << GetParam() << " seed " << seed << " event " << i);
        ASSERT_GE(static_cast<double>(f.rate_bps()), min_rate);
        ASSERT_LE(f.rate_bps(), link.line_rate_bps);
        ASSERT_GT(f.cwnd_bytes(), 0u);
        ASSERT_TRUE(f.next_timer_ns() == kNoTimer || f.next_timer_ns() > e.now_ns);
        for (double v : state_values(f)) ASSERT_TRUE(std::isfinite(v)) << v;
        ASSERT_EQ((Out{f.rate_bps(), f.cwnd_bytes(), f.next_timer_ns()}),
                  (Out{replay.rate_bps(), replay.cwnd_bytes(), replay.next_timer_ns()}));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, InvariantsTest,
                         ::testing::Values("none", "dcqcn", "timely", "hpcc", "swift",
                                           "powertcp", "nscc", "tita"),
                         [](const auto& info) { return std::string(info.param); });

TEST(InvariantsTest, RegistryIsCoveredHere) {
  EXPECT_EQ(algorithms().size(), 8u);  // add a new algorithm to the list above
}

}  // namespace
}  // namespace tita::cc::test
