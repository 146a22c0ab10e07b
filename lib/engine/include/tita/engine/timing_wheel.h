// A timing wheel of ids (QPs): schedule an id at a time, collect the ids whose
// time has come. Slots of `slot_ns` cover a horizon of slots x slot_ns ahead of
// the last advance; later deadlines wait in an overflow heap until they come
// within it. Each id has at most one deadline. Deadlines are exact: an id fires at
// the first advance(now) with now >= its deadline, never earlier, and
// next_expiry_ns() is the exact earliest deadline. Nothing allocates after
// construction except the overflow heap's growth and add_ids().
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

namespace tita::engine {

class TimingWheel {
 public:
  static constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

  // slots: a power of two, at least 64. Room for `ids` ids (add_ids makes more).
  TimingWheel(uint32_t ids, uint32_t slots, uint64_t slot_ns) : slot_ns_(slot_ns), mask_(slots - 1) {
    assert(slots >= 64 && (slots & (slots - 1)) == 0);
    add_ids(ids);
  }

  // Room for ids below `ids`: the per-id arrays grow (at least doubling), and
  // the slots are allocated with the first id, so a wheel nobody schedules on
  // (an engine without QPs) holds nothing. Allocates: call it where ids are
  // made (an engine's create_qp), not on the data path.
  void add_ids(uint32_t ids) {
    if (ids <= deadline_.size()) return;
    if (heads_.empty()) {
      const uint64_t slots = mask_ + 1;
      heads_.assign(slots, kNone);
      occupied_.assign(slots / 64, 0);
      summary_.assign((slots / 64 + 63) / 64, 0);
    }
    const size_t n = std::max<size_t>(ids, 2 * deadline_.size());
    deadline_.resize(n, kNever);
    next_.resize(n, kNone);
    prev_.resize(n, kNone);
    where_.resize(n, kNowhere);
    gen_.resize(n, 0);
    due_.reserve(n);
  }

  bool scheduled(uint32_t id) const { return where_[id] != kNowhere; }
  uint64_t deadline(uint32_t id) const { return deadline_[id]; }

  // (Re)schedules id at deadline_ns; a time before the last advance counts as then.
  void schedule(uint32_t id, uint64_t deadline_ns) {
    deadline_ns = std::max(deadline_ns, now_ns_);
    if (where_[id] != kNowhere && deadline_[id] == deadline_ns) return;
    cancel(id);
    deadline_[id] = deadline_ns;
    if (slot_of(deadline_ns) - slot_of(now_ns_) <= mask_) {
      link(id);
    } else {
      where_[id] = kOverflow;
      overflow_.push_back({deadline_ns, id, gen_[id]});
      std::push_heap(overflow_.begin(), overflow_.end(), std::greater<>());
    }
  }

  void cancel(uint32_t id) {
    if (where_[id] == kWheel) unlink(id);
    where_[id] = kNowhere;
    deadline_[id] = kNever;
    ++gen_[id];  // any overflow entry of id is now stale
  }

  // Calls fn(id) for every id with deadline <= now_ns, unscheduling it first. An
  // id that fn schedules again at or before now_ns fires at the next advance().
  template <class Fn>
  void advance(uint64_t now_ns, Fn&& fn) {
    if (now_ns < now_ns_) return;
    const uint64_t from = slot_of(now_ns_);
    const uint64_t to = slot_of(now_ns);
    now_ns_ = now_ns;
    pull_overflow();
    // The slots passed since the last advance, at most one lap of the ring.
    const uint64_t end = std::min(to, from + mask_) + 1;
    for (uint64_t s = next_occupied(from, end); s < end; s = next_occupied(s + 1, end)) {
      fire_slot(static_cast<uint32_t>(s & mask_), now_ns, fn);
    }
  }

  // The earliest deadline scheduled; kNever if none.
  uint64_t next_expiry_ns() {
    while (!overflow_.empty() && stale(overflow_.front())) {
      std::pop_heap(overflow_.begin(), overflow_.end(), std::greater<>());
      overflow_.pop_back();
    }
    uint64_t best = overflow_.empty() ? kNever : overflow_.front().deadline;
    const uint64_t start = slot_of(now_ns_);
    const uint64_t s = next_occupied(start, start + mask_ + 1);
    if (s <= start + mask_) {
      for (uint32_t id = heads_[s & mask_]; id != kNone; id = next_[id]) best = std::min(best, deadline_[id]);
    }
    return best;
  }

 private:
  enum : uint8_t { kNowhere, kWheel, kOverflow };

  struct Entry {
    uint64_t deadline;
    uint32_t id;
    uint32_t gen;
    bool operator>(const Entry& o) const { return deadline > o.deadline; }
  };

