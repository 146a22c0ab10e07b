#include "tita-run-recorder.h"

#include "tita-simulator-impl.h"

#include "tita/fabric/types.h"

#include "ns3/simulator.h"

namespace ns3
{

TitaRunRecorder::TitaRunRecorder(TitaNetworkHelper* net, Ptr<TitaFlowManager> mgr, TitaOutputWriter* out)
    : m_net(net),
      m_mgr(mgr),
      m_out(out)
{
}

void
TitaRunRecorder::Connect()
{
    std::ostream& fct = m_out->File(
        "fct.csv", "id,src,dst,bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,hops,ok,group,step,reordered\n");
    m_mgr->TraceConnectWithoutContext(
        "FlowComplete",
        MakeBoundCallback(
            +[](std::ostream* out, const TitaFlowRecord& r) {
                *out << r.id << ',' << r.src << ',' << r.dst << ',' << r.bytes << ',' << r.start.GetNanoSeconds()
                     << ',' << r.end.GetNanoSeconds() << ',' << (r.end - r.start).GetNanoSeconds() << ','
                     << r.idealNs << ',' << r.Slowdown() << ',' << r.hops << ',' << (r.ok ? 1 : 0) << ','
                     << r.group << ',' << r.step << ',' << r.reordered << '\n';
            },
            &fct));
    m_dropsByReason.assign(static_cast<size_t>(::tita::fabric::DropReason::kCount), 0);
    for (const auto& sw : m_net->GetSwitches())
    {
        for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
        {
            sw->GetPort(p)->TraceConnectWithoutContext(
                "Drop",
                MakeBoundCallback(
                    +[](std::vector<uint64_t>* n, uint8_t, uint8_t reason, uint32_t) {
                        // Counted in the serial phase of a parallel run (shared by every switch).
                        TitaSimulatorImpl::Defer([n, reason] {
                            if (reason < n->size())
                            {
                                ++(*n)[reason];
                            }
                        });
                    },
                    &m_dropsByReason));
        }
    }
    std::ostream& pfc = m_out->File("pfc.csv", "time_ns,node,port,priority,pause,sent\n");
    for (const auto& sw : m_net->GetSwitches())
    {
        for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
        {
            m_pfcPorts.push_back({&pfc, sw->GetId(), p});
            sw->GetPort(p)->TraceConnectWithoutContext(
                "Pfc",
                MakeBoundCallback(
                    +[](PfcPort* c, uint8_t prio, bool pause, bool sent) {
                        // Written in the serial phase of a parallel run, in (time, LP) order.
                        const int64_t ns = Simulator::Now().GetNanoSeconds();
                        TitaSimulatorImpl::Defer([c, prio, pause, sent, ns] {
                            *c->out << ns << ',' << c->node << ',' << c->port << ',' << +prio << ','
                                    << (pause ? 1 : 0) << ',' << (sent ? 1 : 0) << '\n';
                        });
                    },
                    &m_pfcPorts.back()));
        }
    }
}

void
TitaRunRecorder::SampleQueues(Time interval)
{
    m_qhist.resize(m_net->GetSwitches().size());
    m_qlenInterval = interval;
    Simulator::Schedule(m_qlenInterval, &TitaRunRecorder::QueueSample, this);
}

void
TitaRunRecorder::QueueSample()
{
    for (std::size_t s = 0; s < m_net->GetSwitches().size(); ++s)
    {
        const auto& sw = m_net->GetSwitches()[s];
        auto& h = m_qhist[s];
        h.resize(sw->GetNPorts());
        for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
        {
            const uint64_t kb = sw->GetCore().qlen_bytes(p) / 1000;
            if (h[p].size() <= kb)
            {
                h[p].resize(kb + 1);
            }
            ++h[p][kb];
        }
    }
    Simulator::Schedule(m_qlenInterval, &TitaRunRecorder::QueueSample, this);
}

void
TitaRunRecorder::SampleSeries(Time interval)
{
    m_seriesInterval = interval;
    m_lastTx.resize(m_net->GetSwitches().size());
    for (uint32_t l = 0; l < m_net->GetTopology().Links().size(); ++l)
    {
        auto [a, b] = m_net->GetLinkDevices(l);
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
        {
            if (auto sd = DynamicCast<TitaSwitchNetDevice>(x))
            {
                m_peerOf[uint64_t{x->GetNode()->GetId()} << 16 | sd->GetPort()] = y->GetNode()->GetId();
            }
        }
    }
    m_flowSeries =
        &m_out->File("flow_series.csv", "t_ns,flow,src,dst,delivered_bytes,goodput_bps,rate_bps,cwnd_bytes\n");
    m_qlenSeries = &m_out->File("qlen_series.csv", "t_ns,node,port,qlen_bytes\n");
    m_portSeries = &m_out->File("port_series.csv", "t_ns,node,port,peer,tx_bytes,utilization\n");
    Simulator::Schedule(m_seriesInterval, &TitaRunRecorder::SeriesSample, this);
}

void
TitaRunRecorder::SeriesSample()
{
    const uint64_t t = Simulator::Now().GetNanoSeconds();
    FlowSeriesRows(t);
    for (const auto& sw : m_net->GetSwitches())
    {
        for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
        {
            if (const uint64_t q = sw->GetCore().qlen_bytes(p); q > 0)
            {
                *m_qlenSeries << t << ',' << sw->GetId() << ',' << p << ',' << q << '\n';
            }
        }
    }
    PortSeriesRows(t);
    Simulator::Schedule(m_seriesInterval, &TitaRunRecorder::SeriesSample, this);
}

// Per active flow: the bytes its receiver executed in order, and the sender's
// congestion control output.
void
TitaRunRecorder::FlowSeriesRows(uint64_t t)
{
    for (const auto& a : m_mgr->GetActiveFlows())
    {
        const auto* rx = m_net->GetNic(a.rec->dst)->GetEngine().qp_counters(a.dstQpn);
        ::tita::engine::QpInfo info;
        if (rx == nullptr || m_net->GetNic(a.rec->src)->GetEngine().qp_info(a.srcQpn, &info) != 0)
        {
            continue;
        }
        uint64_t& last = m_lastDelivered[a.rec->id];
        const double gbps = (rx->rx_payload_bytes - last) * 8.0 / m_seriesInterval.GetSeconds();
        last = rx->rx_payload_bytes;
        *m_flowSeries << t << ',' << a.rec->id << ',' << a.rec->src << ',' << a.rec->dst << ','
                      << rx->rx_payload_bytes << ',' << static_cast<uint64_t>(gbps) << ',' << info.rate_bps << ','
                      << (info.cwnd_bytes == UINT64_MAX ? 0 : info.cwnd_bytes) << '\n';
    }
}

// Per switch port that sent in the interval: its wire bytes and utilisation.
void
TitaRunRecorder::PortSeriesRows(uint64_t t)
{
    for (std::size_t s = 0; s < m_net->GetSwitches().size(); ++s)
    {
        const auto& sw = m_net->GetSwitches()[s];
        m_lastTx[s].resize(sw->GetNPorts());
        for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
        {
            const Ptr<TitaNetDevice> d = sw->GetPort(p);
            const uint64_t tx = d->GetTxWireBytes();
            if (tx == m_lastTx[s][p])
            {
                continue;
            }
            const double util =
                (tx - m_lastTx[s][p]) * 8.0 / (d->GetDataRate().GetBitRate() * m_seriesInterval.GetSeconds());
            m_lastTx[s][p] = tx;
            *m_portSeries << t << ',' << sw->GetId() << ',' << p << ','
                          << m_peerOf[uint64_t{sw->GetId()} << 16 | p] << ',' << tx << ',' << util << '\n';
        }
    }
}

} // namespace ns3
