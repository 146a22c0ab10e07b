#include "tita/dpdk/host.h"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_memory.h>
#include <rte_ring.h>

#include "tita/fabric/classify.h"
#include "tita/fabric/pfc.h"
#include "tita/wire/arp.h"
#include "tita/wire/frame.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>

namespace tita::dpdk {

namespace {

// Payload memory belongs to the application; DPDK must never free it.
void no_free(void*, void*) {}

// How often, at most, a host with frames held asks the port to free what it
// has sent (rte_eth_tx_done_cleanup).
constexpr uint64_t kCleanupEveryNs = 20'000;

rte_iova_t iova_of(const void* p) {
  if (rte_eal_iova_mode() == RTE_IOVA_VA) return reinterpret_cast<uintptr_t>(p);
  return rte_mem_virt2iova(p);
}

}  // namespace

// The records behind zero-copy frames' holds: one per frame out, taken and
// given back by the polling thread. The free callback puts its record on
// `freed_here` when it runs inside its own host's poll_once() (the port's
// transmit path frees what it has sent: memif, vhost, a NIC's cleanup), else
// (another thread: a net_ring peer) on the multi-producer ring `released`.
struct EngineHost::HoldPool {
  struct Record {
    rte_mbuf_ext_shared_info shinfo;
    uint64_t token;
    HoldPool* pool;
  };
  std::vector<Record> records;
  std::vector<Record*> free;
  std::vector<Record*> freed_here;  // capacity for every record: never reallocates
  rte_ring* released = nullptr;
  static thread_local HoldPool* polling;  // the pool whose host this thread is polling

  static void on_free(void*, void* opaque) {
    auto* r = static_cast<Record*>(opaque);
    if (r->pool == polling) {
      r->pool->freed_here.push_back(r);
    } else {
      rte_ring_mp_enqueue(r->pool->released, r);  // room for every record: never full
    }
  }
  uint32_t out() const { return static_cast<uint32_t>(records.size() - free.size()); }
};

thread_local EngineHost::HoldPool* EngineHost::HoldPool::polling = nullptr;

EngineHost::EngineHost(Port& port, uint16_t queue, const engine::EngineConfig& config, const HostOptions& options)
    : port_(port), queue_(queue), options_(options), linear_(16384) {
  engine::EngineConfig cfg = config;
  if (options.port_mac) std::memcpy(cfg.mac, port.mac(), 6);
  if (options.steering != nullptr) {
    steering_ = *options.steering;
    cfg.first_qpn = config.first_qpn + steering_.self * steering_.qpn_stride;
    cfg.max_qps = std::min(cfg.max_qps, steering_.qpn_stride);
  }
  pending_.assign(std::bit_ceil(4u * std::max<uint32_t>(options_.burst, 1)), nullptr);
  pending_mask_ = static_cast<uint32_t>(pending_.size()) - 1;
  if (!port_.external_tx_refused().empty()) options_.zero_copy = false;
  if (options_.zero_copy) {
    static std::atomic<uint32_t> pools{0};
    const std::string name = "tita_holds" + std::to_string(pools++);
    rte_ring* ring = options_.hold_records == 0 ? nullptr
                                                : rte_ring_create(name.c_str(), options_.hold_records,
                                                                  static_cast<int>(rte_socket_id()),
                                                                  RING_F_SC_DEQ | RING_F_EXACT_SZ);
    if (ring != nullptr) {
      holds_ = new HoldPool;
      holds_->released = ring;
      holds_->records.resize(options_.hold_records);
      holds_->freed_here.reserve(options_.hold_records);
      for (HoldPool::Record& r : holds_->records) {
        r.pool = holds_;
        r.shinfo.free_cb = HoldPool::on_free;
        r.shinfo.fcb_opaque = &r;
        holds_->free.push_back(&r);
      }
    }
    // Zero copy without holds would give memory back to the application while
    // the port still reads it: without the pool, everything is copied.
    if (holds_ == nullptr) options_.zero_copy = false;
  }
  engine_ = std::make_unique<engine::Engine>(cfg, this);  // asks holds_payload(): after the pool
}

EngineHost::~EngineHost() {
  for (uint32_t i = 0; i < pending_count(); ++i) rte_pktmbuf_free(pending_at(i));
  if (holds_ != nullptr) {
    if (holds_->out() > 0) rte_eth_tx_done_cleanup(port_.id(), queue_, 0);
    drain_releases();
    // Frames still in the port (or a ring peer's hands) call back into the
    // pool when freed: it stays, unreachable but valid, for them.
    if (holds_->out() == 0) {
      rte_ring_free(holds_->released);
      delete holds_;
    }
  }
  for (Region& r : regions_) {
    rte_extmem_unregister(r.base, r.len);
    delete r.shinfo;
  }
}

int EngineHost::register_memory(void* addr, size_t len, std::string* err) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (reinterpret_cast<uintptr_t>(addr) % page != 0 || len % page != 0) {
    *err = "zero-copy memory must be page aligned (" + std::to_string(page) + " bytes) in address and length";
    return -EINVAL;
  }
  if (rte_extmem_register(addr, len, nullptr, 0, page) != 0 && rte_errno != EEXIST) {
    *err = std::string("rte_extmem_register: ") + rte_strerror(rte_errno);
    return -rte_errno;
  }
  // Devices that DMA (PCI NICs) need the region mapped; vdevs do not support it.
  rte_eth_dev_info info;
  if (rte_eth_dev_info_get(port_.id(), &info) == 0 && info.device != nullptr) {
    rte_dev_dma_map(info.device, addr, iova_of(addr), len);
  }
  auto* shinfo = new rte_mbuf_ext_shared_info{};
  shinfo->free_cb = no_free;
  shinfo->fcb_opaque = nullptr;
  rte_mbuf_ext_refcnt_set(shinfo, 1);  // held by the host for its lifetime
  regions_.push_back({static_cast<uint8_t*>(addr), len, shinfo});
  return 0;
}

