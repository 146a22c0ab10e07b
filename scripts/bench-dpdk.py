#!/usr/bin/python3
"""tita-perf against dpdk-testpmd on the same ports, in the same run, several
runs: the figures of doc/benchmarks.md ("DPDK").

    scripts/bench-dpdk.sh [--runs 3] [--seconds 3] [--grid]
    scripts/bench-dpdk.sh --engines 1,2,4,8 [--runs 3] [--seconds 3]

Each run measures, in this order:
  testpmd   64 B and 4 KB over net_ring (io forwarding around one ring port,
            two lcores) and over vhost-user / virtio-user (txonly into rxonly,
            two processes, one core each)
  tita      tita-perf RDMA WRITE, 64 QPs, 32 WRs in flight each, no
            congestion control: 64 B and 4 KB over net_ring (--loopback:
            client and server in one process, one lcore each) and over
            vhost-user (two processes, one core each)
  limit     the per-core cost of the bytes of a 4 KB packet, timed alone
            (bench/wire): the sender builds headers and copies the payload
            into an mbuf, summing the ICRC as it copies (BM_BuildCopy), the
            receiver parses and copies the payload into the target region,
            checking the ICRC as it copies (BM_ParsePlace); the slower side's
            packets per second is the ceiling of a core that does nothing
            else. "limit 4096, two passes" is the same work with the CRC and
            the copy as separate passes (BM_BuildIcrc or BM_ParseVerify, then
            BM_Memcpy), as tita did it before the copy and CRC were fused
  engines   tita-perf --loopback with --engines 1 and 2 (two lcores a side
            for two engines: on a machine with fewer cores than busy
            threads this measures time-sharing, and says so)
Every figure is printed per run, then as median [min, max] over the runs, and
the ratios (tita / testpmd, tita / limit) are taken within each run.

--grid also prints the older table: 64 B, 1 KB and 4 KB, 1 and 64 QPs.

--engines LIST measures only how tita-perf scales with engines: --loopback
with N engines a side (one lcore each, 2N lcores in all, a net_ring queue pair
per engine), 64 QPs spread over the engines, 64 B and 4 KB WRITE. Per N: the
rate, the rate per engine and the parallel efficiency, rate(N) / (N x rate(1))
taken within each run. An N whose 2N lcores exceed the machine's CPUs is
skipped with a line saying so (busy pollers sharing a core measure the
scheduler). TITA_PERF and TITA_EAL_EXTRA (extra EAL arguments, e.g. "-d DIR"
for a directory of DPDK drivers) let it run a tita-perf built elsewhere.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PERF = os.environ.get("TITA_PERF") or os.path.join(ROOT, "build", "apps", "tita-perf")
WIRE = os.path.join(ROOT, "build", "bench", "wire", "wire_bench")
EAL = ["--no-huge", "-m", "1024", "--no-pci", "--log-level=*:error", *os.environ.get("TITA_EAL_EXTRA", "").split()]
SOCK = "/tmp/tita-bench-vhost.sock"


def sh(cmd, timeout):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired as e:
        return (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")


def testpmd_mpps(text):
    """The last Rx-pps of testpmd's periodic statistics, in Mpps."""
    rates = [int(l.split()[1]) for l in text.splitlines() if "Rx-pps:" in l]
    return rates[-1] / 1e6 if rates else 0.0


def testpmd_ring(size, secs):
    out = sh(["timeout", str(secs + 5), "dpdk-testpmd", "-l", "0,1", *EAL, "--file-prefix=tb-ring",
              "--vdev=net_ring0", "--", "--forward-mode=io", "--tx-first", f"--txpkts={size}", "--mbuf-size=5000",
              "--max-pkt-len=4200", "--stats-period", "1"], secs + 10)
    return testpmd_mpps(out)


def testpmd_vhost(size, secs):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    with tempfile.TemporaryFile("w+") as log:
        srv = subprocess.Popen(["timeout", str(secs + 6), "dpdk-testpmd", "-l", "0,1", "--main-lcore", "0", *EAL,
                                "--file-prefix=tb-vs", f"--vdev=net_vhost0,iface={SOCK},queues=1", "--",
                                "--forward-mode=rxonly", "--mbuf-size=5000", "--max-pkt-len=4200",
                                "--total-num-mbufs=16384", "--stats-period", "1"], stdout=log, stderr=subprocess.STDOUT)
        time.sleep(2)
        sh(["timeout", str(secs + 2), "dpdk-testpmd", "-l", "1,0", "--main-lcore", "1", *EAL, "--file-prefix=tb-vc",
            f"--vdev=net_virtio_user0,path={SOCK},queues=1", "--", "--forward-mode=txonly", f"--txpkts={size}",
            "--mbuf-size=5000", "--max-pkt-len=4200", "--total-num-mbufs=16384", "--stats-period", "1"], secs + 6)
        srv.wait()
        log.seek(0)
        return testpmd_mpps(log.read())


