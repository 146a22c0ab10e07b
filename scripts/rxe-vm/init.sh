#!/bin/sh
# PID 1 of the Soft-RoCE VM: no systemd, only what the tests need. The data NIC
# (MAC 52:54:00:00:00:01, on the host's tap) carries RoCE with rxe0 on it; the
# control NIC (52:54:00:00:00:02, qemu's user network) carries the command agent
# and the programs' TCP exchanges. Addresses come from the kernel command line:
# tita.ip=10.0.0.2/24 tita.mtu=1500.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /dev/shm
hostname rxe-vm
ip link set lo up

ip_addr=10.0.0.2/24
mtu=1500
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    tita.ip=*) ip_addr=${arg#tita.ip=} ;;
    tita.mtu=*) mtu=${arg#tita.mtu=} ;;
  esac
done
data=; ctl=
for n in /sys/class/net/*; do
  case "$(cat "$n/address")" in
    52:54:00:00:00:01) data=$(basename "$n") ;;
    52:54:00:00:00:02) ctl=$(basename "$n") ;;
  esac
done
ip link set "$data" mtu "$mtu" up
ip addr add "$ip_addr" dev "$data"
sysctl -qw net.ipv6.conf.all.disable_ipv6=1
ip link set "$ctl" up
ip addr add 10.0.2.15/24 dev "$ctl"
ip route add default via 10.0.2.2 dev "$ctl"
modprobe rdma_rxe
# The kernel's rdma_cm for librdmacm programs (rping, perftest -R) on rxe0.
modprobe rdma_ucm
rdma link add rxe0 type rxe netdev "$data"
echo "tita-init: rxe0 on $data ($ip_addr, MTU $mtu), control on $ctl" >/dev/console
echo "$data" >/run/tita-data-nic
while :; do
  python3 /usr/local/bin/tita-agent 7000 >/dev/console 2>&1
  sleep 1
done