const EngineHost::Region* EngineHost::region_of(const void* p, size_t len) const {
  const auto* b = static_cast<const uint8_t*>(p);
  for (const Region& r : regions_) {
    if (b >= r.base && b + len <= r.base + r.len) return &r;
  }
  return nullptr;
}

uint32_t EngineHost::tx_space() { return static_cast<uint32_t>(pending_.size()) - pending_count(); }

bool EngineHost::zero_copy(const engine::TxFrame& f) const {
  if (!options_.zero_copy || f.n_payload == 0 || f.transient) return false;
  for (uint32_t i = 0; i < f.n_payload; ++i) {
    const void* data = f.payload[i].data;
    if (data == nullptr || region_of(data, f.payload[i].len) == nullptr || iova_of(data) == RTE_BAD_IOVA) return false;
  }
  return true;
}

void EngineHost::transmit_burst(uint64_t, const engine::TxFrame* frames, uint32_t n) {
  rte_mempool* pool = port_.pool();
  rte_mbuf* heads[32];
  for (uint32_t done = 0; done < n;) {
    const uint32_t k = std::min<uint32_t>(n - done, 32);
    // The head mbufs of the burst in one call; one by one only when the pool
    // cannot give them all (so that what it has still goes out).
    const bool bulk = rte_pktmbuf_alloc_bulk(pool, heads, k) == 0;
    for (uint32_t i = 0; i < k; ++i) {
      rte_mbuf* m = bulk ? heads[i] : rte_pktmbuf_alloc(pool);
      if (m == nullptr) [[unlikely]] {
        ++counters_.tx_no_mbuf;
        continue;
      }
      if (pending_count() == pending_.size()) [[unlikely]] {  // more than tx_space() allowed
        rte_pktmbuf_free(m);
        ++counters_.tx_overrun;
        continue;
      }
      if (build(frames[done + i], m)) {
        pending_push(m);
        ++counters_.tx_frames;
      }
    }
    done += k;
  }
}

