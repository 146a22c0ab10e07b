// librdmacm over tita: the kernel interface librdmacm speaks
// (/dev/infiniband/rdma_cm, the ucma ABI of <rdma/rdma_user_cm.h>) served in
// the process, and the InfiniBand Communication Manager behind it on the
// device's QP 1, speaking REQ / REP / RTU / REJ / DREQ / DREP MADs with the
// layout of IBA chapter 12 (lib/wire's cm.h), so that a tita process and a
// Linux rdma_cm on Soft-RoCE connect to each other as two kernels would.
//
// How librdmacm reaches us: it opens /dev/infiniband/rdma_cm, checks with
// fstat that it is a character device, and then writes commands (a header
// naming the command, then its struct; answers go to the user pointer the
// struct carries). The library exports open, fstat, write and close (with
// glibc's versions, libtita-verbs.map): open of that path returns an eventfd
// in semaphore mode that stands for an event channel, its counter the events
// queued, so poll/epoll on the channel behave as on the kernel's file and a
// blocking GET_EVENT is a blocking read of it; fstat of it reports a character
// device; write to it runs the command; close drops the channel. Every other
// file goes straight to glibc (one bit test).
//
// What is served: RC connections on the TCP (and IB) port space over IPv4
// (BIND_IP, RESOLVE_IP, RESOLVE_ROUTE, QUERY_ROUTE, CONNECT, LISTEN, ACCEPT,
// REJECT, DISCONNECT, INIT_QP_ATTR, GET_EVENT, SET_OPTION, NOTIFY,
// MIGRATE_ID, DESTROY_ID), and UD ids on the UDP port space, which connect by
// Service ID Resolution: the active side's CONNECT sends a SIDR_REQ, the
// passive side's ACCEPT answers with a SIDR_REP naming its QP and the UDP
// port space's Q_Key, and the active side's ESTABLISHED event carries them
// with an address handle (udaddy). AF_IB addressing (librdmacm probes it at
// start and falls back to IP), the IPoIB port space, multicast and IPv6
// answer EAFNOSUPPORT/EOPNOTSUPP with one line.
//
// The CM's timing: REQ, REP and DREQ are resent every kResendMs until
// answered, at most kMaxResends times; a REQ never answered ends in
// RDMA_CM_EVENT_UNREACHABLE, a REP never answered too, a DREQ in
// RDMA_CM_EVENT_DISCONNECTED. A duplicate REQ gets the REP again, a
// duplicate REP the RTU again, a DREQ for a connection we no longer know a
// DREP (IBA 12.9.8). A SIDR_REQ is resent as a REQ; a duplicate gets the
// SIDR_REP again.
// glibc's fortified open is an inline wrapper; this file defines open itself.
#undef _FORTIFY_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <rdma/rdma_user_cm.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstring>
#include <deque>
#include <map>
#include <thread>
#include <unordered_map>

#include "interpose.h"
#include "tita/wire/cm.h"

namespace tita::verbs {
namespace {

namespace cm = tita::wire::cm;
using wire::Gid;

constexpr const char* kCmNode = "/dev/infiniband/rdma_cm";

// enum rdma_cm_event_type (<rdma/rdma_cma.h>).
enum CmEvent : uint32_t {
  kAddrResolved = 0,
  kAddrError = 1,
  kRouteResolved = 2,
  kRouteError = 3,
  kConnectRequest = 4,
  kConnectResponse = 5,
  kConnectError = 6,
  kUnreachable = 7,
  kRejected = 8,
  kEstablished = 9,
  kDisconnected = 10,
};

constexpr int kResendMs = 1000;
constexpr int kMaxResends = 15;
constexpr int kDreqResends = 3;
// The CM response timeout a REQ announces (4.096 us * 2^18, about 1.07 s: our resend interval).
constexpr uint8_t kCmResponseTimeout = 18;
// The local ACK timeout a REQ proposes (4.096 us * 2^14, 67 ms).
constexpr uint8_t kLocalAckTimeout = 14;
constexpr uint8_t kMinRnrTimer = 12;  // 0.64 ms
constexpr uint8_t kHopLimit = 64;     // an IPv4 TTL, as Linux's RoCE paths carry
constexpr int kRecvs = 64;
constexpr size_t kRecvBytes = eng::kGrhBytes + cm::kMadBytes;
constexpr int kMaxFds = 1 << 16;

uint64_t now_ms() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// A random 24-bit PSN (or comm-ID seed): getrandom, the clock if that fails.
uint32_t random24() {
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, 0) != sizeof r) r = static_cast<uint32_t>(now_ms());
  return r & 0xffffff;
}

// The size of the answer the command's caller has room for (its header's `out`).
thread_local size_t t_out = 0;

template <typename T>
void answer(uint64_t response, const T& r) {
  if (response != 0) {
    std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(response)), &r, std::min(sizeof r, t_out));
  }
}

// ---------------------------------------------------------------- glibc's functions

template <typename F>
F libc(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}
using OpenFn = int (*)(const char*, int, ...);
using WriteFn = ssize_t (*)(int, const void*, size_t);
using CloseFn = int (*)(int);
using FstatFn = int (*)(int, struct stat*);
OpenFn real_open() {
  static OpenFn f = libc<OpenFn>("open");
  return f;
}
WriteFn real_write() {
  static WriteFn f = libc<WriteFn>("write");
  return f;
}
CloseFn real_close() {
  static CloseFn f = libc<CloseFn>("close");
  return f;
}
FstatFn real_fstat() {
  static FstatFn f = libc<FstatFn>("fstat");
  return f;
}

// Which descriptors are event channels: one bit each, read without a lock.
std::array<std::atomic<uint64_t>, kMaxFds / 64> g_channel_bits{};
bool is_channel_fd(int fd) {
  return fd >= 0 && fd < kMaxFds && (g_channel_bits[fd / 64].load(std::memory_order_relaxed) >> (fd % 64)) & 1;
}
void mark_channel_fd(int fd, bool on) {
  const uint64_t bit = uint64_t{1} << (fd % 64);
  if (on) {
    g_channel_bits[fd / 64].fetch_or(bit, std::memory_order_relaxed);
  } else {
    g_channel_bits[fd / 64].fetch_and(~bit, std::memory_order_relaxed);
  }
}

// ---------------------------------------------------------------- ids and connections

enum class State : uint8_t {
  kIdle,
  kAddrResolved,
  kRouteResolved,
  kListen,
  kReqSent,       // active: REQ (or SIDR_REQ) out, waiting for REP (or SIDR_REP)
  kRepReceived,   // active: CONNECT_RESPONSE handed out, waiting for ACCEPT (then RTU)
  kReqReceived,   // passive: CONNECT_REQUEST handed out, waiting for ACCEPT or REJECT
                  // (a UD id goes from here to kEstablished, or kDisconnected when rejected)
  kRepSent,       // passive: REP out, waiting for RTU
  kEstablished,
  kDreqSent,
  kDisconnected,  // DREQ answered or received, or rejected
};

struct Id {
  uint32_t handle = 0;
  uint64_t uid = 0;
  int fd = -1;  // its event channel
  uint16_t ps = 0;
  uint8_t qp_type = 0;
  uint8_t tos = 0;
  State state = State::kIdle;
  uint32_t src_ip = 0;  // host order
  uint16_t src_port = 0;
  uint32_t dst_ip = 0;
  uint16_t dst_port = 0;
  bool bound = false;
  uint32_t listener = 0;  // passive: the listening id it came from
  // UD (the UDP port space): resolved by SIDR, no connection to tear down.
  bool ud() const { return ps == cm::kPsUdp; }
  // The connection (IBA's names); for SIDR the request ID is the comm ID.
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  // PSNs. A REQ's and a REP's starting PSN is the one its sender will
  // receive from (Linux's CM: the requester's rq_psn is its REQ's, the
  // responder sends from it; the same the other way with the REP's).
  uint32_t local_psn = 0;   // what our QP sends from (the peer's message's starting PSN)
  uint32_t remote_psn = 0;  // what the peer sends from: our rq_psn, chosen here and sent
  uint8_t responder_resources = 0;  // ours: max_dest_rd_atomic
  uint8_t initiator_depth = 0;      // ours: max_rd_atomic
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  uint8_t ack_timeout = kLocalAckTimeout;
  uint8_t path_mtu = IBV_MTU_1024;  // the port's at creation; the smaller of both once a REQ is in
  bool srq = false;
  uint64_t tid = 0;
  // The message last sent that waits for an answer, or the answer to repeat.
  std::array<uint8_t, cm::kMadBytes> mad{};
  uint64_t resend_at_ms = 0;  // 0: nothing waits
  int resends_left = 0;
  uint32_t events_reported = 0;
};

