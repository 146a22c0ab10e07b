// Engines joined by in-memory links under a virtual clock: the fake port for
// engine tests and benchmarks. Each host has one port whose transmit queue
// drains at the line rate onto a link with a propagation delay; faults
// (loss, duplication, corruption, reordering, delay jitter) are injected per
// direction from a seeded generator, so every run is reproducible.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <vector>

#include "tita/capture/pcap.h"
#include "tita/engine/engine.h"
#include "tita/fabric/edit.h"

namespace tita::test {

struct LinkFaults {
  double loss = 0;        // probability a frame vanishes
  double duplicate = 0;   // probability a frame arrives twice
  double corrupt = 0;     // probability one random bit flips
  double reorder = 0;     // probability a frame is held back by reorder_ns
  uint64_t reorder_ns = 20'000;
  uint64_t jitter_ns = 0;  // uniform extra delay in [0, jitter_ns]
  double ce_mark = 0;      // probability an ECN-capable IPv4 frame leaves CE-marked (a switch's RED)
  // Frames for which this returns true leave CE-marked (a congested path).
  std::function<bool(const std::vector<uint8_t>&)> mark_if;
  // Frames for which this returns true vanish (a path's black hole, counted as lost).
  std::function<bool(const std::vector<uint8_t>&)> drop_if;
  // Extra delay of a frame (a path behind a deep queue).
  std::function<uint64_t(const std::vector<uint8_t>&)> delay_if;
};

class SimNet {
 public:
  struct Stats {
    uint64_t frames = 0;
    uint64_t lost = 0;
    uint64_t duplicated = 0;
    uint64_t corrupted = 0;
    uint64_t reordered = 0;
    uint64_t ce_marked = 0;
  };

  SimNet(int hosts, uint64_t rate_bps, uint64_t delay_ns, uint64_t seed = 1,
         std::function<void(engine::EngineConfig&, int)> tweak = {})
      : rate_bps_(rate_bps), delay_ns_(delay_ns), rng_(seed) {
    for (int i = 0; i < hosts; ++i) {
      auto h = std::make_unique<Host>();
      h->net = this;
      h->id = i;
      engine::EngineConfig cfg;
      cfg.mac[5] = static_cast<uint8_t>(i + 1);
      cfg.gid = wire::Gid::from_ipv4(0x0a000001 + static_cast<uint32_t>(i));
      cfg.line_rate_bps = rate_bps;
      cfg.base_rtt_ns = 2 * delay_ns + 2000;
      if (tweak) tweak(cfg, i);
      h->engine = std::make_unique<engine::Engine>(cfg, h.get());
      hosts_.push_back(std::move(h));
    }
    faults_.resize(static_cast<size_t>(hosts) * hosts);
  }

  engine::Engine& engine(int i) { return *hosts_[i]->engine; }
  uint64_t now() const { return now_ns_; }
  const Stats& stats() const { return stats_; }
  void set_faults(int from, int to, const LinkFaults& f) { faults_[index(from, to)] = f; }
  void set_faults_both(const LinkFaults& f) {
    for (auto& x : faults_) x = f;
  }
  // Zero copy, as a port that reads the payload where it lies: host i holds
  // each frame's payload (TxFrame::hold) from transmit_burst() until
  // release_after() ns after the frame has left the wire (a NIC's transmit
  // ring freed late).
  void hold_payload(int i, std::function<uint64_t()> release_after) { hosts_[i]->release_after = std::move(release_after); }
  // The hold tokens host i still holds.
  const std::multiset<uint64_t>& held(int i) const { return hosts_[i]->held; }
  // Frames host i was given as TxFrame::transient (to be copied at once).
  uint64_t transient_frames(int i) const { return hosts_[i]->transient; }
  // Records every frame as it leaves its sender.
  int capture(const std::string& path, std::string* err) { return pcap_.open(path, err); }

  // The MAC of host i, for address vectors.
  void mac(int i, uint8_t out[6]) const { std::memcpy(out, hosts_[i]->engine->config().mac, 6); }
  wire::Gid gid(int i) const { return hosts_[i]->engine->config().gid; }

