// A verb workload between two engines and its checks, independent of the host
// that carries the frames (the in-memory network, DPDK ports, ns-3): post every
// message, drive the hosts with step() until everything completes, then demand
// that every WR completed exactly once, in order, successfully, with the right
// details, and that every destination byte equals its source while nothing
// else changed.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <vector>

#include "tita/engine/engine.h"

namespace tita::test {

struct Message {
  engine::WrOpcode op;
  uint32_t len;
  uint64_t src_off;  // where the data comes from (side a for SEND/WRITE, side b for READ)
  uint64_t dst_off;
};

// One side: its engine, QP, CQ and the registered buffer.
struct Endpoint {
  engine::Engine* eng;
  uint32_t qp;
  uint32_t cq;
  engine::MrInfo mr;
  uint8_t* buf;
  size_t len;
};

// A mixed workload: every verb, sizes around the MTU boundaries and beyond, each
// message in its own region. *bytes_needed: the buffer each side needs.
inline std::vector<Message> verb_workload(uint32_t mtu, int count, uint64_t seed, uint64_t* bytes_needed,
                                          uint32_t max_len = 262144) {
  using engine::WrOpcode;
  const WrOpcode ops[] = {WrOpcode::kSend, WrOpcode::kSendWithImm, WrOpcode::kRdmaWrite, WrOpcode::kRdmaWriteWithImm,
                          WrOpcode::kRdmaRead};
  const uint32_t sizes[] = {0, 1, 3, 4, 5, mtu - 1, mtu, mtu + 1, 2 * mtu, 3 * mtu + 7, 10000, 65536, 262144};
  std::mt19937_64 rng(seed);
  std::vector<Message> out;
  uint64_t off = 0;
  for (int i = 0; i < count; ++i) {
    Message m;
    m.op = ops[i % 5];
    m.len = std::min(sizes[rng() % std::size(sizes)], max_len);
    m.src_off = m.dst_off = off;
    off += (m.len + 63) & ~63ull;
    out.push_back(m);
  }
  *bytes_needed = off + 64;
  return out;
}

inline void fill_pattern(uint8_t* buf, size_t len, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 8 <= len; i += 8) {
    const uint64_t v = rng();
    std::memcpy(buf + i, &v, 8);
  }
}

