// The tita verbs device: one per process, a DPDK port with tita's engine behind
// it, and the verbs objects handed to the application.
//
// Engines. The port has one queue pair per engine (the `engines` setting, 1 by
// default), each engine its lane: its own lock and progress thread. A QP lives
// on one lane (round robin at creation); PDs, MRs and CQs exist on every lane
// with the same numbers and keys (created on each, in the same order, under
// one control lock), so an application sees one device: ibv_poll_cq drains a
// CQ's part on every lane, an MR's key is good on any QP.
//
// Threads. An engine and its queue are single-threaded; every engine call runs
// under its lane's lock. Whoever holds the lock makes progress (receives,
// timers, sends): the lane's own thread, and application threads inside
// ibv_post_send / ibv_poll_cq, which then need no hand-off (the thread backs
// off while they poll; with several lanes, ibv_poll_cq leaves progress to the
// lanes' threads). Completion and asynchronous events cross to waiting
// application threads through pipes, as the kernel's event files do.
//
// Lifetime. The first ibv_get_device_list reads the settings, starts EAL and
// opens the port (the device exists, as a kernel device does); the first
// ibv_open_device starts the engine and the thread, the last ibv_close_device
// stops them; the library's destructor closes the port and EAL.
#pragma once

#include <infiniband/verbs.h>
#include <sys/stat.h>

#include <atomic>
#include <cstddef>
#include <cstdarg>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tita/dpdk/host.h"
#include "tita/dpdk/port.h"
#include "tita/engine/engine.h"
#include "tita/verbs/config.h"

namespace tita::verbs {

class Device;

// The objects, each an ibv_* struct followed by what tita keeps with it; the
// application sees the first member only.
struct Context {
  verbs_context vctx;  // ibv_context is its last member
  Device* dev = nullptr;
  int async_pipe[2] = {-1, -1};  // read end is ibv_context::async_fd
  int cmd_file = -1;             // ibv_context::cmd_fd (a memfd: ibv_import_device knows it by its inode)
  std::mutex async_mu;
  std::deque<ibv_async_event> async_events;
  // What this context created, released with it if the application does not.
  std::set<struct Qp*> qps;
  std::set<struct Cq*> cqs;
  std::set<struct Mr*> mrs;
  std::set<struct Pd*> pds;
  std::set<struct Srq*> srqs;
  std::set<struct Channel*> channels;
  std::set<struct Ah*> ahs;  // ah.cc
};

inline Context* context_of(ibv_context* c) {
  return reinterpret_cast<Context*>(reinterpret_cast<char*>(c) - offsetof(verbs_context, context));
}

struct Pd {
  ibv_pd pd;
  uint32_t id = 0;
};

struct Mr {
  ibv_mr mr;
};

// A completion channel: the read end of a pipe is ibv_comp_channel::fd (so
// poll() on it works); each byte in the pipe stands for one event in `events`.
struct Channel {
  ibv_comp_channel ch;
  int write_fd = -1;
  std::mutex mu;
  std::deque<struct Cq*> events;
};

// An address handle (ah.cc): the same number on every lane, as PDs have.
struct Ah {
  ibv_ah ah;
  uint32_t id = 0;
  ibv_ah_attr attr{};  // as the application gave it
};

struct CqEx;  // cq_ex.cc: what an extended CQ's start_poll/next_poll hold
struct QpEx;  // qp_ex.cc: the ibv_wr_* batch being built

struct Cq {
  union {
    ibv_cq cq;
    ibv_cq_ex cqx;  // made by ibv_create_cq_ex: the same first fields, then the polling ops
  };
  CqEx* ex = nullptr;  // set for a CQ made by ibv_create_cq_ex
  uint32_t id = 0;  // on every lane
  // Armed by ibv_req_notify_cq: the first lane's completion event is the
  // one event of this arming (the others' are dropped until the next).
  std::atomic<bool> armed{false};
  std::atomic<uint32_t> next_lane{0};  // where ibv_poll_cq starts, in turn
  uint32_t comp_events_sent = 0;   // handed out by ibv_get_cq_event, under cq.mutex; ibv_destroy_cq waits for their acks
  uint32_t async_events_sent = 0;  // handed to the application (ibv_get_async_event), same
};

struct Qp {
  union {
    ibv_qp qp;
    ibv_qp_ex qpx;  // qp_base is qp; its ibv_wr_* ops are set for a QP made with send-ops flags
  };
  QpEx* ex = nullptr;  // set for a QP made with send-ops flags
  uint32_t qpn = 0;
  uint32_t lane = 0;  // the engine that runs it
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  uint8_t sgid_index = 0;
  uint8_t sl = 0;
  uint32_t flow_label = 0;
  uint32_t async_events_sent = 0;  // handed to the application, under qp.mutex; ibv_destroy_qp waits for their acks
};

// A shared receive queue (srq.cc). It lives on lane 0, and so do the QPs
// made with it (their receives come from its engine).
struct Srq {
  ibv_srq srq;
  uint32_t id = 0;
  uint32_t max_sge = 0;
  uint32_t async_events_sent = 0;  // handed to the application, under srq.mutex; ibv_destroy_srq waits for their acks
};

class Device {
 public:
  // The process's device, made on first use. nullptr with *err when the
  // settings or the port are wrong; every later call fails the same way.
  static Device* get(std::string* err);
  // Whether `dev` is the device we hand out (and not a kernel device).
  static bool ours(const ibv_device* dev);
  static bool ours(const ibv_context* ctx) { return ctx != nullptr && ours(ctx->device); }
  static void shutdown();  // the library's destructor

