// libFuzzer targets for the boundaries where untrusted bytes come in, in one
// binary (one clang build of the library sources): TITA_FUZZ names the target.
//
//   engine         frames from a hostile peer to two RC QPs in RTS (go-back-N and
//                  selective repeat) with READs, atomics, WRITEs and SENDs of our
//                  own in flight, time advancing, receives posted. The oracle:
//                  every MR ends at a PROT_NONE guard page and starts after a
//                  canary (a byte outside any MR that changes aborts), the
//                  remote-read-only and the local-only MRs must never change,
//                  and ASan watches the rest of the process.
//   switch         frames into lib/fabric's data plane on any port (PFC, VLAN,
//                  IPv4/IPv6, malformed), time, dequeues with the egress edit
//                  applied; once drained, every buffer and queue counter is back
//                  at zero.
//   switch-config  tita-switch's JSON configuration (apps/tita-switch/config.cc)
//   cc-params      congestion-control parameter strings (name=value lines)
//
// An input is a sequence of records; see each target. Mutated frames keep
// reaching the state machines because the engine target rewrites addresses,
// the destination QP, and (unless told not to) PSNs, keys and addresses
// relative to the QP's state before delivery, and checks no ICRC.
#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../../apps/tita-switch/config.h"
#include "tita/cc/cc.h"
#include "tita/engine/engine.h"
#include "tita/fabric/edit.h"
#include "tita/fabric/switch.h"
#include "tita/wire/frame.h"
#include "tita/wire/psn.h"

using namespace tita;

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tita_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// ---------------------------------------------------------------- engine

// Memory for one MR: [canary .. MR) in the pages before a PROT_NONE guard page,
// so the MR's last byte is the last readable byte; a guard page before it too.
struct Guarded {
  uint8_t* map = nullptr;
  uint8_t* mr = nullptr;  // the registered window
  size_t len = 0;
  size_t canary = 0;      // bytes before mr, in the same mapping
  uint8_t fill = 0;

  void create(size_t bytes, uint8_t pattern) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t body = (bytes + 64 + page - 1) / page * page;  // at least 64 canary bytes
    map = static_cast<uint8_t*>(mmap(nullptr, body + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                     -1, 0));
    require(map != MAP_FAILED, "mmap");
    mprotect(map, page, PROT_NONE);
    mprotect(map + page + body, page, PROT_NONE);
    len = bytes;
    mr = map + page + body - bytes;
    canary = body - bytes;
    fill = pattern;
    this->pattern.assign(canary + len, pattern);
  }
  std::vector<uint8_t> pattern;  // canary + len bytes of fill, to compare with

  void reset() const { std::memcpy(mr - canary, pattern.data(), canary + len); }
  // memcmp, not a byte loop: the sanitizers check its range without
  // instrumenting every comparison.
  bool canary_intact() const { return std::memcmp(mr - canary, pattern.data(), canary) == 0; }
  bool intact() const { return std::memcmp(mr, pattern.data(), len) == 0; }
};

struct NullIo : engine::PacketIo {
  uint8_t scratch[4096];
  uint64_t frames = 0;
  uint32_t space = 256;
  uint32_t tx_space() override { return space; }
  void transmit(uint64_t, const engine::TxFrame& f) override {
    // Read every byte the engine hands over (a payload pointer outside an MR is
    // an ASan report or a guard-page fault).
    std::memcpy(scratch, f.hdr, std::min<size_t>(f.hdr_len, sizeof scratch));
    for (uint32_t i = 0; i < f.n_payload; ++i) {
      const auto* p = static_cast<const uint8_t*>(f.payload[i].data);
      for (uint32_t at = 0; at < f.payload[i].len; at += sizeof scratch) {
        std::memcpy(scratch, p + at, std::min<size_t>(f.payload[i].len - at, sizeof scratch));
      }
    }
    ++frames;
  }
};

constexpr uint8_t kOurMac[6] = {0x02, 0, 0, 0, 0, 0x01};
constexpr uint8_t kPeerMac[6] = {0x02, 0, 0, 0, 0, 0x99};
constexpr uint32_t kPeerQpn = 0x100;

