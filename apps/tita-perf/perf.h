// One tita-perf test on one DPDK port, in the roles perftest's programs have:
//
//   perf.cc    the port, the engine and its resources, the connection (the
//              out-of-band exchange's values into connect_rc), posting, polling
//   serve.cc   the server: takes its clients' test, answers it, sums them
//   client.cc  the client: asks for the test, runs bandwidth or latency
//   report.cc  the counters of the test's QPs and the line (or JSON) printed
#pragma once

#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "oob.h"
#include "options.h"
#include "tita/dpdk/host.h"
#include "tita/dpdk/telemetry.h"

namespace tita::perf {

using nlohmann::json;

// Set by SIGINT/SIGTERM: a test stops posting and ends.
extern volatile std::sig_atomic_t g_stop;

// The message on stderr, exit 1.
[[noreturn]] void die(const std::string& msg);

class Perf {
 public:
  explicit Perf(Options o) : o_(std::move(o)) {}
  // The engine leaves telemetry before it is freed (a scrape would read freed memory).
  ~Perf() { dpdk::telemetry_withdraw(telemetry_id_); }

  int run();

 private:
  struct Conn {
    uint32_t qpn = 0;
    uint32_t psn = 0;  // our first request PSN, random as perftest's (the peer's RQ PSN)
    uint32_t peer_qpn = 0;
    uint64_t posted = 0;
    uint64_t completed = 0;
    uint32_t outstanding = 0;
    uint64_t bytes = 0;
    uint64_t last_bytes = 0;
  };

  size_t region() const { return (static_cast<size_t>(o_.size) + 4095) & ~size_t{4095}; }
  // QPs over all clients (the server serves o_.clients clients with o_.qps each).
  uint32_t total_qps() const { return o_.qps * (o_.server ? o_.clients : 1); }
  // Whether QP i's region holds the pattern both sides fill it with.
  bool intact(uint32_t i) { return std::memcmp(buf(i), expected_.data() + i * region(), o_.size) == 0; }
  uint8_t* buf(uint32_t i) { return mem_ + i * region(); }
  Conn& conn_of(uint32_t qpn) { return conns_[qpn - conns_[0].qpn]; }

  // perf.cc
  void setup_port();
  void setup_engine();
  void setup_resources();
  json local_info(uint32_t k = 0) const;
  void connect(const json& peer, uint32_t k = 0);
  void post_recv(Conn& c, uint32_t i);
  bool post_send(Conn& c, uint32_t i, engine::WrOpcode op);
  engine::WrOpcode opcode() const;
  [[noreturn]] void fail(const std::string& msg);
  void idle(uint64_t now, uint32_t received);

  // Polls the CQ; calls fn(wc) for every completion; any error ends the run.
  template <class Fn>
  void drain(Fn&& fn) {
    engine::WorkCompletion wc[64];
    int n;
    while ((n = host_->engine().poll_cq(cq_, 64, wc)) > 0) {
      for (int k = 0; k < n; ++k) {
        if (wc[k].status != engine::WcStatus::kSuccess) {
          fail("QP " + std::to_string(wc[k].qp_num) + ": work request failed: " +
               std::string(engine::to_string(wc[k].status)));
        }
        fn(wc[k]);
      }
    }
  }

  // serve.cc
  void serve();
  void wait_for_byes(std::vector<std::unique_ptr<Oob>>& oobs);

  // client.cc
  void drive();
  void bandwidth();
  void latency();

  // report.cc
  json qp_stats() const;
  void report(const json& client, const json& server);

  Options o_;
  dpdk::Port port_;
  std::unique_ptr<dpdk::EngineHost> host_;
  dpdk::TscClock clock_;
  Oob oob_;
  uint8_t* mem_ = nullptr;
  std::vector<uint8_t> expected_;
  int telemetry_id_ = -1;
  size_t mem_len_ = 0;
  uint32_t pd_ = 0;
  uint32_t cq_ = 0;
  engine::MrInfo mr_;
  std::vector<Conn> conns_;
  uint64_t peer_addr_ = 0;
  uint32_t peer_rkey_ = 0;
  uint64_t peer_region_ = 0;
  std::mt19937 psn_rng_{std::random_device{}()};
  double elapsed_s_ = 0;
  double messages_ = 0;
  json latency_json_ = json::object();
};

}  // namespace tita::perf
