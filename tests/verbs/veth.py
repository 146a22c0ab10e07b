"""A veth pair for two af_packet ports, its interface numbers apart in bit 15:
DPDK 22.11's af_packet joins a fanout group numbered (pid ^ ifindex) & 0xffff,
and two processes with consecutive pids on interfaces with consecutive numbers
get the same group, which the kernel refuses for the second device (EINVAL:
the port fails to probe). Used by run_verbs.py, tests/ops/accept_test.py and
scripts/bench-mpi.py. make_bridge: n such ports on one Linux bridge."""
import os
import subprocess


def free_ifindex_pair(start=4100):
    """Two unused interface numbers that differ in bit 15 alone."""
    used = {int(open(f"/sys/class/net/{n}/ifindex").read()) for n in os.listdir("/sys/class/net")}
    for i in range(start, 0x8000):
        if i not in used and (i | 0x8000) not in used:
            return i, i | 0x8000
    return start, start | 0x8000


def make_pair(a, b):
    """Creates (replacing one left behind) and brings up the pair a-b; returns
    the failed `ip` run's stderr, or None."""
    subprocess.run(["ip", "link", "del", a], capture_output=True)
    i, j = free_ifindex_pair()
    r = subprocess.run(["ip", "link", "add", a, "index", str(i), "type", "veth", "peer", "name", b, "index", str(j)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return r.stderr.strip()
    for dev in (a, b):
        subprocess.run(["ip", "link", "set", dev, "up"], check=True)
    return None


def make_bridge(name, n):
    """n veth pairs whose far ends join a Linux bridge (a switch for n af_packet
    ports); returns (the bridge, the near ends), or (None, why) when the bridge
    cannot be made. Their interface numbers differ in bits 12-14 (rank r:
    0x1000 * (r + 1) + k), so no two tita-run processes with close pids fall
    into one af_packet fanout group."""
    br = f"{name}br"
    subprocess.run(["ip", "link", "del", br], capture_output=True)
    r = subprocess.run(["ip", "link", "add", br, "type", "bridge"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    subprocess.run(["ip", "link", "set", br, "up"], check=True)
    used = {int(open(f"/sys/class/net/{d}/ifindex").read()) for d in os.listdir("/sys/class/net")}
    k = next(k for k in range(1, 0x7ff) if not any(0x1000 * (r + 1) + 2 * k + j in used for r in range(n) for j in (0, 1)))
    near = []
    for r in range(n):
        a, b = f"{name}{r}a", f"{name}{r}b"
        subprocess.run(["ip", "link", "del", a], capture_output=True)
        subprocess.run(["ip", "link", "add", a, "index", str(0x1000 * (r + 1) + 2 * k), "type", "veth", "peer", "name", b,
                        "index", str(0x1000 * (r + 1) + 2 * k + 1)], check=True)
        subprocess.run(["ip", "link", "set", b, "master", br], check=True)
        for dev in (a, b):
            subprocess.run(["ip", "link", "set", dev, "up"], check=True)
        near.append(a)
    return br, near
