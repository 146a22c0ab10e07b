#include "tita/fabric/route.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tita/fabric/rng.h"

namespace tita::fabric {

namespace {

uint64_t key_hash(const uint64_t k[2]) { return mix64(k[0] ^ mix64(k[1])); }

// ::ffff:a.b.c.d: the IPv4 address (as loaded from its 4 bytes), else false.
bool ipv4_mapped(const uint8_t g[16], uint32_t* addr) {
  uint64_t hi;
  uint32_t mid;
  std::memcpy(&hi, g, 8);
  std::memcpy(&mid, g + 8, 4);
  static constexpr uint8_t kMid[4] = {0, 0, 0xff, 0xff};
  uint32_t want;
  std::memcpy(&want, kMid, 4);
  if (hi != 0 || mid != want) return false;
  std::memcpy(addr, g + 12, 4);
  return true;
}

uint32_t hash4(uint32_t addr) { return addr * 0x9e3779b1u; }

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
  active_of_.clear();
  active_.clear();
  group_ids_.clear();
  prefixes_.clear();
  exact_.clear();
  exact_mask_ = 0;
  v4_.clear();
  v4_shift_ = 32;
  hosts_ = 0;
  hosts4_ = 0;
}

uint32_t RouteTable::group_of(std::span<const uint16_t> ports) {
  std::vector<uint16_t> members(ports.begin(), ports.end());
  auto [it, fresh] = group_ids_.try_emplace(members, static_cast<uint32_t>(groups_.size()));
  if (fresh) {
    Active a;
    a.off = static_cast<uint32_t>(active_.size());
    for (uint16_t p : members) {
      if (up_[p]) active_.push_back(p);
    }
    a.n = static_cast<uint32_t>(active_.size()) - a.off;
    active_of_.push_back(a);
    Group g;
    g.members = std::move(members);
    groups_.push_back(std::move(g));
  }
  return it->second;
}

RouteTable::Slot* RouteTable::find_slot(const uint64_t key[2]) {
  uint32_t slot = static_cast<uint32_t>(key_hash(key)) & exact_mask_;
  while (exact_[slot].group1 != 0 && (exact_[slot].key[0] != key[0] || exact_[slot].key[1] != key[1])) {
    slot = (slot + 1) & exact_mask_;
  }
  return &exact_[slot];
}

void RouteTable::grow_exact(size_t cap) {
  std::vector<Slot> old = std::move(exact_);
  exact_.assign(cap, Slot{});
  exact_mask_ = static_cast<uint32_t>(cap - 1);
  for (const Slot& s : old) {
    if (s.group1 != 0) *find_slot(s.key) = s;
  }
}

RouteTable::Slot4* RouteTable::find_slot4(uint32_t addr) {
  const uint32_t mask = static_cast<uint32_t>(v4_.size() - 1);
  uint32_t slot = hash4(addr) >> v4_shift_;
  while (v4_[slot].group1 != 0 && v4_[slot].addr != addr) slot = (slot + 1) & mask;
  return &v4_[slot];
}

void RouteTable::grow_v4(size_t cap) {
  std::vector<Slot4> old = std::move(v4_);
  v4_.assign(cap, Slot4{});
  v4_shift_ = static_cast<uint32_t>(32 - __builtin_ctzll(cap));
  for (const Slot4& s : old) {
    if (s.group1 != 0) *find_slot4(s.addr) = s;
  }
}

void RouteTable::reserve(size_t host_routes) {
  size_t cap = 16;
  while (cap < 2 * host_routes) cap *= 2;  // load factor <= 1/2
  if (cap > exact_.size()) grow_exact(cap);
  if (cap > v4_.size()) grow_v4(cap);
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
  const uint32_t group = group_of(ports);
  uint32_t addr4;
  if (len == 128 && ipv4_mapped(prefix, &addr4)) {
    if (2 * (hosts4_ + 1) > v4_.size()) {
      size_t cap = 16;
      while (cap < 2 * std::max<size_t>(hosts4_ + 1, v4_.size())) cap *= 2;
      grow_v4(cap);
    }
    Slot4* s = find_slot4(addr4);
    if (s->group1 == 0) {
      s->addr = addr4;
      ++hosts4_;
    }
    s->group1 = group + 1;
    return 0;
  }
  if (len == 128) {
    if (2 * (hosts_ + 1) > exact_.size()) {
      size_t cap = 16;
      while (cap < 2 * std::max<size_t>(hosts_ + 1, exact_.size())) cap *= 2;
      grow_exact(cap);
    }
    uint64_t key[2];
    std::memcpy(key, prefix, 16);
    Slot* s = find_slot(key);
    if (s->group1 == 0) {
      s->key[0] = key[0];
      s->key[1] = key[1];
      ++hosts_;
    }
    s->group1 = group + 1;
    return 0;
  }
  Prefix r{};
  std::memcpy(r.prefix, prefix, 16);
  for (int bit = len; bit < 128; ++bit) r.prefix[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  r.len = len;
  r.group = group;
  for (Prefix& old : prefixes_) {
    if (old.len == len && std::memcmp(old.prefix, r.prefix, 16) == 0) {
      old.group = group;
      return 0;
    }
  }
  // Longest first; among equal lengths, in the order added.
  const auto at = std::find_if(prefixes_.begin(), prefixes_.end(), [len](const Prefix& p) { return p.len < len; });
  prefixes_.insert(at, r);
  return 0;
}

void RouteTable::rebuild_active() {
  active_.clear();
  active_of_.assign(groups_.size(), Active{});
  for (size_t i = 0; i < groups_.size(); ++i) {
    active_of_[i].off = static_cast<uint32_t>(active_.size());
    for (uint16_t p : groups_[i].members) {
      if (up_[p]) active_.push_back(p);
    }
    active_of_[i].n = static_cast<uint32_t>(active_.size()) - active_of_[i].off;
  }
}

void RouteTable::set_port_up(uint16_t port, bool up) {
  up_[port] = up ? 1 : 0;
  rebuild_active();
}

std::span<const uint16_t> RouteTable::lookup(const uint8_t dst[16]) const {
  uint32_t addr4;
  if (hosts4_ != 0 && ipv4_mapped(dst, &addr4)) {
    const uint32_t mask = static_cast<uint32_t>(v4_.size() - 1);
    for (uint32_t slot = hash4(addr4) >> v4_shift_;; slot = (slot + 1) & mask) {
      const Slot4& s = v4_[slot];
      if (s.group1 == 0) break;
      if (s.addr == addr4) {
        const std::span<const uint16_t> ports = active(s.group1 - 1);
        if (!ports.empty()) return ports;
        break;  // every port down: fall back to a shorter prefix
      }
    }
  } else if (hosts_ != 0) {
    uint64_t key[2];
    std::memcpy(key, dst, 16);
    for (uint32_t slot = static_cast<uint32_t>(key_hash(key)) & exact_mask_;; slot = (slot + 1) & exact_mask_) {
      const Slot& s = exact_[slot];
      if (s.group1 == 0) break;
      if (s.key[0] == key[0] && s.key[1] == key[1]) {
        const std::span<const uint16_t> ports = active(s.group1 - 1);
        if (!ports.empty()) return ports;
        break;  // every port down: fall back to a shorter prefix
      }
    }
  }
  for (const Prefix& r : prefixes_) {
    if (prefix_match(r.prefix, r.len, dst) && active_of_[r.group].n != 0) return active(r.group);
  }
  return {};
}

}  // namespace tita::fabric
