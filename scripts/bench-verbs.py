#!/usr/bin/env python3
"""What the verbs layer costs: perftest over tita (tita-run) next to tita-perf
(the engine driven directly) on the same vhost/virtio-user ports, in the same
run, each side pinned to its own core.

  scripts/bench-verbs.py [--runs 3] [--seconds 3] [--out doc/verbs-bench.json]

Bandwidth: RDMA WRITE at 4 KB and 64 KB with 1 and 16 QPs (ib_write_bw -D -Q 1
vs tita-perf --test write --duration: both ask for a completion per WR). Latency: 64 B SEND and WRITE ping-pong
(ib_send_lat / ib_write_lat vs tita-perf --mode lat), one-way, as perftest
reports it (half the round trip). Each point runs --runs times, alternating the
two tools; the table gives median [min, max] and the ratio of medians.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
PERF = os.path.join(BUILD, "apps", "tita-perf")
RUN = os.path.join(BUILD, "apps", "tita-run")
SOCK = "/tmp/tita-bench-verbs.sock"
EAL = ["--no-huge", "-m", "1024", "--no-pci", "--log-level=*:error"]
PIN = True
PROGRESS = "busy"


def sh(cmd, timeout):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def pair(server, client, timeout):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    s = subprocess.Popen(server, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.5)
    c = subprocess.run(client, capture_output=True, text=True, timeout=timeout)
    try:
        so, _ = s.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        s.kill()
        so, _ = s.communicate()
    return so, c.stdout + c.stderr, c.returncode


def tita_perf_bw(size, qps, secs):
    srv = [PERF, "-l", "0", *EAL, "--file-prefix=bv-ts", f"--vdev=net_vhost0,iface={SOCK},queues=1", "--",
           "--port", "net_vhost0", "--ip", "10.0.0.1", "--server", "--json"]
    cli = [PERF, "-l", "1", *EAL, "--file-prefix=bv-tc", f"--vdev=net_virtio_user0,path={SOCK},queues=1", "--",
           "--port", "net_virtio_user0", "--ip", "10.0.0.2", "--client", "127.0.0.1", "--test", "write", "--size",
           str(size), "--qps", str(qps), "--duration", str(secs), "--json"]
    _, out, rc = pair(srv, cli, secs + 60)
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)["gbps"]
    raise RuntimeError("tita-perf printed no result:\n" + out[-2000:])


def tita_perf_lat(test, size, iters):
    srv = [PERF, "-l", "0", *EAL, "--file-prefix=bv-ts", f"--vdev=net_vhost0,iface={SOCK},queues=1", "--",
           "--port", "net_vhost0", "--ip", "10.0.0.1", "--server", "--json"]
    cli = [PERF, "-l", "1", *EAL, "--file-prefix=bv-tc", f"--vdev=net_virtio_user0,path={SOCK},queues=1", "--",
           "--port", "net_virtio_user0", "--ip", "10.0.0.2", "--client", "127.0.0.1", "--test", test, "--mode",
           "lat", "--size", str(size), "--iters", str(iters), "--json"]
    _, out, rc = pair(srv, cli, 120)
    for line in out.splitlines():
        if line.startswith("{"):
            return json.loads(line)["latency_us"]["p50"]
    raise RuntimeError("tita-perf printed no result:\n" + out[-2000:])


def perftest(prog, args, timeout):
    pin0 = ["taskset", "-c", "0"] if PIN else []
    pin1 = ["taskset", "-c", "1"] if PIN else []
    srv = pin0 + [RUN, "--vdev", f"net_vhost0,iface={SOCK}", "--ip", "10.0.0.1", "--progress", PROGRESS, "--", prog,
                  "-d", "tita0", "-x", "0", "-F", *args]
    cli = pin1 + [RUN, "--vdev", f"net_virtio_user0,path={SOCK}", "--ip", "10.0.0.2", "--progress", PROGRESS, "--",
                  prog, "-d", "tita0", "-x", "0", "-F", *args, "127.0.0.1"]
    _, out, rc = pair(srv, cli, timeout)
    rows = []
    header = False
    for line in out.splitlines():
        if line.strip().startswith("#bytes"):
            header = True
            continue
        if header and re.match(r"^\s*\d+\s+\d+\s+[\d.]+", line):
            rows.append([float(x) for x in line.split()])
    if rc != 0 or not rows:
        raise RuntimeError(f"{prog} failed:\n" + out[-2000:])
    return rows[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--iters", type=int, default=10000)
    ap.add_argument("--bw", default="4096x1,65536x1,4096x16,65536x16", help="SIZExQPS points, comma separated")
    ap.add_argument("--lat", default="send,write", help="latency tests: send, write (empty: none)")
    ap.add_argument("--progress", default="busy", help="the verbs device's progress mode")
    ap.add_argument("--no-pin", action="store_true", help="do not pin perftest's processes to a core each")
    ap.add_argument("--out")
    a = ap.parse_args()
    global PIN, PROGRESS
    PIN = not a.no_pin
    PROGRESS = a.progress
    with open("/proc/cpuinfo") as f:
        cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"# {cpu}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; {a.runs} runs per point")
    results = []
    points = [tuple(int(x) for x in p.split("x")) for p in a.bw.split(",") if p]
    for size, qps in points:
        v, t = [], []
        for _ in range(a.runs):
            # ib_write_bw -D reports the average over the duration, payload Gb/s with --report_gbits.
            # -Q 1: a completion per WR, as tita-perf asks for (perftest's default of one per
            # 100 lets the window drain to 28 WRs between completions; see doc/verbs.md).
            row = perftest("ib_write_bw", ["-s", str(size), "-q", str(qps), "-D", str(int(a.seconds)), "-Q", "1",
                                           "--report_gbits"], a.seconds + 90)
            v.append(row[3])
            t.append(tita_perf_bw(size, qps, a.seconds))
        results.append({"test": f"WRITE bw {size} B x {qps} QPs", "unit": "Gb/s", "verbs": v, "tita_perf": t})
    for prog, test in (("ib_" + t + "_lat", t) for t in a.lat.split(",") if t):
        v, t = [], []
        for _ in range(a.runs):
            row = perftest(prog, ["-s", "64", "-n", str(a.iters)], 180)
            v.append(row[4])  # t_typical (the median), usec
            t.append(tita_perf_lat(test, 64, a.iters))
        results.append({"test": f"{prog} 64 B (p50)", "unit": "us", "verbs": v, "tita_perf": t})
    fmt = lambda xs: f"{statistics.median(xs):8.2f} [{min(xs):.2f}, {max(xs):.2f}]"
    print(f"{'':32} {'verbs (perftest over tita)':>28} {'tita-perf':>28}  verbs/tita-perf")
    for r in results:
        ratio = statistics.median(r["verbs"]) / statistics.median(r["tita_perf"])
        extra = ""
        if r["unit"] == "us":
            extra = f"  (+{statistics.median(r['verbs']) - statistics.median(r['tita_perf']):.2f} us)"
        print(f"{r['test'] + ' (' + r['unit'] + ')':32} {fmt(r['verbs']):>28} {fmt(r['tita_perf']):>28}  "
              f"{ratio:.2f}{extra}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"cpu": cpu, "runs": a.runs, "results": results}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
