// The engine's settings table (tita/engine/settings.h): every row reaches its
// own field and only it, ranges fit the fields, text reads as the front ends
// read it, and doc/settings.md is the table as it stands.
#include "tita/engine/settings.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace tita::engine {
namespace {

constexpr FrontEnd kFrontEnds[] = {FrontEnd::kEngine, FrontEnd::kPerf, FrontEnd::kVerbs, FrontEnd::kNs3};

uint64_t read(std::string_view name, const EngineConfig& c) { return find_setting(name)->get(c); }

TEST(Settings, NamesAreUniqueInEveryFrontEnd) {
  std::set<std::string_view> names, flags, attributes;
  for (const Setting& s : settings()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    if (!s.flag.empty()) {
      EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
    }
    if (!s.attribute.empty()) {
      EXPECT_TRUE(attributes.insert(s.attribute).second) << s.attribute;
    }
    EXPECT_TRUE(!s.flag.empty() || !s.attribute.empty() || s.verbs) << s.name << " reaches no front end";
    EXPECT_FALSE(s.help.empty()) << s.name;
    EXPECT_EQ(find_setting(s.name), &s);
  }
  EXPECT_EQ(find_setting("no_such_setting"), nullptr);
}

// Set to its least and greatest value, a row's field holds them exactly (the
// range fits the field's type) and no other row's value moves.
TEST(Settings, EachRowWritesItsOwnFieldOnly) {
  for (const Setting& s : settings()) {
    std::vector<uint64_t> values = {s.min, s.max};
    if (s.kind == SettingKind::kBool) values = {0, 1};
    if (s.kind == SettingKind::kChoice) {
      values.clear();
      for (uint64_t v = 0; !s.choice_name(v).empty(); ++v) values.push_back(v);
      EXPECT_GE(values.size(), 2u) << s.name;
    }
    for (uint64_t v : values) {
      EngineConfig c;
      s.set(&c, v);
      EXPECT_EQ(s.get(c), v) << s.name;
      for (const Setting& o : settings()) {
        if (&o != &s) {
          EXPECT_EQ(o.get(c), o.get(EngineConfig{})) << s.name << " moved " << o.name;
        }
      }
    }
  }
}

TEST(Settings, DefaultsAreEngineConfigsAndInRange) {
  const EngineConfig engine;
  for (const Setting& s : settings()) {
    EXPECT_EQ(s.default_for(FrontEnd::kEngine), s.get(engine)) << s.name;
    for (FrontEnd f : kFrontEnds) {
      const uint64_t d = s.default_for(f);
      EXPECT_EQ(read(s.name, defaults(f)), d) << s.name;
      // The one default outside its range: the verbs device's rate, 0 until
      // set, which takes the port's speed (lib/verbs/src/device.cc).
      if (f == FrontEnd::kVerbs && s.name == "rate_gbps") {
        EXPECT_EQ(d, 0u);
        continue;
      }
      if (s.kind == SettingKind::kBool || s.kind == SettingKind::kChoice) {
        EXPECT_FALSE(s.format(d).empty()) << s.name;
      } else {
        EXPECT_GE(d, s.min) << s.name;
        EXPECT_LE(d, s.max) << s.name;
      }
    }
  }
  // What each front end changes, and nothing else.
  EXPECT_EQ(defaults(FrontEnd::kNs3).ack_req_every, 1u);
  EXPECT_FALSE(defaults(FrontEnd::kNs3).compute_icrc);
  EXPECT_EQ(defaults(FrontEnd::kNs3).timer_slot_ns, 2048u);
  EXPECT_EQ(defaults(FrontEnd::kVerbs).max_qps, 4096u);
  EXPECT_EQ(defaults(FrontEnd::kVerbs).line_rate_bps, 0u);
  EXPECT_EQ(find_setting("rate_gbps")->default_text(FrontEnd::kVerbs), "the port's speed");
  EXPECT_EQ(find_setting("rate_gbps")->default_text(FrontEnd::kPerf), "100 Gb/s");
  EXPECT_EQ(find_setting("ack_req_every")->default_text(FrontEnd::kNs3), "1");
  EXPECT_EQ(defaults(FrontEnd::kPerf).ack_req_every, EngineConfig{}.ack_req_every);
}

TEST(Settings, TextInTheSettingsUnit) {
  uint64_t v = 0;
  std::string why;
  const Setting& rtt = *find_setting("base_rtt_us");
  ASSERT_EQ(rtt.parse("2.5", &v, &why), 0) << why;
  EXPECT_EQ(v, 2500u);
  EXPECT_EQ(rtt.parse("-1", &v, &why), -EINVAL);
  EXPECT_EQ(why, "must be 0.001 to 1000000 (us)");
  EXPECT_EQ(rtt.parse("10us", &v, &why), -EINVAL);
  EXPECT_EQ(rtt.parse("", &v, &why), -EINVAL);
  EXPECT_EQ(rtt.parse("nan", &v, &why), -EINVAL);
  EXPECT_EQ(rtt.parse("1e400", &v, &why), -EINVAL);
  // The message tita-run's test looks for.
  EXPECT_EQ(find_setting("pacing_slack_us")->parse("-1", &v, &why), -EINVAL);
  EXPECT_EQ(why, "must be 0 to 1000000 (us)");

  const Setting& rate = *find_setting("rate_gbps");
  ASSERT_EQ(rate.parse("0.3", &v, &why), 0);
  EXPECT_EQ(v, 300'000'000u);  // rounded, not truncated
  EXPECT_EQ(rate.parse("0", &v, &why), -EINVAL);
  EXPECT_EQ(rate.parse("3200.5", &v, &why), -EINVAL);
  EXPECT_EQ(rate.format(100'000'000'000), "100");
  ASSERT_EQ(rate.from_number(25, &v, &why), 0);
  EXPECT_EQ(v, 25'000'000'000u);

  const Setting& qps = *find_setting("max_qps");
  EXPECT_EQ(qps.parse("2.5", &v, &why), -EINVAL);
  EXPECT_EQ(why, "must be a whole number, 1 to 16777216");
  ASSERT_EQ(qps.parse("16777216", &v, &why), 0);
  EXPECT_EQ(qps.parse("16777217", &v, &why), -EINVAL);

  const Setting& arp = *find_setting("arp_retry_ms");
  ASSERT_EQ(arp.parse("200", &v, &why), 0);
  EXPECT_EQ(v, 200'000'000u);

  const Setting& pace = *find_setting("pace");
  for (const char* t : {"1", "true", "yes", "on"}) {
    ASSERT_EQ(pace.parse(t, &v, &why), 0) << t;
    EXPECT_EQ(v, 1u);
  }
  ASSERT_EQ(pace.parse("off", &v, &why), 0);
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(pace.parse("maybe", &v, &why), -EINVAL);
  EXPECT_EQ(why, "must be true or false");
  EXPECT_EQ(pace.from_number(2, &v, &why), -EINVAL);

  // Choices by their owner's parser, aliases included.
  const Setting& dodge = *find_setting("dodge_field");
  ASSERT_EQ(dodge.parse("udp-sport", &v, &why), 0);
  EXPECT_EQ(v, static_cast<uint64_t>(wire::DodgeField::kUdpSport));
  EXPECT_EQ(dodge.format(v), "udp_sport");
  EXPECT_EQ(dodge.parse("ecn", &v, &why), -EINVAL);
  EXPECT_EQ(why, "must be none, dscp, udp_sport or udp-sport");
  const Setting& policy = *find_setting("spray_policy");
  ASSERT_EQ(policy.parse("offset", &v, &why), 0);
  EXPECT_EQ(v, static_cast<uint64_t>(SprayPolicy::kOffset));
  const Setting& notification = *find_setting("congestion_notification");
  ASSERT_EQ(notification.parse("ack", &v, &why), 0);
  EXPECT_EQ(v, 1u);
  EXPECT_EQ(notification.choice_name(0), "cnp");
  EXPECT_EQ(notification.from_number(2, &v, &why), -EINVAL);
}

// Every name of a choice reads as a value, every value has a name, and every
// default reads back from its own text.
TEST(Settings, TextRoundTrips) {
  for (const Setting& s : settings()) {
    for (FrontEnd f : kFrontEnds) {
      const uint64_t d = s.default_for(f);
      if (f == FrontEnd::kVerbs && s.name == "rate_gbps") continue;  // 0: unset
      uint64_t v = ~0ull;
      std::string why;
      ASSERT_EQ(s.parse(s.format(d), &v, &why), 0) << s.name << " '" << s.format(d) << "': " << why;
      EXPECT_EQ(v, d) << s.name;
    }
    if (s.kind != SettingKind::kChoice) continue;
    std::string names(s.choices);
    std::istringstream in(names);
    for (std::string n; in >> n;) {
      uint64_t v = 0;
      std::string why;
      ASSERT_EQ(s.parse(n, &v, &why), 0) << s.name << " " << n;
      EXPECT_FALSE(s.choice_name(v).empty());
    }
  }
}

// doc/settings.md holds the table between its markers, as the table stands.
TEST(Settings, DocIsCurrent) {
  const std::string path = std::string(TITA_SOURCE_DIR) + "/doc/settings.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string begin = "<!-- settings table: begin -->\n", end = "<!-- settings table: end -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), settings_markdown())
      << "doc/settings.md is stale: run build/tests/engine/settings_doc doc/settings.md";
}

}  // namespace
}  // namespace tita::engine
