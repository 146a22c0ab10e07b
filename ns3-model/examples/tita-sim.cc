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
#include "tita-simulator-impl.h"
#include "tita-topology.h"
#include "tita-workload.h"
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
#include <sstream>
#include <unordered_map>

using namespace ns3;

NS_LOG_COMPONENT_DEFINE("TitaSim");

namespace
{

// "kind:k=v,k=v" -> kind and a map.
struct Spec
{
    std::string kind;
    std::map<std::string, std::string> kv;

    static Spec Parse(const std::string& s)
    {
        Spec sp;
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

    std::string Str(const std::string& k, const std::string& def) const
    {
        auto it = kv.find(k);
        return it == kv.end() ? def : it->second;
    }
    double Num(const std::string& k, double def) const
    {
        auto it = kv.find(k);
        if (it == kv.end())
        {
            return def;
        }
        std::size_t pos = 0;
        const double v = std::stod(it->second, &pos);
        const std::string unit = it->second.substr(pos);
        if (unit.empty())
        {
            return v;
        }
        switch (unit[0])
        {
        case 'k':
        case 'K':
            return v * 1e3;
        case 'M':
            return v * 1e6;
        case 'G':
            return v * 1e9;
        case 'T':
            return v * 1e12;
        default:
            NS_ABORT_MSG("bad number '" << it->second << "' for " << k);
        }
        return v;
    }
};

TitaTopology
MakeTopology(const std::string& arg)
{
    const Spec sp = Spec::Parse(arg);
    if (sp.kind == "fattree")
    {
        TitaTopology::FatTreeParams p;
        p.pods = static_cast<uint32_t>(sp.Num("pods", p.pods));
        p.torsPerPod = static_cast<uint32_t>(sp.Num("tors", p.torsPerPod));
        p.aggsPerPod = static_cast<uint32_t>(sp.Num("aggs", p.aggsPerPod));
        p.hostsPerTor = static_cast<uint32_t>(sp.Num("hosts", p.hostsPerTor));
        p.coresPerAgg = static_cast<uint32_t>(sp.Num("cores", p.coresPerAgg));
        p.hostRateBps = static_cast<uint64_t>(sp.Num("host_rate", p.hostRateBps));
        p.torAggRateBps = static_cast<uint64_t>(sp.Num("fabric_rate", p.torAggRateBps));
        p.aggCoreRateBps = static_cast<uint64_t>(sp.Num("core_rate", p.torAggRateBps));
        p.linkDelayNs = static_cast<uint64_t>(sp.Num("delay", p.linkDelayNs));
        p.oversubscription = sp.Num("oversub", 0);
        return TitaTopology::FatTree(p);
    }
    if (sp.kind == "multirail")
    {
        TitaTopology::MultiRailParams p;
        p.blocks = static_cast<uint32_t>(sp.Num("blocks", p.blocks));
        p.serversPerBlock = static_cast<uint32_t>(sp.Num("servers", p.serversPerBlock));
        p.gpusPerServer = static_cast<uint32_t>(sp.Num("gpus", p.gpusPerServer));
        p.spines = static_cast<uint32_t>(sp.Num("spines", p.spines));
        p.linksPerSpine = static_cast<uint32_t>(sp.Num("links_per_spine", p.linksPerSpine));
        p.nicRateBps = static_cast<uint64_t>(sp.Num("nic_rate", p.nicRateBps));
        p.fabricRateBps = static_cast<uint64_t>(sp.Num("fabric_rate", p.fabricRateBps));
        p.linkDelayNs = static_cast<uint64_t>(sp.Num("delay", p.linkDelayNs));
        p.nvlink = sp.Num("nvlink", 0) != 0;
        p.nvlinkRateBps = static_cast<uint64_t>(sp.Num("nvlink_rate", p.nvlinkRateBps));
        return TitaTopology::MultiRail(p);
    }
    if (sp.kind == "star")
    {
        // n hosts on one switch (incast experiments).
        TitaTopology t;
        const uint32_t n = static_cast<uint32_t>(sp.Num("n", 3));
        const uint32_t sw = t.AddSwitch("tor", 1);
        for (uint32_t i = 0; i < n; ++i)
        {
            const uint32_t h = t.AddHost("host" + std::to_string(i));
            t.AddLink(h,
                      sw,
                      static_cast<uint64_t>(sp.Num("rate", 100e9)),
                      static_cast<uint64_t>(sp.Num("delay", 1000)));
        }
        return t;
    }
    const std::string path = sp.kind == "file" ? sp.Str("path", "") : arg;
    TitaTopology t;
    std::string err;
    NS_ABORT_MSG_IF(!TitaTopology::ReadHpcc(path, &t, &err), err);
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
        for (uint32_t h = 0; h < net.GetNHosts(); ++h)
        {
            ranks.push_back({h, -1, -1});
        }
    }
    const std::string n = sp.Str("ranks", "all");
    if (n != "all")
    {
        const auto want = static_cast<std::size_t>(std::stoul(n));
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
    return ranks;
}

uint64_t
PeakRssKb()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<uint64_t>(ru.ru_maxrss);
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
                 "receiver=R,bytes=B,jitter=NS,at=NS | allreduce:ranks=all|N,bytes=B,order=rail|server | "
                 "alltoall:ranks=N,bytes=B,pxn=0|1",
                 workloadArg);
    cmd.AddValue("cc", "Congestion control: none dcqcn timely hpcc swift powertcp nscc tita", cc);
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
                 "and window) and qlen_series.csv (every non-empty switch queue); 0: none",
                 seriesArg);
    cmd.AddValue("int-off",
                 "INT off on some switches: all | half (every other switch of each tier) | tor | agg | core",
                 intOff);
    cmd.Parse(argc, argv);

    const auto wallStart = std::chrono::steady_clock::now();
    std::filesystem::create_directories(outDir);
    const Time duration(durationArg);
    const Time stop(stopArg);

    TitaTopology topo = MakeTopology(topoArg);
    TitaNetworkHelper net;
    net.EnableNames(names);
    if (!net.SetIntOff(intOff))
    {
        std::cerr << "tita-sim: --int-off=" << intOff << ": expected all, half, tor, agg or core\n";
        return 2;
    }
    net.Build(topo);
    if (!intOff.empty())
    {
        std::cerr << "tita-sim: INT off on " << net.GetIntOffCount() << " switches (" << intOff << ")\n";
    }
    std::cerr << "tita-sim: " << topo.Describe() << ", max base RTT " << net.GetMaxBaseRttNs() << " ns, cc "
              << cc << (ccParams.empty() ? "" : " " + ccParams) << "\n";

    Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
    mgr->SetAttribute("Cc", StringValue(cc));
    mgr->SetAttribute("CcParams", StringValue(ccParams));
    mgr->SetNetwork(&net);

    // ---- outputs
    std::ofstream fct(outDir + "/fct.csv");
    fct << "id,src,dst,bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,hops,ok,group,step\n";
    mgr->TraceConnectWithoutContext(
        "FlowComplete",
        MakeBoundCallback(
            +[](std::ofstream* out, const TitaFlowRecord& r) {
                *out << r.id << ',' << r.src << ',' << r.dst << ',' << r.bytes << ','
                     << r.start.GetNanoSeconds() << ',' << r.end.GetNanoSeconds() << ','
                     << (r.end - r.start).GetNanoSeconds() << ',' << r.idealNs << ',' << r.Slowdown() << ','
                     << r.hops << ',' << (r.ok ? 1 : 0) << ',' << r.group << ',' << r.step << '\n';
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
    const Time qInterval(qlenInterval);
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
    const Time seriesInterval(seriesArg);
    std::ofstream flowSeries;
    std::ofstream qlenSeries;
    std::unordered_map<uint32_t, uint64_t> lastDelivered;
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
        Simulator::Schedule(seriesInterval, sampleSeries);
    };
    if (seriesInterval.IsStrictlyPositive())
    {
        flowSeries.open(outDir + "/flow_series.csv");
        flowSeries << "t_ns,flow,src,dst,delivered_bytes,goodput_bps,rate_bps,cwnd_bytes\n";
        qlenSeries.open(outDir + "/qlen_series.csv");
        qlenSeries << "t_ns,node,port,qlen_bytes\n";
        Simulator::Schedule(seriesInterval, sampleSeries);
    }

    // ---- workload
    std::vector<std::shared_ptr<TitaCollective>> collectives;
    std::stringstream wl(workloadArg);
    std::string item;
    Time arrivalsEnd = Time(0);
    int32_t nextCollective = 0;
    std::vector<uint32_t> allHosts;
    for (uint32_t h = 0; h < net.GetNHosts(); ++h)
    {
        if (!topo.Vertices()[topo.Hosts()[h]].nvlink)
        {
            allHosts.push_back(h);
        }
    }
    while (std::getline(wl, item, ';'))
    {
        const Spec sp = Spec::Parse(item);
        if (sp.kind == "poisson")
        {
            TitaFlowSizeCdf cdf;
            std::string err;
            NS_ABORT_MSG_IF(!cdf.Load(sp.Str("cdf", "data/workloads/websearch.cdf"), &err), err);
            const uint64_t rate = net.GetNic(allHosts.front())->GetDataRate().GetBitRate();
            auto flows = TitaWorkload::Poisson(cdf,
                                               allHosts,
                                               sp.Num("load", 0.3),
                                               rate,
                                               NanoSeconds(static_cast<uint64_t>(sp.Num("at", 0))),
                                               duration,
                                               seed);
            std::cerr << "tita-sim: " << flows.size() << " Poisson flows, mean size " << cdf.MeanBytes()
                      << " B, load " << sp.Num("load", 0.3) << "\n";
            if (!flows.empty())
            {
                arrivalsEnd = std::max(arrivalsEnd, flows.back().start);
            }
            TitaWorkload::Schedule(mgr, std::move(flows));
        }
        else if (sp.kind == "flows")
        {
            std::vector<TitaFlowSpec> flows;
            std::string err;
            const auto& t = topo;
            NS_ABORT_MSG_IF(!TitaWorkload::ReadHpccFlows(
                                sp.Str("path", ""),
                                [&t](uint32_t node) {
                                    return node < t.Vertices().size() ? t.HostIndexOf(node) : -1;
                                },
                                &flows,
                                &err),
                            err);
            if (!flows.empty())
            {
                arrivalsEnd = std::max(arrivalsEnd, flows.back().start);
            }
            TitaWorkload::Schedule(mgr, std::move(flows));
        }
        else if (sp.kind == "incast")
        {
            const auto n = static_cast<uint32_t>(sp.Num("senders", 16));
            const auto recv = static_cast<uint32_t>(sp.Num("receiver", 0));
            std::vector<uint32_t> senders;
            for (uint32_t h : allHosts)
            {
                if (h != recv && senders.size() < n)
                {
                    senders.push_back(h);
                }
            }
            auto flows = TitaWorkload::Incast(senders,
                                              recv,
                                              static_cast<uint64_t>(sp.Num("bytes", 500e3)),
                                              NanoSeconds(static_cast<uint64_t>(sp.Num("at", 0))),
                                              NanoSeconds(static_cast<uint64_t>(sp.Num("jitter", 0))),
                                              seed + 1);
            arrivalsEnd = std::max(arrivalsEnd, flows.back().start);
            TitaWorkload::Schedule(mgr, std::move(flows));
        }
        else if (sp.kind == "allreduce" || sp.kind == "alltoall")
        {
            auto ranks = MakeRanks(net, sp);
            const auto bytes = static_cast<uint64_t>(sp.Num("bytes", 1e6));
            const Time at = NanoSeconds(static_cast<uint64_t>(sp.Num("at", 0)));
            std::shared_ptr<TitaCollective> c;
            if (sp.kind == "allreduce")
            {
                c = TitaCollective::RingAllReduce(mgr, nextCollective++, ranks, bytes, at);
            }
            else if (sp.Num("pxn", 0) != 0)
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
            arrivalsEnd = std::max(arrivalsEnd, at);
        }
        else
        {
            NS_ABORT_MSG("unknown workload '" << sp.kind << "'");
        }
    }

    for (const std::string& h : [&] {
             std::vector<std::string> v;
             std::stringstream ss(pcapHosts);
             std::string x;
             while (std::getline(ss, x, ','))
             {
                 if (!x.empty())
                 {
                     v.push_back(x);
                 }
             }
             return v;
         }())
    {
        net.EnablePcap(outDir + "/nic", static_cast<uint32_t>(std::stoul(h)));
    }

    // ---- run: until arrivals are over and everything has completed, or --stop.
    auto lastPrint = std::chrono::steady_clock::now();
    uint64_t lastEvents = 0;
    double lastSim = 0;
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
        const double dt = std::chrono::duration<double>(now - lastPrint).count();
        if (progress > 0 && dt >= progress)
        {
            const uint64_t ev = Simulator::GetEventCount();
            const double simMs = Simulator::Now().GetSeconds() * 1e3;
            const double rate = (ev - lastEvents) / dt;
            const double msPerS = (simMs - lastSim) / dt;
            const double target = std::max(arrivalsEnd.GetSeconds() * 1e3, simMs);
            std::fprintf(stderr,
                         "[%7.1fs] sim %.3f ms | %.0f events/s | %.3f sim-ms/s | flows %u/%u active %u | "
                         "ETA(arrivals) %.0fs\n",
                         std::chrono::duration<double>(now - wallStart).count(),
                         simMs,
                         rate,
                         msPerS,
                         mgr->GetFinished(),
                         mgr->GetStarted(),
                         mgr->GetActive(),
                         msPerS > 0 ? (target - simMs) / msPerS : 0.0);
            lastPrint = now;
            lastEvents = ev;
            lastSim = simMs;
        }
        Simulator::Schedule(MicroSeconds(20), watch);
    };
    Simulator::Schedule(MicroSeconds(20), watch);
    Simulator::Stop(stop);
    const auto runStart = std::chrono::steady_clock::now();
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
        u << "link,from_node,to_node,rate_bps,tx_bytes,utilization,pfc_pauses_rx,max_qlen_bytes,drops\n";
        const uint64_t endNs = static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
        for (uint32_t l = 0; l < topo.Links().size(); ++l)
        {
            auto [a, b] = net.GetLinkDevices(l);
            for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
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
                  << x->GetPfcPausesReceived() << ',' << maxq << ',' << drops << '\n';
            }
        }
    }
    {
        std::ofstream st(outDir + "/steps.csv");
        st << "collective,kind,ranks,step,start_ns,end_ns,duration_ns,messages,bytes\n";
        std::ofstream co(outDir + "/collectives.csv");
        co << "collective,kind,ranks,bytes,start_ns,end_ns,duration_ns,done\n";
        for (const auto& c : collectives)
        {
            co << c->GetId() << ',' << c->GetKind() << ',' << c->GetRanks() << ',' << c->GetBytes() << ','
               << c->GetStart().GetNanoSeconds() << ',' << c->GetEnd().GetNanoSeconds() << ','
               << (c->GetEnd() - c->GetStart()).GetNanoSeconds() << ',' << c->IsDone() << '\n';
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
    for (uint32_t h = 0; h < net.GetNHosts(); ++h)
    {
        nicDrops += net.GetNic(h)->GetEngineDrops();
    }
    const double totalWall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    std::ofstream js(outDir + "/summary.json");
    js << "{\n  \"topo\": \"" << topoArg << "\",\n  \"workload\": \"" << workloadArg << "\",\n  \"cc\": \"" << cc
       << "\",\n  \"cc_params\": \"" << ccParams << "\",\n  \"seed\": " << seed << ",\n  \"hosts\": "
       << net.GetNHosts() << ",\n  \"switches\": " << net.GetSwitches().size()
       << ",\n  \"int_off_switches\": " << net.GetIntOffCount()
       << ",\n  \"max_base_rtt_ns\": " << net.GetMaxBaseRttNs() << ",\n  \"flows_started\": "
       << mgr->GetStarted() << ",\n  \"flows_finished\": " << mgr->GetFinished()
       << ",\n  \"flows_failed\": " << mgr->GetFailed() << ",\n  \"pfc_pauses_sent\": " << pauses
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
          }() << "}" << ",\n  \"nic_drops\": " << nicDrops
       << ",\n  \"sim_seconds\": " << simEnd << ",\n  \"events\": " << events
       << ",\n  \"run_wall_seconds\": " << wall << ",\n  \"total_wall_seconds\": " << totalWall
       << ",\n  \"events_per_second\": " << (wall > 0 ? events / wall : 0)
       << ",\n  \"sim_ms_per_wall_second\": " << (wall > 0 ? simEnd * 1e3 / wall : 0)
       << ",\n  \"peak_rss_kb\": " << PeakRssKb() << "\n}\n";
    std::fprintf(stderr,
                 "tita-sim: done at %.3f ms simulated: %u/%u flows finished (%u failed), %lu PFC pauses, "
                 "%lu switch drops, %lu NIC drops; %lu events in %.1f s (%.0f events/s, %.3f sim-ms/s), "
                 "peak RSS %lu MB\n",
                 simEnd * 1e3,
                 mgr->GetFinished(),
                 mgr->GetStarted(),
                 mgr->GetFailed(),
                 static_cast<unsigned long>(pauses),
                 static_cast<unsigned long>(drops),
                 static_cast<unsigned long>(nicDrops),
                 static_cast<unsigned long>(events),
                 wall,
                 wall > 0 ? events / wall : 0,
                 wall > 0 ? simEnd * 1e3 / wall : 0,
                 static_cast<unsigned long>(PeakRssKb() / 1024));
    Simulator::Destroy();
    return 0;
}