struct Channel {
  std::deque<rdma_ucm_event_resp> events;
};

class Cm {
 public:
  // Made at the first open of the node; never destroyed (the CM thread is
  // stopped by the library's unload, cm_shutdown).
  static Cm& get() {
    static Cm* cm = [] {
      Cm* c = new Cm();
      instance_.store(c);
      return c;
    }();
    return *cm;
  }
  static Cm* existing() { return instance_.load(); }

  int open_channel(int flags);
  void close_channel(int fd);
  ssize_t command(int fd, const uint8_t* buf, size_t len);
  void stop();

 private:
  Cm() = default;
  int start(std::string* err);
  void run();
  // Commands (0 or an errno value).
  int create_id(int fd, const rdma_ucm_create_id& c);
  int destroy_id(const rdma_ucm_destroy_id& c);
  int bind_ip(const sockaddr* a, uint32_t handle);
  int resolve_ip(const rdma_ucm_resolve_ip& c);
  int resolve_route(const rdma_ucm_resolve_route& c);
  int query_route(const rdma_ucm_query& c);
  int connect(const rdma_ucm_connect& c);
  int connect_ud(Id& id, const rdma_ucm_connect& c);
  // A REQ's or SIDR_REQ's private data: rdma_cm's header, then the application's.
  void cma_private_data(const Id& id, const rdma_ucm_conn_param& p, uint8_t* out) const;
  int listen(const rdma_ucm_listen& c);
  int accept(const rdma_ucm_accept& c);
  int accept_ud(Id& id, const rdma_ucm_accept& c);
  int reject(const rdma_ucm_reject& c);
  int disconnect(const rdma_ucm_disconnect& c);
  int init_qp_attr(const rdma_ucm_init_qp_attr& c);
  ssize_t get_event(int fd, const rdma_ucm_get_event& c);
  int set_option(const rdma_ucm_set_option& c);
  int notify(const rdma_ucm_notify& c);
  int migrate_id(int fd, const rdma_ucm_migrate_id& c);
  // The protocol.
  void on_mad(const uint8_t* mad, uint32_t peer_ip);
  void on_req(const uint8_t* mad, uint32_t peer_ip);
  void on_rep(const uint8_t* mad);
  void on_rtu(const uint8_t* mad);
  void on_rej(const uint8_t* mad);
  void on_dreq(const uint8_t* mad, uint32_t peer_ip);
  void on_drep(const uint8_t* mad);
  void on_sidr_req(const uint8_t* mad, uint32_t peer_ip);
  void on_sidr_rep(const uint8_t* mad);
  void on_timers();
  void send_mad(uint32_t peer_ip, const uint8_t* mad);
  void send_and_wait(Id& id, int resends);
  void send_rej(uint32_t peer_ip, uint32_t local_comm_id, uint32_t remote_comm_id, cm::Which which,
                cm::RejReason reason, const uint8_t* priv, size_t priv_len, uint64_t tid);
  void send_dreq(Id& id);
  // The SIDR_REP answering a request, built into mad (the id's, kept for duplicates).
  void send_sidr_rep(uint32_t peer_ip, uint32_t request_id, uint64_t service_id, cm::SidrStatus status,
                     uint32_t qpn, const uint8_t* priv, size_t priv_len, uint64_t tid, uint8_t* mad);
  void send_sidr_rep(Id& id, cm::SidrStatus status, const uint8_t* priv = nullptr, size_t priv_len = 0) {
    send_sidr_rep(id.dst_ip, id.remote_comm_id, cm::service_id(id.ps, id.src_port), status, id.local_qpn, priv,
                  priv_len, id.tid, id.mad.data());
  }
  // An event for the id (or, with uid and handle, for the new id a listener's
  // request made), with an RC or a UD parameter.
  void post(const Id& id, uint32_t event, int32_t status, const rdma_ucm_conn_param* conn = nullptr,
            uint64_t uid = 0, uint32_t handle = 0);
  void post_ud(const Id& id, uint32_t event, int32_t status, const rdma_ucm_ud_param& ud, uint64_t uid = 0,
               uint32_t handle = 0);
  static rdma_ucm_event_resp event_of(const Id& id, uint32_t event, int32_t status, uint64_t uid, uint32_t handle);
  void enqueue(int fd, const rdma_ucm_event_resp& e);
  Id* find(uint32_t handle) {
    auto it = ids_.find(handle);
    return it == ids_.end() ? nullptr : &it->second;
  }
  Id* by_local_comm_id(uint32_t comm_id);
  // The id listening on a service ID's port space and port.
  Id* find_listener(uint64_t service_id);
  // A passive side's new id for a request from peer_ip to listener.
  Id passive_id(const Id& listener, uint32_t peer_ip, uint16_t peer_port, uint64_t tid);
  uint16_t ephemeral_port();
  bool port_in_use(uint16_t port) const;
  Gid peer_gid(const Id& id) const { return Gid::from_ipv4(id.dst_ip); }

  static inline std::atomic<Cm*> instance_{nullptr};
  std::mutex mu_;
  Device* dev_ = nullptr;
  bool started_ = false;
  std::string start_err_;
  std::map<int, Channel> channels_;
  std::map<uint32_t, Id> ids_;
  uint32_t next_handle_ = 1;
  uint32_t next_comm_id_ = 0;
  uint16_t next_port_ = 0;
  uint32_t ipv4_ = 0;
  uint64_t guid_ = 0;
  uint8_t max_path_mtu_ = IBV_MTU_1024;
  // QP 1 and what it needs.
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* comp_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* mr_ = nullptr;
  std::vector<uint8_t> bufs_;
  std::unordered_map<uint32_t, ibv_ah*> ahs_;  // by peer IPv4
  std::thread thread_;
  std::atomic<bool> stop_{false};
};

// ---------------------------------------------------------------- QP 1

int Cm::start(std::string* err) {
  dev_ = Device::get(err);
  if (dev_ == nullptr) return ENODEV;
  ipv4_ = dev_->config().ipv4;
  guid_ = dev_->node_guid();
  max_path_mtu_ = static_cast<uint8_t>(mtu_enum(dev_->max_path_mtu()));
  const uint32_t r = random24();
  next_comm_id_ = (r << 8) | 1;
  next_port_ = static_cast<uint16_t>(32768 + (r >> 8) % 28000);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  for (int i = 0; list != nullptr && i < n && ctx_ == nullptr; ++i) {
    if (Device::ours(list[i])) ctx_ = ibv_open_device(list[i]);
  }
  if (list != nullptr) ibv_free_device_list(list);
  if (ctx_ == nullptr) {
    *err = "cannot open the tita device for the CM";
    return ENODEV;
  }
  pd_ = ibv_alloc_pd(ctx_);
  comp_ = ibv_create_comp_channel(ctx_);
  cq_ = comp_ != nullptr ? ibv_create_cq(ctx_, 2 * kRecvs + 64, nullptr, comp_, 0) : nullptr;
  bufs_.assign(size_t{kRecvs} * kRecvBytes, 0);
  mr_ = pd_ != nullptr ? ibv_reg_mr(pd_, bufs_.data(), bufs_.size(), IBV_ACCESS_LOCAL_WRITE) : nullptr;
  if (pd_ == nullptr || cq_ == nullptr || mr_ == nullptr) {
    *err = "cannot make the CM's PD, CQ or MR";
    return ENOMEM;
  }
  ibv_qp_init_attr qa{};
  qa.send_cq = cq_;
  qa.recv_cq = cq_;
  qa.cap.max_send_wr = 64;
  qa.cap.max_recv_wr = kRecvs;
  qa.cap.max_send_sge = 1;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = cm::kMadBytes;
  qp_ = create_gsi_qp(pd_, &qa);
  if (qp_ == nullptr) {
    *err = std::string("cannot make QP 1: ") + std::strerror(errno);
    return errno != 0 ? errno : EIO;
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qkey = cm::kGsiQkey;
  int rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
  a.qp_state = IBV_QPS_RTR;
  if (rc == 0) rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 0;
  if (rc == 0) rc = ibv_modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
  for (int i = 0; rc == 0 && i < kRecvs; ++i) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(bufs_.data() + size_t(i) * kRecvBytes), kRecvBytes, mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = static_cast<uint64_t>(i);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    rc = ibv_post_recv(qp_, &wr, &bad);
  }
  if (rc == 0) rc = ibv_req_notify_cq(cq_, 0);
  if (rc != 0) {
    *err = std::string("cannot bring QP 1 up: ") + std::strerror(rc);
    return rc;
  }
  thread_ = std::thread([this] { run(); });
  dev_->log(Config::Log::kInfo, "rdma_cm: the CM listens on QP 1 (GID ::ffff:%u.%u.%u.%u)", ipv4_ >> 24,
            (ipv4_ >> 16) & 0xff, (ipv4_ >> 8) & 0xff, ipv4_ & 0xff);
  return 0;
}