  ibv_device* ibv() { return &ibv_; }
  const Config& config() const { return cfg_; }

  // ibv_open_device / ibv_close_device.
  int attach(Context* c);
  void detach(Context* c);
  // The open context whose command file is this file (device and inode), or nullptr.
  Context* context_of_file(dev_t dev, ino_t ino);

  // Where progress came from (reported at close with log=info).
  struct ProgressStats {
    std::atomic<uint64_t> app_steps{0};
    uint64_t thread_steps = 0;
    uint64_t thread_busy_steps = 0;  // that received or had work due
    uint64_t sleeps = 0;
    uint64_t slept_ns = 0;
  };
  // One engine on one queue pair of the port.
  struct Lane {
    uint32_t index = 0;
    std::unique_ptr<dpdk::EngineHost> host;
    dpdk::Steering steering;
    std::mutex mu;                          // the engine and its queue
    std::atomic<int> waiting{0};            // application threads waiting for mu
    std::atomic<uint64_t> app_step_ns{0};   // when an application thread last made progress here
    std::thread thread;
    int telemetry_id = -1;                  // host in rte_telemetry (/tita/engine,<id>)
    ProgressStats stats;
  };

  // A lane's engine and queue, one thread at a time.
  class Lock {
   public:
    explicit Lock(Device& d, uint32_t lane = 0) : l_(*d.lanes_[lane]) {
      l_.waiting.fetch_add(1, std::memory_order_relaxed);
      l_.mu.lock();
      l_.waiting.fetch_sub(1, std::memory_order_relaxed);
    }
    ~Lock() { l_.mu.unlock(); }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    Lane& l_;
  };
  uint32_t lanes() const { return static_cast<uint32_t>(lanes_.size()); }
  // An rte_flow rule for the peer's frames to our QP on `lane` (the caller
  // holds its lock). 0, or -errno where the port has no rte_flow.
  int steer_qp(uint32_t lane, uint32_t qpn, uint32_t peer_qpn, std::string* err) {
    return lanes_[lane]->host->steer_qp(qpn, peer_qpn, err);
  }
  engine::Engine& engine(uint32_t lane = 0) { return lanes_[lane]->host->engine(); }
  // The lane a new QP goes to: each in turn.
  uint32_t next_qp_lane() { return next_qp_lane_.fetch_add(1, std::memory_order_relaxed) % lanes(); }
  // Runs fn(engine, lane) on every lane, in lane order, each under its lock,
  // all under the control lock (so every lane sees the same calls in the same
  // order, and numbers PDs, MRs and CQs alike); stops at the first non-zero
  // result and returns it with the lane it came from in *failed_lane.
  template <typename Fn>
  int on_every_lane(Fn&& fn, uint32_t* failed_lane = nullptr) {
    std::lock_guard control(control_mu_);
    for (uint32_t k = 0; k < lanes(); ++k) {
      Lock lock(*this, k);
      if (const int rc = fn(engine(k), k); rc != 0) {
        if (failed_lane) *failed_lane = k;
        return rc;
      }
    }
    return 0;
  }
  // One progress step of a lane (receive a burst, timers, send); the caller
  // holds its lock. `polling`: an application thread polling its CQ did it;
  // while it keeps doing so the lane's thread leaves the work to it.
  void step(uint32_t lane, bool polling);
  // Whether an application thread polled (and so made progress) on the lane
  // in the last few microseconds: it will again soon.
  bool app_polling(uint32_t lane) const {
    return clock_->now_ns() - lanes_[lane]->app_step_ns.load(std::memory_order_relaxed) < kAppPollingNs;
  }
  static constexpr uint64_t kAppPollingNs = 20'000;
  // An application thread is about to block for an event: it polls no more.
  void app_blocks() {
    for (auto& l : lanes_) l->app_step_ns.store(0, std::memory_order_relaxed);
  }

