// tita-wire: the wire layer from the command line.
//
//   tita-wire demo  --pcap out.pcap              a few packets of every kind, for tshark
//   tita-wire gen   --pcap out.pcap --count N    random packets of every opcode, fields as JSON lines
//   tita-wire parse --pcap in.pcap               parse result and fields of every frame, as JSON lines
//
// gen and parse are what the scapy and tshark interop tests drive.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <random>
#include <vector>

#include "tita/capture/pcap.h"
#include "tita/cli/cli11.h"
#include "tita/wire/frame.h"
#include "tita/wire/psn.h"

namespace {

using namespace tita::wire;
using nlohmann::json;

std::string ip_string(const Gid& g) {
  char buf[64];
  if (g.is_ipv4()) {
    const uint8_t* a = g.ipv4_bytes();
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
    return buf;
  }
  std::string s;
  for (int i = 0; i < 16; i += 2) {
    std::snprintf(buf, sizeof buf, "%s%x", i ? ":" : "", unsigned{g.raw[i]} << 8 | g.raw[i + 1]);
    s += buf;
  }
  return s;
}

std::string hex(const uint8_t* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[p[i] >> 4];
    s[2 * i + 1] = kDigits[p[i] & 15];
  }
  return s;
}

// Every header field of a parsed packet, named after Wireshark's where it has one.
json describe(const Packet& p) {
  const Bth& bth = p.bth();
  json j = {
      {"ip_version", p.ip_version},
      {"src", ip_string(p.src_gid())},
      {"dst", ip_string(p.dst_gid())},
      {"dscp", p.dscp},
      {"ecn", p.ecn},
      {"udp_sport", p.udp().src_port.get()},
      {"opcode", bth.opcode},
      {"opcode_name", p.op->name},
      {"se", bth.se()},
      {"mig_req", bth.mig_req()},
      {"padcnt", bth.pad_count()},
      {"tver", bth.tver()},
      {"pkey", bth.pkey.get()},
      {"fecn", bth.fecn()},
      {"becn", bth.becn()},
      {"destqp", bth.dest_qp.get()},
      {"ackreq", bth.ack_requested()},
      {"psn", bth.psn.get()},
      {"payload_len", p.payload_len},
      {"payload", hex(p.payload(), p.payload_len)},
      {"icrc", p.icrc()},
  };
  if (p.has_vlan) j["vlan"] = {{"pcp", p.pcp}, {"vid", p.vid}};
  if (const Deth* h = p.deth()) j["deth"] = {{"q_key", h->qkey.get()}, {"srcqp", h->src_qp.get()}};
  if (const Reth* h = p.reth()) j["reth"] = {{"va", h->va.get()}, {"r_key", h->rkey.get()}, {"dmalen", h->dma_len.get()}};
  if (const Aeth* h = p.aeth()) j["aeth"] = {{"syndrome", h->syndrome}, {"msn", h->msn.get()}};
  if (const ImmDt* h = p.imm()) j["immdt"] = h->imm.get();
  if (const AtomicEth* h = p.atomic_eth()) {
    j["atomiceth"] = {{"va", h->va.get()},
                      {"r_key", h->rkey.get()},
                      {"swap_or_add_data", h->swap_add.get()},
                      {"compare_data", h->compare.get()}};
  }
  if (const AtomicAckEth* h = p.atomic_ack()) j["atomicacketh"] = h->orig.get();
  if (const TelemetryHdr* t = p.telemetry()) j["telemetry_hops"] = t->hops();
  return j;
}

// All opcodes the table knows, in numeric order.
std::vector<Opcode> all_opcodes() {
  std::vector<Opcode> ops;
  for (int v = 0; v < 256; ++v) {
    if (opcode_info(static_cast<uint8_t>(v)).valid()) ops.push_back(static_cast<Opcode>(v));
  }
  return ops;
}

