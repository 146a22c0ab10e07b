#include "tita-net-device.h"

#include "tita-channel.h"
#include "tita-frame.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaNetDevice");
NS_OBJECT_ENSURE_REGISTERED(TitaNetDevice);

TypeId
TitaNetDevice::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::TitaNetDevice")
            .SetParent<NetDevice>()
            .SetGroupName("Tita")
            .AddAttribute("DataRate",
                          "Line rate of the port",
                          DataRateValue(DataRate("100Gbps")),
                          MakeDataRateAccessor(&TitaNetDevice::m_bps),
                          MakeDataRateChecker())
            .AddAttribute("Mtu",
                          "Largest frame payload (bytes), for NetDevice::GetMtu",
                          UintegerValue(9000),
                          MakeUintegerAccessor(&TitaNetDevice::SetMtu, &TitaNetDevice::GetMtu),
                          MakeUintegerChecker<uint16_t>())
            .AddTraceSource("PhyTxBegin",
                            "A frame starts leaving on the wire",
                            MakeTraceSourceAccessor(&TitaNetDevice::m_phyTxBeginTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PhyRxEnd",
                            "A frame has arrived (last bit)",
                            MakeTraceSourceAccessor(&TitaNetDevice::m_phyRxEndTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("Sniffer",
                            "Every frame sent or received (for pcap)",
                            MakeTraceSourceAccessor(&TitaNetDevice::m_snifferTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PromiscSniffer",
                            "Every frame sent or received (for pcap)",
                            MakeTraceSourceAccessor(&TitaNetDevice::m_promiscSnifferTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PfcRx",
                            "A PFC frame arrived: priority, quanta (0 = resume)",
                            MakeTraceSourceAccessor(&TitaNetDevice::m_pfcRxTrace),
                            "ns3::TitaNetDevice::PfcTracedCallback")
            .AddTraceSource("PfcTx",
                            "A PFC frame was sent: priority, quanta (0 = resume)",
                            MakeTraceSourceAccessor(&TitaNetDevice::m_pfcTxTrace),
                            "ns3::TitaNetDevice::PfcTracedCallback");
    return tid;
}

TitaNetDevice::TitaNetDevice() = default;
TitaNetDevice::~TitaNetDevice() = default;

void
TitaNetDevice::DoDispose()
{
    for (auto& e : m_resumeEvent)
    {
        e.Cancel();
    }
    m_control.clear();
    m_node = nullptr;
    m_channel = nullptr;
    NetDevice::DoDispose();
}

bool
TitaNetDevice::Attach(Ptr<TitaChannel> channel)
{
    m_channel = channel;
    channel->Attach(this);
    m_linkChangeCallbacks();
    return true;
}

Ptr<TitaNetDevice>
TitaNetDevice::GetPeer() const
{
    return m_channel ? m_channel->GetPeer(this) : nullptr;
}

Time
TitaNetDevice::WireTime(uint32_t bytes) const
{
    const uint64_t bits = uint64_t{bytes + TitaFrame::kWireOverheadBytes} * 8;
    // Picoseconds, rounded up: a frame never takes less than its bits.
    const uint64_t ps = (bits * 1'000'000'000'000ULL + m_bps.GetBitRate() - 1) / m_bps.GetBitRate();
    return PicoSeconds(ps);
}

bool
TitaNetDevice::IsPaused(uint8_t priority) const
{
    return m_pausedUntil[priority] > Simulator::Now();
}

bool
TitaNetDevice::IsTransmitting() const
{
    return m_busyUntil > Simulator::Now();
}

void
TitaNetDevice::TryTransmit()
{
    if (!m_channel || m_completionPending)
    {
        return;
    }
    const Time now = Simulator::Now();
    if (m_busyUntil > now)
    {
        // Something to send behind a frame still on the wire: come back when it is out.
        m_completionPending = true;
        Simulator::Schedule(m_busyUntil - now, &TitaNetDevice::TransmitComplete, this);
        return;
    }
    Ptr<Packet> p;
    if (!m_control.empty())
    {
        p = m_control.front();
        m_control.pop_front();
    }
    else
    {
        p = DequeueNext();
    }
    if (!p)
    {
        return;
    }
    const Time txTime = WireTime(p->GetSize());
    m_busyUntil = now + txTime;
    m_txWireBytes += p->GetSize() + TitaFrame::kWireOverheadBytes;
    m_phyTxBeginTrace(p);
    m_snifferTrace(p);
    m_promiscSnifferTrace(p);
    // An event when the wire frees only if frames wait: a frame leaving an empty
    // queue costs one event per link (its arrival), not two.
    if (!m_control.empty() || HasMoreToSend())
    {
        m_completionPending = true;
        Simulator::Schedule(txTime, &TitaNetDevice::TransmitComplete, this);
    }
    m_channel->Transmit(p, this, txTime);
}

void
TitaNetDevice::TransmitComplete()
{
    m_completionPending = false;
    OnTransmitComplete();
    TryTransmit();
}

void
TitaNetDevice::OnTransmitComplete()
{
}

void
TitaNetDevice::OnResume(uint8_t)
{
}

void
TitaNetDevice::Receive(Ptr<Packet> p)
{
    m_phyRxEndTrace(p);
    m_snifferTrace(p);
    m_promiscSnifferTrace(p);
    if (m_pfcInDevice && TitaFrame::PeekEthertype(p) == 0x8808)
    {
        HandlePfc(p);
        return;
    }
    DoReceive(p);
}

void
TitaNetDevice::HandlePfc(Ptr<Packet> p)
{
    uint8_t enable = 0;
    uint16_t quanta[8];
    if (!TitaFrame::ParsePfcPacket(p, &enable, quanta))
    {
        NS_LOG_WARN("MAC control frame that is not PFC ignored");
        return;
    }
    const Time now = Simulator::Now();
    for (uint8_t prio = 0; prio < kPriorities; ++prio)
    {
        if (!(enable >> prio & 1))
        {
            continue;
        }
        m_pfcRxTrace(prio, quanta[prio]);
        m_resumeEvent[prio].Cancel();
        if (quanta[prio] == 0)
        {
            NS_LOG_LOGIC("XON priority " << +prio);
            m_pausedUntil[prio] = now;
            Resume(prio);
            continue;
        }
        ++m_pfcPausesRx;
        // One quantum is 512 bit times at this port's speed.
        const uint64_t ps = uint64_t{quanta[prio]} * 512 * 1'000'000'000'000ULL / m_bps.GetBitRate();
        m_pausedUntil[prio] = now + PicoSeconds(ps);
        NS_LOG_LOGIC("XOFF priority " << +prio << " until " << m_pausedUntil[prio]);
        m_resumeEvent[prio] = Simulator::Schedule(PicoSeconds(ps), &TitaNetDevice::Resume, this, prio);
    }
}

void
TitaNetDevice::Resume(uint8_t priority)
{
    OnResume(priority);
    TryTransmit();
}

void
TitaNetDevice::SendPfc(uint8_t priority, uint16_t quanta)
{
    uint16_t q[8] = {};
    q[priority] = quanta;
    if (quanta > 0)
    {
        ++m_pfcPausesTx;
    }
    m_pfcTxTrace(priority, quanta);
    SendControlFrame(TitaFrame::MakePfcPacket(m_address, static_cast<uint8_t>(1u << priority), q));
}

void
TitaNetDevice::SendControlFrame(Ptr<Packet> p)
{
    m_control.push_back(p);
    TryTransmit();
}

// ---------------------------------------------------------------- NetDevice

void
TitaNetDevice::SetIfIndex(const uint32_t index)
{
    m_ifIndex = index;
}

uint32_t
TitaNetDevice::GetIfIndex() const
{
    return m_ifIndex;
}

Ptr<Channel>
TitaNetDevice::GetChannel() const
{
    return m_channel;
}

void
TitaNetDevice::SetAddress(Address address)
{
    m_address = Mac48Address::ConvertFrom(address);
}

Address
TitaNetDevice::GetAddress() const
{
    return m_address;
}

bool
TitaNetDevice::SetMtu(const uint16_t mtu)
{
    m_mtu = mtu;
    return true;
}

uint16_t
TitaNetDevice::GetMtu() const
{
    return m_mtu;
}

bool
TitaNetDevice::IsLinkUp() const
{
    return m_channel && m_channel->IsLinkUp();
}

void
TitaNetDevice::AddLinkChangeCallback(Callback<void> callback)
{
    m_linkChangeCallbacks.ConnectWithoutContext(callback);
}

bool
TitaNetDevice::IsBroadcast() const
{
    return false;
}

Address
TitaNetDevice::GetBroadcast() const
{
    return Mac48Address::GetBroadcast();
}

bool
TitaNetDevice::IsMulticast() const
{
    return false;
}

Address
TitaNetDevice::GetMulticast(Ipv4Address) const
{
    return Mac48Address::GetMulticastPrefix();
}

Address
TitaNetDevice::GetMulticast(Ipv6Address) const
{
    return Mac48Address::GetMulticastPrefix();
}

bool
TitaNetDevice::IsBridge() const
{
    return false;
}

bool
TitaNetDevice::IsPointToPoint() const
{
    return true;
}

bool
TitaNetDevice::Send(Ptr<Packet>, const Address&, uint16_t)
{
    // Frames come from the RDMA engine or the switch data plane, not from an IP stack.
    return false;
}

bool
TitaNetDevice::SendFrom(Ptr<Packet>, const Address&, const Address&, uint16_t)
{
    return false;
}

Ptr<Node>
TitaNetDevice::GetNode() const
{
    return m_node;
}

void
TitaNetDevice::SetNode(Ptr<Node> node)
{
    m_node = node;
}

bool
TitaNetDevice::NeedsArp() const
{
    return false;
}

void
TitaNetDevice::SetReceiveCallback(NetDevice::ReceiveCallback)
{
}

void
TitaNetDevice::SetPromiscReceiveCallback(PromiscReceiveCallback)
{
}

bool
TitaNetDevice::SupportsSendFrom() const
{
    return false;
}

} // namespace ns3
