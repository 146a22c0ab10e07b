#include "tita/fabric/mmu.h"

#include <algorithm>
#include <cerrno>

namespace tita::fabric {

uint64_t reserved_bytes(const MmuConfig& cfg, uint16_t ports) {
  const uint64_t lossless = static_cast<uint64_t>(__builtin_popcount(cfg.lossless));
  uint64_t headroom = 0;
  for (uint16_t p = 0; p < ports; ++p) {
    headroom += cfg.port_headroom_bytes.empty() ? cfg.headroom_bytes : cfg.port_headroom_bytes[p];
  }
  return uint64_t{ports} * kPriorities * cfg.reserve_bytes + lossless * headroom;
}

uint64_t scaled_buffer_bytes(uint64_t buffer_bytes, uint32_t ports, uint32_t base_ports) {
  if (base_ports == 0 || ports <= base_ports) return buffer_bytes;
  // buffer x ports / base without overflowing 64 bits.
  const unsigned __int128 b = static_cast<unsigned __int128>(buffer_bytes) * ports / base_ports;
  return b > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(b);
}

int Mmu::init(const MmuConfig& cfg, uint16_t ports, std::string* err) {
  if (ports == 0) {
    *err = "the switch has no ports";
    return -EINVAL;
  }
  if (!(cfg.egress_alpha > 0) || !(cfg.pfc_alpha > 0)) {
    *err = "buffer alpha must be > 0";
    return -EINVAL;
  }
  if (cfg.lossless != 0 && !cfg.pfc_dynamic && (cfg.xoff_bytes == 0 || cfg.xon_bytes >= cfg.xoff_bytes)) {
    *err = "static PFC thresholds need 0 <= xon_bytes < xoff_bytes (xon " + std::to_string(cfg.xon_bytes) +
           ", xoff " + std::to_string(cfg.xoff_bytes) + ")";
    return -EINVAL;
  }
  if ((!cfg.port_headroom_bytes.empty() && cfg.port_headroom_bytes.size() != ports) ||
      (!cfg.port_pfc_alpha.empty() && cfg.port_pfc_alpha.size() != ports)) {
    *err = "per-port headroom and PFC alpha need one value per port (" + std::to_string(ports) + ")";
    return -EINVAL;
  }
  for (double a : cfg.port_pfc_alpha) {
    if (!(a > 0)) {
      *err = "buffer alpha must be > 0";
      return -EINVAL;
    }
  }
  const uint64_t reserved = reserved_bytes(cfg, ports);
  if (reserved >= cfg.buffer_bytes) {
    *err = "buffer_bytes " + std::to_string(cfg.buffer_bytes) + " leaves no shared buffer after " +
           std::to_string(reserved) + " bytes of reserve and headroom";
    return -EINVAL;
  }
  cfg_ = cfg;
  shared_total_ = cfg.buffer_bytes - reserved;
  shared_used_ = 0;
  total_bytes_ = 0;
  groups_.assign(size_t{ports} * kPriorities, Group{});
  egress_.assign(size_t{ports} * kPriorities, 0);
  port_bytes_.assign(ports, 0);
  port_limit_.assign(ports, 0);
  return 0;
}

uint64_t Mmu::xoff_threshold(uint16_t in) const {
  if (!cfg_.pfc_dynamic) return cfg_.xoff_bytes;
  const double alpha = cfg_.port_pfc_alpha.empty() ? cfg_.pfc_alpha : cfg_.port_pfc_alpha[in];
  return static_cast<uint64_t>(alpha * static_cast<double>(shared_free()));
}

uint64_t Mmu::egress_threshold() const {
  return static_cast<uint64_t>(cfg_.egress_alpha * static_cast<double>(shared_free()));
}

uint64_t Mmu::group_shared(uint16_t in, uint8_t prio) const {
  const uint64_t b = pg(in, prio).bytes;
  return b > cfg_.reserve_bytes ? b - cfg_.reserve_bytes : 0;
}

Admission Mmu::admit(uint16_t in, uint16_t out, uint8_t prio, uint32_t bytes) {
  Admission a;
  Group& g = pg(in, prio);
  const uint64_t after = g.bytes + bytes;
  // What of this packet the group's reserve cannot hold.
  const uint64_t shared_part = after > cfg_.reserve_bytes ? std::min<uint64_t>(bytes, after - cfg_.reserve_bytes) : 0;

  if (lossless(prio)) {
    if (shared_part > 0 && (group_shared(in, prio) + shared_part > xoff_threshold(in) ||
                            shared_used_ + shared_part > shared_total_)) {
      if (g.headroom + bytes > headroom_bytes(in)) {
        a.reason = DropReason::kHeadroomFull;
        return a;
      }
      g.headroom += bytes;
    } else {
      g.bytes += bytes;
      shared_used_ += shared_part;
    }
    if (!g.paused && (g.headroom > 0 || group_shared(in, prio) >= xoff_threshold(in))) {
      g.paused = true;
      a.xoff = true;
    }
  } else {
    if (port_limit_[out] != 0 && port_bytes_[out] + bytes > port_limit_[out]) {
      a.reason = DropReason::kPortBuffer;
      return a;
    }
    if (shared_part > 0) {
      if (shared_used_ + shared_part > shared_total_) {
        a.reason = DropReason::kBufferFull;
        return a;
      }
      if (egress_bytes(out, prio) + bytes > egress_threshold()) {
        a.reason = DropReason::kEgressThreshold;
        return a;
      }
      shared_used_ += shared_part;
    }
    g.bytes += bytes;
  }
  egress_[out * kPriorities + prio] += bytes;
  port_bytes_[out] += bytes;
  total_bytes_ += bytes;
  a.admitted = true;
  return a;
}

bool Mmu::release(uint16_t in, uint16_t out, uint8_t prio, uint32_t bytes) {
  Group& g = pg(in, prio);
  const uint64_t from_headroom = std::min<uint64_t>(g.headroom, bytes);
  g.headroom -= from_headroom;
  const uint64_t rest = std::min<uint64_t>(bytes - from_headroom, g.bytes);
  shared_used_ -= std::min(rest, group_shared(in, prio));
  g.bytes -= rest;
  egress_[out * kPriorities + prio] -= bytes;
  port_bytes_[out] -= bytes;
  total_bytes_ -= bytes;
  if (!g.paused || g.headroom > 0) return false;
  const uint64_t s = group_shared(in, prio);
  const bool xon = cfg_.pfc_dynamic ? (s == 0 || s + cfg_.resume_offset_bytes <= xoff_threshold(in))
                                    : s <= cfg_.xon_bytes;
  if (xon) g.paused = false;
  return xon;
}

}  // namespace tita::fabric
