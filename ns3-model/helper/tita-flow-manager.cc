#include "tita-flow-manager.h"

#include "tita-simulator-impl.h"
#include "tita-units.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaFlowManager");
NS_OBJECT_ENSURE_REGISTERED(TitaFlowManager);

namespace eng = ::tita::engine;

double
TitaFlowRecord::Slowdown() const
{
    const double fct = (end - start).GetNanoSeconds();
    return idealNs > 0 ? std::max(1.0, fct / static_cast<double>(idealNs)) : 0.0;
}

TypeId
TitaFlowManager::GetTypeId()
{
    static TypeId tid =
        TypeId("ns3::TitaFlowManager")
            .SetParent<Object>()
            .SetGroupName("Tita")
            .AddConstructor<TitaFlowManager>()
            .AddAttribute("Cc",
                          "Congestion control of new QPs: none dcqcn timely hpcc swift powertcp nscc tita",
                          StringValue("none"),
                          MakeStringAccessor(&TitaFlowManager::m_cc),
                          MakeStringChecker())
            .AddAttribute("CcParams",
                          "Comma-separated name=value parameters of the congestion control (cc::Params)",
                          StringValue(""),
                          MakeStringAccessor(&TitaFlowManager::m_ccParams),
                          MakeStringChecker())
            .AddAttribute("IdealOverheadBytes",
                          "Per-packet bytes the ideal FCT adds to the payload: 86 (Ethernet, "
                          "802.1Q, IPv4, UDP, BTH, ICRC, preamble, FCS, gap), or 48 to compute it "
                          "as the HPCC simulator's standalone FCT does",
                          UintegerValue(kPacketOverheadBytes),
                          MakeUintegerAccessor(&TitaFlowManager::m_overheadBytes),
                          MakeUintegerChecker<uint32_t>())
            .AddAttribute("QpReclaimDelay",
                          "Time after a flow completes before its QPs are destroyed",
                          TimeValue(MilliSeconds(1)),
                          MakeTimeAccessor(&TitaFlowManager::m_reclaimDelay),
                          MakeTimeChecker(Time(0)))
            .AddTraceSource("FlowComplete",
                            "A flow or message completed",
                            MakeTraceSourceAccessor(&TitaFlowManager::m_flowCompleteTrace),
                            "ns3::TitaFlowManager::FlowTracedCallback");
    return tid;
}

TitaFlowManager::TitaFlowManager()
    : m_reclaimDelay(MilliSeconds(1))
{
}

void
TitaFlowManager::SetNetwork(TitaNetworkHelper* net)
{
    m_net = net;
    m_paths.clear();
    for (uint32_t h = 0; h < net->GetNHosts(); ++h)
    {
        net->GetNic(h)->SetCompletionCallback(MakeCallback(&TitaFlowManager::OnCompletion, this));
    }
    if (net->GetNHosts() > 0)
    {
        m_mtu = net->GetNic(0)->GetFullPayloadBytes();
    }
    std::string err;
    NS_ABORT_MSG_IF(!TitaCcParams(m_cc, m_ccParams, &m_ccParamList, &err), err);
}

const TitaFlowManager::PairPath&
TitaFlowManager::GetPairPath(uint32_t src, uint32_t dst) const
{
    auto [it, fresh] = m_paths.try_emplace(uint64_t{src} << 32 | dst);
    if (fresh)
    {
        const TitaNetworkHelper::PathInfo p = m_net->GetPath(src, dst);
        it->second.links = p.links;
        it->second.bottleneckBps = p.bottleneckBps;
        it->second.baseRttNs = p.links ? m_net->GetBaseRttNs(src, dst, m_mtu) : 0;
    }
    return it->second;
}

std::vector<TitaFlowManager::ActiveFlow>
TitaFlowManager::GetActiveFlows() const
{
    std::vector<ActiveFlow> out;
    for (const auto& [id, f] : m_flows)  // finished flows are erased at once
    {
        out.push_back({&f.rec, f.srcQpn, f.dstQpn});
    }
    std::sort(out.begin(), out.end(), [](const ActiveFlow& a, const ActiveFlow& b) {
        return a.rec->id < b.rec->id;
    });
    return out;
}

