// DPDK ports for tita: EAL start-up, a TSC clock in nanoseconds, and an Ethernet
// port opened with its own mempool and queues. Nothing here assumes a vdev: the
// same code opens net_ring, net_memif, net_vhost / net_virtio_user, net_af_xdp,
// net_af_packet, net_tap and PCI NICs (mlx5 in the lab).
//
// This part and apps/ are the only places that include DPDK headers.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

struct rte_mbuf;
struct rte_mempool;

namespace tita::dpdk {

// rte_eal_init with the usual contract: EAL arguments first, then "--", then the
// tool's own. Returns how many arguments EAL consumed (the tool parses
// argv + n), or -1 with rte_strerror's message in *err.
int eal_init(int argc, char** argv, std::string* err);

// The same for a program's own command line (tita-perf, tita-switch; never from
// a library inside another program): a bad EAL argument does not print EAL's
// whole usage. What EAL writes on stdout while it starts is dropped and what it
// writes on stderr is held back; on success the latter follows as it was, on
// failure *err is its line that names the problem ("unrecognized option
// '--bogus'", "lcore 99 unavailable"), for one line and exit status 2.
int eal_init_for_tool(int argc, char** argv, std::string* err);

// A command line `prog <EAL args> -- <tool args>` split so the tool can read
// (and check, and answer --help) its own arguments before EAL starts. Each list
// starts with argv[0]; without "--", every argument is the tool's.
struct Args {
  std::vector<char*> eal;
  std::vector<char*> tool;
};
Args split_args(int argc, char** argv);

// At the end of a process, before its ports close: parks EAL's interrupt
// thread in a callback of ours for good, so that no interrupt callback runs
// any more (none is served afterwards: link changes, memif connections). DPDK
// 22.11's memif server frees its listener socket and the socket's interrupt
// handle at close without unregistering them, and rte_eal_cleanup unmaps
// EAL's memory with that thread still running: a peer's disconnect or
// connection attempt at that moment made the thread read freed or unmapped
// memory, a SIGSEGV at exit (issue 30). Parked first, the thread sees none of
// it, and closing a port unregisters its callbacks at once (none is running).
void park_interrupt_thread();
// rte_eal_cleanup: releases what EAL holds (hugepage files, vdev sockets). EAL
// cannot be started again in the same process afterwards. Parks the interrupt
// thread first if the caller has not.
void eal_cleanup();

// Only critical DPDK log messages from now on: for a teardown whose peer is
// gone (virtio-user complaining that the vhost side closed first).
void quiet_logs();

// Gives a thread that EAL did not create an lcore id (rte_thread_register), so
// its mempool operations use a per-lcore cache. 0 or -errno.
int register_thread();
void unregister_thread();
// Moves the calling thread onto the CPUs of EAL lcore `lcore` (its -l entry),
// then registers it as register_thread() does: a thread of one's own that
// runs where an lcore would (rte_eal_remote_launch works from the main lcore
// only). 0 or -errno.
int run_on_lcore_cpus(unsigned lcore);

// Nanoseconds from the TSC, as the engine's clock.
class TscClock {
 public:
  TscClock();
  uint64_t now_ns() const;

 private:
  uint64_t hz_;
  uint64_t base_;
};

struct PortConfig {
  uint16_t rx_queues = 1;
  uint16_t tx_queues = 1;
  uint16_t rx_descs = 1024;
  uint16_t tx_descs = 1024;
  uint32_t mbufs = 8191;         // per port, shared by its queues
  uint16_t mbuf_data_bytes = 4096 + 512;  // a whole 4 KB-MTU RoCE frame in one segment
  uint16_t mtu = 4500;           // L3 MTU asked of the port (vdevs may cap it)
  bool promiscuous = true;
  bool rss_udp = true;           // spread receive queues over UDP ports, where supported
};

struct PortStats {
  uint64_t rx_packets = 0;
  uint64_t tx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
  uint64_t rx_missed = 0;  // dropped by the port for lack of descriptors or buffers
  uint64_t rx_errors = 0;  // frames the port received in error (rte_eth_stats.ierrors)
  uint64_t tx_errors = 0;  // frames the port took but failed to send (oerrors)
  uint64_t tx_dropped = 0;  // tita's own count: bursts the port did not take
};

class Port {
 public:
  Port() = default;
  ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  // Opens a port by DPDK name ("net_ring0", "0000:3b:00.0", "net_memif") or by
  // number ("0"), configures queues and its mempool, and starts it.
  // -ENODEV: no such port; other -errno with a one-line message.
  int open(std::string_view name, const PortConfig& cfg, std::string* err);
  void close();

  uint16_t id() const { return id_; }
  const std::string& name() const { return name_; }
  // The port's address (a random locally administered one when it reports none).
  const uint8_t* mac() const { return mac_; }
  rte_mempool* pool() const { return pool_; }
  uint16_t rx_queues() const { return cfg_.rx_queues; }
  uint16_t tx_queues() const { return cfg_.tx_queues; }
  // The largest frame this port sends and receives (its MTU, and what one mbuf holds).
  uint16_t max_frame_bytes() const { return max_frame_; }
  bool multi_segment_tx() const { return multi_seg_; }  // chained mbufs accepted
  // Payload attached from application memory (external buffers) reaches the
  // wire: chained mbufs, and not virtio-user, whose vhost backend reads only
  // the memory virtio-user shares with it (DPDK's own segments), and drops the
  // rest. Empty: yes; else why not, for a user who asked for zero copy.
  const std::string& external_tx_refused() const { return ext_tx_refused_; }

  uint16_t rx(uint16_t queue, rte_mbuf** pkts, uint16_t n);
  // Transmits up to n; returns how many the port took. The caller owns the rest.
  uint16_t tx(uint16_t queue, rte_mbuf** pkts, uint16_t n);
  // Transmits all n, retrying briefly; frees and counts what the port refuses.
  void tx_all(uint16_t queue, rte_mbuf** pkts, uint16_t n);
  bool link_up() const;
  // The link speed in Mb/s as the port reports it (vdevs report a nominal one); 0: unknown.
  uint32_t link_speed_mbps() const;
  // An rte_flow rule: IPv4/UDP frames from source port `udp_sport` to port 4791 go
  // to receive queue `queue`. 0, or -errno (many vdevs have no rte_flow).
  int steer_udp_sport(uint16_t udp_sport, uint16_t queue, std::string* err);
  PortStats stats() const;

 private:
  uint16_t id_ = UINT16_MAX;
  std::string name_;
  PortConfig cfg_;
  rte_mempool* pool_ = nullptr;
  uint8_t mac_[6] = {};
  uint16_t max_frame_ = 1518;
  uint16_t data_room_ = 0;
  bool multi_seg_ = false;
  std::string ext_tx_refused_;
  bool started_ = false;
  uint64_t tx_dropped_ = 0;
  // The kernel sockets under an af_packet or af_xdp port: DPDK 22.11 does not
  // count the frames their rings had no room for, so stats() reads them here.
  std::vector<int> packet_fds_;  // AF_PACKET: PACKET_STATISTICS's tp_drops (cleared by each read)
  std::vector<int> xdp_fds_;     // AF_XDP: XDP_STATISTICS's rx_ring_full
  mutable std::atomic<uint64_t> packet_drops_{0};  // tp_drops read so far
  uint64_t kernel_ring_drops() const;
};

// Attaches a vdev after EAL start-up (rte_dev_probe), e.g. a virtio-user port
// that must connect to a vhost port this same process created first.
int hotplug(std::string_view devargs, std::string* err);

}  // namespace tita::dpdk
