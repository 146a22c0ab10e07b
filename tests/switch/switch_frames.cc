// switch_frames: writes RoCEv2 frames (lib/wire) into a pcap for tita-switch
// tests. Each --flow is key=value pairs:
//   src=10.0.0.1 dst=10.0.1.2 (IPv4 or IPv6), sport=49152, dscp=26, ecn=2,
//   pcp=3 (adds an 802.1Q tag), ttl=64, payload=1024, count=1,
//   collect=1 (COLLECT telemetry trailer), hops=0 (records already in it)
// Frames of several flows are interleaved round robin. No flows: an empty pcap.
#include <CLI/CLI.hpp>
#include <arpa/inet.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tita/capture/pcap.h"
#include "tita/wire/frame.h"

namespace {

using namespace tita::wire;

struct Flow {
  FrameFields f;
  uint32_t payload = 1024;
  int count = 1;
  bool collect = false;
  int hops = 0;
};

bool parse_ip(const std::string& s, Gid* g) {
  in_addr a4;
  if (inet_pton(AF_INET, s.c_str(), &a4) == 1) {
    *g = Gid::from_ipv4_bytes(reinterpret_cast<const uint8_t*>(&a4));
    return true;
  }
  return inet_pton(AF_INET6, s.c_str(), g->raw) == 1;
}

bool parse_flow(const std::string& spec, Flow* out, std::string* err) {
  Flow fl;
  const uint8_t dst_mac[6] = {0x02, 0, 0, 0, 0, 0x02}, src_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
  std::memcpy(fl.f.dst_mac, dst_mac, 6);
  std::memcpy(fl.f.src_mac, src_mac, 6);
  fl.f.src_gid = Gid::from_ipv4(0x0a000001);
  fl.f.dst_gid = Gid::from_ipv4(0x0a000102);
  fl.f.udp_src_port = 0xc000;
  fl.f.dscp = 26;
  fl.f.ecn = kEcnEct0;
  fl.f.opcode = Opcode::kSendOnly;
  fl.f.dest_qp = 0x12;
  size_t start = 0;
  while (start < spec.size()) {
    const size_t comma = std::min(spec.find(',', start), spec.size());
    const std::string kv = spec.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) {
      *err = "'" + kv + "' is not key=value";
      return false;
    }
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    const unsigned long n = std::strtoul(v.c_str(), nullptr, 0);
    if (k == "src" || k == "dst") {
      if (!parse_ip(v, k == "src" ? &fl.f.src_gid : &fl.f.dst_gid)) {
        *err = "bad address " + v;
        return false;
      }
    } else if (k == "sport") {
      fl.f.udp_src_port = static_cast<uint16_t>(n);
    } else if (k == "dscp") {
      fl.f.dscp = static_cast<uint8_t>(n);
    } else if (k == "ecn") {
      fl.f.ecn = static_cast<uint8_t>(n);
    } else if (k == "pcp") {
      fl.f.vlan = true;
      fl.f.pcp = static_cast<uint8_t>(n);
      fl.f.vid = 1;
    } else if (k == "ttl") {
      fl.f.ttl = static_cast<uint8_t>(n);
    } else if (k == "payload") {
      fl.payload = static_cast<uint32_t>(n);
    } else if (k == "count") {
      fl.count = static_cast<int>(n);
    } else if (k == "collect") {
      fl.collect = n != 0;
    } else if (k == "hops") {
      fl.hops = static_cast<int>(n);
    } else if (k == "qp") {
      fl.f.dest_qp = static_cast<uint32_t>(n);
    } else {
      *err = "unknown key " + k;
      return false;
    }
  }
  *out = fl;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"switch_frames: RoCEv2 frames into a pcap for tita-switch tests"};
  std::string out;
  std::vector<std::string> specs;
  app.add_option("--out", out, "pcap to write")->required();
  app.add_option("--flow", specs, "flow: key=value,...");
  CLI11_PARSE(app, argc, argv);

  std::vector<Flow> flows;
  for (const std::string& s : specs) {
    Flow f;
    std::string err;
    if (!parse_flow(s, &f, &err)) {
      std::fprintf(stderr, "switch_frames: --flow %s: %s\n", s.c_str(), err.c_str());
      return 2;
    }
    flows.push_back(f);
  }
  tita::capture::PcapWriter w;
  std::string err;
  if (w.open(out, &err) != 0) {
    std::fprintf(stderr, "switch_frames: %s\n", err.c_str());
    return 1;
  }
  std::vector<uint8_t> payload(9000);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i * 13 + 1);
  std::vector<uint8_t> buf(10'000);
  std::vector<int> sent(flows.size(), 0);
  uint64_t ts = 1'000'000'000;
  int written = 0;
  for (bool more = true; more;) {
    more = false;
    for (size_t i = 0; i < flows.size(); ++i) {
      Flow& fl = flows[i];
      if (sent[i] >= fl.count) continue;
      more = true;
      fl.f.psn = static_cast<uint32_t>(sent[i]);
      const Segment seg{payload.data(), fl.payload};
      int len = build_frame(fl.f, {&seg, fl.payload ? 1u : 0u}, buf.data(), static_cast<uint32_t>(buf.size()));
      if (len < 0) {
        std::fprintf(stderr, "switch_frames: frame too large\n");
        return 1;
      }
      if (fl.collect) {
        uint8_t* t = buf.data() + len;
        uint32_t tl = telemetry_write(t, TelemetryHdr::kCollect, static_cast<uint32_t>(written));
        for (int h = 0; h < fl.hops; ++h) {
          std::memset(t + tl, 0xab, sizeof(TelemetryHop));
          tl += sizeof(TelemetryHop);
        }
        t[1] = static_cast<uint8_t>(t[1] | fl.hops);
        len += static_cast<int>(tl);
      }
      w.write({buf.data(), static_cast<size_t>(len)}, ts += 1000);
      ++sent[i];
      ++written;
    }
  }
  w.close();
  return 0;
}
