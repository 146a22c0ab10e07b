// A full-duplex point-to-point Ethernet link between two TitaNetDevices.
#pragma once

#include <cstdint>
#include <vector>

#include "tita-event.h"
#include "tita-frame.h"

#include "ns3/channel.h"
#include "ns3/nstime.h"
#include "ns3/packet.h"
#include "ns3/ptr.h"
#include "ns3/traced-callback.h"

namespace ns3
{

class TitaNetDevice;

/**
 * \ingroup tita
 * A point-to-point link with a propagation delay.
 *
 * In a parallel run (TitaParallelSimulatorImpl) a direction whose ends are in
 * two logical processes is a cut: the sender hands each frame, with the time
 * stamp and key it reserved, to the receiver's LP through its outbox, and the
 * in-flight FIFO of that direction belongs to the receiver alone. The sender's device models
 * serialisation (its line rate); the channel adds the delay and delivers the
 * frame to the other end when its last bit arrives. A link can be taken down
 * (both directions silently lose every frame) and brought up again.
 *
 * Frames in flight in one direction arrive in the order they were sent (the
 * sender serialises them, the delay is constant), so each direction keeps them
 * in a FIFO and one reusable simulator event per direction delivers the oldest.
 */
class TitaChannel : public Channel
{
  public:
    static TypeId GetTypeId();
    TitaChannel();
    ~TitaChannel() override;

    void Attach(Ptr<TitaNetDevice> device);
    /// Sends p from src; it reaches the peer txTime + delay from now.
    void Transmit(TitaPacketPtr p, const TitaNetDevice* src, Time txTime);

    Ptr<TitaNetDevice> GetPeer(Ptr<const TitaNetDevice> self) const;
    Time GetDelay() const { return m_delay; }
    void SetLinkUp(bool up);
    bool IsLinkUp() const { return m_up; }

    /// The receiving nodes' ids, learnt now (a parallel run learns them before
    /// any thread runs: the first frame would read the other side's node).
    void LearnContexts();

    std::size_t GetNDevices() const override;
    Ptr<NetDevice> GetDevice(std::size_t i) const override;

  protected:
    void DoDispose() override;

  private:
    /// A frame on its way, and when and as which event it arrives.
    struct Arrival
    {
        TitaPacket* packet; // owned
        uint64_t ts;        // time steps
        uint64_t uid;
    };
    /// Frames on their way to m_dev[dir], oldest first (a ring). With
    /// TitaSimulatorImpl only the oldest is in the event queue, with the time
    /// stamp and uid it got when it was sent; the next one joins the queue when
    /// it arrives. Otherwise every frame has its own event.
    struct InFlight
    {
        std::vector<Arrival> ring;
        uint32_t head = 0;
        uint32_t count = 0;
    };
    /// A new last slot of direction dir's FIFO (grown as needed).
    Arrival& Push(int dir);
    void ScheduleHead(int dir);
    /// A frame that crossed from another logical process (a parallel run):
    /// the receiver's side queues it as Transmit would have.
    static void AcceptArrival(void* self, uint32_t dir, void* frame, uint64_t ts, uint64_t key);
    void Enqueue(int dir, TitaPacket* p, uint64_t ts, uint64_t uid);
    void DropInFlight();
    void Deliver0() { Deliver(0); }
    void Deliver1() { Deliver(1); }
    void Deliver(int dir);

    Time m_delay;
    bool m_up = true;
    Ptr<TitaNetDevice> m_dev[2];
    uint32_t m_context[2] = {UINT32_MAX, UINT32_MAX}; // the receiving node's id, once known
    std::size_t m_nDevices = 0;
    InFlight m_inFlight[2];
    Ptr<TitaEvent<TitaChannel, &TitaChannel::Deliver0>> m_deliver0;
    Ptr<TitaEvent<TitaChannel, &TitaChannel::Deliver1>> m_deliver1;
    TracedCallback<Ptr<const Packet>> m_dropTrace; // lost on a link that is down
};

} // namespace ns3
