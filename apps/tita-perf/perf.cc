// tita-perf's port, engine, resources and connection (perf.h).
#include "perf.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <rte_lcore.h>

#include <thread>

#include "tita/wire/dodge.h"
#include "tita/wire/psn.h"
#include "tita/wire/text.h"

namespace tita::perf {

using engine::Engine;
using engine::WrOpcode;
using wire::mac_string;
using wire::parse_ipv4;
using wire::parse_mac;

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "tita-perf: %s\n", msg.c_str());
  std::exit(stop_requested() ? cli::stopped_exit_status() : cli::kExitFailure);
}

namespace {

void fill(uint8_t* p, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
}

}  // namespace

int Perf::run() {
  setup_port();
  if (o_.server) {
    serve();
  } else {
    drive();
  }
  return 0;
}

// The port: before anything else, with a queue pair per engine.
void Perf::setup_port() {
  std::string err;
  dpdk::PortConfig pc;
  pc.rx_queues = pc.tx_queues = o_.engines;
  if (port_.open(o_.port, pc, &err) != 0) die(err);
}

// The engines: once the test's parameters are known (the server learns them).
void Perf::setup_engine() {
  uint32_t ip;
  if (!parse_ipv4(o_.ip, &ip)) die("--ip " + o_.ip + " is not an IPv4 address");
  engine::EngineConfig cfg = o_.engine;  // the flags' settings, checked as they were read
  cfg.gid = wire::Gid::from_ipv4(ip);
  if (!o_.mac.empty() && !parse_mac(o_.mac, cfg.mac)) die("--mac " + o_.mac + " is not a MAC address");
  lanes_ = std::vector<Lane>(o_.engines);
  std::vector<rte_ring*> inboxes;
  if (o_.engines > 1) {
    // Names per process: the --loopback server and client share one.
    inboxes = dpdk::Steering::make_inboxes(o_.server ? "tita_perf_s" : "tita_perf_c", o_.engines);
    if (inboxes.empty()) die("cannot create the engines' inbox rings");
  }
  const std::string role = o_.server ? "tita-perf server" : "tita-perf client";
  for (uint16_t k = 0; k < o_.engines; ++k) {
    Lane& lane = lanes_[k];
    lane.lcore = k == 0 ? rte_lcore_id() : o_.lcores.at(k - 1);
    lane.steering.self = k;
    lane.steering.inbox = inboxes;
    lane.host = std::make_unique<dpdk::EngineHost>(
        port_, k, cfg,
        dpdk::HostOptions{.zero_copy = o_.zero_copy,
                          .port_mac = o_.mac.empty(),
                          .steering = o_.engines > 1 ? &lane.steering : nullptr,
                          // The data's priority (DSCP >> 3, as the switch classifies it), from one engine.
                          .pfc_storm_priority = o_.fault == "pfc-storm" && k == 0 ? o_.dscp >> 3 : -1});
    lane.telemetry_id =
        dpdk::telemetry_publish(lane.host.get(), o_.engines > 1 ? role + " engine " + std::to_string(k) : role);
  }
}

void Perf::withdraw() {
  for (Lane& lane : lanes_) {
    dpdk::telemetry_withdraw(lane.telemetry_id);
    lane.telemetry_id = -1;
  }
}

void Perf::run_lanes(const std::function<void(Lane&)>& fn) {
  // Threads of our own on the lanes' lcores: the --loopback server itself
  // runs on a worker lcore, which cannot launch onto others.
  std::vector<std::thread> threads;
  for (size_t k = 1; k < lanes_.size(); ++k) {
    threads.emplace_back([this, &fn, k] {
      if (dpdk::run_on_lcore_cpus(lanes_[k].lcore) != 0) {
        die("cannot run engine " + std::to_string(k) + " on lcore " + std::to_string(lanes_[k].lcore));
      }
      fn(lanes_[k]);
      dpdk::unregister_thread();
    });
  }
  fn(lanes_[0]);
  for (std::thread& t : threads) t.join();
}

// Buffers, MRs, CQs and QPs for --size and --qps (the server learns them from
// the client): one region, registered with every engine; QP i on engine i mod N.
void Perf::setup_resources() {
  std::string err;
  setup_engine();
  mem_len_ = region() * total_qps();
  mem_ = static_cast<uint8_t*>(std::aligned_alloc(4096, mem_len_));
  if (mem_ == nullptr) die("cannot allocate " + std::to_string(mem_len_) + " bytes");
  expected_.assign(mem_len_, 0);
  // Each client's QP i fills its region with pattern 1000 + i.
  for (uint32_t i = 0; i < total_qps(); ++i) fill(expected_.data() + i * region(), o_.size, 1000 + i % o_.qps);
  std::memcpy(mem_, expected_.data(), mem_len_);
  const uint32_t access = engine::kAccessLocalWrite | engine::kAccessRemoteWrite | engine::kAccessRemoteRead;
  const uint32_t per_lane = (total_qps() + o_.engines - 1) / o_.engines;
  for (Lane& lane : lanes_) {
    Engine& e = lane.engine();
    if (o_.zero_copy && !lane.host->zero_copy_on() && &lane == &lanes_.front()) {
      std::fprintf(stderr, "tita-perf: zero copy off, payload copied: %s\n", lane.host->port().external_tx_refused().c_str());
    }
    if (o_.zero_copy && lane.host->register_memory(mem_, mem_len_, &err) != 0) die(err);
    lane.pd = e.alloc_pd();
    if (e.reg_mr(lane.pd, mem_, mem_len_, access, &lane.mr) != 0) die("reg_mr failed");
    if (e.create_cq(std::max<uint32_t>(4096, 2 * per_lane * o_.tx_depth), &lane.cq) != 0) die("create_cq failed");
  }
  conns_.resize(total_qps());
  for (uint32_t i = 0; i < total_qps(); ++i) {
    Conn& c = conns_[i];
    c.lane = i % o_.engines;
    Lane& lane = lanes_[c.lane];
    const engine::QpInitAttr qa{.send_cq = lane.cq, .recv_cq = lane.cq, .max_send_wr = o_.tx_depth + 1,
                                .max_recv_wr = o_.tx_depth + 1, .max_sge = 1};
    if (lane.engine().create_qp(lane.pd, qa, &c.qpn) != 0) die("create_qp failed");
    c.psn = static_cast<uint32_t>(psn_rng_()) & wire::kPsnMask;
    lane.conns.push_back(i);
    conn_index_[c.qpn] = i;
  }
}

