// tita-perf's server: takes its clients' test, answers it, reports the sum (perf.h).
#include <unistd.h>

#include <algorithm>

#include "perf.h"

namespace tita::perf {

using engine::WrOpcode;

// ---- server: answers its clients' test until each says done.
void Perf::serve() {
  std::string err;
  OobListener listener;
  if (listener.listen(o_.tcp_port, &err) != 0) die(err);
  std::vector<std::unique_ptr<Oob>> oobs;
  for (uint32_t k = 0; k < o_.clients; ++k) {
    oobs.push_back(std::make_unique<Oob>());
    Oob& oob = *oobs.back();
    if (listener.accept(&oob, 120, &err) != 0) die(err);
    json hello;
    if (oob.recv(&hello, &err) != 0) die(err);
    // What the client asks for is checked as the command line's options are
    // (and a message of the wrong shape is main()'s error, not a crash).
    if (k == 0) {
      // The first client sets the test; the others must run the same one.
      o_.test = hello.value("test", o_.test);
      o_.mode = hello.value("mode", o_.mode);
      o_.check = hello.value("check", false);
      o_.size = hello.value("size", o_.size);
      o_.qps = hello.value("qps", o_.qps);
      o_.tx_depth = hello.value("tx_depth", o_.tx_depth);
      if (!o_.mtu_given) o_.mtu = hello.value("mtu", o_.mtu);
      o_.recovery = hello.value("recovery", o_.recovery);
      // Its line rate and pacing: engine settings, checked as the flags are.
      for (const char* name : {"rate_gbps", "pace"}) {
        if (!hello.contains(name)) continue;
        const engine::Setting& s = *engine::find_setting(name);
        const json& j = hello.at(name);
        const double x = s.kind == engine::SettingKind::kBool ? j.get<bool>() : j.get<double>();
        uint64_t v = 0;
        if (s.from_number(x, &v, &err) != 0) die("the client's test: " + std::string(name) + ": " + err);
        s.set(&o_.engine, v);
      }
      if (const std::string why = check_test(o_); !why.empty()) die("the client's test: " + why);
      if (o_.clients > 1 && o_.mode == "lat") die("--clients > 1 serves bandwidth tests only");
      setup_resources();
    } else if (hello.value("test", std::string()) != o_.test || hello.value("size", 0u) != o_.size ||
               hello.value("qps", 0u) != o_.qps || hello.value("mode", std::string()) != o_.mode) {
      die("client " + std::to_string(k + 1) + " runs a different test, size or QP count than client 1");
    }
    if (oob.send(local_info(k), &err) != 0) die(err);
    connect(hello.at("info"), k);
  }
  if (o_.test != "read") std::memset(mem_, 0, mem_len_);  // READ serves the pattern
  const bool echo = o_.mode == "lat" && o_.test != "read";
  const bool receives = (o_.test == "send" || echo) && o_.fault != "no-recv";
  if (receives) {
    for (Conn& c : conns_) {
      for (uint32_t k = 0; k < o_.tx_depth; ++k) post_recv(c, static_cast<uint32_t>(&c - conns_.data()));
    }
  }
  for (auto& oob : oobs) {
    if (oob->send({{"ready", true}}, &err) != 0) die(err);
  }
  std::vector<json> done(oobs.size());
  lanes_stop_ = false;
  run_lanes([&](Lane& lane) { serve_lane(lane, &lane == &lanes_[0] ? &oobs : nullptr, &done); });
  uint64_t bad = 0;
  for (const Lane& lane : lanes_) bad += lane.check_failures;
  // Data written by the clients: every region holds its client's pattern.
  if (o_.check && o_.test == "write") {
    for (uint32_t i = 0; i < total_qps(); ++i) bad += intact(i) ? 0 : 1;
  }
  json stats = qp_stats();
  stats["check_failures"] = bad;
  for (auto& oob : oobs) {
    if (oob->send({{"server", stats}}, &err) != 0) die(err);
  }
  // Ordered teardown: each client closes its port first and then says bye, so
  // the two ends of a point-to-point port (memif, vhost-user) never tear the
  // link down at the same time from both sides. (DPDK 22.11's memif handles
  // the peer's disconnect on the interrupt thread, racing a local close.)
  wait_for_byes(oobs);
  // The server's own line: the clients' messages and time, summed and maxed.
  json sum = done.empty() || done[0].is_null() ? json::object() : done[0].value("client", json::object());
  for (size_t k = 1; k < done.size(); ++k) {
    if (done[k].is_null()) continue;
    const json c = done[k].value("client", json::object());
    sum["messages"] = sum.value("messages", 0.0) + c.value("messages", 0.0);
    sum["data_packets"] = sum.value("data_packets", 0.0) + c.value("data_packets", 0.0);
    sum["seconds"] = std::max(sum.value("seconds", 0.0), c.value("seconds", 0.0));
  }
  report(sum, stats);
}

void Perf::serve_lane(Lane& lane, std::vector<std::unique_ptr<Oob>>* oobs, std::vector<json>* done) {
  const bool echo = o_.mode == "lat" && o_.test != "read";
  std::string err;
  size_t finished = 0;
  uint64_t spins = 0;
  while (!stop_requested() && !lanes_stop_.load(std::memory_order_relaxed)) {
    const uint64_t now = clock_.now_ns();
    const uint32_t got = lane.host->poll_once(now);
    drain(lane, [&](const engine::WorkCompletion& wc) {
      if (wc.opcode != engine::WcOpcode::kRecv && wc.opcode != engine::WcOpcode::kRecvRdmaWithImm) return;
      Conn& c = conn_of(wc.qp_num);
      const uint32_t i = index_of(c);
      c.completed++;
      c.bytes += wc.byte_len;
      if (o_.check && wc.opcode == engine::WcOpcode::kRecv && !intact(i)) ++lane.check_failures;
      post_recv(c, i);
      if (echo) post_send(c, i, o_.test == "send" ? WrOpcode::kSend : WrOpcode::kRdmaWriteWithImm);
    });
    if (oobs != nullptr && ++spins % 1024 == 0) {
      for (size_t k = 0; k < oobs->size(); ++k) {
        if (!(*done)[k].is_null()) continue;
        json msg;
        const int rc = (*oobs)[k]->poll(&msg, &err);
        if (rc < 0) die(err);
        if (rc > 0) {
          (*done)[k] = msg;
          ++finished;
        }
      }
      if (finished == oobs->size()) lanes_stop_ = true;
    }
    idle(lane, now, got);
  }
}

// Waits up to 10 s for every client's bye (or its connection closing).
void Perf::wait_for_byes(std::vector<std::unique_ptr<Oob>>& oobs) {
  std::vector<bool> gone(oobs.size(), false);
  size_t left = oobs.size();
  std::string err;
  for (int ms = 0; left > 0 && ms < 10'000 && !stop_requested(); ++ms) {
    for (size_t k = 0; k < oobs.size(); ++k) {
      json msg;
      if (gone[k] || oobs[k]->poll(&msg, &err) == 0) continue;
      gone[k] = true;  // bye, or closed
      --left;
    }
    if (left > 0) usleep(1000);
  }
}

}  // namespace tita::perf
