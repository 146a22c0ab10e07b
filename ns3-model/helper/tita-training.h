// Training iterations on the simulated fabric: the GPUs of a training workload
// file (tita-training-file.h) placed on a multi-rail topology, each running the
// file's layers (forward, then input and weight gradients in reverse), its
// collectives as NCCL runs them (ring AllReduce, AllGather and ReduceScatter,
// All-to-All, pipeline send/recv, over C channels) through TitaCollective, every
// byte a real RDMA message through the engine. Placement, groups and semantics:
// doc/training.md. tita-sim's --workload=training is this class.
#pragma once

#include "tita-flow-manager.h"
#include "tita-notes.h"
#include "tita-output-writer.h"
#include "tita-training-file.h"
#include "tita-workload.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * How to run a file.
 */
struct TitaTrainingOptions
{
    uint32_t iterations = 1;
    uint32_t layers = 0;   ///< 0: every layer line; K: the first K (quick runs)
    uint32_t channels = 1; ///< NCCL channels: each collective split over C rings, one QP each
    bool pxn = false;      ///< All-to-All with PXN relay
    /// Rank order: false, Megatron's (TP fastest, then DP, then PP: TP groups in
    /// a server); true, DP fastest (DP groups in a server, TP across servers).
    bool dpFirst = false;
    /// Where each rank runs (placement=FILE, by rank); empty: rank r on server
    /// r / G, GPU r % G (G GPUs a server).
    std::vector<TitaRankPlace> placement;
    std::string placementPath; ///< for messages
    /// Ring order of a group that spans servers: false, rank order; true
    /// (ring=rail), NCCL's: each server's members in turn, every hop between
    /// servers on one rail (TitaTraining::RailRing).
    bool railRing = false;
    /// The analytical twin: no traffic, each collective lasts its
    /// TitaCollective::IdealNs (the bound an idle non-blocking fabric allows).
    bool analytical = false;
};

/**
 * \ingroup tita
 * One training run.
 *
 *   auto t = std::make_shared<TitaTraining>(mgr, file, opts);
 *   if (!t->Place(&err)) ...
 *   t->Start(Time(0));
 *   Simulator::Run();  // until t->IsDone()
 *   t->Write(out);
 */
class TitaTraining : public std::enable_shared_from_this<TitaTraining>
{
  public:
    /// One iteration as iterations.csv reports it.
    struct Iteration
    {
        Time start;
        Time end;
        uint64_t computeNs = 0; ///< the busiest GPU's compute
        uint64_t commNs = 0;    ///< that GPU's collectives, end - start summed
        uint64_t exposedNs = 0; ///< (end - start) - computeNs: what compute did not hide
        bool finished = false;
    };
    /// One collective as training_collectives.csv reports it.
    struct Collective
    {
        uint32_t id = 0;
        uint32_t iteration = 0;
        int32_t layer = -1; ///< -1 for pipeline send/recv
        std::string phase;  ///< fwd, ig, wg, pp_fwd, pp_bwd
        TitaTrainingGroup group = TitaTrainingGroup::kNone;
        uint32_t groupIndex = 0;
        TitaTrainingCollective type = TitaTrainingCollective::kNone;
        std::vector<uint32_t> ranks; ///< global ranks, in ring order
        uint64_t bytes = 0;
        Time start;
        Time end;
        uint64_t idealNs = 0; ///< the slowest channel's TitaCollective::IdealNs
        bool finished = false;
        double AlgBwGBps() const;
        double BusBwGBps() const; ///< nccl-tests' factors
    };

    TitaTraining(Ptr<TitaFlowManager> mgr, TitaTrainingFile file, TitaTrainingOptions opts);

    /// Maps ranks to GPUs (rank r on server r / gpus, GPU r % gpus) and builds
    /// the groups. False with a one-line message if the topology does not fit.
    bool Place(std::string* err);
    /// Starts the first iteration at `at`.
    void Start(Time at);
    bool IsDone() const { return m_done; }

    /// iterations.csv (with bound_ns, the analytical twin's iteration time,
    /// when `bound` is given), training_collectives.csv, training_trace.json.
    void Write(TitaOutputWriter& out, const TitaTraining* bound = nullptr) const;
    /// One line per iteration.
    void Describe(TitaNotes& notes, const TitaTraining* bound = nullptr) const;

