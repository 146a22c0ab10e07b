// LossWindow: a limit on packets in flight that a QP keeps after loss, whatever
// its congestion control (even "none"). A RoCE NIC does the same with its
// retry and rate limits: without it a go-back-N sender that loses a packet
// resends its whole flight, loses again, and floods (issue 29: 267x-600x the
// packets needed at 3% loss with `cc none`).
//
// Reno's window (RFC 5681) counted in packets. Two ways to be switched on:
//   by the first loss (a peer known to be tita: off, unlimited, until then);
//   by start(): from kInitialPackets in slow start, for a peer not known to
//             be tita (a go-back-N responder such as rxe or a RoCE NIC, which
//             may drop what arrives faster than it takes in: the first flight
//             of 16 MiB outstanding at line rate would cost its whole size
//             again at the first drop); it then stays on.
//   loss:     ssthresh = window = max(2, W / 2), W the window (or, while
//             off, the packets in flight); once per window: losses before
//             `window` more packets were acknowledged are the same event;
//   timeout:  ssthresh = max(2, W / 2), window = 2;
//   ACKs:     below ssthresh +1 per packet acknowledged (slow start), above
//             it +1 per window of packets acknowledged (additive increase);
//   the loss episode (a loss or timeout, in_episode()) is over once the
//             window reaches twice the largest ssthresh since the episode
//             began (the flight before the worst cut): a window switched on
//             by loss is then off again, one started stays on.
// Deviation from Reno: no fast recovery (go-back-N resends from the hole),
// and the switch-off, so that a QP without congestion control is unlimited
// again once the loss episode is over.
//
// Units: packets. No clock: the host calls the hooks as events happen. State
// is fixed-size (28 bytes) and allocation-free.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tita::cc {

class LossWindow {
 public:
  static constexpr uint32_t kOff = UINT32_MAX;  // window() while unlimited
  static constexpr uint32_t kMinPackets = 2;
  static constexpr uint32_t kInitialPackets = 16;   // start()'s window
  static constexpr uint32_t kMaxPackets = 1u << 24;  // a started window grows no further

  bool on() const { return window_ != kOff; }
  // Since a loss or timeout, until the window is back at twice its largest cut.
  bool in_episode() const { return episode_; }
  // Switched on by start() (not by a loss): stays on.
  bool started() const { return started_; }
  // Packets allowed in flight; kOff while unlimited.
  uint32_t window() const { return window_; }
  uint32_t ssthresh() const { return ssthresh_; }
  // May one more packet go while `in_flight` are out? (Always one into an
  // empty pipe.)
  bool allows(uint32_t in_flight) const { return window_ == kOff || in_flight == 0 || in_flight < window_; }

  // A loss (a sequence NAK, a hole in READ responses) while `in_flight`
  // packets were out. Returns true if it cut the window (a new loss event).
  bool on_loss(uint32_t in_flight) {
    if (episode_ && since_cut_ < cut_at_) return false;  // same event as the last cut
    const uint32_t w = on() ? window_ : std::max(in_flight, kMinPackets);
    ssthresh_ = std::max(kMinPackets, w / 2);
    window_ = ssthresh_;
    cut_at_ = window_;
    since_cut_ = 0;
    acked_ = 0;
    largest_ = std::max(episode_ ? largest_ : 0, ssthresh_);
    episode_ = true;
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
    largest_ = std::max(episode_ ? largest_ : 0, ssthresh_);
    episode_ = true;
  }

  // `packets` newly acknowledged (or READ responses newly received).
  void on_acked(uint32_t packets) {
    if (!on() || packets == 0) return;
    since_cut_ = since_cut_ > UINT32_MAX - packets ? UINT32_MAX : since_cut_ + packets;
    const uint32_t ceiling = std::min(ssthresh_, kMaxPackets);
    if (window_ < ceiling) {  // slow start: +1 a packet
      const uint32_t n = std::min(packets, ceiling - window_);
      window_ += n;
      packets -= n;
    }
    acked_ = acked_ > UINT32_MAX - packets ? UINT32_MAX : acked_ + packets;
    while (acked_ >= window_ && window_ < kMaxPackets) {  // additive increase
      acked_ -= window_;
      ++window_;
    }
    if (episode_ && window_ >= 2 * uint64_t{largest_}) {
      if (!started_) {
        reset();
        return;
      }
      episode_ = false;
    }
  }

  // On from kInitialPackets in slow start, to stay (a peer not known to be
  // tita); a window a loss switched on already stays on as it is.
  void start() {
    if (!on()) {
      window_ = kInitialPackets;
      ssthresh_ = kOff;
    }
    started_ = true;
  }

  // The peer turned out to be tita (its trailer): a started window that has
  // seen no loss is off; one in a loss episode goes off when the episode ends.
  void peer_is_tita() {
    if (!started_) return;
    started_ = false;
    if (!episode_) reset();
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
  bool episode_ = false;    // since a loss or timeout (in_episode())
  bool started_ = false;    // on by start(), not by a loss
};

}  // namespace tita::cc
