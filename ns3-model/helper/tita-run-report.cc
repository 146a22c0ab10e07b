#include "tita-run-report.h"

#include "tita/fabric/types.h"

#include "ns3/simulator.h"

#include <sys/resource.h>

#include <tuple>

namespace ns3
{

TitaRunReport::TitaRunReport(const TitaNetworkHelper* net, Ptr<TitaFlowManager> mgr, TitaOutputWriter* out)
    : m_net(net),
      m_mgr(mgr),
      m_out(out)
{
}

uint64_t
TitaRunReport::PeakRssKb()
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<uint64_t>(ru.ru_maxrss);
}

void
TitaRunReport::WriteTables(const TitaRunRecorder& rec,
                           const std::vector<std::shared_ptr<TitaCollective>>& collectives)
{
    WriteQueueHistograms(rec);
    WriteLinks();
    WriteCollectives(collectives);
}

void
TitaRunReport::WriteQueueHistograms(const TitaRunRecorder& rec)
{
    std::ostream& q = m_out->File("qlen_hist.csv", "node,port,rate_bps,kb,samples\n");
    const auto& qhist = rec.GetQueueHistograms();
    for (std::size_t s = 0; s < qhist.size(); ++s)
    {
        const auto& sw = m_net->GetSwitches()[s];
        for (uint16_t p = 0; p < qhist[s].size(); ++p)
        {
            for (std::size_t kb = 0; kb < qhist[s][p].size(); ++kb)
            {
                if (qhist[s][p][kb] > 0)
                {
                    q << sw->GetId() << ',' << p << ',' << sw->GetPort(p)->GetDataRate().GetBitRate() << ',' << kb
                      << ',' << qhist[s][p][kb] << '\n';
                }
            }
        }
    }
}

// One row per link direction; from_tier/to_tier: a switch's tier (1 ToR, 2
// aggregation, 3 core or spine, 0 NVSwitch), -1 for a host.
void
TitaRunReport::WriteLinks()
{
    std::ostream& u = m_out->File("links.csv",
                                  "link,from_node,to_node,rate_bps,tx_bytes,utilization,pfc_pauses_rx,"
                                  "max_qlen_bytes,drops,from_tier,to_tier\n");
    const TitaTopology& topo = m_net->GetTopology();
    const uint64_t endNs = static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
    auto tier = [&topo](uint32_t v) {
        const auto& vx = topo.Vertices()[v];
        return vx.kind == TitaTopology::Kind::kSwitch ? vx.tier : -1;
    };
    for (uint32_t l = 0; l < topo.Links().size(); ++l)
    {
        auto [a, b] = m_net->GetLinkDevices(l);
        const int32_t ta = tier(topo.Links()[l].a);
        const int32_t tb = tier(topo.Links()[l].b);
        for (auto [x, y, tx, ty] : {std::tuple{a, b, ta, tb}, std::tuple{b, a, tb, ta}})
        {
            uint64_t maxq = 0;
            uint64_t drops = 0;
            if (auto sd = DynamicCast<TitaSwitchNetDevice>(x))
            {
                auto sw = DynamicCast<TitaSwitchNode>(sd->GetNode());
                maxq = sw->GetCore().counters(sd->GetPort()).max_qlen_bytes;
                drops = sw->GetCore().counters(sd->GetPort()).dropped();
            }
            const double util =
                endNs ? x->GetTxWireBytes() * 8.0 / (x->GetDataRate().GetBitRate() * (endNs * 1e-9)) : 0;
            u << l << ',' << x->GetNode()->GetId() << ',' << y->GetNode()->GetId() << ','
              << x->GetDataRate().GetBitRate() << ',' << x->GetTxWireBytes() << ',' << util << ','
              << x->GetPfcPausesReceived() << ',' << maxq << ',' << drops << ',' << tx << ',' << ty << '\n';
        }
    }
}

