#include "tita-partition.h"

#include "ns3/node-list.h"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace ns3
{

namespace
{

uint32_t
Find(std::vector<uint32_t>& parent, uint32_t x)
{
    while (parent[x] != x)
    {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

void
Union(std::vector<uint32_t>& parent, uint32_t a, uint32_t b)
{
    a = Find(parent, a);
    b = Find(parent, b);
    if (a != b)
    {
        parent[std::max(a, b)] = std::min(a, b);
    }
}

} // namespace

TitaPartition
TitaMakePartition(const TitaNetworkHelper& net)
{
    const TitaTopology& topo = net.GetTopology();
    const auto& vs = topo.Vertices();
    const auto& links = topo.Links();
    const uint32_t nNodes = NodeList::GetNNodes();
    std::vector<uint32_t> nodeOf(vs.size());
    for (uint32_t v = 0; v < vs.size(); ++v)
    {
        nodeOf[v] = net.GetNodeOfVertex(v)->GetId();
    }
    std::vector<uint32_t> parent(nNodes);
    std::iota(parent.begin(), parent.end(), 0);
    // Hosts join the switch of their first fabric link (then, for nodes with
    // only NVLink-like links, their first link).
    std::vector<bool> placed(nNodes, false);
    std::vector<bool> attach(links.size(), false);
    for (int pass = 0; pass < 2; ++pass)
    {
        for (uint32_t i = 0; i < links.size(); ++i)
        {
            const auto& l = links[i];
            for (int e = 0; e < 2; ++e)
            {
                const uint32_t h = e == 0 ? l.a : l.b;
                const uint32_t s = e == 0 ? l.b : l.a;
                if (vs[h].kind != TitaTopology::Kind::kHost || vs[s].kind != TitaTopology::Kind::kSwitch ||
                    placed[nodeOf[h]] || (pass == 0 && vs[h].nvlink))
                {
                    continue;
                }
                placed[nodeOf[h]] = true;
                attach[i] = true;
                Union(parent, nodeOf[h], nodeOf[s]);
            }
        }
    }
    TitaPartition p;
    for (uint32_t i = 0; i < links.size(); ++i)
    {
        const auto& l = links[i];
        if (!attach[i] && l.delayNs == 0 && Find(parent, nodeOf[l.a]) != Find(parent, nodeOf[l.b]))
        {
            if (p.zeroDelayLinks++ == 0)
            {
                p.zeroDelayExample = vs[l.a].name + "-" + vs[l.b].name;
            }
            Union(parent, nodeOf[l.a], nodeOf[l.b]);
        }
    }
    // LPs numbered in the order of their smallest node id.
    std::vector<uint32_t> lpOfRoot(nNodes, UINT32_MAX);
    p.lpOfNode.assign(nNodes, 0);
    for (uint32_t n = 0; n < nNodes; ++n)
    {
        const uint32_t r = Find(parent, n);
        if (lpOfRoot[r] == UINT32_MAX)
        {
            lpOfRoot[r] = p.nLps++;
        }
        p.lpOfNode[n] = lpOfRoot[r];
    }
    for (uint32_t i = 0; i < links.size(); ++i)
    {
        const auto& l = links[i];
        net.GetChannel(i)->LearnContexts();
        if (p.lpOfNode[nodeOf[l.a]] != p.lpOfNode[nodeOf[l.b]])
        {
            ++p.cutLinks;
            p.lookaheadNs = p.lookaheadNs == 0 ? l.delayNs : std::min(p.lookaheadNs, l.delayNs);
        }
    }
    return p;
}

std::string
TitaPartition::Describe() const
{
    std::ostringstream o;
    o << nLps << " logical processes, " << cutLinks << " links cut";
    if (cutLinks > 0)
    {
        o << ", lookahead " << lookaheadNs << " ns";
    }
    if (zeroDelayLinks > 0)
    {
        o << "; " << zeroDelayLinks << " links without delay (" << zeroDelayExample
          << (zeroDelayLinks > 1 ? ", ..." : "") << ") cannot be cut: their ends share one logical process";
    }
    return o.str();
}

} // namespace ns3
