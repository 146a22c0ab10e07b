// TestSuite "tita-scenario": the helpers tita-sim and tita-dodge are built from
// (ns3-model/doc/tita-ns3.md, "Helpers"): spec parsing with units and its
// messages, topology specs, collective ranks, link faults, the workload kinds,
// the output writer and summary.json, a whole TitaScenario run and the Hash
// Dodging experiment with its recovery measure. Each message checked is the
// exact line a runner prints after "tita-sim: ".
#include "tita-dodge-experiment.h"
#include "tita-link-faults.h"
#include "tita-output-writer.h"
#include "tita-ranks.h"
#include "tita-run-recorder.h"
#include "tita-scenario.h"
#include "tita-spec.h"
#include "tita-test-topologies.h"
#include "tita-topology-spec.h"
#include "tita-workload-kinds.h"

#include "ns3/config.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"
#include "tita/fabric/types.h"

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace ns3;

namespace
{

std::string
ReadFile(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string>
Lines(const std::string& text)
{
    return TitaSpec::SplitList(text, '\n');
}

// ---------------------------------------------------------------- specs

class TitaSpecTestCase : public TestCase
{
  public:
    TitaSpecTestCase()
        : TestCase("TitaSpec: keys with units, the first mistake, unknown keys")
    {
    }

  private:
    void DoRun() override
    {
        std::string err;
        const TitaSpec sp = TitaSpec::Parse("--topo", "star:n=4,rate=40Gbps,delay=2us,nvlink,size=1MiB,load=0.25");
        NS_TEST_EXPECT_MSG_EQ(sp.GetKind(), "star", "kind");
        NS_TEST_EXPECT_MSG_EQ(sp.Count("n", 3, 2), 4, "count");
        NS_TEST_EXPECT_MSG_EQ(sp.Rate("rate", 1), 40'000'000'000ULL, "rate");
        NS_TEST_EXPECT_MSG_EQ(sp.TimeNs("delay", 1), 2000, "time: ns-3 units");
        NS_TEST_EXPECT_MSG_EQ(sp.Flag("nvlink", false), true, "a key without '=' is 1");
        NS_TEST_EXPECT_MSG_EQ(sp.Bytes("size", 0), 1ULL << 20, "bytes");
        NS_TEST_EXPECT_MSG_EQ(sp.Real("load", 0, 0, 1), 0.25, "real");
        NS_TEST_EXPECT_MSG_EQ(sp.Str("absent", "dflt"), "dflt", "default");
        NS_TEST_EXPECT_MSG_EQ(sp.Check(&err), true, err);

        const TitaSpec bare = TitaSpec::Parse("--x", "k:a=1,b=2");
        NS_TEST_EXPECT_MSG_EQ(bare.TimeNs("a", 0), 1, "bare times are nanoseconds");
        NS_TEST_EXPECT_MSG_EQ(bare.Check(&err), false, "b was not asked for");
        NS_TEST_EXPECT_MSG_EQ(err, "--x=k: unknown key 'b' (known: a)", "unknown key message");

        // The first mistake wins, and a failed getter gives its default.
        const TitaSpec two = TitaSpec::Parse("--workload", "incast:senders=0,bytes=1x");
        NS_TEST_EXPECT_MSG_EQ(two.Count("senders", 16, 1), 16, "default after a mistake");
        NS_TEST_EXPECT_MSG_EQ(two.Bytes("bytes", 7), 7, "default after a mistake");
        NS_TEST_EXPECT_MSG_EQ(two.Check(&err), false, "two mistakes");
        NS_TEST_EXPECT_MSG_EQ(err, "--workload=incast: senders: 0 is out of range (at least 1)", "first mistake");

        const std::pair<const char*, const char*> bad[] = {
            {"p:load=2", "--w=p: load: 2 is out of range [1e-06, 1]"},
            {"p:flag=2", "--w=p: flag: '2': expected 0 or 1"},
            {"p:rate=0", "--w=p: rate: a rate must be above 0"},
            {"p:rate=10", "--w=p: rate: rate '10' has no unit: write 10Gbps, 10Mbps or 10bps"},
        };
        for (const auto& [text, want] : bad)
        {
            const TitaSpec b = TitaSpec::Parse("--w", text);
            b.Real("load", 0.3, 1e-6, 1);
            b.Flag("flag", false);
            b.Rate("rate", 1);
            NS_TEST_EXPECT_MSG_EQ(b.Check(&err), false, text);
            NS_TEST_EXPECT_MSG_EQ(err, want, text);
        }

        NS_TEST_EXPECT_MSG_EQ(TitaSpec::Parse("--topo", "data/x.topo").GetKind(), "data/x.topo", "no colon: all kind");
        const auto items = TitaSpec::SplitList("a;;b;", ';');
        NS_TEST_ASSERT_MSG_EQ(items.size(), 2, "empty items dropped");
        NS_TEST_EXPECT_MSG_EQ(items[1], "b", "order kept");
        NS_TEST_EXPECT_MSG_EQ(TitaSpec::SplitList(";a;;b;", ';', true).size(), 4, "empty items kept, not the last");
    }
};

// ---------------------------------------------------------------- topology specs

class TitaTopologySpecTestCase : public TestCase
{
  public:
    TitaTopologySpecTestCase()
        : TestCase("TitaParseTopology: fattree, multirail, star and HPCC files as generated; mistakes")
    {
    }

  private:
    void DoRun() override
    {
        std::string err;
        TitaTopology t;
        NS_TEST_ASSERT_MSG_EQ(TitaParseTopology("fattree:pods=2,tors=2,aggs=2,hosts=4,cores=2,host_rate=25Gbps,"
                                                "fabric_rate=100Gbps,delay=500ns",
                                                &t,
                                                &err),
                              true,
                              err);
        const TitaTopology want = tita_test::FatTree(2, 2, 2, 4, 2, 100'000'000'000);
        NS_TEST_EXPECT_MSG_EQ(t.Describe(), "16 hosts, 12 switches, 32 links", "fat-tree shape");
        NS_TEST_ASSERT_MSG_EQ(t.Links().size(), want.Links().size(), "links");
        for (uint32_t l = 0; l < t.Links().size(); ++l)
        {
            const bool hostLink = t.HostIndexOf(t.Links()[l].a) >= 0 || t.HostIndexOf(t.Links()[l].b) >= 0;
            NS_TEST_EXPECT_MSG_EQ(t.Links()[l].a, want.Links()[l].a, "link " << l);
            NS_TEST_EXPECT_MSG_EQ(t.Links()[l].rateBps, hostLink ? 25'000'000'000ULL : 100'000'000'000ULL, "rate");
            NS_TEST_EXPECT_MSG_EQ(t.Links()[l].delayNs, 500, "delay");
        }

        NS_TEST_ASSERT_MSG_EQ(TitaParseTopology("star:n=5,rate=40Gbps", &t, &err), true, err);
        NS_TEST_EXPECT_MSG_EQ(t.Describe(), TitaTopology::Star(5, 40'000'000'000, 1000).Describe(), "star");
        NS_TEST_EXPECT_MSG_EQ(t.Links()[4].rateBps, 40'000'000'000ULL, "star rate");

        NS_TEST_ASSERT_MSG_EQ(TitaParseTopology("multirail:blocks=2,servers=2,gpus=4,spines=2,nvlink=1", &t, &err),
                              true,
                              err);
        NS_TEST_EXPECT_MSG_EQ(t.GetNServers(), 4, "servers");
        NS_TEST_EXPECT_MSG_EQ(t.Hosts().size(), 32, "a rail NIC and an NVLink NIC per GPU");

        // A classic GPU cluster: 2 pods x 2 ToRs x 16 hosts = 8 servers of 8 GPUs,
        // a server's NICs all on its ToR, an NVSwitch per server.
        NS_TEST_ASSERT_MSG_EQ(TitaParseTopology("fattree:pods=2,tors=2,aggs=2,hosts=16,cores=2,gpus=8,nvlink=1",
                                                &t,
                                                &err),
                              true,
                              err);
        NS_TEST_EXPECT_MSG_EQ(t.GetNServers(), 8, "fat-tree servers");
        NS_TEST_EXPECT_MSG_EQ(t.GetGpusPerServer(), 8, "fat-tree GPUs per server");
        NS_TEST_EXPECT_MSG_EQ(t.Hosts().size(), 128, "a NIC and an NVLink NIC per GPU");
        for (uint32_t sv = 0; sv < 8; ++sv)
        {
            for (uint32_t g = 0; g < 8; ++g)
            {
                const auto& nic = t.Vertices()[t.Hosts()[t.RailHost(sv, g)]];
                const auto& nv = t.Vertices()[t.Hosts()[t.NvlinkHost(sv, g)]];
                NS_TEST_EXPECT_MSG_EQ(nic.server * 8 + nic.gpu, static_cast<int32_t>(sv * 8 + g), "NIC's GPU");
                NS_TEST_EXPECT_MSG_EQ(nic.block, static_cast<int32_t>(sv / 2), "two servers a ToR");
                NS_TEST_EXPECT_MSG_EQ(nv.nvlink && nv.node == nic.node, true, "NVLink NIC on the GPU's node");
            }
        }

        const std::string file = TITA_DATA_DIR "/workloads/fat_tree_320.topo";
        NS_TEST_ASSERT_MSG_EQ(TitaParseTopology(file, &t, &err), true, err);
        NS_TEST_EXPECT_MSG_EQ(t.Hosts().size(), 320, "HPCC file, bare path");
        NS_TEST_ASSERT_MSG_EQ(TitaParseTopology("file:path=" + file, &t, &err), true, err);
        NS_TEST_EXPECT_MSG_EQ(t.Hosts().size(), 320, "HPCC file, file:path=");

        const std::string one = CreateTempDirFilename("one-host.topo");
        std::ofstream(one) << "2 1 1\n1\n0 1 100Gbps 1us 0\n";
        const std::pair<std::string, std::string> bad[] = {
            {"star:n=1", "--topo=star: n: 1 is out of range (at least 2)"},
            {"fattree:podz=2",
             "--topo=fattree: unknown key 'podz' (known: aggs, core_rate, cores, delay, fabric_rate, gpus, "
             "host_rate, hosts, nvlink, nvlink_rate, oversub, pods, tors)"},
            {"fattree:hosts=12,gpus=8",
             "--topo=fattree: hosts 12 is not a multiple of gpus 8 (a server's GPUs share one ToR)"},
            {"fattree:nvlink=1", "--topo=fattree: nvlink=1 needs gpus= (GPU servers)"},
            {"fattree:oversub=2,gpus=8",
             "--topo=fattree: gpus= and oversub= together: give hosts= (a multiple of gpus)"},
            {"multirail:nvlink=2", "--topo=multirail: nvlink: '2': expected 0 or 1"},
            {"file:path=x,y=1", "--topo=file: unknown key 'y' (known: path)"},
            {"/nonexistent.topo", "--topo: cannot open /nonexistent.topo"},
            {one, "--topo=" + one + ": fewer than two hosts"},
        };
        for (const auto& [spec, want] : bad)
        {
            NS_TEST_EXPECT_MSG_EQ(TitaParseTopology(spec, &t, &err), false, spec);
            NS_TEST_EXPECT_MSG_EQ(err, want, spec);
        }
    }
};

// ---------------------------------------------------------------- ranks

class TitaRanksTestCase : public TestCase
{
  public:
    TitaRanksTestCase()
        : TestCase("TitaCollectiveRanks: host, spread, rail and server orders; the first N")
    {
    }

  private:
    static std::vector<uint32_t> Hosts(const TitaTopology& t, const std::string& spec, std::string* err)
    {
        std::vector<TitaCollective::Rank> ranks;
        if (!TitaCollectiveRanks(t, TitaSpec::Parse("--workload", spec), &ranks, err))
        {
            return {};
        }
        std::vector<uint32_t> hosts;
        for (const auto& r : ranks)
        {
            hosts.push_back(r.host);
        }
        return hosts;
    }

    void DoRun() override
    {
        std::string err;
        // 4 ToRs of 2 hosts: hosts 2k and 2k+1 share ToR k.
        const TitaTopology ft = tita_test::FatTree(2, 2, 2, 2, 2);
        using V = std::vector<uint32_t>;
        NS_TEST_EXPECT_MSG_EQ((Hosts(ft, "allreduce:order=host", &err) == V{0, 1, 2, 3, 4, 5, 6, 7}), true, err);
        NS_TEST_EXPECT_MSG_EQ((Hosts(ft, "allreduce:order=spread", &err) == V{0, 2, 4, 6, 1, 3, 5, 7}), true, err);
        NS_TEST_EXPECT_MSG_EQ((Hosts(ft, "allreduce:order=spread,ranks=3", &err) == V{0, 2, 4}), true, err);

        const TitaTopology mr = tita_test::MultiRail(1, 2, 4, 2);
        V rail;   // (server 0, GPU 0), (server 1, GPU 0), (server 0, GPU 1), ...
        V server; // (server 0, GPU 0), (server 0, GPU 1), ...
        for (uint32_t i = 0; i < 8; ++i)
        {
            rail.push_back(mr.RailHost(i % 2, i / 2));
            server.push_back(mr.RailHost(i / 4, i % 4));
        }
        NS_TEST_EXPECT_MSG_EQ((Hosts(mr, "allreduce", &err) == rail), true, "rail order: ring neighbours share a rail");
        NS_TEST_EXPECT_MSG_EQ((Hosts(mr, "allreduce:order=server", &err) == server), true, "server order");
        // ranks=4 in rail order: the first server whole.
        NS_TEST_EXPECT_MSG_EQ((Hosts(mr, "allreduce:ranks=4", &err) ==
                               V{static_cast<uint32_t>(mr.RailHost(0, 0)),
                                 static_cast<uint32_t>(mr.RailHost(0, 1)),
                                 static_cast<uint32_t>(mr.RailHost(0, 2)),
                                 static_cast<uint32_t>(mr.RailHost(0, 3))}),
                              true,
                              err);

        const std::pair<const char*, const char*> bad[] = {
            {"allreduce:order=rail", "--workload=allreduce: order: 'rail': expected host or spread"},
            {"allreduce:ranks=1", "--workload=allreduce: ranks: 1 is out of range (at least 2)"},
        };
        for (const auto& [spec, want] : bad)
        {
            NS_TEST_EXPECT_MSG_EQ(Hosts(ft, spec, &err).empty(), true, spec);
            NS_TEST_EXPECT_MSG_EQ(err, want, spec);
        }
        std::vector<TitaCollective::Rank> ranks;
        NS_TEST_EXPECT_MSG_EQ(TitaCollectiveRanks(tita_test::Star(2),
                                                  TitaSpec::Parse("--workload", "alltoall:ranks=all"),
                                                  &ranks,
                                                  &err),
                              true,
                              err);
        NS_TEST_EXPECT_MSG_EQ(ranks.size(), 2, "two hosts, two ranks");
    }
};

// ---------------------------------------------------------------- link faults

class TitaLinkFaultsTestCase : public TestCase
{
  public:
    TitaLinkFaultsTestCase()
        : TestCase("TitaLinkFaults: parsed against the topology, described, applied (drops, no traffic)")
    {
    }

  private:
    void DoRun() override
    {
        std::string err;
        // Links 0-3: pod 0's aggregation switches to the cores; 6: a host's.
        TitaTopology t = tita_test::FatTree(2, 2, 2, 2, 2, 100'000'000'000);
        NS_TEST_EXPECT_MSG_EQ(TitaCoreLink(t), 0, "core: the first link up to the top tier");
        std::ostringstream said;
        TitaNotes notes(&said, "t");
        TitaLinkFaults faults;
        NS_TEST_ASSERT_MSG_EQ(
            faults.Parse("half:link=1;down:link=core,at=5us,converge=10us;blackhole:link=2,at=1us", &t, notes, &err),
            true,
            err);
        NS_TEST_ASSERT_MSG_EQ(faults.Get().size(), 3, "three faults");
        NS_TEST_EXPECT_MSG_EQ(t.Links()[1].rateBps, 50'000'000'000ULL, "half: in the topology");
        NS_TEST_EXPECT_MSG_EQ(faults.Get()[1].link, 0, "core");
        NS_TEST_EXPECT_MSG_EQ(faults.Get()[1].at, MicroSeconds(5), "at");
        NS_TEST_EXPECT_MSG_EQ(faults.Get()[1].converge, MicroSeconds(10), "converge");
        NS_TEST_EXPECT_MSG_EQ(said.str(),
                              "t: fault half on link 1 (pod0-agg0 - cluster-core1), 50000000000 bps from the start\n"
                              "t: fault down on link 0 (pod0-agg0 - cluster-core0) at +5us\n"
                              "t: fault blackhole on link 2 (pod0-agg1 - cluster-core2) at +1us\n",
                              "one line per fault");

        const std::pair<const char*, const char*> bad[] = {
            {"melt:link=core", "--fault: unknown kind 'melt' (known: down, blackhole, half)"},
            {"blackhole:link=6", "--fault=blackhole:link=6: link 6 (pod0-block0-host0 - pod0-block0-tor) has a host "
                                 "end; blackhole needs a link between two switches"},
            {"down:link=24", "--fault=down:link=24: link '24' is not core or a link index below 24"},
            {"half:link=core,at=1us", "--fault=half: unknown key 'at' (known: link)"},
        };
        for (const auto& [spec, want] : bad)
        {
            TitaLinkFaults f;
            NS_TEST_EXPECT_MSG_EQ(f.Parse(spec, &t, notes, &err), false, spec);
            NS_TEST_EXPECT_MSG_EQ(err, want, spec);
        }
        TitaLinkFaults none;
        TitaTopology star = tita_test::Star(3);
        NS_TEST_EXPECT_MSG_EQ(none.Parse("down", &star, notes, &err),
                              false,
                              "no switch-to-switch link");
        NS_TEST_EXPECT_MSG_EQ(err, "--fault=down: the topology has no link between two switches", err);

        CheckApplied("blackhole:link=core,at=0");
        CheckApplied("down:link=core,at=0");
    }

    // An All-to-All across the 2-pod fat-tree with the core link faulty from
    // the start: black-holed, it drops frames (and only for that reason);
    // down, it carries nothing and every message arrives.
    void CheckApplied(const std::string& fault)
    {
        std::string err;
        TitaTopology t = tita_test::FatTree(2, 2, 2, 2, 2, 100'000'000'000);
        TitaNotes quiet;
        TitaLinkFaults faults;
        NS_TEST_ASSERT_MSG_EQ(faults.Parse(fault, &t, quiet, &err), true, err);
        TitaNetworkHelper net;
        net.Build(t);
        faults.Apply(net);
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetNetwork(&net);
        TitaOutputWriter out;
        NS_TEST_ASSERT_MSG_EQ(out.SetDirectory(CreateTempDirFilename("faults"), &err), true, err);
        TitaRunRecorder rec(&net, mgr, &out);
        rec.Connect();
        TitaWorkloadSet set(&net, mgr, Time(0), 1, quiet);
        NS_TEST_ASSERT_MSG_EQ(set.AddAll("alltoall:ranks=all,bytes=256K", &err), true, err);
        Simulator::Stop(MilliSeconds(2));
        Simulator::Run();
        const auto& drops = rec.GetDropsByReason();
        const auto portDrop = static_cast<size_t>(::tita::fabric::DropReason::kFaultPortDrop);
        uint64_t other = 0;
        for (size_t r = 0; r < drops.size(); ++r)
        {
            other += r == portDrop ? 0 : drops[r];
        }
        NS_TEST_EXPECT_MSG_EQ(other, 0, fault << ": drops for another reason");
        const auto [a, b] = net.GetLinkDevices(0);
        if (fault.rfind("blackhole", 0) == 0)
        {
            NS_TEST_EXPECT_MSG_GT(drops[portDrop], 0, fault << ": nothing black-holed");
        }
        else
        {
            NS_TEST_EXPECT_MSG_EQ(drops[portDrop], 0, fault);
            NS_TEST_EXPECT_MSG_EQ(a->GetTxWireBytes() + b->GetTxWireBytes(), 0, fault << ": the link carried frames");
            NS_TEST_EXPECT_MSG_EQ(set.GetCollectives()[0]->IsDone(), true, fault << ": the All-to-All did not end");
        }
        Simulator::Destroy();
    }
};

// ---------------------------------------------------------------- workloads

class TitaWorkloadSetTestCase : public TestCase
{
  public:
    TitaWorkloadSetTestCase()
        : TestCase("TitaWorkloadSet: the kinds table, what each kind schedules, its mistakes")
    {
    }

  private:
    void DoRun() override
    {
        std::string names;
        for (const auto& k : TitaWorkloadKinds())
        {
            names += std::string(names.empty() ? "" : ",") + k.name;
        }
        NS_TEST_EXPECT_MSG_EQ(names, "poisson,flows,incast,allreduce,alltoall,training", "the kinds, in order");

        std::string err;
        TitaNetworkHelper net;
        net.Build(tita_test::Star(5));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetNetwork(&net);
        std::ostringstream said;
        TitaNotes notes(&said, "t");
        TitaWorkloadSet set(&net, mgr, Time(0), 1, notes);
        NS_TEST_ASSERT_MSG_EQ(
            set.AddAll("incast:senders=3,receiver=4,bytes=100K,at=2us;alltoall:ranks=4,bytes=40K,at=3us", &err),
            true,
            err);
        NS_TEST_EXPECT_MSG_EQ(set.GetScheduled(), 4, "three flows and a collective");
        NS_TEST_EXPECT_MSG_EQ(set.GetFirstStart(), MicroSeconds(2), "first start");
        NS_TEST_EXPECT_MSG_EQ(set.GetArrivalsEnd(), MicroSeconds(3), "last start");
        NS_TEST_ASSERT_MSG_EQ(set.GetCollectives().size(), 1, "one collective");
        NS_TEST_EXPECT_MSG_EQ(set.GetCollectives()[0]->GetId(), 0, "id");
        NS_TEST_EXPECT_MSG_EQ(set.GetCollectives()[0]->GetRanks(), 4, "ranks");
        NS_TEST_EXPECT_MSG_EQ(said.str(), "t: alltoall over 4 ranks, 40000 B\n", "notes");
        Simulator::Stop(MilliSeconds(5));
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFinished(), 3 + 4 * 3, "incast flows and All-to-All messages");
        NS_TEST_EXPECT_MSG_EQ(set.GetCollectives()[0]->IsDone(), true, "All-to-All done");
        Simulator::Destroy();

        const std::string cdf = "cdf=" TITA_DATA_DIR "/workloads/websearch.cdf";
        const std::pair<std::string, std::string> bad[] = {
            {"bogus:x=1", "--workload: unknown kind 'bogus' (known: poisson, flows, incast, allreduce, alltoall, training)"},
            {";incast:senders=3", "--workload: unknown kind '' (known: poisson, flows, incast, allreduce, alltoall, training)"},
            {"poisson:load=0.5," + cdf, "--workload=poisson needs --duration above 0"},
            {"poisson:laod=0.5", "--workload=poisson: unknown key 'laod' (known: at, cdf, load)"},
            {"incast:senders=5", "--workload=incast: receiver 0 and 5 senders need more than 5 hosts"},
            {"flows:path=/nonexistent", "--workload=flows: cannot open /nonexistent"},
            {"training:path=/nonexistent", "/nonexistent: cannot open"},
            {"training:path=" TITA_DATA_DIR "/training/all-types.txt",
             "--workload=training needs GPU servers (--topo=multirail:... or fattree:...,gpus=G)"},
        };
        for (const auto& [spec, want] : bad)
        {
            TitaNetworkHelper n;
            n.Build(tita_test::Star(5));
            Ptr<TitaFlowManager> m = CreateObject<TitaFlowManager>();
            m->SetNetwork(&n);
            TitaNotes quiet;
            TitaWorkloadSet s(&n, m, Time(0), 1, quiet);
            NS_TEST_EXPECT_MSG_EQ(s.AddAll(spec, &err), false, spec);
            NS_TEST_EXPECT_MSG_EQ(err, want, spec);
            Simulator::Destroy();
        }

        CheckPoissonAndHosts();
    }

    // poisson schedules what TitaWorkload::Poisson generates; NVLink NICs take
    // no part in workloads.
    void CheckPoissonAndHosts()
    {
        std::string err;
        TitaNetworkHelper net;
        net.Build(tita_test::FatTree(2, 2, 2, 2, 2));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetNetwork(&net);
        TitaNotes quiet;
        TitaWorkloadSet set(&net, mgr, MilliSeconds(1), 3, quiet);
        const std::string cdfPath = TITA_DATA_DIR "/workloads/websearch.cdf";
        NS_TEST_ASSERT_MSG_EQ(set.Add("poisson:cdf=" + cdfPath + ",load=0.5", &err), true, err);
        TitaFlowSizeCdf cdf;
        NS_TEST_ASSERT_MSG_EQ(cdf.Load(cdfPath, &err), true, err);
        const auto flows =
            TitaWorkload::Poisson(cdf, set.GetHosts(), 0.5, 100'000'000'000, Time(0), MilliSeconds(1), 3);
        NS_TEST_EXPECT_MSG_GT(flows.size(), 10, "flows");
        NS_TEST_EXPECT_MSG_EQ(set.GetScheduled(), flows.size(), "the generator's flows");
        NS_TEST_EXPECT_MSG_EQ(set.GetFirstStart(), flows.front().start, "first start");
        NS_TEST_EXPECT_MSG_EQ(set.GetArrivalsEnd(), flows.back().start, "last start");
        Simulator::Destroy();

        TitaNetworkHelper mr;
        mr.Build(tita_test::MultiRail(1, 2, 2, 1, 1, true));
        TitaWorkloadSet mrSet(&mr, mgr, Time(0), 1, quiet);
        NS_TEST_EXPECT_MSG_EQ(mr.GetNHosts(), 8, "NICs");
        NS_TEST_EXPECT_MSG_EQ(mrSet.GetHosts().size(), 4, "workload hosts: rail NICs only");
        Simulator::Destroy();
    }
};

// ---------------------------------------------------------------- outputs

class TitaOutputWriterTestCase : public TestCase
{
  public:
    TitaOutputWriterTestCase()
        : TestCase("TitaOutputWriter and TitaSummaryJson: files with one header, the summary's exact text")
    {
    }

  private:
    void DoRun() override
    {
        TitaSummaryJson js;
        js.Str("a", "x").Num("n", 3).Num("d", 0.5).Bool("b", true).Counts("c", {{"p", 1}, {"q", 2}}).Counts("e", {});
        NS_TEST_EXPECT_MSG_EQ(js.Text(),
                              "{\n  \"a\": \"x\",\n  \"n\": 3,\n  \"d\": 0.5,\n  \"b\": true,\n  \"c\": {\"p\": 1, "
                              "\"q\": 2},\n  \"e\": {}\n}\n",
                              "summary text");
        NS_TEST_EXPECT_MSG_EQ(TitaSummaryJson().Text(), "{\n}\n", "empty object");

        std::string err;
        TitaOutputWriter out;
        const std::string dir = CreateTempDirFilename("writer/deeper");
        NS_TEST_ASSERT_MSG_EQ(out.SetDirectory(dir, &err), true, err);
        out.File("a.csv", "h1,h2\n") << "1,2\n";
        out.File("a.csv", "ignored\n") << "3,4\n";
        out.Flush();
        NS_TEST_EXPECT_MSG_EQ(ReadFile(dir + "/a.csv"), "h1,h2\n1,2\n3,4\n", "one header, rows in order");
        NS_TEST_EXPECT_MSG_EQ(out.Path("nic"), dir + "/nic", "path");
        TitaOutputWriter bad;
        NS_TEST_EXPECT_MSG_EQ(bad.SetDirectory("/proc/nope/x", &err), false, "cannot create");
        NS_TEST_EXPECT_MSG_EQ(err.rfind("--out: cannot create /proc/nope/x: ", 0), 0, err);
    }
};

// ---------------------------------------------------------------- a whole run

class TitaScenarioTestCase : public TestCase
{
  public:
    TitaScenarioTestCase()
        : TestCase("TitaScenario: a 4-to-1 incast run end to end; a mistake stops Build before any file")
    {
    }

  private:
    void DoRun() override
    {
        std::string err;
        TitaScenarioConfig cfg;
        cfg.topo = "star:n=5";
        cfg.workload = "incast:senders=4,receiver=0,bytes=200KB";
        cfg.cc = "dcqcn";
        cfg.progress = 0;
        cfg.series = "20us";
        cfg.metrics = "20us";
        cfg.outDir = CreateTempDirFilename("scenario");
        std::ostringstream said;
        TitaNotes notes(&said, "t");
        {
            TitaScenario sc(cfg, notes);
            NS_TEST_ASSERT_MSG_EQ(sc.Build(&err), true, err);
            sc.Run();
            sc.Finish();
            NS_TEST_EXPECT_MSG_EQ(sc.GetFlowManager()->GetFinished(), 4, "flows finished");
            Simulator::Destroy();
        }
        const auto fct = Lines(ReadFile(cfg.outDir + "/fct.csv"));
        NS_TEST_ASSERT_MSG_EQ(fct.size(), 5, "header and four flows");
        for (std::size_t i = 1; i < fct.size(); ++i)
        {
            const auto f = TitaSpec::SplitList(fct[i], ',', true);
            NS_TEST_EXPECT_MSG_EQ(f[2] + "," + f[3] + "," + f[10], "0,200000,1", "dst, bytes, ok: " << fct[i]);
        }
        const std::string summary = ReadFile(cfg.outDir + "/summary.json");
        NS_TEST_EXPECT_MSG_EQ(summary.rfind("{\n  \"topo\": \"star:n=5\",\n  \"workload\": \"incast:", 0),
                              0,
                              "settings first");
        NS_TEST_EXPECT_MSG_NE(summary.find("\"flows_finished\": 4,"), std::string::npos, summary);
        NS_TEST_EXPECT_MSG_NE(summary.find("\"cc\": \"dcqcn\","), std::string::npos, summary);
        NS_TEST_EXPECT_MSG_EQ(Lines(ReadFile(cfg.outDir + "/links.csv")).size(), 1 + 2 * 5, "two rows per link");
        NS_TEST_EXPECT_MSG_EQ(Lines(ReadFile(cfg.outDir + "/collectives.csv")).size(), 1, "header only");
        NS_TEST_EXPECT_MSG_GT(Lines(ReadFile(cfg.outDir + "/qlen_hist.csv")).size(), 1, "queue samples");
        NS_TEST_EXPECT_MSG_GT(Lines(ReadFile(cfg.outDir + "/flow_series.csv")).size(), 4, "flow series");
        const auto metrics = Lines(ReadFile(cfg.outDir + "/metrics.jsonl"));
        NS_TEST_ASSERT_MSG_GT(metrics.size(), 2, "metrics lines");
        NS_TEST_EXPECT_MSG_EQ(metrics[0].rfind("{\"t_ns\":20000,\"qps\":[{\"engine\":\"host", 0), 0, metrics[0]);
        NS_TEST_EXPECT_MSG_EQ(said.str().rfind("t: 5 hosts, 1 switches, 5 links, max base RTT ", 0), 0, said.str());
        NS_TEST_EXPECT_MSG_NE(said.str().find("\nt: done at "), std::string::npos, said.str());

        cfg.workload = "incast:senders=9";
        cfg.outDir = CreateTempDirFilename("scenario-bad");
        TitaScenario bad(cfg, notes);
        NS_TEST_EXPECT_MSG_EQ(bad.Build(&err), false, "too many senders");
        NS_TEST_EXPECT_MSG_EQ(err, "--workload=incast: receiver 0 and 9 senders need more than 5 hosts", err);
        NS_TEST_EXPECT_MSG_EQ(std::filesystem::exists(cfg.outDir), false, "no output before the checks pass");
        Simulator::Destroy();
    }
};

// ---------------------------------------------------------------- switch buffers

class TitaSwitchBufferTestCase : public TestCase
{
  public:
    TitaSwitchBufferTestCase()
        : TestCase("Switch buffers: BufferSize for BufferPorts ports, scaled to a switch's radix; a buffer too "
                   "small for its reserve and headroom is one line")
    {
    }

  private:
    void DoRun() override
    {
        namespace fab = ::tita::fabric;
        std::string err;
        // 128 ports, twice BufferPorts (64): twice the 32 MiB, and the reserve
        // and headroom of 128 ports out of it.
        {
            TitaNetworkHelper net;
            NS_TEST_ASSERT_MSG_EQ(net.Build(tita_test::Star(128), &err), true, err);
            const fab::Mmu& mmu = net.GetSwitches()[0]->GetCore().mmu();
            NS_TEST_EXPECT_MSG_EQ(mmu.config().buffer_bytes, 64ULL << 20, "scaled to 128 ports");
            NS_TEST_EXPECT_MSG_EQ(mmu.shared_bytes(),
                                  (64ULL << 20) - fab::reserved_bytes(mmu.config(), 128),
                                  "the rest is shared");
            Simulator::Destroy();
        }
        // 64 ports keep BufferSize; BufferPorts 0 keeps it on any switch.
        {
            TitaNetworkHelper net;
            NS_TEST_ASSERT_MSG_EQ(net.Build(tita_test::Star(64), &err), true, err);
            NS_TEST_EXPECT_MSG_EQ(net.GetSwitches()[0]->GetCore().mmu().config().buffer_bytes,
                                  32ULL << 20,
                                  "64 ports");
            Simulator::Destroy();
        }
        {
            TitaNetworkHelper net;
            net.SetSwitchAttribute("BufferPorts", UintegerValue(0));
            NS_TEST_ASSERT_MSG_EQ(net.Build(tita_test::Star(128), &err), true, err);
            NS_TEST_EXPECT_MSG_EQ(net.GetSwitches()[0]->GetCore().mmu().config().buffer_bytes,
                                  32ULL << 20,
                                  "no scaling");
            Simulator::Destroy();
        }
        // A buffer too small for what 8 ports set aside: the one line tita-sim
        // prints, no abort, no output directory.
        Config::SetDefault("ns3::TitaSwitchNode::BufferSize", UintegerValue(500'000));
        TitaNotes quiet;
        TitaScenarioConfig cfg;
        cfg.topo = "star:n=8";
        cfg.workload = "incast:senders=2,bytes=1000";
        cfg.outDir = CreateTempDirFilename("buffer-too-small");
        TitaScenario sc(cfg, quiet);
        const bool built = sc.Build(&err);
        Config::SetDefault("ns3::TitaSwitchNode::BufferSize", UintegerValue(32ULL << 20));
        NS_TEST_EXPECT_MSG_EQ(built, false, "refused");
        NS_TEST_EXPECT_MSG_EQ(err,
                              "switch tor: BufferSize 500000 bytes leaves no shared buffer after 709592 bytes of "
                              "reserve and PFC headroom for its 8 ports: raise --ns3::TitaSwitchNode::BufferSize "
                              "(or lower ReserveBytes, HeadroomBytes)",
                              err);
        NS_TEST_EXPECT_MSG_EQ(std::filesystem::exists(cfg.outDir), false, "no output");
        Simulator::Destroy();
    }
};

// ---------------------------------------------------------------- Hash Dodging

class TitaDodgeRecoveryTestCase : public TestCase
{
  public:
    TitaDodgeRecoveryTestCase()
        : TestCase("TitaDodgeExperiment::Recovery: the pre-fault rate, the dip, the recovered run")
    {
    }

  private:
    void DoRun() override
    {
        // Every 10 us at 100 Gb/s; the fault at 100 us stops the flow for
        // four samples (110-140 us), then it runs at 100 Gb/s again.
        std::vector<TitaDodgeSample> s;
        uint64_t bytes = 0;
        for (int i = 0; i <= 20; ++i)
        {
            bytes += (i == 0 || (i >= 11 && i <= 14)) ? 0 : 125'000;
            s.push_back({i * 10'000, bytes, 0});
        }
        auto r = TitaDodgeExperiment::Recovery(s, MicroSeconds(100), MicroSeconds(10), false);
        NS_TEST_EXPECT_MSG_EQ(r.preFaultGbps, 100.0, "pre-fault mean");
        NS_TEST_EXPECT_MSG_EQ(r.dipNs, 110'000, "first sample below half");
        // Five samples >= 90% from 150 us; the run began one sample before.
        NS_TEST_EXPECT_MSG_EQ(r.recoverNs, 150'000 - 10'000 - 100'000, "recovery");
        NS_TEST_EXPECT_MSG_EQ(r.afterFaultGbps, 60.0, "6 of 10 samples after the fault carried 100 Gb/s");

        // Loss without a dip: recovery counted from the fault.
        std::vector<TitaDodgeSample> steady;
        for (int i = 0; i <= 20; ++i)
        {
            steady.push_back({i * 10'000, static_cast<uint64_t>(i) * 125'000, 0});
        }
        r = TitaDodgeExperiment::Recovery(steady, MicroSeconds(100), MicroSeconds(10), true);
        NS_TEST_EXPECT_MSG_EQ(r.dipNs, -1, "no dip");
        NS_TEST_EXPECT_MSG_EQ(r.recoverNs, 0, "recovered from the first sample after the fault");
        r = TitaDodgeExperiment::Recovery(steady, MicroSeconds(100), MicroSeconds(10), false);
        NS_TEST_EXPECT_MSG_EQ(r.recoverNs, -1, "without a dip and not lossy: nothing to recover from");
    }
};

class TitaDodgeExperimentTestCase : public TestCase
{
  public:
    TitaDodgeExperimentTestCase()
        : TestCase("TitaDodgeExperiment: black hole on the long flow's path, dodged once, every byte delivered")
    {
    }

  private:
    void DoRun() override
    {
        std::string err;
        TitaDodgeConfig cfg;
        cfg.topo = "fattree:pods=2,tors=2,aggs=2,hosts=4,cores=2";
        cfg.flowBytes = 8'000'000;
        cfg.ranks = 4;
        cfg.collectiveBytes = 400'000;
        cfg.faultAt = "200us";
        cfg.seriesBefore = "100us";
        cfg.seriesAfter = "1ms";
        cfg.rerouteAfter = "5ms";
        cfg.stop = "20ms";
        cfg.outDir = CreateTempDirFilename("dodge");
        TitaNotes quiet;
        TitaDodgeExperiment x(cfg, quiet);
        NS_TEST_ASSERT_MSG_EQ(x.Build(&err), true, err);
        x.Run();
        x.Finish();
        const TitaLongFlow& f = x.GetLongFlow();
        NS_TEST_EXPECT_MSG_EQ(f.IsOk(), true, "the long flow completed: " << f.GetStatus());
        NS_TEST_EXPECT_MSG_EQ(f.GetDelivered(), cfg.flowBytes, "every byte executed");
        NS_TEST_EXPECT_MSG_LT(f.GetDone(), MilliSeconds(5), "done before the control plane moved");
        const auto changes = x.GetPathChanges().Of(f.GetSrc(), f.GetSenderQpn());
        NS_TEST_ASSERT_MSG_EQ(changes.size(), 1, "one dodge leaves the black hole");
        NS_TEST_EXPECT_MSG_LT(changes[0].at - MicroSeconds(200), MicroSeconds(150), "detected within 150 us");
        NS_TEST_EXPECT_MSG_EQ(x.GetCollective()->IsDone(), true, "the collective completed");
        // Samples from 100 us to 1.2 ms every 10 us.
        NS_TEST_EXPECT_MSG_EQ(x.GetSamples().size(), 111, "samples");
        const auto series = Lines(ReadFile(cfg.outDir + "/series.csv"));
        NS_TEST_EXPECT_MSG_EQ(series.size(), 112, "a row per sample");
        const std::string summary = ReadFile(cfg.outDir + "/summary.json");
        NS_TEST_EXPECT_MSG_NE(summary.find("\"flow_path_changes\": 1,"), std::string::npos, summary);
        NS_TEST_EXPECT_MSG_NE(summary.find("\"flow_ok\": true,"), std::string::npos, summary);
        Simulator::Destroy();

        cfg.fault = "melt";
        TitaDodgeExperiment bad(cfg, quiet);
        NS_TEST_EXPECT_MSG_EQ(bad.Build(&err), false, "unknown fault");
        NS_TEST_EXPECT_MSG_EQ(err, "--fault: 'melt' is not one of none, blackhole, loss", err);
        Simulator::Destroy();
    }
};

class TitaScenarioTestSuite : public TestSuite
{
  public:
    TitaScenarioTestSuite()
        : TestSuite("tita-scenario", UNIT)
    {
        AddTestCase(new TitaSpecTestCase, TestCase::QUICK);
        AddTestCase(new TitaTopologySpecTestCase, TestCase::QUICK);
        AddTestCase(new TitaRanksTestCase, TestCase::QUICK);
        AddTestCase(new TitaLinkFaultsTestCase, TestCase::QUICK);
        AddTestCase(new TitaWorkloadSetTestCase, TestCase::QUICK);
        AddTestCase(new TitaOutputWriterTestCase, TestCase::QUICK);
        AddTestCase(new TitaScenarioTestCase, TestCase::QUICK);
        AddTestCase(new TitaSwitchBufferTestCase, TestCase::QUICK);
        AddTestCase(new TitaDodgeRecoveryTestCase, TestCase::QUICK);
        AddTestCase(new TitaDodgeExperimentTestCase, TestCase::QUICK);
    }
};

TitaScenarioTestSuite g_titaScenarioTestSuite;

} // namespace
