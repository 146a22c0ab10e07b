// TestSuite "tita-multipath": spraying in ns-3 (doc/multipath.md).
//
// - The offset policy's values, walked through the switches' own forwarding
//   (TitaNetworkHelper::TracePath: lib/fabric routes + hash-offset ECMP), take
//   pairwise node-disjoint paths between two ToRs on generated fat-trees and on
//   the HPCC paper's fat_tree_320 when there are as many choices per tier.
// - An All-to-All on a non-blocking fat-tree: per-flow ECMP lets flows collide
//   on uplinks, spraying spreads every QP over the paths; it finishes sooner,
//   every message received, no timeout.
// - A long WRITE sprayed over 2 paths, one of which black-holes at 300 us:
//   the value is retired, every lost packet resent on the other path, no
//   timeout, and the WRITE ends within 100 us of the same run without a fault.
#include "rdma-nic-net-device.h"
#include "tita-flow-manager.h"
#include "tita-long-flow.h"
#include "tita-network-helper.h"
#include "tita-switch-node.h"
#include "tita-test-topologies.h"
#include "tita-topology.h"
#include "tita-workload.h"

#include "ns3/boolean.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"
#include "tita/engine/engine.h"

#include <cstdio>
#include <functional>
#include <set>

using namespace ns3;

namespace
{

namespace eng = ::tita::engine;

using tita_test::FatTree;

// Switches with hash-offset ECMP on the UDP source port, NICs spraying every QP
// over `paths` offset values (0: one path) with selective repeat.
void
BuildSprayed(TitaNetworkHelper& net, const TitaTopology& topo, uint16_t paths)
{
    net.SetSwitchAttribute("DodgeField", StringValue("udp-sport"));
    net.SetNicAttribute("SelectiveRepeat", BooleanValue(true));
    net.SetNicAttribute("SprayPaths", UintegerValue(paths));
    net.SetNicAttribute("SprayPolicy", StringValue("offset"));
    net.Build(topo);
}

/**
 * The offset policy's K values of a real QP (its UDP source port as the engine
 * derives it) traced through the switches: for hosts on different ToRs, no two
 * of the K paths share a switch but the two ToRs.
 */
class TitaSprayDisjointTestCase : public TestCase
{
  public:
    TitaSprayDisjointTestCase(std::string name, std::function<TitaTopology()> make, uint16_t paths, uint32_t srcStride)
        : TestCase("offset spraying, node-disjoint: " + name),
          m_make(std::move(make)),
          m_paths(paths),
          m_srcStride(srcStride)
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        BuildSprayed(net, m_make(), m_paths);
        const uint32_t n = net.GetNHosts();
        uint64_t checked = 0;
        for (uint32_t src = 0; src < n; src += m_srcStride)
        {
            for (uint32_t dst = 0; dst < n; dst += 3)
            {
                if (src == dst)
                {
                    continue;
                }
                Ptr<RdmaNicNetDevice> a = net.GetNic(src);
                Ptr<RdmaNicNetDevice> b = net.GetNic(dst);
                const uint32_t qa = a->CreateQp();
                const uint32_t qb = b->CreateQp();
                NS_TEST_ASSERT_MSG_EQ(a->ConnectQp(qa, b, qb), 0, "connect");
                eng::SprayInfo s;
                NS_TEST_ASSERT_MSG_EQ(a->GetEngine().spray_info(qa, &s), 0, "spraying is configured");
                NS_TEST_ASSERT_MSG_EQ(s.paths.size(), m_paths, "paths");
                std::vector<std::vector<uint32_t>> traced;
                for (const eng::SprayPathInfo& p : s.paths)
                {
                    traced.push_back(net.TracePath(src, dst, p.udp_sport));
                    NS_TEST_ASSERT_MSG_GT(traced.back().size(), 2, "no path " << src << " -> " << dst);
                }
                if (traced[0].size() == 3)
                {
                    continue; // same ToR
                }
                for (uint32_t i = 0; i < m_paths; ++i)
                {
                    const std::set<uint32_t> inner(traced[i].begin() + 2, traced[i].end() - 2);
                    for (uint32_t j = i + 1; j < m_paths; ++j)
                    {
                        for (std::size_t k = 2; k + 2 < traced[j].size(); ++k)
                        {
                            NS_TEST_ASSERT_MSG_EQ(inner.count(traced[j][k]),
                                                  0,
                                                  "hosts " << src << " -> " << dst << ": paths " << i << " and "
                                                           << j << " share vertex " << traced[j][k]);
                        }
                    }
                }
                ++checked;
            }
        }
        std::fprintf(stderr, "  %s: %lu host pairs, %u paths each, pairwise node-disjoint\n",
                     GetName().c_str(),
                     static_cast<unsigned long>(checked),
                     m_paths);
        NS_TEST_EXPECT_MSG_GT(checked, 0, "nothing was checked");
        Simulator::Destroy();
    }