struct EngineTarget {
  // rw: remote read/write/atomic; ro: remote read only; wo: remote write only;
  // local: local write only (no remote access); sink: where our READs and
  // atomics land and our SENDs and receives point.
  enum { kRw, kRo, kWo, kLocal, kSink, kRegions };
  Guarded region[kRegions];
  NullIo io;
  std::unique_ptr<engine::Engine> eng;
  uint32_t pd = 0, cq = 0, qpn[2] = {};
  engine::MrInfo mr[kRegions];
  wire::Gid our_gid = wire::Gid::from_ipv4(0x0a000001);
  wire::Gid peer_gid = wire::Gid::from_ipv4(0x0a000099);
  uint64_t now = 1'000'000;

  EngineTarget() {
    const size_t sizes[kRegions] = {8192, 4096, 4096, 4096, 65536};
    const uint8_t fills[kRegions] = {0x5a, 0x11, 0x33, 0x22, 0x00};
    for (int i = 0; i < kRegions; ++i) region[i].create(sizes[i], fills[i]);
  }

  void open() {
    for (const Guarded& g : region) g.reset();
    io.frames = 0;
    io.space = 256;
    engine::EngineConfig cfg;
    cfg.gid = our_gid;
    std::memcpy(cfg.mac, kOurMac, 6);
    cfg.verify_icrc = false;  // mutated frames get past the ICRC to the state machines
    cfg.line_rate_bps = 10'000'000'000;
    // Small tables: an engine per input (the defaults size 64k QPs and 8192-slot rings).
    cfg.max_qps = 8;
    cfg.ooo_slots = 512;
    cfg.control_ring = 256;
    cfg.timer_slots = 1024;
    cfg.loopback_slots = 16;
    eng = std::make_unique<engine::Engine>(cfg, &io);
    pd = eng->alloc_pd();
    using namespace engine;
    const uint32_t access[kRegions] = {kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic,
                                       kAccessRemoteRead, kAccessLocalWrite | kAccessRemoteWrite, kAccessLocalWrite,
                                       kAccessLocalWrite};
    for (int i = 0; i < kRegions; ++i) {
      require(eng->reg_mr(pd, region[i].mr, region[i].len, access[i], &mr[i]) == 0, "reg_mr");
    }
    require(eng->create_cq(4096, &cq) == 0, "create_cq");
    std::string err;
    for (int i = 0; i < 2; ++i) {
      require(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq, .max_send_wr = 64, .max_recv_wr = 64}, &qpn[i]) == 0,
              "create_qp");
      QpAttr a;
      a.qp_state = QpState::kInit;
      a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
      require(eng->modify_qp(qpn[i], a, kQpState | kQpToInitRequired, &err) == 0, "INIT");
      a.qp_state = QpState::kRtr;
      a.path_mtu = 1024;
      a.dest_qp_num = kPeerQpn + i;
      a.rq_psn = 1000;
      a.ah_attr.dgid = peer_gid;
      std::memcpy(a.ah_attr.dmac, kPeerMac, 6);
      a.recovery = i == 1 ? Recovery::kSelectiveRepeat : Recovery::kGoBackN;
      a.max_dest_rd_atomic = 4;
      require(eng->modify_qp(qpn[i], a, kQpState | kQpToRtrRequired | kQpRecovery | kQpMaxDestRdAtomic, &err) == 0,
              "RTR");
      a.qp_state = QpState::kRts;
      a.sq_psn = 5000;
      a.timeout = 8;
      a.retry_cnt = 3;
      a.rnr_retry = 3;
      a.max_rd_atomic = 4;
      require(eng->modify_qp(qpn[i], a, kQpState | kQpToRtsRequired | kQpMaxQpRdAtomic, &err) == 0, "RTS");
      for (int k = 0; k < 4; ++k) post_recv(i, static_cast<uint16_t>(k * 1500), 1500);
    }
  }

  void post_recv(int q, uint16_t off, uint16_t len) {
    const uint32_t o = off % region[kSink].len;
    const uint32_t n = std::min<uint32_t>(len, static_cast<uint32_t>(region[kSink].len - o));
    engine::Sge sge{reinterpret_cast<uint64_t>(region[kSink].mr + o), n, mr[kSink].lkey};
    engine::RecvWr wr;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    const engine::RecvWr* bad = nullptr;
    eng->post_recv(qpn[q], &wr, &bad);  // a full queue is refused: fine
  }

  // Our own request towards the peer, so that its responses have something to answer.
  void post_send(int q, const uint8_t* p) {
    using namespace engine;
    static constexpr WrOpcode kOps[] = {WrOpcode::kRdmaWrite, WrOpcode::kSend, WrOpcode::kRdmaRead,
                                        WrOpcode::kAtomicFetchAndAdd, WrOpcode::kAtomicCmpAndSwp,
                                        WrOpcode::kRdmaWriteWithImm};
    const WrOpcode op = kOps[p[0] % std::size(kOps)];
    const bool atomic = op == WrOpcode::kAtomicFetchAndAdd || op == WrOpcode::kAtomicCmpAndSwp;
    const uint32_t len = atomic ? 8 : (p[1] | p[2] << 8) % 6000;
    const uint32_t off = atomic ? (p[3] % 64) * 8 : (p[3] | p[4] << 8) % (region[kSink].len - len);
    Sge sge{reinterpret_cast<uint64_t>(region[kSink].mr + off), len, mr[kSink].lkey};
    SendWr wr;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = len > 0 ? 1 : 0;
    wr.send_flags = kSendSignaled | (p[0] & 0x80 ? kSendFence : 0);
    wr.rdma.remote_addr = 0x7000'0000 + p[5] * 64;
    wr.rdma.rkey = 0x4242;
    wr.atomic.remote_addr = 0x7000'0000 + p[5] * 8;
    wr.atomic.rkey = 0x4242;
    wr.atomic.compare_add = p[1];
    wr.atomic.swap = p[2];
    const SendWr* bad = nullptr;
    eng->post_send(qpn[q], &wr, &bad);  // refused when the queue is full or the QP in error: fine
  }

  // Rewrites an arriving frame so that mutations of real frames reach QP q:
  // addresses ours and the peer's, destination QP q; unless `raw`, the PSN
  // relative to what q expects, and RETH/AtomicETH keys and addresses onto our
  // MRs (a little before and after each, to hit the bounds).
  void fix_up(std::vector<uint8_t>& f, int q, bool raw, uint8_t sel) {
    wire::Packet p;
    if (wire::parse(f.data(), static_cast<uint32_t>(f.size()), &p,
                    {.verify_icrc = false, .verify_ip_checksum = false}) != wire::ParseError::kOk) {
      return;  // delivered as it is: the parser's errors are counted
    }
    std::memcpy(f.data(), kOurMac, 6);
    std::memcpy(f.data() + 6, kPeerMac, 6);
    uint8_t* l3 = f.data() + p.l3_offset;
    if (p.ip_version == 4) {
      std::memcpy(l3 + 12, peer_gid.ipv4_bytes(), 4);
      std::memcpy(l3 + 16, our_gid.ipv4_bytes(), 4);
    } else {
      std::memcpy(l3 + 8, peer_gid.raw, 16);
      std::memcpy(l3 + 24, our_gid.raw, 16);
    }
    uint8_t* bth = f.data() + p.bth_offset;
    const uint32_t dqp = qpn[q];
    bth[5] = static_cast<uint8_t>(dqp >> 16), bth[6] = static_cast<uint8_t>(dqp >> 8), bth[7] = static_cast<uint8_t>(dqp);
    if (!raw) {
      engine::QpInfo info;
      if (eng->qp_info(dqp, &info) == 0) {
        const uint32_t old = p.psn();
        const bool response = wire::opcode_info(p.opcode()).is_response();
        // Requests: around the expected PSN; responses: between una - 1 and nxt.
        const uint32_t span = response ? info.snd_nxt - info.snd_una + 2 : 16;
        const uint32_t base = response ? info.snd_una - 1 : info.epsn - 4;
        const uint32_t psn = (base + old % (span == 0 ? 1 : span)) & wire::kPsnMask;
        bth[9] = static_cast<uint8_t>(psn >> 16), bth[10] = static_cast<uint8_t>(psn >> 8), bth[11] = static_cast<uint8_t>(psn);
      }
      const int r = sel % kRegions;
      auto place = [&](uint8_t* va_be, uint8_t* rkey_be) {
        uint64_t va = 0;
        for (int i = 0; i < 8; ++i) va = va << 8 | va_be[i];
        const uint64_t lo = reinterpret_cast<uint64_t>(region[r].mr);
        va = lo + va % (region[r].len + 256) - 128;
        for (int i = 7; i >= 0; --i) va_be[i] = static_cast<uint8_t>(va), va >>= 8;
        if (!(sel & 0x80)) {
          const uint32_t key = mr[r].rkey;
          rkey_be[0] = static_cast<uint8_t>(key >> 24), rkey_be[1] = static_cast<uint8_t>(key >> 16);
          rkey_be[2] = static_cast<uint8_t>(key >> 8), rkey_be[3] = static_cast<uint8_t>(key);
        }
      };
      if (p.reth()) {
        uint8_t* reth = const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(p.reth()));
        place(reth, reth + 8);
      } else if (p.atomic_eth()) {
        uint8_t* a = const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(p.atomic_eth()));
        place(a, a + 8);
      }
    }
    if (p.ip_version == 4) {
      auto* ip = reinterpret_cast<wire::Ipv4Hdr*>(l3);
      ip->checksum.set(0);
      ip->checksum.set(wire::ipv4_checksum(*ip, ip->header_bytes()));
    }
  }

  void check() {
    require(region[kRo].intact(), "a remote-read-only MR changed");
    require(region[kLocal].intact(), "an MR without remote access changed");
    for (const Guarded& g : region) require(g.canary_intact(), "a byte before an MR changed");
    engine::WorkCompletion wc[64];
    while (eng->poll_cq(cq, 64, wc) > 0) {
    }
  }

  // Records: [op][len lo][len hi][len bytes]. op & 7: 0-3 a frame to QP op>>3 & 1
  // (bit 0x40: keep PSN, keys and addresses; byte 0 of the frame selects the MR
  // for RETH rewriting, bit 0x80 of it keeps the key), 4 time passes (len x
  // 1 us, x 1 ms with 0x40), 5 post a request (6 bytes), 6 post a receive, 7
  // the port has no transmit room (len & 1) or has.
  void run(const uint8_t* data, size_t size) {
    open();
    size_t i = 0;
    while (i + 3 <= size) {
      const uint8_t op = data[i];
      size_t len = std::min<size_t>(data[i + 1] | data[i + 2] << 8, size - i - 3);
      i += 3;
      const int q = op >> 3 & 1;
      switch (op & 7) {
        case 0: case 1: case 2: case 3: {
          if (len < 2) break;
          const uint8_t sel = data[i];
          std::vector<uint8_t> f(data + i + 1, data + i + len);  // exactly sized: ASan sees a read past it
          fix_up(f, q, op & 0x40, sel);
          eng->receive(now, f.data(), static_cast<uint32_t>(f.size()));
          break;
        }
        case 4:
          now += len * (op & 0x40 ? 1'000'000ull : 1'000ull);
          len = 0;
          break;
        case 5:
          if (len >= 6) post_send(q, data + i);
          len = std::min<size_t>(len, 6);
          break;
        case 6:
          if (len >= 4) post_recv(q, static_cast<uint16_t>(data[i] | data[i + 1] << 8),
                                  static_cast<uint16_t>(data[i + 2] | data[i + 3] << 8));
          len = std::min<size_t>(len, 4);
          break;
        case 7:
          io.space = len & 1 ? 0 : 256;
          len = 0;
          break;
      }
      i += len;
      eng->poll(now);
      check();
    }
    // Let every timer run out: retransmissions, RNR waits, retry exhaustion.
    io.space = 256;
    for (int k = 0; k < 16; ++k) {
      now += 200'000'000;
      eng->poll(now);
      check();
    }
    eng.reset();
  }
};

