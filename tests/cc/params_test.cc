// Registry and "name=value" parameter parsing: good inputs, bad inputs, and the
// exact error messages.
#include <cerrno>
#include <set>
#include <string>

#include "cc_test_util.h"

namespace tita::cc::test {
namespace {

TEST(RegistryTest, ListsEveryAlgorithmInOrder) {
  std::string names;
  for (const AlgorithmInfo& a : algorithms()) {
    names += std::string(a.name) + " ";
    EXPECT_FALSE(a.summary.empty());
  }
  EXPECT_EQ(names, "none dcqcn timely hpcc swift powertcp nscc tita ");
}

TEST(RegistryTest, UnknownAlgorithmIsENOENTWithTheKnownNames) {
  Params p = make_params("hpcc", kLink100g);
  std::string err;
  EXPECT_EQ(Params::create("bbr", kLink100g, &p, &err), -ENOENT);
  EXPECT_EQ(err,
            "unknown congestion control 'bbr' (known: none, dcqcn, timely, hpcc, swift, "
            "powertcp, nscc, tita)");
  EXPECT_EQ(p.algorithm(), "hpcc");  // unchanged
  EXPECT_EQ(Params().algorithm(), "none");
}

TEST(ParamsTest, SetAndGet) {
  Params p = make_params("hpcc", kLink100g);
  std::string err;
  double v = 0;
  EXPECT_EQ(p.set("eta=0.9", &err), 0);
  EXPECT_EQ(p.get("eta", &v), 0);
  EXPECT_EQ(v, 0.9);
  EXPECT_EQ(p.set("  max_stage =  3 ", &err), 0);  // blanks around name and value
  EXPECT_EQ(p.get("max_stage", &v), 0);
  EXPECT_EQ(v, 3);
  EXPECT_EQ(p.set("ai_rate_bps=2.5e7", &err), 0);
  EXPECT_EQ(p.get("ai_rate_bps", &v), 0);
  EXPECT_EQ(v, 25e6);
  EXPECT_EQ(p.set("eta=1", &err), 0);  // bounds are inclusive
  EXPECT_EQ(p.set("eta=0.5", &err), 0);
  EXPECT_EQ(p.get("nope", &v), -ENOENT);
}

TEST(ParamsTest, ErrorMessages) {
  Params p = make_params("hpcc", kLink100g);
  std::string err;
  EXPECT_EQ(p.set("eta", &err), -EINVAL);
  EXPECT_EQ(err, "malformed parameter 'eta': expected name=value");
  EXPECT_EQ(p.set("=0.9", &err), -EINVAL);
  EXPECT_EQ(err, "malformed parameter '=0.9': expected name=value");
  EXPECT_EQ(p.set("etaa=0.9", &err), -EINVAL);
  EXPECT_EQ(err,
            "hpcc has no parameter 'etaa' (known: eta, max_stage, ai_rate_bps, min_rate_bps, "
            "fast_react)");
  EXPECT_EQ(p.set("eta=abc", &err), -EINVAL);
  EXPECT_EQ(err, "hpcc parameter 'eta': 'abc' is not a number");
  EXPECT_EQ(p.set("eta=0.9x", &err), -EINVAL);
  EXPECT_EQ(err, "hpcc parameter 'eta': '0.9x' is not a number");
  EXPECT_EQ(p.set("eta=", &err), -EINVAL);
  EXPECT_EQ(err, "hpcc parameter 'eta': '' is not a number");
  EXPECT_EQ(p.set("eta=nan", &err), -EINVAL);
  EXPECT_EQ(err, "hpcc parameter 'eta': 'nan' is not a number");
  EXPECT_EQ(p.set("eta=inf", &err), -EINVAL);
  EXPECT_EQ(err, "hpcc parameter 'eta': 'inf' is not a number");
  EXPECT_EQ(p.set("max_stage=2.5", &err), -EINVAL);
  EXPECT_EQ(err, "hpcc parameter 'max_stage': '2.5' is not an integer");
  EXPECT_EQ(p.set("eta=1.5", &err), -EINVAL);
  EXPECT_EQ(err, "hpcc parameter 'eta' = 1.5 is out of range [0.5, 1]");
  EXPECT_EQ(p.set("ai_rate_bps=-1", &err), -EINVAL);
  EXPECT_EQ(err, "hpcc parameter 'ai_rate_bps' = -1 is out of range [0, 1e+12] bps");

  Params d = make_params("dcqcn", kLink100g);
  EXPECT_EQ(d.set("rate_timer_ns=10", &err), -EINVAL);
  EXPECT_EQ(err, "dcqcn parameter 'rate_timer_ns' = 10 is out of range [1000, 1e+10] ns");

  double v = 0;
  EXPECT_EQ(p.get("eta", &v), 0);
  EXPECT_EQ(v, 0.95);  // failed sets changed nothing
}

TEST(ParamsTest, DefaultsScaleWithTheLink) {
  const FlowConfig link25{25'000'000'000, 10'000, 1000};
  double v = 0;
  EXPECT_EQ(make_params("dcqcn", link25).get("rate_ai_bps", &v), 0);
  EXPECT_EQ(v, 12.5e6);
  EXPECT_EQ(make_params("dcqcn", kLink100g).get("rate_ai_bps", &v), 0);
  EXPECT_EQ(v, 50e6);
  EXPECT_EQ(make_params("dcqcn", kLink100g).get("rate_hai_bps", &v), 0);
  EXPECT_EQ(v, 100e6);
  EXPECT_EQ(make_params("hpcc", link25).get("ai_rate_bps", &v), 0);
  EXPECT_EQ(v, 12.5e6);
  EXPECT_EQ(make_params("timely", kLink100g).get("ai_bps", &v), 0);
  EXPECT_EQ(v, 100e6);
  const FlowConfig long_rtt{100'000'000'000, 20'000, 1000};
  EXPECT_EQ(make_params("swift", long_rtt).get("base_target_ns", &v), 0);
  EXPECT_EQ(v, 20'000);
  EXPECT_EQ(make_params("nscc", long_rtt).get("target_qdelay_ns", &v), 0);
  EXPECT_EQ(v, 10'000);
}

// Every table: unique names, every default inside its range and readable by name.
TEST(ParamsTest, EveryDefaultIsInRangeForEveryLink) {
  for (uint64_t rate : {10'000'000'000ull, 25'000'000'000ull, 100'000'000'000ull,
                        400'000'000'000ull, 1'600'000'000'000ull}) {
    for (uint64_t rtt : {2'000ull, 10'000ull, 100'000ull}) {
      const FlowConfig link{rate, rtt, 4096};
      for (const AlgorithmInfo& a : algorithms()) {
        Params p = make_params(a.name, link);
        std::set<std::string_view> names;
        for (const ParamInfo& info : p.describe()) {
          EXPECT_TRUE(names.insert(info.name).second) << a.name << " " << info.name;
          EXPECT_FALSE(info.help.empty());
          double v = 0;
          ASSERT_EQ(p.get(info.name, &v), 0);
          EXPECT_GE(v, info.min) << a.name << " " << info.name;
          EXPECT_LE(v, info.max) << a.name << " " << info.name;
          std::string err;
          EXPECT_EQ(p.set(std::string(info.name) + "=" + std::to_string(info.max), &err), 0)
              << err;
        }
      }
    }
  }
}

TEST(ParamsTest, ParamsAreValuesFlowsPointAtTheirOwn) {
  Params a = make_params("none", kLink100g, {"rate_bps=10e9"});
  Params b = a;
  std::string err;
  ASSERT_EQ(b.set("rate_bps=20e9", &err), 0);
  Flow fa, fb;
  fa.init(a, kLink100g, 0);
  fb.init(b, kLink100g, 0);
  EXPECT_EQ(fa.rate_bps(), 10'000'000'000u);
  EXPECT_EQ(fb.rate_bps(), 20'000'000'000u);
}

TEST(FlowTest, FixedSizeTriviallyCopyable) {
  static_assert(sizeof(Flow) <= 256);
  static_assert(std::is_trivially_copyable_v<Flow>);
  EXPECT_LE(sizeof(Flow), kMaxFlowBytes);
}

}  // namespace
}  // namespace tita::cc::test