    uint32_t GetGpus() const { return m_file.allGpus; }
    const TitaTrainingFile& GetFile() const { return m_file; }
    const std::vector<Iteration>& GetIterations() const { return m_iterations; }
    const std::vector<Collective>& GetCollectives() const { return m_collectives; }
    /// Payload bytes each GPU (global rank) received, over the whole run.
    const std::vector<uint64_t>& GetReceivedBytes() const { return m_recvBytes; }
    /// The GPU of a rank: (server, gpu index = rail).
    std::pair<uint32_t, uint32_t> GpuOf(uint32_t rank) const;
    /// `members` as NCCL orders a ring over servers: each server's members in
    /// turn, by GPU index, every other server's reversed, so the GPU a server
    /// is left from has the index of the one the next is entered at (with an
    /// even number of servers holding the same GPU indexes, every hop between
    /// servers stays on one rail).
    std::vector<uint32_t> RailRing(const std::vector<uint32_t>& members) const;
    /// The members of `rank`'s group of kind g, in ring order (empty for kPp).
    std::vector<uint32_t> GroupOf(TitaTrainingGroup g, uint32_t rank) const;

  private:
    // A communicator: its members and the collectives they call, in order.
    struct Pending
    {
        TitaTrainingCollective type = TitaTrainingCollective::kNone;
        uint64_t bytes = 0;
        int32_t layer = -1;
        std::string phase;
        uint32_t arrived = 0;
        std::vector<std::function<void()>> waiting;
    };
    struct Comm
    {
        TitaTrainingGroup group;
        uint32_t index;
        std::vector<uint32_t> members;
        std::map<uint64_t, Pending> calls; ///< by sequence number
        uint64_t next = 0;                 ///< the next sequence number to run
        bool running = false;
    };
    struct Span
    {
        uint64_t startNs;
        uint64_t endNs;
        uint32_t collective; ///< UINT32_MAX: compute
        const char* what;
        int32_t layer;
    };
    struct Gpu
    {
        std::map<uint32_t, uint64_t> seq; ///< comm -> calls made
        uint32_t pendingWg = 0;
        bool backwardDone = false;
        uint64_t computeNs = 0;
        uint64_t commNs = 0;
        std::vector<Span> spans;
    };

    uint32_t CommFor(TitaTrainingGroup g, uint32_t rank);
    uint32_t PairComm(uint32_t from, uint32_t to);
    /// `rank` calls collective `c` on comm; `then` runs at its end (empty: the
    /// caller goes on at once, as with a weight-gradient or a send).
    void Call(uint32_t comm, uint32_t rank, const TitaTrainingComm& c, int32_t layer, const char* phase,
              std::function<void()> then);
    void MaybeLaunch(uint32_t comm);
    void CollectiveDone(uint32_t comm, uint32_t id, const std::vector<std::function<void()>>& waiting);
    void Compute(uint32_t rank, uint64_t ns, const char* what, int32_t layer, std::function<void()> then);

    void BeginIteration();
    void Forward(uint32_t rank, uint32_t layer);
    void Backward(uint32_t rank, uint32_t layer);
    void GpuMaybeDone(uint32_t rank);

    Ptr<TitaFlowManager> m_mgr;
    TitaTrainingFile m_file;
    TitaTrainingOptions m_opts;
    uint32_t m_gpusPerServer = 0;
    std::vector<TitaCollective::Rank> m_place; ///< rank -> host, server, gpu
    std::vector<uint32_t> m_port1;             ///< dual-port NICs: rank -> port 1's host (odd channels)
    std::vector<Comm> m_comms;
    std::map<std::pair<uint32_t, uint64_t>, uint32_t> m_commIndex; ///< (group kind, key) -> comm
    std::vector<Gpu> m_gpus;
    std::vector<uint64_t> m_recvBytes;
    std::vector<Collective> m_collectives;
    std::vector<Iteration> m_iterations;
    uint32_t m_gpusDone = 0;
    bool m_done = false;
    int32_t m_nextCollectiveId = 0;
};

} // namespace ns3
