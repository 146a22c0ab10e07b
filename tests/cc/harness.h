// A small deterministic packet-level single-bottleneck simulator for the cc/
// algorithms: N senders, one FIFO switch egress queue, one receiver.
//
//   sender i --(NIC, nic_rate)--prop/4--> [switch queue, link_rate] --prop/4--> receiver
//   receiver --prop/2--> sender i        (ACKs and CNPs: not queued)
//
// The switch marks ECN at dequeue with lib/fabric's RED (red.h) on the queue left
// behind (as the HPCC artifact does) using a seeded RNG, and pushes an INT record
// (ts, tx_bytes, qlen after dequeue, link rate) at dequeue. An optional access
// hop (the sender's uplink: never queued) precedes it. The receiver ACKs every
// ack_every packets, echoing the send timestamp, the CE count and the INT stack
// of the last packet, and sends CNPs as np_on_data() says. Buffers are infinite
// (no loss, no PFC): the queue shows what the algorithm lets build up. Senders
// pace at rate_bps() and send while bytes in flight < cwnd_bytes() (the HPCC
// artifact's window check).
//
// It exists to test control laws quickly; the real validation is ns-3.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tita/cc/cc.h"
#include "tita/fabric/red.h"

namespace tita::cc::harness {

enum class IntMode {
  kNone,                // no INT at all: n_hops = 0
  kBottleneck,          // the bottleneck pushes a record
  kAccessAndBottleneck, // the sender's uplink and the bottleneck (2 hops)
  kAccessOnly,          // the sender's uplink does INT, the bottleneck does not (partial)
};

struct Config {
  std::string algorithm = "hpcc";
  std::vector<std::string> params;  // "name=value" overrides
  int n_flows = 2;
  uint64_t link_rate_bps = 100'000'000'000;
  uint64_t nic_rate_bps = 100'000'000'000;
  uint64_t prop_rtt_ns = 8'000;     // propagation, round trip
  uint32_t mtu_bytes = 1000;
  IntMode int_mode = IntMode::kBottleneck;
  fabric::RedConfig red;            // unset fields: red_defaults(link_rate_bps)
  NpParams np;
  uint32_t ack_every = 1;
  uint64_t seed = 1;
  std::vector<uint64_t> start_ns;   // per flow (default 0)
  std::vector<uint64_t> stop_ns;    // per flow: stops sending (default never)
  uint64_t duration_ns = 1'000'000;
  uint64_t measure_from_ns = 0;     // statistics window: [measure_from_ns, duration_ns)
  uint64_t bin_ns = 10'000;         // per-flow delivery time series
};

struct Result {
  uint64_t base_rtt_ns = 0;               // what the flows were told (unloaded RTT)
  uint64_t bdp_bytes = 0;                 // link rate x base RTT
  std::vector<double> goodput_bps;        // per flow, over the window
  double utilisation = 0;                 // link busy fraction over the window
  uint64_t max_queue_bytes = 0;           // over the window
  uint64_t peak_queue_bytes = 0;          // over the whole run
  double mean_queue_bytes = 0;            // time average over the window
  uint64_t cnps = 0;
  uint64_t packets = 0;
  std::vector<std::vector<uint64_t>> delivered;  // [flow][bin] bytes delivered

  double jain() const {
    double s = 0, s2 = 0;
    for (double x : goodput_bps) {
      s += x;
      s2 += x * x;
    }
    return s2 > 0 ? s * s / (goodput_bps.size() * s2) : 0;
  }
  // Link throughput (all flows) in bin b, as a fraction of the link rate.
  double bin_utilisation(size_t b, uint64_t bin_ns, uint64_t link_rate_bps) const {
    uint64_t bytes = 0;
    for (const auto& f : delivered) bytes += b < f.size() ? f[b] : 0;
    return static_cast<double>(bytes) * 8e9 / bin_ns / static_cast<double>(link_rate_bps);
  }
};

class Simulator {
 public:
  explicit Simulator(const Config& c) : c_(c), rng_(c.seed) {
    link_ser_ps_ = ser_ps(c.mtu_bytes, c.link_rate_bps);
    nic_ser_ps_ = ser_ps(c.mtu_bytes, c.nic_rate_bps);
    fwd1_ps_ = c.prop_rtt_ns * 1000 / 4;
    fwd2_ps_ = c.prop_rtt_ns * 1000 / 4;
    back_ps_ = c.prop_rtt_ns * 1000 - fwd1_ps_ - fwd2_ps_;
    base_rtt_ns_ = (c.prop_rtt_ns * 1000 + link_ser_ps_ + nic_ser_ps_ + 999) / 1000;
    red_ = c.red.resolve(c.link_rate_bps);

    FlowConfig link{c.nic_rate_bps, base_rtt_ns_, c.mtu_bytes};
    std::string err;
    if (Params::create(c.algorithm, link, &params_, &err) != 0) throw std::runtime_error(err);
    for (const auto& a : c.params)
      if (params_.set(a, &err) != 0) throw std::runtime_error(err);

    senders_.resize(c.n_flows);
    receivers_.resize(c.n_flows);
    delivered_in_window_.assign(c.n_flows, 0);
    const size_t bins = c.duration_ns / c.bin_ns + 1;
    result_.delivered.assign(c.n_flows, std::vector<uint64_t>(bins, 0));
    for (int i = 0; i < c.n_flows; ++i) {
      Sender& s = senders_[i];
      s.start_ps = (i < static_cast<int>(c.start_ns.size()) ? c.start_ns[i] : 0) * 1000;
      s.stop_ps = i < static_cast<int>(c.stop_ns.size()) ? c.stop_ns[i] * 1000 : UINT64_MAX;
      push(s.start_ps, Kind::kStart, i);
    }
  }

