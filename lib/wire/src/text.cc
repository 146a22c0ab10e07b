#include "tita/wire/text.h"

#include <arpa/inet.h>
#include <netinet/ether.h>

#include <cstdio>
#include <cstring>

namespace tita::wire {

bool parse_mac(std::string_view s, uint8_t out[6]) {
  ether_addr a;
  if (s.size() > 17 || ether_aton_r(std::string(s).c_str(), &a) == nullptr) return false;
  std::memcpy(out, a.ether_addr_octet, 6);
  return true;
}

bool parse_ipv4(std::string_view s, uint32_t* out) {
  in_addr a{};
  if (inet_pton(AF_INET, std::string(s).c_str(), &a) != 1) return false;
  *out = ntohl(a.s_addr);
  return true;
}

std::string mac_string(const uint8_t m[6]) {
  char b[18];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

}  // namespace tita::wire
