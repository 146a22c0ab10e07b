// The neighbour table: the MAC of each IPv4 peer a QP's address vector names,
// learned by ARP (RFC 826) as a kernel resolves a RoCE AV.
//
// A QP that reaches RTR with an AV whose MAC is zero looks its peer up here. If
// the address is unknown it asks (a broadcast request, again every
// arp_retry_ns) and sends nothing until the answer comes; after arp_tries
// unanswered requests every QP waiting for that address fails with
// IBV_WC_RETRY_EXC_ERR. Requests for our address are answered, and both they and
// replies fill the table (Linux learns the sender of a request for itself too);
// a request frame from a waiting QP's peer names the peer's MAC as well.
// Entries stay until replaced: a gratuitous ARP or any later answer updates them.
// Static entries (add_neighbour) are never replaced. ARP goes untagged.
// Address handles (UD) resolve the same way: one waiting for an address gets
// its MAC from the answer, or fails with the QPs (ud.cc).
#include <cerrno>
#include <cstring>

#include "engine_impl.h"
#include "tita/wire/arp.h"

namespace tita::engine {

namespace {

constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr uint8_t kZeroMac[6] = {};

bool mac_zero(const uint8_t m[6]) { return std::memcmp(m, kZeroMac, 6) == 0; }

NeighbourEntry* find(std::vector<NeighbourEntry>& table, uint32_t ip) {
  for (NeighbourEntry& e : table) {
    if (e.n.ipv4 == ip) return &e;
  }
  return nullptr;
}

}  // namespace

void Engine::Impl::send_arp(uint16_t oper, const uint8_t dst_mac[6], const uint8_t target_mac[6],
                            uint32_t target_ip) {
  if (control_count == control.size() && !grow_ring(control, control_head, control_count, cfg.control_ring))
      [[unlikely]] {
    ++counters.control_ring_full;
    return;
  }
  ControlFrame& c = control[(control_head + control_count) % control.size()];
  c.len = wire::build_arp(c.data, oper, dst_mac, cfg.mac, cfg.gid.ipv4(), target_mac, target_ip);
  c.qp_num = 0;
  c.priority = 0;
  c.loopback = false;
  c.kind = ControlFrame::Kind::kOther;
  c.ce_packets = 0;
  ++control_count;
  ++(oper == wire::kArpRequest ? counters.arp_requests_sent : counters.arp_replies_sent);
}

bool Engine::Impl::neighbour_mac(uint32_t ip, uint8_t mac[6]) {
  NeighbourEntry* e = find(neighbours, ip);
  if (e != nullptr && (e->n.state == Neighbour::State::kReachable || e->n.state == Neighbour::State::kStatic)) {
    std::memcpy(mac, e->n.mac, 6);
    return true;
  }
  if (e == nullptr) {
    neighbours.push_back(NeighbourEntry{Neighbour{ip, {}, Neighbour::State::kIncomplete}, 0, now_ns});
    e = &neighbours.back();
  } else if (e->n.state == Neighbour::State::kFailed) {
    e->n.state = Neighbour::State::kIncomplete;  // asked again: try again
    e->tries = 0;
  }
  if (e->tries == 0) {
    send_arp(wire::kArpRequest, kBroadcast, kZeroMac, ip);
    e->tries = 1;
    e->next_ns = now_ns + cfg.arp_retry_ns;
  }
  arp_deadline_ns = std::min(arp_deadline_ns, e->next_ns);
  return false;
}

void Engine::Impl::resolve(Qp& qp) {
  AhAttr& ah = qp.cold.attr.ah_attr;
  qp.mac_pending = false;
  if (!mac_zero(ah.dmac)) return;
  if (ah.dgid == cfg.gid) {  // ourselves: the loop
    std::memcpy(ah.dmac, cfg.mac, 6);
    return;
  }
  qp.mac_pending = !neighbour_mac(ah.dgid.ipv4(), ah.dmac);
}

void Engine::Impl::learn(uint32_t ip, const uint8_t mac[6], bool permanent) {
  NeighbourEntry* e = find(neighbours, ip);
  if (e == nullptr) {
    neighbours.push_back(NeighbourEntry{Neighbour{ip, {}, Neighbour::State::kIncomplete}, 0, 0});
    e = &neighbours.back();
  } else if (e->n.state == Neighbour::State::kStatic && !permanent) {
    return;  // what the operator set stays
  }
  std::memcpy(e->n.mac, mac, 6);
  e->n.state = permanent ? Neighbour::State::kStatic : Neighbour::State::kReachable;
  e->tries = 0;
  for (auto& q : qps) {
    if (!q || !q->valid || !q->mac_pending || q->cold.attr.ah_attr.dgid.ipv4() != ip) continue;
    std::memcpy(q->cold.attr.ah_attr.dmac, mac, 6);
    q->mac_pending = false;
    path_at_rtr(*q);  // nothing was sent yet: the headers start afresh with the MAC
    reconsider(*q);
  }
  ah_learned(ip, mac);
}

void Engine::Impl::on_arp(const uint8_t* frame, uint32_t len) {
  wire::ArpInfo a;
  const bool ours = cfg.gid.is_ipv4();
  const bool addressed = wire::parse_arp(frame, len, &a) &&
                         (std::memcmp(a.eth_dst, cfg.mac, 6) == 0 || std::memcmp(a.eth_dst, kBroadcast, 6) == 0);
  const uint32_t me = ours ? cfg.gid.ipv4() : 0;
  const bool for_me = addressed && ours && a.tpa == me && a.spa != me;
  const bool known = addressed && find(neighbours, a.spa) != nullptr && a.spa != me && !mac_zero(a.sha);
  if (!for_me && !known) {
    ++counters.rx_not_for_us;
    ++counters.rx_dropped;
    return;
  }
  ++counters.arp_received;
  if (!mac_zero(a.sha)) learn(a.spa, a.sha, false);
  if (for_me && a.oper == wire::kArpRequest) send_arp(wire::kArpReply, a.sha, a.sha, a.spa);
}

void Engine::Impl::arp_tick() {
  arp_deadline_ns = kNever;
  for (NeighbourEntry& e : neighbours) {
    if (e.n.state != Neighbour::State::kIncomplete || e.tries == 0) continue;
    if (e.next_ns <= now_ns) {
      if (e.tries >= cfg.arp_tries) {
        // Nobody answered: the QPs waiting for this address fail as a lost peer does.
        e.n.state = Neighbour::State::kFailed;
        ++counters.arp_failures;
        for (auto& q : qps) {
          if (q && q->valid && q->mac_pending && q->cold.attr.ah_attr.dgid.ipv4() == e.n.ipv4) {
            to_error(*q, WcStatus::kRetryExcErr);
          }
        }
        ah_failed(e.n.ipv4);
        continue;
      }
      send_arp(wire::kArpRequest, kBroadcast, kZeroMac, e.n.ipv4);
      ++e.tries;
      e.next_ns = now_ns + cfg.arp_retry_ns;
    }
    arp_deadline_ns = std::min(arp_deadline_ns, e.next_ns);
  }
}

int Engine::add_neighbour(uint32_t ipv4, const uint8_t mac[6]) {
  if (mac_zero(mac) || (mac[0] & 1)) return -EINVAL;
  impl_->learn(ipv4, mac, true);
  return 0;
}

std::vector<Neighbour> Engine::neighbours() const {
  std::vector<Neighbour> out;
  for (const NeighbourEntry& e : impl_->neighbours) out.push_back(e.n);
  return out;
}

}  // namespace tita::engine
