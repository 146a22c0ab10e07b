// ns per Flow::on_ack for every algorithm (INT algorithms with 1 and 5 hops),
// and the per-flow state size. Each ACK acknowledges one 1000 B packet on a
// 100 Gb/s path of base RTT 10 us; INT records advance 80 ns / 1000 B per ACK
// with a queue that varies, so the control laws take their real paths
// (utilisation around the target, per-RTT commits every 125 ACKs).
//
// Plug-ins: "dcqcn-plugin" and "hpcc-plugin" are the built-ins registered
// again through the plug-in path (cc/plugin.h), so the difference to "dcqcn"
// and "hpcc" is the cost of the indirect dispatch; TITA_CC_PLUGIN=PATH.so adds
// the algorithms of a shared object (meson's benchmark sets it to
// examples/cc-plugin's dctcp).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "tita/cc/cc.h"

namespace tita::cc {
namespace {

constexpr FlowConfig kLink{100'000'000'000, 10'000, 1000};

struct AckStream {
  AckSample s{};
  uint64_t now_ns = 0;
  uint32_t i = 0;

  explicit AckStream(int hops) {
    s.acked_bytes = 1000;
    s.acked_packets = 1;
    s.n_hops = static_cast<uint8_t>(hops);
    for (int h = 0; h < hops; ++h) s.hops[h] = {100'000'000'000, 0, 0, 0};
  }
  const AckSample& next() {
    ++i;
    now_ns += 80;
    s.ack_seq_bytes += 1000;
    s.next_seq_bytes = s.ack_seq_bytes + 125'000;
    s.inflight_bytes = 125'000;
    s.rtt_ns = 10'000 + (i & 0xff) * 8;      // 0-2 us of queueing
    s.ce_packets = (i & 0x3f) == 0 ? 1 : 0;
    for (int h = 0; h < s.n_hops; ++h) {
      s.hops[h].ts_ns += 80;
      s.hops[h].tx_bytes += (i & 0x7) == 0 ? 0 : 1000;  // ~88% busy
      s.hops[h].qlen_bytes = (i & 0xff) * 100 * (h == 0);
    }
    return s;
  }
};

void bm_on_ack(benchmark::State& state, std::string algorithm, int hops) {
  Params p;
  std::string err;
  if (Params::create(algorithm, kLink, &p, &err) != 0) {
    state.SkipWithError(err.c_str());
    return;
  }
  Flow flow;
  flow.init(p, kLink, 0);
  AckStream acks(hops);
  for (auto _ : state) {
    const AckSample& s = acks.next();
    flow.on_ack(acks.now_ns, s);
    benchmark::DoNotOptimize(flow.rate_bps());
    benchmark::DoNotOptimize(flow.cwnd_bytes());
  }
  state.counters["flow_bytes"] = sizeof(Flow);
}

// The cost of producing the samples, to subtract from the figures above.
void bm_sample_only(benchmark::State& state, int hops) {
  AckStream acks(hops);
  for (auto _ : state) benchmark::DoNotOptimize(acks.next());
}

template <class State>
void bm_state_size(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(sizeof(State));
  state.counters["state_bytes"] = sizeof(State);
  state.counters["flow_bytes"] = sizeof(Flow);
}

// A built-in registered once more as a plug-in, under another name.
template <class F>
void register_as_plugin(const char* name) {
  static PluginOps ops = plugin_ops<F>();
  ops.info.name = name;
  std::string err;
  if (register_algorithm(ops, &err) != 0) std::fprintf(stderr, "%s\n", err.c_str());
}

void register_all() {
  register_as_plugin<DcqcnFlow>("dcqcn-plugin");
  register_as_plugin<HpccFlow>("hpcc-plugin");
  if (const char* env = std::getenv("TITA_CC_PLUGIN"); env != nullptr) {
    std::stringstream ss(env);
    std::string path, err;
    while (ss >> path)
      if (load_plugin(path, &err) != 0) std::fprintf(stderr, "%s\n", err.c_str());
  }
  std::vector<std::string> names;
  for (const AlgorithmInfo& a : algorithms()) names.emplace_back(a.name);
  for (const PluginOps* o : plugins()) names.emplace_back(o->info.name);
  for (const std::string& name : names) {
    const bool int_algorithm = name == "hpcc" || name == "hpcc-plugin" || name == "powertcp" || name == "tita";
    std::vector<int> hop_counts = int_algorithm ? std::vector<int>{1, 5} : std::vector<int>{0};
    if (name == "tita") hop_counts.insert(hop_counts.begin(), 0);  // the fallback path
    for (int hops : hop_counts) {
      benchmark::RegisterBenchmark(("on_ack/" + name + "/hops:" + std::to_string(hops)).c_str(),
                                   bm_on_ack, name, hops);
    }
  }
  for (int hops : {0, 1, 5})
    benchmark::RegisterBenchmark(("sample_only/hops:" + std::to_string(hops)).c_str(),
                                 bm_sample_only, hops);
  benchmark::RegisterBenchmark("state_size/none", bm_state_size<NoneFlow>);
  benchmark::RegisterBenchmark("state_size/dcqcn", bm_state_size<DcqcnFlow>);
  benchmark::RegisterBenchmark("state_size/timely", bm_state_size<TimelyFlow>);
  benchmark::RegisterBenchmark("state_size/hpcc", bm_state_size<HpccFlow>);
  benchmark::RegisterBenchmark("state_size/swift", bm_state_size<SwiftFlow>);
  benchmark::RegisterBenchmark("state_size/powertcp", bm_state_size<PowertcpFlow>);
  benchmark::RegisterBenchmark("state_size/nscc", bm_state_size<NsccFlow>);
  benchmark::RegisterBenchmark("state_size/tita", bm_state_size<TitaFlow>);
}

}  // namespace
}  // namespace tita::cc

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tita::cc::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
