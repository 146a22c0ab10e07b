// tita-sim: data-centre simulations with tita's RC engine and congestion control
// in ns-3. Topology, workload, congestion control, load, duration and seed on the
// command line; per-flow FCT records (with the ideal FCT and the slowdown), queue
// length histograms, PFC events, link utilisation and collective step times as
// CSV files in --out; a progress line on stderr. Formats: ns3-model/doc/tita-ns3.md.
//
//   tita-sim --topo=data/workloads/fat_tree_320.topo
//            --workload=poisson:cdf=data/workloads/websearch.cdf,load=0.3
//            --cc=hpcc --duration=10ms --out=out/ws30-hpcc
#include "tita-flow-manager.h"
#include "tita-network-helper.h"
#include "tita-presets.h"
#include "tita-simulator-impl.h"
#include "tita-topology.h"
#include "tita-units.h"
#include "tita-workload.h"
#include "tita/cc/cc.h"
#include "tita/fabric/types.h"

#include "ns3/boolean.h"
#include "ns3/command-line.h"
#include "ns3/config.h"
#include "ns3/global-value.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>

using namespace ns3;

NS_LOG_COMPONENT_DEFINE("TitaSim");

namespace
{

// A mistake in what the user asked for: one line, exit status 2, before any
// simulation work.
[[noreturn]] void
Usage(const std::string& msg)
{
    std::cerr << "tita-sim: " << msg << "\n";
    std::exit(2);
}

// "kind:k=v,k=v" -> kind and a map. Every getter names the spec in its message;
// Check() rejects keys no getter asked for (a typo is an error, not a default).
struct Spec
{
    std::string what; // "--topo", "--workload"
    std::string kind;
    std::map<std::string, std::string> kv;
    mutable std::set<std::string> asked;

    static Spec Parse(const std::string& what, const std::string& s)
    {
        Spec sp;
        sp.what = what;
        const auto colon = s.find(':');
        sp.kind = s.substr(0, colon);
        if (colon == std::string::npos)
        {
            return sp;
        }
        std::stringstream ss(s.substr(colon + 1));
        std::string item;
        while (std::getline(ss, item, ','))
        {
            const auto eq = item.find('=');
            if (item.empty())
            {
                continue;
            }
            if (eq == std::string::npos)
            {
                sp.kv[item] = "1";
            }
            else
            {
                sp.kv[item.substr(0, eq)] = item.substr(eq + 1);
            }
        }
        return sp;
    }

    const std::string* Find(const std::string& k) const
    {
        asked.insert(k);
        auto it = kv.find(k);
        return it == kv.end() ? nullptr : &it->second;
    }
    [[noreturn]] void Bad(const std::string& k, const std::string& why) const
    {
        Usage(what + "=" + kind + ": " + k + ": " + why);
    }
    std::string Str(const std::string& k, const std::string& def) const
    {
        const std::string* v = Find(k);
        return v ? *v : def;
    }
    double Real(const std::string& k, double def, double lo, double hi) const
    {
        const std::string* v = Find(k);
        if (!v)
        {
            return def;
        }
        double x = 0;
        std::string err;
        if (!TitaParseReal(*v, &x, &err))
        {
            Bad(k, err);
        }
        if (x < lo || x > hi)
        {
            std::ostringstream o;
            o << *v << " is out of range [" << lo << ", " << hi << "]";
            Bad(k, o.str());
        }
        return x;
    }
    uint32_t Count(const std::string& k, uint32_t def, uint32_t lo = 0) const
    {
        const std::string* v = Find(k);
        uint64_t n = def;
        std::string err;
        if (v && !TitaParseCount(*v, &n, &err))
        {
            Bad(k, err);
        }
        if (n < lo || n > UINT32_MAX)
        {
            Bad(k, std::to_string(n) + " is out of range (at least " + std::to_string(lo) + ")");
        }
        return static_cast<uint32_t>(n);
    }
    bool Flag(const std::string& k, bool def) const
    {
        const std::string* v = Find(k);
        if (v && *v != "0" && *v != "1")
        {
            Bad(k, "'" + *v + "': expected 0 or 1");
        }
        return v ? *v == "1" : def;
    }
    uint64_t Rate(const std::string& k, uint64_t def) const
    {
        const std::string* v = Find(k);
        uint64_t bps = def;
        std::string err;
        if (v && (!TitaParseRate(*v, &bps, &err) || bps == 0))
        {
            Bad(k, err.empty() ? "a rate must be above 0" : err);
        }
        return bps;
    }
    // Bare numbers are nanoseconds.
    uint64_t TimeNs(const std::string& k, uint64_t def) const
    {
        const std::string* v = Find(k);
        Time t = NanoSeconds(def);
        std::string err;
        if (v && !TitaParseTime(*v, "ns", &t, &err))
        {
            Bad(k, err);
        }
        return static_cast<uint64_t>(t.GetNanoSeconds());
    }
    uint64_t Bytes(const std::string& k, uint64_t def) const
    {
        const std::string* v = Find(k);
        uint64_t n = def;
        std::string err;
        if (v && !TitaParseBytes(*v, &n, &err))
        {
            Bad(k, err);
        }
        return n;
    }
    void Check() const
    {
        for (const auto& [k, v] : kv)
        {
            if (asked.count(k) == 0)
            {
                std::string known;
                for (const auto& a : asked)
                {
                    known += (known.empty() ? "" : ", ") + a;
                }
                Usage(what + "=" + kind + ": unknown key '" + k + "' (known: " + known + ")");
            }
        }
    }
};

// A time option of the command line (bare numbers are seconds, as in ns-3).
Time
TimeOption(const std::string& name, const std::string& text)
{
    Time t;
    std::string err;
    if (!TitaParseTime(text, "s", &t, &err))
    {
        Usage("--" + name + ": " + err);
    }
    return t;
}

TitaTopology
MakeTopology(const std::string& arg)
{
    const Spec sp = Spec::Parse("--topo", arg);
    TitaTopology t;
    if (sp.kind == "fattree")
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
        sp.Check();
        t = TitaTopology::FatTree(p);
    }
    else if (sp.kind == "multirail")
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
        sp.Check();
        t = TitaTopology::MultiRail(p);
    }
    else if (sp.kind == "star")
    {
        // n hosts on one switch (incast experiments).
        const uint32_t n = sp.Count("n", 3, 2);
        const uint64_t rate = sp.Rate("rate", 100'000'000'000);
        const uint64_t delay = sp.TimeNs("delay", 1000);
        sp.Check();
        const uint32_t sw = t.AddSwitch("tor", 1);
        for (uint32_t i = 0; i < n; ++i)
        {
            t.AddLink(t.AddHost("host" + std::to_string(i)), sw, rate, delay);
        }
    }
    else
    {
        const std::string path = sp.kind == "file" ? sp.Str("path", "") : arg;
        if (sp.kind == "file")
        {
            sp.Check();
        }
        std::string err;
        if (!TitaTopology::ReadHpcc(path, &t, &err))
        {
            Usage("--topo: " + err);
        }
    }
    if (t.Hosts().size() < 2)
    {
        Usage("--topo=" + arg + ": fewer than two hosts");
    }
    return t;
}

