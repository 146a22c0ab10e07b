// What the device says about itself: its attributes (ibv_query_device and
// the extended query libibverbs calls inline), its one port, its GID table
// (kGidTableLen entries, of which index 0, the IPv4-mapped address, RoCE v2,
// is the one in use: the others are empty, as a kernel RoCE device's are
// until the netdev gains addresses), its one P_Key, the sysfs file
// ibv_devinfo reads, and the Ethernet address of a GID (from the engines' ARP
// tables).
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "interpose.h"
#include "tita/engine/verbs.h"

namespace tita::verbs {
namespace {

// Width and speed in IB terms for an Ethernet rate, as Linux reports RoCE ports
// (the encodings of PortInfo: IBA 14.2.5.6; libibverbs has no names for them).
enum : uint8_t { kWidth1x = 1, kWidth4x = 2, kWidth8x = 4 };
enum : uint8_t {
  kSpeedSdr = 1,    // 2.5 Gb/s per lane
  kSpeedDdr = 2,    // 5
  kSpeedFdr10 = 8,  // 10
  kSpeedEdr = 32,   // 25
  kSpeedHdr = 64,   // 50
  kSpeedNdr = 128,  // 100
};

void ib_speed(uint32_t mbps, uint8_t* width, uint8_t* speed) {
  struct Step {
    uint32_t mbps;
    uint8_t width, speed;
  };
  static constexpr Step kSteps[] = {
      {2500, kWidth1x, kSpeedSdr},    {5000, kWidth1x, kSpeedDdr},     {10000, kWidth1x, kSpeedFdr10},
      {20000, kWidth4x, kSpeedDdr},   {25000, kWidth1x, kSpeedEdr},    {40000, kWidth4x, kSpeedFdr10},
      {50000, kWidth1x, kSpeedHdr},   {100000, kWidth4x, kSpeedEdr},   {200000, kWidth4x, kSpeedHdr},
      {400000, kWidth4x, kSpeedNdr},
  };
  for (const Step& s : kSteps) {
    if (mbps <= s.mbps) {
      *width = s.width;
      *speed = s.speed;
      return;
    }
  }
  *width = kWidth8x;
  *speed = kSpeedNdr;
}

void fill_device_attr(Device* d, ibv_device_attr* a) {
  std::memset(a, 0, sizeof *a);
  std::snprintf(a->fw_ver, sizeof a->fw_ver, "%s", kFirmwareVersion);
  a->node_guid = htobe64(d->node_guid());
  a->sys_image_guid = a->node_guid;
  a->max_mr_size = ~uint64_t{0};
  a->page_size_cap = ~uint64_t{0xfff};
  a->vendor_id = kVendorId;
  a->vendor_part_id = 0;
  a->hw_ver = 0;
  a->max_qp = static_cast<int>(d->config().engine.max_qps);
  a->max_qp_wr = static_cast<int>(kMaxWr);
  a->device_cap_flags =
      IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_SRQ_RESIZE;
  a->max_srq = 1 << 16;
  a->max_srq_wr = static_cast<int>(kMaxWr);
  a->max_srq_sge = eng::kMaxSge;
  a->max_sge = eng::kMaxSge;
  a->max_sge_rd = eng::kMaxSge;
  a->max_cq = static_cast<int>(kMaxCq);
  a->max_cqe = kMaxCqe;
  a->max_mr = (1 << 24) - 1;
  a->max_pd = 1 << 24;
  a->max_ah = (1 << 24) - 1;
  a->max_qp_rd_atom = eng::kMaxRdAtomic;
  a->max_res_rd_atom = static_cast<int>(eng::kMaxRdAtomic * d->config().engine.max_qps);
  a->max_qp_init_rd_atom = eng::kMaxRdAtomic;
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_pkeys = 1;
  a->local_ca_ack_delay = kLocalCaAckDelay;
  a->phys_port_cnt = 1;
}

int fill_port_attr(Device* d, uint8_t port, ibv_port_attr* a) {
  if (port != 1) return EINVAL;
  std::memset(a, 0, sizeof *a);
  a->state = d->link_up() ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  a->max_mtu = mtu_enum(d->max_path_mtu());
  a->active_mtu = a->max_mtu;
  a->gid_tbl_len = kGidTableLen;
  a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
  a->max_msg_sz = static_cast<uint32_t>(eng::kMaxMessageBytes);
  if (eng::EngineCounters c; d->counters(&c)) {
    a->bad_pkey_cntr = static_cast<uint32_t>(std::min<uint64_t>(c.rx_bad_pkey, 0xffff));
    a->qkey_viol_cntr = static_cast<uint32_t>(std::min<uint64_t>(c.rx_bad_qkey, 0xffff));
  }
  a->pkey_tbl_len = 1;
  a->max_vl_num = 1;
  const uint32_t speed = d->link_speed_mbps();
  ib_speed(speed ? speed : 100'000, &a->active_width, &a->active_speed);
  a->phys_state = d->link_up() ? 5 : 3;  // LinkUp / Disabled
  a->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}

// The P_Key table holds one entry, and the GID table one in use: port 1, index 0.
bool the_entry(uint32_t port, int64_t index) { return port == 1 && index == 0; }
// An index of the GID table, used or empty.
bool in_gid_table(uint32_t port, int64_t index) { return port == 1 && index >= 0 && index < kGidTableLen; }

// The answer of the calls rdma-core documents as returning -1 and setting errno.
int fail_with_errno(int err) {
  errno = err;
  return -1;
}

}  // namespace

// ---------------------------------------------------------------- the ops libibverbs calls inline

int op_query_port(ibv_context* ctx, uint8_t port, ibv_port_attr* attr, size_t len) {
  ibv_port_attr a;
  if (int rc = fill_port_attr(dev_of(ctx), port, &a); rc != 0) return rc;
  std::memset(attr, 0, len);
  std::memcpy(attr, &a, std::min(len, sizeof a));
  return 0;
}

int op_query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                       size_t len) {
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  ibv_device_attr_ex a{};
  fill_device_attr(dev_of(ctx), &a.orig_attr);
  // Nothing beyond the plain attributes but the port count: no on-demand
  // paging caps, timestamps, TSO, RSS, tag matching, packet pacing or device
  // memory (all zero, which is how a provider says "none").
  a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
  a.max_dm_size = 0;
  std::memset(attr, 0, len);
  std::memcpy(attr, &a, std::min(len, sizeof a));
  return 0;
}

// ---------------------------------------------------------------- queries

TITA_EXPORT int ibv_query_device(ibv_context* ctx, ibv_device_attr* attr) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_query_device, "IBVERBS_1.1"), EINVAL, ctx, attr);
  fill_device_attr(dev_of(ctx), attr);
  return 0;
}

