// Live statistics through rte_telemetry, readable with DPDK's dpdk-telemetry.py
// (or any client of the telemetry socket):
//
//   /tita/engines           ids of the engines this process publishes
//   /tita/engine,<id>       engine counters (drops by reason), host and port counters
//   /tita/qps,<id>          QP numbers of engine <id>
//   /tita/qp,<id>,<qpn>     state, CC, rate, window, in-flight, PSNs, packets, bytes,
//                           retransmissions, timeouts, NAKs, CNPs, ECN marks, RTT
//
// The callbacks run on DPDK's telemetry thread while the polling lcore updates
// the counters: values are 64-bit aligned loads, at most a step behind.
#pragma once

#include <mutex>
#include <string_view>

namespace tita::dpdk {

class EngineHost;

// Publishes the host; returns its engine id. The host must outlive it or be
// withdrawn first (not while holding `lock`). With `lock`, every command holds
// it while it reads the host: for hosts that other threads change (the verbs
// device creates and destroys QPs under its lock).
int telemetry_publish(const EngineHost* host, std::string_view name, std::mutex* lock = nullptr);
void telemetry_withdraw(int id);

}  // namespace tita::dpdk
