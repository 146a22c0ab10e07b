#include "tita-dodge-experiment.h"

#include "tita-topology-spec.h"
#include "tita-units.h"

#include "ns3/boolean.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace ns3
{

namespace eng = ::tita::engine;

namespace
{

bool
OneOf(const std::string& name, const std::string& value, std::initializer_list<const char*> known, std::string* err)
{
    std::string list;
    for (const char* k : known)
    {
        if (value == k)
        {
            return true;
        }
        list += (list.empty() ? "" : ", ") + std::string(k);
    }
    *err = "--" + name + ": '" + value + "' is not one of " + list;
    return false;
}

double
Gbps(const TitaDodgeSample& a, const TitaDodgeSample& b)
{
    return (b.flowBytes - a.flowBytes) * 8.0 / static_cast<double>(b.tNs - a.tNs);
}

} // namespace

void
TitaDodgeConfig::AddOptions(TitaCommandLine& cmd)
{
    cmd.AddValue("topo",
                 "HPCC topology file or fattree:pods=,tors=,aggs=,hosts=,cores=,fabric_rate=",
                 topo,
                 "TOPOLOGY");
    cmd.AddValue("fault",
                 "none | blackhole (drop all routed to the port) | loss (random)",
                 fault,
                 "none|blackhole|loss");
    cmd.AddValue("loss", "Drop probability for --fault=loss", loss, "REAL (0..1)");
    cmd.AddValue("dodge", "Path control in the NICs (Hash Dodging)", dodge);
    cmd.AddValue("recovery", "gbn | sr", recovery, "gbn|sr");
    cmd.AddValue("cc", "Congestion control of every QP", cc, "NAME");
    cmd.AddValue("flow-bytes", "Size of the long flow", flowBytes, "UINT (bytes)");
    cmd.AddValue("fault-at", "When the port fails", faultAt, "TIME");
    cmd.AddValue("reroute-after", "Control plane: the port leaves its ECMP groups this long after the fault",
                 rerouteAfter, "TIME");
    cmd.AddValue("collective", "none | alltoall | allreduce", collective, "none|alltoall|allreduce");
    cmd.AddValue("ranks", "Hosts in the collective (spread over the ToRs; not the long flow's)", ranks);
    cmd.AddValue("collective-bytes", "Bytes per rank", collectiveBytes, "UINT (bytes)");
    cmd.AddValue("collective-at", "When the collective starts", collectiveAt, "TIME");
    cmd.AddValue("sample", "Throughput sampling interval", sample, "TIME");
    cmd.AddValue("series-before", "Sample from this long before the fault", seriesBefore, "TIME");
    cmd.AddValue("series-after", "... until this long after it", seriesAfter, "TIME");
    cmd.AddValue("stop", "Hard stop (simulated)", stop, "TIME");
    cmd.AddValue("qp-timeout", "IB local ACK timeout code of every QP (4.096 us x 2^code)", qpTimeout);
    cmd.AddValue("retry-cnt", "Retransmission rounds before RETRY_EXC_ERR", retryCnt);
    cmd.AddValue("out", "Output directory", outDir, "DIR");
}

TitaDodgeExperiment::TitaDodgeExperiment(TitaDodgeConfig cfg, TitaNotes& notes)
    : m_cfg(std::move(cfg)),
      m_notes(notes)
{
}

bool
TitaDodgeExperiment::Build(std::string* err)
{
    if (!CheckSettings(err))
    {
        return false;
    }
    m_net.SetSwitchAttribute("DodgeField", StringValue("udp-sport"));
    m_net.SetNicAttribute("DodgeField", StringValue(m_cfg.dodge ? "udp-sport" : "none"));
    m_net.SetNicAttribute("SelectiveRepeat", BooleanValue(m_cfg.recovery == "sr"));
    m_net.SetNicAttribute("QpTimeout", UintegerValue(m_cfg.qpTimeout));
    m_net.SetNicAttribute("RetryCnt", UintegerValue(m_cfg.retryCnt));
    if (!m_net.Build(m_topo, err))
    {
        return false;
    }
    m_notes.Line() << m_net.GetTopology().Describe() << ", max base RTT " << m_net.GetMaxBaseRttNs() << " ns, fault "
                   << m_cfg.fault << ", dodging " << (m_cfg.dodge ? "on" : "off") << ", " << m_cfg.recovery << ", "
                   << m_cfg.cc << "\n";
    if (!BuildLongFlow(err))
    {
        return false;
    }
    BuildCollective();
    m_changes.WatchAll(m_net);
    ScheduleFault();
    Simulator::Schedule(m_seriesStart, &TitaDodgeExperiment::Sample, this);
    Simulator::Schedule(MicroSeconds(200), &TitaDodgeExperiment::Watch, this);
    const auto bytes = static_cast<uint32_t>(std::min<uint64_t>(m_cfg.flowBytes, 0x7fffffff));
    if (const int rc = m_flow->Write(bytes); rc != 0)
    {
        *err = "the long flow's WRITE was refused (" + std::to_string(rc) + ")";
        return false;
    }
    return true;
}

bool
TitaDodgeExperiment::CheckSettings(std::string* err)
{
    Time before;
    Time after;
    const bool ok = OneOf("fault", m_cfg.fault, {"none", "blackhole", "loss"}, err) &&
           OneOf("recovery", m_cfg.recovery, {"gbn", "sr"}, err) &&
           OneOf("collective", m_cfg.collective, {"none", "alltoall", "allreduce"}, err) &&
           TitaParseTimeOption("fault-at", m_cfg.faultAt, &m_faultAt, err) &&
           TitaParseTimeOption("reroute-after", m_cfg.rerouteAfter, &m_rerouteAfter, err) &&
           TitaParseTimeOption("collective-at", m_cfg.collectiveAt, &m_collectiveAt, err) &&
           TitaParseTimeOption("sample", m_cfg.sample, &m_sample, err) &&
           TitaParseTimeOption("series-before", m_cfg.seriesBefore, &before, err) &&
           TitaParseTimeOption("series-after", m_cfg.seriesAfter, &after, err) &&
           TitaParseTimeOption("stop", m_cfg.stop, &m_stop, err) &&
           TitaParseTopology(m_cfg.topo, &m_topo, err) && m_out.SetDirectory(m_cfg.outDir, err);
    m_seriesStart = std::max(Time(0), m_faultAt - before);
    m_seriesEnd = m_faultAt + after;
    return ok;
}

// The long flow: the first host to the last (another pod), and the port on its
// path that fails: the aggregation switch's, towards the core.
bool
TitaDodgeExperiment::BuildLongFlow(std::string* err)
{
    m_flow = std::make_unique<TitaLongFlow>(&m_net, 0, m_net.GetNHosts() - 1, m_cfg.cc);
    if (const int rc = m_flow->Connect(); rc != 0)
    {
        *err = "the long flow's QPs do not connect (" + std::to_string(rc) + ")";
        return false;
    }
    const uint16_t sport = m_flow->GetUdpSport();
    std::vector<uint16_t> ports;
    m_path = m_flow->Path(sport, &ports);
    if (m_path.size() != 7)
    {
        *err = "--topo=" + m_cfg.topo + ": the long flow must cross the core (host tor agg core agg tor host)";
        return false;
    }
    const auto& vs = m_net.GetTopology().Vertices();
    m_faultSwitch = m_net.GetSwitchOfVertex(m_path[2]);
    m_faultPort = ports[1];
    std::ostream& line = m_notes.Line();
    line << "long flow " << m_flow->GetSrc() << " -> " << m_flow->GetDst() << ", UDP source port " << sport << ", path";
    for (uint32_t v : m_path)
    {
        line << " " << vs[v].name;
    }
    line << "; the fault is on " << vs[m_path[2]].name << " port " << m_faultPort << " (to " << vs[m_path[3]].name
         << ")\n";
    return true;
}

// The collective, among other hosts spread over the ToRs (by a stride over the
// host indices between the long flow's two).
void
TitaDodgeExperiment::BuildCollective()
{
    m_mgr = CreateObject<TitaFlowManager>();
    m_mgr->SetAttribute("Cc", StringValue(m_cfg.cc));
    m_mgr->SetNetwork(&m_net);
    if (m_cfg.collective == "none" || m_cfg.ranks <= 1)
    {
        return;
    }
    const uint32_t nHosts = m_net.GetNHosts();
    const uint32_t stride = std::max<uint32_t>(1, (nHosts - 2) / m_cfg.ranks);
    for (uint32_t h = 1; h + 1 < nHosts && m_ranks.size() < m_cfg.ranks; h += stride)
    {
        m_ranks.push_back({h, -1, -1});
    }
    m_coll = m_cfg.collective == "allreduce"
                 ? TitaCollective::RingAllReduce(m_mgr, 0, m_ranks, m_cfg.collectiveBytes, m_collectiveAt)
                 : TitaCollective::AllToAll(m_mgr, 0, m_ranks, m_cfg.collectiveBytes, m_collectiveAt);
}

// The fault, and the control plane's reaction.
void
TitaDodgeExperiment::ScheduleFault()
{
    if (m_cfg.fault == "none")
    {
        return;
    }
    ::tita::fabric::FaultConfig f;
    f.drop_all = m_cfg.fault == "blackhole";
    f.drop_probability = m_cfg.fault == "loss" ? m_cfg.loss : 0;
    Simulator::Schedule(m_faultAt, &TitaSwitchNode::SetFault, m_faultSwitch, m_faultPort, f);
    Simulator::Schedule(m_faultAt + m_rerouteAfter, &TitaSwitchNode::SetPortUp, m_faultSwitch, m_faultPort, false);
}

uint64_t
TitaDodgeExperiment::CollectiveBytes() const
{
    uint64_t sum = 0;
    for (const auto& r : m_ranks)
    {
        eng::Engine& e = m_net.GetNic(r.host)->GetEngine();
        for (uint32_t q : e.qp_numbers())
        {
            sum += e.qp_counters(q)->rx_payload_bytes;
        }
    }
    return sum;
}

void
TitaDodgeExperiment::Sample()
{
    m_samples.push_back({Simulator::Now().GetNanoSeconds(), m_flow->GetDelivered(), m_coll ? CollectiveBytes() : 0});
    if (Simulator::Now() + m_sample <= m_seriesEnd)
    {
        Simulator::Schedule(m_sample, &TitaDodgeExperiment::Sample, this);
    }
}

void
TitaDodgeExperiment::Watch()
{
    const bool flowOver = m_flow->GetDone().IsPositive();
    const bool collOver = !m_coll || m_coll->IsDone() || m_mgr->GetFailed() > 0;
    if (flowOver && collOver && Simulator::Now() > m_seriesEnd)
    {
        Simulator::Stop();
        return;
    }
    Simulator::Schedule(MicroSeconds(200), &TitaDodgeExperiment::Watch, this);
}

void
TitaDodgeExperiment::Run()
{
    Simulator::Stop(m_stop);
    const auto wallStart = std::chrono::steady_clock::now();
    Simulator::Run();
    m_wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
}

TitaDodgeRecovery
TitaDodgeExperiment::Recovery(const std::vector<TitaDodgeSample>& s, Time faultAt, Time sample, bool noDip)
{
    TitaDodgeRecovery r;
    const int64_t faultNs = faultAt.GetNanoSeconds();
    uint32_t preN = 0;
    for (std::size_t i = 1; i < s.size(); ++i)
    {
        if (s[i].tNs <= faultNs)
        {
            r.preFaultGbps += Gbps(s[i - 1], s[i]);
            ++preN;
        }
    }
    r.preFaultGbps = preN ? r.preFaultGbps / preN : 0;
    uint32_t run = 0;
    for (std::size_t i = 1; i < s.size(); ++i)
    {
        if (s[i].tNs <= faultNs)
        {
            continue;
        }
        const double g = Gbps(s[i - 1], s[i]);
        if (r.dipNs < 0 && g < 0.5 * r.preFaultGbps)
        {
            r.dipNs = s[i].tNs;
        }
        if (r.dipNs >= 0 || noDip)
        {
            run = g >= 0.9 * r.preFaultGbps ? run + 1 : 0;
            if (run == 5 && r.recoverNs < 0)
            {
                r.recoverNs = s[i - 4].tNs - sample.GetNanoSeconds() - faultNs;
            }
        }
    }
    if (!s.empty() && s.back().tNs > faultNs)
    {
        auto it = std::find_if(s.begin(), s.end(), [faultNs](const TitaDodgeSample& x) { return x.tNs >= faultNs; });
        r.afterFaultGbps = Gbps(*it, s.back());
    }
    return r;
}

void
TitaDodgeExperiment::WriteSeries()
{
    std::ostream& series = m_out.File("series.csv", "t_ns,flow_bytes,flow_gbps,coll_bytes,coll_gbps\n");
    const auto& s = m_samples;
    for (std::size_t i = 0; i < s.size(); ++i)
    {
        const double dt = i ? static_cast<double>(s[i].tNs - s[i - 1].tNs) : 0;
        const double fg = i ? (s[i].flowBytes - s[i - 1].flowBytes) * 8.0 / dt : 0;
        const double cg = i ? (s[i].collBytes - s[i - 1].collBytes) * 8.0 / dt : 0;
        series << s[i].tNs << ',' << s[i].flowBytes << ',' << fg << ',' << s[i].collBytes << ',' << cg << '\n';
    }
}

void
TitaDodgeExperiment::Finish()
{
    WriteSeries();
    std::ostream& pc = m_out.File("path_changes.csv", "t_ns,host,qpn,reason,from,to,long_flow\n");
    int64_t detectNs = -1;
    uint32_t flowChanges = 0;
    uint32_t collChanges = 0;
    for (const auto& c : m_changes.Get())
    {
        const bool isLong = c.host == m_flow->GetSrc() && c.qpn == m_flow->GetSenderQpn();
        pc << c.at.GetNanoSeconds() << ',' << c.host << ',' << c.qpn << ','
           << eng::to_string(static_cast<eng::RepathReason>(c.reason)) << ',' << c.from << ',' << c.to << ','
           << isLong << '\n';
        if (isLong && flowChanges++ == 0)
        {
            detectNs = (c.at - m_faultAt).GetNanoSeconds();
        }
        collChanges += isLong ? 0 : 1;
    }
    const TitaDodgeRecovery r = Recovery(m_samples, m_faultAt, m_sample, m_cfg.fault == "loss");
    WriteSummary(r, detectNs, flowChanges, collChanges);
    m_out.Flush();
    const bool collDone = m_coll && m_coll->IsDone();
    char line[512];
    std::snprintf(line,
                  sizeof line,
                  "long flow %s at %.3f ms (%lu of %lu bytes), %u path changes, detection %.1f us, recovery %.1f us; "
                  "collective %s in %.3f ms, %u failed messages, %u path changes; %.1f s wall\n",
                  m_flow->GetStatus().empty() ? "unfinished" : m_flow->GetStatus().c_str(),
                  m_flow->GetDone().GetSeconds() * 1e3,
                  static_cast<unsigned long>(m_flow->GetDelivered()),
                  static_cast<unsigned long>(m_cfg.flowBytes),
                  flowChanges,
                  detectNs / 1e3,
                  r.recoverNs / 1e3,
                  collDone ? "done" : "not done",
                  collDone ? (m_coll->GetEnd() - m_coll->GetStart()).GetSeconds() * 1e3 : -1.0,
                  m_mgr->GetFailed(),
                  collChanges,
                  m_wallSeconds);
    m_notes.Line() << line;
}

void
TitaDodgeExperiment::WriteSummary(const TitaDodgeRecovery& r, int64_t detectNs, uint32_t flowChanges,
                                  uint32_t collChanges)
{
    const auto& vs = m_net.GetTopology().Vertices();
    const bool collDone = m_coll && m_coll->IsDone();
    const int64_t faultNs = m_faultAt.GetNanoSeconds();
    TitaSummaryJson js;
    js.Str("topo", m_cfg.topo)
        .Str("fault", m_cfg.fault)
        .Num("loss", m_cfg.loss)
        .Bool("dodge", m_cfg.dodge)
        .Str("recovery", m_cfg.recovery)
        .Str("cc", m_cfg.cc)
        .Num("fault_at_ns", faultNs)
        .Num("reroute_after_ns", m_rerouteAfter.GetNanoSeconds())
        .Str("fault_switch", vs[m_path[2]].name)
        .Num("fault_port", m_faultPort)
        .Num("flow_bytes", m_cfg.flowBytes)
        .Num("flow_delivered_bytes", m_flow->GetDelivered())
        .Num("flow_done_ns", m_flow->GetDone().GetNanoSeconds())
        .Str("flow_status", m_flow->GetStatus())
        .Bool("flow_ok", m_flow->IsOk())
        .Num("flow_path_changes", flowChanges)
        .Num("detect_ns", detectNs)
        .Num("dip_ns", r.dipNs < 0 ? -1 : r.dipNs - faultNs)
        .Num("recover_ns", r.recoverNs)
        .Num("pre_fault_gbps", r.preFaultGbps)
        .Num("after_fault_gbps", r.afterFaultGbps)
        .Str("collective", m_cfg.collective)
        .Num("collective_ranks", m_ranks.size())
        .Bool("collective_done", collDone)
        .Num("collective_ns", collDone ? (m_coll->GetEnd() - m_coll->GetStart()).GetNanoSeconds() : -1)
        .Num("collective_failed_messages", m_mgr->GetFailed())
        .Num("collective_path_changes", collChanges)
        .Num("sim_end_ns", Simulator::Now().GetNanoSeconds())
        .Num("wall_seconds", m_wallSeconds);
    m_out.File("summary.json") << js.Text();
}

} // namespace ns3
