// tita-perf: bandwidth and latency tests for tita's RC transport on DPDK ports,
// shaped like perftest (ib_write_bw, ib_send_lat, ...).
//
//   server:  tita-perf <EAL args> -- --port net_vhost0 --ip 10.0.0.2 --server
//   client:  tita-perf <EAL args> -- --port 0 --ip 10.0.0.1 --client 127.0.0.1
//                --test write --size 65536 --qps 4 --duration 5 --cc hpcc
//
// Connection setup goes over TCP (QPN, PSN, GID, MAC, buffer address and rkey),
// as perftest does; the client tells the server which test to serve.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <rte_eth_ring.h>
#include <rte_lcore.h>
#include <rte_ring.h>
#include <unistd.h>

#include <ctime>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "oob.h"
#include "tita/cc/cc.h"
#include "tita/dpdk/host.h"
#include "tita/dpdk/telemetry.h"
#include "tita/wire/psn.h"

namespace {

using namespace tita;
using engine::Engine;
using engine::WcStatus;
using engine::WrOpcode;
using nlohmann::json;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Options {
  std::string port = "0";
  std::string ip = "10.0.0.1";
  std::string mac;  // empty: the port's
  bool server = false;
  std::string client;  // server host for the out-of-band connection
  uint16_t tcp_port = 18515;
  std::string test = "write";
  std::string mode = "bw";
  uint32_t size = 65536;
  uint32_t qps = 1;
  uint32_t tx_depth = 128;
  uint64_t iters = 0;  // 0: run for `duration`
  double duration_s = 2;
  uint32_t mtu = 4096;
  std::string cc = "none";
  std::vector<std::string> cc_params;
  std::vector<std::string> cc_plugins;
  std::string recovery = "gbn";
  double rate_gbps = 100;
  bool pace = false;
  bool loopback = false;
  uint32_t clients = 1;       // server: how many clients to serve at once
  bool idle_sleep = false;    // sleep while the engine has nothing to do (processes sharing a core)
  double base_rtt_us = 10;    // congestion control's base RTT
  double pacing_slack_us = 0; // sending time a late poll may catch up
  bool quiet = false;  // no report (the in-process server of --loopback)
  bool check = false;
  bool zero_copy = false;
  bool json_out = false;
  std::string series;
  double series_interval_us = 1000;
  uint8_t timeout = 14;
  uint8_t dscp = 26;
  uint32_t ack_req_every = 1;
  std::string dodge = "none";  // Hash Dodging: the field path control changes (doc/hash-dodging.md)
  bool mtu_given = false;      // server: its own --mtu, not the client's
  bool arp = false;            // resolve the peer's MAC by ARP, not from the exchange
  std::string peer_gid;        // send to this GID instead of the one the peer reports
  double linger_s = 0;         // after a failed work request: keep the engine up this long
  std::string fault;           // an injected application fault: no-recv, bad-rkey
};

uint64_t mono_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// What a test may ask for: the command line's checks, and the server's of a
// client's hello (which comes over the network, so is checked the same way).
const std::vector<std::string> kTests = {"write", "send", "read"};
const std::vector<std::string> kModes = {"bw", "lat"};
const std::vector<std::string> kRecoveries = {"gbn", "sr"};
const std::vector<uint32_t> kMtus = {256, 512, 1024, 2048, 4096};
constexpr uint32_t kMaxSize = 1u << 30;
constexpr uint32_t kMaxQps = 4096;
constexpr uint32_t kMaxTxDepth = 8192;
constexpr double kMaxRateGbps = 3200;

// Why a client's test cannot be served, or empty.
std::string check_test(const Options& o) {
  auto in = [](const auto& set, const auto& v) { return std::find(set.begin(), set.end(), v) != set.end(); };
  if (!in(kTests, o.test)) return "test '" + o.test + "' is not write, send or read";
  if (!in(kModes, o.mode)) return "mode '" + o.mode + "' is not bw or lat";
  if (!in(kRecoveries, o.recovery)) return "recovery '" + o.recovery + "' is not gbn or sr";
  if (!in(kMtus, o.mtu)) return "MTU " + std::to_string(o.mtu) + " is not 256, 512, 1024, 2048 or 4096";
  if (o.size < 1 || o.size > kMaxSize) return "size " + std::to_string(o.size) + " is not 1 to 2^30";
  if (o.qps < 1 || o.qps > kMaxQps) return std::to_string(o.qps) + " QPs is not 1 to 4096";
  if (o.tx_depth < 1 || o.tx_depth > kMaxTxDepth) return "tx depth " + std::to_string(o.tx_depth) + " is not 1 to 8192";
  if (!(o.rate_gbps > 0 && o.rate_gbps <= kMaxRateGbps)) {
    return "rate " + std::to_string(o.rate_gbps) + " Gb/s is not in (0, 3200]";
  }
  return {};
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "tita-perf: %s\n", msg.c_str());
  std::exit(1);
}

