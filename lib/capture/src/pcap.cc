#include "tita/capture/pcap.h"

#include <pcap/pcap.h>

#include <cerrno>

namespace tita::capture {

PcapWriter::~PcapWriter() { close(); }

int PcapWriter::open(const std::string& path, std::string* err) {
  close();
  handle_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
  if (handle_ == nullptr) {
    *err = "pcap: cannot create a handle";
    return -ENOMEM;
  }
  dumper_ = pcap_dump_open(handle_, path.c_str());
  if (dumper_ == nullptr) {
    *err = "pcap: " + path + ": " + pcap_geterr(handle_);
    pcap_close(handle_);
    handle_ = nullptr;
    return -EIO;
  }
  return 0;
}

void PcapWriter::write(std::span<const uint8_t> frame, uint64_t ts_ns) {
  pcap_pkthdr h{};
  h.ts.tv_sec = static_cast<time_t>(ts_ns / 1'000'000'000);
  h.ts.tv_usec = static_cast<suseconds_t>(ts_ns % 1'000'000'000);  // nanoseconds: precision is NANO
  h.caplen = h.len = static_cast<bpf_u_int32>(frame.size());
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &h, frame.data());
}

void PcapWriter::close() {
  if (dumper_ != nullptr) pcap_dump_close(dumper_);
  if (handle_ != nullptr) pcap_close(handle_);
  dumper_ = nullptr;
  handle_ = nullptr;
}

int read_pcap(const std::string& path, const std::function<void(std::span<const uint8_t>, uint64_t)>& fn,
              std::string* err) {
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (p == nullptr) {
    *err = std::string("pcap: ") + errbuf;
    return -EIO;
  }
  if (pcap_datalink(p) != DLT_EN10MB) {
    *err = "pcap: " + path + " is not an Ethernet capture";
    pcap_close(p);
    return -EINVAL;
  }
  pcap_pkthdr* h;
  const u_char* data;
  while (pcap_next_ex(p, &h, &data) == 1) {
    fn({data, h->caplen}, uint64_t(h->ts.tv_sec) * 1'000'000'000 + uint64_t(h->ts.tv_usec));
  }
  pcap_close(p);
  return 0;
}

}  // namespace tita::capture
