#include "tita-ranks.h"

#include <algorithm>
#include <unordered_map>

namespace ns3
{

namespace
{

std::vector<TitaCollective::Rank>
RailRanks(const TitaTopology& topo, bool railMajor)
{
    std::vector<TitaCollective::Rank> ranks;
    const uint32_t g = topo.GetGpusPerServer();
    const uint32_t servers = topo.GetNServers();
    for (uint32_t a = 0; a < (railMajor ? g : servers); ++a)
    {
        for (uint32_t b = 0; b < (railMajor ? servers : g); ++b)
        {
            const uint32_t server = railMajor ? b : a;
            const uint32_t gpu = railMajor ? a : b;
            ranks.push_back({static_cast<uint32_t>(topo.RailHost(server, gpu)),
                             static_cast<int32_t>(server),
                             static_cast<int32_t>(gpu)});
        }
    }
    return ranks;
}

// Hosts grouped by the switch on their (first) link; one group when !spread.
std::vector<TitaCollective::Rank>
HostRanks(const TitaTopology& topo, bool spread)
{
    std::vector<std::vector<uint32_t>> byTor;
    std::unordered_map<uint32_t, std::size_t> torGroup;
    const auto nHosts = static_cast<uint32_t>(topo.Hosts().size());
    for (uint32_t h = 0; h < nHosts; ++h)
    {
        const uint32_t v = topo.Hosts()[h];
        uint32_t tor = v;
        for (const auto& l : topo.Links())
        {
            if (l.a == v || l.b == v)
            {
                tor = l.a == v ? l.b : l.a;
                break;
            }
        }
        const std::size_t g = spread ? torGroup.emplace(tor, torGroup.size()).first->second : 0;
        byTor.resize(std::max(byTor.size(), g + 1));
        byTor[g].push_back(h);
    }
    std::vector<TitaCollective::Rank> ranks;
    for (std::size_t i = 0; ranks.size() < nHosts; ++i)
    {
        for (const auto& g : byTor)
        {
            if (i < g.size())
            {
                ranks.push_back({g[i], -1, -1});
            }
        }
    }
    return ranks;
}

} // namespace

bool
TitaCollectiveRanks(const TitaTopology& topo,
                    const TitaSpec& sp,
                    std::vector<TitaCollective::Rank>* out,
                    std::string* err)
{
    const bool multiRail = topo.GetNServers() > 0;
    std::vector<TitaCollective::Rank> ranks;
    if (multiRail)
    {
        ranks = RailRanks(topo, sp.Str("order", "rail") == "rail");
    }
    else
    {
        const std::string order = sp.Str("order", "host");
        if (order != "host" && order != "spread")
        {
            sp.Bad("order", "'" + order + "': expected host or spread");
        }
        ranks = HostRanks(topo, order != "host");
    }
    if (sp.Str("ranks", "all") != "all")
    {
        const std::size_t want = sp.Count("ranks", 0, 2);
        if (multiRail && sp.Str("order", "rail") == "rail")
        {
            // The first want/gpus servers, all their GPUs.
            const uint32_t g = topo.GetGpusPerServer();
            const auto servers = static_cast<uint32_t>((want + g - 1) / g);
            std::erase_if(ranks, [servers](const TitaCollective::Rank& r) {
                return static_cast<uint32_t>(r.server) >= servers;
            });
        }
        if (ranks.size() > want)
        {
            ranks.resize(want);
        }
    }
    if (ranks.size() < 2)
    {
        sp.Fail("needs at least two ranks");
    }
    if (!sp.GetError().empty())
    {
        *err = sp.GetError();
        return false;
    }
    *out = std::move(ranks);
    return true;
}

} // namespace ns3
