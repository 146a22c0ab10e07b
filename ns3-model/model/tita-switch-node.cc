#include "tita-switch-node.h"

#include "tita-channel.h"
#include "tita-frame.h"
#include "tita-trace.h"

#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/double.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"
#include "tita/wire/frame.h"
#include "tita/wire/headers.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaSwitchNode");
NS_OBJECT_ENSURE_REGISTERED(TitaSwitchNetDevice);
NS_OBJECT_ENSURE_REGISTERED(TitaSwitchNode);

namespace fab = ::tita::fabric;
namespace wire = ::tita::wire;

// ---------------------------------------------------------------- port

TypeId
TitaSwitchNetDevice::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::TitaSwitchNetDevice")
            .SetParent<TitaNetDevice>()
            .SetGroupName("Tita")
            .AddConstructor<TitaSwitchNetDevice>()
            .AddTraceSource("QueueLength",
                            "Egress queue changed: priority, queue bytes, port bytes",
                            MakeNotifyingTraceSourceAccessor(&TitaSwitchNetDevice::m_queueTrace, &TitaSwitchNetDevice::OnQueueTraceConnected),
                            "ns3::TitaSwitchNetDevice::QueueTracedCallback")
            .AddTraceSource("Drop",
                            "A packet dropped for this port: priority, reason "
                            "(tita::fabric::DropReason), bytes",
                            MakeTraceSourceAccessor(&TitaSwitchNetDevice::m_dropTrace),
                            "ns3::TitaSwitchNetDevice::DropTracedCallback")
            .AddTraceSource("Pfc",
                            "PFC on this port: priority, pause (else resume), sent (else received)",
                            MakeTraceSourceAccessor(&TitaSwitchNetDevice::m_switchPfcTrace),
                            "ns3::TitaSwitchNetDevice::SwitchPfcTracedCallback");
    return tid;
}

TitaSwitchNetDevice::TitaSwitchNetDevice()
{
    m_pfcInDevice = false; // the data plane honours PFC frames
}

void
TitaSwitchNetDevice::SetSwitch(Ptr<TitaSwitchNode> sw, uint16_t port)
{
    m_switch = sw;
    m_port = port;
}

void
TitaSwitchNetDevice::OnQueueTraceConnected()
{
    m_queueTraced = true;
    if (m_switch)
    {
        m_switch->UpdateHooks();
    }
}

void
TitaSwitchNetDevice::DoDispose()
{
    m_switch = nullptr;
    TitaNetDevice::DoDispose();
}

TitaPacketPtr
TitaSwitchNetDevice::DequeueNext()
{
    return m_switch->Dequeue(m_port);
}

bool
TitaSwitchNetDevice::HasMoreToSend() const
{
    return m_switch->GetCore().qlen_bytes(m_port) > 0;
}

void
TitaSwitchNetDevice::DoReceive(TitaPacketPtr p)
{
    m_switch->Receive(m_port, std::move(p));
}

// ---------------------------------------------------------------- switch

