// Traffic: Poisson arrivals with sizes from a CDF, flow lists in the HPCC
// simulator's format, incast, and collectives (ring AllReduce, All-to-All, and
// All-to-All with PXN-style relay through the intra-host fabric).
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "tita-flow-manager.h"

#include "ns3/nstime.h"

namespace ns3
{

/**
 * \ingroup tita
 * A flow-size distribution: `size_bytes cumulative_percent` per line, sampled
 * by linear interpolation between the points (as the HPCC artifact's traffic_gen).
 */
class TitaFlowSizeCdf
{
  public:
    /// False with a one-line message naming the file's line.
    bool Load(const std::string& path, std::string* err);
    /// The same from a stream; `name` is what messages call it.
    bool Read(std::istream& in, const std::string& name, std::string* err);
    /// The size at cumulative probability u in [0, 1).
    uint64_t Sample(double u) const;
    /// Mean of the interpolated distribution.
    double MeanBytes() const;

  private:
    std::vector<double> m_size;
    std::vector<double> m_cdf; // 0..1
};

/// One flow to start.
struct TitaFlowSpec
{
    uint32_t src = 0;
    uint32_t dst = 0;
    uint64_t bytes = 0;
    Time start;
};

/**
 * \ingroup tita
 * Flow lists and their scheduling.
 */
class TitaWorkload
{
  public:
    /// Every host of `hosts` starts flows with exponential inter-arrival times to a
    /// uniformly random other host of `hosts`, sizes from cdf; the rate makes the
    /// offered load (payload bytes / host link capacity) equal `load`. Flows start
    /// in [start, start + duration). Sorted by start time.
    static std::vector<TitaFlowSpec> Poisson(const TitaFlowSizeCdf& cdf,
                                             const std::vector<uint32_t>& hosts,
                                             double load,
                                             uint64_t hostRateBps,
                                             Time start,
                                             Time duration,
                                             uint64_t seed);

    /// The HPCC simulator's flow file: the number of flows, then
    /// `src dst priority dport size_bytes start_seconds` per line. Host ids are
    /// topology node ids (translated with hostOfNode). False with a one-line
    /// message naming the file's line.
    static bool ReadHpccFlows(const std::string& path,
                              const std::function<int32_t(uint32_t)>& hostOfNode,
                              std::vector<TitaFlowSpec>* out,
                              std::string* err);
    static bool ReadHpccFlows(std::istream& in,
                              const std::string& name,
                              const std::function<int32_t(uint32_t)>& hostOfNode,
                              std::vector<TitaFlowSpec>* out,
                              std::string* err);

    /// N senders to one receiver, each `bytes`, starting at start + U[0, jitter).
    static std::vector<TitaFlowSpec> Incast(const std::vector<uint32_t>& senders,
                                            uint32_t receiver,
                                            uint64_t bytes,
                                            Time start,
                                            Time jitter,
                                            uint64_t seed);

    /// Starts each flow at its time through mgr (one pending event at a time).
    static void Schedule(Ptr<TitaFlowManager> mgr, std::vector<TitaFlowSpec> flows);
};

/**
 * \ingroup tita
 * A collective over a set of ranks (GPUs), each step starting when the steps it
 * depends on have completed. Messages go through TitaFlowManager::SendMessage.
 */
class TitaCollective : public std::enable_shared_from_this<TitaCollective>
{
  public:
    struct Step
    {
        int32_t step;
        Time start; ///< first message of the step posted
        Time end;   ///< last message of the step received
        uint32_t messages = 0;
        uint64_t bytes = 0;
    };
    /// A rank: the host (NIC) it sends from and receives on by default.
    struct Rank
    {
        uint32_t host = 0;
        int32_t server = -1; ///< multi-rail: for intra-host and PXN routing
        int32_t gpu = -1;
    };

    TitaCollective(Ptr<TitaFlowManager> mgr, int32_t id, std::string kind);

    /// Ring AllReduce of `bytes`: 2(N-1) steps of bytes/N to the next rank; rank i
    /// starts step t when its step t-1 send has completed and it has received
    /// step t-1 from rank i-1.
    static std::shared_ptr<TitaCollective> RingAllReduce(Ptr<TitaFlowManager> mgr,
                                                         int32_t id,
                                                         std::vector<Rank> ranks,
                                                         uint64_t bytes,
                                                         Time at);

    /// Ring AllGather of a `bytes` output buffer (nccl-tests' size): N-1 steps
    /// of bytes/N to the next rank, ordered as the AllReduce's.
    static std::shared_ptr<TitaCollective> RingAllGather(Ptr<TitaFlowManager> mgr,
                                                         int32_t id,
                                                         std::vector<Rank> ranks,
                                                         uint64_t bytes,
                                                         Time at);
    /// Ring ReduceScatter of a `bytes` input buffer: N-1 steps of bytes/N.
    static std::shared_ptr<TitaCollective> RingReduceScatter(Ptr<TitaFlowManager> mgr,
                                                             int32_t id,
                                                             std::vector<Rank> ranks,
                                                             uint64_t bytes,
                                                             Time at);
    /// Pipeline send/recv: one message of `bytes` from ranks[0] to ranks[1].
    static std::shared_ptr<TitaCollective> SendRecv(Ptr<TitaFlowManager> mgr,
                                                    int32_t id,
                                                    std::vector<Rank> ranks,
                                                    uint64_t bytes,
                                                    Time at);

