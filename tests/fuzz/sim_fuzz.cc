// libFuzzer target for tita-sim's text inputs (clang, ASan + UBSan, linked with
// Debian's ns-3 core, whose DataRate and Time parsers tita-sim's own use): the
// first byte picks the reader, the rest is the file or the values.
//
//   0  a topology in the HPCC simulator's format (TitaTopology::ReadHpcc)
//   1  a flow list in the HPCC simulator's format (TitaWorkload::ReadHpccFlows)
//   2  a flow-size CDF (TitaFlowSizeCdf::Read), then sampled
//   3  command-line values, one per line, `kind text`: rate, time, bytes, real,
//      count, or cc ALGORITHM PARAMS (TitaCcParams)
//
// The oracle: no crash, hang, huge allocation or undefined behaviour; a refusal
// is one line (it names the line of the file) and acceptance gives values in
// the documented ranges.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tita-topology.h"
#include "tita-units.h"
#include "tita-workload.h"

using namespace ns3;

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "sim_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

void refused(bool ok, const std::string& err) {
  if (!ok) require(!err.empty() && err.find('\n') == std::string::npos, "a refusal that is not one line");
}

void topology(const std::string& text) {
  // Reading the largest topology the reader allows (1e6 nodes) takes about
  // 0.1 s: bounded, and tested in the ns-3 suite; here it would only take the
  // fuzzer's time, so inputs declaring more than 4096 nodes are skipped.
  if (std::strtoull(text.c_str(), nullptr, 10) > 4096) return;
  std::istringstream in(text);
  TitaTopology t;
  std::string err;
  const bool ok = TitaTopology::ReadHpcc(in, "fuzz.topo", &t, &err);
  refused(ok, err);
  if (!ok) return;
  for (const TitaTopology::Link& l : t.Links()) {
    require(l.a < t.Vertices().size() && l.b < t.Vertices().size() && l.a != l.b, "a link to no node");
    require(l.rateBps > 0 && l.rateBps <= 1'000'000'000'000'000, "a link rate out of range");
    require(l.errorRate >= 0 && l.errorRate <= 1, "an error rate out of range");
  }
  (void)t.Describe();
}

void flows(const std::string& text) {
  std::istringstream in(text);
  std::vector<TitaFlowSpec> out;
  std::string err;
  // Nodes 0-15 are hosts, the rest switches.
  const bool ok = TitaWorkload::ReadHpccFlows(
      in, "fuzz.flows", [](uint32_t node) { return node < 16 ? static_cast<int32_t>(node) : -1; }, &out, &err);
  refused(ok, err);
  if (!ok) return;
  for (size_t i = 0; i < out.size(); ++i) {
    require(out[i].src < 16 && out[i].dst < 16 && out[i].src != out[i].dst, "a flow between no two hosts");
    require(out[i].bytes > 0 && !out[i].start.IsStrictlyNegative(), "a flow without bytes or before time 0");
    require(i == 0 || out[i - 1].start <= out[i].start, "flows out of order");
  }
}

void cdf(const std::string& text) {
  std::istringstream in(text);
  TitaFlowSizeCdf c;
  std::string err;
  const bool ok = c.Read(in, "fuzz.cdf", &err);
  refused(ok, err);
  if (!ok) return;
  require(c.MeanBytes() >= 1, "an accepted CDF with a mean below a byte");
  uint64_t last = 0;
  for (int i = 0; i < 64; ++i) {
    const uint64_t s = c.Sample(i / 64.0);
    require(s >= 1 && s >= last, "samples below a byte or not increasing with the quantile");
    last = s;
  }
}

void values(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t sp = line.find(' ');
    const std::string kind = line.substr(0, sp);
    const std::string v = sp == std::string::npos ? "" : line.substr(sp + 1);
    std::string err;
    if (kind == "rate") {
      uint64_t bps = 0;
      const bool ok = TitaParseRate(v, &bps, &err);
      refused(ok, err);
      require(!ok || bps <= 1'000'000'000'000'000, "a rate above 1e15 b/s accepted");
    } else if (kind == "time") {
      Time t;
      const bool ok = TitaParseTime(v, "ns", &t, &err);
      refused(ok, err);
      require(!ok || (!t.IsStrictlyNegative() && t.GetSeconds() <= 1e6), "a time out of range accepted");
    } else if (kind == "bytes") {
      uint64_t b = 0;
      refused(TitaParseBytes(v, &b, &err), err);
    } else if (kind == "real") {
      double d = 0;
      refused(TitaParseReal(v, &d, &err), err);
    } else if (kind == "count") {
      uint64_t n = 0;
      refused(TitaParseCount(v, &n, &err), err);
    } else if (kind == "cc") {
      const size_t sp2 = v.find(' ');
      std::vector<std::string> params;
      refused(TitaCcParams(v.substr(0, sp2), sp2 == std::string::npos ? "" : v.substr(sp2 + 1), &params, &err), err);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Time::SetResolution(Time::PS);  // as tita-sim
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 65536) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0: topology(text); break;
    case 1: flows(text); break;
    case 2: cdf(text); break;
    case 3: values(text); break;
  }
  return 0;
}