uint64_t
TitaFlowManager::IdealFctNs(uint32_t src, uint32_t dst, uint64_t bytes) const
{
    const PairPath& p = GetPairPath(src, dst);
    if (p.links == 0)
    {
        return 0;
    }
    const uint64_t packets = ::tita::engine::packets_for(bytes, m_mtu);
    const uint64_t wire = bytes + packets * m_overheadBytes;
    const double ns = static_cast<double>(p.baseRttNs) +
                      static_cast<double>(wire) * 8e9 / static_cast<double>(p.bottleneckBps);
    return static_cast<uint64_t>(ns + 0.5);
}

uint64_t
TitaFlowManager::IdealMessageNs(uint32_t src, uint32_t dst, uint64_t bytes) const
{
    const uint64_t full = IdealFctNs(src, dst, bytes);
    if (bytes >= m_mtu || full == 0)
    {
        return full;
    }
    return full - BaseRttNs(src, dst) + m_net->GetBaseRttNs(src, dst, static_cast<uint32_t>(bytes));
}

uint32_t
TitaFlowManager::NodeOf(uint32_t host) const
{
    if (m_nodeOfHost.size() != m_net->GetNHosts())
    {
        m_nodeOfHost.resize(m_net->GetNHosts());
        for (uint32_t h = 0; h < m_nodeOfHost.size(); ++h)
        {
            m_nodeOfHost[h] = m_net->GetNic(h)->GetNode()->GetId();
        }
    }
    return m_nodeOfHost[host];
}

// Each NIC is called as its own node (in a parallel run: in its logical
// process; these calls come from the serial phase).
std::pair<uint32_t, uint32_t>
TitaFlowManager::MakeQpPair(uint32_t src, uint32_t dst, uint32_t depth)
{
    Ptr<RdmaNicNetDevice> a = m_net->GetNic(src);
    Ptr<RdmaNicNetDevice> b = m_net->GetNic(dst);
    uint32_t qa = 0;
    uint32_t qb = 0;
    {
        TitaSimulatorImpl::NodeScope in(NodeOf(src));
        qa = a->CreateQp(depth, depth);
    }
    {
        TitaSimulatorImpl::NodeScope in(NodeOf(dst));
        qb = b->CreateQp(depth, depth);
    }
    NS_ABORT_MSG_IF(qa == 0 || qb == 0, "out of QPs (raise ns3::RdmaNicNetDevice::MaxQps)");
    {
        TitaSimulatorImpl::NodeScope in(NodeOf(src));
        NS_ABORT_MSG_IF(a->ConnectQp(qa, b, qb) != 0, "cannot connect QPs");
    }
    {
        TitaSimulatorImpl::NodeScope in(NodeOf(dst));
        NS_ABORT_MSG_IF(b->ConnectQp(qb, a, qa) != 0, "cannot connect QPs");
    }
    {
        TitaSimulatorImpl::NodeScope in(NodeOf(src));
        a->SetCc(qa, m_cc, m_ccParamList);
    }
    {
        TitaSimulatorImpl::NodeScope in(NodeOf(dst));
        b->SetCc(qb, m_cc, m_ccParamList);
    }
    return {qa, qb};
}

TitaFlowManager::Flow&
TitaFlowManager::NewFlow(uint32_t src, uint32_t dst, uint64_t bytes)
{
    const uint32_t id = m_nextId++;
    Flow& f = m_flows[id];
    f.rec.id = id;
    f.rec.src = src;
    f.rec.dst = dst;
    f.rec.bytes = bytes;
    f.rec.start = Simulator::Now();
    f.rec.idealNs = IdealFctNs(src, dst, bytes);
    f.rec.hops = GetPairPath(src, dst).links;
    return f;
}