void Cm::send_mad(uint32_t peer_ip, const uint8_t* mad) {
  ibv_ah*& ah = ahs_[peer_ip];
  if (ah == nullptr) {
    ibv_ah_attr aa{};
    aa.is_global = 1;
    aa.port_num = 1;
    aa.grh.hop_limit = kHopLimit;
    aa.grh.sgid_index = 0;
    const Gid g = Gid::from_ipv4(peer_ip);
    std::memcpy(aa.grh.dgid.raw, g.raw, 16);
    ah = ibv_create_ah(pd_, &aa);
    if (ah == nullptr) {
      dev_->log(Config::Log::kError, "rdma_cm: no address handle for %u.%u.%u.%u: %s", peer_ip >> 24,
                (peer_ip >> 16) & 0xff, (peer_ip >> 8) & 0xff, peer_ip & 0xff, std::strerror(errno));
      ahs_.erase(peer_ip);
      return;
    }
  }
  ibv_sge sge{reinterpret_cast<uintptr_t>(mad), static_cast<uint32_t>(cm::kMadBytes), 0};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = cm::kGsiQpn;
  wr.wr.ud.remote_qkey = cm::kGsiQkey;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(qp_, &wr, &bad); rc != 0) {
    dev_->log(Config::Log::kError, "rdma_cm: QP 1 refused a MAD: %s", std::strerror(rc));
  }
}

void Cm::run() {
  std::vector<ibv_wc> wcs(32);
  while (!stop_.load(std::memory_order_relaxed)) {
    pollfd p{comp_->fd, POLLIN, 0};
    ::poll(&p, 1, 20);
    if (p.revents & POLLIN) {
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (ibv_get_cq_event(comp_, &ev_cq, &ev_ctx) == 0) ibv_ack_cq_events(ev_cq, 1);
      ibv_req_notify_cq(cq_, 0);
    }
    std::lock_guard lock(mu_);
    for (;;) {
      const int n = ibv_poll_cq(cq_, static_cast<int>(wcs.size()), wcs.data());
      if (n <= 0) break;
      for (int i = 0; i < n; ++i) {
        const ibv_wc& wc = wcs[i];
        if (wc.opcode != IBV_WC_RECV) {
          if (wc.status != IBV_WC_SUCCESS) {
            dev_->log(Config::Log::kError, "rdma_cm: a MAD was not sent (completion status %d)", wc.status);
          }
          continue;
        }
        uint8_t* buf = bufs_.data() + size_t(wc.wr_id) * kRecvBytes;
        if (wc.status == IBV_WC_SUCCESS && wc.byte_len >= eng::kGrhBytes + cm::kMadBytes) {
          // The GRH slot holds the IPv4 header in its last 20 bytes: the source at 12.
          uint32_t src = 0;
          std::memcpy(&src, buf + 20 + 12, 4);
          on_mad(buf + eng::kGrhBytes, ntohl(src));
        }
        ibv_sge sge{reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(kRecvBytes), mr_->lkey};
        ibv_recv_wr wr{};
        wr.wr_id = wc.wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        ibv_post_recv(qp_, &wr, &bad);
      }
    }
    on_timers();
  }
}

void Cm::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

// ---------------------------------------------------------------- events

rdma_ucm_event_resp Cm::event_of(const Id& id, uint32_t event, int32_t status, uint64_t uid, uint32_t handle) {
  rdma_ucm_event_resp e{};
  e.uid = uid != 0 ? uid : id.uid;
  e.id = handle != 0 ? handle : id.handle;
  e.event = event;
  e.status = static_cast<uint32_t>(status);
  return e;
}

void Cm::post(const Id& id, uint32_t event, int32_t status, const rdma_ucm_conn_param* conn, uint64_t uid,
              uint32_t handle) {
  rdma_ucm_event_resp e = event_of(id, event, status, uid, handle);
  if (conn != nullptr) e.param.conn = *conn;
  enqueue(id.fd, e);
}

void Cm::post_ud(const Id& id, uint32_t event, int32_t status, const rdma_ucm_ud_param& ud, uint64_t uid,
                 uint32_t handle) {
  rdma_ucm_event_resp e = event_of(id, event, status, uid, handle);
  e.param.ud = ud;
  enqueue(id.fd, e);
}

void Cm::enqueue(int fd, const rdma_ucm_event_resp& e) {
  auto it = channels_.find(fd);
  if (it == channels_.end()) return;
  it->second.events.push_back(e);
  const uint64_t one = 1;
  // The channel's counter: one per event queued (glibc's write would come back here).
  syscall(SYS_write, fd, &one, sizeof one);
}

