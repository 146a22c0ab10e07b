// tita-dodge: Hash Dodging under a silent fault (doc/hash-dodging.md).
//
// A long RDMA WRITE from a host in the first pod to a host in the last, and a
// collective among other hosts, run on a fat-tree whose switches add the dodge
// offset to ECMP. At --fault-at, the aggregation switch's port to the core on
// the long flow's path starts dropping everything routed to it (a black hole)
// or a fraction of it (--fault=loss); --reroute-after later the control plane
// withdraws the port from its ECMP groups. With --dodge the NICs' engines
// detect the fault from protocol state and move their flows themselves.
//
//   tita-dodge --fault=blackhole --dodge=1 --out=out/hd/bh-on
//
// Outputs in --out: series.csv (t_ns, long-flow bytes delivered and Gb/s per
// sample, collective bytes delivered and Gb/s), path_changes.csv (every QP's
// path changes: time, host, qpn, reason, old and new dodge value, whether it
// is the long flow), summary.json (detection and recovery times, completion,
// bytes delivered, collective duration).
#include "tita-flow-manager.h"
#include "tita-network-helper.h"
#include "tita-topology.h"
#include "tita-workload.h"

#include "ns3/boolean.h"
#include "ns3/command-line.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

using namespace ns3;

namespace
{

namespace eng = ::tita::engine;

// "fattree:pods=2,tors=2,aggs=2,hosts=2,cores=2" or an HPCC topology file.
TitaTopology
MakeTopology(const std::string& arg)
{
    if (arg.rfind("fattree", 0) == 0)
    {
        TitaTopology::FatTreeParams p;
        std::map<std::string, double> kv;
        std::stringstream ss(arg.substr(std::min(arg.size(), arg.find(':') + 1)));
        std::string item;
        while (std::getline(ss, item, ','))
        {
            const auto eq = item.find('=');
            NS_ABORT_MSG_IF(eq == std::string::npos, "bad --topo item " << item);
            kv[item.substr(0, eq)] = std::stod(item.substr(eq + 1));
        }
        auto get = [&kv](const char* k, double def) { return kv.count(k) ? kv[k] : def; };
        p.pods = static_cast<uint32_t>(get("pods", p.pods));
        p.torsPerPod = static_cast<uint32_t>(get("tors", p.torsPerPod));
        p.aggsPerPod = static_cast<uint32_t>(get("aggs", p.aggsPerPod));
        p.hostsPerTor = static_cast<uint32_t>(get("hosts", p.hostsPerTor));
        p.coresPerAgg = static_cast<uint32_t>(get("cores", p.coresPerAgg));
        p.torAggRateBps = static_cast<uint64_t>(get("fabric_rate", 400e9));
        p.aggCoreRateBps = p.torAggRateBps;
        return TitaTopology::FatTree(p);
    }
    TitaTopology t;
    std::string err;
    NS_ABORT_MSG_IF(!TitaTopology::ReadHpcc(arg, &t, &err), err);
    return t;
}

struct PathChange
{
    Time at;
    uint32_t host;
    uint32_t qpn;
    uint8_t reason;
    uint16_t from;
    uint16_t to;
};

} // namespace

