#include "tita-network-helper.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/names.h"
#include "ns3/simulator.h"
#include "ns3/trace-helper.h"
#include "ns3/uinteger.h"
#include "tita/wire/frame.h"
#include "tita/wire/headers.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaNetworkHelper");

TitaNetworkHelper::TitaNetworkHelper()
{
    m_nicFactory.SetTypeId("ns3::RdmaNicNetDevice");
    m_switchFactory.SetTypeId("ns3::TitaSwitchNode");
    m_channelFactory.SetTypeId("ns3::TitaChannel");
}

void
TitaNetworkHelper::SetNicAttribute(const std::string& name, const AttributeValue& value)
{
    m_nicFactory.Set(name, value);
}

void
TitaNetworkHelper::SetSwitchAttribute(const std::string& name, const AttributeValue& value)
{
    m_switchFactory.Set(name, value);
}

void
TitaNetworkHelper::SetChannelAttribute(const std::string& name, const AttributeValue& value)
{
    m_channelFactory.Set(name, value);
}

Ipv4Address
TitaNetworkHelper::HostAddress(uint32_t host)
{
    // As the HPCC simulator numbers its servers: 11.x.y.1.
    return Ipv4Address(0x0b000001u + ((host / 256) << 16) + ((host % 256) << 8));
}

uint32_t
TitaNetworkHelper::GetHostIndex(Ptr<const RdmaNicNetDevice> nic) const
{
    const uint32_t a = nic->GetIpv4().Get() - 0x0b000001u;
    return (a >> 16) * 256 + ((a >> 8) & 0xff);
}

bool
TitaNetworkHelper::SetIntOff(const std::string& which)
{
    for (const char* ok : {"", "all", "half", "tor", "agg", "core"})
    {
        if (which == ok)
        {
            m_intOff = which;
            return true;
        }
    }
    return false;
}

