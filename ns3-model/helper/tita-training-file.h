// Training workload files in the plain-text format that SimAI's simulator reads
// and aliyun/aicb writes (doc/training.md, "The workload file"):
//
//   HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 16 ...
//   <number of layer lines>
//   name  -1  fwd_ns FWD_TYPE fwd_bytes  ig_ns IG_TYPE ig_bytes  wg_ns WG_TYPE wg_bytes  update_ns
//
// Times are nanoseconds (SimAI's tick is 1 ns: its ns-3 front end schedules
// NanoSeconds(ticks)); sizes are bytes, the collective's whole buffer as
// nccl-tests counts it. A type names the collective and its group: ALLREDUCE,
// ALLGATHER, REDUCESCATTER, ALLTOALL run in the tensor-parallel group in the
// forward and input-gradient phases and in the data-parallel group in the
// weight-gradient phase; a suffix _EP moves them to the expert-parallel group,
// _DP_EP to the expert-data-parallel group; NONE is no collective (its size is
// ignored). This reader only reads: the run is TitaTraining's.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace ns3
{

/// Which GPUs a collective runs among (doc/training.md, "Placement and groups").
enum class TitaTrainingGroup : uint8_t
{
    kNone,
    kTp,   ///< tensor parallel: model_parallel_NPU_group consecutive ranks
    kDp,   ///< data parallel: the ranks of the same TP index and PP stage
    kEp,   ///< expert parallel: ep consecutive ranks of a DP group
    kDpEp, ///< expert data parallel: the DP ranks of the same EP index
    kPp,   ///< pipeline neighbours (send/recv of pp_comm bytes)
};

enum class TitaTrainingCollective : uint8_t
{
    kNone,
    kAllReduce,
    kAllGather,
    kReduceScatter,
    kAllToAll,
    kSendRecv,
};

const char* TitaTrainingGroupName(TitaTrainingGroup g);           ///< "tp", "dp", "ep", "dp_ep", "pp"
const char* TitaTrainingCollectiveName(TitaTrainingCollective c); ///< "allreduce", ...

/// One phase's collective.
struct TitaTrainingComm
{
    TitaTrainingCollective type = TitaTrainingCollective::kNone;
    TitaTrainingGroup group = TitaTrainingGroup::kNone;
    uint64_t bytes = 0; ///< 0 when type is kNone
};

/// One layer line.
struct TitaTrainingLayer
{
    std::string name;
    uint64_t fwdComputeNs = 0;
    TitaTrainingComm fwd;
    uint64_t igComputeNs = 0; ///< input gradient
    TitaTrainingComm ig;
    uint64_t wgComputeNs = 0; ///< weight gradient
    TitaTrainingComm wg;
    uint64_t updateNs = 0;
    uint32_t line = 0; ///< its line in the file
};

/**
 * \ingroup tita
 * A whole file: the parallel layout and the layers of one GPU's iteration
 * (every GPU runs the same lines; AICB writes every micro-batch's layers, so ga
 * is already unrolled in them).
 *
 *   TitaTrainingFile f;
 *   if (!f.Load("data/training/tp8-dp2.txt", &err)) ... // "FILE:LINE: what is wrong"
 */
struct TitaTrainingFile
{
    std::string policy; ///< HYBRID_TRANSFORMER or HYBRID_TRANSFORMER_FWD_IN_BCKWD
    uint32_t tp = 1;    ///< model_parallel_NPU_group
    uint32_t ep = 1;
    uint32_t pp = 1;
    uint32_t vpp = 1;
    uint32_t ga = 1;
    uint32_t allGpus = 0;
    uint64_t ppCommBytes = 0; ///< pp_comm: activations (and their gradients) between stages
    std::vector<TitaTrainingLayer> layers;

    uint32_t Dp() const { return allGpus / (tp * pp); }

    /// False with "path:line: what is wrong" (one line) for a file that cannot be
    /// run as it is; nothing is kept from a bad file.
    bool Load(const std::string& path, std::string* err);
    /// The same from a stream; `name` is what messages call it.
    bool Read(std::istream& in, const std::string& name, std::string* err);
};

/// Where one rank runs, as a placement file says (its line, for messages).
struct TitaRankPlace
{
    uint32_t server = 0;
    uint32_t gpu = 0;
    uint64_t line = 0;
};

/**
 * \ingroup tita
 * A placement file (--workload=training:...,placement=FILE; doc/training.md,
 * "Placement and groups"): one line per rank, "RANK SERVER GPU", every rank
 * from 0 to ranks-1 once and no GPU twice. False with "path:line: what is
 * wrong" (or "path: ..." for a rank with no line); the topology's bounds are
 * checked where the ranks are placed (TitaTraining::Place).
 */
bool TitaLoadPlacement(const std::string& path, uint32_t ranks, std::vector<TitaRankPlace>* out, std::string* err);

} // namespace ns3