  Result run() {
    const uint64_t end_ps = c_.duration_ns * 1000;
    while (!events_.empty() && events_.top().t_ps < end_ps) {
      const Event e = events_.top();
      events_.pop();
      advance_clock(e.t_ps);
      dispatch(e);
    }
    advance_clock(end_ps);
    finish();
    return result_;
  }

  const Params& params() const { return params_; }

 private:
  enum class Kind : uint8_t { kStart, kSend, kArrive, kTxDone, kRecv, kAck, kCnp, kTimer };
  struct Packet {  // a data packet, then (at the receiver) its ACK
    int flow;
    uint32_t bytes;
    uint64_t seq_end;
    uint64_t sent_ps;
    uint32_t acked_packets;  // ACK: packets covered
    uint32_t ce_packets;     // ACK: of those, CE-marked
    bool ce;
    uint8_t n_hops;
    bool partial;
    IntHop hops[kMaxIntHops];
  };
  struct Event {
    uint64_t t_ps;
    uint64_t order;
    Kind kind;
    int flow;
    uint32_t slot;  // index into packets_ for packet events
    bool operator>(const Event& o) const {
      return t_ps != o.t_ps ? t_ps > o.t_ps : order > o.order;
    }
  };
  struct Sender {
    Flow cc;
    uint64_t start_ps = 0, stop_ps = UINT64_MAX;
    uint64_t snd_nxt = 0, snd_una = 0;
    uint64_t last_send_ps = 0, nic_free_ps = 0;
    uint64_t pending_send_ps = UINT64_MAX;
    uint64_t pending_timer_ps = UINT64_MAX;
    uint64_t tx_bytes = 0;  // access-hop counter
    bool started = false, sent_any = false;
  };
  struct Receiver {
    uint64_t rcv_nxt = 0;
    uint32_t unacked = 0, unacked_ce = 0;
    NpState np;
  };

  static uint64_t ser_ps(uint64_t bytes, uint64_t rate_bps) {
    return static_cast<uint64_t>(std::llround(static_cast<double>(bytes) * 8e12 / rate_bps));
  }
  void push(uint64_t t_ps, Kind k, int flow, uint32_t slot = 0) {
    events_.push({t_ps, order_++, k, flow, slot});
  }
  uint32_t store(const Packet& p) {
    if (!free_.empty()) {
      const uint32_t s = free_.back();
      free_.pop_back();
      packets_[s] = p;
      return s;
    }
    packets_.push_back(p);
    return static_cast<uint32_t>(packets_.size() - 1);
  }
  uint64_t now_ns() const { return now_ps_ / 1000; }

  void advance_clock(uint64_t t_ps) {
    const uint64_t from = std::max(now_ps_, c_.measure_from_ns * 1000);
    if (t_ps > from) queue_area_ += static_cast<double>(qlen_bytes_) * (t_ps - from);
    now_ps_ = t_ps;
  }