TITA_EXPORT int ibv_query_port(ibv_context* ctx, uint8_t port, _compat_ibv_port_attr* attr) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_query_port, "IBVERBS_1.1"), EINVAL, ctx, port, attr);
  // The old, shorter struct: without the fields added since (port_cap_flags2).
  ibv_port_attr a;
  if (int rc = fill_port_attr(dev_of(ctx), port, &a); rc != 0) return rc;
  std::memcpy(attr, &a, offsetof(ibv_port_attr, port_cap_flags2));
  return 0;
}

TITA_EXPORT int ibv_query_gid(ibv_context* ctx, uint8_t port, int index, ibv_gid* gid) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_query_gid, "IBVERBS_1.1"), -1, ctx, port, index, gid);
  if (!in_gid_table(port, index)) return fail_with_errno(EINVAL);
  if (index == 0) {
    std::memcpy(gid->raw, dev_of(ctx)->gid().raw, 16);
  } else {
    std::memset(gid->raw, 0, 16);  // an empty entry reads as the zero GID, as libibverbs reports it
  }
  return 0;
}

// A private libibverbs symbol, but ibv_devinfo calls it.
enum TitaGidTypeSysfs { kGidTypeSysfsRoceV1 = 0, kGidTypeSysfsRoceV2 = 1 };
TITA_EXPORT int ibv_query_gid_type(ibv_context* ctx, uint8_t port, unsigned int index, int* type) {
  if (!Device::ours(ctx)) {
    auto f = real<int (*)(ibv_context*, uint8_t, unsigned int, int*)>("ibv_query_gid_type", "IBVERBS_PRIVATE_34");
    return forward(f, EINVAL, ctx, port, index, type);
  }
  if (!in_gid_table(port, index)) return EINVAL;
  *type = kGidTypeSysfsRoceV2;  // an empty entry's type, as a kernel RoCE device's, is RoCE v2 too
  return 0;
}

