// The receive fast path against the general path (EngineConfig::fast_path):
// two engines, the same configuration and resources, one with the fast path
// and one without, are fed the same random frame sequences from a scripted
// peer - WRITE messages in order, reordered, lost, duplicated, resent from
// what the responder expects (a go-back-N peer), with wrong keys, QPNs,
// addresses, opcodes (every opcode), lengths, ECN marks, corrupted bytes;
// ACKs and NAKs for what we sent, READ responses, CNPs - and must end every
// step with the same QP state (Engine::qp_state_text), counters, completions,
// emitted frames and memory, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sanitized.h"
#include "scripted_peer.h"
#include "tita/engine/engine.h"
#include "tita/wire/frame.h"
#include "tita/wire/psn.h"

namespace tita::engine::test {
namespace {

using wire::Opcode;

constexpr uint64_t kRwIova = 0x1000'0000;  // remote read/write region, the same in both engines
constexpr uint64_t kRoIova = 0x2000'0000;  // remote read only
constexpr uint32_t kRwBytes = 1 << 16;
constexpr uint32_t kRoBytes = 4096;
constexpr uint32_t kMtu = 1024;
constexpr int kQps = 2;  // go-back-N, selective repeat
constexpr uint8_t kPeerMac[6] = {0x02, 0, 0, 0, 0, 0x99};
const wire::Gid kPeerGid = wire::Gid::from_ipv4(0x0a000099);
constexpr uint32_t kPeerQpn = 0x100;
constexpr uint32_t kRqPsn = 0xfffff0;  // the peer's requests wrap the PSN space early
constexpr uint32_t kSqPsn = 100;

struct Side {
  CaptureIo io;
  std::unique_ptr<Engine> eng;
  std::vector<uint8_t> rw, ro, local;
  MrInfo rw_mr, ro_mr, local_mr;
  uint32_t pd = 0, cq = 0, qpn[kQps] = {};

  void open(EngineConfig cfg, bool fast, bool hpcc) {
    cfg.fast_path = fast;
    eng = std::make_unique<Engine>(cfg, &io);
    pd = eng->alloc_pd();
    rw.assign(kRwBytes, 0x5a);
    ro.assign(kRoBytes, 0x11);
    local.assign(kRwBytes, 0x22);
    for (size_t i = 0; i < local.size(); ++i) local[i] = static_cast<uint8_t>(i * 7);
    ASSERT_EQ(eng->reg_mr(pd, rw.data(), rw.size(), kRwIova,
                          kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic, &rw_mr),
              0);
    ASSERT_EQ(eng->reg_mr(pd, ro.data(), ro.size(), kRoIova, kAccessRemoteRead, &ro_mr), 0);
    ASSERT_EQ(eng->reg_mr(pd, local.data(), local.size(), kAccessLocalWrite, &local_mr), 0);
    ASSERT_EQ(eng->create_cq(4096, &cq), 0);
    for (int q = 0; q < kQps; ++q) {
      ASSERT_EQ(eng->create_qp(pd, {.send_cq = cq, .recv_cq = cq, .max_send_wr = 64, .max_recv_wr = 64}, &qpn[q]),
                0);
      connect(q, hpcc);
    }
  }

  // RESET (when it is not fresh) and RTS again, with receives posted.
  void connect(int q, bool hpcc) {
    {
      QpAttr a;
      a.qp_access_flags = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
      a.path_mtu = kMtu;
      a.dest_qp_num = kPeerQpn + q;
      a.rq_psn = kRqPsn;
      a.ah_attr.dgid = kPeerGid;
      std::memcpy(a.ah_attr.dmac, kPeerMac, 6);
      a.recovery = q == 1 ? Recovery::kSelectiveRepeat : Recovery::kGoBackN;
      a.max_dest_rd_atomic = 4;
      a.max_rd_atomic = 4;
      a.sq_psn = kSqPsn;
      a.timeout = 10;
      a.retry_cnt = 7;
      a.rnr_retry = 7;
      std::string err;
      QpAttr reset;
      reset.qp_state = QpState::kReset;
      ASSERT_EQ(eng->modify_qp(qpn[q], reset, kQpState, &err), 0) << err;
      ASSERT_EQ(connect_rc(*eng, qpn[q], a, &err), 0) << err;
      if (hpcc) {
        ASSERT_EQ(eng->set_cc(qpn[q], "hpcc", {}, &err), 0) << err;
      }
      for (int k = 0; k < 16; ++k) post_recv(q, k);
    }
  }

