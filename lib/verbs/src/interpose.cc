// The glue of the interposition itself: the engine's numbers for opcodes,
// flags, states and SGEs checked against libibverbs' (so work requests,
// completions and QP attributes pass through without a table), and the
// library's unload. The entry points are in the files interpose.h lists.
#include <infiniband/verbs.h>

#include <cstddef>

#include "device.h"
#include "tita/engine/verbs.h"

namespace tita::verbs {
namespace {

namespace eng = tita::engine;

// ---------------------------------------------------------------- the same numbers

static_assert(static_cast<int>(eng::WrOpcode::kRdmaWrite) == IBV_WR_RDMA_WRITE);
static_assert(static_cast<int>(eng::WrOpcode::kRdmaWriteWithImm) == IBV_WR_RDMA_WRITE_WITH_IMM);
static_assert(static_cast<int>(eng::WrOpcode::kSend) == IBV_WR_SEND);
static_assert(static_cast<int>(eng::WrOpcode::kSendWithImm) == IBV_WR_SEND_WITH_IMM);
static_assert(static_cast<int>(eng::WrOpcode::kRdmaRead) == IBV_WR_RDMA_READ);
static_assert(static_cast<int>(eng::WrOpcode::kAtomicCmpAndSwp) == IBV_WR_ATOMIC_CMP_AND_SWP);
static_assert(static_cast<int>(eng::WrOpcode::kAtomicFetchAndAdd) == IBV_WR_ATOMIC_FETCH_AND_ADD);
constexpr unsigned u(auto v) { return static_cast<unsigned>(v); }
static_assert(u(eng::kSendFence) == IBV_SEND_FENCE && u(eng::kSendSignaled) == IBV_SEND_SIGNALED &&
              u(eng::kSendSolicited) == IBV_SEND_SOLICITED && u(eng::kSendInline) == IBV_SEND_INLINE);
static_assert(u(eng::kAccessLocalWrite) == IBV_ACCESS_LOCAL_WRITE && u(eng::kAccessRemoteWrite) == IBV_ACCESS_REMOTE_WRITE &&
              u(eng::kAccessRemoteRead) == IBV_ACCESS_REMOTE_READ &&
              u(eng::kAccessRemoteAtomic) == IBV_ACCESS_REMOTE_ATOMIC);
static_assert(static_cast<int>(eng::WcStatus::kLocProtErr) == IBV_WC_LOC_PROT_ERR);
static_assert(static_cast<int>(eng::WcStatus::kWrFlushErr) == IBV_WC_WR_FLUSH_ERR);
static_assert(static_cast<int>(eng::WcStatus::kRemAccessErr) == IBV_WC_REM_ACCESS_ERR);
static_assert(static_cast<int>(eng::WcStatus::kRetryExcErr) == IBV_WC_RETRY_EXC_ERR);
static_assert(static_cast<int>(eng::WcStatus::kRnrRetryExcErr) == IBV_WC_RNR_RETRY_EXC_ERR);
static_assert(static_cast<int>(eng::WcOpcode::kCompSwap) == IBV_WC_COMP_SWAP);
static_assert(static_cast<int>(eng::WcOpcode::kRecvRdmaWithImm) == IBV_WC_RECV_RDMA_WITH_IMM);
static_assert(static_cast<int>(eng::QpState::kError) == IBV_QPS_ERR && static_cast<int>(eng::QpState::kRts) == IBV_QPS_RTS);
static_assert(u(eng::kQpState) == IBV_QP_STATE && u(eng::kQpAv) == IBV_QP_AV && u(eng::kQpDestQpn) == IBV_QP_DEST_QPN &&
              u(eng::kQpMaxDestRdAtomic) == IBV_QP_MAX_DEST_RD_ATOMIC && u(eng::kQpRateLimit) == IBV_QP_RATE_LIMIT &&
              u(eng::kQpCap) == IBV_QP_CAP && u(eng::kQpPathMigState) == IBV_QP_PATH_MIG_STATE &&
              u(eng::kQpMinRnrTimer) == IBV_QP_MIN_RNR_TIMER && u(eng::kQpSqPsn) == IBV_QP_SQ_PSN);
// ibv_sge and the engine's Sge are the same 16 bytes: SGE lists pass through.
static_assert(sizeof(eng::Sge) == sizeof(ibv_sge) && offsetof(eng::Sge, addr) == offsetof(ibv_sge, addr) &&
              offsetof(eng::Sge, length) == offsetof(ibv_sge, length) &&
              offsetof(eng::Sge, lkey) == offsetof(ibv_sge, lkey));

}  // namespace

// ---------------------------------------------------------------- unload

__attribute__((destructor)) static void tita_verbs_unload() { Device::shutdown(); }

}  // namespace tita::verbs
