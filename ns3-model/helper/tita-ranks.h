// The ranks of a collective and their order, from a --workload spec's keys:
// ranks=all|N and order= (multi-rail: rail or server; other topologies: host or
// spread). The order decides who neighbours whom in a ring and which hosts the
// first N ranks are.
#pragma once

#include "tita-spec.h"
#include "tita-topology.h"
#include "tita-workload.h"

#include <vector>

namespace ns3
{

/// The ranks `sp` asks for on `topo`:
/// - multi-rail: every GPU's rail NIC with its server and GPU; order=rail (the
///   default) puts the GPUs of one rail together, so ring neighbours share a
///   rail, order=server keeps a server's GPUs together; ranks=N with order=rail
///   takes the first ceil(N / gpus) servers whole, then the first N;
/// - otherwise: order=host (the default) in host index order, ring neighbours
///   mostly under one ToR; order=spread one host of each ToR in turn, so ring
///   neighbours and the first N ranks are under different ToRs.
/// False (with the spec's message) for a bad key or fewer than two ranks.
bool TitaCollectiveRanks(const TitaTopology& topo,
                         const TitaSpec& sp,
                         std::vector<TitaCollective::Rank>* out,
                         std::string* err);

} // namespace ns3