  void post_recv(int q, int k) {
    Sge sge{reinterpret_cast<uint64_t>(local.data()) + (k % 16) * 2048, 2048, local_mr.lkey};
    RecvWr wr;
    wr.wr_id = 1000 + k;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    const RecvWr* bad = nullptr;
    eng->post_recv(qpn[q], &wr, &bad);
  }

  void post_write(int q, uint64_t wr_id, uint32_t len, uint32_t off) {
    Sge sge{reinterpret_cast<uint64_t>(local.data()) + off, len, local_mr.lkey};
    SendWr wr;
    wr.wr_id = wr_id;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = kSendSignaled;
    wr.rdma.remote_addr = 0x7000'0000;
    wr.rdma.rkey = 0x4242;
    const SendWr* bad = nullptr;
    eng->post_send(qpn[q], &wr, &bad);
  }
};

// A frame of the scripted peer, kept so that it can be sent again.
struct PeerFrame {
  wire::FrameFields f;
  std::vector<uint8_t> payload;
  bool tita = false;
};

class FastPathDiff {
 public:
  FastPathDiff(uint64_t seed) : rng_(seed) {
    EngineConfig cfg;
    cfg.verify_icrc = rng_() % 2 == 0;  // off: corrupted frames reach the checks past the ICRC
    cfg.telemetry = rng_() % 4 != 0;
    if (rng_() % 3 == 0) cfg.ack_req_every = 1;
    if (rng_() % 3 == 0) cfg.np.ack_echo = true;
    cfg.ack_unsolicited = 1 + static_cast<uint32_t>(rng_() % 16);
    cfg.control_ring = rng_() % 4 == 0 ? 4 : 4096;
    cfg.ooo_slots = 64;
    cfg.sr_window = 64;
    const bool hpcc = rng_() % 2 == 0;
    hpcc_ = hpcc;
    fast_.open(cfg, true, hpcc);
    slow_.open(cfg, false, hpcc);
    for (int q = 0; q < kQps; ++q) next_psn_[q] = kRqPsn;
  }

  // One random step, then the comparison; false once a difference was found.
  bool step(int i) {
    const uint32_t r = rng_() % 100;
    const int q = static_cast<int>(rng_() % kQps);
    // A QP that a fatal NAK (ours or the peer's) stopped starts over, with a
    // new peer, so that every run keeps the common case going.
    QpInfo info;
    slow_.eng->qp_info(slow_.qpn[q], &info);
    if (info.state == QpState::kError && rng_() % 8 == 0) {
      for (Side* s : {&fast_, &slow_}) s->connect(q, hpcc_);
      next_psn_[q] = kRqPsn;
      pending_[q].clear();
      history_[q].clear();
      ++restarts_;
    }
    if (r < 60) {
      request(q);
    } else if (r < 78) {
      ack(q);
    } else if (r < 82) {
      other_response(q);
    } else if (r < 88) {
      const uint32_t len = static_cast<uint32_t>(rng_() % 5000);
      const uint32_t off = static_cast<uint32_t>(rng_() % (kRwBytes - 5000));
      ++wr_id_;
      for (Side* s : {&fast_, &slow_}) s->post_write(q, wr_id_, len, off);
    } else if (r < 92) {
      const int k = static_cast<int>(rng_() % 16);
      for (Side* s : {&fast_, &slow_}) s->post_recv(q, k);
    } else {
      now_ += rng_() % 200'000;  // timers
    }
    now_ += rng_() % 3000;
    for (Side* s : {&fast_, &slow_}) s->eng->poll(now_);
    return compare(i);
  }