  // Facts for the query verbs.
  uint64_t node_guid() const { return guid_; }  // host order
  const uint8_t* mac() const { return mac_; }
  wire::Gid gid() const { return wire::Gid::from_ipv4(cfg_.ipv4); }
  // The port's state as the device reports it. A vdev's link is a virtual
  // cable that comes up when the peer process attaches its end (vhost, memif):
  // the port counts as plugged from the start, and frames wait for the peer,
  // so a server started first does not find its port down. A NIC's is its link.
  bool link_up() const { return virtual_port_ || port_.link_up(); }
  uint32_t link_speed_mbps() const { return port_.link_speed_mbps(); }
  uint32_t max_frame_bytes() const { return port_.max_frame_bytes(); }
  const std::string& port_name() const { return port_.name(); }
  // The largest path MTU (256..4096) whose frames the port carries.
  uint32_t max_path_mtu() const;
  // Engine counters summed over the lanes (none before the first open).
  bool counters(engine::EngineCounters* out);
  void report_refused();

  // Event routing: the engine names CQs and QPs by number.
  void bind_cq(uint32_t id, Cq* cq);
  void unbind_cq(uint32_t id);
  void bind_qp(uint32_t qpn, Qp* qp);
  void unbind_qp(uint32_t qpn);
  void bind_srq(uint32_t id, Srq* srq);
  void unbind_srq(uint32_t id);
  void post_async(Context* c, const ibv_async_event& e);
  // At log=info, one line of the QP's counters (retransmissions, NAKs, RTT
  // samples, ...). Called under the device lock when a QP goes, and for the
  // QPs still open when the process exits.
  void report_qp(uint32_t lane, uint32_t qpn);

  void log(Config::Log level, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

 private:
  Device() = default;
  int init(std::string* err);
  void run(Lane& lane);  // a lane's thread
  static void on_event(void* ctx, const engine::Event& e);
  // A number's entry in cqs_ or qps_: set to `obj`, or removed (nullptr).
  template <typename T>
  void route(std::unordered_map<uint32_t, T*>& routes, uint32_t number, T* obj);
  void check_link();

  Config cfg_;
  ibv_device ibv_{};
  dpdk::Port port_;
  uint8_t mac_[6] = {};
  uint64_t guid_ = 0;
  bool virtual_port_ = false;  // a vdev (cfg_.vdev)
  std::optional<dpdk::TscClock> clock_;  // after EAL has measured the TSC

  std::vector<std::unique_ptr<Lane>> lanes_;  // made at init, engines at the first open
  std::mutex control_mu_;                      // on_every_lane: one control call at a time
  std::atomic<uint32_t> next_qp_lane_{0};
  std::atomic<bool> stop_{false};
  bool link_was_up_ = false;
  uint64_t next_link_check_ns_ = 0;  // lane 0's thread watches the link

  std::mutex contexts_mu_;  // contexts_ and the maps below
  std::vector<Context*> contexts_;
  std::unordered_map<uint32_t, Cq*> cqs_;
  std::unordered_map<uint32_t, Qp*> qps_;
  std::unordered_map<uint32_t, Srq*> srqs_;
};

}  // namespace tita::verbs
