// An RDMA NIC whose transport is tita's RC engine, unchanged.
//
// The device is the engine's host: it gives the engine the simulation clock, turns
// each TxFrame into an ns-3 Packet (real header and tail bytes, payload as virtual
// zeros from phantom memory regions), queues frames per 802.1p priority in front of
// the wire, honours PFC pause frames, hands every received frame to the engine as
// contiguous bytes, and arms one simulator event at the engine's next wakeup. No
// protocol rule and no congestion-control law lives here.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tita-event.h"
#include "tita-frame.h"
#include "tita-net-device.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/ipv4-address.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"
#include "tita/engine/engine.h"

namespace ns3
{

/**
 * \ingroup tita
 * RDMA NIC NetDevice hosting ::tita::engine::Engine.
 *
 * QP management (CreateQp, ConnectQp, PostWrite, ...) is what a verbs
 * application would do; the engine itself is reachable through GetEngine() for
 * anything else. Completions are delivered to the completion callback right
 * after the engine produced them.
 */
class RdmaNicNetDevice : public TitaNetDevice, private ::tita::engine::PacketIo
{
  public:
    /// Data frames of a QP go out with this 802.1p priority.
    static constexpr uint8_t kDefaultPriority = 3;

    static TypeId GetTypeId();
    RdmaNicNetDevice();
    ~RdmaNicNetDevice() override;

    /// The NIC's IPv4 address; its RoCE GID is the IPv4-mapped form.
    void SetIpv4(Ipv4Address address) { m_ipv4 = address; }
    Ipv4Address GetIpv4() const { return m_ipv4; }

    /// The engine, created from the attributes on first use.
    ::tita::engine::Engine& GetEngine();

    // ---- QP management (what an RDMA application does with verbs)

    /// Creates an RC QP on this NIC's CQ whose queues hold maxSendWr and
    /// maxRecvWr work requests; returns its number, 0 when out of QPs.
    uint32_t CreateQp(uint32_t maxSendWr = 16, uint32_t maxRecvWr = 16);
    /// RESET -> INIT -> RTR -> RTS towards peerQpn on peer. 0 or -errno.
    int ConnectQp(uint32_t qpn, Ptr<RdmaNicNetDevice> peer, uint32_t peerQpn);
    /// Congestion control of the QP by name and name=value parameters (cc/).
    int SetCc(uint32_t qpn, const std::string& algorithm, const std::vector<std::string>& params);
    /// An RDMA WRITE (with immediate: the peer gets a receive completion) of
    /// `bytes` from this NIC's phantom memory into the peer's.
    int PostWrite(uint32_t qpn, uint64_t wrId, uint32_t bytes, bool withImm, Ptr<RdmaNicNetDevice> peer);
    /// A SEND of `bytes` (the peer needs a posted receive).
    int PostSend(uint32_t qpn, uint64_t wrId, uint32_t bytes);
    /// A receive buffer of up to 2 GiB of phantom memory.
    int PostRecv(uint32_t qpn, uint64_t wrId);
    int DestroyQp(uint32_t qpn);
    /// Lets the engine run now (after posting work from outside an engine event).
    void Kick();

    /// Receives every work completion (send and receive) of this NIC.
    typedef Callback<void, Ptr<RdmaNicNetDevice>, const ::tita::engine::WorkCompletion&>
        CompletionCallback;
    void SetCompletionCallback(CompletionCallback cb) { m_completionCb = cb; }

    /// The memory region every QP of this NIC reads from and writes into.
    uint64_t GetPhantomBase() const { return kPhantomBase; }
    uint32_t GetPhantomRkey() const { return m_mr.rkey; }

    uint32_t GetQueuedBytes() const { return m_queuedBytes; }
    uint32_t GetQueuedFrames() const { return m_queuedFrames; }
    uint64_t GetEngineDrops() const;
    /// The payload of a full packet of this NIC's QPs (PayloadSize, else PathMtu).
    uint32_t GetFullPayloadBytes() const;

    /// Rate or window of a QP changed: QPN, rate (b/s), window (bytes, UINT64_MAX = none).
    typedef void (*CcTracedCallback)(uint32_t qpn, uint64_t rateBps, uint64_t cwndBytes);
    /// Egress queue length changed (bytes).
    typedef void (*QueueTracedCallback)(uint32_t bytes);
    /// A QP moved to another path (Hash Dodging): QPN, reason
    /// (::tita::engine::RepathReason), old and new dodge value.
    typedef void (*PathTracedCallback)(uint32_t qpn, uint8_t reason, uint16_t oldDodge, uint16_t newDodge);

