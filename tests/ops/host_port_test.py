#!/usr/bin/python3
"""Frames a host's own DPDK port drops, and a hop with a smaller MTU, named by
tita-doctor.

Usage: host_port_test.py BUILD_DIR WORKDIR

Two tita-perf processes on a veth pair, each on DPDK's pcap port (whose driver
counts what the kernel dropped for it as imissed, as a NIC counts rx_missed).
The receiver is stopped for 0.3 s mid-run (less than its peer's retry
timeouts), so its receive ring overflows
and the sender resends:
- diagnose, its window around the pause: a loss finding at the receiver's
  port (port_rx_missed), the count in its evidence, and no "unexplained" loss;
- accept with tita-perf, the server paused 1 s in its WRITE run: the shortfall
  named on the host side, as loss at a host's own port.
With the veth's MTU then set to 1500 (below the 4096-byte path MTU the ports
and QPs use), accept's WRITE gets no answer: it is named as a hop that drops
the larger frames, with the largest path MTU that answered (1024), once with
tita-perf and once with rdma-core's ib_write_bw over tita's verbs device
(--tool perftest). Last, af_packet and af_xdp ports (whose DPDK 22.11 drivers
count no drops): the receiver stopped 0.3 s, its port's drops counted from the
kernel sockets' own statistics.
Needs root (veth); skips with a message otherwise.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from opscheck import check, finish, free_port  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "verbs"))
import veth  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "dpdk"))
import perf_pair  # noqa: E402
DOCTOR = os.path.join(HERE, "..", "..", "apps", "ops", "tita-doctor")
PORT = "net_pcap0"
XDP_PROG = "/usr/lib/x86_64-linux-gnu/bpf/xsk_def_xdp_prog.o"  # Debian's libxdp1


def eal(iface, prefix, port=PORT, devargs="", memory_mb=512):
    return ["--no-huge", "-m", str(memory_mb), f"--file-prefix={prefix}", f"--vdev={port},iface={iface}{devargs}"]


def pause(prefix, after_s, for_s=0.3, once=None):
    """Stops the process of this --file-prefix after after_s seconds (counted
    from when a process of prefix `once` runs, if given), for for_s."""
    deadline = time.time() + 60
    while once and time.time() < deadline and subprocess.run(["pgrep", "-f", f"file-prefix={once}"],
                                                               capture_output=True).returncode != 0:
        time.sleep(0.05)
    time.sleep(after_s)
    pids = subprocess.run(["pgrep", "-f", f"file-prefix={prefix}"], capture_output=True, text=True).stdout.split()
    for p in pids:
        os.kill(int(p), signal.SIGSTOP)
    time.sleep(for_s)
    for p in pids:
        os.kill(int(p), signal.SIGCONT)
    return pids


def diagnose_case(perf, a, b):
    pair = perf_pair.Pair(perf, eal(b, "hp-s"), eal(a, "hp-c"), PORT, PORT)
    out = {}

    def during():
        time.sleep(2)
        doc = subprocess.Popen([sys.executable, DOCTOR, "diagnose", "--window", "5", "--json", "--prefix", "hp-s",
                                "--prefix", "hp-c"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # After the doctor's first reading (a stopped process's telemetry
        # answers only once it runs again), well before its second.
        out["paused"] = pause("hp-s", 2.0)
        o, e = doc.communicate(timeout=90)
        try:
            out["rep"] = json.loads(o)
        except ValueError:
            out["rep"] = {"findings": [], "error": e}
    r = pair.test(["--test", "write", "--size", "65536", "--duration", "9", "--mtu", "1024", "--rate", "1", "--pace",
                   "--tx-depth", "64", "--qps", "2", "--check"], free_port(), during=during)
    rep = out.get("rep", {"findings": []})
    where = f"host hp-s port {PORT}"
    f = next((x for x in rep["findings"] if x["where"] == where and "(port_rx_missed)" in x["what"]), None)
    missed = sum(f["evidence"].values()) if f else 0
    check(f is not None and f["question"] == "loss" and f["side"] == "host" and missed > 0,
          f"diagnose: the receiver paused 0.3 s: its port's own drops named ({missed:.0f} frames): "
          f"{[(x['where'], x['what'][:90]) for x in rep['findings']]} {rep.get('error', '')}")
    check(not any(x["question"] == "unexplained" for x in rep["findings"]),
          "diagnose: the sender's resends are explained by the counted drops, not 'unexplained'")
    check(r["server"].get("port_rx_missed", 0) > 0 and r["client"]["retransmitted_packets"] > 0,
          f"tita-perf reports the server port's drops: {r['server'].get('port_rx_missed')} missed, "
          f"{r['client']['retransmitted_packets']} resent, data {r['check']}")


def kernel_ring_case(perf, a, b, driver):
    """af_packet and af_xdp ports: DPDK 22.11 counts none of the frames their
    kernel ring had no room for; tita reads the sockets' own statistics
    (PACKET_STATISTICS, XDP_STATISTICS) into port_rx_missed. The receiver
    stopped 0.3 s: its port's drops counted."""
    port = f"net_{driver}0"
    prefix = f"hp-{driver}"
    args = ""
    if driver == "af_xdp":
        # As tests/dpdk's AF_XDP pair: copy mode, the kernel's default XDP
        # program attached in generic mode first (no bpffs needed).
        args = ",start_queue=0,queue_count=1,force_copy=1"
        for dev in (a, b):
            subprocess.run(["ip", "link", "set", "dev", dev, "xdpgeneric", "obj", XDP_PROG, "sec", "xdp"],
                           capture_output=True)
    pair = perf_pair.Pair(perf, eal(b, f"{prefix}-s", port, args, 1024), eal(a, f"{prefix}-c", port, args, 1024),
                          port, port)
    try:
        r = pair.test(["--test", "write", "--size", "65536", "--duration", "4", "--mtu", "1024", "--rate", "1",
                       "--pace", "--tx-depth", "64", "--qps", "2", "--check"], free_port(),
                      during=lambda: pause(f"{prefix}-s", 1.5))
    except AssertionError as e:
        check(False, f"{driver}: the tita-perf pair failed: {e}")
        return
    check(r["server"].get("port_rx_missed", 0) > 0 and r["client"]["retransmitted_packets"] > 0 and
          r["check"] == "ok",
          f"{driver}: the receiver paused 0.3 s: its kernel ring's drops counted as the port's: "
          f"{r['server'].get('port_rx_missed')} missed, {r['client']['retransmitted_packets']} resent, data "
          f"{r['check']}")


