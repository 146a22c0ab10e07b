#include "tita-units.h"

#include "tita/cc/cc.h"

#include "ns3/data-rate.h"

#include <array>
#include <charconv>
#include <cctype>
#include <cmath>
#include <sstream>
#include <string_view>

namespace ns3
{

namespace
{

// The whole of `s` as a finite number; false if anything follows it.
bool
WholeNumber(std::string_view s, double* v)
{
    if (s.empty())
    {
        return false;
    }
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && end == s.data() + s.size() && std::isfinite(*v);
}

// The leading number of `s` and the rest (its unit).
bool
SplitNumber(std::string_view s, double* v, std::string_view* unit)
{
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    if (ec != std::errc() || !std::isfinite(*v))
    {
        return false;
    }
    *unit = s.substr(static_cast<std::size_t>(end - s.data()));
    return true;
}

// The units ns-3's Time(std::string) knows (anything else it aborts on), in seconds.
struct TimeUnit
{
    std::string_view name;
    double seconds;
};

constexpr std::array<TimeUnit, 10> kTimeUnits{{{"s", 1},
                                               {"ms", 1e-3},
                                               {"us", 1e-6},
                                               {"ns", 1e-9},
                                               {"ps", 1e-12},
                                               {"fs", 1e-15},
                                               {"min", 60},
                                               {"h", 3600},
                                               {"d", 86400},
                                               {"y", 365 * 86400.0}}};

// Times above this are refused: Time holds a 64-bit count of its resolution
// (tita-sim's is 1 ps: 106 days), and no simulation runs that long.
constexpr double kMaxSeconds = 1e6;

bool
Fail(std::string* err, const std::string& msg)
{
    if (err != nullptr)
    {
        *err = msg;
    }
    return false;
}

} // namespace

bool
TitaParseRate(const std::string& text, uint64_t* bps, std::string* err)
{
    double v = 0;
    if (WholeNumber(text, &v))
    {
        if (v < 0 || v > 1e15)
        {
            return Fail(err, "rate '" + text + "' is out of range");
        }
        *bps = static_cast<uint64_t>(std::llround(v));
        return true;
    }
    // ns-3's parser: a number and one of its units (bps, b/s, Kbps, Kib/s, MB/s ...).
    // It converts the product to an integer unchecked, so the range is checked
    // first from the number and the unit's own size.
    auto parse = [](const std::string& s, DataRate* rate) {
        std::istringstream in(s);
        std::string rest;
        return s.find_first_of(" \t") == std::string::npos && (in >> *rate) && !(in >> rest);
    };
    std::string_view unit;
    DataRate rate;
    DataRate unitRate;
    if (!SplitNumber(text, &v, &unit) || unit.empty() || std::isalpha(static_cast<unsigned char>(unit[0])) == 0 ||
        !parse("1" + std::string(unit), &unitRate) ||
        !parse(text, &rate))
    {
        return Fail(err,
                    "rate '" + text + "': expected a number of bits per second or an ns-3 DataRate such as "
                    "100Gbps, 40Mb/s, 1GB/s");
    }
    if (v < 0 || v * static_cast<double>(unitRate.GetBitRate()) > 1e15)
    {
        return Fail(err, "rate '" + text + "' is out of range");
    }
    *bps = rate.GetBitRate();
    return true;
}

bool
TitaParseRateWithUnit(const std::string& text, uint64_t* bps, std::string* err)
{
    double v = 0;
    if (WholeNumber(text, &v) && v != 0) // 0 is 0 in every unit
    {
        return Fail(err,
                    "rate '" + text + "' has no unit: write " + text + "Gbps, " + text + "Mbps or " + text +
                        "bps");
    }
    return TitaParseRate(text, bps, err);
}

bool
TitaParseTime(const std::string& text, const std::string& bareUnit, Time* t, std::string* err)
{
    double v = 0;
    std::string_view unit;
    if (!SplitNumber(text, &v, &unit))
    {
        return Fail(err, "time '" + text + "' is not a number with a unit such as 4us, 1.5ms");
    }
    if (v < 0)
    {
        return Fail(err, "time '" + text + "' is negative");
    }
    const std::string withUnit = unit.empty() ? text + bareUnit : text;
    if (unit.empty())
    {
        unit = bareUnit;
    }
    const TimeUnit* known = nullptr;
    for (const TimeUnit& u : kTimeUnits)
    {
        known = u.name == unit ? &u : known;
    }
    if (known == nullptr)
    {
        return Fail(err,
                    "time '" + text + "': unknown unit '" + std::string(unit) +
                        "' (known: s ms us ns ps fs min h d y)");
    }
    if (v * known->seconds > kMaxSeconds)
    {
        return Fail(err, "time '" + text + "' is out of range (at most 1e6 s)");
    }
    *t = Time(withUnit);
    return true;
}

bool
TitaParseTimeOption(const std::string& option, const std::string& text, Time* t, std::string* err)
{
    if (!TitaParseTime(text, "s", t, err))
    {
        *err = "--" + option + ": " + *err;
        return false;
    }
    return true;
}

bool
TitaParseBytes(const std::string& text, uint64_t* bytes, std::string* err)
{
    struct Suffix
    {
        std::string_view name;
        double scale;
    };
    static constexpr Suffix kSuffixes[] = {{"", 1},      {"B", 1},          {"K", 1e3},        {"KB", 1e3},
                                           {"M", 1e6},   {"MB", 1e6},       {"G", 1e9},        {"GB", 1e9},
                                           {"KiB", 1024}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
    double v = 0;
    std::string_view unit;
    if (SplitNumber(text, &v, &unit))
    {
        for (const Suffix& s : kSuffixes)
        {
            if (s.name == unit && v >= 0 && v * s.scale < 1.8e19)
            {
                *bytes = static_cast<uint64_t>(std::llround(v * s.scale));
                return true;
            }
        }
    }
    return Fail(err, "size '" + text + "': expected bytes such as 500000, 5e5, 500KB, 1MiB");
}

bool
TitaParseReal(const std::string& text, double* v, std::string* err)
{
    return WholeNumber(text, v) || Fail(err, "'" + text + "' is not a number");
}

bool
TitaParseCount(const std::string& text, uint64_t* n, std::string* err)
{
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *n);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
    {
        return Fail(err, "'" + text + "' is not a whole number");
    }
    return true;
}

bool
TitaCcParams(const std::string& algorithm,
             const std::string& params,
             std::vector<std::string>* out,
             std::string* err)
{
    namespace cc = ::tita::cc;
    cc::Params p;
    std::string e;
    if (cc::Params::create(algorithm, cc::FlowConfig{}, &p, &e) != 0)
    {
        return Fail(err, e);
    }
    out->clear();
    std::stringstream ss(params);
    std::string item;
    while (std::getline(ss, item, ','))
    {
        if (item.empty())
        {
            continue;
        }
        const auto eq = item.find('=');
        if (eq != std::string::npos)
        {
            const std::string name = item.substr(0, eq);
            const std::string value = item.substr(eq + 1);
            double plain = 0;
            for (const cc::ParamInfo& info : p.describe())
            {
                if (info.name != name || WholeNumber(value, &plain))
                {
                    continue;
                }
                if (info.unit == "bps")
                {
                    uint64_t bps = 0;
                    if (!TitaParseRate(value, &bps, &e))
                    {
                        return Fail(err, algorithm + " parameter '" + name + "': " + e);
                    }
                    item = name + "=" + std::to_string(bps);
                }
                else if (info.unit == "ns")
                {
                    Time t;
                    if (!TitaParseTime(value, "ns", &t, &e))
                    {
                        return Fail(err, algorithm + " parameter '" + name + "': " + e);
                    }
                    // Time keeps picoseconds here; the parameter takes (fractional) ns.
                    const int64_t ps = t.GetPicoSeconds();
                    if (ps % 1000 == 0)
                    {
                        item = name + "=" + std::to_string(ps / 1000);
                    }
                    else
                    {
                        char buf[32];
                        const auto r = std::to_chars(buf, buf + sizeof buf, ps / 1000.0, std::chars_format::fixed);
                        item = name + "=" + std::string(buf, r.ptr);
                    }
                }
            }
        }
        if (p.set(item, &e) != 0)
        {
            return Fail(err, e);
        }
        out->push_back(item);
    }
    return true;
}

TitaLineReader::TitaLineReader(std::istream& in, std::string name)
    : m_in(in),
      m_name(std::move(name))
{
}

bool
TitaLineReader::Next(std::vector<std::string>* words)
{
    words->clear();
    while (words->empty() && std::getline(m_in, m_line))
    {
        ++m_number;
        std::istringstream line(m_line);
        std::string w;
        while (line >> w)
        {
            words->push_back(w);
        }
    }
    m_end = words->empty();
    return !m_end;
}

std::string
TitaLineReader::At() const
{
    return m_end ? m_name + ": at the end: " : m_name + ":" + std::to_string(m_number) + ": ";
}

bool
TitaLineReader::Fail(std::string* err, const std::string& msg) const
{
    *err = At() + msg;
    return false;
}

} // namespace ns3
