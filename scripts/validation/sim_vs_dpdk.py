#!/usr/bin/python3
"""The same incast in ns-3 and over the DPDK datapath, on the same axes.

N tita-perf senders (2 Gb/s line rate for their congestion control) write
64 KB messages through tita-switch to one receiver behind a 1 Gb/s bottleneck
(RED/ECN 20-100 KB, Pmax 0.2, INT on, 2 MB port buffer, 1 KB MTU, an ACK per
packet, base RTT 200 us for the algorithms). scripts/demo/incast.py runs the
DPDK side: real processes on vhost-user ports. The ns-3 side is tita-sim on a
star with the same rates, buffer and ECN thresholds and 50 us links (a 200 us
base RTT), the same congestion-control code and parameters.

For N in 2 and 4 and each algorithm it reports the converged per-flow goodput
and bottleneck queue of both, their difference, and plots goodput and queue
over time on shared axes.

Usage: sim_vs_dpdk.py BUILD_DIR OUT_DIR [--cc dcqcn,hpcc,tita] [--senders 2,4]
                      [--seconds 4] [--sim SIM] [--doc DOC_DIR]
"""
import argparse
import csv
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "demo"))
import incast  # noqa: E402  (the DPDK side: scripts/demo/incast.py)

LINK_DELAY_NS = 50_000
BIN_NS = 20_000_000  # goodput bins, as tita-perf --series-interval-us 20000


def sim_topology(path, senders):
    """HPCC-format star: senders 0..N-1 at the senders' rate, receiver N at the bottleneck."""
    switch = senders + 1
    links = [f"{i} {switch} {incast.SENDER_GBPS:g}Gbps {LINK_DELAY_NS}ns 0" for i in range(senders)]
    links.append(f"{senders} {switch} {incast.BOTTLENECK_GBPS:g}Gbps {LINK_DELAY_NS}ns 0")
    with open(path, "w") as f:
        f.write(f"{senders + 2} 1 {len(links)}\n{switch}\n" + "\n".join(links) + "\n")


def run_sim(sim, out, cc, senders, data_dir, seconds):
    os.makedirs(out, exist_ok=True)
    topo = os.path.join(out, f"star{senders}.topo")
    sim_topology(topo, senders)
    params = ",".join(incast.CC_PARAMS.get(cc, []))
    cmd = [sim, f"--topo={topo}", f"--workload=incast:senders={senders},receiver={senders},bytes=2000000000,"
           "jitter=0,at=0", f"--cc={cc}", f"--stop={seconds}s", "--progress=0", "--series=1ms",
           "--qlen-interval=0s", f"--out={out}",
           "--ns3::RdmaNicNetDevice::PathMtu=1024", "--ns3::RdmaNicNetDevice::AckReqEvery=1",
           "--ns3::TitaSwitchNode::BufferSize=4000000", "--ns3::TitaSwitchNode::Ecn=true",
           f"--ns3::TitaSwitchNode::RedKmin={incast.KMIN_BYTES}",
           f"--ns3::TitaSwitchNode::RedKmax={incast.KMAX_BYTES}",
           "--ns3::TitaSwitchNode::RedPmax=0.2", "--ns3::TitaSwitchNode::Int=true"]
    if params:
        cmd.append(f"--cc-params={params}")
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=data_dir)
    if r.returncode != 0:
        raise RuntimeError(f"tita-sim failed: {r.stderr[-2000:]}")
    flows = {}
    for row in csv.DictReader(open(os.path.join(out, "flow_series.csv"))):
        f = flows.setdefault(int(row["flow"]), {"t": [], "delivered": [], "rate": []})
        f["t"].append(int(row["t_ns"]))
        f["delivered"].append(int(row["delivered_bytes"]))
        f["rate"].append(int(row["rate_bps"]) / 1e9)
    q_t, q_kb = [], []
    by_t = {}
    for row in csv.DictReader(open(os.path.join(out, "qlen_series.csv"))):
        if int(row["port"]) == senders:  # the switch's port to the receiver (its N-th link)
            by_t[int(row["t_ns"])] = int(row["qlen_bytes"]) / 1000
    # The series only lists non-empty queues: fill the empty samples.
    ts = sorted({t for f in flows.values() for t in f["t"]})
    for t in ts:
        q_t.append(t)
        q_kb.append(by_t.get(t, 0.0))
    return [flows[k] for k in sorted(flows)], q_t, q_kb