def accept_case(a, b):
    # A second into the WRITE run (the client starts it), a pause of 1 s: a
    # quarter of the run, under the QP's retry budget.
    t = threading.Thread(target=pause, args=("hp-as", 1.5, 1.0, "hp-ac"))
    t.start()
    r = subprocess.run([sys.executable, DOCTOR, "accept", "--server-eal", " ".join(["-l", "0"] + eal(b, "hp-as")),
                        "--client-eal", " ".join(["-l", "1"] + eal(a, "hp-ac")), "--server-port", PORT,
                        "--client-port", PORT, "--link-gbps", "1", "--seconds", "4", "--tcp-port", str(free_port()),
                        "--json"], capture_output=True, text=True, timeout=240)
    t.join()
    try:
        rep = json.loads(r.stdout)
    except ValueError:
        rep = {"findings": [], "error": r.stderr}
    f = rep["findings"][0] if rep["findings"] else {}
    check(r.returncode == 1 and f.get("question") == "performance" and f.get("side") == "host" and
          "host's own port" in f.get("what", "") and f["evidence"].get("port_rx_missed", 0) > 0,
          f"accept: the server paused 1 s mid-run: the shortfall named as loss at its port: exit {r.returncode}: "
          f"{f.get('what') or rep.get('error', '')}")


def mtu_case(a, b, tool):
    """The veth's MTU at 1500 while the ports and QPs use path MTU 4096: WRITE
    gets no answer; accept tries smaller path MTUs and names the hop. tool:
    tita-perf, or perftest (ib_write_bw over tita's verbs device, its -m)."""
    for dev in (a, b):
        subprocess.run(["ip", "link", "set", dev, "mtu", "1500"], check=True)
    # tita-run (perftest) places its device thread itself: no -l there.
    cores = (["-l", "0"], ["-l", "1"]) if tool == "tita-perf" else ([], [])
    r = subprocess.run([sys.executable, DOCTOR, "accept", "--server-eal", " ".join(cores[0] + eal(b, f"hp-{tool}-s")),
                        "--client-eal", " ".join(cores[1] + eal(a, f"hp-{tool}-c")), "--server-port", PORT,
                        "--client-port", PORT, "--link-gbps", "1", "--seconds", "2", "--tcp-port", str(free_port()),
                        "--tool", tool, "--json"], capture_output=True, text=True, timeout=240)
    try:
        rep = json.loads(r.stdout)
    except ValueError:
        rep = {"findings": [], "error": r.stderr}
    f = rep["findings"][0] if rep["findings"] else {}
    ev = f.get("evidence", {})
    check(r.returncode == 1 and f.get("question") == "connection" and f.get("side") == "network" and
          ev.get("largest_mtu_answered") == 1024 and ev.get("mtus_without_answer") == [4096, 2048] and
          "MTU" in f.get("what", ""),
          f"accept --tool {tool}: a hop whose MTU (1500) is below the QPs' frames: named, the largest path MTU that "
          f"answered 1024: exit {r.returncode}: {f.get('what') or rep.get('error', '')} {ev.get('mtus_without_answer')}")


def main():
    build, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    if os.geteuid() != 0:
        print("SKIP: needs root (a veth pair)")
        sys.exit(77)
    a, b = "thpa", "thpb"
    err = veth.make_pair(a, b)
    if err is not None:
        print(f"SKIP: cannot make a veth pair: {err}")
        sys.exit(77)
    # pcap's port says it takes 4 KB-MTU frames: so must the veth.
    for dev in (a, b):
        subprocess.run(["ip", "link", "set", dev, "mtu", "9000"], check=True)
    try:
        diagnose_case(os.path.join(build, "apps", "tita-perf"), a, b)
        accept_case(a, b)
        mtu_case(a, b, "tita-perf")
        if shutil.which("ib_write_bw"):
            mtu_case(a, b, "perftest")
        else:
            print("skipped: accept --tool perftest's MTU probe (ib_write_bw not installed: Debian's perftest)")
        for driver in ("af_packet", "af_xdp"):
            kernel_ring_case(os.path.join(build, "apps", "tita-perf"), a, b, driver)
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)
    finish()


if __name__ == "__main__":
    main()
