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
//                  Two engines take every input, one with the receive fast path
//                  and one without; after each record they must agree on QP
//                  state, counters, completions, emitted bytes and memory.
//   switch         frames into lib/fabric's data plane on any port (PFC, VLAN,
//                  IPv4/IPv6, malformed), time, dequeues with the egress edit
//                  applied; once drained, every buffer and queue counter is back
//                  at zero.
//   switch-config  tita-switch's JSON configuration, or --set lines after a
//                  first byte '#' (apps/tita-switch/config.cc)
//   switch-set     --set lines only (every input: more of them per second)
//   api            what an application gives the verbs layer, through the
//                  engine's API: QP attributes (the peer's QPN, PSN, GID),
//                  work requests, MR ranges, QPs talking over the loopback;
//                  every successful completion checked against the access
//                  rules (see ApiTarget)
//   cc-params      congestion-control parameter strings (name=value lines)
//   verbs-config   the verbs device's settings (TITA_CONFIG file, TITA_* values)
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
#include "tita/engine/settings.h"
#include "tita/fabric/edit.h"
#include "tita/fabric/switch.h"
#include "tita/verbs/config.h"
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
  uint64_t hash = 0;  // FNV-1a of every byte handed over, in order (EngineDiffTarget compares it)
  void mix(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    uint64_t h = hash ^ 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ull;
    hash = h;
  }
  uint32_t space = 256;
  uint32_t tx_space() override { return space; }
  void transmit_burst(uint64_t, const engine::TxFrame* burst, uint32_t n) override {
    for (uint32_t i = 0; i < n; ++i) transmit(burst[i]);
  }
  void transmit(const engine::TxFrame& f) {
    // Read every byte the engine hands over (a payload pointer outside an MR is
    // an ASan report or a guard-page fault).
    std::memcpy(scratch, f.hdr, std::min<size_t>(f.hdr_len, sizeof scratch));
    mix(f.hdr, f.hdr_len);
    for (uint32_t i = 0; i < f.n_payload; ++i) {
      const auto* p = static_cast<const uint8_t*>(f.payload[i].data);
      for (uint32_t at = 0; at < f.payload[i].len; at += sizeof scratch) {
        const size_t n = std::min<size_t>(f.payload[i].len - at, sizeof scratch);
        std::memcpy(scratch, p + at, n);
        mix(scratch, n);
      }
    }
    mix(f.tail, f.tail_len);
    ++frames;
  }
};

// The engine and api targets read records [op][len lo][len hi][len bytes]:
// `step(op, bytes, len)` does one and returns how many of its bytes it used;
// then the engine polls and the target takes its completions (check()). At the
// end, with the port taking frames, 16 gaps of `gap_ns` let every timer run out
// (retransmissions, RNR waits, retry exhaustion), then check(true) compares
// the regions.
template <class Target, class Step>
void run_records(Target& t, const uint8_t* data, size_t size, uint64_t gap_ns, Step step) {
  size_t i = 0;
  while (i + 3 <= size) {
    const uint8_t op = data[i];
    const size_t len = std::min<size_t>(data[i + 1] | data[i + 2] << 8, size - i - 3);
    i += 3;
    i += step(op, data + i, len);
    t.eng->poll(t.now);
    t.check();
  }
  t.io.space = 256;
  for (int k = 0; k < 16; ++k) {
    t.now += gap_ns;
    t.eng->poll(t.now);
    t.check();
  }
  t.check(true);
}

