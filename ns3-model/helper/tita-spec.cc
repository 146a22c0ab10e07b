#include "tita-spec.h"

#include "tita-units.h"

#include <sstream>

namespace ns3
{

TitaSpec
TitaSpec::Parse(const std::string& option, const std::string& text)
{
    TitaSpec sp;
    sp.m_option = option;
    const auto colon = text.find(':');
    sp.m_kind = text.substr(0, colon);
    if (colon == std::string::npos)
    {
        return sp;
    }
    for (const std::string& item : SplitList(text.substr(colon + 1), ','))
    {
        const auto eq = item.find('=');
        if (eq == std::string::npos)
        {
            sp.m_kv[item] = "1";
        }
        else
        {
            sp.m_kv[item.substr(0, eq)] = item.substr(eq + 1);
        }
    }
    return sp;
}

std::vector<std::string>
TitaSpec::SplitList(const std::string& text, char separator, bool keepEmpty)
{
    std::vector<std::string> items;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, separator))
    {
        if (keepEmpty || !item.empty())
        {
            items.push_back(item);
        }
    }
    return items;
}

const std::string*
TitaSpec::Find(const std::string& key) const
{
    m_asked.insert(key);
    auto it = m_kv.find(key);
    return it == m_kv.end() ? nullptr : &it->second;
}

void
TitaSpec::Fail(const std::string& what) const
{
    if (m_error.empty())
    {
        m_error = m_option + "=" + m_kind + ": " + what;
    }
}

void
TitaSpec::Bad(const std::string& key, const std::string& why) const
{
    Fail(key + ": " + why);
}

std::string
TitaSpec::Str(const std::string& key, const std::string& def) const
{
    const std::string* v = Find(key);
    return v ? *v : def;
}

double
TitaSpec::Real(const std::string& key, double def, double lo, double hi) const
{
    const std::string* v = Find(key);
    if (!v)
    {
        return def;
    }
    double x = 0;
    std::string err;
    if (!TitaParseReal(*v, &x, &err))
    {
        Bad(key, err);
        return def;
    }
    if (x < lo || x > hi)
    {
        std::ostringstream o;
        o << *v << " is out of range [" << lo << ", " << hi << "]";
        Bad(key, o.str());
        return def;
    }
    return x;
}

uint32_t
TitaSpec::Count(const std::string& key, uint32_t def, uint32_t lo) const
{
    const std::string* v = Find(key);
    uint64_t n = def;
    std::string err;
    if (v && !TitaParseCount(*v, &n, &err))
    {
        Bad(key, err);
        return def;
    }
    if (n < lo || n > UINT32_MAX)
    {
        Bad(key, std::to_string(n) + " is out of range (at least " + std::to_string(lo) + ")");
        return def;
    }
    return static_cast<uint32_t>(n);
}

bool
TitaSpec::Flag(const std::string& key, bool def) const
{
    const std::string* v = Find(key);
    if (v && *v != "0" && *v != "1")
    {
        Bad(key, "'" + *v + "': expected 0 or 1");
        return def;
    }
    return v ? *v == "1" : def;
}

uint64_t
TitaSpec::Rate(const std::string& key, uint64_t def) const
{
    const std::string* v = Find(key);
    uint64_t bps = def;
    std::string err;
    if (v && (!TitaParseRateWithUnit(*v, &bps, &err) || bps == 0))
    {
        Bad(key, err.empty() ? "a rate must be above 0" : err);
        return def;
    }
    return bps;
}

uint64_t
TitaSpec::TimeNs(const std::string& key, uint64_t def) const
{
    const std::string* v = Find(key);
    Time t = NanoSeconds(def);
    std::string err;
    if (v && !TitaParseTime(*v, "ns", &t, &err))
    {
        Bad(key, err);
        return def;
    }
    return static_cast<uint64_t>(t.GetNanoSeconds());
}

uint64_t
TitaSpec::Bytes(const std::string& key, uint64_t def) const
{
    const std::string* v = Find(key);
    uint64_t n = def;
    std::string err;
    if (v && !TitaParseBytes(*v, &n, &err))
    {
        Bad(key, err);
        return def;
    }
    return n;
}

bool
TitaSpec::Check(std::string* err) const
{
    if (m_error.empty())
    {
        for (const auto& [k, v] : m_kv)
        {
            if (m_asked.count(k) != 0)
            {
                continue;
            }
            std::string known;
            for (const auto& a : m_asked)
            {
                known += (known.empty() ? "" : ", ") + a;
            }
            m_error = m_option + "=" + m_kind + ": unknown key '" + k + "' (known: " + known + ")";
            break;
        }
    }
    if (m_error.empty())
    {
        return true;
    }
    *err = m_error;
    return false;
}

} // namespace ns3