def bins(t, delivered, bin_ns):
    """Goodput (Gb/s) per bin from cumulative delivered bytes."""
    out_t, out_g = [], []
    if not t:
        return out_t, out_g
    edge, last = t[0] + bin_ns, delivered[0]
    for ti, di in zip(t, delivered):
        if ti >= edge:
            out_t.append(edge - bin_ns / 2)
            out_g.append((di - last) * 8 / bin_ns)
            last, edge = di, edge + bin_ns
    return out_t, out_g


def steady(values, times):
    """Values in the middle 70% of the run."""
    if not times:
        return []
    t0, t1 = times[0], times[-1]
    lo, hi = t0 + 0.15 * (t1 - t0), t1 - 0.15 * (t1 - t0)
    return [v for v, t in zip(values, times) if lo <= t <= hi]


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def compare(build, out, cc, senders, seconds, sim, data_dir):
    work = os.path.join(out, f"{cc}-{senders}")
    os.makedirs(work, exist_ok=True)
    d = incast.run_one(build, os.path.join(work, "dpdk"), cc, seconds, senders=senders)
    s_flows, s_qt, s_qkb = run_sim(sim, os.path.join(work, "sim"), cc, senders, data_dir, seconds)
    res = {"cc": cc, "senders": senders, "dpdk": {}, "sim": {}}
    # DPDK: tita-perf's 20 ms goodput series; ns-3: the same bins from 1 ms samples.
    d_rates = [mean(steady(f["goodput"], f["t"])) for f in d["flows"]]
    s_series = [bins(f["t"], f["delivered"], BIN_NS) for f in s_flows]
    s_rates = [mean(steady(g, t)) for t, g in s_series]
    res["dpdk"] = {"rates": d_rates, "total": sum(d_rates), "jain": incast.jain(d_rates),
                   "q_p50_kb": d["q_p50_kb"], "q_p99_kb": d["q_p99_kb"], "q_mean_kb": d["q_mean_kb"]}
    sq = steady(s_qkb, s_qt)
    res["sim"] = {"rates": s_rates, "total": sum(s_rates), "jain": incast.jain(s_rates),
                  "q_p50_kb": incast.percentile(sq, 0.5), "q_p99_kb": incast.percentile(sq, 0.99),
                  "q_mean_kb": mean(sq)}
    fair = incast.BOTTLENECK_GBPS / senders
    res["max_rate_diff"] = max(abs(a - b) / fair for a, b in zip(sorted(d_rates), sorted(s_rates)))
    # One time base for the DPDK side: the senders' first goodput interval began
    # when the test started (tita-perf and the switch both stamp CLOCK_MONOTONIC).
    t0 = min(f["t"][0] for f in d["flows"] if f["t"]) - BIN_NS
    res["series"] = {
        "dpdk": {"flows": [{"t": [(x - t0) / 1e9 for x in f["t"]], "g": f["goodput"]} for f in d["flows"]],
                 "q_t": [(x - t0) / 1e9 for x in d["q_t"] if x >= t0],
                 "q_kb": [q for x, q in zip(d["q_t"], d["q_kb"]) if x >= t0]},
        "sim": {"flows": [{"t": [x / 1e9 for x in t], "g": g} for t, g in s_series],
                "q_t": [x / 1e9 for x in s_qt], "q_kb": s_qkb},
    }
    return res


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(results), 2, figsize=(12, 2.5 * len(results)), squeeze=False)
    for row, r in enumerate(results):
        ax = axes[row][0]
        for i, f in enumerate(r["series"]["dpdk"]["flows"]):
            ax.plot(f["t"], f["g"], color=f"C{i}", lw=1, label="DPDK" if i == 0 else None)
        for i, f in enumerate(r["series"]["sim"]["flows"]):
            ax.plot(f["t"], f["g"], color=f"C{i}", lw=1, ls="--", label="ns-3" if i == 0 else None)
        ax.axhline(incast.BOTTLENECK_GBPS / r["senders"], color="gray", lw=0.6, ls=":")
        ax.set_ylim(0, incast.BOTTLENECK_GBPS * 1.05)
        ax.set_ylabel(f"{r['cc']} {r['senders']}:1\nGb/s")
        ax.legend(fontsize=7, loc="upper right")
        ax = axes[row][1]
        ax.plot(r["series"]["dpdk"]["q_t"], r["series"]["dpdk"]["q_kb"], lw=0.6, label="DPDK")
        ax.plot(r["series"]["sim"]["q_t"], r["series"]["sim"]["q_kb"], lw=0.6, ls="--", label="ns-3")
        ax.axhspan(incast.KMIN_BYTES / 1000, incast.KMAX_BYTES / 1000, color="orange", alpha=0.12)
        ax.set_ylabel("queue KB")
        ax.legend(fontsize=7, loc="upper right")
    axes[0][0].set_title("per-flow goodput (20 ms bins): DPDK solid, ns-3 dashed")
    axes[0][1].set_title("bottleneck queue")
    for ax in axes[-1]:
        ax.set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(path, dpi=70)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("out")
    ap.add_argument("--cc", default="dcqcn,hpcc,tita")
    ap.add_argument("--senders", default="2,4")
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--sim", default=None, help="tita-sim binary [BUILD/ns3-model/tita-sim]")
    ap.add_argument("--doc", default=None, help="also write the PNG and table here")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sim = os.path.abspath(a.sim or os.path.join(build, "ns3-model", "tita-sim"))
    out = os.path.abspath(a.out)
    root = os.path.abspath(os.path.join(HERE, "..", ".."))
    os.makedirs(out, exist_ok=True)
    results = []
    for n in [int(x) for x in a.senders.split(",")]:
        for cc in a.cc.split(","):
            print(f"{n}:1 incast, {cc}: DPDK and ns-3, {a.seconds:g} s each ...", flush=True)
            results.append(compare(build, out, cc, n, a.seconds, sim, root))
    lines = ["| incast | cc | DPDK per-flow Gb/s | ns-3 per-flow Gb/s | max diff (of fair share) | "
             "DPDK queue p50/p99 KB | ns-3 queue p50/p99 KB |", "|---|---|---|---|---|---|---|"]
    for r in results:
        d, s = r["dpdk"], r["sim"]
        lines.append(f"| {r['senders']}:1 | {r['cc']} | {' '.join(f'{x:.3f}' for x in d['rates'])} | "
                     f"{' '.join(f'{x:.3f}' for x in s['rates'])} | {100 * r['max_rate_diff']:.1f}% | "
                     f"{d['q_p50_kb']:.0f} / {d['q_p99_kb']:.0f} | {s['q_p50_kb']:.0f} / {s['q_p99_kb']:.0f} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(out, "sim_vs_dpdk.json"), "w") as f:
        json.dump([{k: v for k, v in r.items() if k != "series"} for r in results], f, indent=1)
    png = os.path.join(out, "sim_vs_dpdk.png")
    plot(results, png)
    if a.doc:
        os.makedirs(a.doc, exist_ok=True)
        plot(results, os.path.join(a.doc, "sim_vs_dpdk.png"))
        with open(os.path.join(a.doc, "sim_vs_dpdk.md"), "w") as f:
            f.write(table + "\n")
    print(f"plot: {png}")


if __name__ == "__main__":
    main()
