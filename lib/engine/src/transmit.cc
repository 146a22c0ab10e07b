// Data frames out: a QP's path fields (with its dodge value), and one data
// frame built into the transmit burst, or onto the internal loop.
#include <cstring>

#include "engine_impl.h"

namespace tita::engine {

wire::PathFields Engine::Impl::path_fields(const Qp& qp, uint16_t dodge) const {
  wire::PathFields f;
  const AhAttr& ah = qp.cold.attr.ah_attr;
  std::memcpy(f.dst_mac, ah.dmac, 6);
  std::memcpy(f.src_mac, cfg.mac, 6);
  f.vlan = ah.vlan;
  f.pcp = ah.pcp;
  f.vid = ah.vid;
  f.src_gid = cfg.gid;
  f.dst_gid = ah.dgid;
  f.dscp = ah.traffic_class >> 2;
  f.ttl = cfg.initial_ttl;
  f.flow_label = qp.cold.udp_sport;
  f.udp_src_port = qp.cold.udp_sport;
  f.dest_qp = qp.cold.attr.dest_qp_num;
  if (qp.cold.path == nullptr) return f;
  const PathState& p = *qp.cold.path;
  if (p.cfg.field == wire::DodgeField::kUdpSport) {
    f.udp_src_port = wire::dodge_set(p.mask, qp.cold.udp_sport, dodge);
    f.flow_label = f.udp_src_port;  // IPv6 switches that hash the flow label move too
  } else if (p.cfg.field == wire::DodgeField::kDscp) {
    f.dscp = static_cast<uint8_t>(wire::dodge_set(p.mask, f.dscp, dodge));
  }
  return f;
}

uint32_t Engine::Impl::send_frame(Qp& qp, const wire::TransportFields& t, const wire::Segment* payload,
                                  uint32_t n_payload, uint32_t payload_len, bool phantom, bool collect,
                                  uint16_t udp_sport, uint64_t hold) {
  // READ responses answer the peer's requests: they follow its dodge value.
  const wire::Kind kind = wire::opcode_info(t.opcode).kind;
  const bool response = qp.cold.path && (kind == wire::Kind::kReadResponse || kind == wire::Kind::kAtomicAck);
  const wire::HeaderTemplate& hdr = response ? qp.cold.path->resp_hdr : qp.cold.hdr;
  const AhAttr& ah = qp.cold.attr.ah_attr;
  const FrameRoute route{
      .udp_sport = udp_sport, .priority = ah.vlan ? ah.pcp : uint8_t{0}, .loopback = qp.loopback, .hold = hold};
  return emit_frame(qp, hdr, route, t, payload, n_payload, payload_len, phantom, collect);
}

uint32_t Engine::Impl::emit_frame(Qp& qp, const wire::HeaderTemplate& hdr, const FrameRoute& route,
                                  const wire::TransportFields& t, const wire::Segment* payload, uint32_t n_payload,
                                  uint32_t payload_len, bool phantom, bool collect) {
  if (tx_count == kTxBurst) tx_flush();
  TxFrame& tx = tx_burst[tx_count];
  uint8_t* const tx_hdr = tx_scratch[tx_count].hdr;
  uint8_t* const tx_tail = tx_scratch[tx_count].tail;
  tx.hdr = tx_hdr;
  tx.hdr_len = hdr.write(t, payload_len, tx_hdr);
  // Per-frame fields, before the ICRC, which covers them.
  if (route.udp_sport != 0) [[unlikely]] set_udp_sport(hdr, tx_hdr, route.udp_sport);  // sprayed, UD
  if (route.dest_qp != FrameRoute::kTemplateQp) [[unlikely]] {  // UD: each WR names its QP
    reinterpret_cast<wire::Bth*>(tx_hdr + hdr.udp_offset() + sizeof(wire::UdpHdr))->dest_qp.set(route.dest_qp);
  }
  for (uint32_t i = 0; i < n_payload; ++i) tx.payload[i] = payload[i];
  tx.n_payload = n_payload;
  const uint32_t pad = wire::pad_bytes(payload_len);
  tx.icrc_pending = false;
  if (cfg.compute_icrc && !phantom) {
    if (host_sums_icrc && !route.loopback) {
      std::memset(tx_tail, 0, 8);  // the pad; the host fills the ICRC in as it copies
      tx.icrc_pending = true;
    } else {
      wire::finish_frame(tx_hdr, tx.hdr_len, {payload, n_payload}, tx_tail);
    }
  } else {
    std::memset(tx_tail, 0, 8);  // pad (up to 3) and ICRC left zero: receivers skip the check
  }
  tx.tail = tx_tail;
  tx.tail_len = pad + wire::kIcrcBytes;
  const uint32_t frame_len = tx.hdr_len + payload_len + tx.tail_len;
  if (collect && cfg.telemetry) {
    tx.tail_len += wire::telemetry_write(tx_tail + tx.tail_len, wire::TelemetryHdr::kCollect,
                                         static_cast<uint32_t>(now_ns));
  }
  tx.priority = route.priority;
  tx.qp_num = qp.qpn;
  tx.control = false;
  tx.transient = route.transient;
  tx.hold = route.hold;
  if (route.loopback) {
    // poll() makes room before a loopback QP's turn; lost only if an answer took it.
    // (The slot was scratch only: it stays free.)
    if (!loop_push(tx.hdr, tx.hdr_len, tx.payload, tx.n_payload, tx.tail, tx.tail_len)) ++counters.loopback_drops;
  } else {
    ++tx_count;
  }
  ++qp.cold.counters.tx_packets;
  return frame_len;
}

void TxFrame::copy_to(uint8_t* dst) const {
  std::memcpy(dst, hdr, hdr_len);
  uint8_t* p = dst + hdr_len;
  const uint32_t payload_bytes = payload_len();
  if (icrc_pending) {
    std::memcpy(p + payload_bytes, tail, tail_len);
    wire::finish_frame_copy(hdr, hdr_len, {payload, n_payload}, p, p + payload_bytes);
    return;
  }
  p = wire::gather_segments({payload, n_payload}, p);
  if (tail_len > 0) std::memcpy(p, tail, tail_len);  // control frames have none (tail == nullptr)
}

void TxFrame::finish_icrc(uint8_t* tail_copy) const {
  if (icrc_pending) wire::finish_frame(hdr, hdr_len, {payload, n_payload}, tail_copy);
}

}  // namespace tita::engine
