#include "tita/fabric/route.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tita/fabric/rng.h"

namespace tita::fabric {

namespace {

uint64_t gid_hash(const uint8_t g[16]) {
  uint64_t a, b;
  std::memcpy(&a, g, 8);
  std::memcpy(&b, g + 8, 8);
  return mix64(a ^ mix64(b));
}

bool prefix_match(const uint8_t* prefix, int len, const uint8_t* addr) {
  const int bytes = len / 8;
  if (std::memcmp(prefix, addr, static_cast<size_t>(bytes)) != 0) return false;
  const int bits = len % 8;
  if (bits == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff00 >> bits);
  return (prefix[bytes] & mask) == (addr[bytes] & mask);
}

}  // namespace

void RouteTable::init(uint16_t ports) {
  ports_ = ports;
  up_.assign(ports, 1);
  clear();
}

void RouteTable::clear() {
  groups_.clear();
  routes_.clear();
  prefix_order_.clear();
  exact_.clear();
  exact_mask_ = 0;
}

int RouteTable::add(const uint8_t prefix[16], int len, std::span<const uint16_t> ports, std::string* err) {
  if (len < 0 || len > 128) {
    *err = "route prefix length " + std::to_string(len) + " is outside [0, 128]";
    return -EINVAL;
  }
  if (ports.empty()) {
    *err = "route has no ports";
    return -EINVAL;
  }
  for (size_t i = 0; i < ports.size(); ++i) {
    if (ports[i] >= ports_) {
      *err = "route port " + std::to_string(ports[i]) + " does not exist (the switch has " +
             std::to_string(ports_) + ")";
      return -EINVAL;
    }
    if (std::find(ports.begin(), ports.begin() + static_cast<long>(i), ports[i]) !=
        ports.begin() + static_cast<long>(i)) {
      *err = "route names port " + std::to_string(ports[i]) + " twice";
      return -EINVAL;
    }
  }
  Route r{};
  std::memcpy(r.prefix, prefix, 16);
  for (int bit = len; bit < 128; ++bit) r.prefix[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  r.len = len;
  Group g;
  g.members.assign(ports.begin(), ports.end());
  rebuild_active(g);
  for (Route& old : routes_) {
    if (old.len == len && std::memcmp(old.prefix, r.prefix, 16) == 0) {
      groups_[old.group] = std::move(g);
      return 0;
    }
  }
  r.group = static_cast<uint32_t>(groups_.size());
  groups_.push_back(std::move(g));
  routes_.push_back(r);
  prefix_order_.clear();
  for (uint32_t i = 0; i < routes_.size(); ++i) {
    if (routes_[i].len < 128) prefix_order_.push_back(i);
  }
  std::stable_sort(prefix_order_.begin(), prefix_order_.end(),
                   [this](uint32_t a, uint32_t b) { return routes_[a].len > routes_[b].len; });
  rebuild_exact();
  return 0;
}

void RouteTable::rebuild_exact() {
  size_t hosts = 0;
  for (const Route& r : routes_) hosts += r.len == 128;
  if (hosts == 0) {
    exact_.clear();
    exact_mask_ = 0;
    return;
  }
  size_t cap = 16;
  while (cap < 2 * hosts) cap *= 2;  // load factor <= 1/2
  exact_.assign(cap, 0);
  exact_mask_ = static_cast<uint32_t>(cap - 1);
  for (uint32_t i = 0; i < routes_.size(); ++i) {
    if (routes_[i].len != 128) continue;
    uint32_t slot = static_cast<uint32_t>(gid_hash(routes_[i].prefix)) & exact_mask_;
    while (exact_[slot] != 0) slot = (slot + 1) & exact_mask_;
    exact_[slot] = i + 1;
  }
}

void RouteTable::rebuild_active(Group& g) {
  g.active.clear();
  for (uint16_t p : g.members) {
    if (up_[p]) g.active.push_back(p);
  }
}

void RouteTable::set_port_up(uint16_t port, bool up) {
  up_[port] = up ? 1 : 0;
  for (Group& g : groups_) rebuild_active(g);
}

std::span<const uint16_t> RouteTable::lookup(const uint8_t dst[16]) const {
  if (!exact_.empty()) {
    uint32_t slot = static_cast<uint32_t>(gid_hash(dst)) & exact_mask_;
    for (uint32_t idx; (idx = exact_[slot]) != 0; slot = (slot + 1) & exact_mask_) {
      const Route& r = routes_[idx - 1];
      if (std::memcmp(r.prefix, dst, 16) == 0) {
        const Group& g = groups_[r.group];
        if (!g.active.empty()) return g.active;
        break;  // every port down: fall back to a shorter prefix
      }
    }
  }
  for (uint32_t i : prefix_order_) {
    const Route& r = routes_[i];
    if (prefix_match(r.prefix, r.len, dst) && !groups_[r.group].active.empty()) return groups_[r.group].active;
  }
  return {};
}

}  // namespace tita::fabric
