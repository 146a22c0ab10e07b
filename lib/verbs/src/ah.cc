// Address handles, for UD QPs: ibv_create_ah (a RoCEv2 address vector: the
// destination GID, traffic class, flow label), ibv_init_ah_from_wc and
// ibv_create_ah_from_wc (the way back to a datagram's sender, from the GRH
// area of its receive buffer), ibv_destroy_ah.
//
// An AH exists on every lane with one number, as a PD does. Its MAC is
// resolved as RC QPs resolve their peer's (the engine's neighbour table: ARP),
// and ibv_create_ah waits for the answer, as the kernel resolves a RoCE AH
// before it returns: at most arp_tries x arp_retry_ms, then EHOSTUNREACH.
#include <arpa/inet.h>
#include <time.h>

#include <cerrno>
#include <cstring>

#include "interpose.h"
#include "tita/wire/headers.h"

namespace tita::verbs {
namespace {

// The engine's address vector of an ibv_ah_attr, or an errno value with one line.
int to_engine_av(Device* d, const ibv_ah_attr& a, eng::AhAttr* out) {
  const char* why = nullptr;
  if (!a.is_global) {
    why = "RoCE address handles need a GRH: is_global = 1 with the destination GID";
  } else if (a.grh.sgid_index != 0) {
    why = "grh.sgid_index: the GID table has one entry (index 0)";
  } else if (a.port_num != 1) {
    why = "port_num: the device has one port (1)";
  }
  if (why != nullptr) {
    d->log(Config::Log::kError, "ibv_create_ah: %s", why);
    return EINVAL;
  }
  std::memcpy(out->dgid.raw, a.grh.dgid.raw, 16);
  out->traffic_class = a.grh.traffic_class;
  out->hop_limit = a.grh.hop_limit;
  if (a.grh.flow_label != 0) out->udp_sport = udp_sport_of_flow_label(a.grh.flow_label);
  return 0;
}

// Waits until every lane knows the AH's MAC (the lanes' threads run ARP
// meanwhile): 0, EHOSTUNREACH when nobody answered.
int wait_resolved(Device* d, uint32_t id) {
  const auto& e = d->config().engine;
  const uint64_t limit_ns = uint64_t{e.arp_tries} * e.arp_retry_ns + 1'000'000'000;
  for (uint64_t waited_ns = 0;; waited_ns += 1'000'000) {
    int pending = 0;
    for (uint32_t k = 0; k < d->lanes(); ++k) {
      Device::Lock lock(*d, k);
      const int rc = d->engine(k).query_ah(id);
      if (rc == -EAGAIN) {
        ++pending;
        d->step(k, false);
      } else if (rc != 0) {
        return -rc;
      }
    }
    if (pending == 0) return 0;
    if (waited_ns >= limit_ns) return EHOSTUNREACH;
    const timespec ms{0, 1'000'000};
    nanosleep(&ms, nullptr);
  }
}

ibv_ah* create_ah(ibv_pd* ibpd, ibv_ah_attr* attr) {
  Device* d = dev_of(ibpd->context);
  eng::AhAttr av;
  if (int rc = to_engine_av(d, *attr, &av); rc != 0) {
    errno = rc;
    return nullptr;
  }
  auto* ah = make<Ah>();
  if (ah == nullptr) return nullptr;
  uint32_t failed = 0;
  int rc = d->on_every_lane(
      [&](eng::Engine& e, uint32_t k) {
        uint32_t id;
        if (int r = e.create_ah(pd_of(ibpd)->id, av, &id); r != 0) return r;
        if (k == 0) ah->id = id;
        return id == ah->id ? 0 : -EIO;  // every lane numbers alike
      },
      &failed);
  if (rc != 0) {
    for (uint32_t k = 0; k < failed; ++k) {
      Device::Lock lock(*d, k);
      d->engine(k).destroy_ah(ah->id);
    }
    char gid[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, attr->grh.dgid.raw, gid, sizeof gid);
    d->log(Config::Log::kError, "ibv_create_ah: destination %s refused (an IPv6 GID needs a MAC tita cannot learn)",
           gid);
    delete ah;
    errno = -rc;
    return nullptr;
  }
  if (int r = wait_resolved(d, ah->id); r != 0) {
    char gid[INET6_ADDRSTRLEN];
    inet_ntop(AF_INET6, attr->grh.dgid.raw, gid, sizeof gid);
    d->log(Config::Log::kError, "ibv_create_ah: nobody answered ARP for %s", gid);
    d->on_every_lane([ah](eng::Engine& e, uint32_t) { return e.destroy_ah(ah->id); });
    delete ah;
    errno = r;
    return nullptr;
  }
  ah->attr = *attr;
  ah->ah.context = ibpd->context;
  ah->ah.pd = ibpd;
  ah->ah.handle = ah->id;
  Context* c = context_of(ibpd->context);
  track(c, c->ahs, ah);
  return &ah->ah;
}

// The address vector back to a datagram's sender (IBA 11.4.1.1 with RoCEv2's
// GRH area: an IPv6 header in all 40 bytes, or an IPv4 header in the last 20).
int init_ah_from_wc(Device* d, uint8_t port, const ibv_wc* wc, const ibv_grh* grh, ibv_ah_attr* ah) {
  if (port != 1) return EINVAL;
  if (!(wc->wc_flags & IBV_WC_GRH)) {
    d->log(Config::Log::kError, "ibv_init_ah_from_wc: the completion has no GRH (IBV_WC_GRH): RoCE needs one");
    return EINVAL;
  }
  std::memset(ah, 0, sizeof *ah);
  const auto* bytes = reinterpret_cast<const uint8_t*>(grh);
  const auto* ip4 = reinterpret_cast<const wire::Ipv4Hdr*>(bytes + sizeof(ibv_grh) - sizeof(wire::Ipv4Hdr));
  static_assert(sizeof(ibv_grh) == eng::kGrhBytes);
  if ((bytes[0] >> 4) == 6) {
    const uint32_t vtf = ntohl(grh->version_tclass_flow);
    std::memcpy(ah->grh.dgid.raw, grh->sgid.raw, 16);
    ah->grh.traffic_class = static_cast<uint8_t>(vtf >> 20);
    ah->grh.flow_label = vtf & 0xfffff;
  } else if (ip4->version_ihl == 0x45) {
    ah->grh.dgid.raw[10] = ah->grh.dgid.raw[11] = 0xff;
    std::memcpy(ah->grh.dgid.raw + 12, ip4->src, 4);
    ah->grh.traffic_class = ip4->tos;
  } else {
    d->log(Config::Log::kError, "ibv_init_ah_from_wc: the GRH area holds neither an IPv6 nor an IPv4 header");
    return EINVAL;
  }
  ah->grh.hop_limit = 0xff;
  ah->grh.sgid_index = 0;
  ah->is_global = 1;
  ah->dlid = wc->slid;
  ah->sl = wc->sl;
  ah->src_path_bits = wc->dlid_path_bits;
  ah->port_num = port;
  return 0;
}

}  // namespace

// ---------------------------------------------------------------- destruction (also by ibv_close_device)

int destroy_ah(Ah* ah) {
  Device* d = dev_of(ah->ah.context);
  if (d->on_every_lane([ah](eng::Engine& e, uint32_t) { return e.destroy_ah(ah->id); }) != 0) return EINVAL;
  Context* c = context_of(ah->ah.context);
  untrack(c, c->ahs, ah);
  delete ah;
  return 0;
}

// ---------------------------------------------------------------- address handles

TITA_EXPORT ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!Device::ours(pd->context)) return forward(REAL(ibv_create_ah, "IBVERBS_1.1"), nullptr, pd, attr);
  return create_ah(pd, attr);
}

TITA_EXPORT int ibv_destroy_ah(ibv_ah* ah) {
  if (!Device::ours(ah->context)) return forward(REAL(ibv_destroy_ah, "IBVERBS_1.1"), EINVAL, ah);
  return destroy_ah(ah_of(ah));
}

TITA_EXPORT int ibv_init_ah_from_wc(ibv_context* ctx, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                                    ibv_ah_attr* ah_attr) {
  if (!Device::ours(ctx)) {
    return forward(REAL(ibv_init_ah_from_wc, "IBVERBS_1.1"), EINVAL, ctx, port, wc, grh, ah_attr);
  }
  return init_ah_from_wc(dev_of(ctx), port, wc, grh, ah_attr);
}

TITA_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  if (!Device::ours(pd->context)) {
    return forward(REAL(ibv_create_ah_from_wc, "IBVERBS_1.1"), nullptr, pd, wc, grh, port);
  }
  ibv_ah_attr attr;
  if (int rc = init_ah_from_wc(dev_of(pd->context), port, wc, grh, &attr); rc != 0) {
    errno = rc;
    return nullptr;
  }
  return create_ah(pd, &attr);
}

}  // namespace tita::verbs