  uint64_t fast_frames() const { return fast_.eng->counters().rx_fast; }
  const std::string& why() const { return why_; }

 private:
  // The peer's next request of QP q: a frame of the message under way, one
  // sent before (a duplicate, or a go-back-N resend from what the responder
  // expects), or a new message; then perhaps damaged.
  void request(int q) {
    std::deque<PeerFrame>& pending = pending_[q];
    if (pending.empty()) {
      if (rng_() % 3 == 0) resend_from_expected(q);
      if (pending.empty()) new_message(q);
    }
    const uint32_t r = rng_() % 100;
    PeerFrame pf;
    if (r < 4 && pending.size() > 1) {  // reordered: the next but one first
      pf = pending[1];
      pending.erase(pending.begin() + 1);
    } else if (r < 7) {  // lost
      pending.pop_front();
      return;
    } else if (r < 10 && !history_[q].empty()) {  // an old one again
      auto it = history_[q].begin();
      std::advance(it, rng_() % history_[q].size());
      pf = it->second;
    } else {
      pf = pending.front();
      pending.pop_front();
    }
    deliver(q, pf, true);
  }

  void new_message(int q) {
    const uint32_t r = rng_() % 100;
    const uint32_t psn = next_psn_[q];
    auto base = [&](Opcode op, uint32_t p) {
      PeerFrame pf;
      pf.tita = q == 1 || rng_() % 8 == 0;
      wire::FrameFields& f = pf.f;
      std::memcpy(f.src_mac, kPeerMac, 6);
      std::memcpy(f.dst_mac, fast_.eng->config().mac, 6);
      f.src_gid = kPeerGid;
      f.dst_gid = fast_.eng->config().gid;
      f.dest_qp = fast_.qpn[q];
      f.opcode = op;
      f.psn = p & wire::kPsnMask;
      f.ack_req = rng_() % 4 == 0;
      f.udp_src_port = static_cast<uint16_t>(0xc000 + q);
      return pf;
    };
    auto payload = [&](uint32_t n) {
      std::vector<uint8_t> b(n);
      for (auto& x : b) x = static_cast<uint8_t>(rng_());
      return b;
    };
    std::vector<PeerFrame> msg;
    if (r < 75) {  // a WRITE of 1-4 packets, with or without immediate
      const uint32_t npkts = 1 + static_cast<uint32_t>(rng_() % 4);
      uint32_t last = static_cast<uint32_t>(rng_() % (kMtu + 1));
      if (npkts > 1 && last == 0) last = 1;
      const uint32_t total = (npkts - 1) * kMtu + last;
      const bool imm = rng_() % 10 == 0;
      uint64_t va = kRwIova + rng_() % (kRwBytes - total + 1);
      uint32_t rkey = fast_.rw_mr.rkey;
      const uint32_t bad = static_cast<uint32_t>(rng_() % 40);
      if (bad == 0) rkey ^= 0x100;                        // a wrong key
      if (bad == 1) rkey = fast_.ro_mr.rkey;              // no remote write
      if (bad == 2) va = kRwIova + kRwBytes - total / 2;  // past the end
      if (bad == 3) va = kRwIova - 8;                     // before the start
      for (uint32_t k = 0; k < npkts; ++k) {
        const bool first = k == 0, end = k + 1 == npkts;
        Opcode op = npkts == 1 ? (imm ? Opcode::kWriteOnlyImm : Opcode::kWriteOnly)
                    : first    ? Opcode::kWriteFirst
                    : end      ? (imm ? Opcode::kWriteLastImm : Opcode::kWriteLast)
                               : Opcode::kWriteMiddle;
        PeerFrame pf = base(op, psn + k);
        pf.f.va = va;
        pf.f.rkey = rkey;
        pf.f.dma_len = total;
        pf.f.imm = 0xabc;
        pf.f.ack_req = pf.f.ack_req || end;
        uint32_t n = end ? last : kMtu;
        if (bad == 4 && end) n = n > 0 ? n - 1 : 1;  // a length that does not add up
        if (bad == 5 && !end) n = kMtu - 4;          // a short middle
        pf.payload = payload(n);
        msg.push_back(std::move(pf));
      }
    } else if (r < 85) {  // a SEND of 1-2 packets
      const uint32_t npkts = 1 + static_cast<uint32_t>(rng_() % 2);
      for (uint32_t k = 0; k < npkts; ++k) {
        const bool end = k + 1 == npkts;
        Opcode op = npkts == 1 ? Opcode::kSendOnly : k == 0 ? Opcode::kSendFirst : Opcode::kSendLast;
        PeerFrame pf = base(op, psn + k);
        pf.payload = payload(end ? static_cast<uint32_t>(rng_() % 900) : kMtu);
        msg.push_back(std::move(pf));
      }
    } else if (r < 93) {  // a READ (its responses take PSNs)
      const uint32_t len = static_cast<uint32_t>(rng_() % 3000);
      PeerFrame pf = base(Opcode::kReadRequest, psn);
      pf.f.va = rng_() % 2 ? kRwIova + rng_() % (kRwBytes - len) : kRoIova;
      pf.f.rkey = rng_() % 2 ? fast_.rw_mr.rkey : fast_.ro_mr.rkey;
      pf.f.dma_len = len;
      msg.push_back(std::move(pf));
      next_psn_[q] = psn + (len + kMtu - 1) / kMtu;  // at least one, below
      if (len == 0) next_psn_[q] = psn + 1;
    } else {  // an atomic
      PeerFrame pf = base(rng_() % 2 ? Opcode::kFetchAdd : Opcode::kCompareSwap, psn);
      pf.f.va = kRwIova + (rng_() % 64) * 8;
      pf.f.rkey = fast_.rw_mr.rkey;
      pf.f.swap_add = rng_();
      pf.f.compare = rng_() % 2 ? 0x5a5a5a5a5a5a5a5aull : 0;
      msg.push_back(std::move(pf));
    }
    if (msg.front().f.opcode != Opcode::kReadRequest) next_psn_[q] = psn + static_cast<uint32_t>(msg.size());
    for (PeerFrame& pf : msg) {
      history_[q][pf.f.psn] = pf;
      pending_[q].push_back(std::move(pf));
    }
  }