def tita_json(text):
    lines = [l for l in text.splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def tita_ring(size, qps, secs, engines=1):
    if 2 * engines <= (os.cpu_count() or 1):
        lcores = ["-l", f"0-{2 * engines - 1}"]
    else:  # time-shared: every engine's lcore on one of the first two CPUs
        lcores = ["--lcores", ",".join(f"{k}@{k % 2}" for k in range(2 * engines))]
    eal = [str(1024 * max(1, engines // 2)) if a == "1024" else a for a in EAL]  # memory grows with the engines
    # Copied: over net_ring a zero-copy frame reaches the receiver as the
    # sender's mbuf chain, which it must linearize (a copy no NIC's receiver makes).
    r = tita_json(sh([PERF, *lcores, *eal, "--file-prefix=tb-tr", "--", "--loopback", "--test", "write",
                      "--no-zero-copy",
                      "--size", str(size), "--qps", str(qps), "--tx-depth", "32", "--duration", str(secs),
                      *(["--engines", str(engines)] if engines > 1 else []), "--json"], secs + 60))
    return r


def tita_vhost(size, qps, secs):
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    srv = subprocess.Popen([PERF, "-l", "0", *EAL, "--file-prefix=tb-ts", f"--vdev=net_vhost0,iface={SOCK},queues=1",
                            "--", "--port", "net_vhost0", "--ip", "10.0.0.2", "--server", "--json"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    r = tita_json(sh([PERF, "-l", "1", *EAL, "--file-prefix=tb-tc", f"--vdev=net_virtio_user0,path={SOCK},queues=1",
                      "--", "--port", "net_virtio_user0", "--ip", "10.0.0.1", "--client", "127.0.0.1",
                      "--test", "write", "--size", str(size), "--qps", str(qps), "--tx-depth", "32",
                      "--duration", str(secs), "--json"], secs + 60))
    try:
        srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
    return r


def byte_limit_mpps():
    """Packets per second of one core doing only the byte work of a 4 KB packet:
    (one pass, two passes), and the parts in ns."""
    out = sh([WIRE, "--benchmark_filter=BM_(ParseVerify|BuildIcrc|Memcpy|BuildCopy|ParsePlace)/4096$",
              "--benchmark_format=json", "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"], 300)
    ns = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            ns[b["run_name"].split("/")[0]] = b["real_time"] * {"ns": 1, "us": 1e3}[b["time_unit"]]
    one = max(ns["BM_BuildCopy"], ns["BM_ParsePlace"])
    two = max(ns["BM_BuildIcrc"] + ns["BM_Memcpy"], ns["BM_ParseVerify"] + ns["BM_Memcpy"])
    return 1e3 / one, 1e3 / two, ns


def med(values):
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    return f"{statistics.median(v):.3g} [{min(v):.3g}, {max(v):.3g}]"


def load():
    return open("/proc/loadavg").read().split()[0]


def engines_sweep(counts, runs, secs):
    """Rate against engines a side, per size; efficiency within each run."""
    cpus = os.cpu_count() or 1
    fit = [n for n in counts if 2 * n <= cpus]
    for n in counts:
        if n not in fit:
            print(f"engines {n}: skipped, --loopback needs {2 * n} lcores and this machine has {cpus} CPUs")
    table = {}
    for run in range(runs):
        for size in (64, 4096):
            rates = {}
            for n in fit:
                t = tita_ring(size, 64, secs, engines=n)
                rates[n] = t["pkt_rate_mpps"] if t else None
            line = []
            for n in fit:
                r = rates[n]
                eff = r / (n * rates[1]) if r and rates[1] else None
                table.setdefault((size, n), []).append((r, r / n if r else None, eff))
                line.append(f"{n}: {r:.3g} Mpps" + (f" (eff {eff:.2f})" if eff else "") if r else f"{n}: failed")
            print(f"run {run + 1} {size} B (load {load()}): " + ", ".join(line))
    print(f"\ntita-perf --loopback, WRITE, 64 QPs, median [min, max] of {runs} runs")
    print("| size | engines a side | Mpps | Mpps per engine | Gb/s | efficiency |")
    print("|---|---|---|---|---|---|")
    for (size, n), v in sorted(table.items()):
        rate = [x[0] for x in v]
        gbps = [x[0] * size * 8 / 1e3 if x[0] else None for x in v]
        print(f"| {size} B | {n} | {med(rate)} | {med([x[1] for x in v])} | {med(gbps)} | {med([x[2] for x in v])} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--grid", action="store_true", help="also the 64 B / 1 KB / 4 KB x 1 / 64 QPs table")
    ap.add_argument("--engines", metavar="LIST", help="only the engines sweep, e.g. 1,2,4,8")
    a = ap.parse_args()
    counts = []
    if a.engines:
        try:
            counts = sorted({int(x) for x in a.engines.split(",")})
        except ValueError:
            sys.exit(f"bench-dpdk: --engines wants numbers separated by commas, not '{a.engines}'")
        if not counts or min(counts) < 1:
            sys.exit(f"bench-dpdk: --engines wants counts of 1 or more, not '{a.engines}'")
        if 1 not in counts:
            sys.exit("bench-dpdk: --engines needs 1 in the list (efficiency is against one engine)")
    for f in (PERF,) if counts else (PERF, WIRE):
        if not os.access(f, os.X_OK):
            sys.exit(f"bench-dpdk: {f} is not built (scripts/build.sh)")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"{cpu}, {os.cpu_count()} CPUs; load {load()} at the start; {time.strftime('%Y-%m-%d %H:%M')}")
    s = a.seconds
    if counts:
        engines_sweep(counts, a.runs, s)
        return
    keys = ["testpmd ring 64", "testpmd vhost 64", "testpmd ring 4096", "testpmd vhost 4096",
            "tita ring 64", "tita vhost 64", "tita ring 4096", "tita vhost 4096", "limit 4096",
            "limit 4096, two passes",
            "tita ring 64, 1 engine", "tita ring 64, 2 engines",
            "tita vhost 64 / testpmd", "tita ring 4096 / limit", "tita vhost 4096 / limit"]
    runs = {k: [] for k in keys}
    for run in range(a.runs):
        r = {}
        r["testpmd ring 64"] = testpmd_ring(64, s)
        r["testpmd vhost 64"] = testpmd_vhost(64, s)
        r["testpmd ring 4096"] = testpmd_ring(4096, s)
        r["testpmd vhost 4096"] = testpmd_vhost(4096, s)
        for size in (64, 4096):
            t = tita_ring(size, 64, s)
            r[f"tita ring {size}"] = t["pkt_rate_mpps"] if t else None
            t = tita_vhost(size, 64, s)
            r[f"tita vhost {size}"] = t["pkt_rate_mpps"] if t else None
        r["limit 4096"], r["limit 4096, two passes"], parts = byte_limit_mpps()
        for n in (1, 2):
            t = tita_ring(64, 64, s, engines=n)
            r[f"tita ring 64, {n} engine" + ("s" if n > 1 else "")] = t["pkt_rate_mpps"] if t else None
        ratio = lambda x, y: r[x] / r[y] if r[x] and r[y] else None  # noqa: E731
        r["tita vhost 64 / testpmd"] = ratio("tita vhost 64", "testpmd vhost 64")
        r["tita ring 4096 / limit"] = ratio("tita ring 4096", "limit 4096")
        r["tita vhost 4096 / limit"] = ratio("tita vhost 4096", "limit 4096")
        print(f"run {run + 1} (load {load()}): " + ", ".join(
            f"{k} {v:.3g}" for k, v in r.items() if v is not None) +
            f"; byte work per 4 KB packet, ns: " + ", ".join(f"{k[3:]} {v:.0f}" for k, v in parts.items()))
        for k in keys:
            runs[k].append(r.get(k))
    print(f"\nMpps (ratios: unitless), median [min, max] of {a.runs} runs:")
    for k in keys:
        print(f"  {k:28s} {med(runs[k])}")
    if a.grid:
        print(f"\n{'port':6s} {'bytes':>6s} {'qps':>4s} {'Gb/s':>9s} {'Mmsg/s':>9s} {'Mpps':>9s}")
        for port, fn in (("ring", tita_ring), ("vhost", tita_vhost)):
            for size in (64, 1024, 4096):
                for qps in (1, 64):
                    t = fn(size, qps, s)
                    if t:
                        print(f"{port:6s} {size:6d} {qps:4d} {t['gbps']:9.3f} {t['msg_rate_mpps']:9.4f} "
                              f"{t['pkt_rate_mpps']:9.4f}")


if __name__ == "__main__":
    main()