    std::function<TitaTopology()> m_make;
    uint16_t m_paths;
    uint32_t m_srcStride;
};

struct AllToAllResult
{
    Time duration;
    bool done = false;
    uint32_t failed = 0;
    uint64_t timeouts = 0;
};

// 16 hosts of a non-blocking 2-pod fat-tree (2 ToRs x 4 hosts per pod, 4
// aggregation switches per pod, 4 cores each, 100 Gb/s everywhere), All-to-All
// of 1 MB per rank, DCQCN.
AllToAllResult
RunAllToAll(uint16_t sprayPaths)
{
    TitaNetworkHelper net;
    BuildSprayed(net, FatTree(2, 2, 4, 4, 4, 100'000'000'000), sprayPaths);
    Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
    mgr->SetAttribute("Cc", StringValue("dcqcn"));
    mgr->SetNetwork(&net);
    std::vector<TitaCollective::Rank> ranks;
    for (uint32_t h = 0; h < net.GetNHosts(); ++h)
    {
        ranks.push_back({h, -1, -1});
    }
    auto a2a = TitaCollective::AllToAll(mgr, 0, ranks, 1 << 20, Time(0));
    Simulator::Stop(MilliSeconds(20));
    Simulator::Run();
    AllToAllResult r;
    r.done = a2a->IsDone();
    r.duration = a2a->GetEnd() - a2a->GetStart();
    r.failed = mgr->GetFailed();
    r.timeouts = mgr->GetTimeouts();
    Simulator::Destroy();
    return r;
}

class TitaSprayAllToAllTestCase : public TestCase
{
  public:
    TitaSprayAllToAllTestCase()
        : TestCase("All-to-All on a non-blocking fat-tree: spraying beats per-flow ECMP, every message received")
    {
    }

  private:
    void DoRun() override
    {
        const AllToAllResult ecmp = RunAllToAll(0);
        const AllToAllResult spray = RunAllToAll(4);
        // Ideal: each rank sends 15/16 MB at 100 Gb/s.
        const double idealUs = (1 << 20) * 15.0 / 16 * 8 / 100e9 * 1e6;
        std::fprintf(stderr,
                     "  All-to-All 1 MB x 16 ranks: ideal %.1f us, ECMP %.1f us (%.2fx), spraying (offset, 4) %.1f us "
                     "(%.2fx)\n",
                     idealUs,
                     ecmp.duration.GetNanoSeconds() / 1e3,
                     ecmp.duration.GetNanoSeconds() / 1e3 / idealUs,
                     spray.duration.GetNanoSeconds() / 1e3,
                     spray.duration.GetNanoSeconds() / 1e3 / idealUs);
        for (const AllToAllResult* r : {&ecmp, &spray})
        {
            NS_TEST_EXPECT_MSG_EQ(r->done, true, "the All-to-All did not complete");
            NS_TEST_EXPECT_MSG_EQ(r->failed, 0, "a message failed");
            NS_TEST_EXPECT_MSG_EQ(r->timeouts, 0, "a timeout");
        }
        NS_TEST_EXPECT_MSG_LT(spray.duration, ecmp.duration, "spraying is not faster");
    }
};

// One 8 MB WRITE from pod 0 to pod 1 of a 2-pod fat-tree with 2 aggregation
// switches per pod, sprayed over 2 values; with `fault`, at 300 us the
// aggregation switch's port to the core on path 1 black-holes.
struct FaultResult
{
    Time done = Time(-1);
    bool ok = false;
    uint64_t delivered = 0;
    uint64_t timeouts = 0;
    uint64_t retired = 0;
};

FaultResult
RunBlackHole(bool fault)
{
    TitaNetworkHelper net;
    BuildSprayed(net, FatTree(2, 2, 2, 2, 2, 100'000'000'000), 2);
    TitaLongFlow flow(&net, 0, 4, "dcqcn"); // host 4: pod 1
    NS_ABORT_UNLESS(flow.Connect() == 0);
    eng::Engine& sender = flow.GetSender()->GetEngine();
    eng::SprayInfo s;
    sender.spray_info(flow.GetSenderQpn(), &s);
    std::vector<uint16_t> ports;
    const auto path = flow.Path(s.paths[1].udp_sport, &ports);
    NS_ABORT_UNLESS(path.size() == 7);
    if (fault)
    {
        ::tita::fabric::FaultConfig f;
        f.drop_all = true;
        Simulator::Schedule(MicroSeconds(300),
                            &TitaSwitchNode::SetFault,
                            net.GetSwitchOfVertex(path[2]),
                            ports[1],
                            f);
    }
    const uint32_t bytes = 8u << 20;
    NS_ABORT_UNLESS(flow.Write(bytes) == 0);
    Simulator::Stop(MilliSeconds(20));
    Simulator::Run();
    FaultResult r;
    r.done = flow.GetDone();
    r.ok = flow.IsOk();
    r.delivered = flow.GetDelivered();
    r.timeouts = sender.qp_counters(flow.GetSenderQpn())->timeouts;
    sender.spray_info(flow.GetSenderQpn(), &s);
    r.retired = s.retired;
    Simulator::Destroy();
    return r;
}

class TitaSprayBlackHoleTestCase : public TestCase
{
  public:
    TitaSprayBlackHoleTestCase()
        : TestCase("spraying over 2 paths, one black-holed at 300 us: retired, no timeout, <= 100 us lost")
    {
    }

  private:
    void DoRun() override
    {
        const FaultResult clean = RunBlackHole(false);
        const FaultResult hole = RunBlackHole(true);
        std::fprintf(stderr,
                     "  8 MB WRITE: %.1f us without the fault, %.1f us with it (values retired: %lu, timeouts: %lu)\n",
                     clean.done.GetNanoSeconds() / 1e3,
                     hole.done.GetNanoSeconds() / 1e3,
                     static_cast<unsigned long>(hole.retired),
                     static_cast<unsigned long>(hole.timeouts));
        for (const FaultResult* r : {&clean, &hole})
        {
            NS_TEST_EXPECT_MSG_EQ(r->ok, true, "the WRITE did not complete successfully");
            NS_TEST_EXPECT_MSG_EQ(r->delivered, 8u << 20, "bytes executed at the receiver");
            NS_TEST_EXPECT_MSG_EQ(r->timeouts, 0, "a timeout");
        }
        NS_TEST_EXPECT_MSG_GT(hole.retired, 0, "the black-holed value was not retired");
        NS_TEST_EXPECT_MSG_LT(hole.done, clean.done + MicroSeconds(100), "recovery took more than 100 us");
    }
};

class TitaMultipathTestSuite : public TestSuite
{
  public:
    TitaMultipathTestSuite()
        : TestSuite("tita-multipath", UNIT)
    {
        AddTestCase(new TitaSprayDisjointTestCase("fat-tree 2 pods x 2 ToRs x 4 aggs, 4 cores each, 4 paths",
                                                  [] { return FatTree(2, 2, 4, 2, 4); },
                                                  4,
                                                  1),
                    TestCase::QUICK);
        AddTestCase(new TitaSprayDisjointTestCase("HPCC fat_tree_320.topo, 4 paths",
                                                  tita_test::FatTree320,
                                                  4,
                                                  23),
                    TestCase::QUICK);
        AddTestCase(new TitaSprayAllToAllTestCase, TestCase::QUICK);
        AddTestCase(new TitaSprayBlackHoleTestCase, TestCase::QUICK);
    }
};

TitaMultipathTestSuite g_titaMultipathTestSuite;

} // namespace
