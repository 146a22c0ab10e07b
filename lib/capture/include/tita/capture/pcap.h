// Ethernet pcap files through libpcap: what tools and tests write for tshark and
// scapy, and read back.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

struct pcap;
struct pcap_dumper;

namespace tita::capture {

class PcapWriter {
 public:
  PcapWriter() = default;
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  // 0, or -errno with a one-line message in *err.
  int open(const std::string& path, std::string* err);
  void write(std::span<const uint8_t> frame, uint64_t ts_ns);
  void close();
  bool is_open() const { return dumper_ != nullptr; }

 private:
  pcap* handle_ = nullptr;
  pcap_dumper* dumper_ = nullptr;
};

// Calls fn(frame, ts_ns) for every frame in the file. 0, or -errno with a message.
int read_pcap(const std::string& path, const std::function<void(std::span<const uint8_t>, uint64_t)>& fn,
              std::string* err);

}  // namespace tita::capture
