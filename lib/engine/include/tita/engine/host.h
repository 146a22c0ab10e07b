// What the engine needs from a host: somewhere to put frames. The host also owns
// the clock (every engine call takes now_ns) and calls Engine::poll() at or after
// Engine::next_wakeup_ns(): that is the whole timer interface.
#pragma once

#include <cstdint>

#include "tita/engine/verbs.h"
#include "tita/wire/icrc.h"

namespace tita::engine {

// One frame, in pieces: Ethernet through extension headers, payload segments that
// lie in registered memory, and a tail of pad, ICRC and telemetry trailer.
struct TxFrame {
  static constexpr uint32_t kMaxPayloadSegments = kMaxSge + 1;

  const uint8_t* hdr = nullptr;  // engine scratch: copy before transmit_burst() returns
  uint32_t hdr_len = 0;
  // Zero-copy payload. A segment with data == nullptr is virtual: bytes of a
  // phantom memory region (simulation), to be sent as zeros.
  wire::Segment payload[kMaxPayloadSegments];
  uint32_t n_payload = 0;
  const uint8_t* tail = nullptr;  // engine scratch: copy before transmit_burst() returns
  uint32_t tail_len = 0;
  uint8_t priority = 0;  // 802.1p class for the host's egress queue (PFC)
  uint32_t qp_num = 0;   // sending QP, for hosts that steer queues by QP
  bool control = false;  // an ACK, NAK or CNP (a host may queue them ahead of data)
  // The ICRC is the host's to fill in (PacketIo::sums_icrc): the tail holds the
  // pad and room for it. copy_to() or finish_icrc() does it.
  bool icrc_pending = false;
  // How long the payload segments stay valid once transmit_burst() returns:
  //   transient    not at all: the work request completes as the frame is
  //                handed over (UD); a host copies the payload.
  //   hold != 0    until its work request completes: a host that goes on
  //                referring to the payload (zero copy: the port reads it
  //                later) calls Engine::hold_payload(hold) before returning
  //                and Engine::release_payload(hold) once the port has let it
  //                go; the completion, which gives the memory back to the
  //                application, waits for every release.
  //   otherwise    as long as its memory region (READ responses: no work
  //                request of this side waits on them).
  bool transient = false;
  uint64_t hold = 0;

  uint32_t payload_len() const {
    uint32_t n = 0;
    for (uint32_t i = 0; i < n_payload; ++i) n += payload[i].len;
    return n;
  }
  uint32_t len() const { return hdr_len + payload_len() + tail_len; }

  // Writes the whole frame, len() bytes, to dst: headers, payload (zeros for a
  // phantom segment), tail; a pending ICRC is summed as the payload is copied.
  void copy_to(uint8_t* dst) const;
  // For a host that sends the payload where it lies: fills a pending ICRC into
  // its own copy of the tail (tail_len bytes).
  void finish_icrc(uint8_t* tail_copy) const;
};

class PacketIo {
 public:
  virtual ~PacketIo() = default;
  // How many frames the host accepts now. The engine hands over no more than
  // that per poll(); the host calls poll() again when room frees.
  virtual uint32_t tx_space() = 0;
  // Sends n frames (1 <= n <= 32), in order: one call per burst, from inside
  // Engine::poll(). Header and tail bytes must be copied before returning;
  // payload segments stay valid as TxFrame::transient and hold say.
  virtual void transmit_burst(uint64_t now_ns, const TxFrame* frames, uint32_t n) = 0;
  // True if the host writes every data frame with TxFrame::copy_to() or
  // finish_icrc(): the engine then leaves the ICRC pending, and a host that
  // copies sums it in the same pass over the payload as its copy. Asked once,
  // when the engine is made.
  virtual bool sums_icrc() const { return false; }
  // True if the host may hold payload past transmit_burst() (TxFrame::hold):
  // only then do data frames carry hold tokens. Asked once, when the engine
  // is made.
  virtual bool holds_payload() const { return false; }
};

}  // namespace tita::engine