    /// All-to-All of `bytes` per rank (bytes/N to every other rank), all at once.
    /// With a multi-rail topology, ranks of the same server use the NVLink-like
    /// fabric when it exists.
    static std::shared_ptr<TitaCollective> AllToAll(Ptr<TitaFlowManager> mgr,
                                                    int32_t id,
                                                    std::vector<Rank> ranks,
                                                    uint64_t bytes,
                                                    Time at);

    /// All-to-All with PXN-style relay: step 0, every GPU hands over NVLink to each
    /// local GPU g' what goes to rail g' (everything for the remote GPUs g' plus the
    /// local one); step 1, once GPU g' has all of it, it sends one message per
    /// remote GPU g' over its own rail (rail-local traffic only). Needs a
    /// multi-rail topology with nvlink.
    static std::shared_ptr<TitaCollective> AllToAllPxn(Ptr<TitaFlowManager> mgr,
                                                       int32_t id,
                                                       std::vector<Rank> ranks,
                                                       uint64_t bytes,
                                                       Time at);

    bool IsDone() const { return m_done; }
    int32_t GetId() const { return m_id; }
    const std::string& GetKind() const { return m_kind; }
    Time GetStart() const { return m_start; }
    Time GetEnd() const { return m_end; }
    uint64_t GetBytes() const { return m_bytes; }
    uint32_t GetRanks() const { return static_cast<uint32_t>(m_ranks.size()); }
    const std::vector<Step>& GetSteps() const { return m_steps; }
    /// The completion time of the collective on a non-blocking network with
    /// nothing else running, as TitaFlowManager::IdealFctNs counts a flow's.
    /// Ring AllReduce: the longest chain of its 2(N-1) steps as RingTry orders
    /// them (a rank sends step t once its step t-1 is acknowledged, after
    /// TitaFlowManager::IdealMessageNs, and step t-1 from its left neighbour
    /// has arrived, that time less the ACK's way back), so a ring whose pairs
    /// differ in path length is not charged its slowest pair at every step.
    /// All-to-All (either kind): the busiest rank's bytes with per-packet
    /// overheads at its NIC's rate plus the network's largest base RTT (ranks
    /// of one server are counted at their NIC's rate too).
    uint64_t IdealNs() const;
    /// Payload bytes each rank has received so far (index as the ranks given).
    const std::vector<uint64_t>& GetReceivedBytes() const { return m_recvBytes; }
    /// The NCCL channel its messages use: each channel has its own QP per host
    /// pair (TitaFlowManager::SendMessage). Set before it starts.
    void SetChannel(uint16_t channel) { m_channel = channel; }
    /// IdealNs of a collective of `kind` (allreduce, allgather, reducescatter,
    /// alltoall, alltoall-pxn, sendrecv) that is never run.
    static uint64_t IdealNsOf(Ptr<TitaFlowManager> mgr, std::string kind, std::vector<Rank> ranks, uint64_t bytes);
    /// Runs when the collective completes.
    void SetDoneCallback(std::function<void(const TitaCollective&)> cb) { m_onDone = std::move(cb); }

  private:
    /// A collective of `kind` whose `start` runs at `at`.
    static std::shared_ptr<TitaCollective> Make(Ptr<TitaFlowManager> mgr,
                                                int32_t id,
                                                std::string kind,
                                                std::vector<Rank> ranks,
                                                uint64_t bytes,
                                                Time at,
                                                void (TitaCollective::*start)());
    uint64_t ChunkBytes() const; ///< one message of the collective's steps, at most
    /// Piece k of a rank's buffer split in N: bytes/N, the first bytes%N pieces
    /// one byte more, so that the pieces add up to the buffer exactly.
    uint64_t PieceBytes(uint32_t k) const;
    bool IsRing() const { return m_kind == "allreduce" || m_kind == "allgather" || m_kind == "reducescatter"; }
    uint32_t RingStepsFor(uint32_t n) const { return m_kind == "allreduce" ? 2 * (n - 1) : n - 1; }
    void StartRing();
    void StartSendRecv();
    void RingTry(uint32_t i);
    void StartAllToAll();
    void StartPxn();
    void PxnRelay(uint32_t relay);
    void Send(uint32_t src, uint32_t dst, uint64_t bytes, int32_t step,
              std::function<void()> onSent, std::function<void()> onReceived);
    void MessageReceived(int32_t step);
    void CheckDone();
    uint32_t HostFor(const Rank& from, const Rank& to, bool sending) const;

    Ptr<TitaFlowManager> m_mgr;
    int32_t m_id;
    std::string m_kind;
    std::vector<Rank> m_ranks;
    uint64_t m_bytes = 0;
    Time m_start;
    Time m_end;
    bool m_done = false;
    uint64_t m_outstanding = 0;
    std::vector<Step> m_steps;
    std::function<void(const TitaCollective&)> m_onDone;
    std::vector<uint64_t> m_recvBytes;
    uint16_t m_channel = 0;
    // ring
    uint32_t m_ringSteps = 0;
    uint64_t m_chunk = 0;
    std::vector<uint32_t> m_next;
    std::vector<uint32_t> m_sent;
    std::vector<uint32_t> m_recv;
    // pxn
    std::vector<uint32_t> m_pxnWaiting; // per rank: NVLink messages still to arrive
};

} // namespace ns3
