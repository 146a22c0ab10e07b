#include "tita/dpdk/port.h"

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <rte_interrupts.h>
#include <rte_kvargs.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

namespace tita::dpdk {

int eal_init(int argc, char** argv, std::string* err) {
  const int n = rte_eal_init(argc, argv);
  if (n < 0) {
    *err = std::string("EAL: ") + rte_strerror(rte_errno);
    return -1;
  }
  return n;
}

namespace {

std::string read_all(FILE* f) {
  std::string text;
  std::rewind(f);
  char buf[4096];
  for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, got);
  return text;
}

}  // namespace

int eal_init_for_tool(int argc, char** argv, std::string* err) {
  std::fflush(stdout);
  std::fflush(stderr);
  FILE* held_out = std::tmpfile();
  FILE* held_err = std::tmpfile();
  const int out_fd = ::dup(STDOUT_FILENO);
  const int err_fd = ::dup(STDERR_FILENO);
  if (held_out == nullptr || held_err == nullptr || out_fd < 0 || err_fd < 0) {
    for (int fd : {out_fd, err_fd}) {
      if (fd >= 0) ::close(fd);
    }
    for (FILE* f : {held_out, held_err}) {
      if (f != nullptr) std::fclose(f);
    }
    return eal_init(argc, argv, err);
  }
  ::dup2(::fileno(held_out), STDOUT_FILENO);
  ::dup2(::fileno(held_err), STDERR_FILENO);
  const int n = rte_eal_init(argc, argv);
  const int e = rte_errno;
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  ::close(out_fd);
  ::close(err_fd);
  const std::string out = read_all(held_out);
  const std::string text = read_all(held_err);
  std::fclose(held_out);
  std::fclose(held_err);
  if (n >= 0) {
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fwrite(text.data(), 1, text.size(), stderr);
    return n;
  }
  // EAL's usage (on stdout) is dropped. Of its stderr, its first two distinct
  // lines that say what is wrong, not what it detected on the way.
  static constexpr const char* kNoise[] = {"Detected ", "Static memory layout", "Multi-process socket", "IOVA",
                                           "TELEMETRY", "Invalid 'command line' arguments"};
  std::string why;
  int lines = 0;
  for (size_t at = 0; at < text.size() && lines < 2;) {
    const size_t nl = text.find('\n', at);
    std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    bool noise = line.empty();
    for (const char* k : kNoise) noise = noise || line.find(k) != std::string::npos;
    if (noise) continue;
    if (argc > 0 && line.rfind(std::string(argv[0]) + ": ", 0) == 0) line.erase(0, std::strlen(argv[0]) + 2);
    if (line.rfind("EAL: ", 0) == 0) line.erase(0, 5);
    if (why.find(line) != std::string::npos) continue;
    why += (why.empty() ? "" : "; ") + line;
    ++lines;
  }
  *err = "EAL arguments (before --): " + (why.empty() ? std::string(rte_strerror(e)) : why);
  return -1;
}

Args split_args(int argc, char** argv) {
  int split = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      split = i;
      break;
    }
  }
  Args a;
  a.eal.assign(argv, argv + (split < argc ? split : 1));
  a.tool.push_back(argv[0]);
  for (int i = split < argc ? split + 1 : 1; i < argc; ++i) a.tool.push_back(argv[i]);
  return a;
}

namespace {

// EAL's interrupt thread, parked in a callback of ours for the rest of the
// process (park_interrupt_thread, port.h). Its last act is reading our eventfd.
struct InterruptPark {
  int fd = -1;
  std::atomic<bool> parked{false};
};

void park_here(void* arg) {
  auto* p = static_cast<InterruptPark*>(arg);
  uint64_t v;
  if (read(p->fd, &v, sizeof v) < 0) {
    // Nothing to do: the count is irrelevant, only that this thread runs here.
  }
  p->parked.store(true, std::memory_order_release);
  for (;;) pause();  // the process's exit ends it
}

}  // namespace

void park_interrupt_thread() {
  static InterruptPark park;  // the parked thread holds it to the end
  if (park.fd >= 0) return;
  park.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (park.fd < 0) return;
  rte_intr_handle* h = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);  // malloc'd, not EAL memory
  if (h == nullptr || rte_intr_fd_set(h, park.fd) != 0 || rte_intr_type_set(h, RTE_INTR_HANDLE_EXT) != 0 ||
      rte_intr_callback_register(h, park_here, &park) != 0) {
    return;
  }
  const uint64_t one = 1;
  if (write(park.fd, &one, sizeof one) != sizeof one) return;
  // A second at most: a thread that never comes is stuck elsewhere, and teardown goes on.
  for (int i = 0; i < 10'000 && !park.parked.load(std::memory_order_acquire); ++i) usleep(100);
}

