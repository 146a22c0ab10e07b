// Flows and messages between NICs: QPs created and connected on both engines,
// one RDMA WRITE per flow from phantom memory, completion times, the ideal FCT of
// the same flow alone in the empty network.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tita-network-helper.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

namespace ns3
{

/**
 * \ingroup tita
 * One flow (or collective message) as the runner reports it.
 */
struct TitaFlowRecord
{
    uint32_t id = 0;
    uint32_t src = 0; ///< host index
    uint32_t dst = 0;
    uint64_t bytes = 0;
    Time start;
    Time end;            ///< completion at the sender (WRITE) or the receiver (WRITE with immediate)
    uint64_t idealNs = 0; ///< the same flow alone in the empty network
    bool ok = true;      ///< false: it completed with an error status
    int32_t group = -1;  ///< collective index, -1 for plain flows
    int32_t step = -1;   ///< collective step
    uint32_t hops = 0;   ///< links on its path
    uint64_t reordered = 0; ///< data packets its receiver got out of PSN order (flows; 0 for messages)

    double Slowdown() const;
};

/**
 * \ingroup tita
 * Creates flows between hosts of a TitaNetworkHelper's network and watches them
 * complete.
 *
 * A flow gets its own QP pair (as in the HPCC simulator), connected RESET ->
 * INIT -> RTR -> RTS on both engines with each other's QPN, GID and MAC, with
 * the manager's congestion control; the sender posts one RDMA WRITE of the flow
 * size. FCT = sender completion - start. Both QPs are destroyed QpReclaimDelay
 * after completion (late duplicates find no QP rather than a new one).
 *
 * Messages (for collectives) reuse one QP pair per ordered host pair and are
 * RDMA WRITEs with immediate, so that the receiver learns when the data is there.
 *
 * Ideal FCT (as the HPCC simulator computes its standalone FCT): base RTT of
 * the pair (2 x propagation + one full packet's payload store-and-forward per
 * link) + (bytes + packets x per-packet overhead) x 8 / bottleneck rate, with
 * the overhead IdealOverheadBytes: by default Ethernet 14 + 802.1Q 4 + IPv4 20
 * + UDP 8 + BTH 12 + ICRC 4 + preamble, FCS and gap 24 = 86 bytes (no INT, as
 * the simulator); its own packets count 48 (PPP 14, IPv4 20, UDP 8, its
 * sequence header 6).
 */
class TitaFlowManager : public Object
{
  public:
    static TypeId GetTypeId();
    TitaFlowManager();

    void SetNetwork(TitaNetworkHelper* net);
    TitaNetworkHelper* GetNetwork() const { return m_net; }

    using Done = std::function<void(const TitaFlowRecord&)>;

    /// Starts a flow now; done (may be empty) runs at its completion. Returns its id.
    uint32_t StartFlow(uint32_t src, uint32_t dst, uint64_t bytes, Done done = {});
    /// Sends a message now over the (src, dst, channel) connection (one QP pair
    /// each: NCCL's channels); onSent at the sender's completion, onReceived at
    /// the receiver's (when all the data is there).
    uint32_t SendMessage(uint32_t src,
                         uint32_t dst,
                         uint64_t bytes,
                         int32_t group,
                         int32_t step,
                         uint16_t channel,
                         Done onSent,
                         Done onReceived);

    /// Dual-port NICs (TitaTopology::PortHost): partner[h] is the host index of
    /// the other port of host h's NIC, -1 for none. A message whose send fails
    /// (its QP broke: retries exhausted, e.g. behind a dead ToR) before it
    /// arrived is sent again between the two partner ports on the same channel,
    /// and that connection's later messages go there too: a ToR loss survived on
    /// the other port. A message that arrived and lost only its ACK counts as sent.
    void SetPortPartners(std::vector<int32_t> partner) { m_partner = std::move(partner); }
    /// Messages moved to the other ports so far.
    uint32_t GetPortFailovers() const { return m_portFailovers; }

    /// Intra-host (NVLink) messages as a fluid rather than packets, for runs
    /// whose NVLink traffic is too large to simulate packet by packet: a message
    /// between two NVLink NICs occupies the sender's and the receiver's port
    /// for its bytes and per-packet overheads at the port rate, after what each
    /// port already carries, and arrives after the pair's latency as
    /// IdealMessageNs counts it (alone, it takes exactly that). No packets, no
    /// congestion control, not in fct.csv. Off by default.
    void SetFluidNvlink(bool fluid) { m_fluidNvlink = fluid; }
    bool GetFluidNvlink() const { return m_fluidNvlink; }
    /// Messages sent as a fluid so far.
    uint64_t GetFluidMessages() const { return m_fluidMessages; }
    uint64_t IdealFctNs(uint32_t src, uint32_t dst, uint64_t bytes) const;
    /// IdealFctNs, except that a message shorter than a full packet is stored
    /// and forwarded at each link at its own size (IdealFctNs keeps the HPCC
    /// simulator's full-packet base RTT, which a ring of one-packet steps
    /// would pay thousands of times over).
    uint64_t IdealMessageNs(uint32_t src, uint32_t dst, uint64_t bytes) const;
    /// The pair's base RTT, as IdealFctNs counts it.
    uint64_t BaseRttNs(uint32_t src, uint32_t dst) const { return GetPairPath(src, dst).baseRttNs; }
    uint32_t GetStarted() const { return m_started; }
    uint32_t GetFinished() const { return m_finished; }
    uint32_t GetActive() const { return m_started - m_finished; }
    uint32_t GetFailed() const { return m_failed; }
    /// Senders' retransmission timeouts and retransmitted packets, summed over every
    /// flow that finished and every message connection (a lossless run has none).
    uint64_t GetTimeouts() const;
    uint64_t GetRetransmittedPackets() const;
    /// Congestion notifications the senders acted on (CNPs, or ACKs echoing CE).
    uint64_t GetCnpsReceived() const;
    /// Receivers' reordering: data packets that arrived out of PSN order, and
    /// those of them kept for later (selective repeat; the rest were dropped and
    /// NAKed, go-back-N), summed over every flow that finished and every message
    /// connection.
    uint64_t GetOutOfOrderPackets() const;
    uint64_t GetOutOfOrderBuffered() const;

