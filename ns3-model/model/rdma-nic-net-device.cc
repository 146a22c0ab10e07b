#include "rdma-nic-net-device.h"

#include "tita-engine-attributes.h"
#include "tita-frame.h"
#include "tita-trace.h"

#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"
#include "tita/wire/frame.h"
#include "tita/wire/headers.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("RdmaNicNetDevice");
NS_OBJECT_ENSURE_REGISTERED(RdmaNicNetDevice);

namespace eng = ::tita::engine;

TypeId
RdmaNicNetDevice::GetTypeId()
{
    static TypeId tid =
        AddEngineAttributes(TypeId("ns3::RdmaNicNetDevice")
                                .SetParent<TitaNetDevice>()
                                .SetGroupName("Tita")
                                .AddConstructor<RdmaNicNetDevice>(),
                            &RdmaNicNetDevice::SettingsOf)
            .AddAttribute("CqEntries",
                          "Completion queue size",
                          UintegerValue(4096),
                          MakeUintegerAccessor(&RdmaNicNetDevice::m_cqEntries),
                          MakeUintegerChecker<uint32_t>(1))
            .AddAttribute("PathMtu",
                          "RoCE path MTU of new QPs (256, 512, 1024, 2048, 4096)",
                          UintegerValue(1024),
                          MakeUintegerAccessor(&RdmaNicNetDevice::m_pathMtu),
                          MakeUintegerChecker<uint32_t>(256, 4096))
            .AddAttribute("PayloadSize",
                          "Payload of full packets, for comparison with simulators that carry "
                          "e.g. 1000 B (a multiple of 4, 64 to PathMtu; 0: PathMtu)",
                          UintegerValue(0),
                          MakeUintegerAccessor(&RdmaNicNetDevice::m_payloadSize),
                          MakeUintegerChecker<uint32_t>(0, 4096))
            .AddAttribute("AckHighPriority",
                          "ACKs, NAKs and CNPs leave the NIC ahead of all data and are never held by "
                          "PFC (the HPCC simulator's ACK_HIGH_PRIO 1; their 802.1p priority, which "
                          "switches queue them by, stays the QP's)",
                          BooleanValue(false),
                          MakeBooleanAccessor(&RdmaNicNetDevice::m_ackHighPriority),
                          MakeBooleanChecker())
            .AddAttribute("QpTimeout",
                          "IB local ACK timeout code of new QPs: 4.096 us x 2^code (0 = none)",
                          UintegerValue(10),
                          MakeUintegerAccessor(&RdmaNicNetDevice::m_qpTimeout),
                          MakeUintegerChecker<uint8_t>(0, 31))
            .AddAttribute("RetryCnt",
                          "Retransmission rounds without progress before a WR fails",
                          UintegerValue(7),
                          MakeUintegerAccessor(&RdmaNicNetDevice::m_retryCnt),
                          MakeUintegerChecker<uint8_t>(0, 7))
            .AddAttribute("SelectiveRepeat",
                          "Loss recovery of new QPs: IRN-style selective repeat (else go-back-N)",
                          BooleanValue(false),
                          MakeBooleanAccessor(&RdmaNicNetDevice::m_selectiveRepeat),
                          MakeBooleanChecker())
            .AddAttribute("Priority",
                          "802.1p priority (PFC class) of the NIC's QPs",
                          UintegerValue(kDefaultPriority),
                          MakeUintegerAccessor(&RdmaNicNetDevice::m_priority),
                          MakeUintegerChecker<uint8_t>(0, 7))
            .AddAttribute("Vlan",
                          "Tag frames with 802.1Q (VID 0) to carry the priority",
                          BooleanValue(true),
                          MakeBooleanAccessor(&RdmaNicNetDevice::m_vlan),
                          MakeBooleanChecker())
            .AddAttribute("TxRingFrames",
                          "Frames the NIC accepts from the engine ahead of the wire",
                          UintegerValue(4),
                          MakeUintegerAccessor(&RdmaNicNetDevice::m_txRingFrames),
                          MakeUintegerChecker<uint32_t>(1))
            .AddTraceSource("CcUpdate",
                            "Rate or window of a QP changed: qpn, rate (b/s), window (bytes)",
                            MakeNotifyingTraceSourceAccessor(&RdmaNicNetDevice::m_ccTrace, &RdmaNicNetDevice::OnCcTraceConnected),
                            "ns3::RdmaNicNetDevice::CcTracedCallback")
            .AddTraceSource("QueueLength",
                            "Bytes waiting in the NIC's egress queues",
                            MakeNotifyingTraceSourceAccessor(&RdmaNicNetDevice::m_queueTrace, &RdmaNicNetDevice::OnQueueTraceConnected),
                            "ns3::RdmaNicNetDevice::QueueTracedCallback")
            .AddTraceSource("EngineTx",
                            "A frame the engine handed to the NIC (before its egress queue)",
                            MakeNotifyingTraceSourceAccessor(&RdmaNicNetDevice::m_engineTxTrace, &RdmaNicNetDevice::OnEngineTxTraceConnected),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("Drop",
                            "A received frame the engine dropped (bad, unknown QP, not ready)",
                            MakeTraceSourceAccessor(&RdmaNicNetDevice::m_dropTrace),
                            "ns3::Packet::TracedCallback")
            .AddTraceSource("PathChange",
                            "A QP moved to another path: qpn, reason, old dodge, new dodge",
                            MakeTraceSourceAccessor(&RdmaNicNetDevice::m_pathTrace),
                            "ns3::RdmaNicNetDevice::PathTracedCallback");
    return tid;
}

::tita::engine::EngineConfig*
RdmaNicNetDevice::SettingsOf(ObjectBase* object)
{
    auto* nic = dynamic_cast<RdmaNicNetDevice*>(object);
    return nic != nullptr ? &nic->m_settings : nullptr;
}

RdmaNicNetDevice::RdmaNicNetDevice()
    : m_wakeupEvent(Create<TitaEvent<RdmaNicNetDevice, &RdmaNicNetDevice::OnWakeup>>(this))
{
}

RdmaNicNetDevice::~RdmaNicNetDevice() = default;

void
RdmaNicNetDevice::DoDispose()
{
    m_wakeupEvent->Detach();
    m_wakeups.clear();
    for (auto& q : m_queue)
    {
        q.clear();
    }
    m_controlQueue.clear();
    m_engine.reset();
    m_completionCb = MakeNullCallback<void, Ptr<RdmaNicNetDevice>, const eng::WorkCompletion&>();
    TitaNetDevice::DoDispose();
}

void
RdmaNicNetDevice::DoInitialize()
{
    GetEngine();
    TitaNetDevice::DoInitialize();
}

uint64_t
RdmaNicNetDevice::NowNs() const
{
    return TitaSimulatorImpl::NowNs();
}

eng::Engine&
RdmaNicNetDevice::GetEngine()
{
    if (!m_engine)
    {
        CreateEngine();
    }
    return *m_engine;
}

void
RdmaNicNetDevice::CreateEngine()
{
    eng::EngineConfig c = m_settings; // the attributes, checked as they were set
    m_address.CopyTo(c.mac);
    c.gid = ::tita::wire::Gid::from_ipv4(m_ipv4.Get());
    c.line_rate_bps = m_bps.GetBitRate();
    c.grow_on_demand = true; // thousands of mostly idle NICs: rings and wheel as they fill
    std::string sprayErr;
    NS_ABORT_MSG_IF(eng::check_spray(c.spray, c.path, &sprayErr) != 0, sprayErr);
    NS_ABORT_MSG_IF(c.spray.paths != 0 && !m_selectiveRepeat, "SprayPaths needs SelectiveRepeat");
    m_engine = std::make_unique<eng::Engine>(c, static_cast<eng::PacketIo*>(this));
    m_engine->set_path_hook(&RdmaNicNetDevice::OnPathChange, this);
    m_pd = m_engine->alloc_pd();
    const int rc = m_engine->create_cq(m_cqEntries, &m_cq);
    NS_ABORT_MSG_IF(rc != 0, "create_cq: " << rc);
    const int mr = m_engine->reg_phantom_mr(m_pd,
                                            kPhantomBase,
                                            kPhantomBytes,
                                            eng::kAccessLocalWrite | eng::kAccessRemoteWrite |
                                                eng::kAccessRemoteRead,
                                            &m_mr);
    NS_ABORT_MSG_IF(mr != 0, "reg_phantom_mr: " << mr);
    NS_LOG_INFO("engine up: " << m_ipv4 << " " << m_address << " " << m_bps << " base RTT "
                              << NanoSeconds(c.base_rtt_ns));
}

void
RdmaNicNetDevice::OnPathChange(void* self, const eng::PathEvent& e)
{
    static_cast<RdmaNicNetDevice*>(self)->m_pathTrace(e.qp_num,
                                                      static_cast<uint8_t>(e.reason),
                                                      e.old_dodge,
                                                      e.new_dodge);
}

// ---------------------------------------------------------------- QPs

uint32_t
RdmaNicNetDevice::CreateQp(uint32_t maxSendWr, uint32_t maxRecvWr)
{
    eng::QpInitAttr a;
    a.send_cq = m_cq;
    a.recv_cq = m_cq;
    a.max_send_wr = maxSendWr;
    a.max_recv_wr = maxRecvWr;
    a.max_sge = 1;
    uint32_t qpn = 0;
    if (GetEngine().create_qp(m_pd, a, &qpn) != 0)
    {
        return 0;
    }
    m_ccSeen.push_back({qpn, 0, 0});
    return qpn;
}

int
RdmaNicNetDevice::ConnectQp(uint32_t qpn, Ptr<RdmaNicNetDevice> peer, uint32_t peerQpn)
{
    eng::Engine& e = GetEngine();
    std::string err;
    eng::QpAttr a;
    a.qp_access_flags = eng::kAccessRemoteWrite | eng::kAccessRemoteRead;
    a.path_mtu = m_pathMtu;
    a.payload_bytes = m_payloadSize;
    a.dest_qp_num = peerQpn;
    a.ah_attr.dgid = ::tita::wire::Gid::from_ipv4(peer->GetIpv4().Get());
    peer->GetMacAddress().CopyTo(a.ah_attr.dmac);
    a.ah_attr.vlan = m_vlan;
    a.ah_attr.pcp = m_priority;
    a.recovery = m_selectiveRepeat ? eng::Recovery::kSelectiveRepeat : eng::Recovery::kGoBackN;
    a.peer_tita = true; // the peer is an RdmaNicNetDevice: its engine is tita's
    a.timeout = m_qpTimeout;
    a.retry_cnt = m_retryCnt;
    if (int rc = eng::connect_rc(e, qpn, a, &err); rc != 0)
    {
        NS_LOG_ERROR(err);
        return rc;
    }
    return 0;
}

int
RdmaNicNetDevice::SetCc(uint32_t qpn,
                        const std::string& algorithm,
                        const std::vector<std::string>& params)
{
    std::string err;
    const int rc = GetEngine().set_cc(qpn, algorithm, params, &err);
    NS_ABORT_MSG_IF(rc != 0, "set_cc: " << err);
    return rc;
}

int
RdmaNicNetDevice::PostWrite(uint32_t qpn,
                            uint64_t wrId,
                            uint32_t bytes,
                            bool withImm,
                            Ptr<RdmaNicNetDevice> peer)
{
    const eng::Sge sge{kPhantomBase, bytes, m_mr.lkey};
    eng::SendWr wr;
    wr.wr_id = wrId;
    wr.sg_list = &sge;
    wr.num_sge = bytes > 0 ? 1 : 0;
    wr.opcode = withImm ? eng::WrOpcode::kRdmaWriteWithImm : eng::WrOpcode::kRdmaWrite;
    wr.send_flags = eng::kSendSignaled;
    wr.imm_data = static_cast<uint32_t>(wrId);
    wr.rdma.remote_addr = peer->GetPhantomBase();
    wr.rdma.rkey = peer->GetPhantomRkey();
    const eng::SendWr* bad = nullptr;
    const int rc = GetEngine().post_send(qpn, &wr, &bad);
    Kick();
    return rc;
}

int
RdmaNicNetDevice::PostSend(uint32_t qpn, uint64_t wrId, uint32_t bytes)
{
    const eng::Sge sge{kPhantomBase, bytes, m_mr.lkey};
    eng::SendWr wr;
    wr.wr_id = wrId;
    wr.sg_list = &sge;
    wr.num_sge = bytes > 0 ? 1 : 0;
    wr.opcode = eng::WrOpcode::kSend;
    wr.send_flags = eng::kSendSignaled;
    const eng::SendWr* bad = nullptr;
    const int rc = GetEngine().post_send(qpn, &wr, &bad);
    Kick();
    return rc;
}

int
RdmaNicNetDevice::PostRecv(uint32_t qpn, uint64_t wrId)
{
    const eng::Sge sge{kPhantomBase, 0x7fff'ffffu, m_mr.lkey};
    eng::RecvWr wr;
    wr.wr_id = wrId;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    const eng::RecvWr* bad = nullptr;
    return GetEngine().post_recv(qpn, &wr, &bad);
}

int
RdmaNicNetDevice::DestroyQp(uint32_t qpn)
{
    auto it = std::find_if(m_ccSeen.begin(), m_ccSeen.end(), [qpn](const CcSeen& s) {
        return s.qpn == qpn;
    });
    if (it != m_ccSeen.end())
    {
        *it = m_ccSeen.back();
        m_ccSeen.pop_back();
    }
    return GetEngine().destroy_qp(qpn);
}

void
RdmaNicNetDevice::Kick()
{
    ArmWakeup(NowNs());
}

uint32_t
RdmaNicNetDevice::GetFullPayloadBytes() const
{
    eng::QpAttr a;
    a.path_mtu = m_pathMtu;
    a.payload_bytes = m_payloadSize;
    return a.full_payload_bytes();
}

uint64_t
RdmaNicNetDevice::GetEngineDrops() const
{
    return m_engine ? m_engine->counters().rx_dropped : 0;
}

// ---------------------------------------------------------------- engine host

uint32_t
RdmaNicNetDevice::tx_space()
{
    if (m_queuedFrames >= m_txRingFrames)
    {
        m_engineBlocked = true;
        return 0;
    }
    return m_txRingFrames - m_queuedFrames;
}

bool
RdmaNicNetDevice::HasMoreToSend() const
{
    return m_queuedFrames > 0 || m_engineBlocked;
}

void
RdmaNicNetDevice::transmit_burst(uint64_t, const eng::TxFrame* frames, uint32_t n)
{
    for (uint32_t i = 0; i < n; ++i)
    {
        Enqueue(frames[i]);
    }
}

void
RdmaNicNetDevice::Enqueue(const eng::TxFrame& f)
{
    TitaPacketPtr p;
    bool phantom = true;
    for (uint32_t i = 0; i < f.n_payload; ++i)
    {
        phantom &= f.payload[i].data == nullptr;
    }
    if (f.n_payload == 0 && f.tail_len == 0)
    {
        // ACK, NAK, CNP: one buffer; its telemetry trailer goes to the tail.
        p = TitaPacket::MakeControl(f.hdr, f.hdr_len);
    }
    else if (phantom && f.hdr_len <= TitaPacket::kHeadBytes && f.tail_len <= TitaPacket::kTailBytes)
    {
        const uint32_t payload = f.payload_len();
        if (m_settings.compute_icrc && payload > 0)
        {
            // The engine leaves the ICRC of phantom payload at 0; the bytes are
            // known zeros, so the host fills it in for captures that check it.
            static const uint8_t kZeros[4096 + 4] = {};
            uint8_t tail[TitaPacket::kTailBytes];
            std::memcpy(tail, f.tail, f.tail_len);
            ::tita::wire::EthernetView eth;
            ::tita::wire::parse_ethernet(f.hdr, f.hdr_len, &eth);
            const uint32_t l3 = eth.l3_offset;
            const uint32_t pad = ::tita::wire::pad_bytes(payload);
            ::tita::wire::Segment more[2] = {{kZeros, payload}, {kZeros, pad}};
            const uint32_t icrc = ::tita::wire::icrc_compute(f.hdr + l3, f.hdr_len - l3, {more, pad ? 2u : 1u});
            ::tita::wire::store_le32(tail + pad, icrc);
            p = TitaPacket::Make(f.hdr, f.hdr_len, payload, tail, f.tail_len);
        }
        else
        {
            p = TitaPacket::Make(f.hdr, f.hdr_len, payload, f.tail, f.tail_len);
        }
    }
    else
    {
        // Real memory behind the payload: the frame is copied as it is.
        m_txScratch.resize(TitaFrame::kMaxFrameBytes); // on first use: phantom payload never needs it
        const uint32_t n = f.len();
        f.copy_to(m_txScratch.data());
        p = TitaPacket::FromBytes(m_txScratch.data(), n);
    }
    if (m_engineTxTraced)
    {
        m_engineTxTrace(p->ToPacket());
    }
    const uint8_t prio = f.priority & 7;
    m_queuedBytes += p->GetSize();
    if (f.control && m_ackHighPriority)
    {
        m_controlQueue.push_back(std::move(p));
    }
    else
    {
        m_queue[prio].push_back(std::move(p));
    }
    ++m_queuedFrames;
    if (m_queueTraced)
    {
        m_queueTrace(m_queuedBytes);
    }
    TryTransmit();
}

TitaPacketPtr
RdmaNicNetDevice::DequeueNext()
{
    for (int prio = kPriorities; prio >= 0; --prio)
    {
        // kPriorities: the control queue (AckHighPriority), served first, never paused.
        auto& q = prio == kPriorities ? m_controlQueue : m_queue[prio];
        if (q.empty() || (prio < kPriorities && IsPaused(static_cast<uint8_t>(prio))))
        {
            continue;
        }
        TitaPacketPtr p = std::move(q.front());
        q.pop_front();
        --m_queuedFrames;
        m_queuedBytes -= p->GetSize();
        if (m_queueTraced)
        {
            m_queueTrace(m_queuedBytes);
        }
        return p;
    }
    return nullptr;
}

void
RdmaNicNetDevice::OnTransmitComplete()
{
    // Room in the ring again: the engine may have more to send.
    RunEngine();
}

void
RdmaNicNetDevice::OnResume(uint8_t)
{
    TryTransmit();
}

void
RdmaNicNetDevice::DoReceive(TitaPacketPtr p)
{
    eng::Engine& e = GetEngine();
    const uint32_t n = p->GetSize();
    if (n > TitaFrame::kMaxFrameBytes)
    {
        if (!m_dropTrace.IsEmpty())
        {
            m_dropTrace(p->ToPacket());
        }
        return;
    }
    // The buffer is all zeros but for the frame being received: only the real
    // bytes are written (and cleared after), virtual payload is already there.
    // The engine keeps nothing of it after receive() (it copies what it keeps),
    // so every NIC of a thread shares one; a receive inside a receive (none
    // today) would take a buffer of its own.
    thread_local std::vector<uint8_t> shared(TitaFrame::kMaxFrameBytes);
    thread_local bool sharedInUse = false;
    std::vector<uint8_t> own;
    const bool nested = sharedInUse;
    if (nested)
    {
        own.resize(TitaFrame::kMaxFrameBytes);
    }
    uint8_t* b = nested ? own.data() : shared.data();
    sharedInUse = true;
    const uint32_t head = p->HeadLen();
    const uint32_t payload = p->PayloadLen();
    const uint32_t tail = p->TailLen();
    std::memcpy(b, p->Head(), head);
    if (p->Body() != nullptr)
    {
        std::memcpy(b + head, p->Body(), payload);
    }
    std::memcpy(b + head + payload, p->Tail(), tail);
    e.receive(NowNs(), b, n);
    sharedInUse = nested;
    std::memset(b, 0, head);
    if (p->Body() != nullptr)
    {
        std::memset(b + head, 0, payload);
    }
    std::memset(b + head + payload, 0, tail);
    const uint64_t drops = e.counters().rx_dropped;
    if (drops != m_lastDrops)
    {
        m_lastDrops = drops;
        NS_LOG_LOGIC("engine dropped a frame of " << n << " bytes");
        if (!m_dropTrace.IsEmpty())
        {
            m_dropTrace(p->ToPacket());
        }
    }
    RunEngine();
}

void
RdmaNicNetDevice::OnWakeup()
{
    std::pop_heap(m_wakeups.begin(), m_wakeups.end(), std::greater<>());
    m_wakeups.pop_back();
    RunEngine();
}

void
RdmaNicNetDevice::ArmWakeup(uint64_t atNs)
{
    if (!m_wakeups.empty() && m_wakeups.front() <= atNs)
    {
        return; // an earlier (or the same) wakeup is armed; it re-arms when it fires
    }
    m_wakeups.push_back(atNs);
    std::push_heap(m_wakeups.begin(), m_wakeups.end(), std::greater<>());
    const Time at = NanoSeconds(atNs);
    const Time now = TitaSimulatorImpl::NowTime();
    m_wakeupEvent->Schedule(at > now ? at - now : Time(0));
}

void
RdmaNicNetDevice::RunEngine()
{
    m_engineBlocked = false;
    m_engine->poll(NowNs());
    DrainCompletions();
    ScheduleWakeup();
    if (m_ccTraced)
    {
        TraceCc();
    }
}

void
RdmaNicNetDevice::ScheduleWakeup()
{
    const uint64_t w = m_engine->next_wakeup_ns();
    if (w == UINT64_MAX)
    {
        return; // idle; a pending wakeup fires harmlessly
    }
    ArmWakeup(w);
}

void
RdmaNicNetDevice::DrainCompletions()
{
    if (m_draining)
    {
        // A completion callback made the engine run again: its own array.
        std::array<eng::WorkCompletion, 32> nested;
        DrainCompletions(nested.data());
        return;
    }
    m_draining = true;
    DrainCompletions(m_wc.data());
    m_draining = false;
}

void
RdmaNicNetDevice::DrainCompletions(eng::WorkCompletion* wc)
{
    for (;;)
    {
        const int n = m_engine->poll_cq(m_cq, 32, wc);
        for (int i = 0; i < n; ++i)
        {
            if (wc[i].status != eng::WcStatus::kSuccess)
            {
                NS_LOG_WARN("QP " << wc[i].qp_num << " WR " << wc[i].wr_id << ": "
                                  << eng::to_string(wc[i].status));
            }
            if (!m_completionCb.IsNull())
            {
                m_completionCb(this, wc[i]);
            }
        }
        if (n < 32)
        {
            return;
        }
    }
}

void
RdmaNicNetDevice::TraceCc()
{
    // The engine has no per-QP change hook: compare each live QP with what was
    // last reported. Only runs while someone listens to CcUpdate.
    eng::QpInfo info;
    for (auto& s : m_ccSeen)
    {
        if (m_engine->qp_info(s.qpn, &info) != 0)
        {
            continue;
        }
        if (info.rate_bps != s.rate || info.cwnd_bytes != s.cwnd)
        {
            s.rate = info.rate_bps;
            s.cwnd = info.cwnd_bytes;
            m_ccTrace(s.qpn, s.rate, s.cwnd);
        }
    }
}

} // namespace ns3