// ---------------------------------------------------------------- switch

struct SwitchTarget {
  static constexpr uint16_t kPorts = 4;
  fabric::Switch<uint32_t> sw;
  std::vector<std::vector<uint8_t>> frames;  // by handle
  std::vector<uint32_t> free_;

  void open() {
    fabric::SwitchConfig cfg;
    cfg.ports.resize(kPorts);
    for (uint16_t p = 0; p < kPorts; ++p) {
      cfg.ports[p].rate_bps = p == 3 ? 1'000'000'000 : 10'000'000'000;
      cfg.ports[p].buffer_bytes = p == 2 ? 20'000 : 0;
      cfg.ports[p].mac[5] = static_cast<uint8_t>(p + 1);
      cfg.ports[p].rewrite_mac = p == 1;
      cfg.ports[p].fault.drop_probability = p == 2 ? 0.1 : 0;
      cfg.ports[p].fault.delay_ns = p == 1 ? 5'000 : 0;
    }
    cfg.mmu.buffer_bytes = 1'000'000;
    cfg.mmu.headroom_bytes = 20'000;
    cfg.mmu.lossless = 1u << 3;
    cfg.max_packets = 128;
    cfg.initial_packets = 8;
    std::string err;
    if (sw.init(cfg, &err) != 0) {
      std::fprintf(stderr, "tita_fuzz: %s\n", err.c_str());
      std::abort();
    }
    const uint8_t any[16] = {};
    const uint16_t ecmp[] = {0, 1, 2, 3};
    require(sw.add_route(any, 0, ecmp, &err) == 0, "route");
    uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 3};
    const uint16_t three[] = {3};
    require(sw.add_route(v4, 128, three, &err) == 0, "route");
    frames.clear();
    free_.clear();
  }

  void dequeue_all(uint64_t now) {
    for (uint16_t p = 0; p < kPorts; ++p) {
      uint32_t h;
      fabric::EgressEdit e;
      while (sw.dequeue(p, now, &h, &e)) {
        std::vector<uint8_t>& f = frames[h];
        f.resize(f.size() + e.grow_bytes);  // room for what the edit adds
        fabric::apply_edit(e, f.data());
        free_.push_back(h);
      }
    }
    uint8_t pfc[64];
    uint16_t port;
    while (sw.pfc_frame(&port, pfc, sizeof pfc, now) > 0) {
    }
  }

  // Records: [op][len lo][len hi][bytes]: op & 3 is the port a frame arrives on
  // (op & 4: time passes instead, len x 1 us), then the port dequeues.
  void run(const uint8_t* data, size_t size) {
    open();
    uint64_t now = 1'000'000;
    size_t i = 0;
    while (i + 3 <= size) {
      const uint8_t op = data[i];
      const size_t len = std::min<size_t>(data[i + 1] | data[i + 2] << 8, size - i - 3);
      i += 3;
      if (op & 4) {
        now += len * 1'000;
        sw.poll(now);
        dequeue_all(now);
        continue;
      }
      uint32_t h;
      if (!free_.empty()) {
        h = free_.back();
        free_.pop_back();
      } else {
        h = static_cast<uint32_t>(frames.size());
        frames.emplace_back();
      }
      frames[h].assign(data + i, data + i + len);
      frames[h].shrink_to_fit();  // exactly sized: a read past the frame is an ASan report
      fabric::FrameRef f;
      f.data = frames[h].data();
      f.data_len = static_cast<uint32_t>(len);
      f.frame_bytes = static_cast<uint32_t>(len);
      uint32_t handle = h;
      const fabric::RxResult r = sw.receive(op & 3, handle, f, now);
      if (r.verdict != fabric::Verdict::kQueued) free_.push_back(h);
      i += len;
      if (op & 8) dequeue_all(now);
    }
    // Drain: every queue and buffer counter back at zero.
    for (int k = 0; k < 200 && !sw.idle(); ++k) {
      now += 1'000'000;
      sw.poll(now);
      dequeue_all(now);
    }
    require(sw.idle(), "packets still held after draining");
    require(sw.mmu().shared_used() == 0, "shared buffer still in use after draining");
    for (uint16_t p = 0; p < kPorts; ++p) require(sw.qlen_bytes(p) == 0, "a queue length is not zero after draining");
  }
};

