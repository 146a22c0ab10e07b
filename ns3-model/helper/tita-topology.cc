#include "tita-topology.h"

#include "tita-units.h"

#include <cmath>
#include <fstream>
#include <sstream>

namespace ns3
{

uint32_t
TitaTopology::AddHost(const std::string& name)
{
    const auto v = static_cast<uint32_t>(m_vertices.size());
    Vertex x;
    x.kind = Kind::kHost;
    x.name = name;
    x.node = static_cast<int32_t>(v);
    m_vertices.push_back(x);
    m_hostIndex.push_back(static_cast<int32_t>(m_hosts.size()));
    m_hosts.push_back(v);
    return v;
}

uint32_t
TitaTopology::AddSwitch(const std::string& name, int32_t tier)
{
    const auto v = static_cast<uint32_t>(m_vertices.size());
    Vertex x;
    x.kind = Kind::kSwitch;
    x.name = name;
    x.node = static_cast<int32_t>(v);
    x.tier = tier;
    m_vertices.push_back(x);
    m_hostIndex.push_back(-1);
    return v;
}

void
TitaTopology::AddLink(uint32_t a, uint32_t b, uint64_t rateBps, uint64_t delayNs, double errorRate)
{
    m_links.push_back({a, b, rateBps, delayNs, errorRate});
}

std::string
TitaTopology::Describe() const
{
    std::ostringstream os;
    os << m_hosts.size() << " hosts, " << GetNSwitches() << " switches, " << m_links.size() << " links";
    return os.str();
}


namespace
{
// Far above any data-centre topology ns-3 can run; a bound so that a bad file
// gives a message instead of a huge allocation.
constexpr uint32_t kMaxNodes = 1'000'000;
} // namespace

bool
TitaTopology::ReadHpcc(const std::string& path, TitaTopology* out, std::string* err)
{
    std::ifstream in(path);
    if (!in)
    {
        *err = "cannot open " + path;
        return false;
    }
    return ReadHpcc(in, path, out, err);
}

bool
TitaTopology::ReadHpcc(std::istream& in, const std::string& name, TitaTopology* out, std::string* err)
{
    TitaLineReader lines(in, name);
    std::vector<std::string> w;
    uint64_t nodes = 0;
    uint64_t switches = 0;
    uint64_t links = 0;
    std::string why;
    if (!lines.Next(&w) || w.size() != 3 || !TitaParseCount(w[0], &nodes, &why) ||
        !TitaParseCount(w[1], &switches, &why) || !TitaParseCount(w[2], &links, &why))
    {
        return lines.Fail(err, "the first line must be `nodes switches links`");
    }
    if (switches > nodes || nodes > kMaxNodes || links > kMaxNodes)
    {
        return lines.Fail(err, "at most " + std::to_string(kMaxNodes) + " nodes and links, and no more switches than nodes");
    }
    std::vector<bool> isSwitch(nodes, false);
    if (switches > 0)
    {
        if (!lines.Next(&w) || w.size() != switches)
        {
            return lines.Fail(err, "the second line must list the " + std::to_string(switches) + " switch ids");
        }
        for (const std::string& id : w)
        {
            uint64_t v = 0;
            if (!TitaParseCount(id, &v, &why) || v >= nodes || isSwitch[v])
            {
                return lines.Fail(err, "switch id '" + id + "' is not a node id (0 to " + std::to_string(nodes - 1) +
                            ") listed once");
            }
            isSwitch[v] = true;
        }
    }
    TitaTopology t;
    for (uint32_t i = 0; i < nodes; ++i)
    {
        if (isSwitch[i])
        {
            t.AddSwitch("sw" + std::to_string(i), 0);
        }
        else
        {
            t.AddHost("host" + std::to_string(i));
        }
    }
    for (uint64_t i = 0; i < links; ++i)
    {
        if (!lines.Next(&w) || w.size() != 5)
        {
            return lines.Fail(err, "link " + std::to_string(i) + " of " + std::to_string(links) +
                        ": want `src dst rate delay error_rate`");
        }
        uint64_t a = 0;
        uint64_t b = 0;
        uint64_t bps = 0;
        Time delay;
        double errorRate = 0;
        if (!TitaParseCount(w[0], &a, &why) || !TitaParseCount(w[1], &b, &why) || a >= nodes || b >= nodes ||
            a == b)
        {
            return lines.Fail(err, "link endpoints '" + w[0] + " " + w[1] + "' must be two node ids below " +
                        std::to_string(nodes));
        }
        if (!TitaParseRateWithUnit(w[2], &bps, &why) || !TitaParseTime(w[3], "ns", &delay, &why) ||
            !TitaParseReal(w[4], &errorRate, &why))
        {
            return lines.Fail(err, why);
        }
        if (bps == 0 || errorRate < 0 || errorRate > 1)
        {
            return lines.Fail(err, "rate must be above 0 and error_rate in [0, 1]");
        }
        t.AddLink(static_cast<uint32_t>(a),
                  static_cast<uint32_t>(b),
                  bps,
                  static_cast<uint64_t>(delay.GetNanoSeconds()),
                  errorRate);
    }
    if (lines.Next(&w))
    {
        return lines.Fail(err, "more lines than the " + std::to_string(links) + " links the first line announces");
    }
    // Tiers from the distance to the nearest host: ToR 1, aggregation 2, core 3.
    std::vector<int32_t> dist(nodes, -1);
    std::vector<uint32_t> q;
    for (uint32_t h : t.m_hosts)
    {
        dist[h] = 0;
        q.push_back(h);
    }
    std::vector<std::vector<uint32_t>> adj(nodes);
    for (const auto& l : t.m_links)
    {
        adj[l.a].push_back(l.b);
        adj[l.b].push_back(l.a);
    }
    for (std::size_t i = 0; i < q.size(); ++i)
    {
        for (uint32_t n : adj[q[i]])
        {
            if (dist[n] < 0)
            {
                dist[n] = dist[q[i]] + 1;
                q.push_back(n);
            }
        }
    }
    for (uint32_t v = 0; v < nodes; ++v)
    {
        if (isSwitch[v])
        {
            t.m_vertices[v].tier = dist[v];
        }
    }
    *out = std::move(t);
    return true;
}

TitaTopology
TitaTopology::FatTree(const FatTreeParams& in)
{
    FatTreeParams p = in;
    if (p.oversubscription > 0)
    {
        p.hostsPerTor = static_cast<uint32_t>(std::llround(
            p.oversubscription * p.aggsPerPod * static_cast<double>(p.torAggRateBps) / p.hostRateBps));
    }
    const uint32_t g = p.gpusPerServer;
    TitaTopology t;
    std::vector<uint32_t> cores;
    for (uint32_t c = 0; c < p.aggsPerPod * p.coresPerAgg; ++c)
    {
        cores.push_back(t.AddSwitch("cluster-core" + std::to_string(c), 3));
    }
    for (uint32_t pod = 0; pod < p.pods; ++pod)
    {
        const std::string pn = "pod" + std::to_string(pod);
        std::vector<uint32_t> aggs;
        for (uint32_t a = 0; a < p.aggsPerPod; ++a)
        {
            const uint32_t agg = t.AddSwitch(pn + "-agg" + std::to_string(a), 2);
            aggs.push_back(agg);
            for (uint32_t c = 0; c < p.coresPerAgg; ++c)
            {
                t.AddLink(agg, cores[a * p.coresPerAgg + c], p.aggCoreRateBps, p.linkDelayNs);
            }
        }
        for (uint32_t b = 0; b < p.torsPerPod; ++b)
        {
            const uint32_t block = pod * p.torsPerPod + b;
            const std::string bn = pn + "-block" + std::to_string(b);
            const uint32_t tor = t.AddSwitch(bn + "-tor", 1);
            t.m_vertices[tor].block = static_cast<int32_t>(block);
            for (uint32_t a : aggs)
            {
                t.AddLink(tor, a, p.torAggRateBps, p.linkDelayNs);
            }
            uint32_t nvswitch = 0;
            for (uint32_t h = 0; h < p.hostsPerTor; ++h)
            {
                const uint32_t host = t.AddHost(bn + "-host" + std::to_string(h));
                t.m_vertices[host].block = static_cast<int32_t>(block);
                t.AddLink(host, tor, p.hostRateBps, p.linkDelayNs);
                if (g == 0)
                {
                    continue;
                }
                // GPU servers: host h of this ToR is GPU h % g of the ToR's server h / g.
                const uint32_t server = (block * p.hostsPerTor + h) / g;
                const uint32_t gpu = h % g;
                Vertex& v = t.m_vertices[host];
                v.server = static_cast<int32_t>(server);
                v.gpu = static_cast<int32_t>(gpu);
                t.m_railHost.push_back(t.m_hostIndex[host]);
                t.m_nvlinkHost.push_back(-1);
                if (p.nvlink)
                {
                    if (gpu == 0)
                    {
                        nvswitch = t.AddSwitch(bn + "-server" + std::to_string(h / g) + "-nvswitch", 0);
                    }
                    const uint32_t nv = t.AddHost(bn + "-host" + std::to_string(h) + "-nvlink");
                    Vertex& w = t.m_vertices[nv];
                    w.node = static_cast<int32_t>(host); // same GPU, same ns-3 node
                    w.server = static_cast<int32_t>(server);
                    w.gpu = static_cast<int32_t>(gpu);
                    w.block = static_cast<int32_t>(block);
                    w.nvlink = true;
                    t.m_nvlinkHost.back() = t.m_hostIndex[nv];
                    t.AddLink(nv, nvswitch, p.nvlinkRateBps, p.nvlinkDelayNs);
                }
            }
        }
    }
    if (g > 0)
    {
        t.m_servers = static_cast<uint32_t>(t.m_railHost.size()) / g;
        t.m_gpusPerServer = g;
    }
    return t;
}

TitaTopology
TitaTopology::MultiRail(const MultiRailParams& p)
{
    TitaTopology t;
    t.m_servers = p.blocks * p.serversPerBlock;
    t.m_gpusPerServer = p.gpusPerServer;
    t.m_railHost.assign(t.m_servers * p.gpusPerServer, -1);
    t.m_nvlinkHost.assign(t.m_servers * p.gpusPerServer, -1);
    std::vector<uint32_t> spines;
    for (uint32_t s = 0; s < p.spines; ++s)
    {
        spines.push_back(t.AddSwitch("cluster-spine" + std::to_string(s), 3));
    }
    const uint32_t ports = p.dualPort ? 2 : 1;
    if (p.dualPort)
    {
        t.m_port1Host.assign(t.m_servers * p.gpusPerServer, -1);
    }
    for (uint32_t b = 0; b < p.blocks; ++b)
    {
        const std::string bn = "block" + std::to_string(b);
        std::vector<uint32_t> tors; // rail r, port q: tors[r * ports + q]
        for (uint32_t r = 0; r < p.gpusPerServer; ++r)
        {
            for (uint32_t q = 0; q < ports; ++q)
            {
                const uint32_t tor = t.AddSwitch(
                    bn + "-rail" + std::to_string(r) + "-tor" + (p.dualPort ? std::to_string(q) : std::string()),
                    1);
                t.m_vertices[tor].block = static_cast<int32_t>(b);
                t.m_vertices[tor].gpu = static_cast<int32_t>(r);
                tors.push_back(tor);
                for (uint32_t s : spines)
                {
                    for (uint32_t k = 0; k < p.linksPerSpine; ++k)
                    {
                        t.AddLink(tor, s, p.fabricRateBps, p.linkDelayNs);
                    }
                }
            }
        }
        for (uint32_t sv = 0; sv < p.serversPerBlock; ++sv)
        {
            const uint32_t server = b * p.serversPerBlock + sv;
            const std::string sn = bn + "-server" + std::to_string(sv);
            uint32_t nvswitch = 0;
            if (p.nvlink)
            {
                nvswitch = t.AddSwitch(sn + "-nvswitch", 0);
            }
            for (uint32_t g = 0; g < p.gpusPerServer; ++g)
            {
                const std::string gn = sn + "-gpu" + std::to_string(g);
                const uint32_t nic = t.AddHost(gn + "-nic");
                Vertex& v = t.m_vertices[nic];
                v.server = static_cast<int32_t>(server);
                v.gpu = static_cast<int32_t>(g);
                v.block = static_cast<int32_t>(b);
                t.m_railHost[server * p.gpusPerServer + g] = t.m_hostIndex[nic];
                t.AddLink(nic, tors[g * ports], p.nicRateBps, p.linkDelayNs);
                if (p.dualPort)
                {
                    // Port 1: a host of its own on the GPU's node, on the rail's other ToR.
                    const uint32_t p1 = t.AddHost(gn + "-nic-port1");
                    Vertex& w = t.m_vertices[p1];
                    w.node = static_cast<int32_t>(nic);
                    w.server = static_cast<int32_t>(server);
                    w.gpu = static_cast<int32_t>(g);
                    w.block = static_cast<int32_t>(b);
                    t.m_port1Host[server * p.gpusPerServer + g] = t.m_hostIndex[p1];
                    t.AddLink(p1, tors[g * ports + 1], p.nicRateBps, p.linkDelayNs);
                }
                if (p.nvlink)
                {
                    const uint32_t nv = t.AddHost(gn + "-nvlink");
                    Vertex& w = t.m_vertices[nv];
                    w.node = static_cast<int32_t>(nic); // same GPU, same ns-3 node
                    w.server = static_cast<int32_t>(server);
                    w.gpu = static_cast<int32_t>(g);
                    w.block = static_cast<int32_t>(b);
                    w.nvlink = true;
                    t.m_nvlinkHost[server * p.gpusPerServer + g] = t.m_hostIndex[nv];
                    t.AddLink(nv, nvswitch, p.nvlinkRateBps, p.nvlinkDelayNs);
                }
            }
        }
    }
    return t;
}

TitaTopology
TitaTopology::Star(uint32_t hosts, uint64_t rateBps, uint64_t delayNs)
{
    TitaTopology t;
    const uint32_t sw = t.AddSwitch("tor", 1);
    for (uint32_t i = 0; i < hosts; ++i)
    {
        t.AddLink(t.AddHost("host" + std::to_string(i)), sw, rateBps, delayNs);
    }
    return t;
}

int32_t
TitaTopology::RailHost(uint32_t server, uint32_t gpu) const
{
    const std::size_t i = static_cast<std::size_t>(server) * m_gpusPerServer + gpu;
    return i < m_railHost.size() ? m_railHost[i] : -1;
}

int32_t
TitaTopology::PortHost(uint32_t server, uint32_t gpu, uint32_t port) const
{
    if (port == 0)
    {
        return RailHost(server, gpu);
    }
    const std::size_t i = static_cast<std::size_t>(server) * m_gpusPerServer + gpu;
    return port == 1 && i < m_port1Host.size() ? m_port1Host[i] : -1;
}

int32_t
TitaTopology::NvlinkHost(uint32_t server, uint32_t gpu) const
{
    const std::size_t i = static_cast<std::size_t>(server) * m_gpusPerServer + gpu;
    return i < m_nvlinkHost.size() ? m_nvlinkHost[i] : -1;
}

} // namespace ns3
