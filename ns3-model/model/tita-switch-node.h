// The switch node: ns-3 ports around lib/fabric's data plane, the same code the
// DPDK software switch runs. Forwarding, ECMP with the dodge offset, the shared-
// buffer MMU with PFC, RED/ECN at dequeue, INT at dequeue, strict priority and
// fault injection are all fabric's; this file only moves packets and time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tita-frame.h"
#include "tita-net-device.h"

#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/ipv4-address.h"
#include "ns3/node.h"
#include "ns3/traced-callback.h"
#include "tita/fabric/switch.h"

namespace ns3
{

class TitaSwitchNode;

/**
 * \ingroup tita
 * One port of a TitaSwitchNode. Its egress queues live in the switch's data
 * plane; the device asks for the next frame whenever the wire is free.
 */
class TitaSwitchNetDevice : public TitaNetDevice
{
  public:
    static TypeId GetTypeId();
    TitaSwitchNetDevice();

    void SetSwitch(Ptr<TitaSwitchNode> sw, uint16_t port);
    uint16_t GetPort() const { return m_port; }
    /// Whether a sink was ever connected to QueueLength.
    bool IsQueueTraced() const { return m_queueTraced; }

    /// Queue length trace signature: priority, queue bytes, port bytes.
    typedef void (*QueueTracedCallback)(uint8_t priority, uint64_t queueBytes, uint64_t portBytes);
    /// Drop trace signature: priority (0xff: before classification), reason, bytes.
    typedef void (*DropTracedCallback)(uint8_t priority, uint8_t reason, uint32_t bytes);
    /// PFC trace signature: priority, pause (else resume), sent (else received).
    typedef void (*SwitchPfcTracedCallback)(uint8_t priority, bool pause, bool sent);

    // Fired by the switch for this port.
    TracedCallback<uint8_t, uint64_t, uint64_t> m_queueTrace;
    TracedCallback<uint8_t, uint8_t, uint32_t> m_dropTrace;
    TracedCallback<uint8_t, bool, bool> m_switchPfcTrace;

  protected:
    void DoDispose() override;
    TitaPacketPtr DequeueNext() override;
    void DoReceive(TitaPacketPtr p) override;
    bool HasMoreToSend() const override;

  private:
    void OnQueueTraceConnected();

    Ptr<TitaSwitchNode> m_switch;
    uint16_t m_port = 0;
    bool m_queueTraced = false;
};

/**
 * \ingroup tita
 * A switch: a Node whose devices are TitaSwitchNetDevices (port i = device i),
 * driven by tita::fabric::Switch. Configure through the attributes, add the
 * ports (TitaNetworkHelper does), call Setup(), then add routes.
 */
class TitaSwitchNode : public Node
{
  public:
    static TypeId GetTypeId();
    TitaSwitchNode();
    ~TitaSwitchNode() override;

    /// Adds a port; returns its index.
    uint16_t AddPort(Ptr<TitaSwitchNetDevice> port);
    uint16_t GetNPorts() const { return static_cast<uint16_t>(m_ports.size()); }
    Ptr<TitaSwitchNetDevice> GetPort(uint16_t port) const { return m_ports[port]; }

    /// Builds the data plane from the attributes and the ports' rates: false with
    /// a one-line reason (the buffer too small for its reserve and headroom, or a
    /// setting lib/fabric refuses).
    bool Setup(std::string* err);
    /// Setup(), aborting on a mistake (tests and programs that built the settings).
    void Setup();
    /// Host route to dst over an ECMP group of ports.
    int AddRoute(Ipv4Address dst, const std::vector<uint16_t>& ports);
    void ClearRoutes();
    void SetPortUp(uint16_t port, bool up);
    void SetFault(uint16_t port, const tita::fabric::FaultConfig& fault);

    const tita::fabric::SwitchCore& GetCore() const { return m_core; }
    /// Installs the data plane's hooks for the traces that have sinks.
    void UpdateHooks();
    uint64_t GetPfcPausesSent() const;
    uint64_t GetDrops() const;

    // From the ports.
    void Receive(uint16_t port, TitaPacketPtr p);
    TitaPacketPtr Dequeue(uint16_t port);

  protected:
    void DoDispose() override;

  private:
    static void OnQlen(void* ctx, uint16_t port, uint8_t prio, uint64_t q, uint64_t portBytes, uint64_t now);
    static void OnDrop(void* ctx, uint16_t port, uint8_t prio, tita::fabric::DropReason why, uint32_t bytes,
                       uint64_t now);
    static void OnPfc(void* ctx, uint16_t port, uint8_t prio, bool pause, bool sent, uint64_t now);

    uint64_t NowNs() const;
    void SendPendingPfc();
    void Poll();
    void SchedulePoll();
    void ArmPort(uint16_t port, uint64_t atNs);
    void WakePort(uint16_t port);

    // Attributes
    uint64_t m_bufferBytes;
    uint32_t m_bufferPorts;
    uint32_t m_reserveBytes;
    uint32_t m_headroomBytes;
    uint32_t m_headroomExtraBytes;
    double m_pfcAlpha;
    DataRate m_pfcAlphaBaseRate;
    bool m_pfcDynamic;
    uint32_t m_resumeOffsetBytes;
    uint8_t m_lossless;
    double m_egressAlpha;
    bool m_ecn;
    uint64_t m_redKminBytes;
    uint64_t m_redKmaxBytes;
    double m_redPmax;
    DataRate m_redBaseRate;
    bool m_int;
    bool m_decrementTtl;
    uint32_t m_ecmpSeed;
    uint32_t m_ecmpSalt;
    std::string m_dodgeField;
    uint16_t m_dodgeMask;
    uint32_t m_dodgeStride;
    uint32_t m_maxPackets;
    uint64_t m_seed;
    bool m_trustPcp;

    tita::fabric::Switch<TitaPacketPtr> m_core;
    bool m_ready = false;
    std::vector<Ptr<TitaSwitchNetDevice>> m_ports;
    std::vector<EventId> m_portEvent;
    std::vector<uint64_t> m_portEventNs;
    EventId m_pollEvent;
    uint64_t m_pollNs = UINT64_MAX;
    std::vector<uint8_t> m_pfcBuf;
};

} // namespace ns3
