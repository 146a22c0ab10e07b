// Addresses in their text forms, as configuration files and command lines give
// them: one reading for every tool (tita-perf, tita-switch, the verbs device).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tita::wire {

// "02:00:00:00:00:01" (glibc's ether_aton_r: six hex bytes, colon-separated).
bool parse_mac(std::string_view s, uint8_t out[6]);
// "10.0.0.1" (inet_pton) into host order, as Gid::from_ipv4 takes it.
bool parse_ipv4(std::string_view s, uint32_t* out);
// "02:00:00:00:00:01".
std::string mac_string(const uint8_t mac[6]);

}  // namespace tita::wire