  // A go-back-N peer after a NAK or timeout: everything from what the
  // responder expects (the reference engine's epsn), as sent the first time.
  void resend_from_expected(int q) {
    QpInfo info;
    slow_.eng->qp_info(slow_.qpn[q], &info);
    for (uint32_t p = info.epsn, n = 0; n < 16; p = (p + 1) & wire::kPsnMask, ++n) {
      auto it = history_[q].find(p);
      if (it == history_[q].end()) break;
      pending_[q].push_back(it->second);
    }
  }

  // An ACK or NAK of what QP q sent, around snd_una .. snd_nxt.
  void ack(int q) {
    QpInfo info;
    slow_.eng->qp_info(slow_.qpn[q], &info);
    const uint32_t span = (info.snd_nxt - info.snd_una) & wire::kPsnMask;
    const uint32_t psn = (info.snd_una - 2 + static_cast<uint32_t>(rng_() % (span + 4))) & wire::kPsnMask;
    PeerFrame pf;
    pf.tita = q == 1 || rng_() % 4 == 0;
    wire::FrameFields& f = pf.f;
    std::memcpy(f.src_mac, kPeerMac, 6);
    std::memcpy(f.dst_mac, fast_.eng->config().mac, 6);
    f.src_gid = kPeerGid;
    f.dst_gid = fast_.eng->config().gid;
    f.dest_qp = fast_.qpn[q];
    f.opcode = Opcode::kAck;
    f.psn = psn;
    f.ecn = wire::kEcnNotEct;
    f.msn = static_cast<uint32_t>(rng_() % 64);
    const uint32_t r = rng_() % 100;
    f.syndrome = r < 80   ? wire::aeth::ack()
                 : r < 90 ? wire::aeth::nak(wire::aeth::kNakPsnSequenceError)
                 : r < 95 ? wire::aeth::rnr_nak(static_cast<uint8_t>(rng_() % 8))
                          : wire::aeth::nak(static_cast<uint8_t>(rng_() % 4));
    deliver(q, pf, false);
  }

