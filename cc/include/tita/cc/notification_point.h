// The notification point (NP): the receiver side of congestion control, next to
// the sender's Flow (cc.h). The CE marks it reacts to are the switches' (RED,
// lib/fabric's tita/fabric/red.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "tita/cc/param.h"
#include "tita/cc/types.h"

namespace tita::cc {

// How CE marks on data reach the sender:
//   CNPs (ack_echo 0, hardware NPs): a CNP for a CE-marked packet, at most one
//     per QP per cnp_interval_ns (0: one for every marked packet).
//   ACK echo (ack_echo 1, the HPCC simulator's notification): no CNP; the ACK
//     of each packet echoes its mark (the telemetry trailer's CE count, so
//     both ends must run tita), and the sender takes an ACK echoing any mark
//     as one CNP (np_ack_is_cnp). Needs an ACK per packet (AckReq on each).
// Both ends of a connection must use the same mode.
struct NpParams {
  uint64_t cnp_interval_ns = 50'000;  // at most one CNP per QP per interval
  uint64_t ack_echo = 0;              // 1: CE marks echoed in ACKs instead of CNPs

  // "cnp_interval_ns=...", "ack_echo=0|1"; errors as Params::set.
  int set(std::string_view assignment, std::string* err);
  static std::span<const ParamInfo> describe();
};
struct NpState {
  uint64_t last_cnp_ns = 0;
  bool sent_any = false;
};
// true = send a CNP now.
bool np_on_data(const NpParams& p, NpState& st, uint64_t now_ns, bool ce_marked);
// Sender side of the ACK echo: whether this ACK counts as a CNP.
constexpr bool np_ack_is_cnp(const NpParams& p, const AckSample& s) { return p.ack_echo != 0 && s.ce_packets > 0; }

}  // namespace tita::cc