// ---------------------------------------------------------------- parsers

void switch_config(const uint8_t* data, size_t size) {
  const nlohmann::json doc = nlohmann::json::parse(data, data + size, nullptr, false);
  if (doc.is_discarded()) return;
  tsw::AppConfig cfg;
  std::string err;
  if (tsw::from_json(doc, &cfg, &err) == 0) {
    fabric::Switch<uint32_t> sw;
    if (sw.init(cfg.sw, &err) == 0) (void)tsw::effective_json(cfg).dump();
  } else {
    require(!err.empty(), "a refused configuration without a message");
  }
}

void cc_params(const uint8_t* data, size_t size) {
  if (size < 1) return;
  static const std::vector<std::string> kNames = {"none", "dcqcn", "timely", "hpcc", "swift", "powertcp", "nscc", "tita"};
  const std::string& name = kNames[data[0] % kNames.size()];
  cc::Params p;
  std::string err;
  require(cc::Params::create(name, {}, &p, &err) == 0, "a built-in algorithm refused");
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t at = 0;
  while (at <= text.size()) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    const std::string line(text.substr(at, nl - at));
    if (p.set(line, &err) != 0) require(!err.empty(), "a refused parameter without a message");
    at = nl + 1;
  }
  // A flow made from whatever was accepted must run without trapping (UBSan).
  cc::Flow flow;
  cc::FlowConfig link;
  link.line_rate_bps = 10'000'000'000;
  flow.init(p, link, 1'000'000);
  cc::AckSample ack;
  ack.acked_bytes = 1000;
  ack.ack_seq_bytes = 1000;
  ack.next_seq_bytes = 5000;
  ack.inflight_bytes = 4000;
  ack.rtt_ns = 12'000;
  ack.acked_packets = 1;
  ack.ce_packets = 1;
  flow.on_send(1'000'000, 1000);
  flow.on_ack(1'010'000, ack);
  flow.on_cnp(1'020'000);
  flow.on_timer(flow.next_timer_ns() == cc::kNoTimer ? 2'000'000 : flow.next_timer_ns());
  flow.on_timeout(3'000'000);
  require(flow.rate_bps() <= link.line_rate_bps, "a rate above the line rate");
}

enum class Target { kUnset, kEngine, kSwitch, kSwitchConfig, kCcParams };

Target pick() {
  const char* t = std::getenv("TITA_FUZZ");
  const std::string_view name = t ? t : "";
  if (name == "engine") return Target::kEngine;
  if (name == "switch") return Target::kSwitch;
  if (name == "switch-config") return Target::kSwitchConfig;
  if (name == "cc-params") return Target::kCcParams;
  std::fprintf(stderr, "tita_fuzz: set TITA_FUZZ to engine, switch, switch-config or cc-params\n");
  std::exit(2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Target target = pick();
  static EngineTarget* engine = target == Target::kEngine ? new EngineTarget : nullptr;
  static SwitchTarget* sw = target == Target::kSwitch ? new SwitchTarget : nullptr;
  if (size > 65536) return 0;
  switch (target) {
    case Target::kEngine: engine->run(data, size); break;
    case Target::kSwitch: sw->run(data, size); break;
    case Target::kSwitchConfig: switch_config(data, size); break;
    case Target::kCcParams: cc_params(data, size); break;
    case Target::kUnset: break;
  }
  return 0;
}