bool EngineHost::build(const engine::TxFrame& f, rte_mbuf* m) {
  bool zc = zero_copy(f);
  if (zc && f.hold != 0 && (holds_ == nullptr || holds_->free.empty())) [[unlikely]] {
    zc = false;  // no record to hold it with: copied
    ++counters_.tx_holds_full;
  }
  if (zc) {
    // Headers in the head mbuf, each payload piece as an external buffer, then
    // the tail: the extra mbufs in one call too.
    rte_mbuf* more[engine::TxFrame::kMaxPayloadSegments + 1];
    const uint32_t n_more = f.n_payload + 1;
    if (rte_pktmbuf_alloc_bulk(port_.pool(), more, n_more) != 0) [[unlikely]] {
      rte_pktmbuf_free(m);
      ++counters_.tx_no_mbuf;
      return false;
    }
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.hdr_len)), f.hdr, f.hdr_len);
    // A send WR's payload: its buffers share a record whose release lets the
    // WR complete; the last of them to be freed hands it back.
    rte_mbuf_ext_shared_info* held = nullptr;
    if (f.hold != 0) {
      HoldPool::Record* rec = holds_->free.back();
      holds_->free.pop_back();
      rec->token = f.hold;
      rte_mbuf_ext_refcnt_set(&rec->shinfo, static_cast<uint16_t>(f.n_payload));
      engine_->hold_payload(f.hold);
      held = &rec->shinfo;
    }
    for (uint32_t i = 0; i < f.n_payload; ++i) {
      rte_mbuf* e = more[i];
      auto* data = const_cast<void*>(f.payload[i].data);
      rte_mbuf_ext_shared_info* shinfo = held;
      if (shinfo == nullptr) {
        shinfo = region_of(data, f.payload[i].len)->shinfo;
        rte_mbuf_ext_refcnt_update(shinfo, 1);
      }
      rte_pktmbuf_attach_extbuf(e, data, iova_of(data), static_cast<uint16_t>(f.payload[i].len), shinfo);
      e->data_len = static_cast<uint16_t>(f.payload[i].len);
      e->pkt_len = f.payload[i].len;
    }
    rte_mbuf* t = more[f.n_payload];
    auto* tail = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(t, static_cast<uint16_t>(f.tail_len)));
    std::memcpy(tail, f.tail, f.tail_len);
    f.finish_icrc(tail);  // one pass: the CRC reads the payload where it lies
    for (uint32_t i = 0; i < n_more; ++i) {
      if (rte_pktmbuf_chain(m, more[i]) != 0) [[unlikely]] {  // more segments than the mbuf may have
        rte_pktmbuf_free_bulk(more + i, n_more - i);
        rte_pktmbuf_free(m);
        ++counters_.tx_no_mbuf;
        return false;
      }
    }
    ++counters_.tx_zero_copy;
    return true;
  }
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, static_cast<uint16_t>(f.len())));
  if (p == nullptr) [[unlikely]] {  // larger than the mbuf's data room
    rte_pktmbuf_free(m);
    ++counters_.tx_oversize;
    return false;
  }
  f.copy_to(p);  // the ICRC summed as the payload is copied
  if (f.n_payload > 0) ++counters_.tx_copied;
  return true;
}

bool EngineHost::on_pfc(uint64_t now_ns, const rte_mbuf* m) {
  const auto* p = rte_pktmbuf_mtod(m, const uint8_t*);
  if (m->data_len < 14 || p[12] != 0x88 || p[13] != 0x08) return false;  // not MAC control
  fabric::PfcInfo info;
  if (options_.honour_pfc && fabric::parse_pfc_frame(p, m->data_len, &info)) {
    const uint64_t link = uint64_t{port_.link_speed_mbps()} * 1'000'000;
    const uint64_t rate = link != 0 ? link : engine_->config().line_rate_bps;
    pause_.apply(info, now_ns, rate, 1, [&](uint8_t, bool pause, uint64_t) {
      ++(pause ? counters_.rx_pfc_pauses : counters_.rx_pfc_resumes);
    });
  }
  return true;  // MAC control frames are the link's, never the engine's
}

void EngineHost::send_pfc_storm(uint64_t now_ns) {
  storm_next_ns_ = now_ns + kPfcStormEveryNs;
  if (pending_count() == pending_.size()) return;  // the next poll tries again
  rte_mbuf* m = rte_pktmbuf_alloc(port_.pool());
  if (m == nullptr) {
    ++counters_.tx_no_mbuf;
    return;
  }
  fabric::PfcInfo info;
  const auto prio = static_cast<uint8_t>(options_.pfc_storm_priority);
  info.class_enable = static_cast<uint8_t>(1u << prio);
  info.quanta[prio] = 0xffff;
  const uint32_t len = fabric::build_pfc_frame(rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m),
                                               engine_->config().mac, info);
  m->data_len = m->pkt_len = static_cast<uint16_t>(len);
  pending_push(m);
  ++counters_.tx_pfc_frames;
}

bool EngineHost::paused(const rte_mbuf* m) const {
  static const fabric::ClassifyConfig kNicDefault;  // PCP if tagged, else DSCP >> 3
  fabric::FrameRef f;
  f.data = rte_pktmbuf_mtod(m, const uint8_t*);
  f.data_len = m->data_len;
  f.frame_bytes = m->pkt_len;
  fabric::Classified c;
  fabric::classify(f, kNicDefault, false, &c);
  return c.kind == fabric::FrameKind::kIp && pause_.paused(c.priority, now_ns_);
}

