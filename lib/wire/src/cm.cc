// CM MADs field by field: offsets are into the message (after the 24-byte
// MAD header), as IBA's tables give them; a field of `bits` bits at (byte,
// bit) starts `bit` bits below the byte's most significant bit. Each
// message's fields are listed once (Layout<M>), and parse and build walk it.
#include "tita/wire/cm.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <type_traits>

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
constexpr Priv priv_of(Attr a) {
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

// ---------------------------------------------------------------- the layouts
//
// Each message's fields once, as (byte, bit, width, member) or (byte, member)
// for whole bytes; parse and build both walk the same list.

namespace {

template <typename M, typename T>
struct Num {
  size_t off;
  unsigned bit;
  unsigned bits;
  T M::*member;
};
template <typename M, typename T>
struct Bytes {
  size_t off;
  T M::*member;
};

// (Written out for compilers without C++20's aggregate deduction: clang before 17.)
template <typename M, typename T>
Num(size_t, unsigned, unsigned, T M::*) -> Num<M, T>;
template <typename M, typename T>
Bytes(size_t, T M::*) -> Bytes<M, T>;

template <typename M, typename T>
void read(const uint8_t* mad, M* m, const Num<M, T>& f) {
  m->*f.member = static_cast<T>(get(mad, f.off, f.bit, f.bits));
}
template <typename M, typename T>
void write(uint8_t* mad, const M& m, const Num<M, T>& f) {
  put(mad, f.off, f.bit, f.bits, static_cast<uint64_t>(m.*f.member));
}
template <typename M, typename T>
void read(const uint8_t* mad, M* m, const Bytes<M, T>& f) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memcpy(&(m->*f.member), mad + H + f.off, sizeof(T));
}
template <typename M, typename T>
void write(uint8_t* mad, const M& m, const Bytes<M, T>& f) {
  std::memcpy(mad + H + f.off, &(m.*f.member), sizeof(T));
}

template <typename M>
struct Layout;

// REQ (table 106).
template <>
struct Layout<Req> {
  static constexpr Attr kAttr = Attr::kReq;
  static constexpr auto kFields = std::tuple{
      Num{0, 0, 32, &Req::local_comm_id},
      Num{8, 0, 64, &Req::service_id},
      Num{16, 0, 64, &Req::local_ca_guid},
      Num{28, 0, 32, &Req::local_qkey},
      Num{32, 0, 24, &Req::local_qpn},
      Num{35, 0, 8, &Req::responder_resources},
      Num{39, 0, 8, &Req::initiator_depth},
      Num{43, 0, 5, &Req::remote_cm_response_timeout},
      Num{43, 5, 2, &Req::transport_service},
      Num{43, 7, 1, &Req::end_to_end_flow_control},
      Num{44, 0, 24, &Req::starting_psn},
      Num{47, 0, 5, &Req::local_cm_response_timeout},
      Num{47, 5, 3, &Req::retry_count},
      Num{48, 0, 16, &Req::pkey},
      Num{50, 0, 4, &Req::path_mtu},
      Num{50, 5, 3, &Req::rnr_retry_count},
      Num{51, 0, 4, &Req::max_cm_retries},
      Num{51, 4, 1, &Req::srq},
      Num{52, 0, 16, &Req::primary_local_lid},
      Num{54, 0, 16, &Req::primary_remote_lid},
      Bytes{56, &Req::primary_local_gid},
      Bytes{72, &Req::primary_remote_gid},
      Num{88, 0, 20, &Req::flow_label},
      Num{91, 2, 6, &Req::packet_rate},
      Num{92, 0, 8, &Req::traffic_class},
      Num{93, 0, 8, &Req::hop_limit},
      Num{94, 0, 4, &Req::sl},
      Num{94, 4, 1, &Req::subnet_local},
      Num{95, 0, 5, &Req::local_ack_timeout},
      Bytes{priv_of(kAttr).off, &Req::private_data},
  };
};

// REP (table 110).
template <>
struct Layout<Rep> {
  static constexpr Attr kAttr = Attr::kRep;
  static constexpr auto kFields = std::tuple{
      Num{0, 0, 32, &Rep::local_comm_id},
      Num{4, 0, 32, &Rep::remote_comm_id},
      Num{8, 0, 32, &Rep::local_qkey},
      Num{12, 0, 24, &Rep::local_qpn},
      Num{20, 0, 24, &Rep::starting_psn},
      Num{24, 0, 8, &Rep::responder_resources},
      Num{25, 0, 8, &Rep::initiator_depth},
      Num{26, 0, 5, &Rep::target_ack_delay},
      Num{26, 5, 2, &Rep::failover_accepted},
      Num{26, 7, 1, &Rep::end_to_end_flow_control},
      Num{27, 0, 3, &Rep::rnr_retry_count},
      Num{27, 3, 1, &Rep::srq},
      Num{28, 0, 64, &Rep::local_ca_guid},
      Bytes{priv_of(kAttr).off, &Rep::private_data},
  };
};

// REJ (table 108); the ARI length is clamped to the ARI's room when built.
template <>
struct Layout<Rej> {
  static constexpr Attr kAttr = Attr::kRej;
  static constexpr auto kFields = std::tuple{
      Num{0, 0, 32, &Rej::local_comm_id},
      Num{4, 0, 32, &Rej::remote_comm_id},
      Num{8, 0, 2, &Rej::rejected},
      Num{9, 0, 7, &Rej::ari_length},
      Num{10, 0, 16, &Rej::reason},
      Bytes{12, &Rej::ari},
      Bytes{priv_of(kAttr).off, &Rej::private_data},
  };
};

// MRA (table 107).
template <>
struct Layout<Mra> {
  static constexpr Attr kAttr = Attr::kMra;
  static constexpr auto kFields = std::tuple{
      Num{0, 0, 32, &Mra::local_comm_id},
      Num{4, 0, 32, &Mra::remote_comm_id},
      Num{8, 0, 2, &Mra::mraed},
      Num{9, 0, 5, &Mra::service_timeout},
  };
};

// RTU, DREQ, DREP (tables 111-113): the communication IDs; a DREQ adds the
// remote QPN at 8, read and written apart.
template <>
struct Layout<Short> {
  static constexpr auto kFields = std::tuple{
      Num{0, 0, 32, &Short::local_comm_id},
      Num{4, 0, 32, &Short::remote_comm_id},
  };
};

// SIDR_REQ and SIDR_REP (IBA 12.11, Linux's CM_SIDR_* offsets); the
// additional-information length is clamped when built.
template <>
struct Layout<SidrReq> {
  static constexpr Attr kAttr = Attr::kSidrReq;
  static constexpr auto kFields = std::tuple{
      Num{0, 0, 32, &SidrReq::request_id},
      Num{4, 0, 16, &SidrReq::pkey},
      Num{8, 0, 64, &SidrReq::service_id},
      Bytes{priv_of(kAttr).off, &SidrReq::private_data},
  };
};
template <>
struct Layout<SidrRep> {
  static constexpr Attr kAttr = Attr::kSidrRep;
  static constexpr auto kFields = std::tuple{
      Num{0, 0, 32, &SidrRep::request_id},
      Num{4, 0, 8, &SidrRep::status},
      Num{5, 0, 8, &SidrRep::info_length},
      Num{8, 0, 24, &SidrRep::qpn},
      Num{12, 0, 64, &SidrRep::service_id},
      Num{20, 0, 32, &SidrRep::qkey},
      Bytes{24, &SidrRep::info},
      Bytes{priv_of(kAttr).off, &SidrRep::private_data},
  };
};

template <typename M>
void read_all(const uint8_t* mad, M* m) {
  std::apply([&](const auto&... f) { (read(mad, m, f), ...); }, Layout<M>::kFields);
}
template <typename M>
void write_all(const M& m, uint64_t tid, uint8_t* mad) {
  header(mad, Layout<M>::kAttr, tid);
  std::apply([&](const auto&... f) { (write(mad, m, f), ...); }, Layout<M>::kFields);
}

}  // namespace