  // Processes the next event; false when there is none.
  bool step() {
    if (!started_) {
      started_ = true;
      for (auto& h : hosts_) kick(*h);
    }
    if (events_.empty()) return false;
    Event ev = events_.top();
    events_.pop();
    now_ns_ = ev.time;
    Host& h = *hosts_[ev.host];
    switch (ev.kind) {
      case Kind::kDeliver:
        h.engine->receive(now_ns_, ev.frame->data(), static_cast<uint32_t>(ev.frame->size()));
        break;
      case Kind::kTxDone:
        h.busy = false;
        start_tx(h);
        break;
      case Kind::kWake:
        if (h.wake_at != ev.time) return true;  // superseded
        h.wake_at = UINT64_MAX;
        break;
      case Kind::kRelease:
        h.held.erase(h.held.find(ev.token));
        h.engine->release_payload(ev.token);
        break;
    }
    kick(h);
    return true;
  }

  // Runs events until done() or until the virtual clock passes deadline_ns.
  // Returns whether done() became true.
  bool run_until(const std::function<bool()>& done, uint64_t deadline_ns) {
    for (auto& h : hosts_) kick(*h);
    started_ = true;
    while (!done()) {
      if (events_.empty() || events_.top().time > deadline_ns) return done();
      step();
    }
    return true;
  }

  // Runs for `ns` of virtual time.
  void run_for(uint64_t ns) {
    const uint64_t end = now_ns_ + ns;
    run_until([] { return false; }, end);
    now_ns_ = std::max(now_ns_, end);
  }

 private:
  enum class Kind : uint8_t { kDeliver, kTxDone, kWake, kRelease };
  struct Event {
    uint64_t time;
    uint64_t seq;
    Kind kind;
    int host;
    std::shared_ptr<std::vector<uint8_t>> frame;
    uint64_t token = 0;  // kRelease
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  struct Host : engine::PacketIo {
    SimNet* net = nullptr;
    int id = 0;
    std::unique_ptr<engine::Engine> engine;
    std::deque<std::shared_ptr<std::vector<uint8_t>>> txq;
    std::deque<uint64_t> txq_hold;  // each queued frame's hold token (0: none)
    std::function<uint64_t()> release_after;
    std::multiset<uint64_t> held;
    uint64_t transient = 0;
    bool busy = false;
    uint64_t wake_at = UINT64_MAX;
    static constexpr uint32_t kQueueFrames = 64;  // a NIC's transmit ring

    uint32_t tx_space() override { return kQueueFrames - static_cast<uint32_t>(txq.size()); }
    void transmit_burst(uint64_t, const engine::TxFrame* burst, uint32_t n) override {
      for (uint32_t i = 0; i < n; ++i) transmit(burst[i]);
    }
    void transmit(const engine::TxFrame& f) {
      auto buf = std::make_shared<std::vector<uint8_t>>(f.len());
      f.copy_to(buf->data());
      txq.push_back(std::move(buf));
      transient += f.transient;
      const bool hold = release_after && f.hold != 0;
      txq_hold.push_back(hold ? f.hold : 0);
      if (hold) {
        held.insert(f.hold);
        engine->hold_payload(f.hold);
      }
    }
    // As the DPDK host: the ICRC of data frames summed as they are copied.
    bool sums_icrc() const override { return true; }
    bool holds_payload() const override { return true; }  // when release_after is set
  };

  size_t index(int from, int to) const { return static_cast<size_t>(from) * hosts_.size() + to; }

  void push(uint64_t t, Kind k, int host, std::shared_ptr<std::vector<uint8_t>> f = {}) {
    events_.push({t, seq_++, k, host, std::move(f)});
  }

  // Lets the host's engine work, starts its port, and schedules its next wakeup.
  void kick(Host& h) {
    h.engine->poll(now_ns_);
    start_tx(h);
    const uint64_t w = h.engine->next_wakeup_ns();
    if (w != UINT64_MAX) {
      const uint64_t t = std::max(w, now_ns_ + 1);
      if (t < h.wake_at) {
        h.wake_at = t;
        push(t, Kind::kWake, h.id);
      }
    }
  }

