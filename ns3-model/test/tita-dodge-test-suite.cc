// TestSuite "tita-dodge": Hash Dodging in ns-3 (doc/hash-dodging.md).
//
// - Node-disjointness, by walking the switches' own forwarding decisions
//   (TitaNetworkHelper::TracePath, lib/fabric routes + ECMP with the dodge
//   offset) on generated fat-trees, the HPCC paper's fat_tree_320 and a
//   multi-rail cluster with parallel links: for every host pair on different
//   ToRs and every step a sender takes (d -> d + 1, and the wrap), the two
//   paths share no switch but the two ToRs.
// - A long flow across pods on a small fat-tree whose aggregation-to-core port
//   starts black-holing it (or losing 5%): with path control the flow moves
//   within a millisecond and completes, every byte delivered; without it the
//   flow stalls until the modelled control plane withdraws the port.
#include "rdma-nic-net-device.h"
#include "tita-long-flow.h"
#include "tita-network-helper.h"
#include "tita-switch-node.h"
#include "tita-test-topologies.h"
#include "tita-topology.h"

#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"
#include "tita/engine/verbs.h"
#include "tita/wire/dodge.h"

#include <cstdio>
#include <functional>
#include <set>

using namespace ns3;

namespace
{

namespace eng = ::tita::engine;
using tita_test::FatTree;

/**
 * Every dodge step moves a flow to a path that shares no switch with the old
 * one but its two ToRs, on the topology `make` builds.
 */
class TitaDodgeDisjointTestCase : public TestCase
{
  public:
    TitaDodgeDisjointTestCase(std::string name,
                              std::function<TitaTopology()> make,
                              uint32_t srcStride,
                              bool dscp = false,
                              bool wrap = true)
        : TestCase("node-disjoint dodge steps: " + name),
          m_make(std::move(make)),
          m_srcStride(srcStride),
          m_dscp(dscp),
          m_wrap(wrap)
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        net.SetSwitchAttribute("DodgeField", StringValue(m_dscp ? "dscp" : "udp-sport"));
        net.Build(m_make());
        const uint16_t mask = m_dscp ? 0x07 : 0x000f;
        const uint32_t values = ::tita::wire::dodge_values(mask);
        const uint32_t n = net.GetNHosts();
        uint64_t steps = 0;
        uint64_t sameTor = 0;
        for (uint32_t src = 0; src < n; src += m_srcStride)
        {
            for (uint32_t dst = 0; dst < n; ++dst)
            {
                if (src == dst)
                {
                    continue;
                }
                // The port a QP pair would use (any 14-bit value does).
                const uint16_t base = eng::roce_udp_sport(0x11 + src, 0x11 + dst);
                std::vector<std::vector<uint32_t>> paths;
                for (uint32_t d = 0; d < values; ++d)
                {
                    const uint16_t sport = m_dscp ? base : ::tita::wire::dodge_set(mask, base, d);
                    const auto dscp = static_cast<uint8_t>(m_dscp ? ::tita::wire::dodge_set(mask, 24, d) : 24);
                    paths.push_back(net.TracePath(src, dst, sport, dscp));
                    NS_TEST_ASSERT_MSG_GT(paths.back().size(), 2, "no path " << src << " -> " << dst);
                }
                if (paths[0].size() == 3)
                {
                    ++sameTor; // host, ToR, host: nothing to dodge
                    continue;
                }
                for (uint32_t d = 0; d < (m_wrap ? values : values - 1); ++d)
                {
                    const auto& a = paths[d];
                    const auto& b = paths[::tita::wire::dodge_next(mask, d)];
                    // Inner switches: everything but the hosts and their ToRs.
                    const std::set<uint32_t> inner(a.begin() + 2, a.end() - 2);
                    for (std::size_t i = 2; i + 2 < b.size(); ++i)
                    {
                        NS_TEST_ASSERT_MSG_EQ(inner.count(b[i]),
                                              0,
                                              "hosts " << src << " -> " << dst << ": dodge " << d
                                                       << " and the next share vertex " << b[i]);
                    }
                    NS_TEST_ASSERT_MSG_EQ(a[1], b[1], "the source ToR is the source ToR");
                    ++steps;
                }
            }
        }
        std::fprintf(stderr, "  %s: %lu dodge steps node-disjoint, %lu same-ToR pairs\n",
                     GetName().c_str(),
                     static_cast<unsigned long>(steps),
                     static_cast<unsigned long>(sameTor));
        NS_TEST_EXPECT_MSG_GT(steps, 0, "nothing was checked");
        Simulator::Destroy();
    }

