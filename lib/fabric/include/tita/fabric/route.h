// Forwarding table: destination GID -> ECMP group of egress ports. Exact host
// routes (/32, /128) in an open-addressing table, shorter prefixes (including
// the default route, length 0) by longest match. Built on the control path;
// lookup never allocates.
#pragma once

#include <cstdint>
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
  void clear();

  // The ports that are up in the group of the longest matching route, in the
  // order given; empty if none.
  std::span<const uint16_t> lookup(const uint8_t dst[16]) const;

  // Marks a port down (the control plane withdrew it): groups skip it.
  void set_port_up(uint16_t port, bool up);
  bool port_up(uint16_t port) const { return up_[port] != 0; }
  size_t size() const { return routes_.size(); }

 private:
  struct Route {
    uint8_t prefix[16];
    int len;
    uint32_t group;
  };
  struct Group {
    std::vector<uint16_t> members;
    std::vector<uint16_t> active;
  };
  void rebuild_exact();
  void rebuild_active(Group& g);

  uint16_t ports_ = 0;
  std::vector<uint8_t> up_;
  std::vector<Group> groups_;
  std::vector<Route> routes_;          // every route, as added
  std::vector<uint32_t> prefix_order_; // non-host routes, longest first
  std::vector<uint32_t> exact_;        // open addressing: route index + 1, 0 = empty
  uint32_t exact_mask_ = 0;
};

}  // namespace tita::fabric