uint32_t EngineHost::pending_send(uint32_t n) {
  uint32_t sent = 0;
  while (sent < n) {
    // The ring's contiguous part from the head: the port takes an array.
    const uint32_t at = pending_head_ & pending_mask_;
    const uint32_t run = std::min<uint32_t>({n - sent, static_cast<uint32_t>(pending_.size()) - at, UINT16_MAX});
    const uint16_t took = port_.tx(queue_, &pending_[at], static_cast<uint16_t>(run));
    pending_head_ += took;
    sent += took;
    if (took < run) break;  // the port is full: the rest waits, in order
  }
  return sent;
}

void EngineHost::flush() {
  if (pending_count() == 0) return;
  if (pause_.any_paused(now_ns_)) [[unlikely]] {
    // Frames of a paused priority wait, in order; the others go now. (Both
    // lists keep their capacity: nothing is allocated once they have grown.)
    pfc_go_.clear();
    pfc_wait_.clear();
    for (uint32_t i = 0; i < pending_count(); ++i) (paused(pending_at(i)) ? pfc_wait_ : pfc_go_).push_back(pending_at(i));
    if (!pfc_wait_.empty()) ++counters_.pfc_held;
    const uint16_t sent =
        pfc_go_.empty() ? 0 : port_.tx(queue_, pfc_go_.data(), static_cast<uint16_t>(pfc_go_.size()));
    // Unsent frames of either kind keep their order within their priority.
    pending_head_ = pending_tail_ = 0;
    for (size_t i = sent; i < pfc_go_.size(); ++i) pending_push(pfc_go_[i]);
    for (rte_mbuf* m : pfc_wait_) pending_push(m);
    return;
  }
  pending_send(pending_count());
}

std::vector<rte_ring*> Steering::make_inboxes(const std::string& tag, uint16_t engines, unsigned size) {
  std::vector<rte_ring*> rings;
  for (uint16_t k = 0; k < engines; ++k) {
    const std::string name = tag + "_inbox" + std::to_string(k);
    rte_ring* r = rte_ring_create(name.c_str(), size, static_cast<int>(rte_socket_id()), RING_F_SC_DEQ);
    if (r == nullptr) return {};
    rings.push_back(r);
  }
  return rings;
}

int EngineHost::steer_qp(uint32_t qpn, uint32_t peer_qpn, std::string* err) {
  (void)qpn;
  const int rc = port_.steer_udp_sport(engine::roce_udp_sport(peer_qpn, qpn), queue_, err);
  if (rc == 0) ++counters_.flow_rules;
  return rc;
}

void EngineHost::share_with_others(rte_mbuf* m) {
  for (uint16_t k = 0; k < steering_.inbox.size(); ++k) {
    if (k == steering_.self) continue;
    rte_mbuf_refcnt_update(m, 1);
    if (rte_ring_enqueue(steering_.inbox[k], m) == 0) {
      ++counters_.rx_handed_off;
    } else {
      rte_pktmbuf_free(m);  // drops the reference just taken
      ++counters_.rx_inbox_full;
    }
  }
}

// One frame to this engine (the mbuf is freed by the caller).
void EngineHost::deliver(uint64_t now_ns, rte_mbuf* m) {
  if (m->nb_segs == 1) {
    engine_->receive(now_ns, rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
  } else {
    // The parser wants one contiguous frame.
    const uint32_t len = std::min<uint32_t>(m->pkt_len, static_cast<uint32_t>(linear_.size()));
    const void* p = rte_pktmbuf_read(m, 0, len, linear_.data());
    engine_->receive(now_ns, static_cast<const uint8_t*>(p), len);
    ++counters_.rx_linearized;
  }
}

void EngineHost::drain_releases() {
  for (HoldPool::Record* r : holds_->freed_here) {
    engine_->release_payload(r->token);
    holds_->free.push_back(r);
  }
  counters_.holds_released += holds_->freed_here.size();
  holds_->freed_here.clear();
  void* got[64];
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst(holds_->released, got, 64, nullptr)) > 0) {
    for (unsigned i = 0; i < n; ++i) {
      auto* r = static_cast<HoldPool::Record*>(got[i]);
      engine_->release_payload(r->token);
      holds_->free.push_back(r);
    }
    counters_.holds_released += n;
  }
}

void EngineHost::cleanup_held(uint64_t now_ns) {
  if (cleanup_unsupported_ || pending_count() > 0 || now_ns < cleanup_next_ns_) return;
  cleanup_next_ns_ = now_ns + kCleanupEveryNs;
  ++counters_.tx_done_cleanups;
  if (rte_eth_tx_done_cleanup(port_.id(), queue_, 0) == -ENOTSUP) cleanup_unsupported_ = true;
}