void eal_cleanup() {
  park_interrupt_thread();
  rte_eal_cleanup();
}

void quiet_logs() { rte_log_set_global_level(RTE_LOG_CRIT); }

int register_thread() { return rte_thread_register() == 0 ? 0 : -rte_errno; }

void unregister_thread() { rte_thread_unregister(); }

int run_on_lcore_cpus(unsigned lcore) {
  rte_cpuset_t set = rte_lcore_cpuset(lcore);
  if (rte_thread_set_affinity(&set) != 0) return -EINVAL;
  return register_thread();
}

TscClock::TscClock() : hz_(rte_get_tsc_hz()), base_(rte_get_tsc_cycles()) {}

uint64_t TscClock::now_ns() const {
  const uint64_t c = rte_get_tsc_cycles() - base_;
  // Split to keep cycles * 1e9 from overflowing.
  return c / hz_ * 1'000'000'000ull + (c % hz_) * 1'000'000'000ull / hz_;
}

int hotplug(std::string_view devargs, std::string* err) {
  const std::string s(devargs);
  const int rc = rte_dev_probe(s.c_str());
  if (rc < 0) {
    *err = "cannot attach " + s + ": " + rte_strerror(-rc);
    return rc;
  }
  return 0;
}

Port::~Port() { close(); }

namespace {

// This process's sockets of one address family (AF_PACKET, AF_XDP): the
// kernel side of a port whose driver keeps its socket to itself.
std::vector<int> sockets_of(int family) {
  std::vector<int> fds;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    const std::string name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    int domain = 0;
    socklen_t len = sizeof(domain);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == family) fds.push_back(fd);
  }
  return fds;
}

// The interface a vdev was given (its iface= devarg), or 0.
unsigned iface_index(const rte_eth_dev_info& info) {
  const rte_devargs* da = info.device != nullptr ? rte_dev_devargs(info.device) : nullptr;
  if (da == nullptr || da->args == nullptr) return 0;
  rte_kvargs* kv = rte_kvargs_parse(da->args, nullptr);
  if (kv == nullptr) return 0;
  const char* iface = rte_kvargs_get(kv, "iface");
  const unsigned index = iface != nullptr ? if_nametoindex(iface) : 0;
  rte_kvargs_free(kv);
  return index;
}

}  // namespace

