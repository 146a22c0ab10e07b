// Prints the single-bottleneck harness figures quoted in doc/cc: per algorithm,
// two-flow convergence and utilisation, 16:1 incast queue and utilisation; and
// for tita the INT-less variants, a 100:1 incast and the ramp when a flow ends.
// Usage: cc_harness_report [algorithm...]
#include <chrono>
#include <cstdio>

#include "scenarios.h"

using namespace tita::cc::harness;

namespace {

const char* mode_name(IntMode m) {
  switch (m) {
    case IntMode::kNone: return "no INT";
    case IntMode::kBottleneck: return "INT";
    case IntMode::kAccessAndBottleneck: return "INT, 2 hops";
    case IntMode::kAccessOnly: return "partial INT";
  }
  return "?";
}

void fairness(const std::string& a, IntMode mode) {
  Config c = fairness_config(a, 1'000'000, 11'000'000);
  c.int_mode = mode;
  const Result r = run(c);
  std::printf("| %-8s | %-11s | 2 flows | Jain>=0.9 after %4d, >=0.99 after %4d RTTs | util from +1.5 ms %.3f | max q %.2f BDP |\n",
              a.c_str(), mode_name(mode), rtts_to_fairness(r, c, 1'000'000, 0.9),
              rtts_to_fairness(r, c, 1'000'000, 0.99), utilisation_between(r, c, 2'500'000, 11'000'000),
              static_cast<double>(r.max_queue_bytes) / kBdpBytes);
}

void incast(const std::string& a, int n, IntMode mode) {
  Config c = incast_config(a, n, 5'000'000);
  c.int_mode = mode;
  const Result r = run(c);
  std::printf("| %-8s | %-11s | %3d:1   | q max %6.2f mean %5.2f BDP (peak %6.1f) | util %.3f | Jain %.3f |\n",
              a.c_str(), mode_name(mode), n, static_cast<double>(r.max_queue_bytes) / kBdpBytes,
              r.mean_queue_bytes / kBdpBytes, static_cast<double>(r.peak_queue_bytes) / kBdpBytes,
              r.utilisation, r.jain());
}

void ramp(const std::string& a, IntMode mode) {
  const Config c = ramp_config(a, mode);
  const Result r = run(c);
  std::printf("| %-8s | %-11s | flow ends | link >= 90%% after %3d RTTs |\n", a.c_str(),
              mode_name(mode), rtts_to_utilisation(r, c, 2'000'000, 0.9));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> algos = {"dcqcn", "timely", "hpcc", "swift", "powertcp", "nscc", "tita"};
  if (argc > 1) algos.assign(argv + 1, argv + argc);
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& a : algos) {
    fairness(a, IntMode::kBottleneck);
    incast(a, 16, IntMode::kBottleneck);
    ramp(a, IntMode::kBottleneck);
    if (a == "tita" || a == "hpcc") incast(a, 100, IntMode::kBottleneck);
    if (a == "tita") {
      for (IntMode m : {IntMode::kAccessAndBottleneck, IntMode::kNone, IntMode::kAccessOnly}) {
        fairness(a, m);
        incast(a, 16, m);
        ramp(a, m);
      }
      incast(a, 100, IntMode::kNone);
    }
  }
  std::printf("(%.1f s)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}