// Runs `msgs` from a to b. step() moves the hosts along (returns false to give
// up); settle() runs a little longer after the last completion, so that late
// duplicates could show up as double completions.
inline testing::AssertionResult run_verb_workload(const Endpoint& a, const Endpoint& b,
                                                  const std::vector<Message>& msgs,
                                                  const std::function<bool()>& step,
                                                  const std::function<void()>& settle) {
  using namespace engine;
  fill_pattern(a.buf, a.len, 11);
  fill_pattern(b.buf, b.len, 22);
  const std::vector<uint8_t> a_before(a.buf, a.buf + a.len);
  const std::vector<uint8_t> b_before(b.buf, b.buf + b.len);

  // Receives for every SEND (into its destination) and every WRITE with immediate.
  size_t receives = 0;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Message& m = msgs[i];
    if (m.op == WrOpcode::kRdmaWrite || m.op == WrOpcode::kRdmaRead) continue;
    Sge sge{b.mr.addr + m.dst_off, m.len, b.mr.lkey};
    RecvWr rwr;
    rwr.wr_id = 1'000'000 + i;
    const bool send = m.op == WrOpcode::kSend || m.op == WrOpcode::kSendWithImm;
    rwr.sg_list = send ? &sge : nullptr;
    rwr.num_sge = send ? 1 : 0;
    if (b.eng->post_recv(b.qp, &rwr, nullptr) != 0) return testing::AssertionFailure() << "post_recv failed";
    ++receives;
  }
  std::vector<WorkCompletion> done_a, done_b;
  auto drain = [&] {
    WorkCompletion wc[64];
    int n;
    while ((n = a.eng->poll_cq(a.cq, 64, wc)) > 0) done_a.insert(done_a.end(), wc, wc + n);
    while ((n = b.eng->poll_cq(b.cq, 64, wc)) > 0) done_b.insert(done_b.end(), wc, wc + n);
  };
  // Sends, posted as the send queue has room.
  size_t posted = 0;
  auto post_more = [&] {
    while (posted < msgs.size()) {
      const Message& m = msgs[posted];
      Sge sge{a.mr.addr + (m.op == WrOpcode::kRdmaRead ? m.dst_off : m.src_off), m.len, a.mr.lkey};
      SendWr wr;
      wr.wr_id = posted;
      wr.opcode = m.op;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.imm_data = static_cast<uint32_t>(0xabc00000 + posted);
      wr.rdma.remote_addr = b.mr.addr + (m.op == WrOpcode::kRdmaRead ? m.src_off : m.dst_off);
      wr.rdma.rkey = b.mr.rkey;
      if (a.eng->post_send(a.qp, &wr, nullptr) != 0) break;  // queue full: later
      ++posted;
    }
  };
  post_more();
  while (done_a.size() < msgs.size() || done_b.size() < receives) {
    if (!step()) {
      drain();
      return testing::AssertionFailure() << "stuck: " << done_a.size() << "/" << msgs.size() << " sends, "
                                         << done_b.size() << "/" << receives << " receives completed";
    }
    drain();
    post_more();
  }
  settle();
  drain();

  if (done_a.size() != msgs.size() || done_b.size() != receives) {
    return testing::AssertionFailure() << "completions: " << done_a.size() << "/" << msgs.size() << " sends, "
                                       << done_b.size() << "/" << receives << " receives (some twice?)";
  }
  std::set<uint64_t> seen;
  for (size_t i = 0; i < done_a.size(); ++i) {
    const WorkCompletion& wc = done_a[i];
    if (wc.status != WcStatus::kSuccess) {
      return testing::AssertionFailure() << to_string(wc.status) << " for WR " << wc.wr_id;
    }
    if (!seen.insert(wc.wr_id).second) return testing::AssertionFailure() << "WR " << wc.wr_id << " completed twice";
    if (wc.wr_id != i) return testing::AssertionFailure() << "send completion " << i << " is WR " << wc.wr_id;
  }
  size_t r = 0;
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Message& m = msgs[i];
    if (m.op == WrOpcode::kRdmaWrite || m.op == WrOpcode::kRdmaRead) continue;
    const WorkCompletion& wc = done_b[r++];
    const bool imm = m.op == WrOpcode::kSendWithImm || m.op == WrOpcode::kRdmaWriteWithImm;
    const WcOpcode want_op = m.op == WrOpcode::kRdmaWriteWithImm ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv;
    if (wc.status != WcStatus::kSuccess || wc.wr_id != 1'000'000 + i || wc.byte_len != m.len ||
        wc.with_imm != imm || (imm && wc.imm_data != 0xabc00000 + i) || wc.opcode != want_op) {
      return testing::AssertionFailure() << "receive completion for message " << i << ": " << to_string(wc.status)
                                         << " wr " << wc.wr_id << " len " << wc.byte_len << " imm " << wc.with_imm;
    }
  }
  // Data: each destination region holds its source; nothing else changed.
  std::vector<uint8_t> a_want = a_before, b_want = b_before;
  for (const Message& m : msgs) {
    if (m.op == WrOpcode::kRdmaRead) {
      std::copy_n(b_before.begin() + static_cast<ptrdiff_t>(m.src_off), m.len,
                  a_want.begin() + static_cast<ptrdiff_t>(m.dst_off));
    } else {
      std::copy_n(a_before.begin() + static_cast<ptrdiff_t>(m.src_off), m.len,
                  b_want.begin() + static_cast<ptrdiff_t>(m.dst_off));
    }
  }
  if (std::memcmp(a.buf, a_want.data(), a.len) != 0) return testing::AssertionFailure() << "requester memory differs";
  if (std::memcmp(b.buf, b_want.data(), b.len) != 0) return testing::AssertionFailure() << "responder memory differs";
  return testing::AssertionSuccess();
}

}  // namespace tita::test
