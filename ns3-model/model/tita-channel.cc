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

TitaChannel::TitaChannel()
    : m_deliver0(Create<TitaEvent<TitaChannel, &TitaChannel::Deliver0>>(this)),
      m_deliver1(Create<TitaEvent<TitaChannel, &TitaChannel::Deliver1>>(this))
{
}

TitaChannel::~TitaChannel()
{
    DropInFlight();
}

void
TitaChannel::Attach(Ptr<TitaNetDevice> device)
{
    NS_ASSERT_MSG(m_nDevices < 2, "a TitaChannel joins exactly two devices");
    m_dev[m_nDevices++] = device;
}

void
TitaChannel::Transmit(TitaPacketPtr p, const TitaNetDevice* src, Time txTime)
{
    if (!m_up)
    {
        if (!m_dropTrace.IsEmpty())
        {
            m_dropTrace(p->ToPacket());
        }
        return;
    }
    const int dir = (PeekPointer(m_dev[0]) == src) ? 1 : 0;
    if (m_context[dir] == UINT32_MAX && m_dev[dir]->GetNode())
    {
        m_context[dir] = m_dev[dir]->GetNode()->GetId();
    }
    const Time delay = txTime + m_delay;
    if (TitaSimulatorImpl* sim = TitaSimulatorImpl::Active())
    {
        uint64_t ts = 0;
        const uint64_t uid = sim->ReserveUid(static_cast<uint64_t>(delay.GetTimeStep()), &ts);
        if (!sim->IsLocal(m_context[dir]))
        {
            sim->SendArrival(m_context[dir], &TitaChannel::AcceptArrival, this, static_cast<uint32_t>(dir),
                             p.release(), ts, uid);
            return;
        }
        Enqueue(dir, p.release(), ts, uid);
        return;
    }
    Arrival& a = Push(dir);
    a.packet = p.release();
    if (dir == 0)
    {
        m_deliver0->ScheduleWithContext(m_context[0], delay, a.packet);
    }
    else
    {
        m_deliver1->ScheduleWithContext(m_context[1], delay, a.packet);
    }
}

TitaChannel::Arrival&
TitaChannel::Push(int dir)
{
    InFlight& f = m_inFlight[dir];
    if (f.count == f.ring.size())
    {
        // Grow the ring (a power of two), keeping the order.
        std::vector<Arrival> bigger(f.ring.empty() ? 16 : 2 * f.ring.size());
        const uint32_t mask = f.ring.empty() ? 0 : static_cast<uint32_t>(f.ring.size() - 1);
        for (uint32_t i = 0; i < f.count; ++i)
        {
            bigger[i] = f.ring[(f.head + i) & mask];
        }
        f.ring = std::move(bigger);
        f.head = 0;
    }
    const uint32_t mask = static_cast<uint32_t>(f.ring.size() - 1);
    Arrival& a = f.ring[(f.head + f.count) & mask];
    ++f.count;
    return a;
}

void
TitaChannel::Enqueue(int dir, TitaPacket* p, uint64_t ts, uint64_t uid)
{
    Arrival& a = Push(dir);
    a.packet = p;
    a.ts = ts;
    a.uid = uid;
    if (m_inFlight[dir].count == 1)
    {
        ScheduleHead(dir);
    }
}

void
TitaChannel::AcceptArrival(void* self, uint32_t dir, void* frame, uint64_t ts, uint64_t key)
{
    static_cast<TitaChannel*>(self)->Enqueue(static_cast<int>(dir), static_cast<TitaPacket*>(frame), ts, key);
}

void
TitaChannel::LearnContexts()
{
    for (int dir = 0; dir < 2; ++dir)
    {
        if (m_context[dir] == UINT32_MAX && m_dev[dir] && m_dev[dir]->GetNode())
        {
            m_context[dir] = m_dev[dir]->GetNode()->GetId();
        }
    }
}

void
TitaChannel::ScheduleHead(int dir)
{
    InFlight& f = m_inFlight[dir];
    const Arrival& a = f.ring[f.head];
    EventImpl* ev = dir == 0 ? static_cast<EventImpl*>(PeekPointer(m_deliver0))
                             : static_cast<EventImpl*>(PeekPointer(m_deliver1));
    ev->Ref(); // the simulator's reference, dropped after the call
    TitaSimulatorImpl::Active()->InsertReserved(a.ts, a.uid, m_context[dir], ev, a.packet);
}

void
TitaChannel::DropInFlight()
{
    for (auto& f : m_inFlight)
    {
        const uint32_t mask = f.ring.empty() ? 0 : static_cast<uint32_t>(f.ring.size() - 1);
        for (uint32_t i = 0; i < f.count; ++i)
        {
            TitaPacketFree()(f.ring[(f.head + i) & mask].packet);
        }
        f.ring.clear();
        f.head = 0;
        f.count = 0;
    }
}

void
TitaChannel::Deliver(int dir)
{
    InFlight& f = m_inFlight[dir];
    NS_ASSERT(f.count > 0);
    const uint32_t mask = static_cast<uint32_t>(f.ring.size() - 1);
    TitaPacketPtr p(f.ring[f.head].packet);
    f.head = (f.head + 1) & mask;
    --f.count;
    if (f.count > 0 && TitaSimulatorImpl::Active() != nullptr)
    {
        ScheduleHead(dir); // the next frame on this direction, as it was scheduled
    }
    m_dev[dir]->Receive(std::move(p));
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
    m_deliver0->Detach();
    m_deliver1->Detach();
    DropInFlight();
    m_dev[0] = nullptr;
    m_dev[1] = nullptr;
    Channel::DoDispose();
}

} // namespace ns3