uint32_t
TitaFlowManager::StartFlow(uint32_t src, uint32_t dst, uint64_t bytes, Done done)
{
    NS_ABORT_MSG_IF(bytes > 0x7fffffffULL, "flows above 2 GiB are not supported (one WR)");
    Flow& f = NewFlow(src, dst, bytes);
    const uint32_t id = f.rec.id;
    f.onSent = std::move(done);
    // One WRITE and no receive: queues of one (a QP's queues are most of its
    // memory, and a busy fabric holds tens of thousands of flows' QPs).
    std::tie(f.srcQpn, f.dstQpn) = MakeQpPair(src, dst, 1);
    ++m_started;
    TitaSimulatorImpl::NodeScope in(NodeOf(src));
    m_net->GetNic(src)->PostWrite(f.srcQpn, id, static_cast<uint32_t>(bytes), false, m_net->GetNic(dst));
    NS_LOG_LOGIC("flow " << id << " " << src << " -> " << dst << " " << bytes << " B");
    return id;
}

uint32_t
TitaFlowManager::SendMessage(uint32_t src,
                             uint32_t dst,
                             uint64_t bytes,
                             int32_t group,
                             int32_t step,
                             uint16_t channel,
                             Done onSent,
                             Done onReceived)
{
    NS_ABORT_MSG_IF(bytes > 0x7fffffffULL, "messages above 2 GiB are not supported (one WR)");
    if (m_fluidNvlink)
    {
        const TitaTopology& t = m_net->GetTopology();
        if (t.Vertices()[t.Hosts()[src]].nvlink && t.Vertices()[t.Hosts()[dst]].nvlink)
        {
            SendFluid(src, dst, bytes, group, step, std::move(onSent), std::move(onReceived));
            return 0;
        }
    }
    NS_ABORT_MSG_IF(src >= (1U << 24) || dst >= (1U << 24), "host index above 2^24");
    uint64_t key = uint64_t{src} << 40 | uint64_t{dst} << 16 | channel;
    if (!m_moved.empty() && m_moved.count(key) != 0)
    {
        src = static_cast<uint32_t>(m_partner[src]);
        dst = static_cast<uint32_t>(m_partner[dst]);
        key = uint64_t{src} << 40 | uint64_t{dst} << 16 | channel;
    }
    auto it = m_connections.find(key);
    if (it == m_connections.end())
    {
        Connection c;
        c.src = src;
        c.dst = dst;
        std::tie(c.srcQpn, c.dstQpn) = MakeQpPair(src, dst, kMessageQueueDepth);
        it = m_connections.emplace(key, c).first;
    }
    Flow& f = NewFlow(src, dst, bytes);
    const uint32_t id = f.rec.id;
    f.rec.group = group;
    f.rec.step = step;
    f.srcQpn = it->second.srcQpn;
    f.dstQpn = it->second.dstQpn;
    f.message = true;
    f.channel = channel;
    f.onSent = std::move(onSent);
    f.onReceived = std::move(onReceived);
    ++m_started;
    Ptr<RdmaNicNetDevice> b = m_net->GetNic(dst);
    {
        TitaSimulatorImpl::NodeScope in(NodeOf(dst));
        NS_ABORT_MSG_IF(b->PostRecv(f.dstQpn, id) != 0, "receive queue full on host " << dst);
    }
    TitaSimulatorImpl::NodeScope in(NodeOf(src));
    const int rc = m_net->GetNic(src)->PostWrite(f.srcQpn, id, static_cast<uint32_t>(bytes), true, b);
    NS_ABORT_MSG_IF(rc != 0, "send queue full on host " << src << " (rc " << rc << ")");
    return id;
}