TITA_EXPORT int _ibv_query_gid_ex(ibv_context* ctx, uint32_t port, uint32_t index, ibv_gid_entry* entry,
                                  uint32_t flags, size_t entry_size) {
  if (!Device::ours(ctx)) {
    return forward(REAL(_ibv_query_gid_ex, "IBVERBS_1.11"), EINVAL, ctx, port, index, entry, flags, entry_size);
  }
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return EINVAL;
  if (port != 1 || index >= kGidTableLen) return EINVAL;
  if (index != 0) return ENODATA;  // an empty entry
  std::memset(entry, 0, entry_size);
  std::memcpy(entry->gid.raw, dev_of(ctx)->gid().raw, 16);
  entry->gid_index = 0;
  entry->port_num = 1;
  entry->gid_type = IBV_GID_TYPE_ROCE_V2;
  entry->ndev_ifindex = 0;
  return 0;
}

TITA_EXPORT ssize_t _ibv_query_gid_table(ibv_context* ctx, ibv_gid_entry* entries, size_t max_entries,
                                         uint32_t flags, size_t entry_size) {
  if (!Device::ours(ctx)) {
    return forward(REAL(_ibv_query_gid_table, "IBVERBS_1.11"), -EINVAL, ctx, entries, max_entries, flags, entry_size);
  }
  if (flags != 0 || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
  if (max_entries < 1) return -EINVAL;  // fewer than the entries in use
  _ibv_query_gid_ex(ctx, 1, 0, entries, 0, entry_size);
  return 1;  // the entries in use
}

TITA_EXPORT int ibv_query_pkey(ibv_context* ctx, uint8_t port, int index, __be16* pkey) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_query_pkey, "IBVERBS_1.1"), -1, ctx, port, index, pkey);
  if (!the_entry(port, index)) return fail_with_errno(EINVAL);
  *pkey = htons(0xffff);
  return 0;
}

TITA_EXPORT int ibv_get_pkey_index(ibv_context* ctx, uint8_t port, __be16 pkey) {
  if (!Device::ours(ctx)) return forward(REAL(ibv_get_pkey_index, "IBVERBS_1.5"), -1, ctx, port, pkey);
  if (port == 1 && ntohs(pkey) == 0xffff) return 0;
  return fail_with_errno(ENOENT);
}

// The sysfs files of a kernel device; for tita0's invented path, the one
// ibv_devinfo prints.
TITA_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  std::string err;
  if (Device* d = Device::get(&err); d != nullptr && std::strcmp(dir, d->ibv()->ibdev_path) == 0) {
    if (std::strcmp(file, "board_id") == 0) {
      const int n = std::snprintf(buf, size, "tita on DPDK port %s", d->port_name().c_str());
      return std::min<int>(n, static_cast<int>(size) - 1);
    }
    return fail_with_errno(ENOENT);
  }
  return forward(REAL(ibv_read_sysfs_file, "IBVERBS_1.0"), -1, dir, file, buf, size);
}

// ---------------------------------------------------------------- address resolution

TITA_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context* ctx, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                            uint16_t* vid) {
  if (!Device::ours(ctx)) {
    return forward(REAL(ibv_resolve_eth_l2_from_gid, "IBVERBS_1.1"), EOPNOTSUPP, ctx, attr, eth_mac, vid);
  }
  Device* d = dev_of(ctx);
  const tita::wire::Gid g = [&] {
    tita::wire::Gid x;
    std::memcpy(x.raw, attr->grh.dgid.raw, 16);
    return x;
  }();
  if (vid) *vid = 0xffff;  // no VLAN
  if (g == d->gid()) {
    std::memcpy(eth_mac, d->mac(), 6);
    return 0;
  }
  for (uint32_t k = 0; k < d->lanes(); ++k) {  // every engine keeps a table (all hear every ARP frame)
    Device::Lock lock(*d, k);
    for (const eng::Neighbour& n : d->engine(k).neighbours()) {
      if (g.is_ipv4() && n.ipv4 == g.ipv4() &&
          (n.state == eng::Neighbour::State::kReachable || n.state == eng::Neighbour::State::kStatic)) {
        std::memcpy(eth_mac, n.mac, 6);
        return 0;
      }
    }
  }
  return ENOENT;  // not (yet) known: a QP with this GID resolves it by itself
}

}  // namespace tita::verbs
