// CM MADs field by field: offsets are into the message (after the 24-byte
// MAD header), as IBA's tables give them; a field of `bits` bits at (byte,
// bit) starts `bit` bits below the byte's most significant bit.
#include "tita/wire/cm.h"

#include <algorithm>
#include <cstring>

namespace tita::wire::cm {
namespace {

constexpr size_t H = kMadHeaderBytes;

uint64_t load(const uint8_t* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}
void store(uint8_t* p, size_t bytes, uint64_t v) {
  for (size_t i = bytes; i-- > 0;) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

// A field of `bits` bits starting `bit` bits into message byte `off`; it
// fits in the whole bytes it touches.
uint64_t get(const uint8_t* mad, size_t off, unsigned bit, unsigned bits) {
  const size_t bytes = (bit + bits + 7) / 8;
  const unsigned shift = static_cast<unsigned>(bytes * 8) - bit - bits;
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  return (load(mad + H + off, bytes) >> shift) & mask;
}
void put(uint8_t* mad, size_t off, unsigned bit, unsigned bits, uint64_t v) {
  const size_t bytes = (bit + bits + 7) / 8;
  const unsigned shift = static_cast<unsigned>(bytes * 8) - bit - bits;
  const uint64_t mask = (bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1) << shift;
  const uint64_t old = load(mad + H + off, bytes);
  store(mad + H + off, bytes, (old & ~mask) | ((v << shift) & mask));
}
uint64_t get(const uint8_t* mad, size_t off, unsigned bits) { return get(mad, off, 0, bits); }
void put(uint8_t* mad, size_t off, unsigned bits, uint64_t v) { put(mad, off, 0, bits, v); }

void header(uint8_t* mad, Attr attr, uint64_t tid) {
  std::memset(mad, 0, kMadBytes);
  mad[0] = kBaseVersion;
  mad[1] = kMgmtClassCm;
  mad[2] = kClassVersion;
  mad[3] = kMethodSend;
  store(mad + 8, 8, tid);
  store(mad + 16, 2, static_cast<uint16_t>(attr));
}

// Where each message's private data starts, and its room.
struct Priv {
  size_t off;
  size_t len;
};
Priv priv_of(Attr a) {
  switch (a) {
    case Attr::kReq: return {140, kReqPrivate};
    case Attr::kMra: return {10, kMraPrivate};
    case Attr::kRej: return {84, kRejPrivate};
    case Attr::kRep: return {36, kRepPrivate};
    case Attr::kRtu: return {8, kRtuPrivate};
    case Attr::kDreq: return {12, kDreqPrivate};
    case Attr::kDrep: return {8, kDrepPrivate};
    case Attr::kSidrReq: return {16, kSidrReqPrivate};
    case Attr::kSidrRep: return {96, kSidrRepPrivate};
    default: return {0, 0};
  }
}

}  // namespace

bool parse_header(const uint8_t* mad, size_t len, MadHeader* h) {
  if (len < kMadBytes || mad[1] != kMgmtClassCm || mad[2] != kClassVersion) return false;
  h->base_version = mad[0];
  h->mgmt_class = mad[1];
  h->class_version = mad[2];
  h->method = mad[3];
  h->status = static_cast<uint16_t>(load(mad + 4, 2));
  h->class_specific = static_cast<uint16_t>(load(mad + 6, 2));
  h->tid = load(mad + 8, 8);
  h->attr = static_cast<Attr>(load(mad + 16, 2));
  h->attr_mod = static_cast<uint32_t>(load(mad + 20, 4));
  return true;
}

const uint8_t* private_data(Attr attr, const uint8_t* mad, size_t* len) {
  const Priv p = priv_of(attr);
  *len = p.len;
  return mad + H + p.off;
}

// ---------------------------------------------------------------- REQ (table 106)

void parse(const uint8_t* mad, Req* m) {
  m->local_comm_id = static_cast<uint32_t>(get(mad, 0, 32));
  m->service_id = get(mad, 8, 64);
  m->local_ca_guid = get(mad, 16, 64);
  m->local_qkey = static_cast<uint32_t>(get(mad, 28, 32));
  m->local_qpn = static_cast<uint32_t>(get(mad, 32, 24));
  m->responder_resources = static_cast<uint8_t>(get(mad, 35, 8));
  m->initiator_depth = static_cast<uint8_t>(get(mad, 39, 8));
  m->remote_cm_response_timeout = static_cast<uint8_t>(get(mad, 43, 5));
  m->transport_service = static_cast<uint8_t>(get(mad, 43, 5, 2));
  m->end_to_end_flow_control = get(mad, 43, 7, 1) != 0;
  m->starting_psn = static_cast<uint32_t>(get(mad, 44, 24));
  m->local_cm_response_timeout = static_cast<uint8_t>(get(mad, 47, 5));
  m->retry_count = static_cast<uint8_t>(get(mad, 47, 5, 3));
  m->pkey = static_cast<uint16_t>(get(mad, 48, 16));
  m->path_mtu = static_cast<uint8_t>(get(mad, 50, 4));
  m->rnr_retry_count = static_cast<uint8_t>(get(mad, 50, 5, 3));
  m->max_cm_retries = static_cast<uint8_t>(get(mad, 51, 4));
  m->srq = get(mad, 51, 4, 1) != 0;
  m->primary_local_lid = static_cast<uint16_t>(get(mad, 52, 16));
  m->primary_remote_lid = static_cast<uint16_t>(get(mad, 54, 16));
  m->primary_local_gid = Gid::from_raw(mad + H + 56);
  m->primary_remote_gid = Gid::from_raw(mad + H + 72);
  m->flow_label = static_cast<uint32_t>(get(mad, 88, 20));
  m->packet_rate = static_cast<uint8_t>(get(mad, 91, 2, 6));
  m->traffic_class = static_cast<uint8_t>(get(mad, 92, 8));
  m->hop_limit = static_cast<uint8_t>(get(mad, 93, 8));
  m->sl = static_cast<uint8_t>(get(mad, 94, 4));
  m->subnet_local = get(mad, 94, 4, 1) != 0;
  m->local_ack_timeout = static_cast<uint8_t>(get(mad, 95, 5));
  std::memcpy(m->private_data, mad + H + 140, kReqPrivate);
}

void build(const Req& m, uint64_t tid, uint8_t* mad) {
  header(mad, Attr::kReq, tid);
  put(mad, 0, 32, m.local_comm_id);
  put(mad, 8, 64, m.service_id);
  put(mad, 16, 64, m.local_ca_guid);
  put(mad, 28, 32, m.local_qkey);
  put(mad, 32, 24, m.local_qpn);
  put(mad, 35, 8, m.responder_resources);
  put(mad, 39, 8, m.initiator_depth);
  put(mad, 43, 5, m.remote_cm_response_timeout);
  put(mad, 43, 5, 2, m.transport_service);
  put(mad, 43, 7, 1, m.end_to_end_flow_control);
  put(mad, 44, 24, m.starting_psn);
  put(mad, 47, 5, m.local_cm_response_timeout);
  put(mad, 47, 5, 3, m.retry_count);
  put(mad, 48, 16, m.pkey);
  put(mad, 50, 4, m.path_mtu);
  put(mad, 50, 5, 3, m.rnr_retry_count);
  put(mad, 51, 4, m.max_cm_retries);
  put(mad, 51, 4, 1, m.srq);
  put(mad, 52, 16, m.primary_local_lid);
  put(mad, 54, 16, m.primary_remote_lid);
  std::memcpy(mad + H + 56, m.primary_local_gid.raw, 16);
  std::memcpy(mad + H + 72, m.primary_remote_gid.raw, 16);
  put(mad, 88, 20, m.flow_label);
  put(mad, 91, 2, 6, m.packet_rate);
  put(mad, 92, 8, m.traffic_class);
  put(mad, 93, 8, m.hop_limit);
  put(mad, 94, 4, m.sl);
  put(mad, 94, 4, 1, m.subnet_local);
  put(mad, 95, 5, m.local_ack_timeout);
  std::memcpy(mad + H + 140, m.private_data, kReqPrivate);
}

// ---------------------------------------------------------------- REP (table 110)

void parse(const uint8_t* mad, Rep* m) {
  m->local_comm_id = static_cast<uint32_t>(get(mad, 0, 32));
  m->remote_comm_id = static_cast<uint32_t>(get(mad, 4, 32));
  m->local_qkey = static_cast<uint32_t>(get(mad, 8, 32));
  m->local_qpn = static_cast<uint32_t>(get(mad, 12, 24));
  m->starting_psn = static_cast<uint32_t>(get(mad, 20, 24));
  m->responder_resources = static_cast<uint8_t>(get(mad, 24, 8));
  m->initiator_depth = static_cast<uint8_t>(get(mad, 25, 8));
  m->target_ack_delay = static_cast<uint8_t>(get(mad, 26, 5));
  m->failover_accepted = static_cast<uint8_t>(get(mad, 26, 5, 2));
  m->end_to_end_flow_control = get(mad, 26, 7, 1) != 0;
  m->rnr_retry_count = static_cast<uint8_t>(get(mad, 27, 3));
  m->srq = get(mad, 27, 3, 1) != 0;
  m->local_ca_guid = get(mad, 28, 64);
  std::memcpy(m->private_data, mad + H + 36, kRepPrivate);
}

void build(const Rep& m, uint64_t tid, uint8_t* mad) {
  header(mad, Attr::kRep, tid);
  put(mad, 0, 32, m.local_comm_id);
  put(mad, 4, 32, m.remote_comm_id);
  put(mad, 8, 32, m.local_qkey);
  put(mad, 12, 24, m.local_qpn);
  put(mad, 20, 24, m.starting_psn);
  put(mad, 24, 8, m.responder_resources);
  put(mad, 25, 8, m.initiator_depth);
  put(mad, 26, 5, m.target_ack_delay);
  put(mad, 26, 5, 2, m.failover_accepted);
  put(mad, 26, 7, 1, m.end_to_end_flow_control);
  put(mad, 27, 3, m.rnr_retry_count);
  put(mad, 27, 3, 1, m.srq);
  put(mad, 28, 64, m.local_ca_guid);
  std::memcpy(mad + H + 36, m.private_data, kRepPrivate);
}

// ---------------------------------------------------------------- REJ (table 108), MRA (table 107)

void parse(const uint8_t* mad, Rej* m) {
  m->local_comm_id = static_cast<uint32_t>(get(mad, 0, 32));
  m->remote_comm_id = static_cast<uint32_t>(get(mad, 4, 32));
  m->rejected = static_cast<Which>(get(mad, 8, 2));
  m->ari_length = static_cast<uint8_t>(get(mad, 9, 7));
  m->reason = static_cast<uint16_t>(get(mad, 10, 16));
  std::memcpy(m->ari, mad + H + 12, sizeof m->ari);
  std::memcpy(m->private_data, mad + H + 84, kRejPrivate);
}

void build(const Rej& m, uint64_t tid, uint8_t* mad) {
  header(mad, Attr::kRej, tid);
  put(mad, 0, 32, m.local_comm_id);
  put(mad, 4, 32, m.remote_comm_id);
  put(mad, 8, 2, static_cast<uint8_t>(m.rejected));
  put(mad, 9, 7, std::min<uint8_t>(m.ari_length, sizeof m.ari));
  put(mad, 10, 16, m.reason);
  std::memcpy(mad + H + 12, m.ari, sizeof m.ari);
  std::memcpy(mad + H + 84, m.private_data, kRejPrivate);
}

void parse(const uint8_t* mad, Mra* m) {
  m->local_comm_id = static_cast<uint32_t>(get(mad, 0, 32));
  m->remote_comm_id = static_cast<uint32_t>(get(mad, 4, 32));
  m->mraed = static_cast<Which>(get(mad, 8, 2));
  m->service_timeout = static_cast<uint8_t>(get(mad, 9, 5));
}

void build(const Mra& m, uint64_t tid, uint8_t* mad) {
  header(mad, Attr::kMra, tid);
  put(mad, 0, 32, m.local_comm_id);
  put(mad, 4, 32, m.remote_comm_id);
  put(mad, 8, 2, static_cast<uint8_t>(m.mraed));
  put(mad, 9, 5, m.service_timeout);
}

// ---------------------------------------------------------------- RTU, DREQ, DREP (tables 111-113)

void parse(const uint8_t* mad, Short* m) {
  m->local_comm_id = static_cast<uint32_t>(get(mad, 0, 32));
  m->remote_comm_id = static_cast<uint32_t>(get(mad, 4, 32));
  const bool dreq = load(mad + 16, 2) == static_cast<uint16_t>(Attr::kDreq);
  m->remote_qpn = dreq ? static_cast<uint32_t>(get(mad, 8, 24)) : 0;
}

void build(Attr attr, const Short& m, uint64_t tid, uint8_t* mad, const uint8_t* priv, size_t priv_len) {
  header(mad, attr, tid);
  put(mad, 0, 32, m.local_comm_id);
  put(mad, 4, 32, m.remote_comm_id);
  if (attr == Attr::kDreq) put(mad, 8, 24, m.remote_qpn);
  const Priv p = priv_of(attr);
  if (priv != nullptr) std::memcpy(mad + H + p.off, priv, std::min(priv_len, p.len));
}

// ---------------------------------------------------------------- SIDR_REQ, SIDR_REP (IBA 12.11)

void parse(const uint8_t* mad, SidrReq* m) {
  m->request_id = static_cast<uint32_t>(get(mad, 0, 32));
  m->pkey = static_cast<uint16_t>(get(mad, 4, 16));
  m->service_id = get(mad, 8, 64);
  std::memcpy(m->private_data, mad + H + 16, kSidrReqPrivate);
}

void build(const SidrReq& m, uint64_t tid, uint8_t* mad) {
  header(mad, Attr::kSidrReq, tid);
  put(mad, 0, 32, m.request_id);
  put(mad, 4, 16, m.pkey);
  put(mad, 8, 64, m.service_id);
  std::memcpy(mad + H + 16, m.private_data, kSidrReqPrivate);
}

void parse(const uint8_t* mad, SidrRep* m) {
  m->request_id = static_cast<uint32_t>(get(mad, 0, 32));
  m->status = static_cast<SidrStatus>(get(mad, 4, 8));
  m->info_length = static_cast<uint8_t>(get(mad, 5, 8));
  m->qpn = static_cast<uint32_t>(get(mad, 8, 24));
  m->service_id = get(mad, 12, 64);
  m->qkey = static_cast<uint32_t>(get(mad, 20, 32));
  std::memcpy(m->info, mad + H + 24, sizeof m->info);
  std::memcpy(m->private_data, mad + H + 96, kSidrRepPrivate);
}

void build(const SidrRep& m, uint64_t tid, uint8_t* mad) {
  header(mad, Attr::kSidrRep, tid);
  put(mad, 0, 32, m.request_id);
  put(mad, 4, 8, static_cast<uint8_t>(m.status));
  put(mad, 5, 8, std::min<uint8_t>(m.info_length, sizeof m.info));
  put(mad, 8, 24, m.qpn);
  put(mad, 12, 64, m.service_id);
  put(mad, 20, 32, m.qkey);
  std::memcpy(mad + H + 24, m.info, sizeof m.info);
  std::memcpy(mad + H + 96, m.private_data, kSidrRepPrivate);
}

// ---------------------------------------------------------------- rdma_cm's header

bool parse_cma_header(const uint8_t* p, CmaHeader* h) {
  if (p[0] != 0) return false;  // cma_version
  const uint8_t ipv = p[1] >> 4;
  if (ipv != 4 && ipv != 6) return false;
  h->ip_version = ipv;
  h->src_port = static_cast<uint16_t>(load(p + 2, 2));
  if (ipv == 4) {
    h->src = Gid::from_ipv4_bytes(p + 4 + 12);
    h->dst = Gid::from_ipv4_bytes(p + 20 + 12);
  } else {
    h->src = Gid::from_raw(p + 4);
    h->dst = Gid::from_raw(p + 20);
  }
  return true;
}

void build_cma_header(const CmaHeader& h, uint8_t* p) {
  std::memset(p, 0, kCmaHeaderBytes);
  p[1] = static_cast<uint8_t>(h.ip_version << 4);
  store(p + 2, 2, h.src_port);
  if (h.ip_version == 4) {
    std::memcpy(p + 4 + 12, h.src.ipv4_bytes(), 4);
    std::memcpy(p + 20 + 12, h.dst.ipv4_bytes(), 4);
  } else {
    std::memcpy(p + 4, h.src.raw, 16);
    std::memcpy(p + 20, h.dst.raw, 16);
  }
}

}  // namespace tita::wire::cm
