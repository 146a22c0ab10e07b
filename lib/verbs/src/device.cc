#include "device.h"

#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "tita/dpdk/telemetry.h"
#include "tita/wire/opcode.h"

namespace tita::verbs {

namespace {

std::mutex g_mu;  // g_device's creation and destruction
Device* g_device = nullptr;
std::string g_error;  // why there is no device, once tried

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The CPUs this process may run on, as EAL's --lcores takes a set: "0-1,4".
std::string cpu_set() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "0";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE;) {
    if (!CPU_ISSET(c, &set)) {
      ++c;
      continue;
    }
    int end = c;
    while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set)) ++end;
    out += (out.empty() ? "" : ",") + std::to_string(c) + (end > c ? "-" + std::to_string(end) : "");
    c = end + 1;
  }
  return out.empty() ? "0" : out;
}

// The eal setting's arguments: its words between spaces and tabs.
std::vector<std::string> words(std::string_view s) {
  constexpr std::string_view kBlanks = " \t";
  std::vector<std::string> out;
  for (size_t b = s.find_first_not_of(kBlanks); b != std::string_view::npos; b = s.find_first_not_of(kBlanks, b)) {
    const size_t e = std::min(s.find_first_of(kBlanks, b), s.size());
    out.emplace_back(s.substr(b, e - b));
    b = e;
  }
  return out;
}

constexpr uint64_t kLingerNs = 20'000'000;  // how long a closing device keeps sending what it owes

bool looks_like_pci(const std::string& s) { return s.find(':') != std::string::npos && s.find('.') != std::string::npos; }

void sleep_ns(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

// Set while this thread starts the device: EAL may load drivers that call
// libibverbs themselves (DPDK's mlx5 PMD); they see the kernel devices only.
thread_local bool t_starting = false;

}  // namespace

Device* Device::get(std::string* err) {
  if (t_starting) {
    *err = "the tita device is starting";
    return nullptr;
  }
  std::lock_guard lock(g_mu);
  if (g_device != nullptr) return g_device;
  if (!g_error.empty()) {
    *err = g_error;
    return nullptr;
  }
  auto d = std::unique_ptr<Device>(new Device());
  t_starting = true;
  const int rc = d->init(&g_error);
  t_starting = false;
  if (rc != 0) {
    *err = g_error;
    return nullptr;
  }
  g_device = d.release();
  return g_device;
}

bool Device::ours(const ibv_device* dev) { return dev != nullptr && g_device != nullptr && dev == &g_device->ibv_; }