    /// A flow in progress, for samplers: its record so far and its QP pair.
    struct ActiveFlow
    {
        const TitaFlowRecord* rec;
        uint32_t srcQpn;
        uint32_t dstQpn;
    };
    /// Flows started and not yet finished, in id order.
    std::vector<ActiveFlow> GetActiveFlows() const;

    /// Trace signature of FlowComplete.
    typedef void (*FlowTracedCallback)(const TitaFlowRecord& record);

    static constexpr uint32_t kPacketOverheadBytes = 86;

  private:
    struct Flow
    {
        TitaFlowRecord rec;
        uint32_t srcQpn = 0;
        uint32_t dstQpn = 0;
        bool message = false;
        bool sent = false;
        bool received = false;
        uint16_t channel = 0;
        Done onSent;
        Done onReceived;
    };
    /// OnCompletion's failover for a message whose send failed (SetPortPartners).
    bool PortFailover(Flow& f);
    std::vector<int32_t> m_partner;
    std::unordered_map<uint64_t, bool> m_moved; ///< connection keys moved to the partner ports
    uint32_t m_portFailovers = 0;
    struct Connection
    {
        uint32_t src = 0; ///< host indices
        uint32_t dst = 0;
        uint32_t srcQpn = 0;
        uint32_t dstQpn = 0;
    };
    /// What a flow's record needs of its path (computed once per host pair).
    struct PairPath
    {
        uint64_t baseRttNs = 0;
        uint64_t bottleneckBps = 0;
        uint32_t links = 0;
    };
    const PairPath& GetPairPath(uint32_t src, uint32_t dst) const;

    /// A new flow's record (id, ends, size, start now, ideal FCT, hops).
    Flow& NewFlow(uint32_t src, uint32_t dst, uint64_t bytes);
    void OnCompletion(Ptr<RdmaNicNetDevice> nic, const ::tita::engine::WorkCompletion& wc);
    /// A completion at time `at` (now, or earlier in a parallel run's serial phase).
    void Complete(const ::tita::engine::WorkCompletion& wc, Time at);
    /// The ns-3 node id of a host's NIC.
    uint32_t NodeOf(uint32_t host) const;
    mutable std::vector<uint32_t> m_nodeOfHost;
    void Finish(Flow& f);
    /// A connected QP pair whose queues hold `depth` work requests each.
    std::pair<uint32_t, uint32_t> MakeQpPair(uint32_t src, uint32_t dst, uint32_t depth);
    /// Work requests a message connection's queues hold (messages in flight).
    static constexpr uint32_t kMessageQueueDepth = 16;
    void Reclaim(uint32_t src, uint32_t srcQpn, uint32_t dst, uint32_t dstQpn);

    TitaNetworkHelper* m_net = nullptr;
    std::string m_cc;
    std::string m_ccParams;
    std::vector<std::string> m_ccParamList;
    Time m_reclaimDelay;
    void SendFluid(uint32_t src, uint32_t dst, uint64_t bytes, int32_t group, int32_t step, Done onSent,
                   Done onReceived);
    bool m_fluidNvlink = false;
    uint64_t m_fluidMessages = 0;
    std::vector<uint64_t> m_fluidTxFreeNs; ///< per host: when its port has sent what it was given
    std::vector<uint64_t> m_fluidRxFreeNs;
    uint32_t m_nextId = 1;
    uint32_t m_started = 0;
    uint32_t m_finished = 0;
    uint32_t m_failed = 0;
    uint64_t m_timeouts = 0;      ///< of finished flows' sender QPs
    uint64_t m_retransmitted = 0; ///< of finished flows' sender QPs
    uint64_t m_cnpsReceived = 0;  ///< of finished flows' sender QPs
    uint64_t m_outOfOrder = 0;    ///< of finished flows' receiver QPs
    uint64_t m_oooBuffered = 0;   ///< of finished flows' receiver QPs
    /// Sum `field` of the live message connections' sender (or receiver) QPs.
    uint64_t SumConnections(uint64_t(::tita::engine::QpCounters::*field), bool receiver = false) const;
    uint32_t m_mtu = 1024;  // payload of a full packet
    uint32_t m_overheadBytes = kPacketOverheadBytes;
    std::unordered_map<uint32_t, Flow> m_flows;
    std::unordered_map<uint64_t, Connection> m_connections;
    mutable std::unordered_map<uint64_t, PairPath> m_paths;
    TracedCallback<const TitaFlowRecord&> m_flowCompleteTrace;
};

} // namespace ns3