void
TitaFlowManager::SendFluid(uint32_t src,
                           uint32_t dst,
                           uint64_t bytes,
                           int32_t group,
                           int32_t step,
                           Done onSent,
                           Done onReceived)
{
    const auto hosts = m_net->GetTopology().Hosts().size();
    m_fluidTxFreeNs.resize(hosts, 0);
    m_fluidRxFreeNs.resize(hosts, 0);
    // The ports' time: the serialisation IdealFctNs counts (its base RTT
    // aside); the rest of IdealMessageNs is latency, the ACK's way back last.
    const uint64_t busyNs = IdealFctNs(src, dst, bytes) - BaseRttNs(src, dst);
    const uint64_t ackNs = m_net->GetPath(src, dst).delayNs;
    const uint64_t aloneNs = IdealMessageNs(src, dst, bytes);
    const uint64_t latencyNs = aloneNs - std::min(aloneNs, busyNs + ackNs);
    const auto now = static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
    const uint64_t start = std::max({now, m_fluidTxFreeNs[src], m_fluidRxFreeNs[dst]});
    m_fluidTxFreeNs[src] = m_fluidRxFreeNs[dst] = start + busyNs;
    const uint64_t arrive = start + busyNs + latencyNs;
    TitaFlowRecord rec;
    rec.id = 0;
    rec.src = src;
    rec.dst = dst;
    rec.bytes = bytes;
    rec.start = Simulator::Now();
    rec.end = NanoSeconds(arrive);
    rec.idealNs = aloneNs;
    rec.group = group;
    rec.step = step;
    ++m_fluidMessages;
    Simulator::Schedule(NanoSeconds(arrive - now), [rec, onReceived] {
        if (onReceived)
        {
            onReceived(rec);
        }
    });
    Simulator::Schedule(NanoSeconds(arrive + ackNs - now), [rec, onSent] {
        if (onSent)
        {
            onSent(rec);
        }
    });
}

void
TitaFlowManager::OnCompletion(Ptr<RdmaNicNetDevice>, const eng::WorkCompletion& wc)
{
    // In a parallel run this comes from a NIC's logical process, and what it
    // does (flow records, the next message of a collective, output rows)
    // touches others: the serial phase after the window does it, with the
    // completion's time.
    if (TitaSimulatorImpl::InLpRun())
    {
        const Time at = TitaSimulatorImpl::NowTime();
        TitaSimulatorImpl::Defer([this, wc, at] { Complete(wc, at); });
        return;
    }
    Complete(wc, Simulator::Now());
}

void
TitaFlowManager::Complete(const eng::WorkCompletion& wc, Time at)
{
    const bool recv = wc.opcode == eng::WcOpcode::kRecv || wc.opcode == eng::WcOpcode::kRecvRdmaWithImm;
    const uint32_t id = recv && wc.with_imm ? wc.imm_data : static_cast<uint32_t>(wc.wr_id);
    auto it = m_flows.find(id);
    if (it == m_flows.end())
    {
        return;
    }
    Flow& f = it->second;
    if (wc.status != eng::WcStatus::kSuccess)
    {
        if (!recv && f.message && !m_partner.empty())
        {
            if (f.received)
            {
                // It arrived; only its acknowledgement was lost: sent.
                f.sent = true;
                if (f.onSent)
                {
                    f.onSent(f.rec);
                }
                Finish(f);
                m_flows.erase(id);
                return;
            }
            if (PortFailover(f))
            {
                m_flows.erase(id);
                return;
            }
        }
        f.rec.ok = false;
    }
    if (recv)
    {
        f.received = true;
        if (f.message)
        {
            f.rec.end = at;
            if (f.onReceived)
            {
                f.onReceived(f.rec);
            }
        }
    }
    else
    {
        f.sent = true;
        if (!f.message)
        {
            f.rec.end = at;
        }
        if (f.onSent)
        {
            f.onSent(f.rec);
        }
    }
    const bool complete = f.message ? (f.sent && f.received) || !f.rec.ok : f.sent;
    if (complete)
    {
        Finish(f);
        m_flows.erase(id);
    }
}

