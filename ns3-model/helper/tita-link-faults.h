// Link faults for multipath and Hash Dodging experiments, as tita-sim's --fault
// spells them: down:link=L,at=T,converge=D (withdrawn from ECMP at T, every
// switch rerouted at T+D), blackhole:link=L,at=T (everything routed to it
// vanishes from T), half:link=L (half its rate from the start). L is a links.csv
// index or "core", the first link between a switch of the highest tier and
// another switch. Checked whole against the topology before the network is built.
#pragma once

#include "tita-network-helper.h"
#include "tita-notes.h"
#include "tita-topology.h"

#include "ns3/nstime.h"

#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * One link's fault, both directions.
 */
struct TitaLinkFault
{
    std::string kind; ///< down, blackhole or half
    uint32_t link = 0;
    Time at;
    Time converge; ///< down: when the rest of the fabric has rerouted, after `at`
};

/**
 * \ingroup tita
 * The faults of a run: parsed into the topology (half changes its rate), then
 * scheduled on the network built from it.
 *
 *   TitaLinkFaults faults;
 *   if (!faults.Parse("down:link=core,at=20us", &topo, notes, &err)) ...
 *   net.Build(topo);
 *   faults.Apply(net);
 */
class TitaLinkFaults
{
  public:
    /// Each ';'-separated fault of `list`, checked against *topo; a half-rate
    /// link is set in *topo. Each fault is described in `notes` as it is taken.
    /// False with a one-line message at the first mistake.
    bool Parse(const std::string& list, TitaTopology* topo, TitaNotes& notes, std::string* err);
    /// One fault ("blackhole:link=core,at=5us").
    bool Add(const std::string& item, TitaTopology* topo, TitaNotes& notes, std::string* err);
    /// Schedules the faults on the network built from the topology.
    void Apply(TitaNetworkHelper& net) const;

    const std::vector<TitaLinkFault>& Get() const { return m_faults; }

  private:
    std::vector<TitaLinkFault> m_faults;
};

/// The link "core" names: the first link between a switch of the highest tier
/// and another switch; -1 if there is none.
int64_t TitaCoreLink(const TitaTopology& topo);

} // namespace ns3
