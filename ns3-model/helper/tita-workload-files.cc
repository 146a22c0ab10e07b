// The workload's input files (flow-size CDFs, the HPCC simulator's flow lists)
// and the CDF's sampling: readers of untrusted text, apart from the scheduling
// code so that the fuzzer (tests/fuzz/sim_fuzz.cc) links them with ns-3's core
// and network libraries alone.
#include "tita-units.h"
#include "tita-workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>

namespace ns3
{

namespace
{

// Far above any file tita-sim runs; a bound so that a bad count gives a message,
// not a huge allocation.
constexpr uint64_t kMaxFlows = 100'000'000;
constexpr double kMaxFlowBytes = 1e15;

} // namespace

bool
TitaFlowSizeCdf::Load(const std::string& path, std::string* err)
{
    std::ifstream in(path);
    if (!in)
    {
        *err = "cannot open " + path;
        return false;
    }
    return Read(in, path, err);
}

bool
TitaFlowSizeCdf::Read(std::istream& in, const std::string& name, std::string* err)
{
    TitaLineReader lines(in, name);
    std::vector<std::string> w;
    m_size.clear();
    m_cdf.clear();
    std::string why;
    while (lines.Next(&w))
    {
        double size = 0;
        double pct = 0;
        if (w.size() != 2 || !TitaParseReal(w[0], &size, &why) || !TitaParseReal(w[1], &pct, &why))
        {
            return lines.Fail(err, "want `size_bytes cumulative_percent`");
        }
        if (size < 0 || size > kMaxFlowBytes || pct < 0 || pct > 100)
        {
            return lines.Fail(err, "size must be 0 to 1e15 bytes and the percentage 0 to 100");
        }
        if (!m_cdf.empty() && (pct < m_cdf.back() * 100 || size < m_size.back()))
        {
            return lines.Fail(err, "sizes and percentages must not decrease");
        }
        m_size.push_back(size);
        m_cdf.push_back(pct / 100.0);
    }
    if (m_size.size() < 2 || std::abs(m_cdf.back() - 1.0) > 1e-9 || m_size.back() < 1)
    {
        return lines.Fail(err, "need at least two points, the last at 100 percent and at least 1 byte");
    }
    if (MeanBytes() < 1)
    {
        return lines.Fail(err, "the mean flow size is below 1 byte");  // Poisson arrivals would never end
    }
    return true;
}

uint64_t
TitaFlowSizeCdf::Sample(double u) const
{
    // Every flow has at least one byte, however the file starts (a first point
    // of "0 89" puts 89 % of the mass at size 0).
    const auto it = std::upper_bound(m_cdf.begin(), m_cdf.end(), u);
    if (it == m_cdf.begin())
    {
        return std::max<uint64_t>(1, static_cast<uint64_t>(m_size.front()));
    }
    if (it == m_cdf.end())
    {
        return std::max<uint64_t>(1, static_cast<uint64_t>(m_size.back()));
    }
    const std::size_t i = static_cast<std::size_t>(it - m_cdf.begin());
    const double c0 = m_cdf[i - 1];
    const double c1 = m_cdf[i];
    const double s = m_size[i - 1] + (m_size[i] - m_size[i - 1]) * (u - c0) / (c1 - c0);
    return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(s)));
}

double
TitaFlowSizeCdf::MeanBytes() const
{
    double mean = 0;
    for (std::size_t i = 1; i < m_size.size(); ++i)
    {
        mean += (m_size[i] + m_size[i - 1]) / 2 * (m_cdf[i] - m_cdf[i - 1]);
    }
    return mean;
}

bool
TitaWorkload::ReadHpccFlows(const std::string& path,
                            const std::function<int32_t(uint32_t)>& hostOfNode,
                            std::vector<TitaFlowSpec>* out,
                            std::string* err)
{
    std::ifstream in(path);
    if (!in)
    {
        *err = "cannot open " + path;
        return false;
    }
    return ReadHpccFlows(in, path, hostOfNode, out, err);
}

bool
TitaWorkload::ReadHpccFlows(std::istream& in,
                            const std::string& name,
                            const std::function<int32_t(uint32_t)>& hostOfNode,
                            std::vector<TitaFlowSpec>* out,
                            std::string* err)
{
    TitaLineReader lines(in, name);
    std::vector<std::string> w;
    uint64_t n = 0;
    std::string why;
    if (!lines.Next(&w) || w.size() != 1 || !TitaParseCount(w[0], &n, &why) || n > kMaxFlows)
    {
        return lines.Fail(err, "the first line must be the number of flows (at most 1e8)");
    }
    out->clear();
    for (uint64_t i = 0; i < n; ++i)
    {
        if (!lines.Next(&w) || w.size() != 6)
        {
            return lines.Fail(err, "flow " + std::to_string(i) + " of " + std::to_string(n) +
                        ": want `src dst priority dport size_bytes start_seconds`");
        }
        uint64_t src = 0;
        uint64_t dst = 0;
        uint64_t pg = 0;
        uint64_t dport = 0;
        uint64_t size = 0;
        double start = 0;
        if (!TitaParseCount(w[0], &src, &why) || !TitaParseCount(w[1], &dst, &why) ||
            !TitaParseCount(w[2], &pg, &why) || !TitaParseCount(w[3], &dport, &why) ||
            !TitaParseCount(w[4], &size, &why) || !TitaParseReal(w[5], &start, &why))
        {
            return lines.Fail(err, why);
        }
        if (pg > 7 || dport > 65535 || size == 0 || size > kMaxFlowBytes || start < 0 || start > 1e6)
        {
            return lines.Fail(err, "priority 0 to 7, dport 0 to 65535, size 1 to 1e15 bytes, start 0 to 1e6 s");
        }
        const int32_t s = src <= UINT32_MAX ? hostOfNode(static_cast<uint32_t>(src)) : -1;
        const int32_t d = dst <= UINT32_MAX ? hostOfNode(static_cast<uint32_t>(dst)) : -1;
        if (s < 0 || d < 0 || s == d)
        {
            return lines.Fail(err, "src and dst must be two different hosts");
        }
        out->push_back({static_cast<uint32_t>(s), static_cast<uint32_t>(d), size, Seconds(start)});
    }
    if (lines.Next(&w))
    {
        return lines.Fail(err, "more lines than the " + std::to_string(n) + " flows the first line announces");
    }
    std::stable_sort(out->begin(), out->end(), [](const TitaFlowSpec& a, const TitaFlowSpec& b) {
        return a.start < b.start;
    });
    return true;
}

} // namespace ns3
