// Two engines, one QP each, with registered buffers and a completion-tracking
// workload: the shared setup of the engine transfer tests and benchmarks.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim_net.h"
#include "workload.h"

namespace tita::test {

struct Side {
  uint32_t pd = 0;
  uint32_t cq = 0;
  uint32_t qp = 0;
  engine::MrInfo mr;
  std::vector<uint8_t> buf;
};

class Pair {
 public:
  Pair(uint64_t rate_bps, uint64_t delay_ns, uint64_t buf_bytes, const engine::QpAttr& attr, uint64_t seed = 1,
       std::function<void(engine::EngineConfig&, int)> tweak = {})
      : net(2, rate_bps, delay_ns, seed, std::move(tweak)) {
    for (int i = 0; i < 2; ++i) {
      Side& s = side[i];
      engine::Engine& e = net.engine(i);
      s.pd = e.alloc_pd();
      s.buf.resize(buf_bytes);
      const uint32_t access = engine::kAccessLocalWrite | engine::kAccessRemoteWrite | engine::kAccessRemoteRead;
      EXPECT_EQ(e.reg_mr(s.pd, s.buf.data(), s.buf.size(), access, &s.mr), 0);
      EXPECT_EQ(e.create_cq(1 << 16, &s.cq), 0);
      EXPECT_EQ(e.create_qp(s.pd, {.send_cq = s.cq, .recv_cq = s.cq, .max_send_wr = 4096, .max_recv_wr = 4096},
                            &s.qp),
                0);
    }
    connect(net, 0, side[0].qp, 1, side[1].qp, attr);
  }

  engine::Engine& eng(int i) { return net.engine(i); }

  // Drains both CQs into `completions` (by side).
  void poll() {
    for (int i = 0; i < 2; ++i) {
      engine::WorkCompletion wc[64];
      int n;
      while ((n = eng(i).poll_cq(side[i].cq, 64, wc)) > 0) {
        for (int k = 0; k < n; ++k) completions[i].push_back(wc[k]);
      }
    }
  }

  // Runs until `want` completions have arrived on each side (or the deadline).
  bool run(size_t want0, size_t want1, uint64_t deadline_ns) {
    return net.run_until(
        [&] {
          poll();
          return completions[0].size() >= want0 && completions[1].size() >= want1;
        },
        deadline_ns);
  }

  // Both QPs' state and counters, for failure messages.
  std::string describe() {
    std::string out;
    for (int i = 0; i < 2; ++i) {
      engine::QpInfo info;
      eng(i).qp_info(side[i].qp, &info);
      const engine::QpCounters& q = *eng(i).qp_counters(side[i].qp);
      out += "\n  side " + std::to_string(i) + ": " + std::string(engine::to_string(info.state)) +
             " snd_una " + std::to_string(info.snd_una) + " snd_nxt " + std::to_string(info.snd_nxt) + " epsn " +
             std::to_string(info.epsn) + " tx " + std::to_string(q.tx_packets) + " retx " +
             std::to_string(q.retransmitted_packets) + " timeouts " + std::to_string(q.timeouts) + " nak_seq s/r " +
             std::to_string(q.nak_seq_sent) + "/" + std::to_string(q.nak_seq_received) + " nak_invalid s/r " +
             std::to_string(q.nak_invalid_sent) + "/" + std::to_string(q.nak_invalid_received) + " nak_access s/r " +
             std::to_string(q.nak_access_sent) + "/" + std::to_string(q.nak_access_received) + " rnr s/r " +
             std::to_string(q.rnr_nak_sent) + "/" + std::to_string(q.rnr_nak_received) + " dup " +
             std::to_string(q.duplicates_received) + " ooo " + std::to_string(q.out_of_order_received);
      for (const auto& wc : completions[i]) {
        if (wc.status != engine::WcStatus::kSuccess && wc.status != engine::WcStatus::kWrFlushErr) {
          out += " first error: WR " + std::to_string(wc.wr_id) + " " + std::string(engine::to_string(wc.status));
          break;
        }
      }
    }
    return out;
  }

  SimNet net;
  Side side[2];
  std::vector<engine::WorkCompletion> completions[2];
};

// Runs the verb workload (workload.h) from side 0 to side 1 until it is done
// or deadline_ns of simulated time pass; fails the test if it did not finish.
inline void run_workload(Pair& p, const std::vector<Message>& msgs, uint64_t deadline_ns) {
  const Endpoint a{&p.eng(0), p.side[0].qp, p.side[0].cq, p.side[0].mr, p.side[0].buf.data(), p.side[0].buf.size()};
  const Endpoint b{&p.eng(1), p.side[1].qp, p.side[1].cq, p.side[1].mr, p.side[1].buf.data(), p.side[1].buf.size()};
  const uint64_t deadline = p.net.now() + deadline_ns;
  bool stuck = false;
  auto step = [&] {
    if (!p.net.step()) stuck = true;
    return !stuck && p.net.now() <= deadline;
  };
  auto settle = [&] { p.net.run_for(100'000); };
  ASSERT_TRUE(run_verb_workload(a, b, msgs, step, settle)) << p.describe();
}

}  // namespace tita::test
