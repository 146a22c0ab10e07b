// Topologies the ns-3 test suites share.
#ifndef TITA_TEST_TOPOLOGIES_H
#define TITA_TEST_TOPOLOGIES_H

#include "tita-topology.h"

#include "ns3/fatal-error.h"

#include <cstdint>
#include <string>

namespace ns3
{
namespace tita_test
{

/// A fat-tree of the given shape; links between switches at fabricBps.
inline TitaTopology
FatTree(uint32_t pods,
        uint32_t tors,
        uint32_t aggs,
        uint32_t hosts,
        uint32_t cores,
        uint64_t fabricBps = TitaTopology::FatTreeParams{}.torAggRateBps)
{
    TitaTopology::FatTreeParams p;
    p.pods = pods;
    p.torsPerPod = tors;
    p.aggsPerPod = aggs;
    p.hostsPerTor = hosts;
    p.coresPerAgg = cores;
    p.torAggRateBps = p.aggCoreRateBps = fabricBps;
    return TitaTopology::FatTree(p);
}

/// `hosts` hosts on one switch.
inline TitaTopology
Star(uint32_t hosts, uint64_t rateBps = 100'000'000'000, uint64_t delayNs = 1000)
{
    return TitaTopology::Star(hosts, rateBps, delayNs);
}

/// A multi-rail cluster of the given shape (other parameters: the defaults).
inline TitaTopology
MultiRail(uint32_t blocks, uint32_t servers, uint32_t gpus, uint32_t spines, uint32_t linksPerSpine = 1,
          bool nvlink = false)
{
    TitaTopology::MultiRailParams p;
    p.blocks = blocks;
    p.serversPerBlock = servers;
    p.gpusPerServer = gpus;
    p.spines = spines;
    p.linksPerSpine = linksPerSpine;
    p.nvlink = nvlink;
    return TitaTopology::MultiRail(p);
}

/// The HPCC paper's fat_tree_320 from the project's data directory.
inline TitaTopology
FatTree320()
{
    TitaTopology t;
    std::string err;
    NS_ABORT_MSG_IF(!TitaTopology::ReadHpcc(TITA_DATA_DIR "/workloads/fat_tree_320.topo", &t, &err), err);
    return t;
}

} // namespace tita_test
} // namespace ns3

#endif
