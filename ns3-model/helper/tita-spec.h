// "kind:key=value,key=value" specs, as tita-sim's --topo, --workload and --fault
// spell what to build, with typed getters in the units of tita-units.h. Every
// getter says what it expects; the first mistake is kept as a one-line message
// naming the option, the kind and the key, and Check() also refuses keys no getter
// asked for, so a typo is an error rather than a default.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * One spec. A getter that finds its key badly written returns its default and
 * keeps the message; callers read every key, then call Check():
 *
 *   const TitaSpec sp = TitaSpec::Parse("--topo", "star:n=4,rate=40Gbps");
 *   const uint32_t n = sp.Count("n", 3, 2);
 *   const uint64_t bps = sp.Rate("rate", 100'000'000'000);
 *   if (!sp.Check(&err)) ... // "--topo=star: rate: ..." or "unknown key ..."
 */
class TitaSpec
{
  public:
    /// Splits `text` at its first ':' into the kind and "key=value" items at ','
    /// (a key without '=' is "1"; empty items are skipped). `option` ("--topo")
    /// prefixes every message.
    static TitaSpec Parse(const std::string& option, const std::string& text);

    /// "kind;kind:k=v;..." into its items, in order; empty ones are dropped
    /// unless `keepEmpty` (a trailing separator never makes one).
    static std::vector<std::string> SplitList(const std::string& text, char separator, bool keepEmpty = false);

    const std::string& GetOption() const { return m_option; }
    const std::string& GetKind() const { return m_kind; }

    /// The text of a key, or `def`.
    std::string Str(const std::string& key, const std::string& def) const;
    /// A finite number in [lo, hi].
    double Real(const std::string& key, double def, double lo, double hi) const;
    /// A whole number in [lo, 2^32).
    uint32_t Count(const std::string& key, uint32_t def, uint32_t lo = 0) const;
    /// 0 or 1.
    bool Flag(const std::string& key, bool def) const;
    /// A rate above 0 (TitaParseRate).
    uint64_t Rate(const std::string& key, uint64_t def) const;
    /// A time; bare numbers are nanoseconds (TitaParseTime).
    uint64_t TimeNs(const std::string& key, uint64_t def) const;
    /// A byte count (TitaParseBytes).
    uint64_t Bytes(const std::string& key, uint64_t def) const;

    /// Keeps "option=kind: key: why" as the spec's mistake (the first one wins).
    void Bad(const std::string& key, const std::string& why) const;
    /// Keeps "option=kind: what" (a mistake of the whole spec).
    void Fail(const std::string& what) const;
    /// True when every getter was happy and every key was asked for; else false
    /// with the first mistake in *err.
    bool Check(std::string* err) const;
    /// The first mistake so far, without the unknown-key check ("" if none).
    const std::string& GetError() const { return m_error; }

  private:
    const std::string* Find(const std::string& key) const;

    std::string m_option; // "--topo", "--workload"
    std::string m_kind;
    std::map<std::string, std::string> m_kv;
    mutable std::set<std::string> m_asked;
    mutable std::string m_error;
};

} // namespace ns3
