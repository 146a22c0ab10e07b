// One tita-perf test on one DPDK port, in the roles perftest's programs have:
//
//   perf.cc    the port, its engines and their resources, the connection (the
//              out-of-band exchange's values into connect_rc), posting, polling
//   serve.cc   the server: takes its clients' test, answers it, sums them
//   client.cc  the client: asks for the test, runs bandwidth or latency
//   report.cc  the counters of the test's QPs and the line (or JSON) printed
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "oob.h"
#include "options.h"
#include "tita/dpdk/host.h"
#include "tita/cli/contract.h"
#include "tita/dpdk/telemetry.h"

namespace tita::perf {

using nlohmann::json;

// True once SIGINT/SIGTERM came (tita/cli/contract.h): a test stops posting and ends.
using cli::stop_requested;

// The message on stderr, exit 1 (128 + the signal's number once one stopped us).
[[noreturn]] void die(const std::string& msg);

class Perf {
 public:
  explicit Perf(Options o) : o_(std::move(o)) {}
  // The engines leave telemetry before they are freed (a scrape would read freed memory).
  ~Perf() { withdraw(); }

  int run();

 private:
  struct Conn {
    uint32_t qpn = 0;
    uint32_t psn = 0;  // our first request PSN, random as perftest's (the peer's RQ PSN)
    uint32_t lane = 0;  // the engine that runs it
    uint32_t peer_qpn = 0;
    uint32_t peer_rkey = 0;  // the key of the peer's region for this QP (its engine's)
    uint64_t posted = 0;
    uint64_t completed = 0;
    uint32_t outstanding = 0;
    uint64_t bytes = 0;
    uint64_t last_bytes = 0;
  };

  // One engine on one queue pair of the port, on its own lcore (--engines):
  // QP i runs on lane i mod N. Each lane has its own PD, region key and CQ;
  // frames for another lane's QP are handed over (dpdk::Steering).
  struct Lane {
    std::unique_ptr<dpdk::EngineHost> host;
    dpdk::Steering steering;
    unsigned lcore = 0;
    uint32_t pd = 0;
    uint32_t cq = 0;
    engine::MrInfo mr;
    int telemetry_id = -1;
    std::vector<uint32_t> conns;  // indices into conns_
    double messages = 0;          // what its run completed
    double elapsed_s = 0;
    uint64_t check_failures = 0;
    engine::Engine& engine() { return host->engine(); }
  };

  size_t region() const { return (static_cast<size_t>(o_.size) + 4095) & ~size_t{4095}; }
  // QPs over all clients (the server serves o_.clients clients with o_.qps each).
  uint32_t total_qps() const { return o_.qps * (o_.server ? o_.clients : 1); }
  // Whether QP i's region holds the pattern both sides fill it with.
  bool intact(uint32_t i) { return std::memcmp(buf(i), expected_.data() + i * region(), o_.size) == 0; }
  uint8_t* buf(uint32_t i) { return mem_ + i * region(); }
  Conn& conn_of(uint32_t qpn) { return conns_[conn_index_.at(qpn)]; }
  uint32_t index_of(const Conn& c) const { return static_cast<uint32_t>(&c - conns_.data()); }
  Lane& lane_of(const Conn& c) { return lanes_[c.lane]; }
  void withdraw();
  // Runs fn(lane) for every lane, lane 0 on this lcore and the others on theirs,
  // and returns when all have.
  void run_lanes(const std::function<void(Lane&)>& fn);

  // perf.cc
  void setup_port();
  void setup_engine();
  void setup_resources();
  json local_info(uint32_t k = 0) const;
  void connect(const json& peer, uint32_t k = 0);
  void post_recv(Conn& c, uint32_t i);
  bool post_send(Conn& c, uint32_t i, engine::WrOpcode op);
  engine::WrOpcode opcode() const;
  [[noreturn]] void fail(Lane& lane, const std::string& msg);
  void idle(Lane& lane, uint64_t now, uint32_t received);

  // Polls the lane's CQ; calls fn(wc) for every completion; any error ends the run.
  template <class Fn>
  void drain(Lane& lane, Fn&& fn) {
    engine::WorkCompletion wc[64];
    int n;
    while ((n = lane.engine().poll_cq(lane.cq, 64, wc)) > 0) {
      for (int k = 0; k < n; ++k) {
        if (wc[k].status != engine::WcStatus::kSuccess) {
          fail(lane, "QP " + std::to_string(wc[k].qp_num) + ": work request failed: " +
                         std::string(engine::to_string(wc[k].status)));
        }
        fn(wc[k]);
      }
    }
  }

  // serve.cc
  void serve();
  // A lane's share of serving; the main lane (oobs given) also watches the
  // clients and, once every one said done, stops the others.
  void serve_lane(Lane& lane, std::vector<std::unique_ptr<Oob>>* oobs, std::vector<json>* done);
  void wait_for_byes(std::vector<std::unique_ptr<Oob>>& oobs);

  // client.cc
  void drive();
  void bandwidth();
  void bandwidth_lane(Lane& lane);
  void latency();

  // report.cc
  json qp_stats();
  void report(const json& client, const json& server);

  Options o_;
  dpdk::Port port_;
  std::vector<Lane> lanes_;
  dpdk::TscClock clock_;
  Oob oob_;
  uint8_t* mem_ = nullptr;
  std::vector<uint8_t> expected_;
  size_t mem_len_ = 0;
  std::vector<Conn> conns_;
  std::unordered_map<uint32_t, uint32_t> conn_index_;  // QP number -> conns_ index
  std::atomic<bool> lanes_stop_{false};  // server: the main lane tells the others the test is over
  uint64_t peer_addr_ = 0;
  uint64_t peer_region_ = 0;
  std::mt19937 psn_rng_{std::random_device{}()};
  double elapsed_s_ = 0;
  double messages_ = 0;
  json latency_json_ = json::object();
};

}  // namespace tita::perf
