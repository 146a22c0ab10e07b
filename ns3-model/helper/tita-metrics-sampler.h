// metrics.jsonl: the counters a live DPDK process publishes over rte_telemetry
// (/tita/qp of each active flow's two QPs, /tita_switch/port with its queues for
// every switch port that carried traffic), one JSON line per sample, so that
// tita-exporter --from-sim turns a simulation into the same Prometheus metrics
// as a live run (doc/operations.md). Hosts are "hostN" (host index), switches
// "switchN" (N: the switch's vertex in the topology), ports "pK".
#pragma once

#include "tita-flow-manager.h"
#include "tita-network-helper.h"

#include "ns3/nstime.h"

#include <ostream>
#include <unordered_map>

namespace ns3
{

/**
 * \ingroup tita
 * Writes a line to `out` every `interval` from Start(); must outlive the run.
 */
class TitaMetricsSampler
{
  public:
    TitaMetricsSampler(const TitaNetworkHelper* net, Ptr<TitaFlowManager> mgr, std::ostream* out);
    void Start(Time interval);

  private:
    void Sample();
    /// One /tita/qp object; false (nothing written) if the QP is gone.
    bool Qp(uint32_t host, uint32_t qpn, bool first);
    void Ports();

    const TitaNetworkHelper* m_net;
    Ptr<TitaFlowManager> m_mgr;
    std::ostream* m_out;
    Time m_interval;
    std::unordered_map<uint32_t, uint32_t> m_switchVertex; // ns-3 node id -> topology vertex
};

} // namespace ns3