  protected:
    void DoDispose() override;
    void DoInitialize() override;
    TitaPacketPtr DequeueNext() override;
    void DoReceive(TitaPacketPtr p) override;
    void OnTransmitComplete() override;
    bool HasMoreToSend() const override;
    void OnResume(uint8_t priority) override;

  private:
    static constexpr uint64_t kPhantomBase = 0x1000'0000ULL;
    static constexpr uint64_t kPhantomBytes = 1ULL << 40;

    // ::tita::engine::PacketIo
    uint32_t tx_space() override;
    void transmit_burst(uint64_t now_ns, const ::tita::engine::TxFrame* frames, uint32_t n) override;
    void Enqueue(const ::tita::engine::TxFrame& frame); // one frame, then TryTransmit

    uint64_t NowNs() const;
    void OnCcTraceConnected() { m_ccTraced = true; }
    void OnQueueTraceConnected() { m_queueTraced = true; }
    void OnEngineTxTraceConnected() { m_engineTxTraced = true; }
    /// poll(), completions, the next wakeup, traces: after every engine event.
    void RunEngine();
    void OnWakeup();
    void ScheduleWakeup();
    /// An engine run at atNs (now or later) unless one is due at or before then.
    void ArmWakeup(uint64_t atNs);
    void DrainCompletions();
    void DrainCompletions(::tita::engine::WorkCompletion* wc); // 32 entries
    void TraceCc();
    void CreateEngine();

    // Attributes. The engine's (BaseRtt, AckReqEvery, MaxQps, DodgeField,
    // SprayPaths, ...) are made from its settings table (tita-engine-attributes.h)
    // and kept here, the engine's config but for address and rate.
    static ::tita::engine::EngineConfig* SettingsOf(ObjectBase* object);
    ::tita::engine::EngineConfig m_settings;
    uint32_t m_cqEntries = 4096;
    uint32_t m_pathMtu = 1024;
    uint32_t m_payloadSize = 0;
    bool m_ackHighPriority = false;
    uint8_t m_qpTimeout = 10;
    uint8_t m_retryCnt = 7;
    bool m_selectiveRepeat = false;
    uint8_t m_priority = kDefaultPriority;
    bool m_vlan = true;
    uint32_t m_txRingFrames = 4;
    static void OnPathChange(void* self, const ::tita::engine::PathEvent& e);

    Ipv4Address m_ipv4;
    std::unique_ptr<::tita::engine::Engine> m_engine;
    uint32_t m_pd = 0;
    uint32_t m_cq = 0;
    ::tita::engine::MrInfo m_mr;

    std::array<TitaFifo<TitaPacketPtr>, kPriorities> m_queue;
    TitaFifo<TitaPacketPtr> m_controlQueue; // AckHighPriority: ACKs/NAKs/CNPs, first and never paused
    uint32_t m_queuedFrames = 0;
    uint32_t m_queuedBytes = 0;
    bool m_engineBlocked = false; // tx_space() said 0 since the last poll

    // Engine wakeups pending in the simulator (a min-heap of times, ns). Wakeups
    // are never cancelled: one that finds nothing due just polls.
    Ptr<TitaEvent<RdmaNicNetDevice, &RdmaNicNetDevice::OnWakeup>> m_wakeupEvent;
    std::vector<uint64_t> m_wakeups;
    uint64_t m_lastDrops = 0;
    std::array<::tita::engine::WorkCompletion, 32> m_wc; // not rebuilt per engine run
    bool m_draining = false;
    // A sink was connected to CcUpdate, QueueLength, EngineTx.
    bool m_ccTraced = false;
    bool m_queueTraced = false;
    bool m_engineTxTraced = false;
    std::vector<uint8_t> m_txScratch; // frames of real memory, sized on first use

    struct CcSeen
    {
        uint32_t qpn;
        uint64_t rate;
        uint64_t cwnd;
    };
    std::vector<CcSeen> m_ccSeen;

    CompletionCallback m_completionCb;
    TracedCallback<uint32_t, uint64_t, uint64_t> m_ccTrace;
    TracedCallback<uint32_t> m_queueTrace;
    TracedCallback<Ptr<const Packet>> m_dropTrace;
    TracedCallback<Ptr<const Packet>> m_engineTxTrace;
    TracedCallback<uint32_t, uint8_t, uint16_t, uint16_t> m_pathTrace;
};

} // namespace ns3