FrameFields base_fields(Opcode op) {
  FrameFields f;
  const uint8_t dst[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  const uint8_t src[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  std::copy(dst, dst + 6, f.dst_mac);
  std::copy(src, src + 6, f.src_mac);
  f.src_gid = Gid::from_ipv4(0x0a000001);
  f.dst_gid = Gid::from_ipv4(0x0a000002);
  f.opcode = op;
  f.dest_qp = 0x000011;
  return f;
}

// Random values for every field of `op`, within what the opcode allows.
FrameFields random_fields(std::mt19937_64& rng, Opcode op, bool ipv6, std::vector<uint8_t>* payload) {
  auto u = [&rng](uint64_t max) { return std::uniform_int_distribution<uint64_t>(0, max)(rng); };
  FrameFields f = base_fields(op);
  const OpcodeInfo& info = opcode_info(op);
  for (auto& b : f.src_mac) b = static_cast<uint8_t>(u(255));
  f.src_mac[0] &= 0xfe;  // unicast
  if (ipv6) {
    for (auto& b : f.src_gid.raw) b = static_cast<uint8_t>(u(255));
    for (auto& b : f.dst_gid.raw) b = static_cast<uint8_t>(u(255));
    f.src_gid.raw[0] = f.dst_gid.raw[0] = 0xfd;  // ULA, never v4-mapped
    f.flow_label = static_cast<uint32_t>(u(0xfffff));
  } else {
    f.src_gid = Gid::from_ipv4(static_cast<uint32_t>(u(0xffffffff)));
    f.dst_gid = Gid::from_ipv4(static_cast<uint32_t>(u(0xffffffff)));
    f.ip_id = static_cast<uint16_t>(u(0xffff));
  }
  f.dscp = static_cast<uint8_t>(u(63));
  f.ecn = static_cast<uint8_t>(u(3));
  f.ttl = static_cast<uint8_t>(1 + u(254));
  f.udp_src_port = static_cast<uint16_t>(0xc000 | u(0x3fff));
  f.se = u(1);
  f.mig_req = u(1);
  f.pkey = static_cast<uint16_t>(u(0xffff));
  f.fecn = u(1);
  f.becn = u(1);
  f.dest_qp = static_cast<uint32_t>(u(kPsnMask));
  f.ack_req = u(1);
  f.psn = static_cast<uint32_t>(u(kPsnMask));
  f.va = u(~0ull);
  f.rkey = static_cast<uint32_t>(u(0xffffffff));
  f.dma_len = static_cast<uint32_t>(u(0xffffffff));
  f.syndrome = static_cast<uint8_t>(u(255) & 0x7f);  // bit 7 is reserved
  f.msn = static_cast<uint32_t>(u(kPsnMask));
  f.imm = static_cast<uint32_t>(u(0xffffffff));
  f.swap_add = u(~0ull);
  f.compare = u(~0ull);
  f.orig = u(~0ull);
  f.qkey = static_cast<uint32_t>(u(0xffffffff));
  f.src_qp = static_cast<uint32_t>(u(kPsnMask));
  payload->clear();
  if (info.has(kHasPayload)) {
    payload->resize(u(64) == 0 ? 0 : 1 + u(1500));
    for (auto& b : *payload) b = static_cast<uint8_t>(u(255));
  }
  if (op == Opcode::kCnp) {  // as NICs send it
    f.udp_src_port = 0;
    f.psn = 0;
  }
  return f;
}

int cmd_demo(const std::string& path) {
  tita::capture::PcapWriter out;
  std::string err;
  if (out.open(path, &err) != 0) {
    std::fprintf(stderr, "tita-wire: %s\n", err.c_str());
    return 1;
  }
  std::vector<uint8_t> payload(1500);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i);
  uint8_t buf[4096];
  uint64_t ts_ns = 1'000'000'000;
  uint32_t psn = 0x100;
  int n = 0;
  for (Opcode op : all_opcodes()) {
    FrameFields f = base_fields(op);
    f.psn = psn++;
    f.va = 0x7f0000001000;
    f.rkey = 0x1234;
    f.dma_len = 4096;
    f.imm = 0xdeadbeef;
    f.ack_req = opcode_info(op).ends_message();
    f.swap_add = 1;
    if (op == Opcode::kCnp) {
      f.becn = true;
      f.dscp = 48;
      f.udp_src_port = 0;
      f.psn = 0;
    }
    const uint32_t len = opcode_info(op).has(kHasPayload) ? 1000 + static_cast<uint32_t>(op) : 0;
    const Segment seg{payload.data(), len};
    const int frame_len = build_frame(f, {&seg, len ? 1u : 0u}, buf, sizeof buf);
    out.write({buf, static_cast<size_t>(frame_len)}, ts_ns += 1000);
    ++n;
  }
  // The same WRITE over IPv6 and with an 802.1Q tag (priority 3, as PFC classes use).
  FrameFields v6 = base_fields(Opcode::kWriteOnly);
  const uint8_t a6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  std::copy(a6, a6 + 16, v6.src_gid.raw);
  std::copy(a6, a6 + 16, v6.dst_gid.raw);
  v6.dst_gid.raw[15] = 2;
  const Segment seg{payload.data(), 64};
  int len = build_frame(v6, {&seg, 1}, buf, sizeof buf);
  out.write({buf, static_cast<size_t>(len)}, ts_ns += 1000);
  FrameFields tagged = base_fields(Opcode::kWriteOnly);
  tagged.vlan = true;
  tagged.pcp = 3;
  tagged.vid = 100;
  len = build_frame(tagged, {&seg, 1}, buf, sizeof buf);
  out.write({buf, static_cast<size_t>(len)}, ts_ns += 1000);
  out.close();
  std::printf("tita-wire: wrote %d RoCEv2 frames (%d opcodes, IPv6, 802.1Q) to %s\n", n + 2, n, path.c_str());
  return 0;
}

int cmd_gen(const std::string& path, int count, uint64_t seed, bool ipv6) {
  tita::capture::PcapWriter out;
  std::string err;
  if (out.open(path, &err) != 0) {
    std::fprintf(stderr, "tita-wire: %s\n", err.c_str());
    return 1;
  }
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> payload;
  uint8_t buf[4096];
  const std::vector<Opcode> ops = all_opcodes();
  for (int i = 0; i < count; ++i) {
    for (Opcode op : ops) {
      FrameFields f = random_fields(rng, op, ipv6, &payload);
      const Segment seg{payload.data(), static_cast<uint32_t>(payload.size())};
      const int len = build_frame(f, {&seg, payload.empty() ? 0u : 1u}, buf, sizeof buf);
      Packet p;
      const ParseError e = parse(buf, static_cast<uint32_t>(len), &p);
      if (e != ParseError::kOk) {
        std::fprintf(stderr, "tita-wire: built frame does not parse: %s\n", std::string(to_string(e)).c_str());
        return 1;
      }
      json j = describe(p);
      j["ttl"] = f.ttl;
      j["frame"] = hex(buf, static_cast<size_t>(len));
      std::cout << j.dump() << '\n';
      out.write({buf, static_cast<size_t>(len)}, 0);
    }
  }
  return 0;
}

int cmd_parse(const std::string& path) {
  std::string err;
  const int rc = tita::capture::read_pcap(
      path,
      [](std::span<const uint8_t> frame, uint64_t) {
        Packet p;
        const ParseError e = parse(frame.data(), static_cast<uint32_t>(frame.size()), &p);
        json j = e == ParseError::kOk ? describe(p) : json::object();
        j["result"] = to_string(e);
        std::cout << j.dump() << '\n';
      },
      &err);
  if (rc != 0) {
    std::fprintf(stderr, "tita-wire: %s\n", err.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tita-wire: build and parse RoCEv2 frames"};
  tita::cli::contract_help(app);
  // At most one here, none checked after parsing: CLI11 would report a missing
  // command before an unknown word, which then goes unnamed.
  app.require_subcommand(0, 1);
  std::string pcap;
  int count = 100;
  uint64_t seed = 1;
  bool ipv6 = false;

  auto* demo = app.add_subcommand("demo", "write a few frames of every kind to a pcap");
  demo->add_option("--pcap", pcap, "output file")->required()->type_name("FILE");
  auto* gen = app.add_subcommand("gen", "random frames of every opcode; fields as JSON lines on stdout");
  gen->add_option("--pcap", pcap, "output file")->required()->type_name("FILE");
  gen->add_option("--count", count, "frames per opcode")->check(CLI::Range(1, 100000));
  gen->add_option("--seed", seed, "random seed");
  gen->add_flag("--ipv6", ipv6, "IPv6 instead of IPv4");
  auto* prs = app.add_subcommand("parse", "parse every frame of a pcap; JSON lines on stdout");
  prs->add_option("--pcap", pcap, "input file")->required()->check(CLI::ExistingFile)->type_name("FILE");

  if (const int rc = tita::cli::parse(app, "tita-wire", argc, argv); rc >= 0) return rc;
  if (app.get_subcommands().empty()) return tita::cli::usage_error("tita-wire", "give a command: demo, gen or parse");
  if (*demo) return cmd_demo(pcap);
  if (*gen) return cmd_gen(pcap, count, seed, ipv6);
  return cmd_parse(pcap);
}
