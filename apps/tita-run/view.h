// The device as middleware looks for it, inside tita-run's process tree.
//
// libibverbs programs find tita0 through the preloaded library alone. UCX (and
// Open MPI through it) look further before they use a device: UCX 1.13 skips
// an IB device unless /dev/infiniband/<dev_name> is a character device it may
// read and write, and reads its RoCE GIDs' types from
// /sys/class/infiniband/<dev>/ports/<port>/gid_attrs/types/<index>. tita-run,
// when root, gives its program (and everything it starts) a private mount
// namespace in which those files exist; nothing outside the process tree sees
// them, and they go with it.
#pragma once

#include <string>

#include "tita/verbs/config.h"

namespace tita::run {

// Makes the view for the device `c` describes, in a new mount namespace of
// this process (inherited by the program it execs):
//   /dev/infiniband/uverbs-<device>   a character device with /dev/null's numbers
//                                     (nobody opens it: the library serves the device)
//   /sys/class/infiniband/<device>/   node_guid, sys_image_guid, node_type, node_desc,
//                                     fw_ver, ports/1/{state, phys_state, link_layer, lid,
//                                     gids/0..15, gid_attrs/types/0, pkeys/0}
// Where /dev/infiniband or /sys/class/infiniband do not exist (no kernel RDMA
// device), their parent is covered by a tmpfs holding bind mounts of every
// original entry, plus the new directory; where they exist they are covered
// the same way, so kernel devices stay visible beside tita0.
// 0, or -errno with *err saying why: -EPERM when not root (the program then
// runs without the view: libibverbs programs are unaffected, UCX does not
// list the device).
int make_device_view(const verbs::Config& c, std::string* err);

}  // namespace tita::run
