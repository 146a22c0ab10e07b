// What a run records while it runs, through a TitaOutputWriter: every finished
// flow (fct.csv), every PFC frame at a switch (pfc.csv), switch drops by reason,
// the histogram of every switch egress queue (written by TitaRunReport), and
// with a series period the time series of flows, queues and switch ports
// (flow_series.csv, qlen_series.csv, port_series.csv). Formats:
// ns3-model/doc/tita-ns3.md.
#pragma once

#include "tita-flow-manager.h"
#include "tita-network-helper.h"
#include "tita-output-writer.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <deque>
#include <ostream>
#include <unordered_map>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * Trace sinks and samplers on a built network and its flow manager. Connect()
 * once, then the samplers wanted, before Simulator::Run(); the recorder must
 * outlive the run.
 */
class TitaRunRecorder
{
  public:
    TitaRunRecorder(TitaNetworkHelper* net, Ptr<TitaFlowManager> mgr, TitaOutputWriter* out);

    /// fct.csv and pfc.csv rows, and drop counts, from now on.
    void Connect();
    /// Every `interval`, each switch egress queue's length into its histogram
    /// (1 KB buckets).
    void SampleQueues(Time interval);
    /// Every `interval`, flow_series.csv, qlen_series.csv and port_series.csv.
    void SampleSeries(Time interval);

    /// Per switch (GetSwitches() order), per port, samples per 1 KB bucket.
    const std::vector<std::vector<std::vector<uint64_t>>>& GetQueueHistograms() const { return m_qhist; }
    /// Switch drops per tita::fabric::DropReason.
    const std::vector<uint64_t>& GetDropsByReason() const { return m_dropsByReason; }

  private:
    struct PfcPort
    {
        std::ostream* out;
        uint32_t node;
        uint16_t port;
    };
    void QueueSample();
    void SeriesSample();
    void FlowSeriesRows(uint64_t tNs);
    void PortSeriesRows(uint64_t tNs);

    TitaNetworkHelper* m_net;
    Ptr<TitaFlowManager> m_mgr;
    TitaOutputWriter* m_out;
    std::vector<uint64_t> m_dropsByReason;
    std::deque<PfcPort> m_pfcPorts; // bound to the ports' Pfc traces
    Time m_qlenInterval;
    std::vector<std::vector<std::vector<uint64_t>>> m_qhist;
    Time m_seriesInterval;
    std::ostream* m_flowSeries = nullptr;
    std::ostream* m_qlenSeries = nullptr;
    std::ostream* m_portSeries = nullptr;
    std::unordered_map<uint32_t, uint64_t> m_lastDelivered; // flow id -> bytes
    std::vector<std::vector<uint64_t>> m_lastTx;            // per switch port: wire bytes sent
    std::unordered_map<uint64_t, uint32_t> m_peerOf;        // node << 16 | port -> peer node
};

} // namespace ns3
