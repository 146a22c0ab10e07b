#include "tita-net-device.h"

#include "tita-channel.h"
#include "tita-frame.h"
#include "tita-trace.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"
#include "tita/fabric/pfc.h"

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
                          MakeDataRateAccessor(&TitaNetDevice::SetDataRate, &TitaNetDevice::GetDataRate),
                          MakeDataRateChecker())
            .AddAttribute("Mtu",
                          "Largest frame payload (bytes), for NetDevice::GetMtu",
                          UintegerValue(9000),
                          MakeUintegerAccessor(&TitaNetDevice::SetMtu, &TitaNetDevice::GetMtu),
                          MakeUintegerChecker<uint16_t>())
            .AddTraceSource("PhyTxBegin",
                            "A frame starts leaving on the wire",
                            MakeNotifyingTraceSourceAccessor(&TitaNetDevice::m_phyTxBeginTrace, &TitaNetDevice::OnPacketTraceConnected),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PhyRxEnd",
                            "A frame has arrived (last bit)",
                            MakeNotifyingTraceSourceAccessor(&TitaNetDevice::m_phyRxEndTrace, &TitaNetDevice::OnPacketTraceConnected),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("Sniffer",
                            "Every frame sent or received (for pcap)",
                            MakeNotifyingTraceSourceAccessor(&TitaNetDevice::m_snifferTrace, &TitaNetDevice::OnPacketTraceConnected),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PromiscSniffer",
                            "Every frame sent or received (for pcap)",
                            MakeNotifyingTraceSourceAccessor(&TitaNetDevice::m_promiscSnifferTrace, &TitaNetDevice::OnPacketTraceConnected),
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

TitaNetDevice::TitaNetDevice()
    : m_txCompleteEvent(Create<TitaEvent<TitaNetDevice, &TitaNetDevice::TransmitComplete>>(this))
{
}

TitaNetDevice::~TitaNetDevice() = default;

void
TitaNetDevice::DoDispose()
{
    for (auto& e : m_resumeEvent)
    {
        e.Cancel();
    }
    m_txCompleteEvent->Detach();
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
    if (bytes == m_wireTimeBytes)
    {
        return m_wireTime;
    }
    const uint64_t bits = uint64_t{bytes + TitaFrame::kWireOverheadBytes} * 8;
    // Picoseconds, rounded up: a frame never takes less than its bits.
    const uint64_t ps = (bits * 1'000'000'000'000ULL + m_bitRate - 1) / m_bitRate;
    m_wireTimeBytes = bytes;
    m_wireTime = PicoSeconds(ps);
    return m_wireTime;
}

bool
TitaNetDevice::IsPaused(uint8_t priority) const
{
    return m_pause.paused(priority, TitaSimulatorImpl::NowTime().GetTimeStep());
}

bool
TitaNetDevice::IsTransmitting() const
{
    return m_busyUntil > TitaSimulatorImpl::NowTime();
}

void
TitaNetDevice::TryTransmit()
{
    if (!m_channel || m_completionPending)
    {
        return;
    }
    const Time now = TitaSimulatorImpl::NowTime();
    if (m_busyUntil > now)
    {
        // Something to send behind a frame still on the wire: come back when it is out.
        m_completionPending = true;
        m_txCompleteEvent->Schedule(m_busyUntil - now);
        return;
    }
    TitaPacketPtr p;
    if (!m_control.empty())
    {
        p = std::move(m_control.front());
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
    const uint32_t size = p->GetSize();
    const Time txTime = WireTime(size);
    m_busyUntil = now + txTime;
    m_txWireBytes += size + TitaFrame::kWireOverheadBytes;
    TraceTx(*p);
    // An event when the wire frees only if frames wait: a frame leaving an empty
    // queue costs one event per link (its arrival), not two.
    if (!m_control.empty() || HasMoreToSend())
    {
        m_completionPending = true;
        m_txCompleteEvent->Schedule(txTime);
    }
    m_channel->Transmit(std::move(p), this, txTime);
}

void
TitaNetDevice::DoTraceTx(const TitaPacket& p)
{
    const Ptr<Packet> pk = p.ToPacket();
    m_phyTxBeginTrace(pk);
    m_snifferTrace(pk);
    m_promiscSnifferTrace(pk);
}

void
TitaNetDevice::DoTraceRx(const TitaPacket& p)
{
    const Ptr<Packet> pk = p.ToPacket();
    m_phyRxEndTrace(pk);
    m_snifferTrace(pk);
    m_promiscSnifferTrace(pk);
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
TitaNetDevice::Receive(TitaPacketPtr p)
{
    TraceRx(*p);
    if (m_pfcInDevice && p->Ethertype() == 0x8808)
    {
        HandlePfc(*p);
        return;
    }
    DoReceive(std::move(p));
}

void
TitaNetDevice::HandlePfc(const TitaPacket& p)
{
    uint8_t f[128];  // PFC frames are 60-64 bytes; anything longer is not one
    ::tita::fabric::PfcInfo info;
    if (!::tita::fabric::parse_pfc_frame(f, p.CopyTo(f, sizeof(f)), &info))
    {
        NS_LOG_WARN("MAC control frame that is not PFC ignored");
        return;
    }
    // One quantum is 512 bit times at this port's speed (the switches' rule:
    // in picoseconds, 0xffff quanta overflowed 64 bits and a NIC resumed after
    // 151 us instead of 336 us at 100G, before the switch's refresh).
    m_pause.apply(info,
                  Simulator::Now().GetTimeStep(),
                  m_bitRate,
                  NanoSeconds(1).GetTimeStep(),
                  [&](uint8_t prio, bool pause, uint64_t ticks) {
                      m_pfcRxTrace(prio, info.quanta[prio]);
                      m_resumeEvent[prio].Cancel();
                      if (!pause)
                      {
                          NS_LOG_LOGIC("XON priority " << +prio);
                          Resume(prio);
                          return;
                      }
                      ++m_pfcPausesRx;
                      NS_LOG_LOGIC("XOFF priority " << +prio << " until "
                                                    << TimeStep(m_pause.paused_until(prio)));
                      m_resumeEvent[prio] =
                          Simulator::Schedule(TimeStep(ticks), &TitaNetDevice::Resume, this, prio);
                  });
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
    ::tita::fabric::PfcInfo info;
    info.class_enable = static_cast<uint8_t>(1u << priority);
    info.quanta[priority] = quanta;
    if (quanta > 0)
    {
        ++m_pfcPausesTx;
    }
    m_pfcTxTrace(priority, quanta);
    uint8_t mac[6];
    m_address.CopyTo(mac);
    uint8_t f[::tita::fabric::kPfcFrameBytes];
    const uint32_t n = ::tita::fabric::build_pfc_frame(f, sizeof(f), mac, info);
    SendControlFrame(TitaPacket::Make(f, n, 0, nullptr, 0));
}

void
TitaNetDevice::SendControlFrame(TitaPacketPtr p)
{
    m_control.push_back(std::move(p));
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