  // Puts the next queued frame on the wire: the destination is the host whose
  // MAC the frame is addressed to.
  void start_tx(Host& h) {
    if (h.busy || h.txq.empty()) return;
    auto frame = std::move(h.txq.front());
    h.txq.pop_front();
    const uint64_t hold = h.txq_hold.front();
    h.txq_hold.pop_front();
    h.busy = true;
    const uint64_t wire_ns = (frame->size() + 24) * 8 * 1'000'000'000ull / rate_bps_;
    push(now_ns_ + std::max<uint64_t>(wire_ns, 1), Kind::kTxDone, h.id);
    if (hold != 0) events_.push({now_ns_ + wire_ns + h.release_after(), seq_++, Kind::kRelease, h.id, {}, hold});
    if (pcap_.is_open()) pcap_.write(*frame, now_ns_);
    static constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    if (std::memcmp(frame->data(), kBroadcast, 6) == 0) {  // ARP requests: everyone else
      for (int to = 0; to < static_cast<int>(hosts_.size()); ++to) {
        if (to != h.id) push(now_ns_ + wire_ns + delay_ns_, Kind::kDeliver, to, frame);
      }
      return;
    }
    const int to = (*frame)[5] - 1;
    if (to < 0 || to >= static_cast<int>(hosts_.size())) return;
    ++stats_.frames;
    const LinkFaults& f = faults_[index(h.id, to)];
    std::uniform_real_distribution<double> u(0, 1);
    if ((f.loss > 0 && u(rng_) < f.loss) || (f.drop_if && f.drop_if(*frame))) {
      ++stats_.lost;
      return;
    }
    if (f.corrupt > 0 && u(rng_) < f.corrupt) {
      auto bad = std::make_shared<std::vector<uint8_t>>(*frame);
      const size_t bit = std::uniform_int_distribution<size_t>(0, bad->size() * 8 - 1)(rng_);
      (*bad)[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      frame = bad;
      ++stats_.corrupted;
    }
    if (((f.ce_mark > 0 && u(rng_) < f.ce_mark) || (f.mark_if && f.mark_if(*frame))) && frame->size() > 18) {
      auto marked = std::make_shared<std::vector<uint8_t>>(*frame);
      const bool tagged = (*marked)[12] == 0x81 && (*marked)[13] == 0x00;
      const size_t l3 = tagged ? 18 : 14;
      const bool ipv4 = (*marked)[l3 - 2] == 0x08 && (*marked)[l3 - 1] == 0x00;
      if (ipv4 && fabric::mark_ce(marked->data() + l3, false)) {
        frame = marked;
        ++stats_.ce_marked;
      }
    }
    uint64_t arrive = now_ns_ + wire_ns + delay_ns_;
    if (f.jitter_ns > 0) arrive += std::uniform_int_distribution<uint64_t>(0, f.jitter_ns)(rng_);
    if (f.delay_if) arrive += f.delay_if(*frame);
    if (f.reorder > 0 && u(rng_) < f.reorder) {
      arrive += f.reorder_ns;
      ++stats_.reordered;
    }
    push(arrive, Kind::kDeliver, to, frame);
    if (f.duplicate > 0 && u(rng_) < f.duplicate) {
      ++stats_.duplicated;
      push(arrive + 500, Kind::kDeliver, to, frame);
    }
  }

  uint64_t rate_bps_;
  uint64_t delay_ns_;
  std::mt19937_64 rng_;
  uint64_t now_ns_ = 0;
  uint64_t seq_ = 0;
  bool started_ = false;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::vector<LinkFaults> faults_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  capture::PcapWriter pcap_;
  Stats stats_;
};

// Connects QP a on host ha with QP b on host hb and moves both to RTS.
inline void connect(SimNet& net, int ha, uint32_t qa, int hb, uint32_t qb, const engine::QpAttr& base,
                    uint32_t access = engine::kAccessRemoteWrite | engine::kAccessRemoteRead) {
  using namespace engine;
  auto bring_up = [&](int h, uint32_t q, int peer, uint32_t peer_qp) {
    std::string err;
    QpAttr a = base;
    a.qp_access_flags = access;
    a.dest_qp_num = peer_qp;
    a.ah_attr.dgid = net.gid(peer);
    net.mac(peer, a.ah_attr.dmac);
    if (connect_rc(net.engine(h), q, a, &err) != 0) throw std::runtime_error(err);
  };
  bring_up(ha, qa, hb, qb);
  bring_up(hb, qb, ha, qa);
}

}  // namespace tita::test
