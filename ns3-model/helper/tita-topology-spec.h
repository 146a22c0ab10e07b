// The topology a spec names, as tita-sim's and tita-dodge's --topo spell it: an
// HPCC topology file (a bare path or file:path=), fattree:..., multirail:... or
// star:... with the keys of TitaTopology's parameters (ns3-model/doc/tita-ns3.md).
#pragma once

#include "tita-topology.h"

#include <string>

namespace ns3
{

/// Builds the graph `spec` names into *out. False with a one-line message
/// ("--topo=star: n: 1 is out of range (at least 2)", "--topo: fat.topo:7: ...",
/// "--topo=...: fewer than two hosts") for anything wrong, before any ns-3
/// object exists.
bool TitaParseTopology(const std::string& spec, TitaTopology* out, std::string* err);

} // namespace ns3
