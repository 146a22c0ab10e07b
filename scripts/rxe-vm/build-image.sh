#!/usr/bin/env bash
# Builds (once, then from the cache) the VM that runs Linux Soft-RoCE (rdma_rxe)
# as tita's peer: a debootstrap minbase bookworm root with Debian's kernel,
# rdma-core, ibverbs-utils, perftest, pyverbs, rdmacm-utils and iproute2, packed into an ext4
# image, with the kernel and initrd beside it. The VM's init
# (scripts/rxe-vm/init.sh) brings up rxe0 and a command agent (agent.py).
#
#   scripts/rxe-vm/build-image.sh [CACHE_DIR]   prints the directory holding
#                                               vmlinuz, initrd.img, root.img
#
# The cache (default /var/cache/tita/rxe-vm, or $TITA_CACHE/rxe-vm) is keyed by
# the hash of this script, init.sh, agent.py and tests/interop/verbs_peer.py:
# change one and it rebuilds.
# Needs root (debootstrap) and Debian's mirror (the one apt on this machine uses).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${TITA_CACHE:-/var/cache/tita}/rxe-vm}
key=$(cat "$here/build-image.sh" "$here/init.sh" "$here/agent.py" "$here/../../tests/interop/verbs_peer.py" |
      sha256sum | cut -c1-16)
out="$cache/$key"
if [ -f "$out/root.img" ] && [ -f "$out/vmlinuz" ] && [ -f "$out/initrd.img" ]; then
  echo "$out"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "build-image: debootstrap needs root" >&2
  exit 77
fi
for tool in debootstrap mkfs.ext4; do
  command -v "$tool" >/dev/null || { echo "build-image: $tool is missing (scripts/setup.sh installs it)" >&2; exit 1; }
done

# The mirror apt uses here (deb822 or one-line sources), so CI needs no other network.
mirror=$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' |
         grep -v security | head -1 || true)
if [ -z "$mirror" ]; then
  mirror=$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | grep -v security | awk '{print $2}' | head -1 || true)
fi
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d "${TMPDIR:-/tmp}/tita-rxe-vm.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"
echo "build-image: debootstrap bookworm from $mirror (a few minutes the first time)" >&2
debootstrap --variant=minbase \
  --include=linux-image-amd64,kmod,iproute2,rdma-core,ibverbs-utils,ibverbs-providers,perftest,python3-pyverbs,rdmacm-utils,procps \
  bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    exit 1
  }
install -m 0755 "$here/init.sh" "$root/sbin/tita-init"
install -m 0755 "$here/agent.py" "$root/usr/local/bin/tita-agent"
install -m 0755 "$here/../../tests/interop/verbs_peer.py" "$root/usr/local/bin/verbs_peer.py"
echo "rxe-vm" >"$root/etc/hostname"
# What the VM does not need: docs, man pages, apt lists.
rm -rf "$root/usr/share/doc" "$root/usr/share/man" "$root/var/lib/apt/lists"/* "$root/var/cache/apt"/*.bin

mkdir -p "$out.tmp"
cp "$(ls "$root"/boot/vmlinuz-* | head -1)" "$out.tmp/vmlinuz"
cp "$(ls "$root"/boot/initrd.img-* | head -1)" "$out.tmp/initrd.img"
rm -rf "$root/boot"/*
size_mb=$(( $(du -sm "$root" | cut -f1) + 400 ))
mkfs.ext4 -q -L tita-rxe -d "$root" "$out.tmp/root.img" "${size_mb}M"
rm -rf "$out"
mv "$out.tmp" "$out"
echo "build-image: $out ($(du -sh "$out" | cut -f1))" >&2
echo "$out"
