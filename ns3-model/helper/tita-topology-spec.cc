#include "tita-topology-spec.h"

#include "tita-spec.h"

namespace ns3
{

namespace
{

bool
FatTreeSpec(const TitaSpec& sp, TitaTopology* out, std::string* err)
{
    TitaTopology::FatTreeParams p;
    p.pods = sp.Count("pods", p.pods, 1);
    p.torsPerPod = sp.Count("tors", p.torsPerPod, 1);
    p.aggsPerPod = sp.Count("aggs", p.aggsPerPod, 1);
    p.hostsPerTor = sp.Count("hosts", p.hostsPerTor, 1);
    p.coresPerAgg = sp.Count("cores", p.coresPerAgg, 1);
    p.hostRateBps = sp.Rate("host_rate", p.hostRateBps);
    p.torAggRateBps = sp.Rate("fabric_rate", p.torAggRateBps);
    p.aggCoreRateBps = sp.Rate("core_rate", p.torAggRateBps);
    p.linkDelayNs = sp.TimeNs("delay", p.linkDelayNs);
    p.oversubscription = sp.Real("oversub", 0, 0, 1000);
    p.gpusPerServer = sp.Count("gpus", 0);
    p.nvlink = sp.Flag("nvlink", false);
    p.nvlinkRateBps = sp.Rate("nvlink_rate", p.nvlinkRateBps);
    if (!sp.Check(err))
    {
        return false;
    }
    if (p.oversubscription > 0 && p.gpusPerServer > 0)
    {
        *err = "--topo=fattree: gpus= and oversub= together: give hosts= (a multiple of gpus)";
        return false;
    }
    if (p.gpusPerServer > 0 && p.hostsPerTor % p.gpusPerServer != 0)
    {
        *err = "--topo=fattree: hosts " + std::to_string(p.hostsPerTor) + " is not a multiple of gpus " +
               std::to_string(p.gpusPerServer) + " (a server's GPUs share one ToR)";
        return false;
    }
    if (p.nvlink && p.gpusPerServer == 0)
    {
        *err = "--topo=fattree: nvlink=1 needs gpus= (GPU servers)";
        return false;
    }
    *out = TitaTopology::FatTree(p);
    return true;
}

bool
MultiRailSpec(const TitaSpec& sp, TitaTopology* out, std::string* err)
{
    TitaTopology::MultiRailParams p;
    p.blocks = sp.Count("blocks", p.blocks, 1);
    p.serversPerBlock = sp.Count("servers", p.serversPerBlock, 1);
    p.gpusPerServer = sp.Count("gpus", p.gpusPerServer, 1);
    p.spines = sp.Count("spines", p.spines, 1);
    p.linksPerSpine = sp.Count("links_per_spine", p.linksPerSpine, 1);
    p.nicRateBps = sp.Rate("nic_rate", p.nicRateBps);
    p.fabricRateBps = sp.Rate("fabric_rate", p.fabricRateBps);
    p.linkDelayNs = sp.TimeNs("delay", p.linkDelayNs);
    p.nvlink = sp.Flag("nvlink", false);
    p.nvlinkRateBps = sp.Rate("nvlink_rate", p.nvlinkRateBps);
    p.dualPort = sp.Flag("dual_port", false);
    if (!sp.Check(err))
    {
        return false;
    }
    *out = TitaTopology::MultiRail(p);
    return true;
}

bool
StarSpec(const TitaSpec& sp, TitaTopology* out, std::string* err)
{
    const uint32_t n = sp.Count("n", 3, 2);
    const uint64_t rate = sp.Rate("rate", 100'000'000'000);
    const uint64_t delay = sp.TimeNs("delay", 1000);
    if (!sp.Check(err))
    {
        return false;
    }
    *out = TitaTopology::Star(n, rate, delay);
    return true;
}

// An HPCC file: file:path=P, or anything else taken whole as the path.
bool
FileSpec(const std::string& spec, const TitaSpec& sp, TitaTopology* out, std::string* err)
{
    const bool named = sp.GetKind() == "file";
    const std::string path = named ? sp.Str("path", "") : spec;
    if (named && !sp.Check(err))
    {
        return false;
    }
    if (!TitaTopology::ReadHpcc(path, out, err))
    {
        *err = "--topo: " + *err;
        return false;
    }
    return true;
}

} // namespace

bool
TitaParseTopology(const std::string& spec, TitaTopology* out, std::string* err)
{
    const TitaSpec sp = TitaSpec::Parse("--topo", spec);
    TitaTopology t;
    bool ok = false;
    if (sp.GetKind() == "fattree")
    {
        ok = FatTreeSpec(sp, &t, err);
    }
    else if (sp.GetKind() == "multirail")
    {
        ok = MultiRailSpec(sp, &t, err);
    }
    else if (sp.GetKind() == "star")
    {
        ok = StarSpec(sp, &t, err);
    }
    else
    {
        ok = FileSpec(spec, sp, &t, err);
    }
    if (ok && t.Hosts().size() < 2)
    {
        *err = "--topo=" + spec + ": fewer than two hosts";
        ok = false;
    }
    if (ok)
    {
        *out = std::move(t);
    }
    return ok;
}

} // namespace ns3
