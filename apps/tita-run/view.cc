#include "view.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace tita::run {
namespace {

// Must match the device (lib/verbs): one port, 16 GID entries of which index 0
// is in use, one P_Key.
constexpr int kGidTableLen = 16;

int fail(std::string* err, const std::string& what) {
  const int e = errno != 0 ? errno : EIO;
  *err = what + ": " + std::strerror(e);
  return -e;
}

// `path` covered by a tmpfs that holds what it held: a bind mount of every
// entry (directories recursively), symbolic links copied. Entries can then be
// added to it without touching the original.
int cover(const std::string& path, std::string* err) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(err, "open " + path);
  struct stat st;
  std::vector<std::string> names;
  if (fstat(fd, &st) != 0) {
    close(fd);
    return fail(err, "stat " + path);
  }
  if (DIR* d = fdopendir(dup(fd)); d != nullptr) {
    while (const dirent* e = readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  char opts[32];
  std::snprintf(opts, sizeof opts, "mode=%o", st.st_mode & 07777);
  if (mount("tita-view", path.c_str(), "tmpfs", MS_NOSUID, opts) != 0) {
    close(fd);
    return fail(err, "mount a tmpfs on " + path);
  }
  // The originals, reached through the descriptor opened before they were covered.
  const std::string under = "/proc/self/fd/" + std::to_string(fd) + "/";
  int rc = 0;
  for (const std::string& n : names) {
    const std::string src = under + n, dst = path + "/" + n;
    struct stat es;
    if (lstat(src.c_str(), &es) != 0) continue;  // gone meanwhile
    if (S_ISLNK(es.st_mode)) {
      char target[4096];
      const ssize_t len = readlink(src.c_str(), target, sizeof target - 1);
      if (len < 0) continue;
      target[len] = '\0';
      if (symlink(target, dst.c_str()) != 0) rc = fail(err, "symlink " + dst);
    } else if (S_ISDIR(es.st_mode)) {
      if (mkdir(dst.c_str(), es.st_mode & 07777) != 0 ||
          mount(src.c_str(), dst.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
        rc = fail(err, "bind " + dst);
      }
    } else {
      const int f = open(dst.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      if (f >= 0) close(f);
      if (f < 0 || mount(src.c_str(), dst.c_str(), nullptr, MS_BIND, nullptr) != 0) rc = fail(err, "bind " + dst);
    }
    if (rc != 0) break;
  }
  close(fd);
  return rc;
}

// `dir` as a directory we may add to: covered if it exists, else created in
// its parent, which is covered first.
int writable_dir(const std::string& dir, std::string* err) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) return cover(dir, err);
  const std::string parent = dir.substr(0, dir.rfind('/'));
  if (int rc = cover(parent, err); rc != 0) return rc;
  if (mkdir(dir.c_str(), 0755) != 0) return fail(err, "mkdir " + dir);
  return 0;
}

int put(const std::string& path, const std::string& text, std::string* err) {
  FILE* f = std::fopen(path.c_str(), "we");
  if (f == nullptr) return fail(err, "create " + path);
  std::fputs(text.c_str(), f);
  std::fputc('\n', f);
  std::fclose(f);
  chmod(path.c_str(), 0444);
  return 0;
}

int dirs(const std::string& base, const std::vector<std::string>& subdirs, std::string* err) {
  for (const std::string& s : subdirs) {
    const std::string p = base + "/" + s;
    if (mkdir(p.c_str(), 0755) != 0) return fail(err, "mkdir " + p);
  }
  return 0;
}

std::string guid_text(uint64_t g) {
  char b[24];
  std::snprintf(b, sizeof b, "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48) & 0xffff,
                static_cast<unsigned>(g >> 32) & 0xffff, static_cast<unsigned>(g >> 16) & 0xffff,
                static_cast<unsigned>(g) & 0xffff);
  return b;
}

// A GID as the kernel prints it: eight groups of four hex digits.
std::string gid_text(uint32_t ipv4) {
  char b[48];
  if (ipv4 == 0) return "0000:0000:0000:0000:0000:0000:0000:0000";
  std::snprintf(b, sizeof b, "0000:0000:0000:0000:0000:ffff:%04x:%04x", ipv4 >> 16, ipv4 & 0xffff);
  return b;
}

}  // namespace

int make_device_view(const verbs::Config& c, std::string* err) {
  if (geteuid() != 0) {
    errno = EPERM;
    return fail(err, "not root");
  }
  if (unshare(CLONE_NEWNS) != 0) return fail(err, "unshare(CLONE_NEWNS)");
  // Our mounts stay ours, and the host's later ones do not reach us.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return fail(err, "make / private");

  if (int rc = writable_dir("/dev/infiniband", err); rc != 0) return rc;
  const std::string node = "/dev/infiniband/uverbs-" + c.device;
  if (mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) return fail(err, "mknod " + node);
  chmod(node.c_str(), 0666);  // whatever the umask

  if (int rc = writable_dir("/sys/class/infiniband", err); rc != 0) return rc;
  const std::string d = "/sys/class/infiniband/" + c.device;
  const std::string p = d + "/ports/1";
  if (mkdir(d.c_str(), 0755) != 0) return fail(err, "mkdir " + d);
  if (int rc = dirs(d, {"ports", "ports/1", "ports/1/gids", "ports/1/gid_attrs", "ports/1/gid_attrs/types",
                        "ports/1/pkeys"}, err);
      rc != 0) {
    return rc;
  }
  uint64_t guid = 0;
  int rc = 0;
  if (verbs::settled_node_guid(c, &guid)) {  // a NIC without a configured MAC: its own, which only the port knows
    rc = put(d + "/node_guid", guid_text(guid), err);
    if (rc == 0) rc = put(d + "/sys_image_guid", guid_text(guid), err);
  }
  if (rc == 0) rc = put(d + "/node_type", "1: CA", err);
  if (rc == 0) rc = put(d + "/node_desc", c.device + " (tita over DPDK)", err);
  if (rc == 0) rc = put(d + "/fw_ver", verbs::kFirmwareVersion, err);
  // A vdev's port counts as plugged from the start, as the device reports it;
  // a NIC's state here is a snapshot (ibv_query_port has the live one).
  if (rc == 0) rc = put(p + "/state", "4: ACTIVE", err);
  if (rc == 0) rc = put(p + "/phys_state", "5: LinkUp", err);
  if (rc == 0) rc = put(p + "/link_layer", "Ethernet", err);
  if (rc == 0) rc = put(p + "/lid", "0x0", err);
  if (rc == 0) rc = put(p + "/sm_lid", "0x0", err);
  if (rc == 0) rc = put(p + "/lid_mask_count", "0", err);
  if (rc == 0) rc = put(p + "/pkeys/0", "0xffff", err);
  for (int i = 0; rc == 0 && i < kGidTableLen; ++i) {
    rc = put(p + "/gids/" + std::to_string(i), gid_text(i == 0 ? c.ipv4 : 0), err);
  }
  // The type of the entry in use; an empty entry has none (reading the
  // kernel's fails too). No gid_attrs/ndevs: tita0 has no netdev.
  if (rc == 0) rc = put(p + "/gid_attrs/types/0", "RoCE v2", err);
  return rc;
}

}  // namespace tita::run