void parse(const uint8_t* mad, Req* m) { read_all(mad, m); }
void parse(const uint8_t* mad, Rep* m) { read_all(mad, m); }
void parse(const uint8_t* mad, Rej* m) { read_all(mad, m); }
void parse(const uint8_t* mad, Mra* m) { read_all(mad, m); }
void parse(const uint8_t* mad, SidrReq* m) { read_all(mad, m); }
void parse(const uint8_t* mad, SidrRep* m) { read_all(mad, m); }

void build(const Req& m, uint64_t tid, uint8_t* mad) { write_all(m, tid, mad); }
void build(const Rep& m, uint64_t tid, uint8_t* mad) { write_all(m, tid, mad); }
void build(const Mra& m, uint64_t tid, uint8_t* mad) { write_all(m, tid, mad); }
void build(const SidrReq& m, uint64_t tid, uint8_t* mad) { write_all(m, tid, mad); }

void build(const Rej& m, uint64_t tid, uint8_t* mad) {
  write_all(m, tid, mad);
  put(mad, 9, 0, 7, std::min<uint8_t>(m.ari_length, sizeof m.ari));
}

void build(const SidrRep& m, uint64_t tid, uint8_t* mad) {
  write_all(m, tid, mad);
  put(mad, 5, 0, 8, std::min<uint8_t>(m.info_length, sizeof m.info));
}

void parse(const uint8_t* mad, Short* m) {
  read_all(mad, m);
  const bool dreq = load(mad + 16, 2) == static_cast<uint16_t>(Attr::kDreq);
  m->remote_qpn = dreq ? static_cast<uint32_t>(get(mad, 8, 24)) : 0;
}

void build(Attr attr, const Short& m, uint64_t tid, uint8_t* mad, const uint8_t* priv, size_t priv_len) {
  header(mad, attr, tid);
  std::apply([&](const auto&... f) { (write(mad, m, f), ...); }, Layout<Short>::kFields);
  if (attr == Attr::kDreq) put(mad, 8, 24, m.remote_qpn);
  const Priv p = priv_of(attr);
  if (priv != nullptr) std::memcpy(mad + H + p.off, priv, std::min(priv_len, p.len));
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
