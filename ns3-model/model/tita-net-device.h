// The wire side shared by tita's NIC and switch ports: serialisation at the line
// rate onto a TitaChannel, IEEE 802.1Qbb PFC honoured per priority at egress,
// MAC control frames ahead of data, pcap-able sniffer traces.
#pragma once

#include <array>

#include "tita-event.h"
#include "tita-fifo.h"
#include "tita-frame.h"

#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/mac48-address.h"
#include "ns3/net-device.h"
#include "ns3/node.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"
#include "tita/fabric/pfc.h"

namespace ns3
{

class TitaChannel;

/**
 * \ingroup tita
 * Base of RdmaNicNetDevice and TitaSwitchNetDevice. Derived classes say what to
 * send next (DequeueNext, which must skip paused priorities) and what to do with
 * a received frame (DoReceive); this class owns the wire: one frame at a time,
 * (bytes + 24) x 8 / rate each (preamble, FCS and inter-frame gap), PFC pause
 * timers per priority (quanta of 512 bit times), and the traces.
 */
class TitaNetDevice : public NetDevice
{
  public:
    static constexpr uint8_t kPriorities = 8;

    static TypeId GetTypeId();
    TitaNetDevice();
    ~TitaNetDevice() override;

    bool Attach(Ptr<TitaChannel> channel);
    /// From the channel: a frame whose last bit has arrived.
    void Receive(TitaPacketPtr p);

    DataRate GetDataRate() const { return m_bps; }
    void SetDataRate(DataRate rate)
    {
        m_bps = rate;
        m_bitRate = rate.GetBitRate();
        m_wireTimeBytes = UINT32_MAX;
    }
    bool IsTransmitting() const;
    bool IsPaused(uint8_t priority) const;
    /// Bytes put on the wire so far, frames' own bytes plus the 24 bytes of overhead each.
    uint64_t GetTxWireBytes() const { return m_txWireBytes; }
    uint64_t GetPfcPausesReceived() const { return m_pfcPausesRx; }
    uint64_t GetPfcPausesSent() const { return m_pfcPausesTx; }
    Ptr<TitaNetDevice> GetPeer() const;
    /// Wire time of a frame of `bytes` at this port's rate.
    Time WireTime(uint32_t bytes) const;

    /// Sends a PFC frame: pause (quanta > 0) or resume (0) `priority`.
    void SendPfc(uint8_t priority, uint16_t quanta);
    /// Sends a MAC control frame ahead of any queued data.
    void SendControlFrame(TitaPacketPtr p);
    /// Starts the next frame if the wire is free.
    void TryTransmit();

    /// PFC trace signature: priority, quanta (0 = resume).
    typedef void (*PfcTracedCallback)(uint8_t priority, uint16_t quanta);

    // NetDevice
    void SetIfIndex(const uint32_t index) override;
    uint32_t GetIfIndex() const override;
    Ptr<Channel> GetChannel() const override;
    void SetAddress(Address address) override;
    Address GetAddress() const override;
    bool SetMtu(const uint16_t mtu) override;
    uint16_t GetMtu() const override;
    bool IsLinkUp() const override;
    void AddLinkChangeCallback(Callback<void> callback) override;
    bool IsBroadcast() const override;
    Address GetBroadcast() const override;
    bool IsMulticast() const override;
    Address GetMulticast(Ipv4Address multicastGroup) const override;
    Address GetMulticast(Ipv6Address addr) const override;
    bool IsBridge() const override;
    bool IsPointToPoint() const override;
    bool Send(Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber) override;
    bool SendFrom(Ptr<Packet> packet,
                  const Address& source,
                  const Address& dest,
                  uint16_t protocolNumber) override;
    Ptr<Node> GetNode() const override;
    void SetNode(Ptr<Node> node) override;
    bool NeedsArp() const override;
    void SetReceiveCallback(NetDevice::ReceiveCallback cb) override;
    void SetPromiscReceiveCallback(PromiscReceiveCallback cb) override;
    bool SupportsSendFrom() const override;

    Mac48Address GetMacAddress() const { return m_address; }

  protected:
    void DoDispose() override;

    /// The next frame to send, skipping paused priorities; nullptr if none.
    virtual TitaPacketPtr DequeueNext() = 0;
    /// A frame other than PFC arrived.
    virtual void DoReceive(TitaPacketPtr p) = 0;
    /// Whether frames wait behind the one starting now (then the device needs an
    /// event when the wire frees; otherwise the next frame finds the wire free
    /// or schedules that event itself).
    virtual bool HasMoreToSend() const = 0;
    /// The wire became free after a frame that had others waiting behind it.
    virtual void OnTransmitComplete();
    /// A priority was resumed (XON or pause expiry).
    virtual void OnResume(uint8_t priority);

    Ptr<Node> m_node;
    Ptr<TitaChannel> m_channel;
    Mac48Address m_address;
    DataRate m_bps;

    TracedCallback<Ptr<const Packet>> m_snifferTrace;
    TracedCallback<Ptr<const Packet>> m_promiscSnifferTrace;
    TracedCallback<Ptr<const Packet>> m_phyTxBeginTrace;
    TracedCallback<Ptr<const Packet>> m_phyRxEndTrace;
    TracedCallback<uint8_t, uint16_t> m_pfcRxTrace; // priority, quanta (0 = resume)
    TracedCallback<uint8_t, uint16_t> m_pfcTxTrace;
    /// true: PFC frames pause this device's egress here (NIC); false: they go to
    /// DoReceive like any frame (the switch data plane honours them).
    bool m_pfcInDevice = true;

  private:
    void TransmitComplete();
    void HandlePfc(const TitaPacket& p);
    /// Fires the packet traces (as ns3::Packets, made only when someone listens).
    void TraceTx(const TitaPacket& p)
    {
        if (m_packetTraced)
        {
            DoTraceTx(p);
        }
    }
    void TraceRx(const TitaPacket& p)
    {
        if (m_packetTraced)
        {
            DoTraceRx(p);
        }
    }
    void DoTraceTx(const TitaPacket& p);
    void DoTraceRx(const TitaPacket& p);
    void OnPacketTraceConnected()
    {
        m_packetTraced = true;
    }
    void Resume(uint8_t priority);

    bool m_packetTraced = false; // a sink was connected to a per-packet trace
    uint32_t m_ifIndex = 0;
    uint16_t m_mtu = 9000;
    Time m_busyUntil;             // the wire carries a frame until then
    bool m_completionPending = false;
    uint64_t m_txWireBytes = 0;
    uint64_t m_pfcPausesRx = 0;
    uint64_t m_pfcPausesTx = 0;
    TitaFifo<TitaPacketPtr> m_control; // MAC control frames, before any data
    Ptr<TitaEvent<TitaNetDevice, &TitaNetDevice::TransmitComplete>> m_txCompleteEvent;
    uint64_t m_bitRate = 0;                  // m_bps, b/s
    mutable uint32_t m_wireTimeBytes = UINT32_MAX; // the last WireTime() asked (frames repeat sizes)
    mutable Time m_wireTime;
    ::tita::fabric::PauseState m_pause; // PFC from the link, in simulator time steps
    std::array<EventId, kPriorities> m_resumeEvent;
    TracedCallback<> m_linkChangeCallbacks;
};

} // namespace ns3
