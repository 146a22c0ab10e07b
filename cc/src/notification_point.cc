// Notification point (receiver): when a CE-marked packet makes a CNP.
//
// CNP pacing: DCQCN (Zhu et al., SIGCOMM 2015) NP: on a CE-marked packet, send a
// CNP unless one was sent for this QP within the CNP interval. Or, as the HPCC
// simulator's NP (rdma-hw.cc: the CNP flag of the ACK of a CE-marked packet),
// no CNP at all: the ACK echoes the mark.
#include "tita/cc/notification_point.h"

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

}  // namespace tita::cc
