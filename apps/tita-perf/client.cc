// tita-perf's client: asks the server for the test, runs it, reports (perf.h).
#include <algorithm>
#include <chrono>
#include <fstream>

#include "perf.h"

namespace tita::perf {
namespace {

using engine::WrOpcode;

uint64_t mono_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

}  // namespace

// ---- client: runs the test and reports.
void Perf::drive() {
  std::string err;
  setup_resources();
  if (oob_.connect_to(o_.client, o_.tcp_port, 60, &err) != 0) die(err);
  const json hello = {{"test", o_.test},         {"mode", o_.mode}, {"size", o_.size},
                      {"qps", o_.qps},           {"mtu", o_.mtu},   {"recovery", o_.recovery},
                      {"tx_depth", o_.tx_depth}, {"rate_gbps", static_cast<double>(o_.engine.line_rate_bps) / 1e9},
                      {"pace", o_.engine.pace_line_rate},
                      {"check", o_.check},       {"info", local_info()}};
  if (oob_.send(hello, &err) != 0) die(err);
  json peer;
  if (oob_.recv(&peer, &err) != 0) die(err);
  connect(peer);
  if (o_.test == "read") std::memset(mem_, 0, mem_len_);
  json ready;
  if (oob_.recv(&ready, &err) != 0) die(err);
  if (o_.mode == "lat") {
    latency();
  } else {
    bandwidth();
  }
  uint64_t bad = 0;
  if (o_.check && o_.test == "read") {
    for (uint32_t i = 0; i < o_.qps; ++i) bad += intact(i) ? 0 : 1;
  }
  json mine = qp_stats();
  mine["check_failures"] = bad;
  mine["seconds"] = elapsed_s_;
  mine["messages"] = messages_;
  mine["latency_us"] = latency_json_;
  json per_engine = json::array();
  for (const Lane& lane : lanes_) per_engine.push_back(lane.messages);
  mine["engine_messages"] = per_engine;
  if (oob_.send({{"done", true}, {"client", mine}}, &err) != 0) die(err);
  json server;
  if (oob_.recv(&server, &err) != 0) die(err);
  report(mine, server.value("server", json::object()));
  // This end closes its port first, then lets the server close its own. The
  // engine leaves telemetry first: a scrape after it is gone would read freed memory.
  withdraw();
  lanes_.clear();
  port_.close();
  oob_.send({{"bye", true}}, &err);
}

// Every engine runs its QPs' share of the test on its own lcore; the result
// is their sum, over the longest of their times.
void Perf::bandwidth() {
  run_lanes([this](Lane& lane) { bandwidth_lane(lane); });
  messages_ = 0;
  elapsed_s_ = 0;
  for (const Lane& lane : lanes_) {
    messages_ += lane.messages;
    elapsed_s_ = std::max(elapsed_s_, lane.elapsed_s);
  }
}

void Perf::bandwidth_lane(Lane& lane) {
  const WrOpcode op = opcode();
  std::ofstream series;
  if (!o_.series.empty()) {  // one engine only (checked with the options)
    series.open(o_.series);
    if (!series) die("cannot write " + o_.series);
    series << "t_ns,qpn,goodput_bps,rate_bps,cwnd_bytes,inflight_bytes,retransmitted\n";
  }
  const uint64_t start = clock_.now_ns();
  const uint64_t end = start + static_cast<uint64_t>(o_.duration_s * 1e9);
  const uint64_t interval = static_cast<uint64_t>(o_.series_interval_us * 1e3);
  uint64_t next_sample = start + interval;
  // --iters is per QP: each QP posts that many (a shared total let the first
  // QP take all of them and left the others' regions unwritten).
  const uint64_t per_qp = o_.iters ? o_.iters : UINT64_MAX;
  bool posting = true;
  engine::Engine& eng = lane.engine();
  for (;;) {
    const uint64_t now = clock_.now_ns();
    if (stop_requested() || (o_.iters == 0 && now >= end)) posting = false;
    if (posting) {
      bool more = false;
      for (uint32_t i : lane.conns) {
        Conn& c = conns_[i];
        while (c.outstanding < o_.tx_depth && c.posted < per_qp) {
          if (!post_send(c, i, op)) break;
          ++c.outstanding;
          ++c.posted;
        }
        more = more || c.posted < per_qp;
      }
      if (!more) posting = false;
    }
    const uint32_t got = lane.host->poll_once(now);
    drain(lane, [&](const engine::WorkCompletion& wc) {
      Conn& c = conn_of(wc.qp_num);
      --c.outstanding;
      ++c.completed;
      c.bytes += o_.size;
      ++lane.messages;
    });
    if (series.is_open() && now >= next_sample) {
      for (uint32_t i : lane.conns) {
        Conn& c = conns_[i];
        engine::QpInfo info;
        eng.qp_info(c.qpn, &info);
        const double goodput = static_cast<double>(c.bytes - c.last_bytes) * 8e9 / static_cast<double>(interval);
        series << mono_ns() << "," << c.qpn << "," << static_cast<uint64_t>(goodput) << "," << info.rate_bps << ","
               << (info.cwnd_bytes == UINT64_MAX ? 0 : info.cwnd_bytes) << "," << info.inflight_bytes << ","
               << eng.qp_counters(c.qpn)->retransmitted_packets << "\n";
        c.last_bytes = c.bytes;
      }
      next_sample += interval;
    }
    bool finished = !posting;
    for (uint32_t i : lane.conns) finished = finished && conns_[i].outstanding == 0;
    if (finished) break;
    idle(lane, now, got);
    if (stop_requested() && now > end + 1'000'000'000) break;  // interrupted: stop waiting for stragglers
  }
  lane.elapsed_s = static_cast<double>(clock_.now_ns() - start) / 1e9;
}

void Perf::latency() {
  Conn& c = conns_[0];
  const WrOpcode op = opcode();
  const bool echo = o_.test != "read";
  if (echo) {
    for (uint32_t k = 0; k < o_.tx_depth; ++k) post_recv(c, 0);
  }
  const uint64_t n = o_.iters ? o_.iters : 10000;
  std::vector<double> rtt_us;
  rtt_us.reserve(n);
  const uint64_t start = clock_.now_ns();
  for (uint64_t i = 0; i < n && !stop_requested(); ++i) {
    const uint64_t t0 = clock_.now_ns();
    if (!post_send(c, 0, op)) die("post_send failed");
    bool got = false;
    while (!got && !stop_requested()) {
      lane_of(c).host->poll_once(clock_.now_ns());
      drain(lane_of(c), [&](const engine::WorkCompletion& wc) {
        const bool reply = wc.opcode == engine::WcOpcode::kRecv || wc.opcode == engine::WcOpcode::kRecvRdmaWithImm;
        if (reply) post_recv(c, 0);
        if (echo ? reply : wc.opcode == engine::WcOpcode::kRdmaRead) got = true;
      });
    }
    rtt_us.push_back(static_cast<double>(clock_.now_ns() - t0) / 1e3);
    ++messages_;
  }
  elapsed_s_ = static_cast<double>(clock_.now_ns() - start) / 1e9;
  // Like perftest: one-way latency is half the round trip for ping-pong tests;
  // a READ's latency is its whole round trip.
  const double div = echo ? 2 : 1;
  for (double& v : rtt_us) v /= div;
  latency_json_ = {{"p50", percentile(rtt_us, 0.5)},
                   {"p99", percentile(rtt_us, 0.99)},
                   {"p999", percentile(rtt_us, 0.999)},
                   {"min", rtt_us.empty() ? 0 : *std::min_element(rtt_us.begin(), rtt_us.end())},
                   {"samples", rtt_us.size()}};
}

}  // namespace tita::perf
