#include "tita-metrics-sampler.h"

#include "tita/fabric/types.h"

#include "ns3/simulator.h"

namespace ns3
{

TitaMetricsSampler::TitaMetricsSampler(const TitaNetworkHelper* net, Ptr<TitaFlowManager> mgr, std::ostream* out)
    : m_net(net),
      m_mgr(mgr),
      m_out(out)
{
    for (uint32_t v = 0; v < net->GetTopology().Vertices().size(); ++v)
    {
        if (const auto sw = net->GetSwitchOfVertex(v))
        {
            m_switchVertex[sw->GetId()] = v;
        }
    }
}

void
TitaMetricsSampler::Start(Time interval)
{
    m_interval = interval;
    Simulator::Schedule(m_interval, &TitaMetricsSampler::Sample, this);
}

void
TitaMetricsSampler::Sample()
{
    *m_out << "{\"t_ns\":" << Simulator::Now().GetNanoSeconds() << ",\"qps\":[";
    bool first = true;
    for (const auto& a : m_mgr->GetActiveFlows())
    {
        first &= !Qp(a.rec->src, a.srcQpn, first);
        first &= !Qp(a.rec->dst, a.dstQpn, first);
    }
    *m_out << "],\"ports\":[";
    Ports();
    *m_out << "]}\n";
    Simulator::Schedule(m_interval, &TitaMetricsSampler::Sample, this);
}

bool
TitaMetricsSampler::Qp(uint32_t host, uint32_t qpn, bool first)
{
    const auto& eng = m_net->GetNic(host)->GetEngine();
    ::tita::engine::QpInfo info;
    const auto* c = eng.qp_counters(qpn);
    if (c == nullptr || eng.qp_info(qpn, &info) != 0)
    {
        return false;
    }
    std::ostream& o = *m_out;
    o << (first ? "" : ",") << "{\"engine\":\"host" << host << "\",\"qpn\":" << qpn << ",\"state\":\""
      << ::tita::engine::to_string(info.state) << "\",\"cc\":\"" << info.cc << '"';
    ::tita::engine::for_each_qp_value(info, *c, [&o](const char* k, uint64_t v) { o << ",\"" << k << "\":" << v; });
    o << '}';
    return true;
}

void
TitaMetricsSampler::Ports()
{
    std::ostream& o = *m_out;
    bool first = true;
    for (const auto& sw : m_net->GetSwitches())
    {
        for (uint16_t p = 0; p < sw->GetNPorts(); ++p)
        {
            const ::tita::fabric::PortCounters& c = sw->GetCore().counters(p);
            if (c.rx_packets + c.tx_packets == 0)
            {
                continue;
            }
            o << (first ? "" : ",") << "{\"switch\":\"switch" << m_switchVertex[sw->GetId()] << "\",\"name\":\"p"
              << p << "\",\"rate_mbps\":" << sw->GetPort(p)->GetDataRate().GetBitRate() / 1'000'000;
            auto put = [&o](const char* k, uint64_t v) { o << ",\"" << k << "\":" << v; };
            ::tita::fabric::for_each_port_counter(c, put);
            ::tita::fabric::for_each_drop_counter(c, put);
            o << ",\"queues\":{";
            for (int q = 0; q < ::tita::fabric::kPriorities; ++q)
            {
                o << (q ? "," : "") << "\"priority_" << q << "\":{";
                bool firstKey = true;
                ::tita::fabric::for_each_queue_counter(c, q, [&](const char* k, uint64_t v) {
                    o << (firstKey ? "" : ",") << '"' << k << "\":" << v;
                    firstKey = false;
                });
                o << '}';
            }
            o << "}}";
            first = false;
        }
    }
}

} // namespace ns3