int
main(int argc, char* argv[])
{
    Time::SetResolution(Time::PS);
    std::string topoArg = "data/workloads/fat_tree_320.topo";
    std::string fault = "blackhole";
    double lossRate = 0.05;
    bool dodge = true;
    std::string recovery = "gbn";
    std::string cc = "hpcc";
    uint64_t flowBytes = 100'000'000;
    std::string faultAtArg = "1ms";
    std::string rerouteAfterArg = "20s";
    std::string collective = "alltoall";
    uint32_t ranks = 40;
    uint64_t collectiveBytes = 32'000'000;
    std::string collectiveAtArg = "500us";
    std::string sampleArg = "10us";
    std::string seriesBeforeArg = "500us";
    std::string seriesAfterArg = "3ms";
    std::string stopArg = "60s";
    uint32_t qpTimeout = 10;
    uint32_t retryCnt = 7;
    std::string outDir = "out/tita-dodge";

    CommandLine cmd(__FILE__);
    cmd.Usage("A long flow and a collective on a fat-tree; a port on the long flow's path fails silently.");
    cmd.AddValue("topo", "HPCC topology file or fattree:pods=,tors=,aggs=,hosts=,cores=,fabric_rate=", topoArg);
    cmd.AddValue("fault", "none | blackhole (drop all routed to the port) | loss (random)", fault);
    cmd.AddValue("loss", "Drop probability for --fault=loss", lossRate);
    cmd.AddValue("dodge", "Path control in the NICs (Hash Dodging)", dodge);
    cmd.AddValue("recovery", "gbn | sr", recovery);
    cmd.AddValue("cc", "Congestion control of every QP", cc);
    cmd.AddValue("flow-bytes", "Size of the long flow", flowBytes);
    cmd.AddValue("fault-at", "When the port fails", faultAtArg);
    cmd.AddValue("reroute-after", "Control plane: the port leaves its ECMP groups this long after the fault",
                 rerouteAfterArg);
    cmd.AddValue("collective", "none | alltoall | allreduce", collective);
    cmd.AddValue("ranks", "Hosts in the collective (spread over the ToRs; not the long flow's)", ranks);
    cmd.AddValue("collective-bytes", "Bytes per rank", collectiveBytes);
    cmd.AddValue("collective-at", "When the collective starts", collectiveAtArg);
    cmd.AddValue("sample", "Throughput sampling interval", sampleArg);
    cmd.AddValue("series-before", "Sample from this long before the fault", seriesBeforeArg);
    cmd.AddValue("series-after", "... until this long after it", seriesAfterArg);
    cmd.AddValue("stop", "Hard stop (simulated)", stopArg);
    cmd.AddValue("qp-timeout", "IB local ACK timeout code of every QP (4.096 us x 2^code)", qpTimeout);
    cmd.AddValue("retry-cnt", "Retransmission rounds before RETRY_EXC_ERR", retryCnt);
    cmd.AddValue("out", "Output directory", outDir);
    cmd.Parse(argc, argv);
    std::filesystem::create_directories(outDir);
    const Time faultAt(faultAtArg);
    const Time rerouteAfter(rerouteAfterArg);
    const Time sample(sampleArg);

    TitaNetworkHelper net;
    net.SetSwitchAttribute("DodgeField", StringValue("udp-sport"));
    net.SetNicAttribute("DodgeField", StringValue(dodge ? "udp-sport" : "none"));
    net.SetNicAttribute("SelectiveRepeat", BooleanValue(recovery == "sr"));
    net.SetNicAttribute("QpTimeout", UintegerValue(qpTimeout));
    net.SetNicAttribute("RetryCnt", UintegerValue(retryCnt));
    net.Build(MakeTopology(topoArg));
    const uint32_t nHosts = net.GetNHosts();
    std::cerr << "tita-dodge: " << net.GetTopology().Describe() << ", max base RTT " << net.GetMaxBaseRttNs()
              << " ns, fault " << fault << ", dodging " << (dodge ? "on" : "off") << ", " << recovery << ", "
              << cc << "\n";

    // ---- the long flow: first host to the last (another pod)
    const uint32_t src = 0;
    const uint32_t dst = nHosts - 1;
    Ptr<RdmaNicNetDevice> a = net.GetNic(src);
    Ptr<RdmaNicNetDevice> b = net.GetNic(dst);
    const uint32_t qa = a->CreateQp();
    const uint32_t qb = b->CreateQp();
    NS_ABORT_IF(a->ConnectQp(qa, b, qb) != 0 || b->ConnectQp(qb, a, qa) != 0);
    a->SetCc(qa, cc, {});
    b->SetCc(qb, cc, {});
    eng::QpInfo info;
    a->GetEngine().qp_info(qa, &info);
    std::vector<uint16_t> ports;
    const auto path = net.TracePath(src, dst, info.udp_sport, 0, &ports);
    NS_ABORT_MSG_IF(path.size() != 7, "the long flow must cross the core (host tor agg core agg tor host)");
    const auto& vs = net.GetTopology().Vertices();
    Ptr<TitaSwitchNode> agg = net.GetSwitchOfVertex(path[2]);
    const uint16_t port = ports[1];
    std::cerr << "tita-dodge: long flow " << src << " -> " << dst << ", UDP source port " << info.udp_sport
              << ", path";
    for (uint32_t v : path)
    {
        std::cerr << " " << vs[v].name;
    }
    std::cerr << "; the fault is on " << vs[path[2]].name << " port " << port << " (to " << vs[path[3]].name
              << ")\n";

    // ---- the collective, among other hosts spread over the ToRs
    Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
    mgr->SetAttribute("Cc", StringValue(cc));
    mgr->SetNetwork(&net);
    std::shared_ptr<TitaCollective> coll;
    std::vector<TitaCollective::Rank> rankList;
    if (collective != "none" && ranks > 1)
    {
        const uint32_t stride = std::max<uint32_t>(1, (nHosts - 2) / ranks);
        for (uint32_t h = 1; h + 1 < nHosts && rankList.size() < ranks; h += stride)
        {
            rankList.push_back({h, -1, -1});
        }
        coll = collective == "allreduce"
                   ? TitaCollective::RingAllReduce(mgr, 0, rankList, collectiveBytes, Time(collectiveAtArg))
                   : TitaCollective::AllToAll(mgr, 0, rankList, collectiveBytes, Time(collectiveAtArg));
    }

    // ---- completions and path changes of the long flow (its hosts are not ranks)
    struct LongFlow
    {
        Time done = Time(-1);
        bool ok = false;
        std::string status;
    } lf;
    a->SetCompletionCallback(MakeBoundCallback(
        +[](LongFlow* f, Ptr<RdmaNicNetDevice>, const eng::WorkCompletion& wc) {
            f->done = Simulator::Now();
            f->ok = wc.status == eng::WcStatus::kSuccess;
            f->status = std::string(eng::to_string(wc.status));
        },
        &lf));
    std::vector<PathChange> changes;
    for (uint32_t h = 0; h < nHosts; ++h)
    {
        struct Ctx
        {
            std::vector<PathChange>* out;
            uint32_t host;
        };
        auto* ctx = new Ctx{&changes, h}; // lives for the run
        net.GetNic(h)->TraceConnectWithoutContext(
            "PathChange",
            MakeBoundCallback(
                +[](Ctx* c, uint32_t qpn, uint8_t reason, uint16_t from, uint16_t to) {
                    c->out->push_back({Simulator::Now(), c->host, qpn, reason, from, to});
                },
                ctx));
    }

    // ---- the fault and the control plane
    ::tita::fabric::FaultConfig f;
    f.drop_all = fault == "blackhole";
    f.drop_probability = fault == "loss" ? lossRate : 0;
    if (fault != "none")
    {
        Simulator::Schedule(faultAt, &TitaSwitchNode::SetFault, agg, port, f);
        Simulator::Schedule(faultAt + rerouteAfter, &TitaSwitchNode::SetPortUp, agg, port, false);
    }

    // ---- throughput samples around the fault
    struct Sample
    {
        int64_t tNs;
        uint64_t flowBytes;
        uint64_t collBytes;
    };
    std::vector<Sample> samples;
    const Time seriesStart = std::max(Time(0), faultAt - Time(seriesBeforeArg));
    const Time seriesEnd = faultAt + Time(seriesAfterArg);
    auto collBytes = [&]() {
        uint64_t sum = 0;
        for (const auto& r : rankList)
        {
            eng::Engine& e = net.GetNic(r.host)->GetEngine();
            for (uint32_t q : e.qp_numbers())
            {
                sum += e.qp_counters(q)->rx_payload_bytes;
            }
        }
        return sum;
    };
    std::function<void()> sampler = [&]() {
        samples.push_back({Simulator::Now().GetNanoSeconds(),
                           b->GetEngine().qp_counters(qb)->rx_payload_bytes,
                           coll ? collBytes() : 0});
        if (Simulator::Now() + sample <= seriesEnd)
        {
            Simulator::Schedule(sample, sampler);
        }
    };
    Simulator::Schedule(seriesStart, sampler);

    // ---- run until the long flow and the collective are over
    std::function<void()> watch = [&]() {
        const bool flowOver = lf.done.IsPositive();
        const bool collOver = !coll || coll->IsDone() || mgr->GetFailed() > 0;
        if (flowOver && collOver && Simulator::Now() > seriesEnd)
        {
            Simulator::Stop();
            return;
        }
        Simulator::Schedule(MicroSeconds(200), watch);
    };
    Simulator::Schedule(MicroSeconds(200), watch);
    NS_ABORT_IF(a->PostWrite(qa, 1, static_cast<uint32_t>(std::min<uint64_t>(flowBytes, 0x7fffffff)), false, b) != 0);
    Simulator::Stop(Time(stopArg));
    const auto wallStart = std::chrono::steady_clock::now();
    Simulator::Run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();

    // ---- results
    const uint64_t delivered = b->GetEngine().qp_counters(qb)->rx_payload_bytes;
    std::ofstream series(outDir + "/series.csv");
    series << "t_ns,flow_bytes,flow_gbps,coll_bytes,coll_gbps\n";
    for (std::size_t i = 0; i < samples.size(); ++i)
    {
        const double dt = i ? static_cast<double>(samples[i].tNs - samples[i - 1].tNs) : 0;
        const double fg = i ? (samples[i].flowBytes - samples[i - 1].flowBytes) * 8.0 / dt : 0;
        const double cg = i ? (samples[i].collBytes - samples[i - 1].collBytes) * 8.0 / dt : 0;
        series << samples[i].tNs << ',' << samples[i].flowBytes << ',' << fg << ',' << samples[i].collBytes << ','
               << cg << '\n';
    }
    std::ofstream pc(outDir + "/path_changes.csv");
    pc << "t_ns,host,qpn,reason,from,to,long_flow\n";
    int64_t detectNs = -1;
    uint32_t flowChanges = 0;
    uint32_t collChanges = 0;
    for (const auto& c : changes)
    {
        const bool isLong = c.host == src && c.qpn == qa;
        pc << c.at.GetNanoSeconds() << ',' << c.host << ',' << c.qpn << ','
           << eng::to_string(static_cast<eng::RepathReason>(c.reason)) << ',' << c.from << ',' << c.to << ','
           << isLong << '\n';
        if (isLong)
        {
            ++flowChanges;
            if (detectNs < 0)
            {
                detectNs = (c.at - faultAt).GetNanoSeconds();
            }
        }
        else
        {
            ++collChanges;
        }
    }
    // Recovery: the end of the first run of 5 samples at >= 90% of the pre-fault
    // mean that follows the first sample below 50% of it (or the fault itself).
    double pre = 0;
    uint32_t preN = 0;
    for (std::size_t i = 1; i < samples.size(); ++i)
    {
        if (samples[i].tNs <= faultAt.GetNanoSeconds())
        {
            pre += (samples[i].flowBytes - samples[i - 1].flowBytes) * 8.0 /
                   static_cast<double>(samples[i].tNs - samples[i - 1].tNs);
            ++preN;
        }
    }
    pre = preN ? pre / preN : 0;
    int64_t dipNs = -1;
    int64_t recoverNs = -1;
    uint32_t run = 0;
    for (std::size_t i = 1; i < samples.size(); ++i)
    {
        if (samples[i].tNs <= faultAt.GetNanoSeconds())
        {
            continue;
        }
        const double g = (samples[i].flowBytes - samples[i - 1].flowBytes) * 8.0 /
                         static_cast<double>(samples[i].tNs - samples[i - 1].tNs);
        if (dipNs < 0 && g < 0.5 * pre)
        {
            dipNs = samples[i].tNs;
        }
        if (dipNs >= 0 || fault == "loss")
        {
            run = g >= 0.9 * pre ? run + 1 : 0;
            if (run == 5 && recoverNs < 0)
            {
                recoverNs = samples[i - 4].tNs - sample.GetNanoSeconds() - faultAt.GetNanoSeconds();
            }
        }
    }
    // Throughput of the long flow over the series after the fault.
    double after = 0;
    if (!samples.empty() && samples.back().tNs > faultAt.GetNanoSeconds())
    {
        auto it = std::find_if(samples.begin(), samples.end(), [&](const Sample& s) {
            return s.tNs >= faultAt.GetNanoSeconds();
        });
        after = (samples.back().flowBytes - it->flowBytes) * 8.0 / static_cast<double>(samples.back().tNs - it->tNs);
    }
    std::ofstream js(outDir + "/summary.json");
    js << "{\n  \"topo\": \"" << topoArg << "\",\n  \"fault\": \"" << fault << "\",\n  \"loss\": " << lossRate
       << ",\n  \"dodge\": " << (dodge ? "true" : "false") << ",\n  \"recovery\": \"" << recovery
       << "\",\n  \"cc\": \"" << cc << "\",\n  \"fault_at_ns\": " << faultAt.GetNanoSeconds()
       << ",\n  \"reroute_after_ns\": " << rerouteAfter.GetNanoSeconds() << ",\n  \"fault_switch\": \""
       << vs[path[2]].name << "\",\n  \"fault_port\": " << port << ",\n  \"flow_bytes\": " << flowBytes
       << ",\n  \"flow_delivered_bytes\": " << delivered << ",\n  \"flow_done_ns\": " << lf.done.GetNanoSeconds()
       << ",\n  \"flow_status\": \"" << lf.status << "\",\n  \"flow_ok\": " << (lf.ok ? "true" : "false")
       << ",\n  \"flow_path_changes\": " << flowChanges << ",\n  \"detect_ns\": " << detectNs
       << ",\n  \"dip_ns\": " << (dipNs < 0 ? -1 : dipNs - faultAt.GetNanoSeconds())
       << ",\n  \"recover_ns\": " << recoverNs << ",\n  \"pre_fault_gbps\": " << pre
       << ",\n  \"after_fault_gbps\": " << after << ",\n  \"collective\": \"" << collective
       << "\",\n  \"collective_ranks\": " << rankList.size() << ",\n  \"collective_done\": "
       << (coll && coll->IsDone() ? "true" : "false") << ",\n  \"collective_ns\": "
       << (coll && coll->IsDone() ? (coll->GetEnd() - coll->GetStart()).GetNanoSeconds() : -1)
       << ",\n  \"collective_failed_messages\": " << mgr->GetFailed()
       << ",\n  \"collective_path_changes\": " << collChanges
       << ",\n  \"sim_end_ns\": " << Simulator::Now().GetNanoSeconds() << ",\n  \"wall_seconds\": " << wall
       << "\n}\n";
    std::fprintf(stderr,
                 "tita-dodge: long flow %s at %.3f ms (%lu of %lu bytes), %u path changes, detection %.1f us, "
                 "recovery %.1f us; collective %s in %.3f ms, %u failed messages, %u path changes; %.1f s wall\n",
                 lf.status.empty() ? "unfinished" : lf.status.c_str(),
                 lf.done.GetSeconds() * 1e3,
                 static_cast<unsigned long>(delivered),
                 static_cast<unsigned long>(flowBytes),
                 flowChanges,
                 detectNs / 1e3,
                 recoverNs / 1e3,
                 coll && coll->IsDone() ? "done" : "not done",
                 coll && coll->IsDone() ? (coll->GetEnd() - coll->GetStart()).GetSeconds() * 1e3 : -1.0,
                 mgr->GetFailed(),
                 collChanges,
                 wall);
    Simulator::Destroy();
    return 0;
}