int Port::open(std::string_view name, const PortConfig& cfg, std::string* err) {
  close();
  name_ = std::string(name);
  cfg_ = cfg;
  uint16_t id = UINT16_MAX;
  unsigned number = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), number);
  if (ec == std::errc() && end == name.data() + name.size()) {
    if (!rte_eth_dev_is_valid_port(static_cast<uint16_t>(number))) {
      *err = "no DPDK port " + name_;
      return -ENODEV;
    }
    id = static_cast<uint16_t>(number);
  } else if (rte_eth_dev_get_port_by_name(name_.c_str(), &id) != 0) {
    *err = "no DPDK port named " + name_ + " (give it with --vdev or -a on the EAL command line)";
    return -ENODEV;
  }
  id_ = id;

  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(id_, &info); rc != 0) {
    *err = name_ + ": " + rte_strerror(-rc);
    return rc;
  }
  const uint16_t rxq = std::min<uint16_t>(cfg.rx_queues, info.max_rx_queues);
  const uint16_t txq = std::min<uint16_t>(cfg.tx_queues, info.max_tx_queues);
  if (rxq != cfg.rx_queues || txq != cfg.tx_queues) {
    *err = name_ + ": asked for " + std::to_string(cfg.rx_queues) + "/" + std::to_string(cfg.tx_queues) +
           " rx/tx queues, the port has " + std::to_string(info.max_rx_queues) + "/" +
           std::to_string(info.max_tx_queues);
    return -EINVAL;
  }

  // AF_XDP (22.11) uses each mbuf as a UMEM chunk, which must fit in a 4 KiB page:
  // frames there are limited to what a 2 KiB data room holds (RoCE MTU 1024).
  uint16_t data_room = cfg.mbuf_data_bytes;
  if (std::string_view(info.driver_name) == "net_af_xdp") data_room = std::min<uint16_t>(data_room, 2048);
  data_room_ = data_room;
  const std::string pool_name = "tita_" + std::to_string(id_);
  pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), cfg.mbufs, 256, 0,
                                  static_cast<uint16_t>(data_room + RTE_PKTMBUF_HEADROOM),
                                  rte_eth_dev_socket_id(id_));
  if (pool_ == nullptr) {
    *err = name_ + ": mempool of " + std::to_string(cfg.mbufs) + " mbufs: " + rte_strerror(rte_errno);
    return -ENOMEM;
  }

  rte_eth_conf conf{};
  if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    multi_seg_ = true;
  }
  if (!multi_seg_) {
    ext_tx_refused_ = name_ + " sends no chained mbufs";
  } else if (std::string_view(info.driver_name) == "net_virtio_user") {
    ext_tx_refused_ = name_ + "'s vhost backend reads only DPDK's own memory, not the application's";
  }
  if (cfg.rss_udp && rxq > 1 && (info.flow_type_rss_offloads & RTE_ETH_RSS_UDP) != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = RTE_ETH_RSS_UDP & info.flow_type_rss_offloads;
  }
  if (int rc = rte_eth_dev_configure(id_, rxq, txq, &conf); rc != 0) {
    *err = name_ + ": configure: " + rte_strerror(-rc);
    return rc;
  }
  // Ask for a jumbo-capable MTU; ports that cannot keep their own.
  const uint16_t mtu = std::min<uint32_t>({cfg.mtu, info.max_mtu, info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN});
  uint16_t cur = RTE_ETHER_MTU;
  const int set = mtu > RTE_ETHER_MTU ? rte_eth_dev_set_mtu(id_, mtu) : 0;
  rte_eth_dev_get_mtu(id_, &cur);
  if (set == -ENOTSUP && info.max_rx_pktlen == UINT32_MAX) {
    // A port with no MTU to set and no frame limit (vhost, ring): what one mbuf holds.
    max_frame_ = data_room_;
  } else {
    max_frame_ = std::min<uint16_t>(static_cast<uint16_t>(cur + RTE_ETHER_HDR_LEN + RTE_VLAN_HLEN), data_room_);
  }
  uint16_t nb_rx = cfg.rx_descs, nb_tx = cfg.tx_descs;
  rte_eth_dev_adjust_nb_rx_tx_desc(id_, &nb_rx, &nb_tx);
  const int socket = rte_eth_dev_socket_id(id_);
  const std::string_view driver(info.driver_name);
  const std::vector<int> xdp_before = driver == "net_af_xdp" ? sockets_of(AF_XDP) : std::vector<int>{};
  for (uint16_t q = 0; q < rxq; ++q) {
    if (int rc = rte_eth_rx_queue_setup(id_, q, nb_rx, static_cast<unsigned>(socket), nullptr, pool_); rc != 0) {
      *err = name_ + ": rx queue " + std::to_string(q) + ": " + rte_strerror(-rc);
      return rc;
    }
  }
  rte_eth_txconf txconf = info.default_txconf;
  txconf.offloads = conf.txmode.offloads;
  for (uint16_t q = 0; q < txq; ++q) {
    if (int rc = rte_eth_tx_queue_setup(id_, q, nb_tx, static_cast<unsigned>(socket), &txconf); rc != 0) {
      *err = name_ + ": tx queue " + std::to_string(q) + ": " + rte_strerror(-rc);
      return rc;
    }
  }
  if (int rc = rte_eth_dev_start(id_); rc != 0) {
    *err = name_ + ": start: " + rte_strerror(-rc);
    return rc;
  }
  started_ = true;
  if (driver == "net_af_xdp") {
    // Its XDP sockets are made as its queues are set up: the ones new now.
    for (int fd : sockets_of(AF_XDP))
      if (std::find(xdp_before.begin(), xdp_before.end(), fd) == xdp_before.end()) xdp_fds_.push_back(fd);
  } else if (driver == "net_af_packet") {
    // Its packet sockets were made when the vdev was probed: the ones bound
    // to its interface.
    const unsigned index = iface_index(info);
    for (int fd : sockets_of(AF_PACKET)) {
      sockaddr_ll sll{};
      socklen_t len = sizeof(sll);
      if (index != 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&sll), &len) == 0 &&
          static_cast<unsigned>(sll.sll_ifindex) == index) {
        packet_fds_.push_back(fd);
      }
    }
  }
  if (cfg.promiscuous) rte_eth_promiscuous_enable(id_);
  rte_ether_addr addr;
  rte_eth_macaddr_get(id_, &addr);
  if (rte_is_zero_ether_addr(&addr)) {
    // Some vdevs (net_ring) come without an address; an endpoint needs one
    // (ARP answers with it, receivers filter on it): a random local one.
    rte_eth_random_addr(addr.addr_bytes);
    rte_eth_dev_default_mac_addr_set(id_, &addr);  // best effort: the port may keep none
  }
  std::memcpy(mac_, addr.addr_bytes, 6);
  return 0;
}