  void dispatch(const Event& e) {
    switch (e.kind) {
      case Kind::kStart: {
        Sender& s = senders_[e.flow];
        s.cc.init(params_, FlowConfig{c_.nic_rate_bps, base_rtt_ns_, c_.mtu_bytes}, now_ns());
        s.started = true;
        s.pending_send_ps = UINT64_MAX;
        rearm_timer(e.flow);
        try_send(e.flow);
        break;
      }
      case Kind::kSend:
        if (senders_[e.flow].pending_send_ps == e.t_ps) {
          senders_[e.flow].pending_send_ps = UINT64_MAX;
          try_send(e.flow);
        }
        break;
      case Kind::kArrive: on_arrive(e.slot); break;
      case Kind::kTxDone: on_tx_done(); break;
      case Kind::kRecv: on_recv(e.slot); break;
      case Kind::kAck: on_ack(e.slot); break;
      case Kind::kCnp: {
        Sender& s = senders_[e.flow];
        s.cc.on_cnp(now_ns());
        ++result_.cnps;
        rearm_timer(e.flow);
        try_send(e.flow);
        break;
      }
      case Kind::kTimer: {
        Sender& s = senders_[e.flow];
        if (s.pending_timer_ps != e.t_ps) break;
        s.pending_timer_ps = UINT64_MAX;
        if (s.cc.next_timer_ns() <= now_ns()) s.cc.on_timer(now_ns());
        rearm_timer(e.flow);
        try_send(e.flow);
        break;
      }
    }
  }

  void rearm_timer(int f) {
    Sender& s = senders_[f];
    const uint64_t t = s.cc.next_timer_ns();
    if (t == kNoTimer) return;
    const uint64_t t_ps = std::max(t * 1000, now_ps_);
    if (t_ps < s.pending_timer_ps) {
      s.pending_timer_ps = t_ps;
      push(t_ps, Kind::kTimer, f);
    }
  }

  void try_send(int f) {
    Sender& s = senders_[f];
    if (!s.started || now_ps_ >= s.stop_ps) return;
    const uint64_t inflight = s.snd_nxt - s.snd_una;
    const uint64_t cwnd = s.cc.cwnd_bytes();
    if (cwnd != kNoWindow && inflight >= cwnd) return;  // send while in flight < cwnd
    uint64_t t = std::max(now_ps_, s.nic_free_ps);
    if (s.sent_any) t = std::max(t, s.last_send_ps + ser_ps(c_.mtu_bytes, s.cc.rate_bps()));
    if (t > now_ps_) {
      if (t < s.pending_send_ps) {
        s.pending_send_ps = t;
        push(t, Kind::kSend, f);
      }
      return;
    }
    Packet p{};
    p.flow = f;
    p.bytes = c_.mtu_bytes;
    s.snd_nxt += p.bytes;
    p.seq_end = s.snd_nxt;
    p.sent_ps = now_ps_;
    s.tx_bytes += p.bytes;
    if (c_.int_mode == IntMode::kAccessAndBottleneck || c_.int_mode == IntMode::kAccessOnly) {
      p.hops[p.n_hops++] = {c_.nic_rate_bps, static_cast<uint32_t>(now_ns()),
                            static_cast<uint32_t>(s.tx_bytes), 0};
      p.partial = c_.int_mode == IntMode::kAccessOnly;
    }
    s.last_send_ps = now_ps_;
    s.sent_any = true;
    s.nic_free_ps = now_ps_ + nic_ser_ps_;
    s.cc.on_send(now_ns(), p.bytes);
    rearm_timer(f);
    ++result_.packets;
    push(now_ps_ + nic_ser_ps_ + fwd1_ps_, Kind::kArrive, f, store(p));
    try_send(f);  // schedules the next packet (pacing or NIC)
  }

  void on_arrive(uint32_t slot) {
    queue_.push_back(slot);
    qlen_bytes_ += packets_[slot].bytes;
    result_.peak_queue_bytes = std::max(result_.peak_queue_bytes, qlen_bytes_);
    if (now_ps_ >= c_.measure_from_ns * 1000)
      result_.max_queue_bytes = std::max(result_.max_queue_bytes, qlen_bytes_);
    if (!link_busy_) start_tx();
  }

  void start_tx() {
    const uint32_t slot = queue_.front();
    queue_.pop_front();
    Packet& p = packets_[slot];
    qlen_bytes_ -= p.bytes;
    link_tx_bytes_ += p.bytes;
    if (c_.int_mode == IntMode::kBottleneck || c_.int_mode == IntMode::kAccessAndBottleneck) {
      p.hops[p.n_hops++] = {c_.link_rate_bps, static_cast<uint32_t>(now_ns()),
                            static_cast<uint32_t>(link_tx_bytes_),
                            static_cast<uint32_t>(qlen_bytes_)};
    }
    const double pmark = fabric::red_mark_probability(qlen_bytes_, red_);
    if (pmark > 0 && static_cast<double>(rng_() >> 11) * 0x1.0p-53 < pmark) p.ce = true;
    link_busy_ = true;
    const uint64_t from = c_.measure_from_ns * 1000;
    if (now_ps_ >= from) busy_ps_ += link_ser_ps_;
    push(now_ps_ + link_ser_ps_, Kind::kTxDone, p.flow);
    push(now_ps_ + link_ser_ps_ + fwd2_ps_, Kind::kRecv, p.flow, slot);
  }