bool
TitaNetworkHelper::Build(const TitaTopology& topo, std::string* err)
{
    NS_ABORT_MSG_IF(!m_nodes.empty(), "TitaNetworkHelper::Build runs once");
    m_topo = topo;
    const auto& vs = m_topo.Vertices();
    const std::size_t nv = vs.size();
    m_nodes.assign(nv, nullptr);
    m_switchOf.assign(nv, nullptr);
    m_ports.assign(nv, {});
    m_nics.assign(m_topo.Hosts().size(), nullptr);

    std::map<int32_t, uint32_t> seenInTier;
    for (uint32_t v = 0; v < nv; ++v)
    {
        if (vs[v].kind == TitaTopology::Kind::kSwitch)
        {
            Ptr<TitaSwitchNode> sw = m_switchFactory.Create<TitaSwitchNode>();
            const uint32_t k = seenInTier[vs[v].tier]++;
            const bool intOff = m_intOff == "all" || (m_intOff == "half" && k % 2 == 0) ||
                                (m_intOff == "tor" && vs[v].tier == 1) ||
                                (m_intOff == "agg" && vs[v].tier == 2) ||
                                (m_intOff == "core" && vs[v].tier == 3);
            if (intOff)
            {
                sw->SetAttribute("Int", BooleanValue(false));
                ++m_intOffCount;
            }
            m_switchOf[v] = sw;
            m_switches.push_back(sw);
            m_nodes[v] = sw;
            if (m_names)
            {
                Names::Add(vs[v].name, sw);
            }
        }
    }
    for (uint32_t v = 0; v < nv; ++v)
    {
        if (vs[v].kind == TitaTopology::Kind::kHost)
        {
            const auto owner = static_cast<uint32_t>(vs[v].node);
            if (!m_nodes[owner])
            {
                m_nodes[owner] = CreateObject<Node>();
                if (m_names)
                {
                    Names::Add(vs[owner].name, m_nodes[owner]);
                }
            }
            m_nodes[v] = m_nodes[owner];
        }
    }

    // Links: one device per end, one channel each.
    const auto& links = m_topo.Links();
    m_channels.reserve(links.size());
    m_linkDevs.reserve(links.size());
    for (uint32_t i = 0; i < links.size(); ++i)
    {
        const auto& l = links[i];
        Ptr<TitaChannel> ch = m_channelFactory.Create<TitaChannel>();
        ch->SetAttribute("Delay", TimeValue(NanoSeconds(l.delayNs)));
        Ptr<TitaNetDevice> ends[2];
        const uint32_t v2[2] = {l.a, l.b};
        for (int e = 0; e < 2; ++e)
        {
            const uint32_t v = v2[e];
            if (vs[v].kind == TitaTopology::Kind::kSwitch)
            {
                Ptr<TitaSwitchNetDevice> d = CreateObject<TitaSwitchNetDevice>();
                d->SetAddress(Mac48Address::Allocate());
                d->SetDataRate(DataRate(l.rateBps));
                m_switchOf[v]->AddPort(d);
                ends[e] = d;
            }
            else
            {
                const int32_t h = m_topo.HostIndexOf(v);
                NS_ABORT_MSG_IF(m_nics[h], "host " << vs[v].name << " has more than one link");
                Ptr<RdmaNicNetDevice> d = m_nicFactory.Create<RdmaNicNetDevice>();
                d->SetAddress(Mac48Address::Allocate());
                d->SetDataRate(DataRate(l.rateBps));
                d->SetIpv4(HostAddress(h));
                m_nodes[v]->AddDevice(d);
                m_nics[h] = d;
                ends[e] = d;
            }
            m_ports[v].push_back({i, v2[1 - e]});
            ends[e]->Attach(ch);
        }
        m_channels.push_back(ch);
        m_linkDevs.emplace_back(ends[0], ends[1]);
    }
    for (uint32_t h = 0; h < m_nics.size(); ++h)
    {
        NS_ABORT_MSG_IF(!m_nics[h], "host " << vs[m_topo.Hosts()[h]].name << " has no link");
    }
    for (uint32_t v = 0; v < nv; ++v)
    {
        std::string why;
        if (m_switchOf[v] && !m_switchOf[v]->Setup(&why))
        {
            const std::string line = "switch " + vs[v].name + ": " + why;
            NS_ABORT_MSG_IF(!err, line);
            *err = line;
            return false;
        }
    }
    // A link's error rate (the topology file's last column, the HPCC artifact's
    // ERROR_RATE_PER_LINK): random loss where a switch sends into the link, so a
    // switch-to-switch link loses both ways, a host link towards the host only.
    for (uint32_t i = 0; i < links.size(); ++i)
    {
        if (links[i].errorRate <= 0)
        {
            continue;
        }
        for (const uint32_t v : {links[i].a, links[i].b})
        {
            if (vs[v].kind != TitaTopology::Kind::kSwitch)
            {
                continue;
            }
            for (uint16_t p = 0; p < m_ports[v].size(); ++p)
            {
                if (m_ports[v][p].link == i)
                {
                    tita::fabric::FaultConfig f;
                    f.drop_probability = links[i].errorRate;
                    m_switchOf[v]->SetFault(p, f);
                }
            }
        }
    }
    // Base RTTs count a full packet's store-and-forward per link.
    m_linkOut.assign(links.size(), 0);
    m_routePayloadBytes = m_nics.empty() ? 1024 : m_nics[0]->GetFullPayloadBytes();
    ComputeRoutes(m_routePayloadBytes);
    for (auto& nic : m_nics)
    {
        nic->SetAttribute("BaseRtt", TimeValue(NanoSeconds(m_maxBaseRttNs)));
        nic->GetEngine(); // the engine now, from the final attributes
    }
    NS_LOG_INFO("built " << m_topo.Describe() << ", max base RTT " << m_maxBaseRttNs << " ns");
    return true;
}

