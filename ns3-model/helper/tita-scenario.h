// A whole tita-sim run from its settings: the topology (TitaParseTopology), a
// preset and the congestion control, the network, link faults (TitaLinkFaults),
// the workloads (TitaWorkloadSet), the outputs (TitaRunRecorder,
// TitaMetricsSampler, TitaRunReport through one TitaOutputWriter), the run
// until everything is done, and the summary. tita-sim is this class behind a
// command line; a program or a test can run the same scenario with its own
// settings (ns3-model/doc/tita-ns3.md, "Helpers").
#pragma once

#include "tita-flow-manager.h"
#include "tita-link-faults.h"
#include "tita-metrics-sampler.h"
#include "tita-network-helper.h"
#include "tita-notes.h"
#include "tita-output-writer.h"
#include "tita-run-recorder.h"
#include "tita-run-report.h"
#include "tita-topology.h"
#include "tita-workload-kinds.h"

#include "tita-command-line.h"

#include "ns3/command-line.h"
#include "ns3/nstime.h"

#include <chrono>
#include <memory>
#include <set>
#include <string>

namespace ns3
{

/**
 * \ingroup tita
 * The settings of a run, spelled as tita-sim's options (times as ns-3 Time
 * strings, bare numbers in seconds; specs as in ns3-model/doc/tita-ns3.md).
 */
struct TitaScenarioConfig
{
    std::string topo = "data/workloads/fat_tree_320.topo";
    std::string workload = "poisson:cdf=data/workloads/websearch.cdf,load=0.3";
    std::string cc = "hpcc";
    std::string ccPlugins; ///< comma-separated shared objects (LoadCcPlugins)
    std::string ccParams;
    std::string duration = "10ms"; ///< Poisson arrival window
    std::string stop = "1s";       ///< hard stop
    std::string outDir = "out/tita-sim";
    uint64_t seed = 1;
    double progress = 5; ///< wall seconds between progress lines; 0: none
    std::string qlenInterval = "10us";
    std::string pcap; ///< comma-separated host indices
    bool names = false;
    std::string intOff;
    std::string series = "0s";
    std::string metrics = "0s";
    std::string preset;
    std::string fault;
    /// Threads of a parallel run (TitaParallelSimulatorImpl, which the program
    /// selects before ns-3 starts); 0: the sequential simulator.
    uint32_t threads = 0;
    /// Attribute paths set on the command line (TitaAttributesGiven): the preset
    /// leaves them as given.
    std::set<std::string> givenAttributes;

    /// tita-sim's options, each bound to its field, with its help.
    void AddOptions(TitaCommandLine& cmd);
};

/**
 * \ingroup tita
 *
 *   TitaNotes notes(&std::cerr, "my-sim");
 *   TitaScenarioConfig cfg;
 *   cfg.topo = "star:n=5";
 *   cfg.workload = "incast:senders=4,bytes=1MB";
 *   TitaScenario sc(cfg, notes);
 *   if (!sc.Build(&err)) ...
 *   sc.Run();
 *   sc.Finish();
 *   Simulator::Destroy();
 */
class TitaScenario
{
  public:
    TitaScenario(TitaScenarioConfig cfg, TitaNotes& notes);

    /// Loads each comma-separated congestion-control plug-in (cc/plugin.h).
    static bool LoadCcPlugins(const std::string& list, std::string* err);

    /// Checks every setting and builds the run: network, faults, workloads,
    /// output files and samplers. False with a one-line message at the first
    /// mistake; nothing is simulated before it returns.
    bool Build(std::string* err);
    /// Simulates until the arrivals are over and every flow and collective has
    /// completed, or until the stop time.
    void Run();
    /// Writes the end-of-run files and says how the run went.
    void Finish();

    const TitaScenarioConfig& GetConfig() const { return m_cfg; }
    TitaNetworkHelper& GetNetwork() { return m_net; }
    Ptr<TitaFlowManager> GetFlowManager() const { return m_mgr; }
    const TitaWorkloadSet& GetWorkloads() const { return *m_workloads; }

  private:
    bool CheckTimes(std::string* err);
    bool BuildTopology(std::string* err);
    bool ApplyPresetAndCc(std::string* err);
    bool BuildNetwork(std::string* err);
    bool SplitForThreads(std::string* err);
    std::string ThreadsNote() const;
    bool AddWorkloads(std::string* err);
    bool OpenOutputs(std::string* err);
    void Watch();
    void Progress();

    TitaScenarioConfig m_cfg;
    TitaNotes& m_notes;
    std::chrono::steady_clock::time_point m_wallStart;
    std::chrono::steady_clock::time_point m_runStart;
    std::chrono::steady_clock::time_point m_lastPrint;
    double m_runWallSeconds = 0;
    Time m_duration;
    Time m_stop;
    TitaTopology m_topo;
    std::vector<uint32_t> m_pcapHosts;
    TitaLinkFaults m_faults;
    TitaNetworkHelper m_net;
    Ptr<TitaFlowManager> m_mgr;
    std::unique_ptr<TitaWorkloadSet> m_workloads;
    TitaOutputWriter m_out;
    std::unique_ptr<TitaRunRecorder> m_recorder;
    std::unique_ptr<TitaMetricsSampler> m_metrics;
};

} // namespace ns3