  void on_tx_done() {
    link_busy_ = false;
    if (!queue_.empty()) start_tx();
  }

  void on_recv(uint32_t slot) {
    const Packet& p = packets_[slot];
    Receiver& r = receivers_[p.flow];
    r.rcv_nxt = p.seq_end;
    ++r.unacked;
    r.unacked_ce += p.ce ? 1 : 0;
    const size_t bin = now_ns() / c_.bin_ns;
    if (bin < result_.delivered[p.flow].size()) result_.delivered[p.flow][bin] += p.bytes;
    if (now_ps_ >= c_.measure_from_ns * 1000) delivered_in_window_[p.flow] += p.bytes;
    if (np_on_data(c_.np, r.np, now_ns(), p.ce)) push(now_ps_ + back_ps_, Kind::kCnp, p.flow);
    if (r.unacked < c_.ack_every) {
      free_.push_back(slot);
      return;
    }
    // The packet becomes its ACK: it keeps the timestamp echo and the INT stack.
    Packet& a = packets_[slot];
    a.seq_end = r.rcv_nxt;
    a.acked_packets = r.unacked;
    a.ce_packets = r.unacked_ce;
    r.unacked = r.unacked_ce = 0;
    push(now_ps_ + back_ps_, Kind::kAck, p.flow, slot);
  }

  void on_ack(uint32_t slot) {
    const Packet& a = packets_[slot];
    Sender& s = senders_[a.flow];
    AckSample sample{};
    sample.acked_bytes = a.seq_end - s.snd_una;
    s.snd_una = a.seq_end;
    sample.ack_seq_bytes = a.seq_end;
    sample.next_seq_bytes = s.snd_nxt;
    sample.inflight_bytes = s.snd_nxt - s.snd_una;
    sample.rtt_ns = static_cast<uint32_t>((now_ps_ - a.sent_ps) / 1000);
    sample.acked_packets = a.acked_packets;
    sample.ce_packets = a.ce_packets;
    sample.n_hops = a.n_hops;
    sample.int_partial = a.partial;
    std::copy(a.hops, a.hops + a.n_hops, sample.hops);
    free_.push_back(slot);
    s.cc.on_ack(now_ns(), sample);
    rearm_timer(a.flow);
    try_send(a.flow);
  }

  void finish() {
    const double window_ns = static_cast<double>(c_.duration_ns - c_.measure_from_ns);
    result_.base_rtt_ns = base_rtt_ns_;
    result_.bdp_bytes = static_cast<uint64_t>(bytes_in(static_cast<double>(c_.link_rate_bps),
                                                       static_cast<double>(base_rtt_ns_)));
    for (int i = 0; i < c_.n_flows; ++i)
      result_.goodput_bps.push_back(static_cast<double>(delivered_in_window_[i]) * 8e9 / window_ns);
    result_.utilisation = static_cast<double>(busy_ps_) / (window_ns * 1000);
    result_.mean_queue_bytes = queue_area_ / (window_ns * 1000);
  }

  Config c_;
  std::mt19937_64 rng_;
  Params params_;
  fabric::RedParams red_;
  uint64_t link_ser_ps_ = 0, nic_ser_ps_ = 0, fwd1_ps_ = 0, fwd2_ps_ = 0, back_ps_ = 0;
  uint64_t base_rtt_ns_ = 0;
  uint64_t now_ps_ = 0;
  uint64_t order_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<Packet> packets_;
  std::vector<uint32_t> free_;
  std::vector<Sender> senders_;
  std::vector<Receiver> receivers_;
  std::deque<uint32_t> queue_;
  uint64_t qlen_bytes_ = 0;
  uint64_t link_tx_bytes_ = 0;
  bool link_busy_ = false;
  uint64_t busy_ps_ = 0;
  double queue_area_ = 0;
  std::vector<uint64_t> delivered_in_window_;
  Result result_;
};

inline Result run(const Config& c) { return Simulator(c).run(); }

}  // namespace tita::cc::harness
