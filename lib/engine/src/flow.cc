// A QP's congestion control: the algorithm and parameters set_cc names
// (QPs with the same ones share one cc::Params), its flow (re)started on
// them, and the AckReq rate the algorithm needs.
#include <string>

#include "engine_impl.h"

namespace tita::engine {

int Engine::set_cc(uint32_t qp_num, std::string_view algorithm, std::span<const std::string> params,
                   std::string* err) {
  Impl& m = *impl_;
  Qp* qp = m.qp_by_num(qp_num);
  if (qp == nullptr) {
    if (err) *err = "set_cc: no QP " + std::to_string(qp_num);
    return -EINVAL;
  }
  // QPs with the same algorithm and parameters share one Params.
  std::string key(algorithm);
  for (const std::string& p : params) key += " " + p;
  const cc::Params* shared = nullptr;
  for (const auto& [k, p] : m.cc_params) {
    if (k == key) shared = &p;
  }
  if (shared == nullptr) {
    cc::Params p;
    const cc::FlowConfig link{m.cfg.line_rate_bps, m.cfg.base_rtt_ns, qp->mtu()};
    std::string msg;
    if (int rc = cc::Params::create(algorithm, link, &p, &msg); rc != 0) {
      if (err) *err = msg;
      return rc;
    }
    for (const std::string& assignment : params) {
      if (int rc = p.set(assignment, &msg); rc != 0) {
        if (err) *err = msg;
        return rc;
      }
    }
    m.cc_params.emplace_back(key, p);
    shared = &m.cc_params.back().second;
  }
  qp->cold.cc_params = shared;
  m.init_flow(*qp);
  m.reconsider(*qp);
  return 0;
}

void Engine::Impl::init_flow(Qp& qp) {
  qp.flow.init(*qp.cold.cc_params, {cfg.line_rate_bps, cfg.base_rtt_ns, qp.mtu()}, now_ns);
  set_ack_every(qp);
}

void Engine::Impl::set_ack_every(Qp& qp) {
  // INT algorithms read every packet's telemetry, the ACK echo of CE marks is
  // defined per packet, and spraying keeps a record per path: those get an ACK
  // per packet; the others coalesce.
  qp.req.ack_every = qp.flow.wants_int() || cfg.np.ack_echo != 0 || qp.cold.spray ? 1 : cfg.ack_req_every;
}

}  // namespace tita::engine