bool
TitaFlowManager::PortFailover(Flow& f)
{
    const uint32_t src = f.rec.src;
    const uint32_t dst = f.rec.dst;
    if (src >= m_partner.size() || dst >= m_partner.size() || m_partner[src] < 0 || m_partner[dst] < 0)
    {
        return false;
    }
    const uint64_t key = uint64_t{src} << 40 | uint64_t{dst} << 16 | f.channel;
    // Once moved, a connection stays on the partner ports; a message failing
    // there has nowhere else to go (the partner of a moved connection's ports
    // is where it came from).
    for (const auto& [k, moved] : m_moved)
    {
        const auto ps = static_cast<uint32_t>(m_partner[k >> 40]);
        const auto pd = static_cast<uint32_t>(m_partner[(k >> 16) & 0xffffff]);
        if (ps == src && pd == dst && (k & 0xffff) == f.channel)
        {
            return false;
        }
    }
    m_moved[key] = true;
    ++m_portFailovers;
    ++m_finished; // this try ends here; the message starts again on the partners
    SendMessage(src, dst, f.rec.bytes, f.rec.group, f.rec.step, f.channel, std::move(f.onSent),
                std::move(f.onReceived));
    return true;
}

uint64_t
TitaFlowManager::SumConnections(uint64_t eng::QpCounters::*field, bool receiver) const
{
    uint64_t n = 0;
    for (const auto& [key, c] : m_connections)
    {
        const uint32_t host = receiver ? c.dst : c.src;
        if (const auto* q = m_net->GetNic(host)->GetEngine().qp_counters(receiver ? c.dstQpn : c.srcQpn))
        {
            n += q->*field;
        }
    }
    return n;
}

uint64_t
TitaFlowManager::GetTimeouts() const
{
    return m_timeouts + SumConnections(&eng::QpCounters::timeouts);
}

uint64_t
TitaFlowManager::GetRetransmittedPackets() const
{
    return m_retransmitted + SumConnections(&eng::QpCounters::retransmitted_packets);
}

uint64_t
TitaFlowManager::GetCnpsReceived() const
{
    return m_cnpsReceived + SumConnections(&eng::QpCounters::cnps_received);
}

uint64_t
TitaFlowManager::GetOutOfOrderPackets() const
{
    return m_outOfOrder + SumConnections(&eng::QpCounters::out_of_order_received, true);
}

uint64_t
TitaFlowManager::GetOutOfOrderBuffered() const
{
    return m_oooBuffered + SumConnections(&eng::QpCounters::ooo_buffered, true);
}

void
TitaFlowManager::Finish(Flow& f)
{
    ++m_finished;
    if (!f.message)
    {
        // The sender's counters are final: everything it sent is acknowledged;
        // so are the receiver's (everything arrived before the last ACK).
        if (const auto* q = m_net->GetNic(f.rec.src)->GetEngine().qp_counters(f.srcQpn))
        {
            m_timeouts += q->timeouts;
            m_retransmitted += q->retransmitted_packets;
            m_cnpsReceived += q->cnps_received;
        }
        if (const auto* q = m_net->GetNic(f.rec.dst)->GetEngine().qp_counters(f.dstQpn))
        {
            f.rec.reordered = q->out_of_order_received;
            m_outOfOrder += q->out_of_order_received;
            m_oooBuffered += q->ooo_buffered;
        }
    }
    if (!f.rec.ok)
    {
        ++m_failed;
    }
    m_flowCompleteTrace(f.rec);
    if (!f.message)
    {
        // From the completion (the serial phase of a parallel run comes a
        // little later).
        Simulator::Schedule(m_reclaimDelay + f.rec.end - Simulator::Now(),
                            &TitaFlowManager::Reclaim,
                            this,
                            f.rec.src,
                            f.srcQpn,
                            f.rec.dst,
                            f.dstQpn);
    }
}

void
TitaFlowManager::Reclaim(uint32_t src, uint32_t srcQpn, uint32_t dst, uint32_t dstQpn)
{
    {
        TitaSimulatorImpl::NodeScope in(NodeOf(src));
        m_net->GetNic(src)->DestroyQp(srcQpn);
    }
    TitaSimulatorImpl::NodeScope in(NodeOf(dst));
    m_net->GetNic(dst)->DestroyQp(dstQpn);
}

} // namespace ns3
