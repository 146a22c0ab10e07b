#!/usr/bin/python3
"""The main job: an incast through tita-switch, once per congestion control.

Three tita-perf senders write into one tita-perf receiver through tita-switch,
whose port to the receiver is a shaped bottleneck with RED/ECN marking and INT.
Every process is a real DPDK application on vhost-user ports (--no-huge): the
switch polls on one core, the four tita-perf processes share the other and sleep
when idle. For each algorithm the script prints throughput, Jain's fairness
index over the senders, bottleneck queue p50/p99 and retransmissions, and
writes a PNG of per-flow goodput and queue length over time.

Usage: incast.py BUILD_DIR OUT_DIR [--cc none,dcqcn,hpcc,tita] [--seconds 4]
"""
import argparse
import csv
import json
import os
import signal
import subprocess
import sys
import time

SENDERS = 3
BOTTLENECK_GBPS = 1.0
SENDER_GBPS = 2.0
KMIN_BYTES = 20_000
KMAX_BYTES = 100_000
# Here the control loop runs at hundreds of microseconds (four processes share a
# core and sleep between polls), not the ~10 us of a fabric: DCQCN gets the
# paper's 55 us alpha interval (instead of the HPCC simulator's 1 us, which lets
# alpha decay to nothing between CNPs) and a 1 ms rate-increase timer.
CC_PARAMS = {"dcqcn": ["alpha_interval_ns=55000", "rate_timer_ns=1000000"]}


def switch_config(senders, bottleneck_gbps, drop):
    ports = [{"name": f"net_vhost{i}"} for i in range(senders)]
    bottleneck = {"name": f"net_vhost{senders}", "rate_gbps": bottleneck_gbps, "buffer_bytes": 2_000_000,
                  "ecn": {"enabled": True, "kmin_bytes": KMIN_BYTES, "kmax_bytes": KMAX_BYTES, "pmax": 0.2}}
    if drop > 0:
        bottleneck["faults"] = {"drop_probability": drop}
    ports.append(bottleneck)
    routes = [{"prefix": f"10.0.0.{i + 1}/32", "ports": [i]} for i in range(senders)]
    routes.append({"prefix": "10.0.0.100/32", "ports": [senders]})
    return {"ports": ports, "routes": routes, "int": {"enabled": True},
            "buffer": {"total_bytes": 4_000_000}, "pfc": {"enabled": False},
            "qlen": {"ports": [senders], "interval_us": 200}}


def percentile(values, q):
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