    std::function<TitaTopology()> m_make;
    uint32_t m_srcStride;
    bool m_dscp;
    bool m_wrap;
};

// ---------------------------------------------------------------- a fault on the path

enum class Fault
{
    kBlackHole,
    kLoss5
};

/**
 * One 16 MB WRITE from pod 0 to pod 1 of a 2-pod fat-tree (2 aggregation
 * switches per pod, 2 cores per aggregation switch, 100 Gb/s, 1 us links); at
 * 300 us the aggregation switch's port to the core on the flow's path fails.
 */
class TitaDodgeFaultTestCase : public TestCase
{
  public:
    TitaDodgeFaultTestCase(Fault fault, bool dodge)
        : TestCase(std::string(fault == Fault::kBlackHole ? "black hole" : "5% loss") +
                   (dodge ? ", path control on: dodged within 1 ms, every byte delivered"
                          : ", path control off: stalls until the control plane reroutes")),
          m_fault(fault),
          m_dodge(dodge)
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        net.SetSwitchAttribute("DodgeField", StringValue("udp-sport"));
        net.SetNicAttribute("DodgeField", StringValue(m_dodge ? "udp-sport" : "none"));
        net.Build(FatTree(2, 2, 2, 2, 2, 100'000'000'000));
        TitaLongFlow flow(&net, 0, 4, "hpcc"); // host 4: pod 1
        NS_TEST_ASSERT_MSG_EQ(flow.Connect(), 0, "connect");
        std::vector<uint16_t> ports;
        const auto path = flow.Path(flow.GetUdpSport(), &ports);
        NS_TEST_ASSERT_MSG_EQ(path.size(), 7, "host tor agg core agg tor host");
        Ptr<TitaSwitchNode> agg = net.GetSwitchOfVertex(path[2]);
        const uint16_t port = ports[1]; // the aggregation switch's port to the core
        ::tita::fabric::FaultConfig f;
        f.drop_all = m_fault == Fault::kBlackHole;
        f.drop_probability = m_fault == Fault::kLoss5 ? 0.05 : 0;
        const Time faultAt = MicroSeconds(300);
        const Time rerouteAt = MilliSeconds(10); // the control plane's reaction
        Simulator::Schedule(faultAt, &TitaSwitchNode::SetFault, agg, port, f);
        Simulator::Schedule(rerouteAt, &TitaSwitchNode::SetPortUp, agg, port, false);

        TitaPathChangeLog log;
        log.Watch(flow.GetSender(), flow.GetSrc());
        const uint32_t bytes = 16u << 20; // 1.4 ms at 100 Gb/s
        NS_TEST_ASSERT_MSG_EQ(flow.Write(bytes), 0, "post");
        Simulator::Stop(MilliSeconds(30));
        Simulator::Run();

        const auto& changes = log.Get();
        std::fprintf(stderr,
                     "  done at %.3f ms, ok %d, %zu path changes (first %.1f us after the fault)\n",
                     flow.GetDone().GetSeconds() * 1e3,
                     flow.IsOk(),
                     changes.size(),
                     changes.empty() ? -1.0 : (changes[0].at - faultAt).GetSeconds() * 1e6);
        NS_TEST_EXPECT_MSG_EQ(flow.IsOk(), true, "the WRITE did not complete successfully");
        NS_TEST_EXPECT_MSG_EQ(flow.GetDelivered(), bytes, "bytes executed at the receiver");
        if (m_dodge)
        {
            NS_TEST_ASSERT_MSG_GT(changes.size(), 0, "no path change");
            NS_TEST_EXPECT_MSG_LT(changes[0].at - faultAt, MilliSeconds(1), "detection + repath");
            if (m_fault == Fault::kBlackHole)
            {
                NS_TEST_EXPECT_MSG_EQ(changes.size(), 1, "one dodge leaves the black hole");
                NS_TEST_EXPECT_MSG_EQ(+changes[0].reason,
                                      +static_cast<uint8_t>(eng::RepathReason::kStall),
                                      "a black hole is a stall");
            }
            NS_TEST_EXPECT_MSG_LT(flow.GetDone(), rerouteAt, "finished before the control plane moved");
            const auto now = flow.Path(flow.GetUdpSport());
            NS_TEST_EXPECT_MSG_NE(now[2], path[2], "the new path avoids the aggregation switch");
            NS_TEST_EXPECT_MSG_NE(now[3], path[3], "and the core");
        }
        else if (m_fault == Fault::kBlackHole)
        {
            NS_TEST_EXPECT_MSG_EQ(changes.size(), 0, "no path control");
            NS_TEST_EXPECT_MSG_GT(flow.GetDone(), rerouteAt, "stalled until the control plane moved");
        }
        Simulator::Destroy();
    }

    Fault m_fault;
    bool m_dodge;
};

class TitaDodgeTestSuite : public TestSuite
{
  public:
    TitaDodgeTestSuite()
        : TestSuite("tita-dodge", UNIT)
    {
        AddTestCase(new TitaDodgeDisjointTestCase("fat-tree 5 pods x 4 ToRs x 4 aggs, 16 cores (fat_tree_320's shape)",
                                                  [] { return FatTree(5, 4, 4, 16, 4); },
                                                  9),
                    TestCase::QUICK);
        AddTestCase(new TitaDodgeDisjointTestCase("fat-tree with 3 aggs and 3 cores each (the wrap at n = 3)",
                                                  [] { return FatTree(3, 3, 3, 2, 3); },
                                                  1),
                    TestCase::QUICK);
        AddTestCase(new TitaDodgeDisjointTestCase("fat-tree 4 pods x 2 x 2, DSCP dodge",
                                                  [] { return FatTree(4, 2, 2, 2, 2); },
                                                  1,
                                                  true),
                    TestCase::QUICK);
        AddTestCase(new TitaDodgeDisjointTestCase("HPCC fat_tree_320.topo",
                                                  tita_test::FatTree320,
                                                  9),
                    TestCase::QUICK);
        AddTestCase(new TitaDodgeDisjointTestCase("multi-rail, 3 spines",
                                                  [] { return tita_test::MultiRail(2, 2, 2, 3); },
                                                  1),
                    TestCase::QUICK);
        // Parallel links: the helper interleaves them in the group, so every step
        // d -> d + 1 changes spine; the wrap 15 -> 0 jumps by 15 mod 6 = 3 ports,
        // back to the same spine (doc/hash-dodging.md, limits).
        AddTestCase(new TitaDodgeDisjointTestCase("multi-rail, 3 spines x 2 parallel links, steps without the wrap",
                                                  [] { return tita_test::MultiRail(2, 2, 2, 3, 2); },
                                                  1,
                                                  false,
                                                  false),
                    TestCase::QUICK);
        AddTestCase(new TitaDodgeFaultTestCase(Fault::kBlackHole, true), TestCase::QUICK);
        AddTestCase(new TitaDodgeFaultTestCase(Fault::kBlackHole, false), TestCase::QUICK);
        AddTestCase(new TitaDodgeFaultTestCase(Fault::kLoss5, true), TestCase::QUICK);
    }
};

TitaDodgeTestSuite g_titaDodgeTestSuite;

} // namespace