std::string mac_string(const uint8_t* m) {
  char b[18];
  std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

bool parse_mac(const std::string& s, uint8_t* out) {
  unsigned v[6];
  if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) return false;
  for (int i = 0; i < 6; ++i) out[i] = static_cast<uint8_t>(v[i]);
  return true;
}

bool parse_ipv4(const std::string& s, uint32_t* out) {
  unsigned a, b, c, d;
  char extra;
  if (std::sscanf(s.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &extra) != 4 || a > 255 || b > 255 || c > 255 ||
      d > 255) {
    return false;
  }
  *out = a << 24 | b << 16 | c << 8 | d;
  return true;
}

void fill(uint8_t* p, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

class Perf {
 public:
  explicit Perf(Options o) : o_(std::move(o)) {}
  // The engine leaves telemetry before it is freed (a scrape would read freed memory).
  ~Perf() { dpdk::telemetry_withdraw(telemetry_id_); }

  int run() {
    setup_port();
    if (o_.server) {
      serve();
    } else {
      drive();
    }
    return 0;
  }

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

  // The port: before anything else.
  void setup_port() {
    std::string err;
    dpdk::PortConfig pc;
    if (port_.open(o_.port, pc, &err) != 0) die(err);
  }

  // The engine host: once the test's parameters are known (the server learns them).
  void setup_engine() {
    uint32_t ip;
    if (!parse_ipv4(o_.ip, &ip)) die("--ip " + o_.ip + " is not an IPv4 address");
    engine::EngineConfig cfg;
    cfg.gid = wire::Gid::from_ipv4(ip);
    cfg.line_rate_bps = static_cast<uint64_t>(o_.rate_gbps * 1e9);
    cfg.ack_req_every = o_.ack_req_every;
    cfg.pace_line_rate = o_.pace;
    cfg.base_rtt_ns = static_cast<uint64_t>(o_.base_rtt_us * 1e3);
    cfg.pacing_slack_ns = static_cast<uint64_t>(o_.pacing_slack_us * 1e3);
    wire::parse_dodge_field(o_.dodge, &cfg.path.field);  // checked by the option
    if (!o_.mac.empty() && !parse_mac(o_.mac, cfg.mac)) die("--mac " + o_.mac + " is not a MAC address");
    host_ = std::make_unique<dpdk::EngineHost>(
        port_, 0, cfg, dpdk::HostOptions{.zero_copy = o_.zero_copy, .port_mac = o_.mac.empty()});
    telemetry_id_ = dpdk::telemetry_publish(host_.get(), o_.server ? "tita-perf server" : "tita-perf client");
  }

  // Buffers, MR, CQ and QPs for --size and --qps (the server learns them from the client).
  void setup_resources() {
    std::string err;
    setup_engine();
    Engine& e = host_->engine();
    mem_len_ = region() * total_qps();
    mem_ = static_cast<uint8_t*>(std::aligned_alloc(4096, mem_len_));
    if (mem_ == nullptr) die("cannot allocate " + std::to_string(mem_len_) + " bytes");
    expected_.assign(mem_len_, 0);
    // Each client's QP i fills its region with pattern 1000 + i.
    for (uint32_t i = 0; i < total_qps(); ++i) fill(expected_.data() + i * region(), o_.size, 1000 + i % o_.qps);
    std::memcpy(mem_, expected_.data(), mem_len_);
    if (o_.zero_copy && host_->register_memory(mem_, mem_len_, &err) != 0) die(err);
    pd_ = e.alloc_pd();
    const uint32_t access = engine::kAccessLocalWrite | engine::kAccessRemoteWrite | engine::kAccessRemoteRead;
    if (e.reg_mr(pd_, mem_, mem_len_, access, &mr_) != 0) die("reg_mr failed");
    if (e.create_cq(std::max<uint32_t>(4096, 2 * total_qps() * o_.tx_depth), &cq_) != 0) die("create_cq failed");
    conns_.resize(total_qps());
    for (Conn& c : conns_) {
      const engine::QpInitAttr qa{.send_cq = cq_, .recv_cq = cq_, .max_send_wr = o_.tx_depth + 1,
                                  .max_recv_wr = o_.tx_depth + 1, .max_sge = 1};
      if (e.create_qp(pd_, qa, &c.qpn) != 0) die("create_qp failed");
      c.psn = static_cast<uint32_t>(psn_rng_()) & wire::kPsnMask;
    }
  }

  // What client k (0 for a client itself) needs: its slice of QPs and buffer regions.
  json local_info(uint32_t k = 0) const {
    json qpns = json::array();
    json psns = json::array();
    for (uint32_t i = 0; i < o_.qps; ++i) {
      qpns.push_back(conns_[k * o_.qps + i].qpn);
      psns.push_back(conns_[k * o_.qps + i].psn);
    }
    return {{"qpns", qpns},
            {"psns", psns},
            {"gid", o_.ip},
            {"mac", mac_string(host_->engine().config().mac)},
            {"addr", mr_.addr + k * o_.qps * region()},
            {"rkey", mr_.rkey},
            {"region", region()}};
  }

  // RESET -> INIT -> RTR -> RTS: our QPs of client k against the peer's QPs.
  void connect(const json& peer, uint32_t k = 0) {
    Engine& e = host_->engine();
    uint32_t ip;
    if (!parse_ipv4(peer.at("gid").get<std::string>(), &ip)) die("peer sent a bad GID");
    if (!o_.peer_gid.empty() && !parse_ipv4(o_.peer_gid, &ip)) die("--peer-gid " + o_.peer_gid + " is not IPv4");
    uint8_t mac[6] = {};  // all zero: the engine resolves it by ARP
    if (!o_.arp && !parse_mac(peer.at("mac").get<std::string>(), mac)) die("peer sent a bad MAC");
    const auto& qpns = peer.at("qpns");
    const auto& psns = peer.at("psns");
    if (qpns.size() != o_.qps || psns.size() != o_.qps) {
      die("peer has " + std::to_string(qpns.size()) + " QPs, we have " + std::to_string(o_.qps));
    }
    peer_addr_ = peer.at("addr").get<uint64_t>();
    peer_rkey_ = peer.at("rkey").get<uint32_t>();
    if (o_.fault == "bad-rkey") peer_rkey_ ^= 0x00a50000;  // a key the peer never handed out
    peer_region_ = peer.at("region").get<uint64_t>();
    std::string err;
    for (uint32_t i = 0; i < o_.qps; ++i) {
      Conn& c = conns_[k * o_.qps + i];
      c.peer_qpn = qpns[i].get<uint32_t>();
      engine::QpAttr a;
      a.qp_access_flags = engine::kAccessRemoteWrite | engine::kAccessRemoteRead;
      a.path_mtu = o_.mtu;
      a.dest_qp_num = c.peer_qpn;
      a.rq_psn = psns[i].get<uint32_t>() & wire::kPsnMask;
      // bad-psn: start from another PSN than the one told to the peer.
      a.sq_psn = o_.fault == "bad-psn" ? (c.psn + 0x1000) & wire::kPsnMask : c.psn;
      a.ah_attr.dgid = wire::Gid::from_ipv4(ip);
      std::memcpy(a.ah_attr.dmac, mac, 6);
      a.ah_attr.traffic_class = static_cast<uint8_t>(o_.dscp << 2);
      a.recovery = o_.recovery == "sr" ? engine::Recovery::kSelectiveRepeat : engine::Recovery::kGoBackN;
      a.timeout = o_.timeout;
      if (engine::connect_rc(e, c.qpn, a, &err) != 0) die(err);
      if (e.set_cc(c.qpn, o_.cc, o_.cc_params, &err) != 0) die(err);
    }
  }

  void post_recv(Conn& c, uint32_t i) {
    engine::Sge sge{mr_.addr + i * region(), o_.size, mr_.lkey};
    engine::RecvWr wr;
    wr.wr_id = i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (host_->engine().post_recv(c.qpn, &wr, nullptr) != 0) die("post_recv failed");
  }

  bool post_send(Conn& c, uint32_t i, WrOpcode op) {
    engine::Sge sge{mr_.addr + i * region(), o_.size, mr_.lkey};
    engine::SendWr wr;
    wr.wr_id = i;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.rdma.remote_addr = peer_addr_ + i * peer_region_;
    wr.rdma.rkey = peer_rkey_;
    return host_->engine().post_send(c.qpn, &wr, nullptr) == 0;
  }

  WrOpcode opcode() const {
    if (o_.test == "send") return WrOpcode::kSend;
    if (o_.test == "read") return WrOpcode::kRdmaRead;
    return o_.mode == "lat" ? WrOpcode::kRdmaWriteWithImm : WrOpcode::kRdmaWrite;
  }

  // Polls the CQ; calls fn(wc) for every completion; any error ends the run.
  template <class Fn>
  void drain(Fn&& fn) {
    engine::WorkCompletion wc[64];
    int n;
    while ((n = host_->engine().poll_cq(cq_, 64, wc)) > 0) {
      for (int k = 0; k < n; ++k) {
        if (wc[k].status != WcStatus::kSuccess) {
          fail("QP " + std::to_string(wc[k].qp_num) + ": work request failed: " +
               std::string(engine::to_string(wc[k].status)));
        }
        fn(wc[k]);
      }
    }
  }

  // A failed work request ends the run; with --linger the engine (and its
  // telemetry, for tita-doctor) stays up and answering for that long first.
  [[noreturn]] void fail(const std::string& msg) {
    std::fprintf(stderr, "tita-perf: %s\n", msg.c_str());
    const uint64_t until = clock_.now_ns() + static_cast<uint64_t>(o_.linger_s * 1e9);
    while (!g_stop && clock_.now_ns() < until) {
      const uint64_t now = clock_.now_ns();
      idle(now, host_->poll_once(now));
    }
    std::exit(1);
  }

  Conn& conn_of(uint32_t qpn) { return conns_[qpn - conns_[0].qpn]; }

  // ---- server: answers its clients' test until each says done.
  void serve() {
    std::string err;
    perf::OobListener listener;
    if (listener.listen(o_.tcp_port, &err) != 0) die(err);
    std::vector<std::unique_ptr<perf::Oob>> oobs;
    for (uint32_t k = 0; k < o_.clients; ++k) {
      oobs.push_back(std::make_unique<perf::Oob>());
      perf::Oob& oob = *oobs.back();
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
        o_.rate_gbps = hello.value("rate_gbps", o_.rate_gbps);
        o_.pace = hello.value("pace", o_.pace);
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
    uint64_t bad = 0;
    std::vector<json> done(oobs.size());
    size_t finished = 0;
    uint64_t spins = 0;
    while (!g_stop && finished < oobs.size()) {
      const uint64_t now = clock_.now_ns();
      const uint32_t got = host_->poll_once(now);
      drain([&](const engine::WorkCompletion& wc) {
        if (wc.opcode != engine::WcOpcode::kRecv && wc.opcode != engine::WcOpcode::kRecvRdmaWithImm) return;
        Conn& c = conn_of(wc.qp_num);
        const auto i = static_cast<uint32_t>(&c - conns_.data());
        c.completed++;
        c.bytes += wc.byte_len;
        if (o_.check && wc.opcode == engine::WcOpcode::kRecv && !intact(i)) ++bad;
        post_recv(c, i);
        if (echo) post_send(c, i, o_.test == "send" ? WrOpcode::kSend : WrOpcode::kRdmaWriteWithImm);
      });
      if (++spins % 1024 == 0) {
        for (size_t k = 0; k < oobs.size(); ++k) {
          if (!done[k].is_null()) continue;
          json msg;
          const int rc = oobs[k]->poll(&msg, &err);
          if (rc < 0) die(err);
          if (rc > 0) {
            done[k] = msg;
            ++finished;
          }
        }
      }
      idle(now, got);
    }
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

  // Waits up to 10 s for every client's bye (or its connection closing).
  void wait_for_byes(std::vector<std::unique_ptr<perf::Oob>>& oobs) {
    std::vector<bool> gone(oobs.size(), false);
    size_t left = oobs.size();
    std::string err;
    for (int ms = 0; left > 0 && ms < 10'000 && !g_stop; ++ms) {
      for (size_t k = 0; k < oobs.size(); ++k) {
        json msg;
        if (gone[k] || oobs[k]->poll(&msg, &err) == 0) continue;
        gone[k] = true;  // bye, or closed
        --left;
      }
      if (left > 0) usleep(1000);
    }
  }

  // Between polls, with nothing received: sleep until the engine's next deadline
  // (at most 200 us), so several processes can share one core. Off: spin.
  void idle(uint64_t now, uint32_t received) {
    if (!o_.idle_sleep || received > 0) return;
    const uint64_t wake = host_->engine().next_wakeup_ns();
    if (wake <= now + 2'000) return;
    const uint64_t ns = std::min<uint64_t>(wake - now, 200'000);
    timespec ts{0, static_cast<long>(ns)};
    nanosleep(&ts, nullptr);
  }

  // ---- client: runs the test and reports.
  void drive() {
    std::string err;
    setup_resources();
    if (oob_.connect_to(o_.client, o_.tcp_port, 60, &err) != 0) die(err);
    const json hello = {{"test", o_.test},         {"mode", o_.mode}, {"size", o_.size},
                        {"qps", o_.qps},           {"mtu", o_.mtu},   {"recovery", o_.recovery},
                        {"tx_depth", o_.tx_depth}, {"rate_gbps", o_.rate_gbps}, {"pace", o_.pace},
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
    if (oob_.send({{"done", true}, {"client", mine}}, &err) != 0) die(err);
    json server;
    if (oob_.recv(&server, &err) != 0) die(err);
    report(mine, server.value("server", json::object()));
    // This end closes its port first, then lets the server close its own. The
    // engine leaves telemetry first: a scrape after it is gone would read freed memory.
    dpdk::telemetry_withdraw(telemetry_id_);
    host_.reset();
    port_.close();
    oob_.send({{"bye", true}}, &err);
  }

  void bandwidth() {
    const WrOpcode op = opcode();
    std::ofstream series;
    if (!o_.series.empty()) {
      series.open(o_.series);
      if (!series) die("cannot write " + o_.series);
      series << "t_ns,qpn,goodput_bps,rate_bps,cwnd_bytes,inflight_bytes,retransmitted\n";
    }
    const uint64_t start = clock_.now_ns();
    const uint64_t end = start + static_cast<uint64_t>(o_.duration_s * 1e9);
    const uint64_t interval = static_cast<uint64_t>(o_.series_interval_us * 1e3);
    uint64_t next_sample = start + interval;
    uint64_t total_posted = 0;
    const uint64_t limit = o_.iters ? o_.iters * o_.qps : UINT64_MAX;
    bool posting = true;
    for (;;) {
      const uint64_t now = clock_.now_ns();
      if (g_stop || (o_.iters == 0 && now >= end)) posting = false;
      if (posting) {
        for (Conn& c : conns_) {
          while (c.outstanding < o_.tx_depth && total_posted < limit) {
            if (!post_send(c, static_cast<uint32_t>(&c - conns_.data()), op)) break;
            ++c.outstanding;
            ++c.posted;
            ++total_posted;
          }
        }
        if (total_posted >= limit) posting = false;
      }
      const uint32_t got = host_->poll_once(now);
      drain([&](const engine::WorkCompletion& wc) {
        Conn& c = conn_of(wc.qp_num);
        --c.outstanding;
        ++c.completed;
        c.bytes += o_.size;
        ++messages_;
      });
      if (series.is_open() && now >= next_sample) {
        for (Conn& c : conns_) {
          engine::QpInfo info;
          host_->engine().qp_info(c.qpn, &info);
          const double goodput = static_cast<double>(c.bytes - c.last_bytes) * 8e9 / static_cast<double>(interval);
          series << mono_ns() << "," << c.qpn << "," << static_cast<uint64_t>(goodput) << "," << info.rate_bps << ","
                 << (info.cwnd_bytes == UINT64_MAX ? 0 : info.cwnd_bytes) << "," << info.inflight_bytes << ","
                 << host_->engine().qp_counters(c.qpn)->retransmitted_packets << "\n";
          c.last_bytes = c.bytes;
        }
        next_sample += interval;
      }
      bool finished = !posting;
      for (const Conn& c : conns_) finished = finished && c.outstanding == 0;
      if (finished) break;
      idle(now, got);
      if (g_stop && now > end + 1'000'000'000) break;  // interrupted: stop waiting for stragglers
    }
    elapsed_s_ = static_cast<double>(clock_.now_ns() - start) / 1e9;
  }

  void latency() {
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
    for (uint64_t i = 0; i < n && !g_stop; ++i) {
      const uint64_t t0 = clock_.now_ns();
      if (!post_send(c, 0, op)) die("post_send failed");
      bool got = false;
      while (!got && !g_stop) {
        host_->poll_once(clock_.now_ns());
        drain([&](const engine::WorkCompletion& wc) {
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

  json qp_stats() const {
    uint64_t retx = 0, cnps_rx = 0, cnps_tx = 0, timeouts = 0, tx_packets = 0, rx_packets = 0, naks = 0, rtt = 0;
    uint64_t rnr = 0, int_records = 0, ecn_ce = 0, path_changes = 0, path_follows = 0;
    for (const Conn& c : conns_) {
      const engine::QpCounters& q = *host_->engine().qp_counters(c.qpn);
      retx += q.retransmitted_packets;
      cnps_rx += q.cnps_received;
      cnps_tx += q.cnps_sent;
      timeouts += q.timeouts;
      tx_packets += q.tx_data_packets;
      rx_packets += q.rx_packets;
      naks += q.nak_seq_received + q.nak_seq_sent;
      rnr += q.rnr_nak_received + q.rnr_nak_sent;
      int_records += q.int_records_received;
      ecn_ce += q.ecn_ce_received;
      rtt = std::max(rtt, q.last_rtt_ns);
      path_changes += q.path_changes;
      path_follows += q.path_follows;
    }
    const auto& ec = host_->engine().counters();
    return {{"retransmitted_packets", retx}, {"cnps_received", cnps_rx}, {"cnps_sent", cnps_tx},
            {"timeouts", timeouts},          {"data_packets", tx_packets}, {"rx_packets", rx_packets},
            {"seq_naks", naks},              {"rnr_naks", rnr},  {"rx_dropped", ec.rx_dropped},
            {"int_records", int_records},    {"ecn_ce_received", ecn_ce}, {"last_rtt_ns", rtt},
            {"tx_no_mbuf", host_->counters().tx_no_mbuf}, {"tx_oversize", host_->counters().tx_oversize}, {"zero_copy_frames", host_->counters().tx_zero_copy},
            {"path_changes", path_changes}, {"path_follows", path_follows}};
  }

  void report(const json& client, const json& server) {
    const double secs = client.value("seconds", 0.0);
    const double msgs = client.value("messages", 0.0);
    const double gbps = secs > 0 ? msgs * o_.size * 8 / secs / 1e9 : 0;
    const double mmsg = secs > 0 ? msgs / secs / 1e6 : 0;
    const double mpps = secs > 0 ? client.value("data_packets", 0.0) / secs / 1e6 : 0;
    const uint64_t failures = client.value("check_failures", 0ull) + server.value("check_failures", 0ull);
    json out = {{"role", o_.server ? "server" : "client"},
                {"test", o_.test},
                {"mode", o_.mode},
                {"size", o_.size},
                {"qps", o_.qps},
                {"cc", o_.cc},
                {"recovery", o_.recovery},
                {"mtu", o_.mtu},
                {"seconds", secs},
                {"messages", msgs},
                {"gbps", gbps},
                {"msg_rate_mpps", mmsg},
                {"pkt_rate_mpps", mpps},
                {"client", client},
                {"server", server},
                {"check", o_.check ? (failures == 0 ? "ok" : "FAILED") : "off"}};
    if (o_.mode == "lat") out["latency_us"] = client.value("latency_us", json::object());
    if (o_.quiet) {
      // nothing to print
    } else if (o_.json_out) {
      std::printf("%s\n", out.dump().c_str());
    } else if (o_.mode == "bw") {
      std::printf("%-6s %9s %4s %10s %9s %9s %9s %8s %8s %6s\n", "test", "bytes", "qps", "messages", "Gb/s",
                  "Mmsg/s", "Mpps", "retx", "CNPs", "check");
      std::printf("%-6s %9u %4u %10.0f %9.3f %9.4f %9.4f %8llu %8llu %6s\n", o_.test.c_str(), o_.size, o_.qps, msgs,
                  gbps, mmsg, mpps,
                  static_cast<unsigned long long>(client.value("retransmitted_packets", 0ull)),
                  static_cast<unsigned long long>(client.value("cnps_received", 0ull)),
                  out["check"].get<std::string>().c_str());
    } else {
      const json& l = out["latency_us"];
      std::printf("%-6s %9s %9s %9s %9s %9s %9s\n", "test", "bytes", "samples", "min_us", "p50_us", "p99_us",
                  "p99.9_us");
      std::printf("%-6s %9u %9llu %9.2f %9.2f %9.2f %9.2f\n", o_.test.c_str(), o_.size,
                  static_cast<unsigned long long>(l.value("samples", 0ull)), l.value("min", 0.0),
                  l.value("p50", 0.0), l.value("p99", 0.0), l.value("p999", 0.0));
    }
    std::fflush(stdout);
    if (failures > 0) {
      std::fprintf(stderr, "tita-perf: data check FAILED in %llu places\n", static_cast<unsigned long long>(failures));
      std::exit(3);
    }
  }

  Options o_;
  dpdk::Port port_;
  std::unique_ptr<dpdk::EngineHost> host_;
  dpdk::TscClock clock_;
  perf::Oob oob_;
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

}  // namespace

// One test. The peer's out-of-band messages come over the network: one of the
// wrong shape (a field missing, of another type) ends the test with a message.
static int run(const Options& o) {
  try {
    return Perf(o).run();
  } catch (const json::exception& e) {
    die(std::string("out-of-band: a message from the peer is not tita-perf's: ") + e.what());
  }
}

int main(int argc, char** argv) {
  std::string err;
  const int used = dpdk::eal_init(argc, argv, &err);
  if (used < 0) {
    std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
    return 2;
  }
  argc -= used;
  argv += used;

  Options o;
  CLI::App app{"tita-perf: RDMA bandwidth and latency over tita (tita-perf <EAL args> -- [options])"};
  app.add_option("--port", o.port, "DPDK port, by name or number")->capture_default_str();
  app.add_option("--ip", o.ip, "this host's IPv4 address (its RoCE GID)")->capture_default_str();
  app.add_option("--mac", o.mac, "source MAC (default: the port's); the port is promiscuous");
  auto* srv = app.add_flag("--server", o.server, "serve a client's test");
  auto* lb = app.add_flag("--loopback", o.loopback,
                          "server and client in this process over crossed net_ring ports (needs -l with two lcores)");
  auto* cli = app.add_option("--client", o.client, "run the test against the server at this TCP host");
  srv->excludes(cli);
  app.add_option("--tcp-port", o.tcp_port, "out-of-band TCP port")->capture_default_str();
  app.add_option("--test", o.test, "write, send or read")->check(CLI::IsMember(kTests));
  app.add_option("--mode", o.mode, "bw (bandwidth) or lat (latency)")->check(CLI::IsMember(kModes));
  app.add_option("--size", o.size, "message size in bytes")->check(CLI::Range(1u, kMaxSize));
  app.add_option("--qps", o.qps, "queue pairs")->check(CLI::Range(1u, kMaxQps));
  app.add_option("--tx-depth", o.tx_depth, "outstanding WRs per QP")->check(CLI::Range(1u, kMaxTxDepth));
  app.add_option("--iters", o.iters, "messages per QP (0: run for --duration)");
  app.add_option("--duration", o.duration_s, "seconds")->check(CLI::PositiveNumber);
  app.add_option("--mtu", o.mtu, "RoCE path MTU (a server without it takes its client's)")->check(CLI::IsMember(kMtus));
  app.add_option("--cc", o.cc,
                 "congestion control: none dcqcn timely hpcc swift powertcp nscc tita, or a --cc-plugin's; "
                 "help lists them with their parameters");
  app.add_option("--cc-plugin", o.cc_plugins, "shared object with congestion-control plug-ins (repeatable)");
  app.add_option("--cc-param", o.cc_params, "name=value for the congestion control (repeatable)");
  app.add_option("--recovery", o.recovery, "gbn (go-back-N) or sr (selective repeat)")
      ->check(CLI::IsMember(kRecoveries));
  app.add_option("--rate", o.rate_gbps, "NIC line rate in Gb/s (what congestion control starts from)")
      ->check(CLI::PositiveNumber & CLI::Range(0.0, kMaxRateGbps));
  app.add_option("--clients", o.clients, "server: serve this many clients at once (bandwidth tests)")
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--idle-sleep", o.idle_sleep, "sleep while there is nothing to do (processes sharing a core)");
  app.add_option("--base-rtt-us", o.base_rtt_us, "base RTT congestion control assumes, in microseconds")
      ->check(CLI::PositiveNumber);
  app.add_option("--pacing-slack-us", o.pacing_slack_us,
                 "sending time a late poll may catch up, in microseconds (for processes that sleep)");
  app.add_flag("--pace", o.pace, "pace at --rate even when uncongested (virtual ports take frames at any speed)");
  app.add_flag("--check", o.check, "verify every byte received");
  app.add_flag("--zero-copy", o.zero_copy, "send payload from registered memory without copying");
  app.add_flag("--json", o.json_out, "print the result as one JSON object");
  app.add_option("--series", o.series, "CSV of per-QP goodput, rate and window over time (client)");
  app.add_option("--series-interval-us", o.series_interval_us, "sampling interval for --series");
  app.add_option("--timeout", o.timeout, "local ACK timeout code (4.096 us * 2^code)")->check(CLI::Range(0, 31));
  app.add_option("--dscp", o.dscp, "DSCP of data packets")->check(CLI::Range(0, 63));
  app.add_option("--ack-every", o.ack_req_every, "ask for an ACK every N packets")->check(CLI::Range(1u, 1024u));
  app.add_option("--dodge", o.dodge, "Hash Dodging: none, udp_sport or dscp (the field a QP changes to leave a failed path)")
      ->check([](const std::string& v) {
        wire::DodgeField f;
        return wire::parse_dodge_field(v, &f) ? std::string() : "not " + std::string(wire::kDodgeFieldNames);
      });
  app.add_flag("--arp", o.arp, "resolve the peer's MAC by ARP (as a kernel resolves a RoCE address), not from the "
               "out-of-band exchange");
  app.add_option("--peer-gid", o.peer_gid, "send to this IPv4 GID instead of the one the peer reports");
  app.add_option("--linger", o.linger_s, "after a failed work request, keep the engine and its telemetry up this "
                 "many seconds (for tita-doctor)")->check(CLI::Range(0.0, 3600.0));
  app.add_option("--inject-fault", o.fault, "an application fault, for tita-doctor's tests: no-recv (server: post "
                 "no receives), bad-rkey (client: use a key the server never gave), bad-psn (start from another PSN "
                 "than the one told to the peer)")
      ->check(CLI::IsMember({"no-recv", "bad-rkey", "bad-psn"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  o.mtu_given = app.count("--mtu") > 0;
  (void)lb;
  for (const std::string& path : o.cc_plugins) {
    if (tita::cc::load_plugin(path, &err) != 0) {
      std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
      return 2;
    }
  }
  if (o.cc == "help") {
    std::fputs(tita::cc::algorithms_help().c_str(), stdout);
    return 0;
  }
  if (!o.server && o.client.empty() && !o.loopback) {
    std::fprintf(stderr, "tita-perf: give --server, --client HOST or --loopback\n");
    return 2;
  }
  {
    // Check the congestion-control name and parameters before touching the network.
    tita::cc::Params p;
    if (tita::cc::Params::create(o.cc, {}, &p, &err) != 0) {
      std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
      return 2;
    }
    for (const std::string& kv : o.cc_params) {
      if (p.set(kv, &err) != 0) {
        std::fprintf(stderr, "tita-perf: %s\n", err.c_str());
        return 2;
      }
    }
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // A vhost-user peer that has already exited must not kill us while the port closes.
  std::signal(SIGPIPE, SIG_IGN);
  if (!o.loopback) return run(o);

  // Loopback: two net_ring ports whose rings are crossed, the server on a worker
  // lcore and the client on this one, talking over TCP on localhost as usual.
  const unsigned worker = rte_get_next_lcore(rte_lcore_id(), 1, 0);
  if (worker >= RTE_MAX_LCORE) {
    std::fprintf(stderr, "tita-perf: --loopback needs two lcores (e.g. -l 0,1)\n");
    return 2;
  }
  rte_ring* ab = rte_ring_create("tita_lb_ab", 4096, static_cast<int>(rte_socket_id()), RING_F_SP_ENQ | RING_F_SC_DEQ);
  rte_ring* ba = rte_ring_create("tita_lb_ba", 4096, static_cast<int>(rte_socket_id()), RING_F_SP_ENQ | RING_F_SC_DEQ);
  const int pa = ab && ba ? rte_eth_from_rings("tita_lb_a", &ba, 1, &ab, 1, rte_socket_id()) : -1;
  const int pb = ab && ba ? rte_eth_from_rings("tita_lb_b", &ab, 1, &ba, 1, rte_socket_id()) : -1;
  if (pa < 0 || pb < 0) {
    std::fprintf(stderr, "tita-perf: cannot create the loopback ring ports\n");
    return 1;
  }
  static Options server;
  server = o;
  server.server = true;
  server.port = std::to_string(pb);
  server.ip = "10.0.0.2";
  server.quiet = true;  // the client prints the result
  o.port = std::to_string(pa);
  o.client = "127.0.0.1";
  rte_eal_remote_launch(
      [](void*) -> int { return run(server); },
      nullptr, worker);
  const int rc = run(o);
  rte_eal_wait_lcore(worker);
  return rc;
}