// Ranks of a collective: "all" hosts (rail NICs), or the first N; multi-rail
// ranks carry their server and GPU. order=rail puts GPUs of one rail together
// (ring neighbours share a rail), order=server keeps a server's GPUs together.
std::vector<TitaCollective::Rank>
MakeRanks(const TitaNetworkHelper& net, const Spec& sp)
{
    const TitaTopology& topo = net.GetTopology();
    std::vector<TitaCollective::Rank> ranks;
    if (topo.GetNServers() > 0)
    {
        const uint32_t g = topo.GetGpusPerServer();
        const bool railMajor = sp.Str("order", "rail") == "rail";
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
    }
    else
    {
        // order=host: host index order (ring neighbours mostly share a ToR);
        // order=spread: one host of each ToR in turn, so that ring neighbours,
        // and the first N ranks, are on different ToRs.
        const std::string order = sp.Str("order", "host");
        if (order != "host" && order != "spread")
        {
            sp.Bad("order", "'" + order + "': expected host or spread");
        }
        std::vector<std::vector<uint32_t>> byTor;
        std::unordered_map<uint32_t, std::size_t> torGroup;
        for (uint32_t h = 0; h < net.GetNHosts(); ++h)
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
            const std::size_t g = order == "host" ? 0 : torGroup.emplace(tor, torGroup.size()).first->second;
            byTor.resize(std::max(byTor.size(), g + 1));
            byTor[g].push_back(h);
        }
        for (std::size_t i = 0; ranks.size() < net.GetNHosts(); ++i)
        {
            for (const auto& g : byTor)
            {
                if (i < g.size())
                {
                    ranks.push_back({g[i], -1, -1});
                }
            }
        }
    }
    const std::string n = sp.Str("ranks", "all");
    if (n != "all")
    {
        const std::size_t want = sp.Count("ranks", 0, 2);
        if (topo.GetNServers() > 0 && sp.Str("order", "rail") == "rail")
        {
            // The first want/gpus servers, all their GPUs.
            const uint32_t g = topo.GetGpusPerServer();
            const uint32_t servers = static_cast<uint32_t>((want + g - 1) / g);
            std::vector<TitaCollective::Rank> keep;
            for (const auto& r : ranks)
            {
                if (static_cast<uint32_t>(r.server) < servers)
                {
                    keep.push_back(r);
                }
            }
            ranks = keep;
        }
        if (ranks.size() > want)
        {
            ranks.resize(want);
        }
    }
    if (ranks.size() < 2)
    {
        Usage(sp.what + "=" + sp.kind + ": needs at least two ranks");
    }
    return ranks;
}

uint64_t
PeakRssKb()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<uint64_t>(ru.ru_maxrss);
}

// --fault: a link that fails at a time (down, blackhole) or is slower from the
// start (half). Checked entirely before the network is built.
struct LinkFault
{
    std::string kind;
    uint32_t link = 0;
    Time at;
    Time converge; // down: when the rest of the fabric has rerouted, after `at`
};

std::vector<LinkFault>
ParseFaults(const std::string& arg, TitaTopology* topo)
{
    std::vector<LinkFault> out;
    std::stringstream ss(arg);
    std::string item;
    const auto& vs = topo->Vertices();
    int32_t topTier = 0;
    for (const auto& v : vs)
    {
        topTier = std::max(topTier, v.kind == TitaTopology::Kind::kSwitch ? v.tier : 0);
    }
    auto isSwitch = [&](uint32_t v) { return vs[v].kind == TitaTopology::Kind::kSwitch; };
    while (std::getline(ss, item, ';'))
    {
        if (item.empty())
        {
            continue;
        }
        const Spec sp = Spec::Parse("--fault", item);
        LinkFault f;
        f.kind = sp.kind;
        if (f.kind != "down" && f.kind != "blackhole" && f.kind != "half")
        {
            Usage("--fault: unknown kind '" + f.kind + "' (known: down, blackhole, half)");
        }
        const std::string which = sp.Str("link", "core");
        f.at = NanoSeconds(f.kind == "half" ? 0 : sp.TimeNs("at", 0));
        if (f.kind == "down")
        {
            f.converge = NanoSeconds(sp.TimeNs("converge", 0));
        }
        sp.Check();
        const auto& links = topo->Links();
        if (which == "core")
        {
            uint32_t l = 0;
            while (l < links.size() &&
                   !(isSwitch(links[l].a) && isSwitch(links[l].b) &&
                     std::max(vs[links[l].a].tier, vs[links[l].b].tier) == topTier))
            {
                ++l;
            }
            if (l == links.size())
            {
                Usage("--fault=" + item + ": the topology has no link between two switches");
            }
            f.link = l;
        }
        else
        {
            uint64_t l = 0;
            std::string err;
            if (!TitaParseCount(which, &l, &err) || l >= links.size())
            {
                Usage("--fault=" + item + ": link '" + which + "' is not core or a link index below " +
                      std::to_string(links.size()));
            }
            f.link = static_cast<uint32_t>(l);
        }
        const auto& l = links[f.link];
        if (f.kind != "half" && !(isSwitch(l.a) && isSwitch(l.b)))
        {
            Usage("--fault=" + item + ": link " + std::to_string(f.link) + " (" + vs[l.a].name + " - " +
                  vs[l.b].name + ") has a host end; " + f.kind + " needs a link between two switches");
        }
        if (f.kind == "half")
        {
            topo->SetLinkRate(f.link, l.rateBps / 2);
        }
        std::cerr << "tita-sim: fault " << f.kind << " on link " << f.link << " (" << vs[l.a].name << " - "
                  << vs[l.b].name << ")";
        if (f.kind == "half")
        {
            std::cerr << ", " << l.rateBps << " bps from the start\n";
        }
        else
        {
            std::cerr << " at " << f.at.As(Time::US) << "\n";
        }
        out.push_back(f);
    }
    return out;
}