void
TitaNetworkHelper::ComputeRoutes(uint32_t payloadBytes)
{
    const auto& vs = m_topo.Vertices();
    const auto& links = m_topo.Links();
    const std::size_t nv = vs.size();
    const uint32_t nh = static_cast<uint32_t>(m_nics.size());
    m_route.assign(nv, {});
    m_groups.assign(nv, {});
    std::vector<std::map<std::vector<uint16_t>, int32_t>> groupIds(nv);
    for (uint32_t v = 0; v < nv; ++v)
    {
        if (vs[v].kind == TitaTopology::Kind::kSwitch)
        {
            m_route[v].assign(nh, -1);
        }
    }
    std::vector<int32_t> dist(nv);
    std::vector<uint64_t> delay(nv);
    std::vector<uint64_t> txDelay(nv);
    std::vector<uint32_t> queue;
    queue.reserve(nv);
    for (uint32_t h = 0; h < nh; ++h)
    {
        const uint32_t d = m_topo.Hosts()[h];
        std::fill(dist.begin(), dist.end(), -1);
        queue.clear();
        dist[d] = 0;
        delay[d] = 0;
        txDelay[d] = 0;
        queue.push_back(d);
        for (std::size_t i = 0; i < queue.size(); ++i)
        {
            const uint32_t u = queue[i];
            for (const Port& p : m_ports[u])
            {
                const uint32_t n = p.peer;
                if (dist[n] >= 0 || m_linkOut[p.link])
                {
                    continue;
                }
                const auto& l = links[p.link];
                dist[n] = dist[u] + 1;
                delay[n] = delay[u] + l.delayNs;
                txDelay[n] = txDelay[u] + uint64_t{payloadBytes} * 8'000'000'000ULL / l.rateBps;
                if (vs[n].kind == TitaTopology::Kind::kSwitch)
                {
                    queue.push_back(n); // packets never cross a host
                }
                else
                {
                    m_maxBaseRttNs = std::max(m_maxBaseRttNs, 2 * delay[n] + txDelay[n]);
                }
            }
        }
        for (uint32_t s : queue)
        {
            if (vs[s].kind != TitaTopology::Kind::kSwitch)
            {
                continue;
            }
            std::vector<uint16_t> group;
            for (uint16_t port = 0; port < m_ports[s].size(); ++port)
            {
                const uint32_t n = m_ports[s][port].peer;
                const bool toward = dist[n] == dist[s] - 1 && !m_linkOut[m_ports[s][port].link] &&
                                    (vs[n].kind == TitaTopology::Kind::kSwitch || n == d);
                if (toward)
                {
                    group.push_back(port);
                }
            }
            if (group.empty())
            {
                continue;
            }
            // Parallel links to one neighbour go apart in the group (the first link
            // to each neighbour, then the second, ...), so that the next ECMP
            // choice, a Hash Dodging step, always leads to another neighbour.
            std::map<uint32_t, uint32_t> seen;
            std::vector<std::pair<uint32_t, uint16_t>> ranked;
            for (uint16_t port : group)
            {
                ranked.emplace_back(seen[m_ports[s][port].peer]++, port);
            }
            std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) {
                return x.first < y.first;
            });
            for (std::size_t i = 0; i < group.size(); ++i)
            {
                group[i] = ranked[i].second;
            }
            auto [it, fresh] = groupIds[s].try_emplace(group, static_cast<int32_t>(m_groups[s].size()));
            if (fresh)
            {
                m_groups[s].push_back(group);
            }
            m_route[s][h] = it->second;
            m_switchOf[s]->AddRoute(HostAddress(h), group);
        }
    }
}

void
TitaNetworkHelper::WithdrawLink(uint32_t link, Time at, Time converge)
{
    NS_ABORT_MSG_IF(link >= m_linkOut.size(), "WithdrawLink: no link " << link << " (Build first)");
    const auto& l = m_topo.Links()[link];
    for (uint32_t v : {l.a, l.b})
    {
        if (Ptr<TitaSwitchNode> sw = m_switchOf[v])
        {
            for (uint16_t port = 0; port < m_ports[v].size(); ++port)
            {
                if (m_ports[v][port].link == link)
                {
                    Simulator::Schedule(at, &TitaSwitchNode::SetPortUp, sw, port, false);
                }
            }
        }
    }
    Simulator::Schedule(at + converge, &TitaNetworkHelper::Reconverge, this, link);
}

void
TitaNetworkHelper::Reconverge(uint32_t link)
{
    m_linkOut[link] = 1;
    for (const auto& sw : m_switches)
    {
        sw->ClearRoutes();
    }
    ComputeRoutes(m_routePayloadBytes);
}

TitaNetworkHelper::PathInfo
TitaNetworkHelper::GetPath(uint32_t src, uint32_t dst) const
{
    PathInfo info;
    const auto& links = m_topo.Links();
    uint32_t v = m_topo.Hosts()[src];
    const uint32_t target = m_topo.Hosts()[dst];
    info.vertices.push_back(v);
    info.bottleneckBps = UINT64_MAX;
    for (int guard = 0; v != target && guard < 64; ++guard)
    {
        const Port* next = nullptr;
        if (m_topo.Vertices()[v].kind == TitaTopology::Kind::kHost)
        {
            next = &m_ports[v].front();
        }
        else
        {
            const int32_t g = m_route[v][dst];
            if (g < 0)
            {
                return PathInfo{};
            }
            next = &m_ports[v][m_groups[v][g].front()];
        }
        const auto& l = links[next->link];
        info.links++;
        info.delayNs += l.delayNs;
        info.bottleneckBps = std::min(info.bottleneckBps, l.rateBps);
        info.rates.push_back(l.rateBps);
        v = next->peer;
        info.vertices.push_back(v);
    }
    if (v != target)
    {
        return PathInfo{};
    }
    return info;
}