void
TitaRunReport::WriteCollectives(const std::vector<std::shared_ptr<TitaCollective>>& collectives)
{
    std::ostream& st =
        m_out->File("steps.csv", "collective,kind,ranks,step,start_ns,end_ns,duration_ns,messages,bytes\n");
    std::ostream& co =
        m_out->File("collectives.csv", "collective,kind,ranks,bytes,start_ns,end_ns,duration_ns,done,ideal_ns\n");
    for (const auto& c : collectives)
    {
        co << c->GetId() << ',' << c->GetKind() << ',' << c->GetRanks() << ',' << c->GetBytes() << ','
           << c->GetStart().GetNanoSeconds() << ',' << c->GetEnd().GetNanoSeconds() << ','
           << (c->GetEnd() - c->GetStart()).GetNanoSeconds() << ',' << c->IsDone() << ',' << c->IdealNs() << '\n';
        for (const auto& s : c->GetSteps())
        {
            st << c->GetId() << ',' << c->GetKind() << ',' << c->GetRanks() << ',' << s.step << ','
               << s.start.GetNanoSeconds() << ',' << s.end.GetNanoSeconds() << ',' << (s.end - s.start).GetNanoSeconds()
               << ',' << s.messages << ',' << s.bytes << '\n';
        }
    }
}

TitaRunTotals
TitaRunReport::GetTotals() const
{
    TitaRunTotals t;
    for (const auto& sw : m_net->GetSwitches())
    {
        t.pfcPausesSent += sw->GetPfcPausesSent();
        t.switchDrops += sw->GetDrops();
    }
    for (uint32_t h = 0; h < m_net->GetNHosts(); ++h)
    {
        t.nicDrops += m_net->GetNic(h)->GetEngineDrops();
        const auto& c = m_net->GetNic(h)->GetEngine().counters();
        t.acksCoalesced += c.control_coalesced;
        uint64_t parse = 0;
        for (uint64_t n : c.rx_parse_errors)
        {
            parse += n;
        }
        for (auto [name, n] : {std::pair<const char*, uint64_t>{"parse_error", parse},
                               {"not_for_us", c.rx_not_for_us},
                               {"wrong_source", c.rx_wrong_source},
                               {"unknown_qp", c.rx_unknown_qp},
                               {"bad_pkey", c.rx_bad_pkey},
                               {"qp_not_ready", c.rx_qp_not_ready},
                               {"control_ring_full", c.control_ring_full},
                               {"ooo_pool_full", c.ooo_pool_full}})
        {
            t.nicDropsByReason[name] += n;
        }
    }
    return t;
}

void
TitaRunReport::WriteSummary(TitaSummaryJson js,
                            const TitaRunRecorder& rec,
                            const TitaRunTotals& totals,
                            const TitaRunTimes& times)
{
    std::vector<std::pair<std::string, uint64_t>> switchDrops;
    const auto& byReason = rec.GetDropsByReason();
    for (size_t r = 0; r < byReason.size(); ++r)
    {
        if (byReason[r] > 0)
        {
            const auto reason = static_cast<::tita::fabric::DropReason>(r);
            switchDrops.emplace_back(::tita::fabric::to_string(reason), byReason[r]);
        }
    }
    std::vector<std::pair<std::string, uint64_t>> nicDrops;
    for (const auto& [name, n] : totals.nicDropsByReason)
    {
        if (n > 0)
        {
            nicDrops.emplace_back(name, n);
        }
    }
    const double wall = times.runWallSeconds;
    js.Num("hosts", m_net->GetNHosts())
        .Num("switches", m_net->GetSwitches().size())
        .Num("int_off_switches", m_net->GetIntOffCount())
        .Num("max_base_rtt_ns", m_net->GetMaxBaseRttNs())
        .Num("flows_started", m_mgr->GetStarted())
        .Num("flows_finished", m_mgr->GetFinished())
        .Num("flows_failed", m_mgr->GetFailed())
        .Num("qp_timeouts", m_mgr->GetTimeouts())
        .Num("retransmitted_packets", m_mgr->GetRetransmittedPackets())
        .Num("out_of_order_received", m_mgr->GetOutOfOrderPackets())
        .Num("ooo_buffered", m_mgr->GetOutOfOrderBuffered())
        .Num("pfc_pauses_sent", totals.pfcPausesSent)
        .Num("switch_drops", totals.switchDrops)
        .Counts("switch_drops_by_reason", switchDrops)
        .Num("nic_drops", totals.nicDrops)
        .Counts("nic_drops_by_reason", nicDrops)
        .Num("acks_coalesced", totals.acksCoalesced)
        .Num("sim_seconds", times.simSeconds)
        .Num("events", times.events)
        .Num("run_wall_seconds", wall)
        .Num("total_wall_seconds", times.totalWallSeconds)
        .Num("events_per_second", wall > 0 ? times.events / wall : 0)
        .Num("sim_ms_per_wall_second", wall > 0 ? times.simSeconds * 1e3 / wall : 0)
        .Num("peak_rss_kb", PeakRssKb());
    m_out->File("summary.json") << js.Text();
}

} // namespace ns3
