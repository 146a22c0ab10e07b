// The opcode table: for every BTH opcode, which extension headers follow, whether
// a payload may follow, and where the packet sits in its message. Parse and build
// both read it, so they cannot disagree. (Like rxe_opcode.c.)
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>

namespace tita::wire {

enum class Opcode : uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastImm = 0x03,
  kSendOnly = 0x04,
  kSendOnlyImm = 0x05,
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteLastImm = 0x09,
  kWriteOnly = 0x0a,
  kWriteOnlyImm = 0x0b,
  kReadRequest = 0x0c,
  kReadResponseFirst = 0x0d,
  kReadResponseMiddle = 0x0e,
  kReadResponseLast = 0x0f,
  kReadResponseOnly = 0x10,
  kAck = 0x11,
  kAtomicAck = 0x12,
  kCompareSwap = 0x13,
  kFetchAdd = 0x14,
  kUdSendOnly = 0x64,     // UD: one packet per message, with a DETH
  kUdSendOnlyImm = 0x65,
  kCnp = 0x81,  // RoCEv2 congestion notification
};

// Which headers follow the BTH, in this order: DETH, RETH, AtomicETH, AETH,
// AtomicAckETH, ImmDt, CNP body; then the payload when kPayload is set.
enum HeaderMask : uint16_t {
  kHasDeth = 1u << 0,
  kHasReth = 1u << 1,
  kHasAtomicEth = 1u << 2,
  kHasAeth = 1u << 3,
  kHasAtomicAckEth = 1u << 4,
  kHasImm = 1u << 5,
  kHasCnpBody = 1u << 6,
  kHasPayload = 1u << 7,
};

// Where a packet sits in a multi-packet message.
enum class Position : uint8_t { kNone, kFirst, kMiddle, kLast, kOnly };

// What the packet does, independent of position.
enum class Kind : uint8_t { kInvalid, kSend, kWrite, kReadRequest, kReadResponse, kAck, kAtomic, kAtomicAck, kCnp };

struct OpcodeInfo {
  std::string_view name;  // as Wireshark prints it, e.g. "RC RDMA WRITE First"
  uint16_t headers;       // HeaderMask bits
  Kind kind;
  Position position;
  uint8_t ext_bytes;      // bytes of extension headers after the BTH
  // Offset from the start of the BTH of each extension header the opcode has,
  // by HeaderMask bit index (headers come in bit order); 0 where absent.
  std::array<uint8_t, 8> ext_off;
  bool ud = false;        // Unreliable Datagram service (opcodes 0x60-0x7f): DETH, no ACKs

  bool valid() const { return kind != Kind::kInvalid; }
  bool has(HeaderMask h) const { return headers & h; }
  // Requests carry data or ask for it; responses and CNPs go the other way.
  bool is_request() const {
    return kind == Kind::kSend || kind == Kind::kWrite || kind == Kind::kReadRequest || kind == Kind::kAtomic;
  }
  bool is_response() const { return kind == Kind::kReadResponse || kind == Kind::kAck || kind == Kind::kAtomicAck; }
  bool starts_message() const { return position == Position::kFirst || position == Position::kOnly; }
  bool ends_message() const { return position == Position::kLast || position == Position::kOnly; }
};

namespace detail {
extern const std::array<OpcodeInfo, 256> kOpcodeTable;  // opcode.cc
}

// The entry for any byte value; unknown opcodes have kind kInvalid.
inline const OpcodeInfo& opcode_info(uint8_t opcode) { return detail::kOpcodeTable[opcode]; }
inline const OpcodeInfo& opcode_info(Opcode op) { return opcode_info(static_cast<uint8_t>(op)); }

// Byte offset of an extension header from the start of the BTH, for an opcode
// that has it.
inline uint32_t ext_offset(const OpcodeInfo& info, HeaderMask h) {
  return info.ext_off[static_cast<size_t>(std::countr_zero(static_cast<unsigned>(h)))];
}

}  // namespace tita::wire
