// The golden trace: one scripted ACK/CNP conversation with a sending QP, and the
// same algorithm fed the same events directly. A host test (ns-3 NIC, DPDK
// EngineHost) runs the engine against a peer that answers with answer_frames(),
// shows every frame the engine sends and receives to a Direct, and compares the
// engine's rate and window with the Direct's before every received frame: they
// must be identical, for the built-ins and for plug-ins alike.
//
// The direct side builds each AckSample from the ACK's fields by the definitions
// in cc/types.h (bytes from PSNs at the path MTU, RTT from the echoed timestamp,
// CE and INT from the ECHO trailer), not from the engine's code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "tita/cc/cc.h"
#include "tita/wire/frame.h"
#include "tita/wire/opcode.h"
#include "tita/wire/telemetry.h"

namespace tita::test::golden {

// The peer's answer to data packet `psn` whose telemetry carried `ts`: an ACK
// with an ECHO trailer (the timestamp, a CE count from the script, one INT hop
// from the script) and, for every 16th PSN, a CNP. `base` addresses the frames
// (MACs, GIDs, the engine's QP). Returns the number of frames (1 or 2).
inline int answer_frames(const wire::FrameFields& base, uint32_t psn, uint32_t ts, uint8_t (&out)[2][256],
                         uint32_t (&len)[2]) {
  wire::FrameFields f = base;
  f.opcode = wire::Opcode::kAck;
  f.psn = psn;
  f.syndrome = wire::aeth::ack();
  f.msn = psn + 1;
  uint32_t n = static_cast<uint32_t>(wire::build_frame(f, {}, out[0], sizeof out[0]));
  const uint8_t ce = psn % 7 == 3 ? 1 : 0;
  n += wire::telemetry_write(out[0] + n, wire::TelemetryHdr::kEcho, ts, ce, 1);
  out[0][n - 8 + 1] |= 1;  // one hop record
  auto* hop = reinterpret_cast<wire::TelemetryHop*>(out[0] + n);
  hop->rate_mbps.set(100'000);
  hop->ts_ns.set(ts + 2000 + psn * 84);
  hop->tx_bytes.set(psn * 1000 + (psn % 5) * 40);
  hop->qlen_bytes.set((psn % 40) * 1500);
  len[0] = n + static_cast<uint32_t>(sizeof(wire::TelemetryHop));
  if (psn % 16 != 5) return 1;
  wire::FrameFields c = f;
  c.opcode = wire::Opcode::kCnp;
  c.becn = true;
  c.psn = 0;
  c.dscp = 48;
  len[1] = static_cast<uint32_t>(wire::build_frame(c, {}, out[1], sizeof out[1]));
  return 2;
}

// A request that carries data (SEND, WRITE): what the sender's CC counts.
inline bool is_data(uint8_t opcode) {
  const wire::OpcodeInfo& info = wire::opcode_info(opcode);
  return info.has(wire::kHasPayload) && info.is_request();
}

class Direct {
 public:
  // -ENOENT / -EINVAL and *err as cc::Params::create does.
  int init(std::string_view cc, const cc::FlowConfig& link, uint64_t total_bytes, uint32_t mtu, std::string* err) {
    total_bytes_ = total_bytes;
    mtu_ = mtu;
    if (int rc = cc::Params::create(cc, link, &params_, err); rc != 0) return rc;
    flow_.init(params_, link, 0);
    return 0;
  }

  // A frame the engine sent at now_ns.
  void sent(uint64_t now_ns, const uint8_t* frame, uint32_t len) {
    wire::Packet pkt;
    if (wire::parse(frame, len, &pkt, {.verify_icrc = false}) != wire::ParseError::kOk || !is_data(pkt.opcode())) {
      return;
    }
    flow_.on_send(now_ns, pkt.payload_len);
    sent_bytes_ = std::min(std::max<uint64_t>(sent_bytes_, uint64_t{pkt.psn() + 1} * mtu_), total_bytes_);
  }

  // A frame the engine receives at now_ns (call after compare()).
  void received(uint64_t now_ns, const uint8_t* frame, uint32_t len) {
    wire::Packet pkt;
    if (wire::parse(frame, len, &pkt, {.verify_icrc = false}) != wire::ParseError::kOk) return;
    if (pkt.opcode() == static_cast<uint8_t>(wire::Opcode::kCnp)) {
      ++cnps;
      flow_.on_cnp(now_ns);
      return;
    }
    if (pkt.opcode() != static_cast<uint8_t>(wire::Opcode::kAck)) return;
    const uint32_t psn = pkt.psn();
    if (psn + 1 <= next_unacked_) return;  // nothing new
    ++acks;
    cc::AckSample a;
    const uint64_t una = std::min<uint64_t>(uint64_t{psn + 1} * mtu_, total_bytes_);
    a.acked_bytes = una - acked_bytes_;
    a.acked_packets = psn + 1 - next_unacked_;
    acked_bytes_ = una;
    next_unacked_ = psn + 1;
    a.ack_seq_bytes = acked_bytes_;
    a.next_seq_bytes = sent_bytes_;
    a.inflight_bytes = sent_bytes_ - acked_bytes_;
    const wire::TelemetryHdr* t = pkt.telemetry();
    a.rtt_ns = static_cast<uint32_t>(now_ns) - t->ts_ns.get();
    a.ce_packets = t->ce_packets;
    a.n_hops = t->hops();
    a.int_partial = t->overflow() || t->path_hops > t->hops();
    const wire::TelemetryHop* h = wire::telemetry_hops(t);
    for (int i = 0; i < a.n_hops; ++i) {
      a.hops[i].rate_bps = uint64_t{h[i].rate_mbps.get()} * 1'000'000;
      a.hops[i].ts_ns = h[i].ts_ns.get();
      a.hops[i].tx_bytes = h[i].tx_bytes.get();
      a.hops[i].qlen_bytes = h[i].qlen_bytes.get();
    }
    flow_.on_ack(now_ns, a);
  }

  // The timer, where the host ran it: at time `at` if its deadline is at or before `due`.
  void timer(uint64_t due, uint64_t at) {
    if (flow_.next_timer_ns() <= due) flow_.on_timer(at);
  }

  // The engine's decisions against the direct ones.
  void compare(uint64_t engine_rate_bps, uint64_t engine_cwnd_bytes, const char* where, uint64_t now_ns) {
    ++compared;
    if (engine_rate_bps == flow_.rate_bps() && engine_cwnd_bytes == flow_.cwnd_bytes()) return;
    if (mismatches++ == 0) {
      first = std::string(where) + " at " + std::to_string(now_ns) + " ns: engine " + std::to_string(engine_rate_bps) +
              " b/s / " + std::to_string(engine_cwnd_bytes) + " B, direct " + std::to_string(flow_.rate_bps()) +
              " / " + std::to_string(flow_.cwnd_bytes());
    }
  }

  uint64_t rate_bps() const { return flow_.rate_bps(); }

  uint32_t acks = 0;
  uint32_t cnps = 0;
  uint32_t compared = 0;
  uint32_t mismatches = 0;
  std::string first;  // the first mismatch, described

 private:
  cc::Params params_;
  cc::Flow flow_;
  uint64_t total_bytes_ = 0;
  uint32_t mtu_ = 1024;
  uint64_t sent_bytes_ = 0;   // snd_max position
  uint64_t acked_bytes_ = 0;  // snd_una position
  uint32_t next_unacked_ = 0;  // PSN
};

}  // namespace tita::test::golden