std::vector<uint32_t>
TitaNetworkHelper::TracePath(uint32_t src,
                             uint32_t dst,
                             uint16_t udpSport,
                             uint8_t dscp,
                             std::vector<uint16_t>* ports) const
{
    ::tita::fabric::FlowKey key;
    const auto s = ::tita::wire::Gid::from_ipv4(HostAddress(src).Get());
    const auto d = ::tita::wire::Gid::from_ipv4(HostAddress(dst).Get());
    std::memcpy(key.src, s.raw, 16);
    std::memcpy(key.dst, d.raw, 16);
    key.sport = udpSport;
    key.dport = ::tita::wire::kRoceUdpPort;
    key.proto = 17;
    key.ip_version = 4;
    std::vector<uint32_t> path{m_topo.Hosts()[src]};
    uint32_t v = m_ports[path.back()].front().peer;
    const uint32_t target = m_topo.Hosts()[dst];
    for (int guard = 0; guard < 64; ++guard)
    {
        path.push_back(v);
        if (v == target)
        {
            return path;
        }
        if (!m_switchOf[v])
        {
            return {};
        }
        const int port = m_switchOf[v]->GetCore().forward_port(key, dscp);
        if (port < 0)
        {
            return {};
        }
        if (ports)
        {
            ports->push_back(static_cast<uint16_t>(port));
        }
        v = m_ports[v][port].peer;
    }
    return {};
}

uint64_t
TitaNetworkHelper::GetBaseRttNs(uint32_t src, uint32_t dst, uint32_t payloadBytes) const
{
    const PathInfo p = GetPath(src, dst);
    uint64_t tx = 0;
    for (uint64_t r : p.rates)
    {
        tx += uint64_t{payloadBytes} * 8'000'000'000ULL / r;
    }
    return 2 * p.delayNs + tx;
}

std::pair<Ptr<TitaNetDevice>, Ptr<TitaNetDevice>>
TitaNetworkHelper::GetLinkDevices(uint32_t link) const
{
    return m_linkDevs[link];
}

void
TitaNetworkHelper::EnablePcap(const std::string& prefix, uint32_t host)
{
    PcapHelper pcap;
    Ptr<PcapFileWrapper> file = pcap.CreateFile(prefix + "-" + std::to_string(host) + ".pcap",
                                                std::ios::out,
                                                PcapHelper::DLT_EN10MB);
    pcap.HookDefaultSink<TitaNetDevice>(m_nics[host], "PromiscSniffer", file);
}

void
TitaNetworkHelper::EnableSwitchPcap(const std::string& prefix, uint32_t vertex)
{
    Ptr<TitaSwitchNode> sw = m_switchOf[vertex];
    NS_ABORT_MSG_IF(!sw, "vertex " << vertex << " is not a switch");
    PcapHelper pcap;
    for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
    {
        Ptr<PcapFileWrapper> file =
            pcap.CreateFile(prefix + "-" + m_topo.Vertices()[vertex].name + "-" + std::to_string(p) + ".pcap",
                            std::ios::out,
                            PcapHelper::DLT_EN10MB);
        pcap.HookDefaultSink<TitaNetDevice>(sw->GetPort(p), "PromiscSniffer", file);
    }
}

void
TitaNetworkHelper::SetLinkDown(uint32_t link, Time at, Time rerouteAfter)
{
    Ptr<TitaChannel> ch = m_channels[link];
    Simulator::Schedule(at, &TitaChannel::SetLinkUp, ch, false);
    if (rerouteAfter.IsNegative())
    {
        return;
    }
    const auto& l = m_topo.Links()[link];
    for (uint32_t v : {l.a, l.b})
    {
        Ptr<TitaSwitchNode> sw = m_switchOf[v];
        if (!sw)
        {
            continue;
        }
        for (uint16_t port = 0; port < m_ports[v].size(); ++port)
        {
            if (m_ports[v][port].link == link)
            {
                Simulator::Schedule(at + rerouteAfter, &TitaSwitchNode::SetPortUp, sw, port, false);
            }
        }
    }
}

} // namespace ns3
