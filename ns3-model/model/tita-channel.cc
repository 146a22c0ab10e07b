#include "tita-channel.h"

#include "tita-net-device.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaChannel");
NS_OBJECT_ENSURE_REGISTERED(TitaChannel);

TypeId
TitaChannel::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::TitaChannel")
            .SetParent<Channel>()
            .SetGroupName("Tita")
            .AddConstructor<TitaChannel>()
            .AddAttribute("Delay",
                          "Propagation delay of the link",
                          TimeValue(MicroSeconds(1)),
                          MakeTimeAccessor(&TitaChannel::m_delay),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("Drop",
                            "A frame lost because the link is down",
                            MakeTraceSourceAccessor(&TitaChannel::m_dropTrace),
                            "ns3::Packet::TracedCallback");
    return tid;
}

TitaChannel::TitaChannel() = default;

void
TitaChannel::Attach(Ptr<TitaNetDevice> device)
{
    NS_ASSERT_MSG(m_nDevices < 2, "a TitaChannel joins exactly two devices");
    m_dev[m_nDevices++] = device;
}

void
TitaChannel::Transmit(Ptr<Packet> p, Ptr<TitaNetDevice> src, Time txTime)
{
    if (!m_up)
    {
        m_dropTrace(p);
        return;
    }
    const Ptr<TitaNetDevice>& dst = (m_dev[0] == src) ? m_dev[1] : m_dev[0];
    Simulator::ScheduleWithContext(dst->GetNode()->GetId(),
                                   txTime + m_delay,
                                   &TitaNetDevice::Receive,
                                   dst,
                                   p);
}

Ptr<TitaNetDevice>
TitaChannel::GetPeer(Ptr<const TitaNetDevice> self) const
{
    return (m_dev[0] == self) ? m_dev[1] : m_dev[0];
}

void
TitaChannel::SetLinkUp(bool up)
{
    NS_LOG_INFO("link " << (up ? "up" : "down") << " at " << Simulator::Now());
    m_up = up;
}

std::size_t
TitaChannel::GetNDevices() const
{
    return m_nDevices;
}

Ptr<NetDevice>
TitaChannel::GetDevice(std::size_t i) const
{
    return i < m_nDevices ? Ptr<NetDevice>(m_dev[i]) : nullptr;
}

void
TitaChannel::DoDispose()
{
    m_dev[0] = nullptr;
    m_dev[1] = nullptr;
    Channel::DoDispose();
}

} // namespace ns3
