// LossWindow: a limit on packets in flight that a QP keeps after loss, whatever
// its congestion control (even "none"). A RoCE NIC does the same with its
// retry and rate limits: without it a go-back-N sender that loses a packet
// resends its whole flight, loses again, and floods (issue 29: 267x-600x the
// packets needed at 3% loss with `cc none`).
//
// Reno's window (RFC 5681) counted in packets, switched on by the first loss:
//   off (unlimited) until a loss;
//   loss:     ssthresh = window = max(2, W / 2), W the window (or, while
//             off, the packets in flight); once per window: losses before
//             `window` more packets were acknowledged are the same event;
//   timeout:  ssthresh = max(2, W / 2), window = 2;
//   ACKs:     below ssthresh +1 per packet acknowledged (slow start), above
//             it +1 per window of packets acknowledged (additive increase);
//   off again once the window reaches twice the largest ssthresh since it
//             switched on (the flight before the worst cut).
// Deviation from Reno: no fast recovery (go-back-N resends from the hole),
// and the switch-off, so that a QP without congestion control is unlimited
// again once the loss episode is over.
//
// Units: packets. No clock: the host calls the hooks as events happen. State
// is fixed-size (24 bytes) and allocation-free.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tita::cc {

class LossWindow {
 public:
  static constexpr uint32_t kOff = UINT32_MAX;  // window() while unlimited
  static constexpr uint32_t kMinPackets = 2;

  bool on() const { return window_ != kOff; }
  // Packets allowed in flight; kOff while unlimited.
  uint32_t window() const { return window_; }
  uint32_t ssthresh() const { return ssthresh_; }
  // May one more packet go while `in_flight` are out? (Always one into an
  // empty pipe.)
  bool allows(uint32_t in_flight) const { return window_ == kOff || in_flight == 0 || in_flight < window_; }

  // A loss (a sequence NAK, a hole in READ responses) while `in_flight`
  // packets were out. Returns true if it cut the window (a new loss event).
  bool on_loss(uint32_t in_flight) {
    if (on() && since_cut_ < cut_at_) return false;  // same event as the last cut
    const uint32_t w = on() ? window_ : std::max(in_flight, kMinPackets);
    ssthresh_ = std::max(kMinPackets, w / 2);
    window_ = ssthresh_;
    cut_at_ = window_;
    since_cut_ = 0;
    acked_ = 0;
    largest_ = std::max(largest_, ssthresh_);
    return true;
  }

  // A retransmission timeout while `in_flight` packets were out.
  void on_timeout(uint32_t in_flight) {
    const uint32_t w = on() ? window_ : std::max(in_flight, kMinPackets);
    ssthresh_ = std::max(kMinPackets, w / 2);
    window_ = kMinPackets;
    cut_at_ = window_;
    since_cut_ = 0;
    acked_ = 0;
    largest_ = std::max(largest_, ssthresh_);
  }

  // `packets` newly acknowledged (or READ responses newly received).
  void on_acked(uint32_t packets) {
    if (!on() || packets == 0) return;
    since_cut_ = since_cut_ > UINT32_MAX - packets ? UINT32_MAX : since_cut_ + packets;
    while (packets > 0 && window_ < ssthresh_) {  // slow start
      ++window_;
      --packets;
    }
    acked_ += packets;
    while (acked_ >= window_) {  // additive increase
      acked_ -= window_;
      ++window_;
    }
    if (window_ >= 2 * uint64_t{largest_}) reset();
  }

  // Unlimited again (a new connection, or the episode is over).
  void reset() { *this = LossWindow{}; }

 private:
  uint32_t window_ = kOff;
  uint32_t ssthresh_ = 0;
  uint32_t largest_ = 0;    // largest ssthresh since the window switched on
  uint32_t acked_ = 0;      // towards the next additive increase
  uint32_t since_cut_ = 0;  // packets acknowledged since the last cut
  uint32_t cut_at_ = 0;     // the window the last cut left
};

}  // namespace tita::cc