  // READ responses, atomic ACKs and CNPs, for coverage of the general path.
  void other_response(int q) {
    QpInfo info;
    slow_.eng->qp_info(slow_.qpn[q], &info);
    static constexpr Opcode kOps[] = {Opcode::kReadResponseFirst, Opcode::kReadResponseMiddle,
                                      Opcode::kReadResponseLast, Opcode::kReadResponseOnly, Opcode::kAtomicAck,
                                      Opcode::kCnp};
    PeerFrame pf;
    wire::FrameFields& f = pf.f;
    std::memcpy(f.src_mac, kPeerMac, 6);
    std::memcpy(f.dst_mac, fast_.eng->config().mac, 6);
    f.src_gid = kPeerGid;
    f.dst_gid = fast_.eng->config().gid;
    f.dest_qp = fast_.qpn[q];
    f.opcode = kOps[rng_() % std::size(kOps)];
    f.psn = (info.snd_una + static_cast<uint32_t>(rng_() % 4)) & wire::kPsnMask;
    if (wire::opcode_info(f.opcode).has(wire::kHasPayload)) pf.payload.assign(rng_() % 2 ? kMtu : 100, 0x77);
    deliver(q, pf, false);
  }

  // Builds the frame, perhaps damaged, and gives it to both engines.
  void deliver(int q, PeerFrame pf, bool request) {
    wire::FrameFields& f = pf.f;
    const uint32_t r = rng_() % 200;
    if (r == 0) f.dest_qp = fast_.qpn[1 - q];                  // the other QP
    if (r == 1) f.dest_qp = 0x123456;                          // no such QP
    if (r == 2) f.src_gid = wire::Gid::from_ipv4(0x0a000098);  // a stranger
    if (r == 3) f.dst_mac[5] ^= 1;                             // not our MAC
    if (r == 4) f.pkey = 0x7fff;
    if (r == 5) f.dst_gid = wire::Gid::from_ipv4(0x0a000002);  // not our address
    if (r == 6) f.vlan = true, f.vid = 5;
    if (r == 7) f.src_mac[0] ^= 2;                             // another source MAC: taken
    if (r == 8) f.ttl = 60;                                    // hops
    if (r >= 9 && r < 13) f.ecn = wire::kEcnCe;
    if (r == 13) f.src_gid = wire::Gid::from_raw(kPeerGid.raw), f.src_gid.raw[0] = 0xfe;  // IPv6
    if (r == 14) f.udp_src_port ^= 0x10;
    if (r == 15 && request) f.opcode = static_cast<Opcode>(rng_() % 0x15);  // another opcode, kept sizes
    const uint32_t n = static_cast<uint32_t>(pf.payload.size());
    const wire::Segment seg{pf.payload.data(), n};
    std::vector<uint8_t> b(n + 256);
    const int len = wire::build_frame(f, {&seg, n ? 1u : 0u}, b.data(), static_cast<uint32_t>(b.size()));
    if (len <= 0) return;  // a field the builder refuses (an opcode without a payload, say)
    b.resize(static_cast<size_t>(len));
    if (pf.tita && fast_.eng->config().telemetry) {
      const size_t end = b.size();
      b.resize(end + wire::kMaxTelemetryBytes);
      const uint8_t flags = request ? wire::TelemetryHdr::kCollect : wire::TelemetryHdr::kEcho;
      b.resize(end + wire::telemetry_write(b.data() + end, flags, static_cast<uint32_t>(now_ - 5000),
                                           static_cast<uint8_t>(rng_() % 3)));
    }
    const uint32_t d = rng_() % 100;
    if (d == 0) b[rng_() % b.size()] ^= static_cast<uint8_t>(1 + rng_() % 255);  // a damaged byte
    if (d == 1) b.resize(rng_() % b.size());                                    // truncated
    if (d == 2 && b.size() > 42) b[42] = static_cast<uint8_t>(rng_());            // any opcode byte
    if (d == 3 && b.size() > 43) b[43] ^= 0x01;                                  // BTH version
    if (d == 4 && b.size() > 14) b[14] = 0x46;                                   // IPv4 options
    if (d == 5 && b.size() > 21) b[20] |= 0x20;                                  // a fragment
    if (d == 6 && b.size() > 17) b[17] ^= 4;                                     // IP length
    if (d == 7) b.push_back(0);                                                  // Ethernet padding
    for (Side* s : {&fast_, &slow_}) s->eng->receive(now_, b.data(), static_cast<uint32_t>(b.size()));
  }

