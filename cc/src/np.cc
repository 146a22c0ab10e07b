// Notification point (receiver) and switch-side ECN marking: the pieces of
// congestion control that are not a sender's Flow.
//
// CNP pacing: DCQCN (Zhu et al., SIGCOMM 2015) NP: on a CE-marked packet, send a
// CNP unless one was sent for this QP within the CNP interval. Or, as the HPCC
// simulator's NP (rdma-hw.cc: the CNP flag of the ACK of a CE-marked packet),
// no CNP at all: the ACK echoes the mark.
// RED marking: the HPCC artifact's switch (switch-node.cc): probability 0 for
// qlen <= Kmin, Pmax (qlen - Kmin)/(Kmax - Kmin) up to Kmax, 1 above Kmax.
#include <algorithm>

#include "tita/cc/cc.h"

namespace tita::cc {
namespace {

constexpr ParamDef<NpParams> kNpDefs[] = {
    param("cnp_interval_ns", "ns", 0, 1e10, &NpParams::cnp_interval_ns,
          "minimum time between two CNPs for one QP (0: one per CE-marked packet)"),
    param("ack_echo", "", 0, 1, &NpParams::ack_echo,
          "1: no CNPs; ACKs echo CE marks and each such ACK acts as a CNP (HPCC simulator)"),
};
constexpr auto kNpTable = make_param_table(kNpDefs);

}  // namespace

int NpParams::set(std::string_view assignment, std::string* err) {
  return set_param<NpParams>("np", kNpTable, this, assignment, err);
}

std::span<const ParamInfo> NpParams::describe() { return kNpTable.infos; }

bool np_on_data(const NpParams& p, NpState& st, uint64_t now_ns, bool ce_marked) {
  if (!ce_marked || p.ack_echo != 0) return false;
  if (st.sent_any && now_ns - st.last_cnp_ns < p.cnp_interval_ns) return false;
  st.last_cnp_ns = now_ns;
  st.sent_any = true;
  return true;
}

double red_mark_probability(uint64_t qlen_bytes, const RedParams& p) {
  if (qlen_bytes > p.kmax_bytes) return 1.0;
  if (qlen_bytes <= p.kmin_bytes) return 0.0;
  return p.pmax * static_cast<double>(qlen_bytes - p.kmin_bytes) /
         static_cast<double>(p.kmax_bytes - p.kmin_bytes);
}

RedParams red_defaults(uint64_t link_rate_bps) {
  const double scale = static_cast<double>(link_rate_bps) / 25e9;
  return {static_cast<uint64_t>(100'000 * scale), static_cast<uint64_t>(400'000 * scale), 0.2};
}

}  // namespace tita::cc