void Device::shutdown() {
  std::lock_guard lock(g_mu);
  if (g_device == nullptr) return;
  Device* d = g_device;
  g_device = nullptr;
  d->stop_ = true;
  for (auto& lane : d->lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
  }
  if (d->cfg_.log >= Config::Log::kInfo)
    for (const auto& [qpn, qp] : d->qps_) d->report_qp(qp->lane, qpn);
  for (auto& lane : d->lanes_) {
    dpdk::telemetry_withdraw(lane->telemetry_id);
    lane->host.reset();
  }
  // Closing a port may write to a peer that is gone (virtio-user to a vhost
  // process that exited first): the SIGPIPE that would kill the application
  // is held back here and discarded, without touching its signal handlers.
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  if (d->cfg_.log < Config::Log::kInfo) dpdk::quiet_logs();
  dpdk::park_interrupt_thread();  // no interrupt callback runs while the port and EAL go (port.h)
  d->port_.close();
  dpdk::eal_cleanup();
  sigpending(&pending);
  if (!was_pending && sigismember(&pending, SIGPIPE)) {
    const timespec zero{0, 0};
    sigtimedwait(&pipe_only, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  delete d;
}

void Device::log(Config::Log level, const char* fmt, ...) {
  if (level > cfg_.log) return;
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "tita: %s\n", line);
}

int Device::init(std::string* err) {
  if (int rc = load(&cfg_, err); rc != 0) return rc;
  // EAL: no hugepages unless asked, this process's own files, every CPU allowed
  // (EAL pins its main thread to the main lcore's set: the application's thread).
  std::vector<std::string> args = {"tita-verbs"};
  if (cfg_.hugepages) {
    args.push_back("--in-memory");
  } else {
    args.insert(args.end(), {"--no-huge", "-m", std::to_string(cfg_.memory_mb)});
  }
  args.insert(args.end(), {"--file-prefix", "tita-verbs-" + std::to_string(getpid()), "--lcores",
                           "0@(" + cpu_set() + ")"});
  const char* level = cfg_.log == Config::Log::kDebug  ? "8"
                      : cfg_.log == Config::Log::kInfo ? "6"
                      : cfg_.log == Config::Log::kNone ? "1"
                                                       : "4";
  args.insert(args.end(), {"--log-level", level});
  std::string port_name = cfg_.port;
  if (!cfg_.vdev.empty()) {
    args.insert(args.end(), {"--no-pci", "--vdev", cfg_.vdev});
    port_name = cfg_.vdev.substr(0, cfg_.vdev.find(','));
  } else if (looks_like_pci(cfg_.port)) {
    args.insert(args.end(), {"-a", cfg_.port});
  }
  for (std::string& w : words(cfg_.eal)) args.push_back(std::move(w));
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string why;
  if (dpdk::eal_init(static_cast<int>(args.size()), argv.data(), &why) < 0) {
    *err = "cannot start DPDK (" + why + ")";
    return -ENODEV;
  }
  clock_.emplace();
  dpdk::PortConfig pc;
  pc.rx_queues = pc.tx_queues = static_cast<uint16_t>(cfg_.engines);
  if (int rc = port_.open(port_name, pc, &why); rc != 0) {
    *err = "cannot open DPDK port " + port_name + ": " + why;
    return rc;
  }
  if (!cfg_.mac.empty()) {
    std::memcpy(mac_, cfg_.mac_bytes, 6);
  } else {
    std::memcpy(mac_, port_.mac(), 6);
  }
  // The node GUID: the one the settings fix (config.h), else the NIC's MAC's.
  if (!settled_node_guid(cfg_, &guid_)) guid_ = eui64(mac_);
  ibv_.node_type = IBV_NODE_CA;
  ibv_.transport_type = IBV_TRANSPORT_IB;
  std::snprintf(ibv_.name, sizeof ibv_.name, "%s", cfg_.device.c_str());
  std::snprintf(ibv_.dev_name, sizeof ibv_.dev_name, "uverbs-%s", cfg_.device.c_str());
  std::snprintf(ibv_.dev_path, sizeof ibv_.dev_path, "/sys/class/infiniband_verbs/uverbs-%s", cfg_.device.c_str());
  std::snprintf(ibv_.ibdev_path, sizeof ibv_.ibdev_path, "/sys/class/infiniband/%s", cfg_.device.c_str());
  virtual_port_ = !cfg_.vdev.empty();
  link_was_up_ = link_up();
  for (uint32_t k = 0; k < cfg_.engines; ++k) {
    lanes_.push_back(std::make_unique<Lane>());
    lanes_.back()->index = k;
  }
  if (cfg_.engines > 1) {
    const auto inboxes =
        dpdk::Steering::make_inboxes("tita_verbs", static_cast<uint16_t>(cfg_.engines));
    if (inboxes.empty()) {
      *err = "cannot create the engines' inbox rings";
      return -ENOMEM;
    }
    for (auto& lane : lanes_) {
      lane->steering.self = static_cast<uint16_t>(lane->index);
      lane->steering.inbox = inboxes;
    }
  }
  log(Config::Log::kInfo, "%s on DPDK port %s, %s, MAC %02x:%02x:%02x:%02x:%02x:%02x, link %s %u Mb/s, frames up to %u B",
      cfg_.device.c_str(), port_name.c_str(), cfg_.ip.c_str(), mac_[0], mac_[1], mac_[2], mac_[3], mac_[4], mac_[5],
      link_was_up_ ? "up" : "down", port_.link_speed_mbps(), port_.max_frame_bytes());
  return 0;
}

uint32_t Device::max_path_mtu() const {
  // The headers a payload packet may carry (WRITE Only with Immediate, VLAN
  // tag), the ICRC and the telemetry trailer tita adds.
  const uint32_t overhead = 14 + 4 + 20 + 8 + 12 + 20 + 4 + 8;
  for (uint32_t mtu = 4096; mtu > 256; mtu /= 2) {
    if (mtu + overhead <= port_.max_frame_bytes()) return mtu;
  }
  return 256;
}

int Device::attach(Context* c) {
  {
    std::lock_guard lock(contexts_mu_);
    contexts_.push_back(c);
    if (contexts_.size() > 1) return 0;
  }
  // The first context: the link, the engine and its thread.
  if (!link_up() && cfg_.link_wait_ms > 0) {
    log(Config::Log::kInfo, "%s: waiting up to %u ms for the link of %s", cfg_.device.c_str(), cfg_.link_wait_ms,
        port_.name().c_str());
    const uint64_t until = clock_->now_ns() + uint64_t{cfg_.link_wait_ms} * 1'000'000;
    while (!port_.link_up() && clock_->now_ns() < until) sleep_ns(1'000'000);
    if (!port_.link_up()) log(Config::Log::kError, "%s: the link of %s is down", cfg_.device.c_str(), port_.name().c_str());
  }
  link_was_up_ = link_up();
  engine::EngineConfig ec = cfg_.engine;  // the settings, checked as they were read
  std::memcpy(ec.mac, mac_, 6);
  ec.gid = gid();
  if (ec.line_rate_bps == 0) {  // rate_gbps unset: the port's speed
    const uint32_t speed = port_.link_speed_mbps();
    ec.line_rate_bps = speed > 0 ? uint64_t{speed} * 1'000'000 : engine::EngineConfig{}.line_rate_bps;
  }
  ec.max_frame_bytes = port_.max_frame_bytes();
  stop_ = false;
  next_link_check_ns_ = 0;
  for (auto& lane : lanes_) {
    lane->host = std::make_unique<dpdk::EngineHost>(
        port_, static_cast<uint16_t>(lane->index), ec,
        dpdk::HostOptions{.zero_copy = false, .port_mac = cfg_.mac.empty(),
                          .steering = lanes_.size() > 1 ? &lane->steering : nullptr});
    engine::Engine& e = lane->host->engine();
    e.set_event_hook(&Device::on_event, this);
    for (const auto& [ip, m] : cfg_.neighbours) e.add_neighbour(ip, m.data());  // checked by the config
    // Its counters for tita-exporter and tita-doctor, read under the lane's lock.
    const std::string name = lanes_.size() > 1 ? cfg_.device + " engine " + std::to_string(lane->index) : cfg_.device;
    lane->telemetry_id = dpdk::telemetry_publish(lane->host.get(), name, &lane->mu);
  }
  for (auto& lane : lanes_) lane->thread = std::thread([this, l = lane.get()] { run(*l); });
  return 0;
}

Context* Device::context_of_file(dev_t dev, ino_t ino) {
  std::lock_guard lock(contexts_mu_);
  for (Context* c : contexts_) {
    struct stat st;
    if (c->cmd_file >= 0 && fstat(c->cmd_file, &st) == 0 && st.st_dev == dev && st.st_ino == ino) return c;
  }
  return nullptr;
}

void Device::detach(Context* c) {
  {
    std::lock_guard lock(contexts_mu_);
    contexts_.erase(std::remove(contexts_.begin(), contexts_.end(), c), contexts_.end());
    if (!contexts_.empty()) return;
  }
  stop_ = true;
  for (auto& lane : lanes_) {
    if (lane->thread.joinable()) lane->thread.join();
    dpdk::telemetry_withdraw(lane->telemetry_id);
    lane->telemetry_id = -1;
    const ProgressStats& st = lane->stats;
    const dpdk::HostCounters& hc = lane->host->counters();
    log(Config::Log::kInfo, "%s: engine %u: %lu frames sent, %lu received (%lu handed over by other engines); "
        "progress: %lu steps by the application, %lu by its thread (%lu with work), %lu sleeps (%.1f ms)",
        cfg_.device.c_str(), lane->index, static_cast<unsigned long>(hc.tx_frames),
        static_cast<unsigned long>(hc.rx_frames), static_cast<unsigned long>(hc.rx_from_inbox),
        static_cast<unsigned long>(st.app_steps.load()), static_cast<unsigned long>(st.thread_steps),
        static_cast<unsigned long>(st.thread_busy_steps), static_cast<unsigned long>(st.sleeps),
        static_cast<double>(st.slept_ns) / 1e6);
  }
  // What the engines still owe the wire leaves before they go: the ACK of the
  // last message received (a NIC sends it whether or not the process stays),
  // answers to the peer's last retransmissions.
  const uint64_t until = clock_->now_ns() + kLingerNs;
  while (clock_->now_ns() < until) {
    for (uint32_t k = 0; k < lanes(); ++k) {
      Lock lock(*this, k);
      lanes_[k]->host->poll_once(clock_->now_ns());
    }
  }
  report_refused();
  for (auto& lane : lanes_) {
    Lock lock(*this, lane->index);
    lane->host.reset();
  }
}

// Frames that never reached the wire, and those dropped on arrival, said at close:
// at the default log level when the device failed to send any, else at info
// (arrivals that are not tita's, or lost to a full port, are a normal sight).
void Device::report_refused() {
  dpdk::HostCounters h;
  engine::EngineCounters e;
  uint64_t malformed = 0;  // every parse error: truncated, bad ICRC, bad checksum, unknown opcode
  for (auto& lane : lanes_) {
    const dpdk::HostCounters& hl = lane->host->counters();
    h.tx_frames += hl.tx_frames;
    h.rx_frames += hl.rx_frames;
    h.tx_no_mbuf += hl.tx_no_mbuf;
    h.tx_oversize += hl.tx_oversize;
    h.tx_overrun += hl.tx_overrun;
    const engine::EngineCounters& el = lane->host->engine().counters();
    e.rx_dropped += el.rx_dropped;
    for (uint64_t n : el.rx_parse_errors) malformed += n;
    e.rx_not_for_us += el.rx_not_for_us;
    e.rx_unknown_qp += el.rx_unknown_qp;
    e.rx_qp_not_ready += el.rx_qp_not_ready;
    e.rx_wrong_source += el.rx_wrong_source + el.rx_bad_pkey;
    e.rx_bad_qkey += el.rx_bad_qkey;
    e.rx_ud_no_recv += el.rx_ud_no_recv;
    e.rx_wrong_transport += el.rx_wrong_transport;
  }
  const dpdk::PortStats p = port_.stats();
  const bool any = h.tx_no_mbuf + h.tx_oversize + h.tx_overrun + p.tx_errors > 0;
  log(any ? Config::Log::kError : Config::Log::kInfo,
      "%s: %lu frames sent, %lu received; not sent: %lu (no mbuf), %lu (larger than an mbuf), %lu (beyond tx space), "
      "%lu (port tx errors); "
      "dropped on arrival: %lu (port: missed), %lu (port: rx errors), %lu by the engine (%lu malformed or bad ICRC, "
      "%lu not for this address, %lu for no such QP, %lu for a QP not in RTR/RTS, %lu from a wrong source or P_Key; UD: %lu with a wrong "
      "Q_Key, %lu without a receive posted, %lu of the wrong transport)",
      cfg_.device.c_str(), static_cast<unsigned long>(h.tx_frames), static_cast<unsigned long>(h.rx_frames),
      static_cast<unsigned long>(h.tx_no_mbuf), static_cast<unsigned long>(h.tx_oversize),
      static_cast<unsigned long>(h.tx_overrun), static_cast<unsigned long>(p.tx_errors), static_cast<unsigned long>(p.rx_missed),
      static_cast<unsigned long>(p.rx_errors), static_cast<unsigned long>(e.rx_dropped),
      static_cast<unsigned long>(malformed), static_cast<unsigned long>(e.rx_not_for_us),
      static_cast<unsigned long>(e.rx_unknown_qp), static_cast<unsigned long>(e.rx_qp_not_ready),
      static_cast<unsigned long>(e.rx_wrong_source), static_cast<unsigned long>(e.rx_bad_qkey),
      static_cast<unsigned long>(e.rx_ud_no_recv), static_cast<unsigned long>(e.rx_wrong_transport));
}

bool Device::counters(engine::EngineCounters* out) {
  *out = {};
  for (uint32_t k = 0; k < lanes(); ++k) {
    Lock lock(*this, k);
    if (!lanes_[k]->host) return false;
    const engine::EngineCounters& c = lanes_[k]->host->engine().counters();
    out->rx_bad_pkey += c.rx_bad_pkey;
    out->rx_bad_qkey += c.rx_bad_qkey;
    out->rx_dropped += c.rx_dropped;
  }
  return true;
}

void Device::step(uint32_t lane, bool polling) {
  Lane& l = *lanes_[lane];
  const uint64_t now = clock_->now_ns();
  l.host->poll_once(now);
  l.stats.app_steps.fetch_add(1, std::memory_order_relaxed);
  if (polling) l.app_step_ns.store(now, std::memory_order_relaxed);
}

void Device::run(Lane& lane) {
  dpdk::register_thread();  // a mempool cache for this thread
  // Sleeps as short as asked (this thread's timer slack only, not the process's):
  // a sleeper that wakes preempts a spinning application thread on its core.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  // An application thread polled this recently: leave it the work. Long, so that
  // a device thread sharing the poller's core, scheduled while the poller waits
  // for the core, steps aside at once instead of spinning out its time slice
  // (ibv_get_cq_event ends this at once: a blocked application polls nothing).
  constexpr uint64_t kAppActiveNs = 1'000'000;
  constexpr uint64_t kSpinNs = 1'000'000;    // adaptive: keep polling this long after the last work
  constexpr uint64_t kMinSleepNs = 2'000;
  constexpr uint64_t kMaxSleepNs = 200'000;
  uint64_t last_work = 0;
  uint64_t sleep = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    const uint64_t now = clock_->now_ns();
    const bool app_active = now - lane.app_step_ns.load(std::memory_order_relaxed) < kAppActiveNs;
    bool worked = false;
    uint64_t next = UINT64_MAX;
    if (!app_active && lane.waiting.load(std::memory_order_relaxed) == 0) {
      std::unique_lock lock(lane.mu, std::try_to_lock);
      if (lock.owns_lock()) {
        const uint32_t rx = lane.host->poll_once(now);
        next = lane.host->engine().next_wakeup_ns();
        worked = rx > 0 || next <= clock_->now_ns();
        ++lane.stats.thread_steps;
        lane.stats.thread_busy_steps += worked;
        if (lane.index == 0 && now >= next_link_check_ns_) {
          next_link_check_ns_ = now + 100'000'000;
          check_link();
        }
      }
    }
    if (worked) {
      last_work = now;
      sleep = 0;
      continue;
    }
    if (lane.waiting.load(std::memory_order_relaxed) != 0) {
      // An application thread waits for the lock we just let go: on a shared
      // core, spinning here would keep it from running until our time slice ends.
      sched_yield();
      continue;
    }
    if (cfg_.progress == Progress::kBusy) {
      if (app_active) {
        sched_yield();  // the application polls for itself: give it the core
      } else {
        cpu_relax();
      }
      continue;
    }
    // Adaptive: poll on for a while after work (a reply is likely soon), then
    // sleep, longer each time, never past the engine's next deadline (a timer,
    // a paced packet). While the application polls, sleep outright.
    if (!app_active && now - last_work < kSpinNs) {
      cpu_relax();
      continue;
    }
    sleep = std::min<uint64_t>(kMaxSleepNs, std::max<uint64_t>(sleep * 2, kMinSleepNs));
    const uint64_t t = clock_->now_ns();
    const uint64_t until_deadline = next > t ? next - t : 0;
    const uint64_t ns = std::max<uint64_t>(1'000, std::min(sleep, until_deadline));
    sleep_ns(ns);
    ++lane.stats.sleeps;
    lane.stats.slept_ns += ns;
  }
  dpdk::unregister_thread();
}

void Device::check_link() {
  const bool up = link_up();
  if (up == link_was_up_) return;
  link_was_up_ = up;
  log(Config::Log::kInfo, "%s: link %s", cfg_.device.c_str(), up ? "up" : "down");
  ibv_async_event e{};
  e.element.port_num = 1;
  e.event_type = up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR;
  std::lock_guard lock(contexts_mu_);
  for (Context* c : contexts_) post_async(c, e);
}

template <typename T>
void Device::route(std::unordered_map<uint32_t, T*>& routes, uint32_t number, T* obj) {
  std::lock_guard lock(contexts_mu_);
  if (obj != nullptr) {
    routes[number] = obj;
  } else {
    routes.erase(number);
  }
}

void Device::bind_cq(uint32_t id, Cq* cq) { route(cqs_, id, cq); }
void Device::unbind_cq(uint32_t id) { route<Cq>(cqs_, id, nullptr); }
void Device::bind_qp(uint32_t qpn, Qp* qp) { route(qps_, qpn, qp); }
void Device::unbind_qp(uint32_t qpn) { route<Qp>(qps_, qpn, nullptr); }
void Device::bind_srq(uint32_t id, Srq* srq) { route(srqs_, id, srq); }
void Device::unbind_srq(uint32_t id) { route<Srq>(srqs_, id, nullptr); }

void Device::report_qp(uint32_t lane, uint32_t qpn) {
  const engine::QpCounters* k = lanes_[lane]->host ? lanes_[lane]->host->engine().qp_counters(qpn) : nullptr;
  if (k == nullptr || k->tx_packets + k->rx_packets == 0) return;
  auto ul = [](uint64_t v) { return static_cast<unsigned long>(v); };
  log(Config::Log::kInfo,
      "QP 0x%06x: sent %lu packets (%lu payload bytes, %lu retransmitted, %lu timeouts, %lu tail probes, "
      "%lu NAK-seq received), "
      "received %lu (%lu payload bytes, %lu duplicates, %lu out of order, %lu NAK-seq sent), %lu RNR NAKs received, "
      "%lu CNPs received, %lu RTT samples (last %.1f us), %lu INT records; cc %s",
      qpn, ul(k->tx_packets), ul(k->tx_payload_bytes), ul(k->retransmitted_packets), ul(k->timeouts),
      ul(k->tail_probes), ul(k->nak_seq_received), ul(k->rx_packets), ul(k->rx_payload_bytes), ul(k->duplicates_received), ul(k->out_of_order_received), ul(k->nak_seq_sent),
      ul(k->rnr_nak_received), ul(k->cnps_received), ul(k->rtt_samples), static_cast<double>(k->last_rtt_ns) / 1e3,
      ul(k->int_records_received), cfg_.cc.c_str());
}

void Device::post_async(Context* c, const ibv_async_event& e) {
  {
    std::lock_guard lock(c->async_mu);
    c->async_events.push_back(e);
  }
  const char one = 1;
  if (write(c->async_pipe[1], &one, 1) != 1) log(Config::Log::kError, "async event lost (pipe full)");
}

// Runs inside engine calls, under the device lock.
void Device::on_event(void* ctx, const engine::Event& e) {
  auto* d = static_cast<Device*>(ctx);
  std::lock_guard lock(d->contexts_mu_);
  if (e.kind == engine::EventKind::kCqNotify || e.kind == engine::EventKind::kCqError) {
    auto it = d->cqs_.find(e.cq);
    if (it == d->cqs_.end()) return;
    Cq* cq = it->second;
    if (e.kind == engine::EventKind::kCqNotify) {
      // One event per arming, whichever lane completed first.
      if (cq->cq.channel == nullptr || !cq->armed.exchange(false)) return;
      auto* ch = reinterpret_cast<Channel*>(cq->cq.channel);
      {
        std::lock_guard lock(ch->mu);
        ch->events.push_back(cq);
      }
      const char one = 1;
      if (write(ch->write_fd, &one, 1) != 1) d->log(Config::Log::kError, "CQ event lost (pipe full)");
      return;
    }
    ibv_async_event ae{};
    ae.element.cq = &cq->cq;
    ae.event_type = IBV_EVENT_CQ_ERR;
    d->log(Config::Log::kError, "CQ %u overflowed: its QPs are in error", e.cq);
    d->post_async(context_of(cq->cq.context), ae);
    return;
  }
  if (e.kind == engine::EventKind::kQpRetryExceeded) {
    // No IBV event: the completion carries IBV_WC_RETRY_EXC_ERR; this line says why.
    d->log(Config::Log::kError,
           "QP 0x%06x: retry count exceeded: %u %s in a row without progress at PSN %u (no ACK or READ response "
           "moved); its WRs complete with IBV_WC_RETRY_EXC_ERR",
           e.qp_num, static_cast<unsigned>(e.retries) + 1, e.by_nak ? "sequence NAKs" : "timeouts", e.psn);
    return;
  }
  if (e.kind == engine::EventKind::kQpRecoveryFallback) {
    d->log(Config::Log::kError,
           "QP 0x%06x: selective repeat was asked for, but the peer's frames carry no tita trailer (a standard "
           "RoCE peer, or tita without telemetry): the QP runs go-back-N",
           e.qp_num);
    return;
  }
  if (e.kind == engine::EventKind::kSrqLimitReached) {
    auto it = d->srqs_.find(e.srq);
    if (it == d->srqs_.end()) return;
    ibv_async_event ae{};
    ae.element.srq = &it->second->srq;
    ae.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
    d->post_async(context_of(it->second->srq.context), ae);
    return;
  }
  if (e.why != nullptr) {
    // The responder refused a request: which one, and the rule it broke.
    const std::string_view op = wire::opcode_info(e.opcode).name;
    d->log(Config::Log::kError, "QP 0x%06x: %.*s: the request at PSN %u (%.*s) was refused: %s; the QP is in error",
           e.qp_num, static_cast<int>(engine::to_string(e.kind).size()), engine::to_string(e.kind).data(), e.psn,
           static_cast<int>(op.size()), op.data(), e.why);
  }
  auto it = d->qps_.find(e.qp_num);
  if (it == d->qps_.end()) return;
  Qp* qp = it->second;
  ibv_async_event ae{};
  ae.element.qp = &qp->qp;
  switch (e.kind) {
    case engine::EventKind::kQpFatal: ae.event_type = IBV_EVENT_QP_FATAL; break;
    case engine::EventKind::kQpRequestError: ae.event_type = IBV_EVENT_QP_REQ_ERR; break;
    case engine::EventKind::kQpAccessError: ae.event_type = IBV_EVENT_QP_ACCESS_ERR; break;
    case engine::EventKind::kCommEstablished: ae.event_type = IBV_EVENT_COMM_EST; break;
    case engine::EventKind::kQpLastWqeReached: ae.event_type = IBV_EVENT_QP_LAST_WQE_REACHED; break;
    default: return;
  }
  d->post_async(context_of(qp->qp.context), ae);
}

}  // namespace tita::verbs
