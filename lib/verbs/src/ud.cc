// What UD QPs add to the RC path of qp.cc: a SEND's destination (the address
// handle, QP and Q_Key of ibv_send_wr.wr.ud) on ibv_post_send and on the
// extended API's ibv_wr_set_ud_addr. The engine checks the rest (one packet
// per message, at most the port's MTU; SENDs only).
#include <cerrno>

#include "interpose.h"

namespace tita::verbs {

int ud_send_wr(Qp* qp, const ibv_send_wr* wr, eng::SendWr* out) {
  Device* d = dev_of(qp->qp.context);
  if (wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_SEND_WITH_IMM) {
    d->log(Config::Log::kError, "ibv_post_send(UD QP %#x): opcode %d: UD carries SEND and SEND_WITH_IMM only", qp->qpn,
           wr->opcode);
    return EINVAL;
  }
  const ibv_ah* ah = wr->wr.ud.ah;
  if (ah == nullptr || ah->context != qp->qp.context) {
    d->log(Config::Log::kError, "ibv_post_send(UD QP %#x): wr.ud.ah is not an address handle of this context",
           qp->qpn);
    return EINVAL;
  }
  out->ud.ah = ah_of(const_cast<ibv_ah*>(ah))->id;
  out->ud.remote_qpn = wr->wr.ud.remote_qpn;
  out->ud.remote_qkey = wr->wr.ud.remote_qkey;
  return 0;
}

}  // namespace tita::verbs
