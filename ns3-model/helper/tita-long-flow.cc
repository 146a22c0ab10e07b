#include "tita-long-flow.h"

#include "ns3/simulator.h"

namespace ns3
{

namespace eng = ::tita::engine;

TitaLongFlow::TitaLongFlow(TitaNetworkHelper* net, uint32_t src, uint32_t dst, std::string cc)
    : m_net(net),
      m_src(src),
      m_dst(dst),
      m_cc(std::move(cc)),
      m_a(net->GetNic(src)),
      m_b(net->GetNic(dst))
{
}

int
TitaLongFlow::Connect()
{
    m_qa = m_a->CreateQp();
    m_qb = m_b->CreateQp();
    if (const int rc = m_a->ConnectQp(m_qa, m_b, m_qb); rc != 0)
    {
        return rc;
    }
    if (const int rc = m_b->ConnectQp(m_qb, m_a, m_qa); rc != 0)
    {
        return rc;
    }
    m_a->SetCc(m_qa, m_cc, {});
    m_b->SetCc(m_qb, m_cc, {});
    return 0;
}

int
TitaLongFlow::Write(uint32_t bytes)
{
    m_a->SetCompletionCallback(MakeCallback(&TitaLongFlow::Completed, this));
    return m_a->PostWrite(m_qa, 1, bytes, false, m_b);
}

void
TitaLongFlow::Completed(Ptr<RdmaNicNetDevice>, const eng::WorkCompletion& wc)
{
    m_done = Simulator::Now();
    m_ok = wc.status == eng::WcStatus::kSuccess;
    m_status = std::string(eng::to_string(wc.status));
}

std::vector<uint32_t>
TitaLongFlow::Path(uint16_t udpSport, std::vector<uint16_t>* ports) const
{
    return m_net->TracePath(m_src, m_dst, udpSport, 0, ports);
}

uint16_t
TitaLongFlow::GetUdpSport() const
{
    eng::QpInfo info;
    m_a->GetEngine().qp_info(m_qa, &info);
    return info.udp_sport;
}

uint64_t
TitaLongFlow::GetDelivered() const
{
    return m_b->GetEngine().qp_counters(m_qb)->rx_payload_bytes;
}

void
TitaPathChangeLog::Watch(Ptr<RdmaNicNetDevice> nic, uint32_t host)
{
    m_hosts.push_back(std::make_unique<Host>(Host{this, host}));
    nic->TraceConnectWithoutContext(
        "PathChange",
        MakeBoundCallback(
            +[](Host* h, uint32_t qpn, uint8_t reason, uint16_t from, uint16_t to) {
                h->log->m_changes.push_back({Simulator::Now(), h->host, qpn, reason, from, to});
            },
            m_hosts.back().get()));
}

void
TitaPathChangeLog::WatchAll(const TitaNetworkHelper& net)
{
    for (uint32_t h = 0; h < net.GetNHosts(); ++h)
    {
        Watch(net.GetNic(h), h);
    }
}

std::vector<TitaPathChangeLog::Change>
TitaPathChangeLog::Of(uint32_t host, uint32_t qpn) const
{
    std::vector<Change> out;
    for (const Change& c : m_changes)
    {
        if (c.host == host && c.qpn == qpn)
        {
            out.push_back(c);
        }
    }
    return out;
}

} // namespace ns3
