// Forwarding table: destination GID -> ECMP group of egress ports. Exact host
// routes in open-addressing tables whose slots hold the key and the group: IPv4
// hosts (::ffff:a.b.c.d/128) in 8-byte slots, other /128 in 24-byte slots, so a
// switch's host routes stay in a few KB of cache. Shorter prefixes (including
// the default route, length 0) by longest match. Routes with the same ports
// share one group. Built on the control path, each add O(1) amortised for host
// routes; lookup never allocates.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace tita::fabric {

class RouteTable {
 public:
  // ports: how many ports the switch has (members are checked against it).
  void init(uint16_t ports);

  // Adds or replaces the route for prefix/len. `prefix` is a 16-byte GID; an
  // IPv4 prefix a.b.c.d/L is ::ffff:a.b.c.d with len = 96 + L.
  // -EINVAL with a message: len outside [0, 128], no ports, a port >= ports, a
  // repeated port.
  int add(const uint8_t prefix[16], int len, std::span<const uint16_t> ports, std::string* err);
  // Room for this many host routes without rehashing (optional).
  void reserve(size_t host_routes);
  void clear();

  // The ports that are up in the group of the longest matching route, in the
  // order given; empty if none.
  std::span<const uint16_t> lookup(const uint8_t dst[16]) const;

  // Marks a port down (the control plane withdrew it): groups skip it.
  void set_port_up(uint16_t port, bool up);
  bool port_up(uint16_t port) const { return up_[port] != 0; }
  size_t size() const { return hosts_ + hosts4_ + prefixes_.size(); }
  size_t groups() const { return groups_.size(); }

 private:
  struct Prefix {
    uint8_t prefix[16];
    int len;
    uint32_t group;
  };
  struct Group {
    std::vector<uint16_t> members;
  };
  // A group's ports that are up: active_[off, off + n). Groups are few; this
  // and active_ stay in cache where each Group's own vectors would not.
  struct Active {
    uint32_t off = 0;
    uint32_t n = 0;
  };
  std::span<const uint16_t> active(uint32_t group) const {
    const Active a = active_of_[group];
    return {active_.data() + a.off, a.n};
  }
  void rebuild_active();
  // A host route: its GID and its group + 1 (0: empty slot).
  struct Slot {
    uint64_t key[2];
    uint32_t group1;
  };
  // An IPv4 host route: the address (network order as loaded) and its group + 1.
  struct Slot4 {
    uint32_t addr;
    uint32_t group1;
  };
  uint32_t group_of(std::span<const uint16_t> ports);
  Slot* find_slot(const uint64_t key[2]);
  void grow_exact(size_t cap);
  Slot4* find_slot4(uint32_t addr);
  void grow_v4(size_t cap);

  uint16_t ports_ = 0;
  std::vector<uint8_t> up_;
  std::vector<Group> groups_;
  std::vector<Active> active_of_;  // per group
  std::vector<uint16_t> active_;
  std::map<std::vector<uint16_t>, uint32_t> group_ids_;  // members -> group
  std::vector<Prefix> prefixes_;  // non-host routes, longest first
  std::vector<Slot> exact_;       // open addressing, load <= 1/2
  uint32_t exact_mask_ = 0;
  std::vector<Slot4> v4_;         // IPv4 hosts, open addressing, load <= 1/2
  uint32_t v4_shift_ = 32;        // slot = multiplicative hash >> shift
  size_t hosts_ = 0;              // in exact_
  size_t hosts4_ = 0;             // in v4_
};

}  // namespace tita::fabric