  bool stale(const Entry& e) const { return e.gen != gen_[e.id] || where_[e.id] != kOverflow; }
  uint64_t slot_of(uint64_t t) const { return t / slot_ns_; }
  uint32_t slot_index(uint64_t t) const { return static_cast<uint32_t>(slot_of(t) & mask_); }

  // First occupied absolute slot in [from, end), or end; end is at most one
  // lap past from. The rest of from's word first, then the next occupied word
  // in ring order, found in the summary (a bit per word): a few steps, however
  // far away (an idle engine asks for its next deadline at every poll). Ring
  // words never span the end of the ring (slots is a multiple of 64).
  uint64_t next_occupied(uint64_t from, uint64_t end) const {
    if (from >= end || occupied_.empty()) return end;
    const uint64_t idx = from & mask_;
    const uint64_t bits = occupied_[idx >> 6] >> (idx & 63);
    if (bits != 0) return std::min(end, from + static_cast<uint64_t>(__builtin_ctzll(bits)));
    const uint64_t words = occupied_.size();  // a power of two
    const uint64_t w0 = idx >> 6;
    for (uint64_t step = 1; step <= words;) {
      const uint64_t r = (w0 + step) & (words - 1);
      const uint64_t sb = summary_[r >> 6] >> (r & 63);
      if (sb == 0) {
        step += 64 - (r & 63);  // the rest of this summary word is empty
        continue;
      }
      step += static_cast<uint64_t>(__builtin_ctzll(sb));
      if (step > words) break;
      const uint64_t word = (w0 + step) & (words - 1);
      const uint64_t hit = ((from >> 6) + step) * 64 + static_cast<uint64_t>(__builtin_ctzll(occupied_[word]));
      return std::min(end, hit);
    }
    return end;
  }

  void link(uint32_t id) {
    const uint32_t idx = slot_index(deadline_[id]);
    next_[id] = heads_[idx];
    prev_[id] = kNone;
    if (heads_[idx] != kNone) prev_[heads_[idx]] = id;
    heads_[idx] = id;
    occupied_[idx >> 6] |= uint64_t{1} << (idx & 63);
    summary_[idx >> 12] |= uint64_t{1} << ((idx >> 6) & 63);
    where_[id] = kWheel;
  }

  void unlink(uint32_t id) {
    const uint32_t idx = slot_index(deadline_[id]);
    if (prev_[id] != kNone) {
      next_[prev_[id]] = next_[id];
    } else {
      heads_[idx] = next_[id];
    }
    if (next_[id] != kNone) prev_[next_[id]] = prev_[id];
    next_[id] = prev_[id] = kNone;
    if (heads_[idx] == kNone) {
      occupied_[idx >> 6] &= ~(uint64_t{1} << (idx & 63));
      if (occupied_[idx >> 6] == 0) summary_[idx >> 12] &= ~(uint64_t{1} << ((idx >> 6) & 63));
    }
    where_[id] = kNowhere;
  }

  // Moves overflow deadlines that have come within the horizon into the wheel.
  void pull_overflow() {
    while (!overflow_.empty()) {
      const Entry top = overflow_.front();
      const bool live = !stale(top);
      // A deadline the clock has already passed (advance jumped over it) is due
      // now: it goes into the wheel, whose sweep of the passed slots fires it.
      if (live && slot_of(top.deadline) > slot_of(now_ns_) + mask_) break;
      std::pop_heap(overflow_.begin(), overflow_.end(), std::greater<>());
      overflow_.pop_back();
      if (live) link(top.id);
    }
  }

  template <class Fn>
  void fire_slot(uint32_t idx, uint64_t now_ns, Fn& fn) {
    // Collect the due ids first: fn may schedule ids into this same slot.
    due_.clear();
    for (uint32_t id = heads_[idx]; id != kNone;) {
      const uint32_t nxt = next_[id];
      if (deadline_[id] <= now_ns) {
        unlink(id);
        deadline_[id] = kNever;
        ++gen_[id];
        due_.push_back(id);
      }
      id = nxt;
    }
    for (uint32_t id : due_) fn(id);
  }

  uint64_t slot_ns_;
  uint64_t mask_;
  uint64_t now_ns_ = 0;
  std::vector<uint32_t> heads_;
  std::vector<uint64_t> occupied_;  // a bit per slot
  std::vector<uint64_t> summary_;   // a bit per word of occupied_ that is not 0
  std::vector<uint64_t> deadline_;
  std::vector<uint32_t> next_;
  std::vector<uint32_t> prev_;
  std::vector<uint8_t> where_;
  std::vector<uint32_t> gen_;
  std::vector<Entry> overflow_;
  std::vector<uint32_t> due_;
};

}  // namespace tita::engine
