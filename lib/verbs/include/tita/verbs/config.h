// The settings of a tita verbs device: where its DPDK port is, its address, and
// how it runs. One table of settings, read from a JSON file (TITA_CONFIG) and
// then from TITA_* environment variables (which win), so tita-run, a program
// started by something else, and the library itself all read them the same way.
//
//   TITA_VDEV=net_vhost0,iface=/tmp/s  TITA_IP=10.0.0.1  ib_write_bw ...
//   {"vdev": "net_memif0,role=server,socket=/tmp/m", "ip": "10.0.0.1",
//    "progress": "adaptive", "neighbours": {"10.0.0.2": "02:00:00:00:00:02"}}
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tita/engine/settings.h"

namespace tita::verbs {

enum class Progress : uint8_t {
  kBusy,      // the device's thread polls without pause
  kAdaptive,  // it sleeps when idle, and while application threads poll for it
};

struct Config {
  std::string device = "tita0";  // the name ibv_devices shows
  std::string vdev;              // a DPDK vdev to create (devargs), or
  std::string port;              // an existing port: PCI address, name or number
  std::string ip;                // the IPv4 address: GID index 0 is ::ffff:ip
  uint32_t ipv4 = 0;             // host order
  std::string mac;               // the source MAC (default: the port's)
  uint8_t mac_bytes[6] = {};
  std::string eal;               // extra EAL arguments, space separated
  bool hugepages = false;        // false: EAL runs with --no-huge
  uint32_t memory_mb = 512;      // with --no-huge: EAL's -m
  std::string cc = "none";       // congestion control of every QP (cc/)
  std::vector<std::string> cc_params;  // "name=value" each
  std::vector<std::string> cc_plugins;  // loaded (cc::load_plugin) as they were set
  bool selective_repeat = false;  // recovery: "gbn" (false) or "sr"
  Progress progress = Progress::kBusy;
  // The engine's settings the verbs layer offers (rate_gbps, base_rtt_us, pace,
  // pacing_slack_us, max_qps, arp_retry_ms, arp_tries: tita/engine/settings.h,
  // doc/settings.md), each engine's config but for its address and port;
  // line_rate_bps 0: the port's speed.
  engine::EngineConfig engine = engine::defaults(engine::FrontEnd::kVerbs);
  uint32_t engines = 1;         // engines on the port, one queue pair, lock and thread each
  // How long the first ibv_open_device waits for the link to come up. A virtual
  // port's link comes up when its peer process attaches (vhost, memif), a NIC's
  // after training; programs such as perftest refuse a port that is down.
  uint32_t link_wait_ms = 30'000;
  std::vector<std::pair<uint32_t, std::array<uint8_t, 6>>> neighbours;  // static ARP entries
  enum class Log : uint8_t { kNone, kError, kInfo, kDebug } log = Log::kError;
};

// One setting: its config-file key, its environment variable (TITA_ and the key
// in capitals) and what it means: the verbs layer's own, then the engine's
// that it offers (engine::Setting::verbs), with their defaults.
struct Setting {
  std::string key;
  std::string env;
  std::string help;
  std::string type;  // what a value is, with its unit, for help: "IPv4", "MiB", "us", "gbn|sr"
};
const std::vector<Setting>& settings();

// Sets `key` from its text form, checked ("ip", "10.0.0.1"). -EINVAL with a
// one-line message naming the setting.
int set(Config* c, std::string_view key, std::string_view value, std::string* err);

// Reads a JSON file of settings. -EINVAL (or -errno) with a message naming the
// file and what is wrong.
int read_file(Config* c, const std::string& path, std::string* err);
// The same from the file's text; `path` is what messages call it.
int read_json(Config* c, std::string_view text, const std::string& path, std::string* err);

// TITA_CONFIG (if set), then every TITA_* variable; then checks the whole
// (an address and exactly one of vdev/port). 0 or -EINVAL with a message.
int load(Config* c, std::string* err);
int check(const Config& c, std::string* err);

// The node GUID (host order), EUI-64 of a MAC as RoCE NICs derive it.
uint64_t eui64(const uint8_t mac[6]);
// The node GUID that the settings fix, for the device and for tita-run's
// sysfs view alike: from the configured MAC; for a vdev without one (memif
// and virtio-user draw a MAC at random each run), from the locally
// administered MAC 02:00:<IPv4>. False for a NIC without a configured MAC,
// whose GUID comes from its own MAC.
bool settled_node_guid(const Config& c, uint64_t* guid);

// What the device reports as its firmware version (ibv_devinfo's fw_ver).
inline constexpr const char* kFirmwareVersion = "tita 0.1.0";

}  // namespace tita::verbs