// What client k (0 for a client itself) needs: its slice of QPs and buffer
// regions, and for each QP the key of its engine's registration.
json Perf::local_info(uint32_t k) const {
  json qpns = json::array();
  json psns = json::array();
  json rkeys = json::array();
  for (uint32_t i = 0; i < o_.qps; ++i) {
    const Conn& c = conns_[k * o_.qps + i];
    qpns.push_back(c.qpn);
    psns.push_back(c.psn);
    rkeys.push_back(lanes_[c.lane].mr.rkey);
  }
  return {{"qpns", qpns},
          {"psns", psns},
          {"gid", o_.ip},
          {"mac", mac_string(lanes_[0].host->engine().config().mac)},
          {"addr", lanes_[0].mr.addr + k * o_.qps * region()},
          {"rkey", lanes_[0].mr.rkey},
          {"rkeys", rkeys},
          {"region", region()}};
}

// RESET -> INIT -> RTR -> RTS: our QPs of client k against the peer's QPs.
void Perf::connect(const json& peer, uint32_t k) {
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
  // Per QP where the peer runs several engines; else its one key.
  const json rkeys = peer.contains("rkeys") ? peer.at("rkeys") : json::array();
  if (!rkeys.empty() && rkeys.size() != o_.qps) die("peer sent " + std::to_string(rkeys.size()) + " keys for its QPs");
  peer_addr_ = peer.at("addr").get<uint64_t>();
  peer_region_ = peer.at("region").get<uint64_t>();
  std::string err;
  for (uint32_t i = 0; i < o_.qps; ++i) {
    Conn& c = conns_[k * o_.qps + i];
    c.peer_qpn = qpns[i].get<uint32_t>();
    c.peer_rkey = rkeys.empty() ? peer.at("rkey").get<uint32_t>() : rkeys[i].get<uint32_t>();
    if (o_.fault == "bad-rkey") c.peer_rkey ^= 0x00a50000;  // a key the peer never handed out
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
    a.peer_tita = true;  // the out-of-band peer is tita-perf
    a.timeout = o_.timeout;
    Engine& e = lane_of(c).engine();
    if (engine::connect_rc(e, c.qpn, a, &err) != 0) die(err);
    if (e.set_cc(c.qpn, o_.cc, o_.cc_params, &err) != 0) die(err);
    // Several engines: where the port has rte_flow, the peer's frames for
    // this QP go straight to its engine's queue (counted as flow_rules);
    // elsewhere (vdevs) they arrive by RSS or queue pairing, and the inbox
    // hands over what lands on another engine.
    if (o_.engines > 1) lane_of(c).host->steer_qp(c.qpn, c.peer_qpn, &err);
  }
}

void Perf::post_recv(Conn& c, uint32_t i) {
  Lane& lane = lane_of(c);
  engine::Sge sge{lane.mr.addr + i * region(), o_.size, lane.mr.lkey};
  engine::RecvWr wr;
  wr.wr_id = i;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (lane.engine().post_recv(c.qpn, &wr, nullptr) != 0) die("post_recv failed");
}

bool Perf::post_send(Conn& c, uint32_t i, WrOpcode op) {
  Lane& lane = lane_of(c);
  engine::Sge sge{lane.mr.addr + i * region(), o_.size, lane.mr.lkey};
  engine::SendWr wr;
  wr.wr_id = i;
  wr.opcode = op;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.rdma.remote_addr = peer_addr_ + i * peer_region_;
  wr.rdma.rkey = c.peer_rkey;
  return lane.engine().post_send(c.qpn, &wr, nullptr) == 0;
}

WrOpcode Perf::opcode() const {
  if (o_.test == "send") return WrOpcode::kSend;
  if (o_.test == "read") return WrOpcode::kRdmaRead;
  return o_.mode == "lat" ? WrOpcode::kRdmaWriteWithImm : WrOpcode::kRdmaWrite;
}

// A failed work request ends the run; with --linger the engine (and its
// telemetry, for tita-doctor) stays up and answering for that long first.
void Perf::fail(Lane& lane, const std::string& msg) {
  std::fprintf(stderr, "tita-perf: %s\n", msg.c_str());
  const uint64_t until = clock_.now_ns() + static_cast<uint64_t>(o_.linger_s * 1e9);
  while (!stop_requested() && clock_.now_ns() < until) {
    const uint64_t now = clock_.now_ns();
    idle(lane, now, lane.host->poll_once(now));
  }
  std::exit(1);
}

// Between polls, with nothing received: sleep until the engine's next deadline
// (at most 200 us), so several processes can share one core. Off: spin.
void Perf::idle(Lane& lane, uint64_t now, uint32_t received) {
  if (!o_.idle_sleep || received > 0) return;
  const uint64_t wake = lane.engine().next_wakeup_ns();
  if (wake <= now + 2'000) return;
  const uint64_t ns = std::min<uint64_t>(wake - now, 200'000);
  timespec ts{0, static_cast<long>(ns)};
  nanosleep(&ts, nullptr);
}

}  // namespace tita::perf