uint32_t EngineHost::holds_out() const { return holds_ != nullptr ? holds_->out() : 0; }

uint32_t EngineHost::poll_once(uint64_t now_ns) {
  ++counters_.polls;
  now_ns_ = now_ns;
  HoldPool* outer = nullptr;  // hosts polled by one thread, in turn
  if (holds_ != nullptr) {
    outer = HoldPool::polling;
    HoldPool::polling = holds_;
    if (holds_->out() > 0) {
      drain_releases();
      if (holds_->out() > 0) cleanup_held(now_ns);
    }
  }
  if (now_ns > due_ns_ && now_ns - due_ns_ > kLatePollNs) {
    ++counters_.late_polls;
    counters_.late_ns += now_ns - due_ns_;
  }
  rte_mbuf* rx[64];
  const uint16_t n = port_.rx(queue_, rx, std::min<uint16_t>(options_.burst, 64));
  uint16_t mine = 0;
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = rx[i];
    if (on_pfc(now_ns, m)) [[unlikely]] {
      rte_pktmbuf_free(m);
      continue;
    }
    if (!steering_.inbox.empty()) {
      const auto* bytes = rte_pktmbuf_mtod(m, const uint8_t*);
      if (wire::ethertype_of(bytes, m->data_len) == wire::kEtherTypeArp) [[unlikely]] {
        // Every engine keeps a neighbour table: each one learns from every
        // ARP frame (the mbuf shared, read only; each copy freed by its reader).
        share_with_others(m);
      }
      // Another engine's QP: hand the frame over instead of parsing it here.
      const int32_t qpn = wire::peek_dest_qp(bytes, m->data_len);
      const uint32_t first = engine_->config().first_qpn - steering_.self * steering_.qpn_stride;
      // QP 1 (the GSI, where CM MADs go) lives on engine 0.
      if (qpn >= static_cast<int32_t>(first) || qpn == static_cast<int32_t>(engine::kGsiQpn)) {
        const uint32_t owner =
            qpn == static_cast<int32_t>(engine::kGsiQpn) ? 0 : (static_cast<uint32_t>(qpn) - first) / steering_.qpn_stride;
        if (owner != steering_.self && owner < steering_.inbox.size()) {
          if (rte_ring_enqueue(steering_.inbox[owner], m) == 0) {
            ++counters_.rx_handed_off;
          } else {
            rte_pktmbuf_free(m);
            ++counters_.rx_inbox_full;
          }
          continue;
        }
      }
    }
    deliver(now_ns, m);
    rx[mine++] = m;
  }
  if (mine > 0) rte_pktmbuf_free_bulk(rx, mine);
  counters_.rx_frames += mine;
  if (!steering_.inbox.empty()) {
    const unsigned got = rte_ring_dequeue_burst(steering_.inbox[steering_.self], reinterpret_cast<void**>(rx), 64,
                                                nullptr);
    for (unsigned i = 0; i < got; ++i) deliver(now_ns, rx[i]);
    if (got > 0) rte_pktmbuf_free_bulk(rx, got);
    counters_.rx_from_inbox += got;
    counters_.rx_frames += got;
  }
  if (options_.pfc_storm_priority >= 0 && now_ns >= storm_next_ns_) [[unlikely]] send_pfc_storm(now_ns);
  flush();  // room first, so the engine's step can use the whole burst
  engine_->poll(now_ns);
  flush();
  due_ns_ = engine_->next_wakeup_ns();
  if (holds_ != nullptr) {
    // Held frames come back without the engine's asking: a host that sleeps
    // until due_ns_ looks again soon.
    if (holds_->out() > 0) due_ns_ = std::min(due_ns_, now_ns + kCleanupEveryNs);
    HoldPool::polling = outer;
  }
  due_in_ns_ = due_ns_ > now_ns ? due_ns_ - now_ns : 0;
  last_poll_tsc_ = rte_rdtsc();
  return n;
}

uint64_t EngineHost::overdue_ns() const {
  const uint64_t at = last_poll_tsc_, due_in = due_in_ns_;  // written by the polling thread
  if (at == 0 || due_in == UINT64_MAX) return 0;
  const uint64_t elapsed = static_cast<uint64_t>(static_cast<double>(rte_rdtsc() - at) * 1e9 /
                                                 static_cast<double>(rte_get_tsc_hz()));
  return elapsed > due_in && elapsed - due_in > kLatePollNs ? elapsed - due_in : 0;
}

}  // namespace tita::dpdk
