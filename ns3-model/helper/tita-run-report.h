// What a run writes when it ends, through a TitaOutputWriter: qlen_hist.csv
// (from TitaRunRecorder's histograms), links.csv (every link direction's bytes,
// utilisation, pauses, drops and tiers), steps.csv and collectives.csv, and
// summary.json (settings, flow and drop counts, speed). Formats:
// ns3-model/doc/tita-ns3.md.
#pragma once

#include "tita-flow-manager.h"
#include "tita-network-helper.h"
#include "tita-output-writer.h"
#include "tita-run-recorder.h"
#include "tita-workload.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

/// How long a run took and how far it got.
struct TitaRunTimes
{
    double simSeconds = 0;       ///< simulated time at the end
    uint64_t events = 0;         ///< simulator events executed
    double runWallSeconds = 0;   ///< Simulator::Run() alone
    double totalWallSeconds = 0; ///< from the start of setting up
};

/// Counters summed over the whole network at the end of a run.
struct TitaRunTotals
{
    uint64_t pfcPausesSent = 0; ///< by switches
    uint64_t switchDrops = 0;
    uint64_t nicDrops = 0; ///< frames the NICs' engines refused
    std::map<std::string, uint64_t> nicDropsByReason;
    uint64_t acksCoalesced = 0;
};

/**
 * \ingroup tita
 * The end-of-run files of a network, its flow manager and its collectives.
 */
class TitaRunReport
{
  public:
    TitaRunReport(const TitaNetworkHelper* net, Ptr<TitaFlowManager> mgr, TitaOutputWriter* out);

    /// qlen_hist.csv, links.csv, steps.csv, collectives.csv.
    void WriteTables(const TitaRunRecorder& rec, const std::vector<std::shared_ptr<TitaCollective>>& collectives);
    TitaRunTotals GetTotals() const;
    /// summary.json: `settings` (what the run was asked to do), then the
    /// network, the flows, the drops and the times.
    void WriteSummary(TitaSummaryJson settings,
                      const TitaRunRecorder& rec,
                      const TitaRunTotals& totals,
                      const TitaRunTimes& times);

    /// The process's peak resident set, in KB.
    static uint64_t PeakRssKb();

  private:
    void WriteQueueHistograms(const TitaRunRecorder& rec);
    void WriteLinks();
    void WriteCollectives(const std::vector<std::shared_ptr<TitaCollective>>& collectives);

    const TitaNetworkHelper* m_net;
    Ptr<TitaFlowManager> m_mgr;
    TitaOutputWriter* m_out;
};

} // namespace ns3
