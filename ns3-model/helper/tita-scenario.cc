#include "tita-scenario.h"

#include "tita-parallel-simulator-impl.h"
#include "tita-partition.h"
#include "tita-presets.h"
#include "tita-topology-spec.h"
#include "tita-units.h"

#include "tita/cc/cc.h"

#include "ns3/simulator.h"
#include "ns3/string.h"

#include <algorithm>
#include <cstdio>

namespace ns3
{

namespace
{

double
SecondsSince(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

} // namespace

void
TitaScenarioConfig::AddOptions(TitaCommandLine& cmd)
{
    cmd.AddValue("topo",
                 "HPCC topology file, or fattree:pods=,tors=,aggs=,hosts=,cores=,host_rate=,fabric_rate=,"
                 "delay=,oversub= | multirail:blocks=,servers=,gpus=,spines=,nic_rate=,fabric_rate=,nvlink= "
                 "| star:n=,rate=,delay= (rates with their unit: 100Gbps)",
                 topo,
                 "TOPOLOGY");
    cmd.AddValue("workload",
                 "';'-separated: poisson:cdf=FILE,load=0.3 | flows:path=FILE | incast:senders=N,"
                 "receiver=R,bytes=B,jitter=NS,at=NS | allreduce:ranks=all|N,bytes=B,order=rail|server (multi-rail) or host|spread | "
                 "alltoall:ranks=N,bytes=B,pxn=0|1,order=(as allreduce)",
                 workload,
                 "WORKLOAD");
    cmd.AddValue("cc",
                 "Congestion control: none dcqcn timely hpcc swift powertcp nscc tita, or one of a "
                 "--cc-plugin; help lists them with their parameters",
                 cc,
                 "NAME");
    cmd.AddValue("cc-plugin",
                 "Comma-separated shared objects with congestion-control plug-ins (cc/plugin.h) to load",
                 ccPlugins,
                 "PATH[,PATH]");
    cmd.AddValue("cc-params",
                 "Comma-separated name=value parameters of the congestion control",
                 ccParams,
                 "NAME=VALUE[,...]");
    cmd.AddValue("duration", "Poisson arrivals during this long", duration, "TIME");
    cmd.AddValue("stop", "Stop the simulation at this time even if flows remain", stop, "TIME");
    cmd.AddValue("seed", "Seed of the workload generator", seed);
    cmd.AddValue("out", "Output directory", outDir, "DIR");
    cmd.AddValue("progress", "Seconds of wall time between progress lines (0: none)", progress, "REAL (s)");
    cmd.AddValue("qlen-interval", "Switch queue length sampling period (0: none)", qlenInterval, "TIME");
    cmd.AddValue("pcap", "Comma-separated host indices to capture (pcap, RoCEv2 frames)", pcap, "HOSTS");
    cmd.AddValue("names", "Register nodes under their topology names (Config paths)", names);
    cmd.AddValue("series",
                 "Sampling period of flow_series.csv (each active flow's delivered bytes, goodput, rate "
                 "and window), qlen_series.csv (every non-empty switch queue) and port_series.csv (every "
                 "switch port that sent: its wire bytes and utilisation over the period); 0: none",
                 series,
                 "TIME");
    cmd.AddValue("metrics",
                 "Sampling period of metrics.jsonl: the counters a DPDK process publishes over rte_telemetry "
                 "(/tita/qp of each active flow's QPs, /tita_switch/port and queues of every switch port "
                 "that carried traffic), for tita-exporter --from-sim; 0: none",
                 metrics,
                 "TIME");
    cmd.AddValue("int-off",
                 "INT off on some switches: all | half (every other switch of each tier) | tor | agg | core",
                 intOff,
                 "WHICH");
    cmd.AddValue("fault",
                 "';'-separated link faults, both directions: down:link=L|core,at=T,converge=D (the "
                 "switches at its ends withdraw it from ECMP at T, every other switch reroutes around it at "
                 "T+D, default 0) | blackhole:link=L|core,at=T (silently drops everything "
                 "routed to it) | half:link=L|core (half its rate, from the start). L: a links.csv index; "
                 "core: the first link between a switch of the highest tier and another switch",
                 fault,
                 "FAULTS");
    cmd.AddValue("threads",
                 "Run on this many threads (1 to 256): the network cut into logical processes, one per "
                 "switch with its hosts, synchronised by the links' delay; every output is the same for "
                 "any count. 0: the sequential simulator",
                 threads,
                 "UINT");
    cmd.AddValue("preset",
                 "Configure hosts, switches and the algorithm as another simulator does: hpcc-artifact "
                 "(the HPCC paper's simulator as its run.py sets it up; doc/ns3-vs-hpcc-artifact.md). "
                 "Attributes given on the command line win",
                 preset,
                 "NAME");
}

TitaScenario::TitaScenario(TitaScenarioConfig cfg, TitaNotes& notes)
    : m_cfg(std::move(cfg)),
      m_notes(notes),
      m_wallStart(std::chrono::steady_clock::now())
{
}

bool
TitaScenario::LoadCcPlugins(const std::string& list, std::string* err)
{
    for (const std::string& path : TitaSpec::SplitList(list, ','))
    {
        if (::tita::cc::load_plugin(path, err) != 0)
        {
            return false;
        }
    }
    return true;
}

bool
TitaScenario::Build(std::string* err)
{
    return CheckTimes(err) && BuildTopology(err) && ApplyPresetAndCc(err) && BuildNetwork(err) &&
           AddWorkloads(err) && OpenOutputs(err);
}

bool
TitaScenario::CheckTimes(std::string* err)
{
    if (!TitaParseTimeOption("duration", m_cfg.duration, &m_duration, err) ||
        !TitaParseTimeOption("stop", m_cfg.stop, &m_stop, err))
    {
        return false;
    }
    if (!m_stop.IsStrictlyPositive())
    {
        *err = "--stop must be above 0";
        return false;
    }
    return true;
}

bool
TitaScenario::BuildTopology(std::string* err)
{
    return TitaParseTopology(m_cfg.topo, &m_topo, err);
}

// The preset first, then what the settings say: attributes given are left as
// they are, parameters in ccParams come after the preset's. Then the algorithm
// and every parameter, checked (and units converted).
bool
TitaScenario::ApplyPresetAndCc(std::string* err)
{
    if (!m_cfg.preset.empty())
    {
        uint64_t hostBps = 0;
        for (const auto& l : m_topo.Links())
        {
            if (l.a == m_topo.Hosts().front() || l.b == m_topo.Hosts().front())
            {
                hostBps = l.rateBps;
                break;
            }
        }
        TitaPreset preset;
        if (!TitaGetPreset(m_cfg.preset, m_cfg.cc, hostBps, &preset, err))
        {
            *err = "--preset: " + *err;
            return false;
        }
        for (const auto& path : TitaApplyPreset(preset, m_cfg.givenAttributes))
        {
            m_notes.Line() << "preset " << m_cfg.preset << ": --" << path << " as given\n";
        }
        if (!preset.ccParams.empty())
        {
            m_cfg.ccParams = preset.ccParams + (m_cfg.ccParams.empty() ? "" : "," + m_cfg.ccParams);
        }
    }
    std::vector<std::string> params;
    if (!TitaCcParams(m_cfg.cc, m_cfg.ccParams, &params, err))
    {
        *err = "--cc=" + m_cfg.cc + ": " + *err;
        return false;
    }
    m_cfg.ccParams.clear();
    for (const auto& p : params)
    {
        m_cfg.ccParams += (m_cfg.ccParams.empty() ? "" : ",") + p;
    }
    return true;
}

bool
TitaScenario::BuildNetwork(std::string* err)
{
    m_net.EnableNames(m_cfg.names);
    if (!m_net.SetIntOff(m_cfg.intOff))
    {
        *err = "--int-off=" + m_cfg.intOff + ": expected all, half, tor, agg or core";
        return false;
    }
    const auto nHosts = m_topo.Hosts().size();
    for (const std::string& x : TitaSpec::SplitList(m_cfg.pcap, ','))
    {
        uint64_t h = 0;
        std::string parseErr;
        if (!TitaParseCount(x, &h, &parseErr) || h >= nHosts)
        {
            *err = "--pcap: '" + x + "' is not a host index below " + std::to_string(nHosts);
            return false;
        }
        m_pcapHosts.push_back(static_cast<uint32_t>(h));
    }
    if (!m_faults.Parse(m_cfg.fault, &m_topo, m_notes, err))
    {
        return false;
    }
    if (!m_net.Build(m_topo, err))
    {
        return false;
    }
    if (m_cfg.threads > 0 && !SplitForThreads(err))
    {
        return false;
    }
    m_faults.Apply(m_net);
    if (!m_cfg.intOff.empty())
    {
        m_notes.Line() << "INT off on " << m_net.GetIntOffCount() << " switches (" << m_cfg.intOff << ")\n";
    }
    m_notes.Line() << m_topo.Describe() << ", max base RTT " << m_net.GetMaxBaseRttNs() << " ns, cc " << m_cfg.cc
                   << (m_cfg.ccParams.empty() ? "" : " " + m_cfg.ccParams)
                   << (m_cfg.preset.empty() ? "" : ", preset " + m_cfg.preset) << "\n";
    m_mgr = CreateObject<TitaFlowManager>();
    m_mgr->SetAttribute("Cc", StringValue(m_cfg.cc));
    m_mgr->SetAttribute("CcParams", StringValue(m_cfg.ccParams));
    m_mgr->SetNetwork(&m_net);
    return true;
}

// The network into logical processes, before anything is scheduled on it.
bool
TitaScenario::SplitForThreads(std::string* err)
{
    Simulator::GetImplementation();
    TitaParallelSimulatorImpl* sim = TitaParallelSimulatorImpl::Get();
    if (sim == nullptr)
    {
        *err = "--threads needs SimulatorImplementationType=ns3::TitaParallelSimulatorImpl";
        return false;
    }
    const TitaPartition p = TitaMakePartition(m_net);
    const uint64_t lookahead =
        p.cutLinks > 0 ? static_cast<uint64_t>(NanoSeconds(p.lookaheadNs).GetTimeStep()) : UINT64_MAX / 4;
    sim->Configure(p.lpOfNode, p.nLps, lookahead, m_cfg.threads);
    m_notes.Line() << "threads " << m_cfg.threads << ": " << p.Describe() << "\n";
    return true;
}

bool
TitaScenario::AddWorkloads(std::string* err)
{
    m_workloads = std::make_unique<TitaWorkloadSet>(&m_net, m_mgr, m_duration, m_cfg.seed, m_notes);
    if (!m_workloads->AddAll(m_cfg.workload, err))
    {
        return false;
    }
    if (m_workloads->GetScheduled() == 0)
    {
        *err = "--workload=" + m_cfg.workload + " starts no flow";
        return false;
    }
    if (m_workloads->GetFirstStart() >= m_stop)
    {
        std::ostringstream o;
        o << "no flow starts before --stop=" << m_cfg.stop << " (the first starts at "
          << m_workloads->GetFirstStart().As(Time::MS) << "): raise --stop";
        *err = o.str();
        return false;
    }
    if (m_workloads->GetArrivalsEnd() >= m_stop)
    {
        m_notes.Line() << "warning: flows keep arriving until " << m_workloads->GetArrivalsEnd().As(Time::MS)
                       << ", after --stop=" << m_cfg.stop << ": the later ones never start\n";
    }
    return true;
}

// Everything above was checked; from here on, work.
bool
TitaScenario::OpenOutputs(std::string* err)
{
    Time qlen;
    Time series;
    Time metrics;
    if (!TitaParseTimeOption("qlen-interval", m_cfg.qlenInterval, &qlen, err) ||
        !TitaParseTimeOption("series", m_cfg.series, &series, err) ||
        !TitaParseTimeOption("metrics", m_cfg.metrics, &metrics, err) || !m_out.SetDirectory(m_cfg.outDir, err))
    {
        return false;
    }
    for (uint32_t h : m_pcapHosts)
    {
        m_net.EnablePcap(m_out.Path("nic"), h);
    }
    m_recorder = std::make_unique<TitaRunRecorder>(&m_net, m_mgr, &m_out);
    m_recorder->Connect();
    if (qlen.IsStrictlyPositive())
    {
        m_recorder->SampleQueues(qlen);
    }
    if (series.IsStrictlyPositive())
    {
        m_recorder->SampleSeries(series);
    }
    if (metrics.IsStrictlyPositive())
    {
        m_metrics = std::make_unique<TitaMetricsSampler>(&m_net, m_mgr, &m_out.File("metrics.jsonl"));
        m_metrics->Start(metrics);
    }
    return true;
}

void
TitaScenario::Run()
{
    m_lastPrint = std::chrono::steady_clock::now();
    Simulator::Schedule(MicroSeconds(20), &TitaScenario::Watch, this);
    Simulator::Stop(m_stop);
    m_runStart = std::chrono::steady_clock::now();
    Simulator::Run();
    m_runWallSeconds = SecondsSince(m_runStart);
}

// Stops the run once the arrivals are over and everything has completed.
void
TitaScenario::Watch()
{
    bool busy = Simulator::Now() <= m_workloads->GetArrivalsEnd() || m_mgr->GetActive() > 0;
    for (const auto& c : m_workloads->GetCollectives())
    {
        busy |= !c->IsDone();
    }
    for (const auto& j : m_workloads->GetJobs())
    {
        busy |= !j->IsDone();
    }
    if (!busy)
    {
        Simulator::Stop();
        return;
    }
    if (m_cfg.progress > 0 && SecondsSince(m_lastPrint) >= m_cfg.progress)
    {
        Progress();
        m_lastPrint = std::chrono::steady_clock::now();
    }
    Simulator::Schedule(MicroSeconds(20), &TitaScenario::Watch, this);
}

// The simulated speed is the average since the run started (one busy or idle
// stretch says little), and the ETA covers what is known: the arrivals; after
// them, the line says how many flows are still draining.
void
TitaScenario::Progress()
{
    const double ran = SecondsSince(m_runStart);
    const double simMs = Simulator::Now().GetSeconds() * 1e3;
    const double endMs = std::min(m_workloads->GetArrivalsEnd(), m_stop).GetSeconds() * 1e3;
    const double msPerS = ran > 0 ? simMs / ran : 0;
    char tail[96];
    if (simMs < endMs)
    {
        std::snprintf(tail, sizeof tail, "arrivals end in ~%.0fs", msPerS > 0 ? (endMs - simMs) / msPerS : 0.0);
    }
    else
    {
        std::snprintf(tail, sizeof tail, "arrivals over, %u flows draining", m_mgr->GetActive());
    }
    char line[320];
    std::snprintf(line,
                  sizeof line,
                  "[%7.1fs] sim %.3f ms | %.0f events/s | %.3f sim-ms/s | flows %u/%u active %u%s | %s\n",
                  SecondsSince(m_wallStart),
                  simMs,
                  ran > 0 ? Simulator::GetEventCount() / ran : 0.0,
                  msPerS,
                  m_mgr->GetFinished(),
                  m_mgr->GetStarted(),
                  m_mgr->GetActive(),
                  m_mgr->GetActive() == 0 ? " (idle)" : "",
                  tail);
    m_notes.Raw() << line;
}

std::string
TitaScenario::ThreadsNote() const
{
    const TitaParallelSimulatorImpl* sim = m_cfg.threads > 0 ? TitaParallelSimulatorImpl::Get() : nullptr;
    if (sim == nullptr)
    {
        return "";
    }
    return ", " + std::to_string(sim->GetThreads()) + " threads, " + std::to_string(sim->GetRounds()) + " rounds";
}

void
TitaScenario::Finish()
{
    TitaRunTimes times;
    times.simSeconds = Simulator::Now().GetSeconds();
    times.events = Simulator::GetEventCount();
    times.runWallSeconds = m_runWallSeconds;
    TitaRunReport report(&m_net, m_mgr, &m_out);
    report.WriteTables(*m_recorder, m_workloads->GetCollectives());
    for (const auto& j : m_workloads->GetJobs())
    {
        j->Finish(m_out, m_notes);
    }
    const TitaRunTotals totals = report.GetTotals();
    times.totalWallSeconds = SecondsSince(m_wallStart);
    TitaSummaryJson settings;
    settings.Str("topo", m_cfg.topo)
        .Str("workload", m_cfg.workload)
        .Str("cc", m_cfg.cc)
        .Str("cc_params", m_cfg.ccParams)
        .Num("seed", m_cfg.seed);
    report.WriteSummary(std::move(settings), *m_recorder, totals, times);
    m_out.Flush();
    const double wall = times.runWallSeconds;
    char line[512];
    std::snprintf(line,
                  sizeof line,
                  "done at %.3f ms simulated: %u/%u flows finished (%u failed), %lu PFC pauses, %lu switch drops, "
                  "%lu NIC drops, %lu timeouts; %lu events in %.1f s (%.0f events/s, %.3f sim-ms/s), peak RSS %lu MB%s\n",
                  times.simSeconds * 1e3,
                  m_mgr->GetFinished(),
                  m_mgr->GetStarted(),
                  m_mgr->GetFailed(),
                  static_cast<unsigned long>(totals.pfcPausesSent),
                  static_cast<unsigned long>(totals.switchDrops),
                  static_cast<unsigned long>(totals.nicDrops),
                  static_cast<unsigned long>(m_mgr->GetTimeouts()),
                  static_cast<unsigned long>(times.events),
                  wall,
                  wall > 0 ? times.events / wall : 0,
                  wall > 0 ? times.simSeconds * 1e3 / wall : 0,
                  static_cast<unsigned long>(TitaRunReport::PeakRssKb() / 1024),
                  ThreadsNote().c_str());
    m_notes.Line() << line;
    if (m_mgr->GetActive() > 0)
    {
        m_notes.Line() << "warning: --stop=" << m_cfg.stop << " reached with " << m_mgr->GetActive()
                       << " flows unfinished (not in fct.csv)\n";
    }
}

} // namespace ns3