  template <class T>
  static bool same_bytes(const T& a, const T& b) {
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  }

  bool compare(int i) {
    auto fail = [&](const std::string& what) {
      why_ = "step " + std::to_string(i) + ": " + what;
      return false;
    };
    EngineCounters a = fast_.eng->counters(), b = slow_.eng->counters();
    a.rx_fast = b.rx_fast = 0;
    if (!same_bytes(a, b)) return fail("engine counters differ");
    if (fast_.eng->next_wakeup_ns() != slow_.eng->next_wakeup_ns()) return fail("next wakeup differs");
    for (int q = 0; q < kQps; ++q) {
      const std::string sa = fast_.eng->qp_state_text(fast_.qpn[q]), sb = slow_.eng->qp_state_text(slow_.qpn[q]);
      if (sa != sb) return fail("QP " + std::to_string(q) + " state:\n  fast    " + sa + "\n  general " + sb);
      if (!same_bytes(*fast_.eng->qp_counters(fast_.qpn[q]), *slow_.eng->qp_counters(slow_.qpn[q]))) {
        return fail("QP " + std::to_string(q) + " counters differ");
      }
    }
    WorkCompletion wa[64], wb[64];
    for (;;) {
      const int na = fast_.eng->poll_cq(fast_.cq, 64, wa), nb = slow_.eng->poll_cq(slow_.cq, 64, wb);
      if (na != nb) return fail("completions: " + std::to_string(na) + " against " + std::to_string(nb));
      for (int k = 0; k < na; ++k) {
        const WorkCompletion &x = wa[k], &y = wb[k];
        if (x.wr_id != y.wr_id || x.status != y.status || x.opcode != y.opcode || x.with_imm != y.with_imm ||
            x.byte_len != y.byte_len || x.imm_data != y.imm_data || x.qp_num != y.qp_num) {
          auto text = [](const WorkCompletion& w) {
            return "wr_id " + std::to_string(w.wr_id) + " status " + std::to_string(static_cast<int>(w.status)) +
                   " opcode " + std::to_string(static_cast<int>(w.opcode)) + " len " + std::to_string(w.byte_len) +
                   " imm " + std::to_string(w.with_imm) + "/" + std::to_string(w.imm_data) + " qp " +
                   std::to_string(w.qp_num);
          };
          return fail("completion " + std::to_string(k) + " differs: " + text(x) + " against " + text(y));
        }
      }
      completions_ += static_cast<uint64_t>(na);
      if (na <= 0) break;
    }
    if (fast_.io.frames != slow_.io.frames) {
      return fail("emitted frames differ (" + std::to_string(fast_.io.frames.size()) + " against " +
                  std::to_string(slow_.io.frames.size()) + ")");
    }
    emitted_ += fast_.io.frames.size();
    fast_.io.frames.clear();
    slow_.io.frames.clear();
    if (fast_.rw != slow_.rw) undefined_bytes_ += settle_undefined();
    if (fast_.rw != slow_.rw || fast_.ro != slow_.ro || fast_.local != slow_.local) return fail("memory differs");
    return true;
  }