ssize_t Cm::get_event(int fd, const rdma_ucm_get_event& c) {
  for (;;) {
    uint64_t v = 0;
    // Blocks unless the application made the channel non-blocking (then EAGAIN).
    if (syscall(SYS_read, fd, &v, sizeof v) < 0) {
      if (errno != EBADF) return -errno;
    }
    std::unique_lock lock(mu_);
    auto it = channels_.find(fd);
    if (it == channels_.end()) {
      // Closed by another thread while this one waited: as a reader of the
      // kernel's file (which its call keeps open), wait for an event that
      // will not come, until the process ends.
      lock.unlock();
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    if (it->second.events.empty()) continue;  // an event of an id destroyed meanwhile
    rdma_ucm_event_resp e = it->second.events.front();
    it->second.events.pop_front();
    // Counted on the id the event names (the listener, for a connection request).
    for (auto& [h, id] : ids_) {
      if (id.uid == e.uid && id.fd == fd) {
        ++id.events_reported;
        break;
      }
    }
    answer(c.response, e);
    return 0;
  }
}

// ---------------------------------------------------------------- channels and commands

int Cm::open_channel(int flags) {
  std::lock_guard lock(mu_);
  if (!started_) {
    if (const int rc = start(&start_err_); rc != 0) {
      if (dev_ != nullptr) dev_->log(Config::Log::kError, "rdma_cm: %s", start_err_.c_str());
      errno = rc;
      return -1;
    }
    started_ = true;
  }
  const int fd = eventfd(0, EFD_SEMAPHORE | ((flags & O_CLOEXEC) ? EFD_CLOEXEC : 0) |
                                ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
  if (fd < 0) return -1;
  if (fd >= kMaxFds) {
    real_close()(fd);
    errno = EMFILE;
    return -1;
  }
  channels_[fd] = Channel{};
  mark_channel_fd(fd, true);
  return fd;
}

void Cm::close_channel(int fd) {
  std::lock_guard lock(mu_);
  mark_channel_fd(fd, false);
  channels_.erase(fd);
  for (auto it = ids_.begin(); it != ids_.end();) {
    if (it->second.fd == fd) {
      if (it->second.state == State::kEstablished && !it->second.ud()) send_dreq(it->second);
      it = ids_.erase(it);
    } else {
      ++it;
    }
  }
}

ssize_t Cm::command(int fd, const uint8_t* buf, size_t len) {
  rdma_ucm_cmd_hdr h;
  if (len < sizeof h) {
    errno = EINVAL;
    return -1;
  }
  std::memcpy(&h, buf, sizeof h);
  if (len < sizeof h + h.in) {
    errno = EINVAL;
    return -1;
  }
  const uint8_t* in = buf + sizeof h;
  t_out = h.out;
  // The command's struct, zero beyond what the caller gave.
  auto arg = [&]<typename T>(T* t) {
    std::memset(t, 0, sizeof *t);
    std::memcpy(t, in, std::min<size_t>(h.in, sizeof *t));
  };
  int rc = 0;
  switch (h.cmd) {
    case RDMA_USER_CM_CMD_GET_EVENT: {
      rdma_ucm_get_event c;
      arg(&c);
      const ssize_t r = get_event(fd, c);
      if (r < 0) {
        errno = static_cast<int>(-r);
        return -1;
      }
      return static_cast<ssize_t>(len);
    }
    case RDMA_USER_CM_CMD_CREATE_ID: {
      rdma_ucm_create_id c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = create_id(fd, c);
      break;
    }
    case RDMA_USER_CM_CMD_DESTROY_ID: {
      rdma_ucm_destroy_id c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = destroy_id(c);
      break;
    }
    case RDMA_USER_CM_CMD_BIND_IP: {
      rdma_ucm_bind_ip c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = bind_ip(reinterpret_cast<const sockaddr*>(&c.addr), c.id);
      break;
    }
    case RDMA_USER_CM_CMD_BIND: {
      rdma_ucm_bind c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = bind_ip(reinterpret_cast<const sockaddr*>(&c.addr), c.id);
      break;
    }
    case RDMA_USER_CM_CMD_RESOLVE_IP: {
      rdma_ucm_resolve_ip c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = resolve_ip(c);
      break;
    }
    case RDMA_USER_CM_CMD_RESOLVE_ROUTE: {
      rdma_ucm_resolve_route c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = resolve_route(c);
      break;
    }
    case RDMA_USER_CM_CMD_QUERY_ROUTE: {
      rdma_ucm_query c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = query_route(c);
      break;
    }
    case RDMA_USER_CM_CMD_CONNECT: {
      rdma_ucm_connect c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = connect(c);
      break;
    }
    case RDMA_USER_CM_CMD_LISTEN: {
      rdma_ucm_listen c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = listen(c);
      break;
    }
    case RDMA_USER_CM_CMD_ACCEPT: {
      rdma_ucm_accept c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = accept(c);
      break;
    }
    case RDMA_USER_CM_CMD_REJECT: {
      rdma_ucm_reject c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = reject(c);
      break;
    }
    case RDMA_USER_CM_CMD_DISCONNECT: {
      rdma_ucm_disconnect c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = disconnect(c);
      break;
    }
    case RDMA_USER_CM_CMD_INIT_QP_ATTR: {
      rdma_ucm_init_qp_attr c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = init_qp_attr(c);
      break;
    }
    case RDMA_USER_CM_CMD_SET_OPTION: {
      rdma_ucm_set_option c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = set_option(c);
      break;
    }
    case RDMA_USER_CM_CMD_NOTIFY: {
      rdma_ucm_notify c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = notify(c);
      break;
    }
    case RDMA_USER_CM_CMD_MIGRATE_ID: {
      rdma_ucm_migrate_id c;
      arg(&c);
      std::lock_guard lock(mu_);
      rc = migrate_id(fd, c);
      break;
    }
    case RDMA_USER_CM_CMD_QUERY: {
      // AF_IB's queries: librdmacm only asks after an AF_IB bind, which we refuse.
      rc = EOPNOTSUPP;
      break;
    }
    default:
      if (dev_ != nullptr) {
        dev_->log(Config::Log::kError, "rdma_cm: command %u (multicast, GET_OPTION, ...) is not in tita's CM",
                  h.cmd);
      }
      rc = EOPNOTSUPP;
      break;
  }
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return static_cast<ssize_t>(len);
}

// ---------------------------------------------------------------- the commands


int Cm::create_id(int fd, const rdma_ucm_create_id& c) {
  if (c.ps != cm::kPsTcp && c.ps != cm::kPsIb && c.ps != cm::kPsUdp) {
    dev_->log(Config::Log::kError,
              "rdma_cm: port space %#x: tita's CM serves RDMA_PS_TCP and RDMA_PS_IB (RC) and RDMA_PS_UDP (UD); "
              "RDMA_PS_IPOIB needs an IPoIB interface",
              c.ps);
    return EOPNOTSUPP;
  }
  if ((c.ps == cm::kPsUdp) != (c.qp_type == IBV_QPT_UD)) {
    dev_->log(Config::Log::kError, "rdma_cm: QP type %u on port space %#x: RDMA_PS_UDP is for UD QPs, the others RC",
              c.qp_type, c.ps);
    return EINVAL;
  }
  Id id;
  id.handle = next_handle_++;
  id.uid = c.uid;
  id.fd = fd;
  id.ps = c.ps;
  id.qp_type = c.qp_type;
  id.path_mtu = max_path_mtu_;
  ids_[id.handle] = id;
  answer(c.response, rdma_ucm_create_id_resp{id.handle});
  return 0;
}

int Cm::destroy_id(const rdma_ucm_destroy_id& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  if (id->ud()) {
    // A request never answered: refused, as Linux's CM does when its id goes.
    if (id->state == State::kReqReceived) {
      send_sidr_rep(*id, cm::SidrStatus::kReject);
    }
  } else {
    switch (id->state) {
      case State::kEstablished:
      case State::kRepSent:
      case State::kRepReceived: send_dreq(*id); break;
      case State::kReqReceived:
        send_rej(id->dst_ip, id->local_comm_id, id->remote_comm_id, cm::Which::kReq, cm::RejReason::kConsumerDefined,
                 nullptr, 0, id->tid);
        break;
      default: break;
    }
  }
  // Its events still queued go (the channel's counter keeps them: get_event skips the gaps).
  if (auto it = channels_.find(id->fd); it != channels_.end()) {
    auto& q = it->second.events;
    const uint64_t uid = id->uid;
    const uint32_t handle = id->handle;
    q.erase(std::remove_if(q.begin(), q.end(),
                           [&](const rdma_ucm_event_resp& e) { return e.id == handle && e.uid == uid; }),
            q.end());
  }
  answer(c.response, rdma_ucm_destroy_id_resp{id->events_reported});
  ids_.erase(c.id);
  return 0;
}

bool Cm::port_in_use(uint16_t port) const {
  for (const auto& [h, id] : ids_) {
    if (id.bound && id.src_port == port && id.listener == 0) return true;
  }
  return false;
}

uint16_t Cm::ephemeral_port() {
  for (int tries = 0; tries < 28000; ++tries) {
    const uint16_t p = next_port_;
    next_port_ = static_cast<uint16_t>(next_port_ >= 60999 ? 32768 : next_port_ + 1);
    if (!port_in_use(p)) return p;
  }
  return 0;
}

int Cm::bind_ip(const sockaddr* a, uint32_t handle) {
  Id* id = find(handle);
  if (id == nullptr) return EINVAL;
  if (a->sa_family != AF_INET) {
    // librdmacm tries AF_IB once at start to learn which commands to use.
    // IPv6: libfabric tries every address of the host; said at info level.
    if (a->sa_family != AF_IB) {
      dev_->log(a->sa_family == AF_INET6 ? Config::Log::kInfo : Config::Log::kError,
                "rdma_cm: address family %d: tita's CM speaks IPv4", a->sa_family);
    }
    return EAFNOSUPPORT;
  }
  const auto* in = reinterpret_cast<const sockaddr_in*>(a);
  const uint32_t ip = ntohl(in->sin_addr.s_addr);
  // The wildcard, and (as Linux's rdma_cm binds a loopback address to its
  // first RDMA device) 127.0.0.0/8: the device's own address.
  if (ip != 0 && ip != ipv4_ && ip >> 24 != 127) return EADDRNOTAVAIL;
  uint16_t port = ntohs(in->sin_port);
  if (port == 0) port = ephemeral_port();
  if (port == 0 || port_in_use(port)) return EADDRINUSE;
  id->src_ip = ipv4_;
  id->src_port = port;
  id->bound = true;
  return 0;
}

int Cm::resolve_ip(const rdma_ucm_resolve_ip& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  const auto* dst = reinterpret_cast<const sockaddr_in*>(&c.dst_addr);
  if (dst->sin_family != AF_INET) {
    dev_->log(Config::Log::kError, "rdma_cm: rdma_resolve_addr: address family %d: tita's CM speaks IPv4",
              dst->sin_family);
    return EAFNOSUPPORT;
  }
  if (!id->bound) {
    const auto* src = reinterpret_cast<const sockaddr*>(&c.src_addr);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    if (int rc = bind_ip(src->sa_family == AF_INET ? src : reinterpret_cast<const sockaddr*>(&any), c.id); rc != 0) {
      return rc;
    }
  }
  id->dst_ip = ntohl(dst->sin_addr.s_addr);
  id->dst_port = ntohs(dst->sin_port);
  // The peer's MAC is learnt (ARP) when the first MAD or packet goes to it;
  // an address nobody answers for ends the REQ unreachable.
  id->state = State::kAddrResolved;
  post(*id, kAddrResolved, 0);
  return 0;
}

int Cm::resolve_route(const rdma_ucm_resolve_route& c) {
  Id* id = find(c.id);
  if (id == nullptr || id->state != State::kAddrResolved) return EINVAL;
  id->state = State::kRouteResolved;  // RoCE: the path is the address's
  post(*id, kRouteResolved, 0);
  return 0;
}

int Cm::query_route(const rdma_ucm_query& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  rdma_ucm_query_route_resp r{};
  r.node_guid = htobe64(guid_);
  r.port_num = 1;
  r.ibdev_index = UINT32_MAX;  // tita0 has no kernel index (ibv_get_device_index: -1)
  auto* src = reinterpret_cast<sockaddr_in*>(&r.src_addr);
  src->sin_family = AF_INET;
  src->sin_addr.s_addr = htonl(id->src_ip != 0 ? id->src_ip : ipv4_);
  src->sin_port = htons(id->src_port);
  if (id->dst_ip != 0) {
    auto* dst = reinterpret_cast<sockaddr_in*>(&r.dst_addr);
    dst->sin_family = AF_INET;
    dst->sin_addr.s_addr = htonl(id->dst_ip);
    dst->sin_port = htons(id->dst_port);
  }
  const Gid ours = Gid::from_ipv4(ipv4_);
  ib_user_path_rec& p = r.ib_route[0];
  std::memcpy(p.sgid, ours.raw, 16);
  if (id->dst_ip != 0) std::memcpy(p.dgid, peer_gid(*id).raw, 16);
  p.pkey = htons(0xffff);
  p.mtu = id->path_mtu;
  p.hop_limit = kHopLimit;
  p.traffic_class = id->tos;
  p.numb_path = 1;
  p.reversible = 1;
  p.mtu_selector = 2;  // exactly
  p.rate_selector = 2;
  p.packet_life_time_selector = 2;
  const bool routed = id->state != State::kIdle && id->state != State::kAddrResolved && id->state != State::kListen;
  r.num_paths = routed ? 1 : 0;
  answer(c.response, r);
  return 0;
}

int Cm::connect(const rdma_ucm_connect& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  if (id->state != State::kRouteResolved) return EINVAL;
  if (id->ud()) return connect_ud(*id, c);
  if (c.conn_param.private_data_len > cm::kReqPrivate - cm::kCmaHeaderBytes) return EINVAL;
  id->local_comm_id = next_comm_id_++;
  id->local_qpn = c.conn_param.qp_num;
  id->remote_psn = random24();
  id->responder_resources = c.conn_param.responder_resources;
  id->initiator_depth = c.conn_param.initiator_depth;
  id->retry_count = std::min<uint8_t>(c.conn_param.retry_count, 7);
  id->rnr_retry_count = std::min<uint8_t>(c.conn_param.rnr_retry_count, 7);
  id->srq = c.conn_param.srq != 0;
  id->tid = (uint64_t{id->local_comm_id} << 32) | 1;
  cm::Req q;
  q.local_comm_id = id->local_comm_id;
  q.service_id = cm::service_id(id->ps, id->dst_port);
  q.local_ca_guid = guid_;
  q.local_qpn = id->local_qpn;
  q.responder_resources = id->responder_resources;
  q.initiator_depth = id->initiator_depth;
  q.remote_cm_response_timeout = kCmResponseTimeout;
  q.transport_service = 0;  // RC
  q.end_to_end_flow_control = c.conn_param.flow_control != 0;
  q.starting_psn = id->remote_psn;
  q.local_cm_response_timeout = kCmResponseTimeout;
  q.retry_count = id->retry_count;
  q.pkey = 0xffff;
  q.path_mtu = id->path_mtu;
  q.rnr_retry_count = id->rnr_retry_count;
  q.max_cm_retries = kMaxResends;
  q.srq = id->srq;
  q.primary_local_gid = Gid::from_ipv4(ipv4_);
  q.primary_remote_gid = peer_gid(*id);
  q.traffic_class = id->tos;
  q.hop_limit = kHopLimit;
  q.local_ack_timeout = id->ack_timeout;
  cma_private_data(*id, c.conn_param, q.private_data);
  cm::build(q, id->tid, id->mad.data());
  id->state = State::kReqSent;
  send_and_wait(*id, kMaxResends);
  return 0;
}

void Cm::cma_private_data(const Id& id, const rdma_ucm_conn_param& p, uint8_t* out) const {
  cm::CmaHeader ch;
  ch.src_port = id.src_port;
  ch.src = Gid::from_ipv4(ipv4_);
  ch.dst = peer_gid(id);
  cm::build_cma_header(ch, out);
  std::memcpy(out + cm::kCmaHeaderBytes, p.private_data, p.private_data_len);
}

int Cm::connect_ud(Id& id, const rdma_ucm_connect& c) {
  if (c.conn_param.private_data_len > cm::kSidrReqPrivate - cm::kCmaHeaderBytes) return EINVAL;
  id.local_comm_id = next_comm_id_++;
  id.local_qpn = c.conn_param.qp_num;
  id.tid = (uint64_t{id.local_comm_id} << 32) | 3;
  cm::SidrReq q;
  q.request_id = id.local_comm_id;
  q.service_id = cm::service_id(id.ps, id.dst_port);
  cma_private_data(id, c.conn_param, q.private_data);
  cm::build(q, id.tid, id.mad.data());
  id.state = State::kReqSent;
  send_and_wait(id, kMaxResends);
  return 0;
}

int Cm::listen(const rdma_ucm_listen& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  if (!id->bound) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    if (int rc = bind_ip(reinterpret_cast<const sockaddr*>(&any), c.id); rc != 0) return rc;
  }
  id->state = State::kListen;
  dev_->log(Config::Log::kInfo, "rdma_cm: listening on port %u", id->src_port);
  return 0;
}

int Cm::accept(const rdma_ucm_accept& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  if (id->state == State::kRepReceived) {
    // Active side, its QP in RTS: the RTU (librdmacm sends ACCEPT without parameters here).
    cm::Short s{id->local_comm_id, id->remote_comm_id, 0};
    cm::build(cm::Attr::kRtu, s, id->tid, id->mad.data());
    send_mad(id->dst_ip, id->mad.data());
    id->resend_at_ms = 0;
    id->state = State::kEstablished;
    return 0;
  }
  if (id->state != State::kReqReceived) return EINVAL;
  if (id->ud()) return accept_ud(*id, c);
  if (c.conn_param.private_data_len > cm::kRepPrivate) return EINVAL;
  if (c.uid != 0) id->uid = c.uid;
  if (c.conn_param.valid) {
    id->local_qpn = c.conn_param.qp_num;
    id->responder_resources = c.conn_param.responder_resources;
    id->initiator_depth = c.conn_param.initiator_depth;
    id->rnr_retry_count = std::min<uint8_t>(c.conn_param.rnr_retry_count, 7);
    id->srq = c.conn_param.srq != 0;
  }
  cm::Rep p;
  p.local_comm_id = id->local_comm_id;
  p.remote_comm_id = id->remote_comm_id;
  p.local_qpn = id->local_qpn;
  p.starting_psn = id->remote_psn;
  p.responder_resources = id->responder_resources;
  p.initiator_depth = id->initiator_depth;
  p.target_ack_delay = kLocalCaAckDelay;
  p.end_to_end_flow_control = c.conn_param.flow_control != 0;
  p.rnr_retry_count = id->rnr_retry_count;
  p.srq = id->srq;
  p.local_ca_guid = guid_;
  std::memcpy(p.private_data, c.conn_param.private_data, c.conn_param.private_data_len);
  cm::build(p, id->tid, id->mad.data());
  id->state = State::kRepSent;
  send_and_wait(*id, kMaxResends);
  return 0;
}

int Cm::accept_ud(Id& id, const rdma_ucm_accept& c) {
  if (c.conn_param.private_data_len > cm::kSidrRepPrivate) return EINVAL;
  if (c.uid != 0) id.uid = c.uid;
  id.local_qpn = c.conn_param.qp_num;
  send_sidr_rep(id, cm::SidrStatus::kSuccess, c.conn_param.private_data, c.conn_param.private_data_len);
  // Nothing more comes: the requester has what it needs (a duplicate request gets the same answer).
  id.state = State::kEstablished;
  return 0;
}

int Cm::reject(const rdma_ucm_reject& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  if (id->ud()) {
    if (id->state != State::kReqReceived) return EINVAL;
    send_sidr_rep(*id, cm::SidrStatus::kReject, c.private_data, c.private_data_len);
    id->state = State::kDisconnected;
    return 0;
  }
  if (id->state != State::kReqReceived && id->state != State::kRepReceived) return EINVAL;
  const bool passive = id->state == State::kReqReceived;
  send_rej(id->dst_ip, id->local_comm_id, id->remote_comm_id, passive ? cm::Which::kReq : cm::Which::kRep,
           c.reason != 0 ? static_cast<cm::RejReason>(c.reason) : cm::RejReason::kConsumerDefined, c.private_data,
           std::min<size_t>(c.private_data_len, cm::kRejPrivate), id->tid);
  id->state = State::kDisconnected;
  id->resend_at_ms = 0;
  return 0;
}

void Cm::send_dreq(Id& id) {
  cm::Short s{id.local_comm_id, id.remote_comm_id, id.remote_qpn};
  id.tid = (uint64_t{id.local_comm_id} << 32) | 2;
  cm::build(cm::Attr::kDreq, s, id.tid, id.mad.data());
  id.state = State::kDreqSent;
  send_and_wait(id, kDreqResends);
}

int Cm::disconnect(const rdma_ucm_disconnect& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  if (id->ud()) return 0;  // SIDR left no connection
  switch (id->state) {
    case State::kEstablished:
    case State::kRepSent:
    case State::kRepReceived: send_dreq(*id); return 0;
    case State::kDreqSent:
    case State::kDisconnected: return 0;  // already going, or gone (the DREQ came from the peer)
    default: return EINVAL;
  }
}

int Cm::init_qp_attr(const rdma_ucm_init_qp_attr& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  ib_uverbs_qp_attr a{};
  a.qp_state = c.qp_state;
  const bool connecting = id->local_comm_id != 0;
  if (id->ud()) {
    // A UD QP needs its port, partition and the port space's Q_Key; RTR and
    // RTS take nothing from the CM (librdmacm asks only for INIT).
    a.qp_attr_mask = IBV_QP_STATE;
    if (c.qp_state == IBV_QPS_INIT) {
      a.qp_attr_mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
      a.port_num = 1;
      a.pkey_index = 0;
      a.qkey = cm::kUdpQkey;
    } else if (c.qp_state == IBV_QPS_RTS) {
      a.qp_attr_mask |= IBV_QP_SQ_PSN;
      a.sq_psn = 0;
    } else if (c.qp_state != IBV_QPS_RTR) {
      return EINVAL;
    }
    answer(c.response, a);
    return 0;
  }
  switch (c.qp_state) {
    case IBV_QPS_INIT:
      a.qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
      a.port_num = 1;
      a.pkey_index = 0;
      // Before the CM knows the peer: no remote access yet (INIT->INIT adds it).
      if (connecting) {
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        if (id->responder_resources != 0) a.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
      }
      break;
    case IBV_QPS_RTR: {
      if (!connecting) return EINVAL;
      a.qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      const Gid g = peer_gid(*id);
      std::memcpy(a.ah_attr.grh.dgid, g.raw, 16);
      a.ah_attr.grh.sgid_index = 0;
      a.ah_attr.grh.hop_limit = kHopLimit;
      a.ah_attr.grh.traffic_class = id->tos;
      a.ah_attr.is_global = 1;
      a.ah_attr.port_num = 1;
      a.path_mtu = id->path_mtu;
      a.dest_qp_num = id->remote_qpn;
      a.rq_psn = id->remote_psn;
      a.max_dest_rd_atomic = id->responder_resources;
      a.min_rnr_timer = kMinRnrTimer;
      break;
    }
    case IBV_QPS_RTS:
      if (!connecting) return EINVAL;
      a.qp_attr_mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                       IBV_QP_MAX_QP_RD_ATOMIC;
      a.timeout = id->ack_timeout;
      a.retry_cnt = id->retry_count;
      a.rnr_retry = id->rnr_retry_count;
      a.sq_psn = id->local_psn;
      a.max_rd_atomic = id->initiator_depth;
      break;
    default: return EINVAL;
  }
  answer(c.response, a);
  return 0;
}

int Cm::set_option(const rdma_ucm_set_option& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  const void* v = reinterpret_cast<const void*>(static_cast<uintptr_t>(c.optval));
  if (c.level == RDMA_OPTION_ID) {
    if (c.optname == RDMA_OPTION_ID_TOS && c.optlen == 1) {
      std::memcpy(&id->tos, v, 1);
      return 0;
    }
    if (c.optname == RDMA_OPTION_ID_ACK_TIMEOUT && c.optlen == 1) {
      std::memcpy(&id->ack_timeout, v, 1);
      return 0;
    }
    if (c.optname == RDMA_OPTION_ID_REUSEADDR || c.optname == RDMA_OPTION_ID_AFONLY) return 0;
  }
  // RDMA_OPTION_IB_PATH: librdmacm's fallback is the RESOLVE_ROUTE command.
  return EOPNOTSUPP;
}

int Cm::notify(const rdma_ucm_notify& c) {
  Id* id = find(c.id);
  if (id == nullptr) return EINVAL;
  // IBV_EVENT_COMM_EST: the QP received before the RTU: the connection is up (IBA 12.9.7.4).
  if (c.event == IBV_EVENT_COMM_EST && id->state == State::kRepSent) {
    id->state = State::kEstablished;
    id->resend_at_ms = 0;
    post(*id, kEstablished, 0);
  }
  return 0;
}

int Cm::migrate_id(int fd, const rdma_ucm_migrate_id& c) {
  // Written to the new channel; c.fd names the one the id leaves.
  Id* id = find(c.id);
  if (id == nullptr || id->fd != static_cast<int>(c.fd)) return EINVAL;
  // Events already queued stay on the old channel (librdmacm migrates a
  // fresh id, before any).
  id->fd = fd;
  answer(c.response, rdma_ucm_migrate_resp{id->events_reported});
  return 0;
}

// ---------------------------------------------------------------- the protocol

void Cm::send_and_wait(Id& id, int resends) {
  send_mad(id.dst_ip, id.mad.data());
  id.resends_left = resends;
  id.resend_at_ms = now_ms() + kResendMs;
}

void Cm::send_rej(uint32_t peer_ip, uint32_t local_comm_id, uint32_t remote_comm_id, cm::Which which,
                  cm::RejReason reason, const uint8_t* priv, size_t priv_len, uint64_t tid) {
  cm::Rej r;
  r.local_comm_id = local_comm_id;
  r.remote_comm_id = remote_comm_id;
  r.rejected = which;
  r.reason = static_cast<uint16_t>(reason);
  if (priv != nullptr) std::memcpy(r.private_data, priv, std::min(priv_len, cm::kRejPrivate));
  uint8_t mad[cm::kMadBytes];
  cm::build(r, tid, mad);
  send_mad(peer_ip, mad);
}

void Cm::send_sidr_rep(uint32_t peer_ip, uint32_t request_id, uint64_t service_id, cm::SidrStatus status,
                       uint32_t qpn, const uint8_t* priv, size_t priv_len, uint64_t tid, uint8_t* mad) {
  cm::SidrRep r;
  r.request_id = request_id;
  r.status = status;
  r.service_id = service_id;
  if (status == cm::SidrStatus::kSuccess) {
    r.qpn = qpn;
    r.qkey = cm::kUdpQkey;
  }
  if (priv != nullptr) std::memcpy(r.private_data, priv, std::min(priv_len, cm::kSidrRepPrivate));
  cm::build(r, tid, mad);
  send_mad(peer_ip, mad);
}

Id* Cm::by_local_comm_id(uint32_t comm_id) {
  for (auto& [h, id] : ids_) {
    if (id.local_comm_id == comm_id && comm_id != 0) return &id;
  }
  return nullptr;
}

void Cm::on_mad(const uint8_t* mad, uint32_t peer_ip) {
  cm::MadHeader h;
  if (!cm::parse_header(mad, cm::kMadBytes, &h) || h.method != cm::kMethodSend) return;
  switch (h.attr) {
    case cm::Attr::kReq: on_req(mad, peer_ip); break;
    case cm::Attr::kRep: on_rep(mad); break;
    case cm::Attr::kRtu: on_rtu(mad); break;
    case cm::Attr::kRej: on_rej(mad); break;
    case cm::Attr::kDreq: on_dreq(mad, peer_ip); break;
    case cm::Attr::kDrep: on_drep(mad); break;
    case cm::Attr::kSidrReq: on_sidr_req(mad, peer_ip); break;
    case cm::Attr::kSidrRep: on_sidr_rep(mad); break;
    case cm::Attr::kMra: {
      // The peer needs longer: wait another round before resending.
      cm::Mra m;
      cm::parse(mad, &m);
      if (Id* id = by_local_comm_id(m.remote_comm_id); id != nullptr && id->resend_at_ms != 0) {
        id->resend_at_ms = now_ms() + kResendMs;
      }
      break;
    }
    default: break;  // LAP, APR, ClassPortInfo: not spoken
  }
}

Id* Cm::find_listener(uint64_t service_id) {
  for (auto& [handle, id] : ids_) {
    if (id.state == State::kListen && id.src_port == cm::service_port(service_id) &&
        id.ps == cm::service_ps(service_id)) {
      return &id;
    }
  }
  return nullptr;
}

Id Cm::passive_id(const Id& listener, uint32_t peer_ip, uint16_t peer_port, uint64_t tid) {
  Id id;
  id.handle = next_handle_++;
  id.uid = 0;  // set by ACCEPT
  id.fd = listener.fd;
  id.ps = listener.ps;
  id.qp_type = listener.qp_type;
  id.listener = listener.handle;
  id.state = State::kReqReceived;
  id.src_ip = ipv4_;
  id.src_port = listener.src_port;
  id.bound = true;
  id.dst_ip = peer_ip;
  id.dst_port = peer_port;
  id.path_mtu = max_path_mtu_;
  id.tid = tid;
  return id;
}

void Cm::on_req(const uint8_t* mad, uint32_t peer_ip) {
  cm::MadHeader h;
  cm::parse_header(mad, cm::kMadBytes, &h);
  cm::Req q;
  cm::parse(mad, &q);
  // A REQ we have seen: answer again what we answered.
  for (auto& [handle, id] : ids_) {
    if (id.remote_comm_id == q.local_comm_id && id.dst_ip == peer_ip && id.listener != 0) {
      if (id.state == State::kRepSent) send_mad(peer_ip, id.mad.data());
      return;
    }
  }
  Id* listener = find_listener(q.service_id);
  cm::CmaHeader ch;
  const bool ip_ps = cm::service_ps(q.service_id) == cm::kPsTcp;
  if (listener == nullptr || q.transport_service != 0 || (ip_ps && !cm::parse_cma_header(q.private_data, &ch))) {
    // As Linux's CM answers a REQ nobody listens for (a peer that connects
    // before its server's rdma_listen sees RDMA_CM_EVENT_REJECTED, status 8).
    dev_->log(Config::Log::kInfo, "rdma_cm: REQ from %u.%u.%u.%u for port %u: %s; rejected (invalid service ID)",
              peer_ip >> 24, (peer_ip >> 16) & 255, (peer_ip >> 8) & 255, peer_ip & 255,
              cm::service_port(q.service_id),
              listener == nullptr ? "nobody listens there" : "not a request tita's CM serves");
    send_rej(peer_ip, 0, q.local_comm_id, cm::Which::kReq, cm::RejReason::kInvalidServiceId, nullptr, 0, h.tid);
    return;
  }
  Id id = passive_id(*listener, peer_ip, ip_ps ? ch.src_port : 0, h.tid);
  id.local_comm_id = next_comm_id_++;
  id.remote_comm_id = q.local_comm_id;
  id.remote_qpn = q.local_qpn;
  id.local_psn = q.starting_psn;
  id.remote_psn = random24();
  // Seen from this side (IBA 12.7.29): what the peer initiates we respond to.
  id.responder_resources = q.initiator_depth;
  id.initiator_depth = q.responder_resources;
  id.retry_count = q.retry_count;
  id.rnr_retry_count = q.rnr_retry_count;
  id.ack_timeout = q.local_ack_timeout != 0 ? q.local_ack_timeout : kLocalAckTimeout;
  id.path_mtu = std::min(q.path_mtu, max_path_mtu_);
  id.srq = q.srq;
  id.tos = q.traffic_class;
  rdma_ucm_conn_param p{};
  p.qp_num = q.local_qpn;
  p.srq = q.srq;
  p.responder_resources = id.responder_resources;
  p.initiator_depth = id.initiator_depth;
  p.flow_control = q.end_to_end_flow_control;
  p.retry_count = q.retry_count;
  p.rnr_retry_count = q.rnr_retry_count;
  const size_t off = ip_ps ? cm::kCmaHeaderBytes : 0;
  p.private_data_len = static_cast<uint8_t>(cm::kReqPrivate - off);
  std::memcpy(p.private_data, q.private_data + off, p.private_data_len);
  ids_[id.handle] = id;
  // The listener's event, naming the new id.
  post(*listener, kConnectRequest, 0, &p, listener->uid, id.handle);
}

void Cm::on_rep(const uint8_t* mad) {
  cm::Rep p;
  cm::parse(mad, &p);
  Id* id = by_local_comm_id(p.remote_comm_id);
  if (id == nullptr) return;
  if (id->state == State::kEstablished && id->remote_comm_id == p.local_comm_id) {
    send_mad(id->dst_ip, id->mad.data());  // our RTU was lost
    return;
  }
  if (id->state != State::kReqSent) return;
  id->remote_comm_id = p.local_comm_id;
  id->remote_qpn = p.local_qpn;
  id->local_psn = p.starting_psn;
  // The responder's resources are what we may initiate, and the reverse.
  id->initiator_depth = std::min<uint8_t>(id->initiator_depth, p.responder_resources);
  id->responder_resources = std::min<uint8_t>(id->responder_resources, p.initiator_depth);
  id->rnr_retry_count = std::min<uint8_t>(id->rnr_retry_count, p.rnr_retry_count);
  id->resend_at_ms = 0;
  id->state = State::kRepReceived;
  rdma_ucm_conn_param c{};
  c.qp_num = p.local_qpn;
  c.srq = p.srq;
  c.responder_resources = p.responder_resources;
  c.initiator_depth = p.initiator_depth;
  c.flow_control = p.end_to_end_flow_control;
  c.rnr_retry_count = p.rnr_retry_count;
  c.private_data_len = static_cast<uint8_t>(cm::kRepPrivate);
  std::memcpy(c.private_data, p.private_data, cm::kRepPrivate);
  post(*id, kConnectResponse, 0, &c);
}

void Cm::on_rtu(const uint8_t* mad) {
  cm::Short s;
  cm::parse(mad, &s);
  Id* id = by_local_comm_id(s.remote_comm_id);
  if (id == nullptr || id->state != State::kRepSent) return;
  id->state = State::kEstablished;
  id->resend_at_ms = 0;
  post(*id, kEstablished, 0);
}

void Cm::on_rej(const uint8_t* mad) {
  cm::Rej r;
  cm::parse(mad, &r);
  Id* id = by_local_comm_id(r.remote_comm_id);
  if (id == nullptr || (id->state != State::kReqSent && id->state != State::kRepSent)) return;
  id->state = State::kDisconnected;
  id->resend_at_ms = 0;
  rdma_ucm_conn_param c{};
  c.private_data_len = static_cast<uint8_t>(cm::kRejPrivate);
  std::memcpy(c.private_data, r.private_data, cm::kRejPrivate);
  post(*id, kRejected, r.reason, &c);
}

void Cm::on_dreq(const uint8_t* mad, uint32_t peer_ip) {
  cm::MadHeader h;
  cm::parse_header(mad, cm::kMadBytes, &h);
  cm::Short s;
  cm::parse(mad, &s);
  Id* id = by_local_comm_id(s.remote_comm_id);
  // A DREP, whether we know the connection still or not (IBA 12.9.8.6).
  cm::Short d{s.remote_comm_id, s.local_comm_id, 0};
  uint8_t drep[cm::kMadBytes];
  cm::build(cm::Attr::kDrep, d, h.tid, drep);
  send_mad(peer_ip, drep);
  if (id == nullptr) return;
  const bool connected = id->state == State::kEstablished || id->state == State::kRepSent ||
                         id->state == State::kRepReceived || id->state == State::kDreqSent;
  const bool was_dreq_sent = id->state == State::kDreqSent;
  id->state = State::kDisconnected;
  id->resend_at_ms = 0;
  // Both sides sent DREQ at once: one DISCONNECTED each, here for ours.
  if (connected || was_dreq_sent) post(*id, kDisconnected, 0);
}

void Cm::on_drep(const uint8_t* mad) {
  cm::Short s;
  cm::parse(mad, &s);
  Id* id = by_local_comm_id(s.remote_comm_id);
  if (id == nullptr || id->state != State::kDreqSent) return;
  id->state = State::kDisconnected;
  id->resend_at_ms = 0;
  post(*id, kDisconnected, 0);
}

void Cm::on_sidr_req(const uint8_t* mad, uint32_t peer_ip) {
  cm::MadHeader h;
  cm::parse_header(mad, cm::kMadBytes, &h);
  cm::SidrReq q;
  cm::parse(mad, &q);
  // A request we have answered: the same answer; one still with the application: nothing yet.
  for (auto& [handle, id] : ids_) {
    if (id.ud() && id.listener != 0 && id.dst_ip == peer_ip && id.remote_comm_id == q.request_id) {
      if (id.state != State::kReqReceived) send_mad(peer_ip, id.mad.data());
      return;
    }
  }
  Id* listener = find_listener(q.service_id);
  cm::CmaHeader ch;
  if (listener == nullptr || !listener->ud() || !cm::parse_cma_header(q.private_data, &ch)) {
    uint8_t rep[cm::kMadBytes];
    send_sidr_rep(peer_ip, q.request_id, q.service_id, cm::SidrStatus::kUnsupported, 0, nullptr, 0, h.tid, rep);
    return;
  }
  Id id = passive_id(*listener, peer_ip, ch.src_port, h.tid);
  id.remote_comm_id = q.request_id;
  rdma_ucm_ud_param p{};
  p.private_data_len = static_cast<uint8_t>(cm::kSidrReqPrivate - cm::kCmaHeaderBytes);
  std::memcpy(p.private_data, q.private_data + cm::kCmaHeaderBytes, p.private_data_len);
  ids_[id.handle] = id;
  post_ud(*listener, kConnectRequest, 0, p, listener->uid, id.handle);
}

void Cm::on_sidr_rep(const uint8_t* mad) {
  cm::SidrRep r;
  cm::parse(mad, &r);
  Id* id = by_local_comm_id(r.request_id);
  if (id == nullptr || !id->ud() || id->state != State::kReqSent) return;
  id->resend_at_ms = 0;
  rdma_ucm_ud_param p{};
  p.private_data_len = static_cast<uint8_t>(cm::kSidrRepPrivate);
  std::memcpy(p.private_data, r.private_data, cm::kSidrRepPrivate);
  if (r.status != cm::SidrStatus::kSuccess) {
    // As Linux's rdma_cm: UNREACHABLE, the SIDR status as the event's.
    dev_->log(Config::Log::kInfo, "rdma_cm: %u.%u.%u.%u answered SIDR_REQ for port %u with status %u",
              id->dst_ip >> 24, (id->dst_ip >> 16) & 0xff, (id->dst_ip >> 8) & 0xff, id->dst_ip & 0xff, id->dst_port,
              static_cast<unsigned>(r.status));
    id->state = State::kDisconnected;
    post_ud(*id, kUnreachable, static_cast<int32_t>(r.status), p);
    return;
  }
  id->remote_qpn = r.qpn;
  id->state = State::kEstablished;
  p.qp_num = r.qpn;
  p.qkey = r.qkey;
  // The address handle to reach it: RoCEv2, the peer's IPv4-mapped GID.
  const Gid g = peer_gid(*id);
  std::memcpy(p.ah_attr.grh.dgid, g.raw, 16);
  p.ah_attr.grh.sgid_index = 0;
  p.ah_attr.grh.hop_limit = kHopLimit;
  p.ah_attr.grh.traffic_class = id->tos;
  p.ah_attr.is_global = 1;
  p.ah_attr.port_num = 1;
  post_ud(*id, kEstablished, 0, p);
}

void Cm::on_timers() {
  const uint64_t now = now_ms();
  for (auto& [handle, id] : ids_) {
    if (id.resend_at_ms == 0 || now < id.resend_at_ms) continue;
    if (id.resends_left > 0) {
      --id.resends_left;
      send_mad(id.dst_ip, id.mad.data());
      id.resend_at_ms = now + kResendMs;
      continue;
    }
    id.resend_at_ms = 0;
    switch (id.state) {
      case State::kReqSent:
      case State::kRepSent:
        dev_->log(Config::Log::kError, "rdma_cm: %u.%u.%u.%u did not answer the %s after %d tries",
                  id.dst_ip >> 24, (id.dst_ip >> 16) & 0xff, (id.dst_ip >> 8) & 0xff, id.dst_ip & 0xff,
                  id.state == State::kRepSent ? "REP" : id.ud() ? "SIDR_REQ" : "REQ", kMaxResends + 1);
        id.state = State::kDisconnected;
        post(id, kUnreachable, -ETIMEDOUT);
        break;
      case State::kDreqSent:
        id.state = State::kDisconnected;
        post(id, kDisconnected, 0);
        break;
      default: break;
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- glibc's entry points

TITA_EXPORT int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  if (path != nullptr && std::strcmp(path, kCmNode) == 0) return Cm::get().open_channel(flags);
  return real_open()(path, flags, mode);
}

TITA_EXPORT ssize_t write(int fd, const void* buf, size_t len) {
  if (is_channel_fd(fd)) [[unlikely]] {
    return Cm::get().command(fd, static_cast<const uint8_t*>(buf), len);
  }
  return real_write()(fd, buf, len);
}

TITA_EXPORT int close(int fd) {
  if (is_channel_fd(fd)) [[unlikely]] {
    Cm::get().close_channel(fd);
  }
  return real_close()(fd);
}

TITA_EXPORT int fstat(int fd, struct stat* st) noexcept {
  const int rc = real_fstat()(fd, st);
  if (rc == 0 && is_channel_fd(fd)) [[unlikely]] {
    // What librdmacm checks: a character device (the kernel's is misc 10:*).
    st->st_mode = S_IFCHR | 0666;
    st->st_rdev = makedev(10, 0);
  }
  return rc;
}

void cm_shutdown() {
  if (Cm* c = Cm::existing(); c != nullptr) c->stop();
}

}  // namespace tita::verbs