void
ApplyFaults(TitaNetworkHelper& net, const std::vector<LinkFault>& faults)
{
    for (const LinkFault& f : faults)
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

} // namespace

int
main(int argc, char* argv[])
{
    Time::SetResolution(Time::PS);
    // The lean simulator core (same event order as ns-3's default; see
    // tita-simulator-impl.h). --SimulatorImplementationType overrides it.
    GlobalValue::Bind("SimulatorImplementationType", StringValue(TitaSimulatorImpl::GetTypeId().GetName()));
    std::string topoArg = "data/workloads/fat_tree_320.topo";
    std::string workloadArg = "poisson:cdf=data/workloads/websearch.cdf,load=0.3";
    std::string cc = "hpcc";
    std::string ccParams;
    std::string durationArg = "10ms";
    std::string stopArg = "1s";
    std::string outDir = "out/tita-sim";
    uint64_t seed = 1;
    double progress = 5;
    std::string qlenInterval = "10us";
    std::string pcapHosts;
    bool names = false;
    std::string intOff;
    std::string seriesArg = "0s";
    std::string metricsArg = "0s";
    std::string presetName;
    std::string ccPlugins;
    std::string faultArg;

    CommandLine cmd(__FILE__);
    cmd.Usage("Runs a tita data-centre simulation. Every ns-3 attribute is settable too, e.g.\n"
              "--ns3::RdmaNicNetDevice::PathMtu=4096 --ns3::TitaSwitchNode::BufferSize=33554432");
    cmd.AddValue("topo",
                 "HPCC topology file, or fattree:pods=,tors=,aggs=,hosts=,cores=,host_rate=,fabric_rate=,"
                 "delay=,oversub= | multirail:blocks=,servers=,gpus=,spines=,nic_rate=,fabric_rate=,nvlink= "
                 "| star:n=,rate=,delay=",
                 topoArg);
    cmd.AddValue("workload",
                 "';'-separated: poisson:cdf=FILE,load=0.3 | flows:path=FILE | incast:senders=N,"
                 "receiver=R,bytes=B,jitter=NS,at=NS | allreduce:ranks=all|N,bytes=B,order=rail|server (multi-rail) or host|spread | "
                 "alltoall:ranks=N,bytes=B,pxn=0|1,order=(as allreduce)",
                 workloadArg);
    cmd.AddValue("cc",
                 "Congestion control: none dcqcn timely hpcc swift powertcp nscc tita, or one of a "
                 "--cc-plugin; help lists them with their parameters",
                 cc);
    cmd.AddValue("cc-plugin",
                 "Comma-separated shared objects with congestion-control plug-ins (cc/plugin.h) to load",
                 ccPlugins);
    cmd.AddValue("cc-params", "Comma-separated name=value parameters of the congestion control", ccParams);
    cmd.AddValue("duration", "Poisson arrivals during this long", durationArg);
    cmd.AddValue("stop", "Stop the simulation at this time even if flows remain", stopArg);
    cmd.AddValue("seed", "Seed of the workload generator", seed);
    cmd.AddValue("out", "Output directory", outDir);
    cmd.AddValue("progress", "Seconds of wall time between progress lines (0: none)", progress);
    cmd.AddValue("qlen-interval", "Switch queue length sampling period (0: none)", qlenInterval);
    cmd.AddValue("pcap", "Comma-separated host indices to capture (pcap, RoCEv2 frames)", pcapHosts);
    cmd.AddValue("names", "Register nodes under their topology names (Config paths)", names);
    cmd.AddValue("series",
                 "Sampling period of flow_series.csv (each active flow's delivered bytes, goodput, rate "
                 "and window), qlen_series.csv (every non-empty switch queue) and port_series.csv (every "
                 "switch port that sent: its wire bytes and utilisation over the period); 0: none",
                 seriesArg);
    cmd.AddValue("metrics",
                 "Sampling period of metrics.jsonl: the counters a DPDK process publishes over rte_telemetry "
                 "(/tita/qp of each active flow's QPs, /tita_switch/port and queues of every switch port "
                 "that carried traffic), for tita-exporter --from-sim; 0: none",
                 metricsArg);
    cmd.AddValue("int-off",
                 "INT off on some switches: all | half (every other switch of each tier) | tor | agg | core",
                 intOff);
    cmd.AddValue("fault",
                 "';'-separated link faults, both directions: down:link=L|core,at=T,converge=D (the "
                 "switches at its ends withdraw it from ECMP at T, every other switch reroutes around it at "
                 "T+D, default 0) | blackhole:link=L|core,at=T (silently drops everything "
                 "routed to it) | half:link=L|core (half its rate, from the start). L: a links.csv index; "
                 "core: the first link between a switch of the highest tier and another switch",
                 faultArg);
    cmd.AddValue("preset",
                 "Configure hosts, switches and the algorithm as another simulator does: hpcc-artifact "
                 "(the HPCC paper's simulator as its run.py sets it up; doc/ns3-vs-hpcc-artifact.md). "
                 "Attributes given on the command line win",
                 presetName);
    cmd.Parse(argc, argv);

    {
        std::stringstream ss(ccPlugins);
        std::string path;
        while (std::getline(ss, path, ','))
        {
            std::string err;
            if (!path.empty() && ::tita::cc::load_plugin(path, &err) != 0)
            {
                Usage(err);
            }
        }
    }
    if (cc == "help")
    {
        std::cout << ::tita::cc::algorithms_help();
        return 0;
    }

    const auto wallStart = std::chrono::steady_clock::now();
    const Time duration = TimeOption("duration", durationArg);
    const Time stop = TimeOption("stop", stopArg);
    if (!stop.IsStrictlyPositive())
    {
        Usage("--stop must be above 0");
    }

    TitaTopology topo = MakeTopology(topoArg);
    uint64_t hostBps = 0;
    for (const auto& l : topo.Links())
    {
        if (l.a == topo.Hosts().front() || l.b == topo.Hosts().front())
        {
            hostBps = l.rateBps;
            break;
        }
    }

    // The preset first, then what the command line says: attributes named on
    // it are left as given, parameters in --cc-params come after the preset's.
    if (!presetName.empty())
    {
        TitaPreset preset;
        std::string err;
        if (!TitaGetPreset(presetName, cc, hostBps, &preset, &err))
        {
            Usage("--preset: " + err);
        }
        std::set<std::string> given;
        for (int i = 1; i < argc; ++i)
        {
            const std::string arg = argv[i];
            if (arg.rfind("--ns3::", 0) == 0)
            {
                given.insert(arg.substr(2, arg.find('=') - 2));
            }
        }
        for (const auto& path : TitaApplyPreset(preset, given))
        {
            std::cerr << "tita-sim: preset " << presetName << ": --" << path << " as given\n";
        }
        if (!preset.ccParams.empty())
        {
            ccParams = preset.ccParams + (ccParams.empty() ? "" : "," + ccParams);
        }
    }
    // The algorithm and every parameter, checked (and units converted) now.
    std::vector<std::string> ccParamList;
    {
        std::string err;
        if (!TitaCcParams(cc, ccParams, &ccParamList, &err))
        {
            Usage("--cc=" + cc + ": " + err);
        }
        ccParams.clear();
        for (const auto& p : ccParamList)
        {
            ccParams += (ccParams.empty() ? "" : ",") + p;
        }
    }

    TitaNetworkHelper net;
    net.EnableNames(names);
    if (!net.SetIntOff(intOff))
    {
        Usage("--int-off=" + intOff + ": expected all, half, tor, agg or core");
    }
    std::vector<uint32_t> pcapList;
    {
        std::stringstream ss(pcapHosts);
        std::string x;
        while (std::getline(ss, x, ','))
        {
            uint64_t h = 0;
            std::string err;
            if (!x.empty() && (!TitaParseCount(x, &h, &err) || h >= topo.Hosts().size()))
            {
                Usage("--pcap: '" + x + "' is not a host index below " + std::to_string(topo.Hosts().size()));
            }
            if (!x.empty())
            {
                pcapList.push_back(static_cast<uint32_t>(h));
            }
        }
    }
    const std::vector<LinkFault> faults = ParseFaults(faultArg, &topo);
    net.Build(topo);
    ApplyFaults(net, faults);
    if (!intOff.empty())
    {
        std::cerr << "tita-sim: INT off on " << net.GetIntOffCount() << " switches (" << intOff << ")\n";
    }
    std::cerr << "tita-sim: " << topo.Describe() << ", max base RTT " << net.GetMaxBaseRttNs() << " ns, cc "
              << cc << (ccParams.empty() ? "" : " " + ccParams)
              << (presetName.empty() ? "" : ", preset " + presetName) << "\n";

    Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
    mgr->SetAttribute("Cc", StringValue(cc));
    mgr->SetAttribute("CcParams", StringValue(ccParams));
    mgr->SetNetwork(&net);

    // ---- workload
    std::vector<std::shared_ptr<TitaCollective>> collectives;
    std::stringstream wl(workloadArg);
    std::string item;
    Time arrivalsEnd = Time(0);
    Time firstStart = Time::Max();
    uint64_t scheduled = 0;
    int32_t nextCollective = 0;
    std::vector<uint32_t> allHosts;
    for (uint32_t h = 0; h < net.GetNHosts(); ++h)
    {
        if (!topo.Vertices()[topo.Hosts()[h]].nvlink)
        {
            allHosts.push_back(h);
        }
    }
    auto schedule = [&](std::vector<TitaFlowSpec> flows) {
        if (!flows.empty())
        {
            firstStart = std::min(firstStart, flows.front().start);
            arrivalsEnd = std::max(arrivalsEnd, flows.back().start);
        }
        scheduled += flows.size();
        TitaWorkload::Schedule(mgr, std::move(flows));
    };
    while (std::getline(wl, item, ';'))
    {
        const Spec sp = Spec::Parse("--workload", item);
        if (sp.kind == "poisson")
        {
            TitaFlowSizeCdf cdf;
            std::string err;
            const std::string cdfPath = sp.Str("cdf", "data/workloads/websearch.cdf");
            const double load = sp.Real("load", 0.3, 1e-6, 1);
            const Time at = NanoSeconds(sp.TimeNs("at", 0));
            sp.Check();
            if (!cdf.Load(cdfPath, &err))
            {
                Usage("--workload=poisson: " + err);
            }
            if (!duration.IsStrictlyPositive())
            {
                Usage("--workload=poisson needs --duration above 0");
            }
            const uint64_t rate = net.GetNic(allHosts.front())->GetDataRate().GetBitRate();
            auto flows = TitaWorkload::Poisson(cdf, allHosts, load, rate, at, duration, seed);
            std::cerr << "tita-sim: " << flows.size() << " Poisson flows, mean size " << cdf.MeanBytes()
                      << " B, load " << load << "\n";
            schedule(std::move(flows));
        }
        else if (sp.kind == "flows")
        {
            std::vector<TitaFlowSpec> flows;
            std::string err;
            const std::string path = sp.Str("path", "");
            sp.Check();
            const auto& t = topo;
            if (!TitaWorkload::ReadHpccFlows(
                    path,
                    [&t](uint32_t node) { return node < t.Vertices().size() ? t.HostIndexOf(node) : -1; },
                    &flows,
                    &err))
            {
                Usage("--workload=flows: " + err);
            }
            schedule(std::move(flows));
        }
        else if (sp.kind == "incast")
        {
            const uint32_t n = sp.Count("senders", 16, 1);
            const uint32_t recv = sp.Count("receiver", 0);
            const uint64_t bytes = sp.Bytes("bytes", 500'000);
            const Time at = NanoSeconds(sp.TimeNs("at", 0));
            const Time jitter = NanoSeconds(sp.TimeNs("jitter", 0));
            sp.Check();
            if (recv >= allHosts.size() || n >= allHosts.size())
            {
                Usage("--workload=incast: receiver " + std::to_string(recv) + " and " + std::to_string(n) +
                      " senders need more than " + std::to_string(allHosts.size()) + " hosts");
            }
            std::vector<uint32_t> senders;
            for (uint32_t h : allHosts)
            {
                if (h != recv && senders.size() < n)
                {
                    senders.push_back(h);
                }
            }
            schedule(TitaWorkload::Incast(senders, recv, bytes, at, jitter, seed + 1));
        }
        else if (sp.kind == "allreduce" || sp.kind == "alltoall")
        {
            const uint64_t bytes = sp.Bytes("bytes", 1'000'000);
            const Time at = NanoSeconds(sp.TimeNs("at", 0));
            const bool pxn = sp.kind == "alltoall" && sp.Flag("pxn", false);
            auto ranks = MakeRanks(net, sp);
            sp.Check();
            std::shared_ptr<TitaCollective> c;
            if (sp.kind == "allreduce")
            {
                c = TitaCollective::RingAllReduce(mgr, nextCollective++, ranks, bytes, at);
            }
            else if (pxn)
            {
                c = TitaCollective::AllToAllPxn(mgr, nextCollective++, ranks, bytes, at);
            }
            else
            {
                c = TitaCollective::AllToAll(mgr, nextCollective++, ranks, bytes, at);
            }
            std::cerr << "tita-sim: " << c->GetKind() << " over " << ranks.size() << " ranks, " << bytes
                      << " B\n";
            collectives.push_back(c);
            firstStart = std::min(firstStart, at);
            arrivalsEnd = std::max(arrivalsEnd, at);
            ++scheduled;
        }
        else
        {
            Usage("--workload: unknown kind '" + sp.kind +
                  "' (known: poisson, flows, incast, allreduce, alltoall)");
        }
    }
    if (scheduled == 0)
    {
        Usage("--workload=" + workloadArg + " starts no flow");
    }
    if (firstStart >= stop)
    {
        std::ostringstream o;
        o << "no flow starts before --stop=" << stopArg << " (the first starts at " << firstStart.As(Time::MS)
          << "): raise --stop";
        Usage(o.str());
    }
    if (arrivalsEnd >= stop)
    {
        std::cerr << "tita-sim: warning: flows keep arriving until " << arrivalsEnd.As(Time::MS)
                  << ", after --stop=" << stopArg << ": the later ones never start\n";
    }
    std::filesystem::create_directories(outDir);
    for (uint32_t h : pcapList)
    {
        net.EnablePcap(outDir + "/nic", h);
    }

    // ---- outputs (everything above was checked; from here on, work)
    std::ofstream fct(outDir + "/fct.csv");
    fct << "id,src,dst,bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,hops,ok,group,step,reordered\n";
    mgr->TraceConnectWithoutContext(
        "FlowComplete",
        MakeBoundCallback(
            +[](std::ofstream* out, const TitaFlowRecord& r) {
                *out << r.id << ',' << r.src << ',' << r.dst << ',' << r.bytes << ','
                     << r.start.GetNanoSeconds() << ',' << r.end.GetNanoSeconds() << ','
                     << (r.end - r.start).GetNanoSeconds() << ',' << r.idealNs << ',' << r.Slowdown() << ','
                     << r.hops << ',' << (r.ok ? 1 : 0) << ',' << r.group << ',' << r.step << ','
                     << r.reordered << '\n';
            },
            &fct));
    // Switch drops by reason (tita::fabric::DropReason), for summary.json.
    std::vector<uint64_t> dropsByReason(static_cast<size_t>(::tita::fabric::DropReason::kCount), 0);
    for (const auto& sw : net.GetSwitches())
    {
        for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
        {
            sw->GetPort(p)->TraceConnectWithoutContext(
                "Drop",
                MakeBoundCallback(
                    +[](std::vector<uint64_t>* n, uint8_t, uint8_t reason, uint32_t) {
                        if (reason < n->size())
                        {
                            ++(*n)[reason];
                        }
                    },
                    &dropsByReason));
        }
    }
    std::ofstream pfc(outDir + "/pfc.csv");
    pfc << "time_ns,node,port,priority,pause,sent\n";
    for (const auto& sw : net.GetSwitches())
    {
        for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
        {
            struct Ctx
            {
                std::ofstream* out;
                uint32_t node;
                uint16_t port;
            };
            auto* ctx = new Ctx{&pfc, sw->GetId(), p}; // lives for the run
            sw->GetPort(p)->TraceConnectWithoutContext(
                "Pfc",
                MakeBoundCallback(
                    +[](Ctx* c, uint8_t prio, bool pause, bool sent) {
                        *c->out << Simulator::Now().GetNanoSeconds() << ',' << c->node << ',' << c->port << ','
                                << +prio << ',' << (pause ? 1 : 0) << ',' << (sent ? 1 : 0) << '\n';
                    },
                    ctx));
        }
    }
    // Queue length histograms (1 KB buckets) of every switch egress port, sampled.
    std::vector<std::vector<std::vector<uint64_t>>> qhist(net.GetSwitches().size());
    const Time qInterval = TimeOption("qlen-interval", qlenInterval);
    std::function<void()> sampleQueues = [&]() {
        for (std::size_t s = 0; s < net.GetSwitches().size(); ++s)
        {
            const auto& sw = net.GetSwitches()[s];
            auto& h = qhist[s];
            h.resize(sw->GetNPorts());
            for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
            {
                const uint64_t kb = sw->GetCore().qlen_bytes(p) / 1000;
                if (h[p].size() <= kb)
                {
                    h[p].resize(kb + 1);
                }
                ++h[p][kb];
            }
        }
        Simulator::Schedule(qInterval, sampleQueues);
    };
    if (qInterval.IsStrictlyPositive())
    {
        Simulator::Schedule(qInterval, sampleQueues);
    }

    // Time series for small experiments (sim-vs-DPDK comparisons): per active
    // flow, bytes the receiver executed in order and the sender's CC output;
    // per switch egress port with a queue, its length.
    const Time seriesInterval = TimeOption("series", seriesArg);
    std::ofstream flowSeries;
    std::ofstream qlenSeries;
    std::ofstream portSeries;
    std::unordered_map<uint32_t, uint64_t> lastDelivered;
    // Per switch port: wire bytes sent so far, and the node at the other end.
    std::vector<std::vector<uint64_t>> lastTx(net.GetSwitches().size());
    std::unordered_map<uint64_t, uint32_t> peerOf; // node << 16 | port -> peer node
    for (uint32_t l = 0; l < topo.Links().size(); ++l)
    {
        auto [a, b] = net.GetLinkDevices(l);
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
        {
            if (auto sd = DynamicCast<TitaSwitchNetDevice>(x))
            {
                peerOf[uint64_t{x->GetNode()->GetId()} << 16 | sd->GetPort()] = y->GetNode()->GetId();
            }
        }
    }
    std::function<void()> sampleSeries = [&]() {
        const uint64_t t = Simulator::Now().GetNanoSeconds();
        for (const auto& a : mgr->GetActiveFlows())
        {
            const auto* rx = net.GetNic(a.rec->dst)->GetEngine().qp_counters(a.dstQpn);
            ::tita::engine::QpInfo info;
            if (rx == nullptr || net.GetNic(a.rec->src)->GetEngine().qp_info(a.srcQpn, &info) != 0)
            {
                continue;
            }
            uint64_t& last = lastDelivered[a.rec->id];
            const double gbps = (rx->rx_payload_bytes - last) * 8.0 / seriesInterval.GetSeconds();
            last = rx->rx_payload_bytes;
            flowSeries << t << ',' << a.rec->id << ',' << a.rec->src << ',' << a.rec->dst << ','
                       << rx->rx_payload_bytes << ',' << static_cast<uint64_t>(gbps) << ',' << info.rate_bps
                       << ',' << (info.cwnd_bytes == UINT64_MAX ? 0 : info.cwnd_bytes) << '\n';
        }
        for (const auto& sw : net.GetSwitches())
        {
            for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
            {
                if (const uint64_t q = sw->GetCore().qlen_bytes(p); q > 0)
                {
                    qlenSeries << t << ',' << sw->GetId() << ',' << p << ',' << q << '\n';
                }
            }
        }
        for (std::size_t s = 0; s < net.GetSwitches().size(); ++s)
        {
            const auto& sw = net.GetSwitches()[s];
            lastTx[s].resize(sw->GetNPorts());
            for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
            {
                const Ptr<TitaNetDevice> d = sw->GetPort(p);
                const uint64_t tx = d->GetTxWireBytes();
                if (tx == lastTx[s][p])
                {
                    continue;
                }
                const double util =
                    (tx - lastTx[s][p]) * 8.0 / (d->GetDataRate().GetBitRate() * seriesInterval.GetSeconds());
                lastTx[s][p] = tx;
                portSeries << t << ',' << sw->GetId() << ',' << p << ',' << peerOf[uint64_t{sw->GetId()} << 16 | p]
                           << ',' << tx << ',' << util << '\n';
            }
        }
        Simulator::Schedule(seriesInterval, sampleSeries);
    };
    if (seriesInterval.IsStrictlyPositive())
    {
        flowSeries.open(outDir + "/flow_series.csv");
        flowSeries << "t_ns,flow,src,dst,delivered_bytes,goodput_bps,rate_bps,cwnd_bytes\n";
        qlenSeries.open(outDir + "/qlen_series.csv");
        qlenSeries << "t_ns,node,port,qlen_bytes\n";
        portSeries.open(outDir + "/port_series.csv");
        portSeries << "t_ns,node,port,peer,tx_bytes,utilization\n";
        Simulator::Schedule(seriesInterval, sampleSeries);
    }

    // Metrics in the shape of the DPDK processes' telemetry, one JSON line per
    // sample: tita-exporter --from-sim turns them into the same Prometheus
    // metrics as a live run (doc/operations.md). Hosts are "hostN" (host index),
    // switches "switchN" (N: the switch's vertex in the topology file), ports "pK".
    const Time metricsInterval = TimeOption("metrics", metricsArg);
    std::ofstream metricsOut;
    std::unordered_map<uint32_t, uint32_t> switchVertex; // ns-3 node id -> topology vertex
    for (uint32_t v = 0; v < net.GetTopology().Vertices().size(); ++v)
    {
        if (const auto sw = net.GetSwitchOfVertex(v))
        {
            switchVertex[sw->GetId()] = v;
        }
    }
    std::function<void()> sampleMetrics = [&]() {
        metricsOut << "{\"t_ns\":" << Simulator::Now().GetNanoSeconds() << ",\"qps\":[";
        bool first = true;
        auto qp = [&](uint32_t host, uint32_t qpn) {
            const auto& eng = net.GetNic(host)->GetEngine();
            ::tita::engine::QpInfo info;
            const auto* c = eng.qp_counters(qpn);
            if (c == nullptr || eng.qp_info(qpn, &info) != 0)
            {
                return;
            }
            metricsOut << (first ? "" : ",") << "{\"engine\":\"host" << host << "\",\"qpn\":" << qpn
                       << ",\"state\":\"" << ::tita::engine::to_string(info.state) << "\",\"cc\":\"" << info.cc
                       << '"';
            ::tita::engine::for_each_qp_value(info, *c, [&](const char* k, uint64_t v) {
                metricsOut << ",\"" << k << "\":" << v;
            });
            metricsOut << '}';
            first = false;
        };
        for (const auto& a : mgr->GetActiveFlows())
        {
            qp(a.rec->src, a.srcQpn);
            qp(a.rec->dst, a.dstQpn);
        }
        metricsOut << "],\"ports\":[";
        first = true;
        for (const auto& sw : net.GetSwitches())
        {
            for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
            {
                const ::tita::fabric::PortCounters& c = sw->GetCore().counters(p);
                if (c.rx_packets + c.tx_packets == 0)
                {
                    continue;
                }
                metricsOut << (first ? "" : ",") << "{\"switch\":\"switch" << switchVertex[sw->GetId()]
                           << "\",\"name\":\"p"
                           << p << "\",\"rate_mbps\":" << sw->GetPort(p)->GetDataRate().GetBitRate() / 1'000'000;
                auto put = [&](const char* k, uint64_t v) { metricsOut << ",\"" << k << "\":" << v; };
                ::tita::fabric::for_each_port_counter(c, put);
                ::tita::fabric::for_each_drop_counter(c, put);
                metricsOut << ",\"queues\":{";
                for (int q = 0; q < ::tita::fabric::kPriorities; ++q)
                {
                    metricsOut << (q ? "," : "") << "\"priority_" << q << "\":{";
                    bool firstKey = true;
                    ::tita::fabric::for_each_queue_counter(c, q, [&](const char* k, uint64_t v) {
                        metricsOut << (firstKey ? "" : ",") << '"' << k << "\":" << v;
                        firstKey = false;
                    });
                    metricsOut << '}';
                }
                metricsOut << "}}";
                first = false;
            }
        }
        metricsOut << "]}\n";
        Simulator::Schedule(metricsInterval, sampleMetrics);
    };
    if (metricsInterval.IsStrictlyPositive())
    {
        metricsOut.open(outDir + "/metrics.jsonl");
        Simulator::Schedule(metricsInterval, sampleMetrics);
    }

    // ---- run: until arrivals are over and everything has completed, or --stop.
    // Progress: the simulated speed is the average since the run started (one
    // busy or idle stretch says little), and the ETA covers what is known: the
    // arrivals; after them, the line says how many flows are still draining.
    auto lastPrint = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point runStart;
    const double endMs = std::min(arrivalsEnd, stop).GetSeconds() * 1e3;
    std::function<void()> watch = [&]() {
        bool busy = Simulator::Now() <= arrivalsEnd || mgr->GetActive() > 0;
        for (const auto& c : collectives)
        {
            busy |= !c->IsDone();
        }
        if (!busy)
        {
            Simulator::Stop();
            return;
        }
        const auto now = std::chrono::steady_clock::now();
        if (progress > 0 && std::chrono::duration<double>(now - lastPrint).count() >= progress)
        {
            const double ran = std::chrono::duration<double>(now - runStart).count();
            const double simMs = Simulator::Now().GetSeconds() * 1e3;
            const double msPerS = ran > 0 ? simMs / ran : 0;
            char tail[96];
            if (simMs < endMs)
            {
                std::snprintf(tail, sizeof tail, "arrivals end in ~%.0fs", msPerS > 0 ? (endMs - simMs) / msPerS : 0.0);
            }
            else
            {
                std::snprintf(tail, sizeof tail, "arrivals over, %u flows draining", mgr->GetActive());
            }
            std::fprintf(stderr,
                         "[%7.1fs] sim %.3f ms | %.0f events/s | %.3f sim-ms/s | flows %u/%u active %u%s | %s\n",
                         std::chrono::duration<double>(now - wallStart).count(),
                         simMs,
                         ran > 0 ? Simulator::GetEventCount() / ran : 0.0,
                         msPerS,
                         mgr->GetFinished(),
                         mgr->GetStarted(),
                         mgr->GetActive(),
                         mgr->GetActive() == 0 ? " (idle)" : "",
                         tail);
            lastPrint = now;
        }
        Simulator::Schedule(MicroSeconds(20), watch);
    };
    Simulator::Schedule(MicroSeconds(20), watch);
    Simulator::Stop(stop);
    runStart = std::chrono::steady_clock::now();
    Simulator::Run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
    const double simEnd = Simulator::Now().GetSeconds();
    const uint64_t events = Simulator::GetEventCount();

    // ---- final outputs
    {
        std::ofstream q(outDir + "/qlen_hist.csv");
        q << "node,port,rate_bps,kb,samples\n";
        for (std::size_t s = 0; s < qhist.size(); ++s)
        {
            const auto& sw = net.GetSwitches()[s];
            for (uint16_t p = 0; p < qhist[s].size(); ++p)
            {
                for (std::size_t kb = 0; kb < qhist[s][p].size(); ++kb)
                {
                    if (qhist[s][p][kb] > 0)
                    {
                        q << sw->GetId() << ',' << p << ',' << sw->GetPort(p)->GetDataRate().GetBitRate() << ','
                          << kb << ',' << qhist[s][p][kb] << '\n';
                    }
                }
            }
        }
    }
    {
        std::ofstream u(outDir + "/links.csv");
        // from_tier/to_tier: a switch's tier (1 ToR, 2 aggregation, 3 core or
        // spine, 0 NVSwitch), -1 for a host.
        u << "link,from_node,to_node,rate_bps,tx_bytes,utilization,pfc_pauses_rx,max_qlen_bytes,drops,from_tier,"
             "to_tier\n";
        const uint64_t endNs = static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
        auto tier = [&](uint32_t v) {
            const auto& vx = topo.Vertices()[v];
            return vx.kind == TitaTopology::Kind::kSwitch ? vx.tier : -1;
        };
        for (uint32_t l = 0; l < topo.Links().size(); ++l)
        {
            auto [a, b] = net.GetLinkDevices(l);
            const int32_t ta = tier(topo.Links()[l].a);
            const int32_t tb = tier(topo.Links()[l].b);
            for (auto [x, y, tx, ty] : {std::tuple{a, b, ta, tb}, std::tuple{b, a, tb, ta}})
            {
                uint64_t maxq = 0;
                uint64_t drops = 0;
                if (auto sd = DynamicCast<TitaSwitchNetDevice>(x))
                {
                    auto sw = DynamicCast<TitaSwitchNode>(sd->GetNode());
                    maxq = sw->GetCore().counters(sd->GetPort()).max_qlen_bytes;
                    drops = sw->GetCore().counters(sd->GetPort()).dropped();
                }
                const double util = endNs ? x->GetTxWireBytes() * 8.0 /
                                                (x->GetDataRate().GetBitRate() * (endNs * 1e-9))
                                          : 0;
                u << l << ',' << x->GetNode()->GetId() << ',' << y->GetNode()->GetId() << ','
                  << x->GetDataRate().GetBitRate() << ',' << x->GetTxWireBytes() << ',' << util << ','
                  << x->GetPfcPausesReceived() << ',' << maxq << ',' << drops << ',' << tx << ',' << ty << '\n';
            }
        }
    }
    {
        std::ofstream st(outDir + "/steps.csv");
        st << "collective,kind,ranks,step,start_ns,end_ns,duration_ns,messages,bytes\n";
        std::ofstream co(outDir + "/collectives.csv");
        co << "collective,kind,ranks,bytes,start_ns,end_ns,duration_ns,done,ideal_ns\n";
        for (const auto& c : collectives)
        {
            co << c->GetId() << ',' << c->GetKind() << ',' << c->GetRanks() << ',' << c->GetBytes() << ','
               << c->GetStart().GetNanoSeconds() << ',' << c->GetEnd().GetNanoSeconds() << ','
               << (c->GetEnd() - c->GetStart()).GetNanoSeconds() << ',' << c->IsDone() << ',' << c->IdealNs()
               << '\n';
            for (const auto& s : c->GetSteps())
            {
                st << c->GetId() << ',' << c->GetKind() << ',' << c->GetRanks() << ',' << s.step << ','
                   << s.start.GetNanoSeconds() << ',' << s.end.GetNanoSeconds() << ','
                   << (s.end - s.start).GetNanoSeconds() << ',' << s.messages << ',' << s.bytes << '\n';
            }
        }
    }
    uint64_t pauses = 0;
    uint64_t drops = 0;
    for (const auto& sw : net.GetSwitches())
    {
        pauses += sw->GetPfcPausesSent();
        drops += sw->GetDrops();
    }
    uint64_t nicDrops = 0;
    // Frames the NICs' engines refused, by reason (a lossless run has none).
    std::map<std::string, uint64_t> nicDropsByReason;
    uint64_t acksCoalesced = 0;
    for (uint32_t h = 0; h < net.GetNHosts(); ++h)
    {
        nicDrops += net.GetNic(h)->GetEngineDrops();
        const auto& c = net.GetNic(h)->GetEngine().counters();
        acksCoalesced += c.control_coalesced;
        uint64_t parse = 0;
        for (uint64_t n : c.rx_parse_errors)
        {
            parse += n;
        }
        for (auto [name, n] : {std::pair<const char*, uint64_t>{"parse_error", parse},
                               {"not_for_us", c.rx_not_for_us},
                               {"wrong_source", c.rx_wrong_source},
                               {"unknown_qp", c.rx_unknown_qp},
                               {"bad_pkey", c.rx_bad_pkey},
                               {"qp_not_ready", c.rx_qp_not_ready},
                               {"control_ring_full", c.control_ring_full},
                               {"ooo_pool_full", c.ooo_pool_full}})
        {
            nicDropsByReason[name] += n;
        }
    }
    const double totalWall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    std::ofstream js(outDir + "/summary.json");
    js << "{\n  \"topo\": \"" << topoArg << "\",\n  \"workload\": \"" << workloadArg << "\",\n  \"cc\": \"" << cc
       << "\",\n  \"cc_params\": \"" << ccParams << "\",\n  \"seed\": " << seed << ",\n  \"hosts\": "
       << net.GetNHosts() << ",\n  \"switches\": " << net.GetSwitches().size()
       << ",\n  \"int_off_switches\": " << net.GetIntOffCount()
       << ",\n  \"max_base_rtt_ns\": " << net.GetMaxBaseRttNs() << ",\n  \"flows_started\": "
       << mgr->GetStarted() << ",\n  \"flows_finished\": " << mgr->GetFinished()
       << ",\n  \"flows_failed\": " << mgr->GetFailed() << ",\n  \"qp_timeouts\": " << mgr->GetTimeouts()
       << ",\n  \"retransmitted_packets\": " << mgr->GetRetransmittedPackets()
       << ",\n  \"out_of_order_received\": " << mgr->GetOutOfOrderPackets()
       << ",\n  \"ooo_buffered\": " << mgr->GetOutOfOrderBuffered() << ",\n  \"pfc_pauses_sent\": " << pauses
       << ",\n  \"switch_drops\": " << drops << ",\n  \"switch_drops_by_reason\": {" << [&] {
              std::ostringstream o;
              const char* sep = "";
              for (size_t r = 0; r < dropsByReason.size(); ++r)
              {
                  if (dropsByReason[r] > 0)
                  {
                      o << sep << '"' << ::tita::fabric::to_string(static_cast<::tita::fabric::DropReason>(r))
                        << "\": " << dropsByReason[r];
                      sep = ", ";
                  }
              }
              return o.str();
          }() << "}" << ",\n  \"nic_drops\": " << nicDrops << ",\n  \"nic_drops_by_reason\": {" << [&] {
              std::ostringstream o;
              const char* sep = "";
              for (const auto& [name, n] : nicDropsByReason)
              {
                  if (n > 0)
                  {
                      o << sep << '"' << name << "\": " << n;
                      sep = ", ";
                  }
              }
              return o.str();
          }() << "}" << ",\n  \"acks_coalesced\": " << acksCoalesced
       << ",\n  \"sim_seconds\": " << simEnd << ",\n  \"events\": " << events
       << ",\n  \"run_wall_seconds\": " << wall << ",\n  \"total_wall_seconds\": " << totalWall
       << ",\n  \"events_per_second\": " << (wall > 0 ? events / wall : 0)
       << ",\n  \"sim_ms_per_wall_second\": " << (wall > 0 ? simEnd * 1e3 / wall : 0)
       << ",\n  \"peak_rss_kb\": " << PeakRssKb() << "\n}\n";
    std::fprintf(stderr,
                 "tita-sim: done at %.3f ms simulated: %u/%u flows finished (%u failed), %lu PFC pauses, "
                 "%lu switch drops, %lu NIC drops, %lu timeouts; %lu events in %.1f s (%.0f events/s, %.3f sim-ms/s), "
                 "peak RSS %lu MB\n",
                 simEnd * 1e3,
                 mgr->GetFinished(),
                 mgr->GetStarted(),
                 mgr->GetFailed(),
                 static_cast<unsigned long>(pauses),
                 static_cast<unsigned long>(drops),
                 static_cast<unsigned long>(nicDrops),
                 static_cast<unsigned long>(mgr->GetTimeouts()),
                 static_cast<unsigned long>(events),
                 wall,
                 wall > 0 ? events / wall : 0,
                 wall > 0 ? simEnd * 1e3 / wall : 0,
                 static_cast<unsigned long>(PeakRssKb() / 1024));
    if (mgr->GetActive() > 0)
    {
        std::fprintf(stderr,
                     "tita-sim: warning: --stop=%s reached with %u flows unfinished (not in fct.csv)\n",
                     stopArg.c_str(),
                     mgr->GetActive());
    }
    Simulator::Destroy();
    return 0;
}
