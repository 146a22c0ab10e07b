// The glue of the interposition itself: the engine's numbers for opcodes,
// flags, states and SGEs checked against libibverbs' (so work requests,
// completions and QP attributes pass through without a table), and the
// library's unload. The entry points are in the files interpose.h lists.
#include <infiniband/verbs.h>

#include <cstddef>

#include "device.h"
#include "interpose.h"
#include "tita/engine/verbs.h"

namespace tita::verbs {
namespace {

namespace eng = tita::engine;

// ---------------------------------------------------------------- the same numbers

// One assertion per kind of number; `same` compares an engine value with
// libibverbs' whatever their integer types.
constexpr bool same(auto ours, auto theirs) { return static_cast<long long>(ours) == static_cast<long long>(theirs); }

static_assert(same(eng::WrOpcode::kRdmaWrite, IBV_WR_RDMA_WRITE) &&
                  same(eng::WrOpcode::kRdmaWriteWithImm, IBV_WR_RDMA_WRITE_WITH_IMM) &&
                  same(eng::WrOpcode::kSend, IBV_WR_SEND) && same(eng::WrOpcode::kSendWithImm, IBV_WR_SEND_WITH_IMM) &&
                  same(eng::WrOpcode::kRdmaRead, IBV_WR_RDMA_READ) &&
                  same(eng::WrOpcode::kAtomicCmpAndSwp, IBV_WR_ATOMIC_CMP_AND_SWP) &&
                  same(eng::WrOpcode::kAtomicFetchAndAdd, IBV_WR_ATOMIC_FETCH_AND_ADD),
              "work request opcodes");
static_assert(same(eng::kSendFence, IBV_SEND_FENCE) && same(eng::kSendSignaled, IBV_SEND_SIGNALED) &&
                  same(eng::kSendSolicited, IBV_SEND_SOLICITED) && same(eng::kSendInline, IBV_SEND_INLINE),
              "send flags");
static_assert(same(eng::kAccessLocalWrite, IBV_ACCESS_LOCAL_WRITE) &&
                  same(eng::kAccessRemoteWrite, IBV_ACCESS_REMOTE_WRITE) &&
                  same(eng::kAccessRemoteRead, IBV_ACCESS_REMOTE_READ) &&
                  same(eng::kAccessRemoteAtomic, IBV_ACCESS_REMOTE_ATOMIC),
              "access flags");
static_assert(same(eng::WcStatus::kLocProtErr, IBV_WC_LOC_PROT_ERR) &&
                  same(eng::WcStatus::kWrFlushErr, IBV_WC_WR_FLUSH_ERR) &&
                  same(eng::WcStatus::kRemAccessErr, IBV_WC_REM_ACCESS_ERR) &&
                  same(eng::WcStatus::kRetryExcErr, IBV_WC_RETRY_EXC_ERR) &&
                  same(eng::WcStatus::kRnrRetryExcErr, IBV_WC_RNR_RETRY_EXC_ERR),
              "completion statuses");
static_assert(same(eng::WcOpcode::kCompSwap, IBV_WC_COMP_SWAP) &&
                  same(eng::WcOpcode::kRecvRdmaWithImm, IBV_WC_RECV_RDMA_WITH_IMM),
              "completion opcodes");
static_assert(same(eng::QpState::kError, IBV_QPS_ERR) && same(eng::QpState::kRts, IBV_QPS_RTS), "QP states");
static_assert(same(eng::kQpState, IBV_QP_STATE) && same(eng::kQpAv, IBV_QP_AV) && same(eng::kQpDestQpn, IBV_QP_DEST_QPN) &&
                  same(eng::kQpMaxDestRdAtomic, IBV_QP_MAX_DEST_RD_ATOMIC) &&
                  same(eng::kQpRateLimit, IBV_QP_RATE_LIMIT) && same(eng::kQpCap, IBV_QP_CAP) &&
                  same(eng::kQpPathMigState, IBV_QP_PATH_MIG_STATE) &&
                  same(eng::kQpMinRnrTimer, IBV_QP_MIN_RNR_TIMER) && same(eng::kQpSqPsn, IBV_QP_SQ_PSN),
              "QP attribute mask bits");
// ibv_sge and the engine's Sge are the same 16 bytes: SGE lists pass through.
static_assert(sizeof(eng::Sge) == sizeof(ibv_sge) && offsetof(eng::Sge, addr) == offsetof(ibv_sge, addr) &&
                  offsetof(eng::Sge, length) == offsetof(ibv_sge, length) &&
                  offsetof(eng::Sge, lkey) == offsetof(ibv_sge, lkey),
              "SGE layout");

}  // namespace

// ---------------------------------------------------------------- unload

__attribute__((destructor)) static void tita_verbs_unload() {
  cm_shutdown();
  Device::shutdown();
}

}  // namespace tita::verbs