// The names an algorithm can be chosen by: cc/'s built-ins, and one it lacks.
std::vector<std::string> cc_names(bool with_unknown) {
  std::vector<std::string> names;
  for (const cc::AlgorithmInfo& a : cc::algorithms()) names.emplace_back(a.name);
  if (with_unknown) names.emplace_back("x");
  return names;
}

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
    const size_t sizes[kRegions] = {8192, 4096, 4096, 4096, 16384};
    const uint8_t fills[kRegions] = {0x5a, 0x11, 0x33, 0x22, 0x00};
    for (int i = 0; i < kRegions; ++i) region[i].create(sizes[i], fills[i]);
  }

  // Each region's address for the engine (its IOVA): the same in every
  // EngineTarget, so that two of them take the same frames.
  static uint64_t iova(int r) { return 0x1000'0000ull * static_cast<uint64_t>(r + 1); }

  // `fast`: EngineConfig::fast_path (EngineDiffTarget runs one engine with it, one without).
  void open(bool fast = true) {
    for (const Guarded& g : region) g.reset();
    io.frames = 0;
    io.hash = 0;
    io.space = 256;
    engine::EngineConfig cfg;
    cfg.gid = our_gid;
    std::memcpy(cfg.mac, kOurMac, 6);
    cfg.fast_path = fast;
    cfg.verify_icrc = false;  // mutated frames get past the ICRC to the state machines
    cfg.compute_icrc = false;  // what we send is discarded (NullIo reads every byte of it)
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
      require(eng->reg_mr(pd, region[i].mr, region[i].len, iova(i), access[i], &mr[i]) == 0, "reg_mr");
    }
    require(eng->create_cq(512, &cq) == 0, "create_cq");
    std::string err;
    for (int i = 0; i < 2; ++i) {
      require(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq, .max_send_wr = 64, .max_recv_wr = 64}, &qpn[i]) == 0,
              "create_qp");
      QpAttr a;
      a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
      a.path_mtu = 1024;
      a.dest_qp_num = kPeerQpn + i;
      a.rq_psn = 1000;
      a.ah_attr.dgid = peer_gid;
      std::memcpy(a.ah_attr.dmac, kPeerMac, 6);
      a.recovery = i == 1 ? Recovery::kSelectiveRepeat : Recovery::kGoBackN;
      a.max_dest_rd_atomic = 4;
      a.sq_psn = 5000;
      a.timeout = 8;
      a.retry_cnt = 3;
      a.rnr_retry = 3;
      a.max_rd_atomic = 4;
      require(connect_rc(*eng, qpn[i], a, &err) == 0, "connect_rc");
      for (int k = 0; k < 4; ++k) post_recv(i, static_cast<uint16_t>(k * 1500), 1500);
    }
  }

  void post_recv(int q, uint16_t off, uint16_t len) {
    const uint32_t o = off % region[kSink].len;
    const uint32_t n = std::min<uint32_t>(len, static_cast<uint32_t>(region[kSink].len - o));
    engine::Sge sge{iova(kSink) + o, n, mr[kSink].lkey};
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
    Sge sge{iova(kSink) + off, len, mr[kSink].lkey};
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
        const uint64_t lo = iova(r);
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

  // After every record: completions taken. After the last (`regions`): the
  // regions compared with what they must still hold (a change stays, so once
  // is enough; out-of-bounds accesses fault at once on the guard pages).
  void check(bool regions = false) {
    engine::WorkCompletion wc[64];
    while (eng->poll_cq(cq, 64, wc) > 0) {
    }
    if (!regions) return;
    require(region[kRo].intact(), "a remote-read-only MR changed");
    require(region[kLocal].intact(), "an MR without remote access changed");
    for (const Guarded& g : region) require(g.canary_intact(), "a byte before an MR changed");
  }

  // Records: [op][len lo][len hi][len bytes]. op & 7: 0-3 a frame to QP op>>3 & 1
  // (bit 0x40: keep PSN, keys and addresses; byte 0 of the frame selects the MR
  // for RETH rewriting, bit 0x80 of it keeps the key), 4 time passes (len x
  // 1 us, x 1 ms with 0x40), 5 post a request (6 bytes), 6 post a receive, 7
  // the port has no transmit room (len & 1) or has.
  void run(const uint8_t* data, size_t size) {
    open();
    run_records(*this, data, size, 200'000'000, [&](uint8_t op, const uint8_t* p, size_t len) -> size_t {
      const int q = op >> 3 & 1;
      switch (op & 7) {
        case 0: case 1: case 2: case 3: {
          if (len < 2) return len;
          std::vector<uint8_t> f(p + 1, p + len);  // exactly sized: ASan sees a read past it
          fix_up(f, q, op & 0x40, p[0]);
          eng->receive(now, f.data(), static_cast<uint32_t>(f.size()));
          return len;
        }
        case 4:
          now += len * (op & 0x40 ? 1'000'000ull : 1'000ull);
          return 0;
        case 5:
          if (len >= 6) post_send(q, p);
          return std::min<size_t>(len, 6);
        case 6:
          if (len >= 4) post_recv(q, static_cast<uint16_t>(p[0] | p[1] << 8), static_cast<uint16_t>(p[2] | p[3] << 8));
          return std::min<size_t>(len, 4);
        default:
          io.space = len & 1 ? 0 : 256;
          return 0;
      }
    });
    eng.reset();
  }
};

// The engine target run twice over: one engine with the receive fast path
// (EngineConfig::fast_path), one without, each record given to both (a frame
// rewritten once, against the general engine's state) and after each the two
// held to the same QP state (Engine::qp_state_text), counters, completions,
// emitted bytes and memory. Every EngineTarget oracle runs on both.
struct EngineDiffTarget {
  EngineTarget fast, general;

  void same(bool ok, const char* what) { require(ok, what); }

  void compare() {
    engine::EngineCounters a = fast.eng->counters(), b = general.eng->counters();
    a.rx_fast = b.rx_fast = 0;
    same(std::memcmp(&a, &b, sizeof a) == 0, "fast path: engine counters differ from the general path's");
    same(fast.eng->next_wakeup_ns() == general.eng->next_wakeup_ns(), "fast path: next wakeup differs");
    for (int q = 0; q < 2; ++q) {
      same(fast.eng->qp_state_text(fast.qpn[q]) == general.eng->qp_state_text(general.qpn[q]),
           "fast path: QP state differs from the general path's");
      same(std::memcmp(fast.eng->qp_counters(fast.qpn[q]), general.eng->qp_counters(general.qpn[q]),
                       sizeof(engine::QpCounters)) == 0,
           "fast path: QP counters differ");
    }
    engine::WorkCompletion wa[64], wb[64];
    for (;;) {
      const int na = fast.eng->poll_cq(fast.cq, 64, wa), nb = general.eng->poll_cq(general.cq, 64, wb);
      same(na == nb, "fast path: a different number of completions");
      for (int k = 0; k < na; ++k) {
        same(wa[k].wr_id == wb[k].wr_id && wa[k].status == wb[k].status && wa[k].opcode == wb[k].opcode &&
                 wa[k].byte_len == wb[k].byte_len && wa[k].imm_data == wb[k].imm_data &&
                 wa[k].with_imm == wb[k].with_imm && wa[k].qp_num == wb[k].qp_num,
             "fast path: a completion differs");
      }
      if (na <= 0) break;
    }
    same(fast.io.frames == general.io.frames && fast.io.hash == general.io.hash, "fast path: emitted frames differ");
    for (int r = 0; r < EngineTarget::kRegions; ++r) {
      same(std::memcmp(fast.region[r].mr, general.region[r].mr, fast.region[r].len) == 0,
           "fast path: memory differs");
    }
  }

  void run(const uint8_t* data, size_t size) {
    fast.open(true);
    general.open(false);
    auto both = [&](auto fn) {
      fn(fast);
      fn(general);
    };
    auto settle = [&] {
      both([](EngineTarget& t) { t.eng->poll(t.now); });
      compare();
      both([](EngineTarget& t) { t.check(); });
    };
    size_t i = 0;
    while (i + 3 <= size) {
      const uint8_t op = data[i];
      const size_t len = std::min<size_t>(data[i + 1] | data[i + 2] << 8, size - i - 3);
      i += 3;
      const uint8_t* p = data + i;
      const int q = op >> 3 & 1;
      size_t used = len;
      switch (op & 7) {
        case 0: case 1: case 2: case 3: {
          if (len < 2) break;
          std::vector<uint8_t> f(p + 1, p + len);
          general.fix_up(f, q, op & 0x40, p[0]);
          both([&](EngineTarget& t) { t.eng->receive(t.now, f.data(), static_cast<uint32_t>(f.size())); });
          break;
        }
        case 4:
          both([&](EngineTarget& t) { t.now += len * (op & 0x40 ? 1'000'000ull : 1'000ull); });
          used = 0;
          break;
        case 5:
          if (len >= 6) both([&](EngineTarget& t) { t.post_send(q, p); });
          used = std::min<size_t>(len, 6);
          break;
        case 6:
          if (len >= 4) {
            both([&](EngineTarget& t) {
              t.post_recv(q, static_cast<uint16_t>(p[0] | p[1] << 8), static_cast<uint16_t>(p[2] | p[3] << 8));
            });
          }
          used = std::min<size_t>(len, 4);
          break;
        default:
          both([&](EngineTarget& t) { t.io.space = len & 1 ? 0 : 256; });
          used = 0;
          break;
      }
      i += used;
      settle();
    }
    both([](EngineTarget& t) { t.io.space = 256; });
    for (int k = 0; k < 16; ++k) {
      both([](EngineTarget& t) { t.now += 200'000'000; });
      settle();
    }
    both([](EngineTarget& t) { t.check(true); });
    fast.eng.reset();
    general.eng.reset();
  }
};

// ---------------------------------------------------------------- api

// What the verbs layer hands the engine from an application (ibv_modify_qp's
// attributes, which carry the peer's QPN, PSN and GID from an out-of-band
// exchange; ibv_post_send/recv's work requests; ibv_reg_mr's ranges): arbitrary
// values through the engine's API, QPs talking to each other over the engine's
// own loopback, so that every accepted request also runs through the responder.
// The oracle, on top of the guard pages and canaries: a region registered
// without local write never changes, one never registered is PROT_NONE, and
// every request that completes successfully must have been allowed (the lkeys'
// MRs hold the SGEs in the QP's PD with the access it needs; the rkey's MR holds
// the remote range in the responder's PD, with the access right on the MR and
// the responder QP; atomics aligned), checked when no QP or MR changed since the
// request was posted. No completion comes for a request that was not posted, or
// twice.
struct ApiTarget {
  // rw: all access; ro: remote read only (no local write: never changes);
  // wo: local + remote write, registered at a different iova, in the second PD;
  // local: local write only; none: registered with no access (never changes);
  // unreg: never registered and PROT_NONE.
  enum { kRw, kRo, kWo, kLocal, kNone, kUnreg, kRegions };
  static constexpr int kMaxQps = 6;
  Guarded region[kRegions];
  NullIo io;
  std::unique_ptr<engine::Engine> eng;
  uint32_t pd[2] = {}, cq = 0;
  struct Qp {
    uint32_t qpn = 0;
    int pd = 0;
    bool live = false;
    int64_t sq_psn = -1, rq_psn = -1;  // as last set; -1 never
    uint64_t created = 0, sq_set = 0, rq_set = 0;  // when (ApiTarget::epoch)
  };
  Qp qp[kMaxQps];
  struct Mr {
    engine::MrInfo info;
    int pd = 0;
    int region = 0;
    bool live = false;
  };
  std::vector<Mr> mrs;
  struct Posted {
    bool send = true;
    int qp = 0;
    uint64_t epoch = 0;
    engine::WrOpcode op = engine::WrOpcode::kSend;
    uint32_t flags = 0;
    engine::Sge sge[6];
    int num_sge = 0;
    uint64_t remote = 0;
    uint32_t rkey = 0;
    bool completed = false;
  };
  std::vector<Posted> posted;
  uint64_t epoch = 0;  // QPs and MRs changed
  uint64_t now = 1'000'000;
  const wire::Gid our_gid = wire::Gid::from_ipv4(0x0a000001);
  // TITA_FUZZ_TRACE=1: what each record did, to read a crash's input.
  const bool trace = std::getenv("TITA_FUZZ_TRACE") != nullptr;
  template <class... A>
  void say(const char* fmt, A... a) const {
    if (trace) std::fprintf(stderr, fmt, a...);
  }

  ApiTarget() {
    const size_t sizes[kRegions] = {8192, 4096, 4096, 4096, 4096, 4096};
    const uint8_t fills[kRegions] = {0x5a, 0x11, 0x33, 0x22, 0x44, 0x66};
    for (int i = 0; i < kRegions; ++i) region[i].create(sizes[i], fills[i]);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    mprotect(region[kUnreg].mr - region[kUnreg].canary, region[kUnreg].canary + region[kUnreg].len, PROT_NONE);
    (void)page;
  }

  bool may_change(int r) const { return r != kRo && r != kNone && r != kUnreg; }

  void open() {
    for (int i = 0; i < kRegions; ++i) {
      if (i != kUnreg) region[i].reset();
    }
    io.frames = 0;
    io.space = 256;
    engine::EngineConfig cfg;
    cfg.gid = our_gid;
    std::memcpy(cfg.mac, kOurMac, 6);
    cfg.line_rate_bps = 10'000'000'000;
    cfg.max_qps = kMaxQps;
    cfg.compute_icrc = cfg.verify_icrc = false;  // nothing crosses a wire (the parser's fuzzer checks ICRCs)
    cfg.ooo_slots = 256;
    cfg.control_ring = 256;
    cfg.timer_slots = 1024;
    cfg.loopback_slots = 64;
    cfg.arp_tries = 1;
    cfg.arp_retry_ns = 1'000'000;
    eng = std::make_unique<engine::Engine>(cfg, &io);
    pd[0] = eng->alloc_pd();
    pd[1] = eng->alloc_pd();
    using namespace engine;
    require(eng->create_cq(512, &cq) == 0, "create_cq");
    mrs.clear();
    posted.clear();
    for (Qp& q : qp) q = Qp{};
    epoch = 0;
    const uint32_t access[kRegions - 1] = {
        kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic, kAccessRemoteRead,
        kAccessLocalWrite | kAccessRemoteWrite, kAccessLocalWrite, 0};
    for (int i = 0; i < kRegions - 1; ++i) {
      Mr m;
      m.pd = i == kWo ? 1 : 0;
      m.region = i;
      const uint64_t iova = i == kWo ? 0x1000'0000 : reinterpret_cast<uint64_t>(region[i].mr);
      require(eng->reg_mr(pd[m.pd], region[i].mr, region[i].len, iova, access[i], &m.info) == 0, "reg_mr");
      m.live = true;
      mrs.push_back(m);
    }
  }

  Mr* mr_by_key(uint32_t key, bool rkey) {
    for (Mr& m : mrs) {
      if (m.live && (rkey ? m.info.rkey : m.info.lkey) == key) return &m;
    }
    return nullptr;
  }
  static bool contains(const engine::MrInfo& m, uint64_t va, uint64_t len) {
    return va >= m.addr && len <= m.length && va - m.addr <= m.length - len;
  }

  // An SGE from 5 bytes: [mr][off lo][off hi][len lo][len hi]. The address is
  // the MR's plus a signed offset; the key its lkey, another's, or made up.
  engine::Sge sge_of(const uint8_t* p) {
    engine::Sge s;
    const Mr& m = mrs[p[0] % mrs.size()];
    const auto off = static_cast<int16_t>(p[1] | p[2] << 8);
    s.addr = m.info.addr + static_cast<uint64_t>(static_cast<int64_t>(off));
    s.length = static_cast<uint32_t>(p[3] | p[4] << 8);
    switch (p[0] >> 6) {
      case 0: case 1: s.lkey = m.info.lkey; break;
      case 2: s.lkey = mrs[(p[0] >> 3 & 7) % mrs.size()].info.lkey; break;
      default: s.lkey = m.info.lkey ^ (1u << (p[1] & 31)); break;
    }
    return s;
  }

  // Inline data is copied from the application's pointers at post time, lkeys
  // ignored (as ibverbs): they must point at readable memory, so they are kept
  // inside one region; only the length is the fuzzer's.
  engine::Sge inline_sge_of(const uint8_t* p) {
    engine::Sge s;
    const Guarded& g = region[p[0] % kUnreg];
    s.length = static_cast<uint32_t>(p[3] | p[4] << 8) % (g.len + 1);
    s.addr = reinterpret_cast<uint64_t>(g.mr) + (p[1] | p[2] << 8) % (g.len - s.length + 1);
    return s;
  }

  void note_change() { ++epoch; }

  void create_qp(const uint8_t* p, size_t n) {
    int slot = -1;
    for (int i = 0; i < kMaxQps; ++i) {
      if (!qp[i].live) {
        slot = i;
        break;
      }
    }
    if (slot < 0 || n < 6) return;
    engine::QpInitAttr a;
    a.send_cq = p[5] & 0x80 ? cq + 1 : cq;
    a.recv_cq = cq;
    a.max_send_wr = p[0];
    a.max_recv_wr = p[1];
    a.max_sge = p[2] % 6;
    a.max_inline_data = static_cast<uint32_t>(p[3] | p[4] << 8) % 700;
    a.sq_sig_all = p[5] & 1;
    const int which = p[5] >> 1 & 1;
    uint32_t qpn = 0;
    const int rc = eng->create_qp(pd[which], &a, &qpn);
    say("create_qp slot %d pd %d: %d (qpn %#x)\n", slot, which, rc, qpn);
    if (rc == 0) {
      note_change();
      qp[slot] = Qp{qpn, which, true};
      qp[slot].created = epoch;
    }
  }

  // [qp][state][mask 4][mtu][psn 3][dest][timeout][retry][rnr][min_rnr]
  // [max_rd][max_dest_rd][access][gid][recovery][tc][sport 2][payload 2]
  void modify_qp(const uint8_t* p, size_t n) {
    if (n < 26) return;
    const Qp& q = qp[p[0] % kMaxQps];
    using namespace engine;
    QpAttr a;
    a.qp_state = static_cast<QpState>(p[1] % 8);
    a.cur_qp_state = static_cast<QpState>(p[1] >> 4 & 7);
    uint32_t mask;
    std::memcpy(&mask, p + 2, 4);
    static constexpr uint32_t kMtus[] = {256, 512, 1024, 2048, 4096, 0, 100, 8192};
    a.path_mtu = kMtus[p[6] & 7];
    a.payload_bytes = p[6] & 8 ? static_cast<uint32_t>(p[24] | p[25] << 8) : 0;
    a.rq_psn = a.sq_psn = static_cast<uint32_t>(p[7] | p[8] << 8 | p[9] << 16) | (p[6] & 0x10 ? 0x0100'0000 : 0);
    const Qp& dest = qp[p[10] % kMaxQps];
    a.dest_qp_num = p[10] & 0x80 ? static_cast<uint32_t>(p[10]) << 16 | p[9] : dest.qpn;
    a.timeout = p[11];
    a.retry_cnt = p[12];
    a.rnr_retry = p[13];
    a.min_rnr_timer = p[14];
    a.max_rd_atomic = p[15];
    a.max_dest_rd_atomic = p[16];
    a.qp_access_flags = p[17];
    switch (p[18] & 3) {
      case 0: case 1: a.ah_attr.dgid = our_gid; break;  // loopback
      case 2: a.ah_attr.dgid = wire::Gid::from_ipv4(0x0a000000 | p[18]); break;  // someone else (ARP)
      default: std::memset(a.ah_attr.dgid.raw, p[18], 16); break;
    }
    if (p[18] & 4) std::memcpy(a.ah_attr.dmac, kOurMac, 6);
    a.ah_attr.hop_limit = p[18] & 8 ? 0 : 64;
    a.ah_attr.vlan = p[18] & 0x10;
    a.ah_attr.pcp = p[18] >> 5;
    a.ah_attr.vid = static_cast<uint16_t>(p[21] << 4);
    a.recovery = p[19] & 1 ? Recovery::kSelectiveRepeat : Recovery::kGoBackN;
    a.ah_attr.traffic_class = p[20];
    a.ah_attr.udp_sport = static_cast<uint16_t>(p[22] | p[23] << 8);
    a.pkey_index = p[19] & 2 ? 1 : 0;
    a.port_num = p[19] & 4 ? 2 : 1;
    std::string err;
    const int rc = eng->modify_qp(q.qpn, a, mask, &err);
    say("modify_qp %#x to %d mask %#x dest %#x access %#x: %d %s\n", q.qpn, p[1] % 8, mask, a.dest_qp_num,
        a.qp_access_flags, rc, err.c_str());
    if (rc == 0) {
      Qp& m = qp[p[0] % kMaxQps];
      note_change();
      if (mask & kQpSqPsn) m.sq_psn = a.sq_psn & wire::kPsnMask, m.sq_set = epoch;
      if (mask & kQpRqPsn) m.rq_psn = a.rq_psn & wire::kPsnMask, m.rq_set = epoch;
    } else {
      require(!err.empty(), "modify_qp refused without a message");
    }
  }

  // The RESET->INIT->RTR->RTS ladder for QP a towards b in one record, so
  // inputs reach RTS without three exact modify records: [a][b][mtu][flags].
  // Written out, not connect_rc(): the oracle notes each step that succeeds.
  void connect(const uint8_t* p, size_t n) {
    if (n < 4) return;
    using namespace engine;
    Qp& a = qp[p[0] % kMaxQps];
    const Qp& b = qp[p[1] % kMaxQps];
    if (!a.live || !b.live) return;
    QpAttr at;
    std::string err;
    at.qp_state = QpState::kInit;
    at.qp_access_flags = p[3] & 0xf;
    if (eng->modify_qp(a.qpn, at, kQpState | kQpToInitRequired, &err) != 0) return;
    at.qp_state = QpState::kRtr;
    static constexpr uint32_t kMtus[] = {256, 512, 1024, 4096};
    at.path_mtu = kMtus[p[2] & 3];
    at.dest_qp_num = b.qpn;
    at.ah_attr.dgid = our_gid;
    at.rq_psn = p[2] & 4 ? 0xfffff0 : 7;
    at.sq_psn = p[2] & 8 ? 0xfffff0 : 7;  // both ends start alike: a's sq meets b's rq
    at.recovery = p[3] & 0x10 ? Recovery::kSelectiveRepeat : Recovery::kGoBackN;
    at.max_dest_rd_atomic = p[2] >> 4;
    at.max_rd_atomic = p[3] >> 5;
    at.timeout = 6;
    at.retry_cnt = 3;
    at.rnr_retry = p[3] & 0x80 ? 7 : 2;
    if (eng->modify_qp(a.qpn, at, kQpState | kQpToRtrRequired | kQpRecovery, &err) != 0) return;
    note_change();
    a.rq_psn = at.rq_psn;
    a.rq_set = epoch;
    at.qp_state = QpState::kRts;
    const int rc = eng->modify_qp(a.qpn, at, kQpState | kQpToRtsRequired, &err);
    if (rc == 0) a.sq_psn = at.sq_psn, a.sq_set = epoch;
    say("connect %#x -> %#x access %#x %s: %d\n", a.qpn, b.qpn, at.qp_access_flags,
        at.recovery == Recovery::kSelectiveRepeat ? "sr" : "gbn", rc);
    note_change();
  }

  // [qp][count] then per WR [opcode][flags][nsge][remote mr][remote off 2][imm/add][5 x nsge]
  void post_send(const uint8_t* p, size_t n) {
    if (n < 2) return;
    const int qi = p[0] % kMaxQps;
    using namespace engine;
    SendWr wrs[3];
    Sge sges[3][6];
    size_t at = 2;
    const size_t first = posted.size();
    int count = 0;
    for (int w = 0; w < 1 + p[1] % 3 && at + 7 <= n; ++w) {
      const uint8_t* r = p + at;
      at += 7;
      SendWr& wr = wrs[w];
      wr.opcode = static_cast<WrOpcode>(r[0] % 8);
      wr.send_flags = r[1] & 0x1f;
      wr.num_sge = r[2] % 7;
      const bool inl = wr.send_flags & kSendInline;
      for (int s = 0; s < wr.num_sge; ++s) {
        if (at + 5 <= n) {
          sges[w][s] = inl ? inline_sge_of(p + at) : sge_of(p + at);
          at += 5;
        } else {
          sges[w][s] = inl ? inline_sge_of(r) : sge_of(r);
        }
      }
      wr.sg_list = sges[w];
      const Mr& m = mrs[r[3] % mrs.size()];
      const auto off = static_cast<int16_t>(r[4] | r[5] << 8);
      const uint64_t remote = m.info.addr + static_cast<uint64_t>(static_cast<int64_t>(off));
      const uint32_t rkey = r[3] & 0x80 ? m.info.rkey ^ (1u << (r[4] & 31)) : m.info.rkey;
      wr.rdma.remote_addr = wr.atomic.remote_addr = remote;
      wr.rdma.rkey = wr.atomic.rkey = rkey;
      wr.imm_data = r[6];
      wr.atomic.compare_add = r[6];
      wr.atomic.swap = r[5];
      wr.wr_id = posted.size();
      Posted rec;
      rec.send = true;
      rec.qp = qi;
      rec.epoch = epoch;
      rec.op = wr.opcode;
      rec.flags = wr.send_flags;
      rec.num_sge = wr.num_sge;
      std::copy(sges[w], sges[w] + wr.num_sge, rec.sge);
      rec.remote = remote;
      rec.rkey = rkey;
      posted.push_back(rec);
      if (w > 0) wrs[w - 1].next = &wr;
      ++count;
    }
    if (count == 0) return;
    const SendWr* bad = nullptr;
    const int rc = eng->post_send(qp[qi].qpn, wrs, &bad);
    for (int w = 0; w < count; ++w) {
      say("post_send %#x wr %zu op %d flags %#x remote %#llx rkey %#x sges", qp[qi].qpn, first + w,
          static_cast<int>(wrs[w].opcode), wrs[w].send_flags, static_cast<unsigned long long>(wrs[w].rdma.remote_addr),
          wrs[w].rdma.rkey);
      for (int g = 0; g < wrs[w].num_sge; ++g) {
        say(" [%#llx %u %#x]", static_cast<unsigned long long>(sges[w][g].addr), sges[w][g].length, sges[w][g].lkey);
      }
      say(": %d\n", rc != 0 && bad - wrs <= w ? rc : 0);
    }
    if (rc != 0) {
      require(bad != nullptr, "post_send refused without naming the WR");
      // Those from bad on were not posted: no completion may come for them.
      for (int w = static_cast<int>(bad - wrs); w < count; ++w) posted[first + w].completed = true;
    }
  }

  // [qp][nsge][5 x nsge]
  void post_recv(const uint8_t* p, size_t n) {
    if (n < 2) return;
    const int qi = p[0] % kMaxQps;
    engine::Sge sges[6];
    engine::RecvWr wr;
    wr.num_sge = p[1] % 7;
    static constexpr uint8_t kNone[5] = {};
    for (int s = 0; s < wr.num_sge; ++s) sges[s] = sge_of(2 + 5 * (s + 1) <= n ? p + 2 + 5 * s : kNone);
    wr.sg_list = sges;
    wr.wr_id = posted.size();
    Posted rec;
    rec.send = false;
    rec.qp = qi;
    rec.epoch = epoch;
    rec.num_sge = wr.num_sge;
    std::copy(sges, sges + wr.num_sge, rec.sge);
    posted.push_back(rec);
    const engine::RecvWr* bad = nullptr;
    const int rc = eng->post_recv(qp[qi].qpn, &wr, &bad);
    say("post_recv %#x wr %zu sges %d: %d\n", qp[qi].qpn, posted.size() - 1, wr.num_sge, rc);
    if (rc != 0) posted.back().completed = true;
  }

  // [region][off 2][len 2][access][pd][iova kind]: registers part of a region.
  void reg_mr(const uint8_t* p, size_t n) {
    if (n < 8 || mrs.size() >= 16) return;
    const int r = p[0] % kUnreg;
    const Guarded& g = region[r];
    const uint64_t off = static_cast<uint64_t>(p[1] | p[2] << 8) % g.len;
    const uint64_t len = static_cast<uint64_t>(p[3] | p[4] << 8) % (g.len - off + 1);
    uint32_t access = p[5] & 0x1f;
    if (!may_change(r)) access &= ~engine::kAccessLocalWrite;  // remote write without it must be refused
    uint64_t iova = reinterpret_cast<uint64_t>(g.mr) + off;
    if (p[7] & 1) iova = ~uint64_t{0} - (p[7] >> 1) * 512;  // near the top: ranges that would wrap
    if (p[7] & 2) iova = static_cast<uint64_t>(p[7]) << 12;
    Mr m;
    m.pd = p[6] & 1;
    m.region = r;
    const int rc = eng->reg_mr(pd[m.pd], g.mr + off, len, iova, access, &m.info);
    say("reg_mr region %d +%llu len %llu iova %#llx access %#x pd %d: %d (key %#x)\n", r,
        static_cast<unsigned long long>(off), static_cast<unsigned long long>(len),
        static_cast<unsigned long long>(iova), access, m.pd, rc, m.info.lkey);
    if (rc == 0) {
      m.live = true;
      mrs.push_back(m);
      note_change();
    }
  }

  void dereg_mr(const uint8_t* p, size_t n) {
    if (n < 1) return;
    Mr& m = mrs[p[0] % mrs.size()];
    say("dereg_mr %#x\n", m.info.lkey);
    if (m.live && eng->dereg_mr(m.info.lkey) == 0) {
      m.live = false;
      note_change();
    }
  }

  void destroy_qp(const uint8_t* p, size_t n) {
    if (n < 1) return;
    Qp& q = qp[p[0] % kMaxQps];
    say("destroy_qp %#x\n", q.qpn);
    if (q.live && eng->destroy_qp(q.qpn) == 0) {
      q.live = false;
      note_change();
    }
  }

  const Qp* qp_by_num(uint32_t qpn) const {
    for (const Qp& q : qp) {
      if (q.live && q.qpn == qpn) return &q;
    }
    return nullptr;
  }

  // An SGE list the engine read from (or wrote into, with local write) must be
  // inside live MRs of the QP's PD.
  bool sges_allowed(const Posted& w, int qp_pd, bool write) {
    for (int s = 0; s < w.num_sge; ++s) {
      const engine::Sge& g = w.sge[s];
      if (g.length == 0) continue;
      const Mr* m = mr_by_key(g.lkey, false);
      if (m == nullptr || m->pd != qp_pd || !contains(m->info, g.addr, g.length)) return false;
      if (write && !(m->info.access & engine::kAccessLocalWrite)) return false;
    }
    return true;
  }

  void check_completion(const engine::WorkCompletion& wc) {
    using namespace engine;
    say("completion wr %llu qp %#x status %d opcode %d len %u\n", static_cast<unsigned long long>(wc.wr_id), wc.qp_num,
        static_cast<int>(wc.status), static_cast<int>(wc.opcode), wc.byte_len);
    require(wc.wr_id < posted.size(), "a completion for a request never posted");
    Posted& w = posted[wc.wr_id];
    require(!w.completed, "a completion for a request not posted, or a second one");
    w.completed = true;
    if (wc.status != WcStatus::kSuccess || w.epoch != epoch) return;
    const Qp& q = qp[w.qp];
    if (!w.send) {
      // WRITE with immediate: byte_len is the WRITE's length, its data went where it said.
      if (wc.opcode == WcOpcode::kRecvRdmaWithImm) return;
      uint64_t room = 0;
      for (int s = 0; s < w.num_sge; ++s) room += w.sge[s].length;
      require(wc.byte_len <= room, "a receive completed longer than its buffers");
      // The SGEs the received bytes filled.
      Posted filled = w;
      filled.num_sge = 0;
      for (uint64_t left = wc.byte_len; filled.num_sge < w.num_sge && left > 0; ++filled.num_sge) {
        left -= std::min<uint64_t>(left, w.sge[filled.num_sge].length);
      }
      require(sges_allowed(filled, q.pd, true), "a receive completed into memory its SGEs do not allow");
      return;
    }
    const bool inl = w.flags & kSendInline;
    const bool read = w.op == WrOpcode::kRdmaRead;
    const bool atomic = w.op == WrOpcode::kAtomicCmpAndSwp || w.op == WrOpcode::kAtomicFetchAndAdd;
    if (!inl) require(sges_allowed(w, q.pd, read || atomic), "a request completed with SGEs its lkeys do not allow");
    if (w.op == WrOpcode::kSend || w.op == WrOpcode::kSendWithImm) return;
    uint64_t len = 0;
    for (int s = 0; s < w.num_sge; ++s) len += w.sge[s].length;
    if (atomic) len = 8;
    if (len == 0) return;  // zero-length RDMA: no key is checked (IBA 9.4.5)
    // A request the responder takes for a duplicate is ACKed without being run
    // (IBA 9.9.2): so is every one whose PSN the responder does not expect, which
    // two ends that exchanged PSNs wrong, or a third QP sending into the same
    // responder, bring about; and the answers of a third QP whose peer is the
    // requester complete its requests whatever its own responder did (or if
    // there is none). Then success says nothing (the memory oracles still
    // hold). Checked: a pair that agrees on its PSNs, that no third QP sends
    // to, either way.
    auto sends_to = [&](uint32_t target, uint32_t except) {
      for (const Qp& other : qp) {
        QpAttr oa;
        if (other.live && other.qpn != q.qpn && other.qpn != except && eng->query_qp(other.qpn, &oa) == 0 &&
            oa.ah_attr.dgid == our_gid && oa.qp_state >= QpState::kRtr && oa.dest_qp_num == target) {
          return true;
        }
      }
      return false;
    };
    QpAttr a;
    require(eng->query_qp(q.qpn, &a) == 0, "query_qp of a live QP");
    if (sends_to(q.qpn, a.dest_qp_num)) return;
    const Qp* resp = qp_by_num(a.dest_qp_num);
    require(resp != nullptr && a.ah_attr.dgid == our_gid, "an RDMA request completed with no responder to execute it");
    // And the two were connected to each other as they are now: a QP destroyed
    // and created again (the same QPN) starts from its first PSN again, which
    // its old peer has long passed.
    if (q.sq_psn < 0 || q.sq_psn != resp->rq_psn || resp->rq_set <= q.created || q.sq_set <= resp->created ||
        sends_to(resp->qpn, resp->qpn)) {
      return;
    }
    QpAttr ra;
    require(eng->query_qp(resp->qpn, &ra) == 0, "query_qp of the responder");
    const Mr* m = mr_by_key(w.rkey, true);
    say("  responder %#x (pd %d, access %#x), MR %s pd %d access %#x\n", resp->qpn, resp->pd, ra.qp_access_flags,
        m ? "found" : "none", m ? m->pd : -1, m ? m->info.access : 0);
    require(m != nullptr && m->pd == resp->pd, "an RDMA request completed with an rkey of no MR in the responder's PD");
    require(contains(m->info, w.remote, len), "an RDMA request completed outside its MR");
    const uint32_t need = read ? kAccessRemoteRead : atomic ? kAccessRemoteAtomic : kAccessRemoteWrite;
    require(m->info.access & need, "an RDMA request completed on an MR without the access");
    require(ra.qp_access_flags & need, "an RDMA request completed on a responder QP without the access");
    if (atomic) require(w.remote % 8 == 0, "an atomic completed on an unaligned address");
  }

  void check(bool regions = false) {
    for (int r = 0; regions && r < kUnreg; ++r) {
      require(region[r].canary_intact(), "a byte before an MR changed");
      if (!may_change(r)) require(region[r].intact(), "a region without local write access changed");
    }
    engine::WorkCompletion wc[64];
    int n;
    while ((n = eng->poll_cq(cq, 64, wc)) > 0) {
      for (int i = 0; i < n; ++i) check_completion(wc[i]);
    }
  }

  // Records: [op][len lo][len hi][len bytes]; op % 11: create QP, modify QP,
  // connect two QPs, post send, post receive, register, deregister, destroy QP,
  // time passes (len x 1 us), the port full (len & 1) or not, set CC.
  void run(const uint8_t* data, size_t size) {
    open();
    static const std::vector<std::string> kCc = cc_names(true);
    run_records(*this, data, size, 50'000'000, [&](uint8_t op, const uint8_t* p, size_t len) -> size_t {
      switch (op % 11) {
        case 0: create_qp(p, len); break;
        case 1: modify_qp(p, len); break;
        case 2: connect(p, len); break;
        case 3: post_send(p, len); break;
        case 4: post_recv(p, len); break;
        case 5: reg_mr(p, len); break;
        case 6: dereg_mr(p, len); break;
        case 7: destroy_qp(p, len); break;
        case 8: now += len * 1'000; return 0;
        case 9: io.space = len & 1 ? 0 : 256; return 0;
        case 10:
          if (len >= 1) {
            std::string err;
            eng->set_cc(qp[p[0] % kMaxQps].qpn, kCc[(p[0] >> 3) % kCc.size()], {}, &err);
          }
          break;
      }
      return len;
    });
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

// A document, or (first byte '#') `--set path=value` lines applied to a
// two-port one, as tita-switch's command line does.
// `set_lines`: the input is --set lines on a two-port document; otherwise a JSON
// configuration.
void switch_config(const uint8_t* data, size_t size, bool set_lines) {
  nlohmann::json doc;
  std::string err;
  if (set_lines) {
    doc = {{"ports", {{{"name", "a"}}, {{"name", "b"}}}}, {"routes", nlohmann::json::array()}};
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (size_t at = 0; at < text.size();) {
      const size_t nl = std::min(text.find('\n', at), text.size());
      if (tsw::apply_set(&doc, text.substr(at, nl - at), &err) != 0) {
        require(!err.empty(), "a refused --set without a message");
        return;
      }
      at = nl + 1;
    }
  } else {
    doc = nlohmann::json::parse(data, data + size, nullptr, false);
    if (doc.is_discarded()) return;
  }
  tsw::AppConfig cfg;
  if (tsw::from_json(doc, &cfg, &err) == 0) {
    fabric::Switch<uint32_t> sw;
    if (sw.init(cfg.sw, &err) == 0) (void)tsw::effective_json(cfg).dump();
  } else {
    require(!err.empty(), "a refused configuration without a message");
  }
}

void cc_params(const uint8_t* data, size_t size) {
  if (size < 1) return;
  static const std::vector<std::string> kNames = cc_names(false);
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

// The verbs device's settings (lib/verbs/src/config.cc), as a TITA_CONFIG file
// (first byte even) or as `key=value` lines as the TITA_* variables give them
// (odd), then checked as a whole. cc_plugin is not fuzzed: it loads the shared
// objects its value names.
void verbs_config(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (text.find("cc_plugin") != std::string_view::npos) return;
  verbs::Config c;
  std::string err;
  auto refused = [&](int rc) {
    if (rc != 0) require(rc < 0 && !err.empty(), "a refused setting without a message");
    return rc != 0;
  };
  if (data[0] % 2 == 0) {
    if (refused(verbs::read_json(&c, text, "fuzz.json", &err))) return;
  } else {
    size_t at = 0;
    while (at < text.size()) {
      const size_t nl = std::min(text.find('\n', at), text.size());
      const std::string_view line = text.substr(at, nl - at);
      at = nl + 1;
      const size_t eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      if (refused(verbs::set(&c, line.substr(0, eq), line.substr(eq + 1), &err))) return;
    }
  }
  if (refused(verbs::check(c, &err))) return;
  require(!c.ip.empty() && c.vdev.empty() != c.port.empty(), "a configuration accepted without an address or a port");
  require(c.memory_mb >= 64, "a setting accepted out of range");
  // The engine's settings within their rows' ranges (tita/engine/settings.h),
  // but for a default outside it (the rate, 0 until set: the port's speed).
  for (const engine::Setting& s : engine::settings()) {
    const uint64_t v = s.get(c.engine);
    if (!s.verbs || s.kind == engine::SettingKind::kBool || v == s.default_for(engine::FrontEnd::kVerbs)) continue;
    require(v >= s.min && v <= s.max, "an engine setting accepted out of range");
  }
}

enum class Target { kUnset, kEngine, kApi, kSwitch, kSwitchConfig, kSwitchSet, kCcParams, kVerbsConfig };

Target pick() {
  const char* t = std::getenv("TITA_FUZZ");
  const std::string_view name = t ? t : "";
  if (name == "engine") return Target::kEngine;
  if (name == "api") return Target::kApi;
  if (name == "verbs-config") return Target::kVerbsConfig;
  if (name == "switch") return Target::kSwitch;
  if (name == "switch-config") return Target::kSwitchConfig;
  if (name == "switch-set") return Target::kSwitchSet;
  if (name == "cc-params") return Target::kCcParams;
  std::fprintf(stderr, "tita_fuzz: set TITA_FUZZ to engine, api, switch, switch-config, switch-set, cc-params or verbs-config\n");
  std::exit(2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Target target = pick();
  static EngineDiffTarget* engine = target == Target::kEngine ? new EngineDiffTarget : nullptr;
  static ApiTarget* api = target == Target::kApi ? new ApiTarget : nullptr;
  static SwitchTarget* sw = target == Target::kSwitch ? new SwitchTarget : nullptr;
  if (size > 65536) return 0;
  switch (target) {
    case Target::kEngine: engine->run(data, size); break;
    case Target::kApi: api->run(data, size); break;
    case Target::kSwitch: sw->run(data, size); break;
    case Target::kVerbsConfig: verbs_config(data, size); break;
    case Target::kSwitchConfig:  // a first byte '#' marks --set lines
      if (size > 0 && data[0] == '#') {
        switch_config(data + 1, size - 1, true);
      } else {
        switch_config(data, size, false);
      }
      break;
    case Target::kSwitchSet: switch_config(data, size, true); break;
    case Target::kCcParams: cc_params(data, size); break;
    case Target::kUnset: break;
  }
  return 0;
}
