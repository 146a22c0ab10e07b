// Values with units, for tita-sim's command line, workload specs, topology files
// and congestion-control parameters. Rates and times are parsed by ns-3's own
// DataRate and Time parsers, so every spelling ns-3 accepts works here ("40Mb/s",
// "40Mbps", "100Gbps", "4us", "1.5ms"); what ns-3 would abort on, or take for
// something else, is a message instead.
#pragma once

#include "ns3/nstime.h"

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace ns3
{

/// A rate in ns-3 DataRate units ("100Gbps", "40Mb/s", "1GB/s") or a bare number of
/// bits per second ("1e11"). False with a message naming the text otherwise.
bool TitaParseRate(const std::string& text, uint64_t* bps, std::string* err);

/// A rate that must carry its unit (topologies, DataRate attributes): a bare "10"
/// could mean bits or gigabits per second, so it is refused with a message that
/// says how to write it; otherwise as TitaParseRate.
bool TitaParseRateWithUnit(const std::string& text, uint64_t* bps, std::string* err);

/// A time in ns-3 Time units (s ms us ns ps fs min h d y: "4us", "0.001ms") or a bare
/// number in `bareUnit` (one of those units). False with a message otherwise
/// (unknown unit, negative, not a number).
bool TitaParseTime(const std::string& text, const std::string& bareUnit, Time* t, std::string* err);

/// A runner's time option (--stop, --fault-at): a time whose bare numbers are
/// seconds, as ns-3 reads them; the message names the option ("--stop: time ...").
bool TitaParseTimeOption(const std::string& option, const std::string& text, Time* t, std::string* err);

/// A byte count: a bare number ("500000", "5e5") or one with B, KB, MB, GB (powers of
/// 1000), KiB, MiB, GiB (powers of 1024); also K, M, G as 1000, 1e6, 1e9.
bool TitaParseBytes(const std::string& text, uint64_t* bytes, std::string* err);

/// A finite number, the whole text ("0.5", "1e-3").
bool TitaParseReal(const std::string& text, double* v, std::string* err);

/// A non-negative whole number.
bool TitaParseCount(const std::string& text, uint64_t* n, std::string* err);

/// Congestion control `algorithm` with "name=value,name=value" parameters, checked
/// against the algorithm's parameter table (names, ranges) before any simulation
/// starts. Values of parameters whose unit is bps may use DataRate units, those in
/// ns Time units ("rate_ai_bps=40Mb/s", "rate_timer_ns=300us"); they come back as the
/// plain numbers cc::Params takes. False with a one-line message.
bool TitaCcParams(const std::string& algorithm,
                  const std::string& params,
                  std::vector<std::string>* out,
                  std::string* err);

/**
 * \ingroup tita
 * The lines of a text input (a topology, flow or CDF file) split into words, for
 * readers whose messages name the line: "websearch.cdf:12: ...".
 */
class TitaLineReader
{
  public:
    TitaLineReader(std::istream& in, std::string name);
    /// The next line that is not blank, split at white space; false at the end.
    bool Next(std::vector<std::string>* words);
    /// "name:N: " for the line Next() returned last ("name: at the end: " after it).
    std::string At() const;
    /// The number of the line Next() returned last (1 for the first).
    uint64_t Number() const { return m_number; }
    /// Sets *err to At() and `msg`; false, for `return lines.Fail(err, "...")`.
    bool Fail(std::string* err, const std::string& msg) const;

  private:
    std::istream& m_in;
    std::string m_name;
    std::string m_line;
    uint64_t m_number = 0;
    bool m_end = false;
};

} // namespace ns3
