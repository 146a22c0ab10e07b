#include "tita-link-faults.h"

#include "tita-spec.h"
#include "tita-units.h"

#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

namespace
{

bool
IsSwitch(const TitaTopology& topo, uint32_t v)
{
    return topo.Vertices()[v].kind == TitaTopology::Kind::kSwitch;
}

// The link `which` names (core or an index); false with a message.
bool
FaultLink(const TitaTopology& topo, const std::string& item, const std::string& which, uint32_t* link,
          std::string* err)
{
    const auto& links = topo.Links();
    if (which == "core")
    {
        const int64_t l = TitaCoreLink(topo);
        if (l < 0)
        {
            *err = "--fault=" + item + ": the topology has no link between two switches";
            return false;
        }
        *link = static_cast<uint32_t>(l);
        return true;
    }
    uint64_t l = 0;
    std::string parseErr;
    if (!TitaParseCount(which, &l, &parseErr) || l >= links.size())
    {
        *err = "--fault=" + item + ": link '" + which + "' is not core or a link index below " +
               std::to_string(links.size());
        return false;
    }
    *link = static_cast<uint32_t>(l);
    return true;
}

} // namespace

int64_t
TitaCoreLink(const TitaTopology& topo)
{
    const auto& vs = topo.Vertices();
    int32_t topTier = 0;
    for (const auto& v : vs)
    {
        topTier = std::max(topTier, v.kind == TitaTopology::Kind::kSwitch ? v.tier : 0);
    }
    const auto& links = topo.Links();
    for (uint32_t l = 0; l < links.size(); ++l)
    {
        if (IsSwitch(topo, links[l].a) && IsSwitch(topo, links[l].b) &&
            std::max(vs[links[l].a].tier, vs[links[l].b].tier) == topTier)
        {
            return l;
        }
    }
    return -1;
}

bool
TitaLinkFaults::Parse(const std::string& list, TitaTopology* topo, TitaNotes& notes, std::string* err)
{
    for (const std::string& item : TitaSpec::SplitList(list, ';'))
    {
        if (!Add(item, topo, notes, err))
        {
            return false;
        }
    }
    return true;
}

bool
TitaLinkFaults::Add(const std::string& item, TitaTopology* topo, TitaNotes& notes, std::string* err)
{
    const TitaSpec sp = TitaSpec::Parse("--fault", item);
    TitaLinkFault f;
    f.kind = sp.GetKind();
    if (f.kind != "down" && f.kind != "blackhole" && f.kind != "half")
    {
        *err = "--fault: unknown kind '" + f.kind + "' (known: down, blackhole, half)";
        return false;
    }
    const std::string which = sp.Str("link", "core");
    f.at = NanoSeconds(f.kind == "half" ? 0 : sp.TimeNs("at", 0));
    if (f.kind == "down")
    {
        f.converge = NanoSeconds(sp.TimeNs("converge", 0));
    }
    if (!sp.Check(err) || !FaultLink(*topo, item, which, &f.link, err))
    {
        return false;
    }
    const auto& vs = topo->Vertices();
    const auto& l = topo->Links()[f.link];
    if (f.kind != "half" && !(IsSwitch(*topo, l.a) && IsSwitch(*topo, l.b)))
    {
        *err = "--fault=" + item + ": link " + std::to_string(f.link) + " (" + vs[l.a].name + " - " +
               vs[l.b].name + ") has a host end; " + f.kind + " needs a link between two switches";
        return false;
    }
    if (f.kind == "half")
    {
        topo->SetLinkRate(f.link, l.rateBps / 2);
    }
    std::ostream& line = notes.Line();
    line << "fault " << f.kind << " on link " << f.link << " (" << vs[l.a].name << " - " << vs[l.b].name << ")";
    if (f.kind == "half")
    {
        line << ", " << l.rateBps << " bps from the start\n";
    }
    else
    {
        line << " at " << f.at.As(Time::US) << "\n";
    }
    m_faults.push_back(f);
    return true;
}

void
TitaLinkFaults::Apply(TitaNetworkHelper& net) const
{
    for (const TitaLinkFault& f : m_faults)
    {
        if (f.kind == "half")
        {
            continue; // in the topology the network was built from
        }
        if (f.kind == "down")
        {
            net.WithdrawLink(f.link, f.at, f.converge);
            continue;
        }
        auto [a, b] = net.GetLinkDevices(f.link);
        for (const auto& d : {a, b})
        {
            auto sd = DynamicCast<TitaSwitchNetDevice>(d);
            NS_ABORT_MSG_IF(!sd, "a switch-to-switch link without switch devices");
            Ptr<TitaSwitchNode> sw = DynamicCast<TitaSwitchNode>(sd->GetNode());
            ::tita::fabric::FaultConfig fc;
            fc.drop_all = true;
            Simulator::Schedule(f.at, &TitaSwitchNode::SetFault, sw, sd->GetPort(), fc);
        }
    }
}

} // namespace ns3
