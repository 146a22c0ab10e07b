#include "tita/wire/opcode.h"

#include <array>

#include "tita/wire/headers.h"

namespace tita::wire {
namespace {

constexpr uint8_t ext_bytes_of(uint16_t headers) {
  uint8_t n = 0;
  if (headers & kHasDeth) n += sizeof(Deth);
  if (headers & kHasReth) n += sizeof(Reth);
  if (headers & kHasAtomicEth) n += sizeof(AtomicEth);
  if (headers & kHasAeth) n += sizeof(Aeth);
  if (headers & kHasAtomicAckEth) n += sizeof(AtomicAckEth);
  if (headers & kHasImm) n += sizeof(ImmDt);
  if (headers & kHasCnpBody) n += sizeof(CnpBody);
  return n;
}

constexpr OpcodeInfo entry(std::string_view name, uint16_t headers, Kind kind, Position position, bool ud = false) {
  OpcodeInfo info{name, headers, kind, position, ext_bytes_of(headers), {}, ud};
  // Headers appear in HeaderMask bit order: each starts after the BTH and
  // those of lower bits.
  uint32_t off = sizeof(Bth);
  for (uint32_t i = 0; i < info.ext_off.size(); ++i) {
    const auto bit = static_cast<uint16_t>(1u << i);
    if (!(headers & bit)) continue;
    info.ext_off[i] = static_cast<uint8_t>(off);
    off += ext_bytes_of(bit);
  }
  return info;
}

constexpr std::array<OpcodeInfo, 256> make_table() {
  std::array<OpcodeInfo, 256> t{};
  for (auto& e : t) e = entry("unknown", 0, Kind::kInvalid, Position::kNone);
  auto set = [&t](Opcode op, OpcodeInfo info) { t[static_cast<uint8_t>(op)] = info; };
  using enum Opcode;
  using P = Position;
  using K = Kind;
  set(kSendFirst, entry("RC SEND First", kHasPayload, K::kSend, P::kFirst));
  set(kSendMiddle, entry("RC SEND Middle", kHasPayload, K::kSend, P::kMiddle));
  set(kSendLast, entry("RC SEND Last", kHasPayload, K::kSend, P::kLast));
  set(kSendLastImm, entry("RC SEND Last with Immediate", kHasImm | kHasPayload, K::kSend, P::kLast));
  set(kSendOnly, entry("RC SEND Only", kHasPayload, K::kSend, P::kOnly));
  set(kSendOnlyImm, entry("RC SEND Only with Immediate", kHasImm | kHasPayload, K::kSend, P::kOnly));
  set(kWriteFirst, entry("RC RDMA WRITE First", kHasReth | kHasPayload, K::kWrite, P::kFirst));
  set(kWriteMiddle, entry("RC RDMA WRITE Middle", kHasPayload, K::kWrite, P::kMiddle));
  set(kWriteLast, entry("RC RDMA WRITE Last", kHasPayload, K::kWrite, P::kLast));
  set(kWriteLastImm, entry("RC RDMA WRITE Last with Immediate", kHasImm | kHasPayload, K::kWrite, P::kLast));
  set(kWriteOnly, entry("RC RDMA WRITE Only", kHasReth | kHasPayload, K::kWrite, P::kOnly));
  set(kWriteOnlyImm,
      entry("RC RDMA WRITE Only with Immediate", kHasReth | kHasImm | kHasPayload, K::kWrite, P::kOnly));
  set(kReadRequest, entry("RC RDMA READ Request", kHasReth, K::kReadRequest, P::kOnly));
  set(kReadResponseFirst,
      entry("RC RDMA READ Response First", kHasAeth | kHasPayload, K::kReadResponse, P::kFirst));
  set(kReadResponseMiddle, entry("RC RDMA READ Response Middle", kHasPayload, K::kReadResponse, P::kMiddle));
  set(kReadResponseLast, entry("RC RDMA READ Response Last", kHasAeth | kHasPayload, K::kReadResponse, P::kLast));
  set(kReadResponseOnly, entry("RC RDMA READ Response Only", kHasAeth | kHasPayload, K::kReadResponse, P::kOnly));
  set(kAck, entry("RC Acknowledge", kHasAeth, K::kAck, P::kOnly));
  set(kAtomicAck, entry("RC ATOMIC Acknowledge", kHasAeth | kHasAtomicAckEth, K::kAtomicAck, P::kOnly));
  set(kCompareSwap, entry("RC CmpSwap", kHasAtomicEth, K::kAtomic, P::kOnly));
  set(kFetchAdd, entry("RC FetchAdd", kHasAtomicEth, K::kAtomic, P::kOnly));
  // UD carries SEND Only (with or without immediate) and nothing else (IBA 9.8.3).
  set(kUdSendOnly, entry("UD SEND Only", kHasDeth | kHasPayload, K::kSend, P::kOnly, true));
  set(kUdSendOnlyImm, entry("UD SEND Only with Immediate", kHasDeth | kHasImm | kHasPayload, K::kSend, P::kOnly, true));
  set(kCnp, entry("CNP", kHasCnpBody, K::kCnp, P::kOnly));
  return t;
}

constexpr std::array<OpcodeInfo, 256> kTable = make_table();
static_assert(kTable[0x0b].ext_off[5] == sizeof(Bth) + sizeof(Reth));  // ImmDt after the RETH
static_assert(kTable[0x12].ext_off[4] == sizeof(Bth) + sizeof(Aeth));   // AtomicAckETH after the AETH
static_assert(kTable[0x65].ext_off[5] == sizeof(Bth) + sizeof(Deth));   // ImmDt after the DETH
static_assert(kTable[0x65].ext_bytes == 12);  // UD SEND Only with Immediate: DETH + ImmDt

static_assert(kTable[0x0b].ext_bytes == 20);  // WRITE Only with Immediate: RETH + ImmDt
static_assert(kTable[0x12].ext_bytes == 12);  // Atomic ACK: AETH + AtomicAckETH
static_assert(kTable[0x81].ext_bytes == 16);

}  // namespace

const std::array<OpcodeInfo, 256> detail::kOpcodeTable = kTable;

}  // namespace tita::wire