def jain(xs):
    xs = [x for x in xs]
    if not xs or sum(xs) == 0:
        return 0.0
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def run_one(build, work, cc, seconds, senders=SENDERS, bottleneck_gbps=BOTTLENECK_GBPS,
            sender_gbps=SENDER_GBPS, drop=0.0, check=False, recovery="gbn"):
    """One incast run; returns per-flow results, fairness and queue statistics."""
    perf = os.path.join(build, "apps", "tita-perf")
    switch = os.path.join(build, "apps", "tita-switch", "tita-switch")
    socks = [os.path.join(work, f"vh{i}.sock") for i in range(senders + 1)]
    for s in socks:
        if os.path.exists(s):
            os.unlink(s)
    os.makedirs(work, exist_ok=True)
    cfg_path = os.path.join(work, "switch.json")
    with open(cfg_path, "w") as f:
        json.dump(switch_config(senders, bottleneck_gbps, drop), f)
    qlen_csv = os.path.join(work, f"qlen-{cc}.csv")
    eal = ["--no-huge", "-m", "512", "--no-pci", "--log-level=*:error"]
    sw_cmd = [switch, "-l", "1"] + eal + ["--file-prefix=demo-sw"]
    for i, s in enumerate(socks):
        sw_cmd.append(f"--vdev=net_vhost{i},iface={s},queues=1")
    sw_cmd += ["--", "--config", cfg_path, "--qlen-csv", qlen_csv, "--stats-ms", "0", "--json"]
    procs = []
    sw = subprocess.Popen(sw_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(sw)
    # The switch is up when its vhost-user sockets exist (on a busy machine EAL
    # takes a while); then a moment for its polling loop.
    deadline = time.time() + 20
    while not all(os.path.exists(s) for s in socks) and time.time() < deadline and sw.poll() is None:
        time.sleep(0.1)
    time.sleep(0.5)
    common = ["--idle-sleep", "--base-rtt-us", "200", "--pacing-slack-us", "200"]
    rx_cmd = [perf, "-l", "0"] + eal + ["--file-prefix=demo-rx", f"--vdev=net_virtio_user0,path={socks[senders]}",
                                        "--", "--port", "net_virtio_user0", "--ip", "10.0.0.100", "--server",
                                        "--clients", str(senders), "--json"] + common
    rx = subprocess.Popen(rx_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(rx)
    time.sleep(1.0)
    tx = []
    for i in range(senders):
        series = os.path.join(work, f"flow-{cc}-{i + 1}.csv")
        cmd = [perf, "-l", "0"] + eal + [f"--file-prefix=demo-tx{i}", f"--vdev=net_virtio_user0,path={socks[i]}",
                                         "--", "--port", "net_virtio_user0", "--ip", f"10.0.0.{i + 1}",
                                         "--client", "127.0.0.1", "--test", "write", "--size", "65536",
                                         "--qps", "1", "--tx-depth", "16", "--mtu", "1024", "--duration",
                                         str(seconds), "--cc", cc, "--rate", str(sender_gbps), "--pace",
                                         "--recovery", recovery, "--series", series, "--series-interval-us",
                                         "20000", "--json"] + common + (["--check"] if check else [])
        for kv in CC_PARAMS.get(cc, []):
            cmd += ["--cc-param", kv]
        tx.append((subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), series))
        procs.append(tx[-1][0])
    results = []
    try:
        for p, series in tx:
            out, err = p.communicate(timeout=seconds + 60)
            lines = [l for l in out.splitlines() if l.startswith("{")]
            if p.returncode != 0 or not lines:
                why = f"sender failed ({p.returncode}): {err[-1500:]}"
                if rx.poll() is not None:  # the receiver ended first: its words say why
                    why += f"\nreceiver exited ({rx.returncode}): {rx.stderr.read()[-1500:]}"
                raise RuntimeError(why)
            results.append((json.loads(lines[-1]), series))
        rx.communicate(timeout=30)
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        sw_out = ""
        try:
            sw_out, _ = sw.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            sw.kill()
        for p in procs:
            if p.poll() is None:
                p.kill()
    # Per-flow goodput over the run, and the queue at the bottleneck.
    flows = []
    for r, series in results:
        rows = list(csv.DictReader(open(series)))
        flows.append({"gbps": r["gbps"], "retx": r["client"]["retransmitted_packets"],
                      "cnps": r["client"]["cnps_received"], "int_records": r["client"]["int_records"],
                      "check": r["check"], "messages": r["messages"],
                      "t": [int(x["t_ns"]) for x in rows], "goodput": [int(x["goodput_bps"]) / 1e9 for x in rows]})
    qrows = list(csv.reader(open(qlen_csv)))[1:]
    q_t = [int(r[1]) for r in qrows]
    q_kb = [int(r[2]) / 1000 for r in qrows]
    # The switch's final report: ECN marks and drops at the bottleneck.
    start = sw_out.find("{")
    bottleneck = json.loads(sw_out[start:])["ports"][senders] if start >= 0 else {}
    # Steady state: the middle of the transfer (skip its first and last 15%). The
    # switch samples from its own start, so the window comes from the senders'
    # series (both are CLOCK_MONOTONIC).
    starts = [f["t"][0] for f in flows if f["t"]]
    ends = [f["t"][-1] for f in flows if f["t"]]
    if q_t and starts:
        t0, t1 = min(starts), max(ends)
        lo, hi = t0 + 0.15 * (t1 - t0), t1 - 0.15 * (t1 - t0)
        steady = [q for t, q in zip(q_t, q_kb) if lo <= t <= hi]
    else:
        steady = []
    return {"cc": cc, "flows": flows, "total_gbps": sum(f["gbps"] for f in flows),
            "jain": jain([f["gbps"] for f in flows]), "q_p50_kb": percentile(steady, 0.5),
            "q_p99_kb": percentile(steady, 0.99), "q_mean_kb": sum(steady) / len(steady) if steady else 0.0,
            "retx": sum(f["retx"] for f in flows), "ecn_marked": sum(q.get("ecn_marked", 0) for q in bottleneck.get("queues", [])),
            "switch_drops": sum(bottleneck.get("drops", {}).values()),
            "cnps": sum(f["cnps"] for f in flows), "q_t": q_t, "q_kb": q_kb}


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(results), 2, figsize=(12, 2.6 * len(results)), squeeze=False)
    t_base = min([r["q_t"][0] for r in results if r["q_t"]] + [0])
    for row, r in enumerate(results):
        start = min([f["t"][0] for f in r["flows"] if f["t"]] + ([r["q_t"][0]] if r["q_t"] else []))
        ax = axes[row][0]
        for i, f in enumerate(r["flows"]):
            ax.plot([(t - start) / 1e9 for t in f["t"]], f["goodput"], label=f"sender {i + 1}", lw=1)
        ax.axhline(BOTTLENECK_GBPS / SENDERS, color="gray", ls="--", lw=0.8, label="fair share")
        ax.set_ylabel(f"{r['cc']}\nGb/s")
        ax.set_ylim(0, BOTTLENECK_GBPS * 1.2)
        ax.legend(fontsize=7, loc="upper right")
        ax = axes[row][1]
        ax.plot([(t - start) / 1e9 for t in r["q_t"]], r["q_kb"], color="tab:red", lw=0.8)
        ax.axhspan(20, 100, color="orange", alpha=0.15, label="ECN Kmin-Kmax")
        ax.set_ylabel("queue KB")
        ax.legend(fontsize=7, loc="upper right")
    axes[0][0].set_title(f"goodput per sender ({SENDERS}:1 incast, {BOTTLENECK_GBPS:g} Gb/s bottleneck)")
    axes[0][1].set_title("bottleneck queue")
    axes[-1][0].set_xlabel("seconds")
    axes[-1][1].set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--cc", default="none,dcqcn,hpcc,tita")
    ap.add_argument("--seconds", type=float, default=4)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    results = []
    for cc in a.cc.split(","):
        print(f"running {SENDERS}:1 incast with --cc {cc} for {a.seconds:g} s ...", flush=True)
        try:
            results.append(run_one(a.build, a.out, cc, a.seconds))
        except RuntimeError as e:
            # Six DPDK processes start on two cores; on a loaded machine one can
            # miss its peer. Say so and run that algorithm once more.
            print("  run failed, once more: " + " / ".join(str(e).strip().splitlines()[-3:]), flush=True)
            results.append(run_one(a.build, a.out, cc, a.seconds))
    print()
    print(f"{SENDERS} tita-perf senders at {SENDER_GBPS:g} Gb/s -> tita-switch -> 1 receiver, "
          f"{BOTTLENECK_GBPS:g} Gb/s bottleneck, ECN 20-100 KB, INT on")
    print(f"{'cc':8} {'Gb/s':>7} {'Jain':>6} {'queue p50 KB':>13} {'queue p99 KB':>13} {'retx':>7} {'CNPs':>7}   per-sender Gb/s")
    for r in results:
        per = " ".join(f"{f['gbps']:.3f}" for f in r["flows"])
        print(f"{r['cc']:8} {r['total_gbps']:7.3f} {r['jain']:6.3f} {r['q_p50_kb']:13.1f} {r['q_p99_kb']:13.1f} "
              f"{r['retx']:7d} {r['cnps']:7d}   {per}")
    png = os.path.join(a.out, "incast.png")
    plot(results, png)
    with open(os.path.join(a.out, "incast.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k not in ("q_t", "q_kb")} | {"flows": [
            {k: v for k, v in fl.items() if k not in ("t", "goodput")} for fl in r["flows"]]} for r in results], f,
            indent=1)
    print(f"\nplot: {png}")


if __name__ == "__main__":
    main()