  // The one place the fast path may write what the general path does not: a
  // WRITE Middle or Last in order with a wrong ICRC, placed as it is checked,
  // lands in bytes the QP's WRITE has yet to deliver ([write_va, + remaining)),
  // undefined until the WRITE completes. Those bytes of the fast side are set
  // to the general side's; returns how many differed.
  uint64_t settle_undefined() {
    uint64_t n = 0;
    for (int q = 0; q < kQps; ++q) {
      const std::string st = fast_.eng->qp_state_text(fast_.qpn[q]);
      auto field = [&](const std::string& name) {
        const size_t at = st.find(name + "=");
        return at == std::string::npos ? uint64_t{0} : std::stoull(st.substr(at + name.size() + 1));
      };
      const uint64_t va = field("resp.write_va"), left = field("resp.write_remaining");
      if (left == 0 || va < kRwIova || va - kRwIova >= kRwBytes) continue;
      const size_t from = va - kRwIova, to = std::min<size_t>(kRwBytes, from + left);
      for (size_t i = from; i < to; ++i) {
        n += fast_.rw[i] != slow_.rw[i];
        fast_.rw[i] = slow_.rw[i];
      }
    }
    return n;
  }

  std::mt19937_64 rng_;
  Side fast_, slow_;
  uint64_t now_ = 1'000'000;
  uint64_t wr_id_ = 0;
  uint32_t next_psn_[kQps] = {};
  std::deque<PeerFrame> pending_[kQps];
  std::map<uint32_t, PeerFrame> history_[kQps];
  std::string why_;
  bool hpcc_ = false;

 public:
  uint64_t restarts_ = 0;
  uint64_t completions_ = 0;
  uint64_t emitted_ = 0;
  uint64_t undefined_bytes_ = 0;
};

TEST(FastPath, SameOutcomeAsTheGeneralPath) {
  uint64_t fast = 0, completions = 0, emitted = 0, restarts = 0, undefined = 0;
  constexpr int kSeeds = tita::test::rounds(200, 8), kSteps = 1500;  // 25 seeds under the sanitizers
  for (int seed = 1; seed <= kSeeds; ++seed) {
    FastPathDiff d(static_cast<uint64_t>(seed));
    for (int i = 0; i < kSteps; ++i) {
      ASSERT_TRUE(d.step(i)) << "seed " << seed << ", " << d.why();
    }
    fast += d.fast_frames();
    completions += d.completions_;
    emitted += d.emitted_;
    restarts += d.restarts_;
    undefined += d.undefined_bytes_;
  }
  // The fast path was taken, and the runs did something.
  EXPECT_GT(fast, uint64_t{kSeeds} * kSteps / 10);
  EXPECT_GT(completions, uint64_t{kSeeds} * 10);
  EXPECT_GT(emitted, uint64_t{kSeeds} * 100);
  std::printf("%d seeds x %d steps: %llu frames took the fast path, %llu completions, %llu frames emitted, %llu QPs "
              "started over, %llu bytes of damaged WRITEs placed where their WRITE had yet to write\n",
              kSeeds, kSteps, static_cast<unsigned long long>(fast), static_cast<unsigned long long>(completions),
              static_cast<unsigned long long>(emitted), static_cast<unsigned long long>(restarts),
              static_cast<unsigned long long>(undefined));
}

}  // namespace
}  // namespace tita::engine::test
