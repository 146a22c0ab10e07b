// Hash Dodging under a silent fault (doc/hash-dodging.md), the experiment
// tita-dodge runs: a long RDMA WRITE from the first host to the last (across
// the core) and a collective among other hosts spread over the ToRs, on a
// fabric whose switches add the dodge offset to ECMP. At faultAt the
// aggregation switch's port to the core on the long flow's path starts dropping
// everything routed to it (blackhole) or a fraction (loss); rerouteAfter later
// the control plane withdraws the port. Outputs: series.csv (long-flow and
// collective bytes and Gb/s per sample), path_changes.csv, summary.json
// (detection and recovery times, completion, bytes, collective duration).
#pragma once

#include "tita-command-line.h"
#include "tita-flow-manager.h"
#include "tita-long-flow.h"
#include "tita-network-helper.h"
#include "tita-notes.h"
#include "tita-output-writer.h"
#include "tita-workload.h"

#include "ns3/command-line.h"
#include "ns3/nstime.h"

#include <memory>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * The experiment's settings, spelled as tita-dodge's options.
 */
struct TitaDodgeConfig
{
    std::string topo = "data/workloads/fat_tree_320.topo";
    std::string fault = "blackhole"; ///< none, blackhole, loss
    double loss = 0.05;              ///< drop probability of fault=loss
    bool dodge = true;               ///< path control in the NICs
    std::string recovery = "gbn";    ///< gbn, sr
    std::string cc = "hpcc";
    uint64_t flowBytes = 100'000'000;
    std::string faultAt = "1ms";
    std::string rerouteAfter = "20s";
    std::string collective = "alltoall"; ///< none, alltoall, allreduce
    uint32_t ranks = 40;
    uint64_t collectiveBytes = 32'000'000;
    std::string collectiveAt = "500us";
    std::string sample = "10us";
    std::string seriesBefore = "500us";
    std::string seriesAfter = "3ms";
    std::string stop = "60s";
    uint32_t qpTimeout = 10;
    uint32_t retryCnt = 7;
    std::string outDir = "out/tita-dodge";

    /// tita-dodge's options, each bound to its field, with its help.
    void AddOptions(TitaCommandLine& cmd);
};

/// Samples of the delivered bytes, and what they say about the fault.
struct TitaDodgeSample
{
    int64_t tNs;
    uint64_t flowBytes; ///< executed by the long flow's receiver
    uint64_t collBytes; ///< executed by every rank's receiving QPs
};

struct TitaDodgeRecovery
{
    double preFaultGbps = 0; ///< mean over the samples up to the fault
    int64_t dipNs = -1;      ///< first sample below half of it, after the fault (absolute)
    int64_t recoverNs = -1;  ///< since the fault, to the start of the recovered run
    double afterFaultGbps = 0; ///< from the fault to the last sample
};

/**
 * \ingroup tita
 *   TitaDodgeExperiment x(cfg, notes);
 *   if (!x.Build(&err)) ...
 *   x.Run();
 *   x.Finish();
 */
class TitaDodgeExperiment
{
  public:
    TitaDodgeExperiment(TitaDodgeConfig cfg, TitaNotes& notes);

    /// Checks the settings, builds the fabric, the long flow, the collective,
    /// the fault and the samplers. False with a one-line message.
    bool Build(std::string* err);
    /// Until the long flow and the collective are over and the series is
    /// complete, or the stop time.
    void Run();
    /// series.csv, path_changes.csv, summary.json and the closing line.
    void Finish();

    /// The long flow's recovery in `s`: the pre-fault mean; the first sample
    /// below 50% of it after the fault; the end of the first run of 5 samples
    /// at >= 90% of it that follows that dip (or, with `noDip`, the fault
    /// itself), less one sample, since the fault.
    static TitaDodgeRecovery Recovery(const std::vector<TitaDodgeSample>& s, Time faultAt, Time sample, bool noDip);

    const TitaLongFlow& GetLongFlow() const { return *m_flow; }
    const TitaPathChangeLog& GetPathChanges() const { return m_changes; }
    std::shared_ptr<TitaCollective> GetCollective() const { return m_coll; }
    const std::vector<TitaDodgeSample>& GetSamples() const { return m_samples; }

  private:
    bool CheckSettings(std::string* err);
    bool BuildLongFlow(std::string* err);
    void BuildCollective();
    void ScheduleFault();
    void Sample();
    void Watch();
    uint64_t CollectiveBytes() const;
    void WriteSeries();
    void WriteSummary(const TitaDodgeRecovery& r, int64_t detectNs, uint32_t flowChanges, uint32_t collChanges);

    TitaDodgeConfig m_cfg;
    TitaNotes& m_notes;
    Time m_faultAt;
    Time m_rerouteAfter;
    Time m_sample;
    Time m_seriesStart;
    Time m_seriesEnd;
    Time m_collectiveAt;
    Time m_stop;
    TitaTopology m_topo;
    TitaNetworkHelper m_net;
    std::unique_ptr<TitaLongFlow> m_flow;
    std::vector<uint32_t> m_path;
    Ptr<TitaSwitchNode> m_faultSwitch;
    uint16_t m_faultPort = 0;
    Ptr<TitaFlowManager> m_mgr;
    std::shared_ptr<TitaCollective> m_coll;
    std::vector<TitaCollective::Rank> m_ranks;
    TitaPathChangeLog m_changes;
    std::vector<TitaDodgeSample> m_samples;
    double m_wallSeconds = 0;
    TitaOutputWriter m_out;
};

} // namespace ns3