TypeId
TitaSwitchNode::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::TitaSwitchNode")
            .SetParent<Node>()
            .SetGroupName("Tita")
            .AddConstructor<TitaSwitchNode>()
            .AddAttribute("BufferSize",
                          "Shared packet buffer (bytes)",
                          UintegerValue(32ULL << 20),
                          MakeUintegerAccessor(&TitaSwitchNode::m_bufferBytes),
                          MakeUintegerChecker<uint64_t>(1024))
            .AddAttribute("BufferPorts",
                          "BufferSize is the buffer of a switch of this many ports; a switch of more "
                          "ports gets BufferSize x its ports / BufferPorts, the same share a port, as "
                          "switch ASICs' buffers grow with their radix (lib/fabric's "
                          "scaled_buffer_bytes); 0: BufferSize for every switch",
                          UintegerValue(64),
                          MakeUintegerAccessor(&TitaSwitchNode::m_bufferPorts),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("ReserveBytes",
                          "Reserved buffer per (ingress port, priority)",
                          UintegerValue(4096),
                          MakeUintegerAccessor(&TitaSwitchNode::m_reserveBytes),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("HeadroomBytes",
                          "PFC headroom per (ingress port, lossless priority); 0: each port's "
                          "own, 3 x its rate x its link's delay (as the HPCC simulator sizes it) "
                          "+ HeadroomExtraBytes",
                          UintegerValue(0),
                          MakeUintegerAccessor(&TitaSwitchNode::m_headroomBytes),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("HeadroomExtraBytes",
                          "Added to each port's computed headroom: frames being sent at both ends "
                          "when the pause leaves (2 jumbo frames; the HPCC simulator adds none)",
                          UintegerValue(2 * TitaFrame::kMaxFrameBytes),
                          MakeUintegerAccessor(&TitaSwitchNode::m_headroomExtraBytes),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("PfcDynamic",
                          "Dynamic PFC threshold: alpha x free shared buffer",
                          BooleanValue(true),
                          MakeBooleanAccessor(&TitaSwitchNode::m_pfcDynamic),
                          MakeBooleanChecker())
            .AddAttribute("PfcAlpha",
                          "Dynamic PFC threshold factor (1/8 as the HPCC simulator)",
                          DoubleValue(0.125),
                          MakeDoubleAccessor(&TitaSwitchNode::m_pfcAlpha),
                          MakeDoubleChecker<double>(0.0))
            .AddAttribute("PfcAlphaBaseRate",
                          "0: PfcAlpha on every port. Else a port of rate R gets PfcAlpha x R / this "
                          "(at most 1), as the HPCC simulator doubles alpha per doubling above the "
                          "host NIC rate (1/8 at 100G, 1/2 at 400G)",
                          DataRateValue(DataRate(0)),
                          MakeDataRateAccessor(&TitaSwitchNode::m_pfcAlphaBaseRate),
                          MakeDataRateChecker())
            .AddAttribute("ResumeOffsetBytes",
                          "XON when the group's shared use is this far below the threshold",
                          UintegerValue(3072),
                          MakeUintegerAccessor(&TitaSwitchNode::m_resumeOffsetBytes),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("LosslessPriorities",
                          "Bit p set: priority p is lossless (PFC)",
                          UintegerValue(1u << 3),
                          MakeUintegerAccessor(&TitaSwitchNode::m_lossless),
                          MakeUintegerChecker<uint8_t>())
            .AddAttribute("EgressAlpha",
                          "Dynamic threshold of lossy egress queues",
                          DoubleValue(1.0),
                          MakeDoubleAccessor(&TitaSwitchNode::m_egressAlpha),
                          MakeDoubleChecker<double>(0.0))
            .AddAttribute("Ecn",
                          "RED/ECN marking at dequeue",
                          BooleanValue(true),
                          MakeBooleanAccessor(&TitaSwitchNode::m_ecn),
                          MakeBooleanChecker())
            .AddAttribute("RedKmin",
                          "RED Kmin: bytes of an egress queue at the port (scaled when "
                          "RedBaseRate is set); 0: the default, 400 KB per 100 Gb/s of port "
                          "rate (the HPCC artifact's)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&TitaSwitchNode::m_redKminBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("RedKmax",
                          "RED Kmax: bytes as RedKmin; 0: the default, 1600 KB per 100 Gb/s",
                          UintegerValue(0),
                          MakeUintegerAccessor(&TitaSwitchNode::m_redKmaxBytes),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("RedPmax",
                          "RED marking probability at Kmax; 0: the default, 0.2",
                          DoubleValue(0.0),
                          MakeDoubleAccessor(&TitaSwitchNode::m_redPmax),
                          MakeDoubleChecker<double>(0.0, 1.0))
            .AddAttribute("RedBaseRate",
                          "0: RedKmin and RedKmax are bytes at each port. Otherwise they are "
                          "bytes at this rate, scaled by each port's rate / RedBaseRate "
                          "(the HPCC artifact's KMIN_MAP: 100Gbps)",
                          DataRateValue(DataRate(0)),
                          MakeDataRateAccessor(&TitaSwitchNode::m_redBaseRate),
                          MakeDataRateChecker())
            .AddAttribute("Int",
                          "Append an INT hop record to COLLECT telemetry trailers at dequeue",
                          BooleanValue(true),
                          MakeBooleanAccessor(&TitaSwitchNode::m_int),
                          MakeBooleanChecker())
            .AddAttribute("DecrementTtl",
                          "Decrement the IP TTL (receivers count routers from it)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&TitaSwitchNode::m_decrementTtl),
                          MakeBooleanChecker())
            .AddAttribute("EcmpSeed",
                          "ECMP hash seed (0: derived from the node id)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&TitaSwitchNode::m_ecmpSeed),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("EcmpSalt",
                          "Mixed into the ECMP seeds derived from node ids (EcmpSeed 0): another "
                          "set of per-switch hashes for repeated runs (0: the usual ones)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&TitaSwitchNode::m_ecmpSalt),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("DodgeField",
                          "Header field carrying the Hash Dodging offset: none, dscp, udp-sport",
                          StringValue("none"),
                          MakeStringAccessor(&TitaSwitchNode::m_dodgeField),
                          MakeStringChecker())
            .AddAttribute("DodgeMask",
                          "Bits of the dodge field that carry the offset (0: 0x07 of the DSCP, "
                          "0x000f of the UDP source port)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&TitaSwitchNode::m_dodgeMask),
                          MakeUintegerChecker<uint16_t>())
            .AddAttribute("DodgeStride",
                          "ECMP choice moves by dodge x stride",
                          UintegerValue(1),
                          MakeUintegerAccessor(&TitaSwitchNode::m_dodgeStride),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("MaxPackets",
                          "Packet descriptors (packets the switch can hold; allocated as queues "
                          "reach them); 0: BufferSize / 256 (a cell per 256 B)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&TitaSwitchNode::m_maxPackets),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("Seed",
                          "Seed of RED and random-loss draws (0: derived from the node id)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&TitaSwitchNode::m_seed),
                          MakeUintegerChecker<uint64_t>())
            .AddAttribute("TrustPcp",
                          "Classify by the 802.1Q PCP when tagged (else by DSCP)",
                          BooleanValue(true),
                          MakeBooleanAccessor(&TitaSwitchNode::m_trustPcp),
                          MakeBooleanChecker());
    return tid;
}

TitaSwitchNode::TitaSwitchNode()
    : m_pfcBuf(128)
{
}

TitaSwitchNode::~TitaSwitchNode() = default;

void
TitaSwitchNode::DoDispose()
{
    TitaPacketPtr p;
    while (m_core.drain(&p))
    {
    }
    for (auto& e : m_portEvent)
    {
        e.Cancel();
    }
    m_pollEvent.Cancel();
    m_ports.clear();
    Node::DoDispose();
}

uint16_t
TitaSwitchNode::AddPort(Ptr<TitaSwitchNetDevice> port)
{
    NS_ABORT_MSG_IF(m_ready, "ports must be added before Setup()");
    const auto index = static_cast<uint16_t>(m_ports.size());
    m_ports.push_back(port);
    AddDevice(port);
    port->SetSwitch(this, index);
    return index;
}

uint64_t
TitaSwitchNode::NowNs() const
{
    return TitaSimulatorImpl::NowNs();
}

void
TitaSwitchNode::Setup()
{
    std::string err;
    NS_ABORT_MSG_IF(!Setup(&err), "switch " << GetId() << ": " << err);
}

bool
TitaSwitchNode::Setup(std::string* err)
{
    fab::SwitchConfig cfg;
    for (const auto& dev : m_ports)
    {
        fab::PortConfig pc;
        pc.rate_bps = dev->GetDataRate().GetBitRate();
        pc.shaped = false; // the device serialises at its line rate
        pc.overhead_bytes = TitaFrame::kWireOverheadBytes;
        pc.ecn = m_ecn;
        // 0: unset (the default at the port's rate, lib/fabric's red.h).
        if (m_redKminBytes > 0)
        {
            pc.red.kmin_bytes = m_redKminBytes;
        }
        if (m_redKmaxBytes > 0)
        {
            pc.red.kmax_bytes = m_redKmaxBytes;
        }
        if (m_redPmax > 0)
        {
            pc.red.pmax = m_redPmax;
        }
        pc.red.base_rate_bps = m_redBaseRate.GetBitRate();
        dev->GetMacAddress().CopyTo(pc.mac);
        cfg.ports.push_back(pc);
        if (m_headroomBytes == 0)
        {
            Ptr<TitaChannel> ch = DynamicCast<TitaChannel>(dev->GetChannel());
            const double delayS = ch ? ch->GetDelay().GetSeconds() : 1e-6;
            // In flight after XOFF: a round trip of the link plus what the link
            // holds, 3 x rate x one-way delay (the HPCC simulator's size), and the
            // frames being sent at both ends.
            cfg.mmu.port_headroom_bytes.push_back(
                static_cast<uint32_t>(3.0 * static_cast<double>(pc.rate_bps) / 8.0 * delayS) + m_headroomExtraBytes);
        }
        if (m_pfcAlphaBaseRate.GetBitRate() > 0)
        {
            cfg.mmu.port_pfc_alpha.push_back(std::min(
                1.0,
                m_pfcAlpha * static_cast<double>(pc.rate_bps) / static_cast<double>(m_pfcAlphaBaseRate.GetBitRate())));
        }
    }
    const uint64_t bufferBytes = fab::scaled_buffer_bytes(m_bufferBytes, GetNPorts(), m_bufferPorts);
    cfg.mmu.buffer_bytes = bufferBytes;
    cfg.mmu.reserve_bytes = m_reserveBytes;
    cfg.mmu.headroom_bytes = m_headroomBytes;
    cfg.mmu.egress_alpha = m_egressAlpha;
    cfg.mmu.lossless = m_lossless;
    cfg.mmu.pfc_dynamic = m_pfcDynamic;
    cfg.mmu.pfc_alpha = m_pfcAlpha;
    cfg.mmu.resume_offset_bytes = m_resumeOffsetBytes;
    cfg.ecmp.seed = m_ecmpSeed ? m_ecmpSeed : 0x9e3779b9u * (GetId() + 1) + 0x85ebca6bu * m_ecmpSalt;
    if (!wire::parse_dodge_field(m_dodgeField, &cfg.ecmp.dodge_field))
    {
        *err = "DodgeField '" + m_dodgeField + "' is not " + std::string(wire::kDodgeFieldNames);
        return false;
    }
    // DodgeMask 0: the field's default, as tita-switch and the engine use it.
    cfg.ecmp.dodge_mask = m_dodgeMask ? m_dodgeMask : wire::dodge_default_mask(cfg.ecmp.dodge_field);
    cfg.ecmp.dodge_stride = m_dodgeStride;
    cfg.classify.trust_pcp = m_trustPcp;
    cfg.int_enabled = m_int;
    cfg.decrement_ttl = m_decrementTtl;
    cfg.seed = m_seed ? m_seed : 0x5eed0000ULL + GetId();
    // One descriptor per 256 bytes of buffer, as a cell-based switch has one cell
    // per 256 bytes: with BufferSize / 1 KiB a paused mix of data and ACKs ran out
    // of descriptors before PFC (which counts bytes) had paused anyone.
    cfg.max_packets = m_maxPackets ? m_maxPackets
                                   : static_cast<uint32_t>(std::clamp<uint64_t>(bufferBytes / 256, 1024, 1u << 30));
    // Most switches of a large fabric hold a few packets at a time: descriptors
    // are added as queues grow (fabric doubles them up to max_packets).
    cfg.initial_packets = std::min<uint32_t>(cfg.max_packets, 256);
    const uint64_t reserved = fab::reserved_bytes(cfg.mmu, GetNPorts());
    if (reserved >= bufferBytes)
    {
        // The one setting a user is most likely to have made too small, named
        // with what it has to hold.
        std::ostringstream o;
        o << "BufferSize " << bufferBytes << " bytes"
          << (bufferBytes != m_bufferBytes ? " (" + std::to_string(m_bufferBytes) + " scaled to " +
                                                 std::to_string(GetNPorts()) + " ports)"
                                           : std::string())
          << " leaves no shared buffer after " << reserved << " bytes of reserve and PFC headroom for its "
          << GetNPorts() << " ports: raise --ns3::TitaSwitchNode::BufferSize (or lower ReserveBytes, "
          << "HeadroomBytes)";
        *err = o.str();
        return false;
    }
    if (m_core.init(cfg, err) != 0)
    {
        return false;
    }
    m_ready = true;
    UpdateHooks();
    m_portEvent.resize(m_ports.size());
    m_portEventNs.assign(m_ports.size(), UINT64_MAX);
    return true;
}

void
TitaSwitchNode::UpdateHooks()
{
    if (!m_ready)
    {
        return; // Setup() installs them
    }
    fab::Hooks hooks;
    hooks.ctx = this;
    // Queue length after every enqueue and dequeue only while a port's
    // QueueLength trace has a sink: it costs a call per packet.
    for (const auto& port : m_ports)
    {
        if (port->IsQueueTraced())
        {
            hooks.qlen = &TitaSwitchNode::OnQlen;
        }
    }
    hooks.drop = &TitaSwitchNode::OnDrop;
    hooks.pfc = &TitaSwitchNode::OnPfc;
    m_core.set_hooks(hooks);
}

int
TitaSwitchNode::AddRoute(Ipv4Address dst, const std::vector<uint16_t>& ports)
{
    const wire::Gid gid = wire::Gid::from_ipv4(dst.Get());
    std::string err;
    const int rc = m_core.add_route(gid.raw, 128, ports, &err);
    NS_ABORT_MSG_IF(rc != 0, "switch " << GetId() << " route to " << dst << ": " << err);
    return rc;
}

void
TitaSwitchNode::ClearRoutes()
{
    m_core.clear_routes();
}

void
TitaSwitchNode::SetPortUp(uint16_t port, bool up)
{
    m_core.set_port_up(port, up);
}

void
TitaSwitchNode::SetFault(uint16_t port, const fab::FaultConfig& fault)
{
    NS_ABORT_MSG_IF(fault.corrupt_probability > 0,
                    "TitaSwitchNode: corrupt_probability is a fault of real frames (tita-switch): the "
                    "simulated hosts do not verify the ICRC, so a flipped PSN would not be caught");
    m_core.set_fault(port, fault);
}

uint64_t
TitaSwitchNode::GetPfcPausesSent() const
{
    uint64_t n = 0;
    for (uint16_t p = 0; p < GetNPorts(); ++p)
    {
        n += m_core.counters(p).pfc_pause_sent_total();
    }
    return n;
}

uint64_t
TitaSwitchNode::GetDrops() const
{
    uint64_t n = 0;
    for (uint16_t p = 0; p < GetNPorts(); ++p)
    {
        n += m_core.counters(p).dropped();
    }
    return n;
}

void
TitaSwitchNode::Receive(uint16_t port, TitaPacketPtr p)
{
    const uint64_t now = NowNs();
    // The data plane reads the real bytes: the head and the telemetry trailer at
    // the end of the tail; the payload stays virtual.
    const uint8_t* h = p->Head();
    const uint32_t n = p->HeadLen();
    const uint32_t size = p->GetSize();
    fab::FrameRef f;
    f.data = h;
    f.data_len = n;
    f.frame_bytes = size;
    // Where the IP datagram ends: the telemetry trailer follows it.
    const uint32_t dgEnd = wire::datagram_end(h, n, size);
    const uint32_t tailAt = n + p->PayloadLen();
    if (dgEnd >= tailAt && dgEnd < size && p->TailLen() > 0)
    {
        // After the payload (data frames): the trailer apart, room behind it.
        f.trailer = p->Tail() + (dgEnd - tailAt);
        f.trailer_len = size - dgEnd;
        f.trailer_room = TitaPacket::kTailBytes - p->TailLen();
    }
    else if (dgEnd > 0 && p->PayloadLen() == 0 && p->TailLen() == 0)
    {
        // The whole frame is in the head (ACK, NAK, CNP): the trailer is in the frame.
        f.trailer_room = TitaPacket::kHeadBytes - n;
    }
    const fab::RxResult r = m_core.receive(port, p, f, now);
    if (r.verdict == fab::Verdict::kQueued)
    {
        m_ports[r.out_port]->TryTransmit();
    }
    else if (r.verdict == fab::Verdict::kPfc)
    {
        m_ports[port]->TryTransmit(); // a resume may let the port send again
    }
    SendPendingPfc();
    SchedulePoll();
}

TitaPacketPtr
TitaSwitchNode::Dequeue(uint16_t port)
{
    const uint64_t now = NowNs();
    TitaPacketPtr p;
    fab::EgressEdit e;
    if (!m_core.dequeue(port, now, &p, &e))
    {
        const uint64_t t = m_core.next_event_ns(port, now);
        if (t != fab::kNever)
        {
            ArmPort(port, std::max(t, now + 1)); // paused or delayed: come back then
        }
        return nullptr;
    }
    if (e.any())
    {
        // Edited in place: headers in the head; the trailer at the end of the
        // tail, or in the head when the frame has no payload.
        if (!(e.flags & (fab::EgressEdit::kPushHop | fab::EgressEdit::kOverflow)))
        {
            fab::apply_edit(e, p->Head(), nullptr);
        }
        else if (e.trailer_offset != 0)
        {
            fab::apply_edit(e, p->Head());
            p->GrowHead(e.grow_bytes);
        }
        else
        {
            fab::apply_edit(e, p->Head(), p->Tail() + (p->TailLen() - e.trailer_len));
            p->GrowTail(e.grow_bytes);
        }
    }
    return p;
}

void
TitaSwitchNode::SendPendingPfc()
{
    if (!m_core.pfc_pending())
    {
        return;
    }
    const uint64_t now = NowNs();
    uint16_t port = 0;
    int len;
    while ((len = m_core.pfc_frame(&port, m_pfcBuf.data(), static_cast<uint32_t>(m_pfcBuf.size()), now)) > 0)
    {
        m_ports[port]->SendControlFrame(TitaPacket::Make(m_pfcBuf.data(), static_cast<uint32_t>(len), 0, nullptr, 0));
    }
}

void
TitaSwitchNode::Poll()
{
    m_pollNs = UINT64_MAX;
    m_core.poll(NowNs());
    SendPendingPfc();
    SchedulePoll();
}

void
TitaSwitchNode::SchedulePoll()
{
    const uint64_t t = m_core.next_poll_ns();
    if (t == fab::kNever || (m_pollEvent.IsRunning() && m_pollNs <= t))
    {
        return;
    }
    m_pollEvent.Cancel();
    m_pollNs = t;
    const Time at = NanoSeconds(t);
    const Time now = TitaSimulatorImpl::NowTime();
    m_pollEvent = Simulator::Schedule(at > now ? at - now : Time(0), &TitaSwitchNode::Poll, this);
}

void
TitaSwitchNode::ArmPort(uint16_t port, uint64_t atNs)
{
    if (m_portEvent[port].IsRunning() && m_portEventNs[port] <= atNs)
    {
        return;
    }
    m_portEvent[port].Cancel();
    m_portEventNs[port] = atNs;
    const Time at = NanoSeconds(atNs);
    const Time now = TitaSimulatorImpl::NowTime();
    m_portEvent[port] = Simulator::Schedule(at > now ? at - now : Time(0), &TitaSwitchNode::WakePort, this, port);
}

void
TitaSwitchNode::WakePort(uint16_t port)
{
    m_portEventNs[port] = UINT64_MAX;
    m_ports[port]->TryTransmit();
}

void
TitaSwitchNode::OnQlen(void* ctx, uint16_t port, uint8_t prio, uint64_t q, uint64_t portBytes, uint64_t)
{
    auto* sw = static_cast<TitaSwitchNode*>(ctx);
    sw->m_ports[port]->m_queueTrace(prio, q, portBytes);
}

void
TitaSwitchNode::OnDrop(void* ctx, uint16_t port, uint8_t prio, fab::DropReason why, uint32_t bytes, uint64_t)
{
    auto* sw = static_cast<TitaSwitchNode*>(ctx);
    NS_LOG_LOGIC("switch " << sw->GetId() << " port " << port << " drop " << fab::to_string(why));
    sw->m_ports[port]->m_dropTrace(prio, static_cast<uint8_t>(why), bytes);
}

void
TitaSwitchNode::OnPfc(void* ctx, uint16_t port, uint8_t prio, bool pause, bool sent, uint64_t)
{
    auto* sw = static_cast<TitaSwitchNode*>(ctx);
    sw->m_ports[port]->m_switchPfcTrace(prio, pause, sent);
}

} // namespace ns3