void Port::close() {
  if (started_) {
    rte_eth_dev_stop(id_);
    started_ = false;
  }
  if (pool_ != nullptr) {
    // The port may still hold mbufs of this pool until it is closed.
    rte_eth_dev_close(id_);
    rte_mempool_free(pool_);
    pool_ = nullptr;
  }
  packet_fds_.clear();
  xdp_fds_.clear();
  packet_drops_ = 0;
  id_ = UINT16_MAX;
}

uint16_t Port::rx(uint16_t queue, rte_mbuf** pkts, uint16_t n) { return rte_eth_rx_burst(id_, queue, pkts, n); }

uint16_t Port::tx(uint16_t queue, rte_mbuf** pkts, uint16_t n) { return rte_eth_tx_burst(id_, queue, pkts, n); }

void Port::tx_all(uint16_t queue, rte_mbuf** pkts, uint16_t n) {
  uint16_t sent = 0;
  for (int tries = 0; sent < n && tries < 64; ++tries) sent += rte_eth_tx_burst(id_, queue, pkts + sent, n - sent);
  if (sent < n) {
    rte_pktmbuf_free_bulk(pkts + sent, n - sent);
    tx_dropped_ += n - sent;
  }
}

bool Port::link_up() const {
  rte_eth_link link{};
  return rte_eth_link_get_nowait(id_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP;
}

uint32_t Port::link_speed_mbps() const {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(id_, &link) != 0) return 0;
  if (link.link_speed == RTE_ETH_SPEED_NUM_NONE || link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN) return 0;
  return link.link_speed;
}

int Port::steer_udp_sport(uint16_t udp_sport, uint16_t queue, std::string* err) {
  rte_flow_attr attr{};
  attr.ingress = 1;
  rte_flow_item_udp spec{};
  rte_flow_item_udp mask{};
  spec.hdr.src_port = rte_cpu_to_be_16(udp_sport);
  spec.hdr.dst_port = rte_cpu_to_be_16(4791);
  mask.hdr.src_port = 0xffff;
  mask.hdr.dst_port = 0xffff;
  const rte_flow_item pattern[] = {
      {RTE_FLOW_ITEM_TYPE_ETH, nullptr, nullptr, nullptr},
      {RTE_FLOW_ITEM_TYPE_IPV4, nullptr, nullptr, nullptr},
      {RTE_FLOW_ITEM_TYPE_UDP, &spec, nullptr, &mask},
      {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr},
  };
  rte_flow_action_queue to_queue{queue};
  const rte_flow_action actions[] = {
      {RTE_FLOW_ACTION_TYPE_QUEUE, &to_queue},
      {RTE_FLOW_ACTION_TYPE_END, nullptr},
  };
  rte_flow_error error{};
  if (rte_flow_create(id_, &attr, pattern, actions, &error) == nullptr) {
    *err = name_ + ": rte_flow: " + (error.message ? error.message : "not supported");
    return -ENOTSUP;
  }
  return 0;
}

PortStats Port::stats() const {
  rte_eth_stats s{};
  rte_eth_stats_get(id_, &s);
  PortStats out;
  out.rx_packets = s.ipackets;
  out.tx_packets = s.opackets;
  out.rx_bytes = s.ibytes;
  out.tx_bytes = s.obytes;
  out.rx_missed = s.imissed + s.rx_nombuf + kernel_ring_drops();
  out.rx_errors = s.ierrors;
  out.tx_errors = s.oerrors;
  out.tx_dropped = tx_dropped_;
  return out;
}

// Frames the kernel had no room for in an af_packet or af_xdp port's receive
// ring (its poll loop did not drain it in time): what a NIC counts as
// rx_missed. DPDK 22.11 reads neither (its imissed stays 0 there); an AF_XDP
// socket's rx_dropped, which its driver does read, counts other losses.
uint64_t Port::kernel_ring_drops() const {
  for (int fd : packet_fds_) {
    tpacket_stats st{};
    socklen_t len = sizeof(st);
    if (getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0) packet_drops_ += st.tp_drops;
  }
  uint64_t ring_full = 0;
  for (int fd : xdp_fds_) {
    xdp_statistics st{};
    socklen_t len = sizeof(st);
    if (getsockopt(fd, SOL_XDP, XDP_STATISTICS, &st, &len) == 0 && len >= offsetof(xdp_statistics, rx_ring_full) + 8)
      ring_full += st.rx_ring_full;
  }
  return packet_drops_.load() + ring_full;
}

}  // namespace tita::dpdk
