// A full-duplex point-to-point Ethernet link between two TitaNetDevices.
#pragma once

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
 * A point-to-point link with a propagation delay. The sender's device models
 * serialisation (its line rate); the channel adds the delay and delivers the
 * frame to the other end when its last bit arrives. A link can be taken down
 * (both directions silently lose every frame) and brought up again.
 */
class TitaChannel : public Channel
{
  public:
    static TypeId GetTypeId();
    TitaChannel();

    void Attach(Ptr<TitaNetDevice> device);
    /// Sends p from src; it reaches the peer txTime + delay from now.
    void Transmit(Ptr<Packet> p, Ptr<TitaNetDevice> src, Time txTime);

    Ptr<TitaNetDevice> GetPeer(Ptr<const TitaNetDevice> self) const;
    Time GetDelay() const { return m_delay; }
    void SetLinkUp(bool up);
    bool IsLinkUp() const { return m_up; }

    std::size_t GetNDevices() const override;
    Ptr<NetDevice> GetDevice(std::size_t i) const override;

  protected:
    void DoDispose() override;

  private:
    Time m_delay;
    bool m_up = true;
    Ptr<TitaNetDevice> m_dev[2];
    std::size_t m_nDevices = 0;
    TracedCallback<Ptr<const Packet>> m_dropTrace; // lost on a link that is down
};

} // namespace ns3
