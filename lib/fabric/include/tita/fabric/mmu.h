// Shared-buffer memory management unit, in the manner of commodity switch
// ASICs and the HPCC simulator's SwitchMmu.
//
// The buffer is cut into three parts:
//   reserve   reserve_bytes per (ingress port, priority), always available;
//   headroom  headroom_bytes per (ingress port, lossless priority), or the
//             port's own (port_headroom_bytes: sized from its rate and cable),
//             absorbs what is in flight after a PFC pause;
//   shared    the rest: shared = buffer - ports*8*reserve - |lossless|*sum(headroom).
//
// Every admitted byte is charged to its ingress (port, priority) group, first
// to the group's reserve, then to the shared pool or (lossless, above the PFC
// threshold) to its headroom; and to its egress (port, priority) queue.
//
// Lossless priorities (PFC): the group's shared use S(i,p) is compared with
//   T = alpha_i * (shared - shared_used)    (dynamic), or T = xoff_bytes (static),
// with alpha_i = pfc_alpha, or the ingress port's own (port_pfc_alpha: the HPCC
// simulator gives faster ports a larger alpha).
// A packet that would lift S above T, or find the shared pool full, goes to
// headroom; headroom full -> drop (kHeadroomFull). XOFF when headroom is in use or
// S >= T; XON when headroom is empty and S == 0 or S + resume_offset <= T
// (dynamic), S <= xon_bytes (static). Lossless queues have no egress limit.
//
// Lossy priorities: the egress queue Q(o,p) must stay within the dynamic
// threshold Q + bytes <= egress_alpha * (shared - shared_used) (Choudhury and
// Hahne), the port's limit if set, and the shared pool; else drop. Bytes that fit
// in the group's reserve skip the shared-pool checks.
//
// Release (dequeue) takes bytes back from headroom first, then shared, then reserve.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tita/fabric/types.h"

namespace tita::fabric {

struct MmuConfig {
  uint64_t buffer_bytes = 12u << 20;
  uint32_t reserve_bytes = 4096;    // per (ingress port, priority)
  uint32_t headroom_bytes = 65536;  // per (ingress port, lossless priority)
  double egress_alpha = 1.0;        // lossy dynamic threshold
  uint8_t lossless = 0;             // bit p: priority p is lossless (PFC)
  bool pfc_dynamic = true;
  double pfc_alpha = 0.125;         // dynamic XOFF threshold
  uint32_t resume_offset_bytes = 3072;
  uint64_t xoff_bytes = 0;          // static thresholds, on the group's shared use
  uint64_t xon_bytes = 0;
  // Per ingress port, when not empty (one entry per port): headroom and PFC alpha.
  std::vector<uint32_t> port_headroom_bytes;
  std::vector<double> port_pfc_alpha;
};

// What cfg sets aside on a switch of `ports` ports before any sharing: the
// reserve of every (port, priority) and the headroom of every (port, lossless
// priority). The shared buffer is buffer_bytes less this; init() refuses a
// buffer that leaves none.
uint64_t reserved_bytes(const MmuConfig& cfg, uint16_t ports);

// A switch's buffer as switch ASICs grow it with their radix: `buffer_bytes` is
// the buffer of a switch of `base_ports` ports, and a switch of more ports keeps
// its per-port share, buffer_bytes x ports / base_ports (rounded down). Merchant
// ASICs of one family grow their buffer with their port count: Broadcom's
// Tomahawk 3, 4 and 5 hold 64, 113 and 165 MB for 32, 64 and 128 ports of
// 400 Gb/s (2.0, 1.8 and 1.3 MB a port); a chassis of several chips adds theirs.
// A switch of at most base_ports ports, or base_ports 0 (no scaling), gets
// buffer_bytes as it is.
uint64_t scaled_buffer_bytes(uint64_t buffer_bytes, uint32_t ports, uint32_t base_ports);

struct Admission {
  bool admitted = false;
  DropReason reason = DropReason::kBufferFull;  // when not admitted
  bool xoff = false;  // the ingress group just crossed XOFF: send a PFC pause
};

class Mmu {
 public:
  // -EINVAL with a message: no ports, alpha <= 0, static XON >= XOFF, or a buffer
  // smaller than its reserves and headroom.
  int init(const MmuConfig& cfg, uint16_t ports, std::string* err);

  // Egress port limit for lossy priorities; 0 = none.
  void set_port_limit(uint16_t port, uint64_t bytes) { port_limit_[port] = bytes; }

  Admission admit(uint16_t in, uint16_t out, uint8_t prio, uint32_t bytes);
  // Returns true when the ingress group just fell below XON: send a PFC resume.
  bool release(uint16_t in, uint16_t out, uint8_t prio, uint32_t bytes);

  bool lossless(uint8_t prio) const { return (cfg_.lossless >> prio) & 1; }
  bool paused(uint16_t in, uint8_t prio) const { return pg(in, prio).paused; }
  uint64_t shared_bytes() const { return shared_total_; }
  uint64_t shared_used() const { return shared_used_; }
  uint64_t shared_free() const { return shared_total_ - shared_used_; }
  uint64_t xoff_threshold(uint16_t in) const;  // T of an ingress port, for the current shared use
  uint32_t headroom_bytes(uint16_t in) const {
    return cfg_.port_headroom_bytes.empty() ? cfg_.headroom_bytes : cfg_.port_headroom_bytes[in];
  }
  uint64_t egress_threshold() const;  // lossy dynamic threshold
  uint64_t ingress_bytes(uint16_t in, uint8_t prio) const { return pg(in, prio).bytes; }
  uint64_t headroom_used(uint16_t in, uint8_t prio) const { return pg(in, prio).headroom; }
  uint64_t group_shared(uint16_t in, uint8_t prio) const;  // S(i, p)
  uint64_t egress_bytes(uint16_t out, uint8_t prio) const { return egress_[out * kPriorities + prio]; }
  uint64_t port_bytes(uint16_t out) const { return port_bytes_[out]; }
  uint64_t total_bytes() const { return total_bytes_; }
  const MmuConfig& config() const { return cfg_; }

 private:
  struct Group {
    uint64_t bytes = 0;     // reserve + shared part
    uint64_t headroom = 0;
    bool paused = false;
  };
  Group& pg(uint16_t in, uint8_t prio) { return groups_[in * kPriorities + prio]; }
  const Group& pg(uint16_t in, uint8_t prio) const { return groups_[in * kPriorities + prio]; }

  MmuConfig cfg_;
  uint64_t shared_total_ = 0;
  uint64_t shared_used_ = 0;
  uint64_t total_bytes_ = 0;
  std::vector<Group> groups_;
  std::vector<uint64_t> egress_;
  std::vector<uint64_t> port_bytes_;
  std::vector<uint64_t> port_limit_;
};

}  // namespace tita::fabric
