#!/usr/bin/python3
"""Tables and plots from tita-sim runs.

    scripts/sim/analyze.py out/ws30-dcqcn out/ws30-hpcc out/ws30-tita --png out/ws30

Each argument is a tita-sim output directory (fct.csv, summary.json, qlen_hist.csv,
pfc.csv, links.csv, steps.csv). The label of a run is its congestion control
(summary.json "cc", plus cc_params if any) unless given as LABEL=DIR.

Prints the standard table: FCT slowdown (FCT / ideal FCT, clamped at 1 as the
HPCC artifact does) at p50/p95/p99 per flow-size bucket, per algorithm, with the
number of flows in each bucket; then PFC pauses, drops and queue statistics.
With --png PREFIX writes PREFIX-slowdown.png (p50 and p99 per bucket),
PREFIX-slowdown-cdf.png, PREFIX-qlen.png (CDF of sampled switch queue lengths)
and, when collectives ran, PREFIX-steps.png.
"""
import argparse
import csv
import json
import math
import os
import sys

DEFAULT_BUCKETS = [0, 10_000, 100_000, 1_000_000, 10_000_000, float("inf")]


def human(n):
    if n == float("inf"):
        return "inf"
    for unit, div in (("MB", 1e6), ("KB", 1e3)):
        if n >= div:
            v = n / div
            return f"{v:g}{unit}"
    return f"{n:g}B"


def percentile(sorted_values, p):
    """Nearest-rank percentile (as the HPCC artifact's get_pctl)."""
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, int(len(sorted_values) * p))
    return sorted_values[i]


def load_run(arg):
    label = None
    path = arg
    if "=" in arg and not os.path.isdir(arg):
        label, path = arg.split("=", 1)
    summary = {}
    sp = os.path.join(path, "summary.json")
    if os.path.exists(sp):
        with open(sp) as f:
            summary = json.load(f)
    if label is None:
        label = summary.get("cc", os.path.basename(path.rstrip("/")))
        if summary.get("cc_params"):
            label += " " + summary["cc_params"]
    flows = []
    fp = os.path.join(path, "fct.csv")
    if os.path.exists(fp):
        with open(fp) as f:
            for r in csv.DictReader(f):
                if int(r["group"]) >= 0:
                    continue  # collective messages are reported by step
                flows.append((int(r["bytes"]), max(1.0, float(r["slowdown"])), int(r["fct_ns"]), r["ok"] == "1"))
    qlen = []  # (kb, samples)
    qp = os.path.join(path, "qlen_hist.csv")
    if os.path.exists(qp):
        with open(qp) as f:
            for r in csv.DictReader(f):
                qlen.append((int(r["kb"]), int(r["samples"])))
    steps = []
    stp = os.path.join(path, "steps.csv")
    if os.path.exists(stp):
        with open(stp) as f:
            steps = list(csv.DictReader(f))
    return {"label": label, "path": path, "summary": summary, "flows": flows, "qlen": qlen, "steps": steps}


def table(runs, buckets):
    lines = []
    header = "| bucket | " + " | ".join(f"{r['label']} p50 / p95 / p99 (n)" for r in runs) + " |"
    lines.append(header)
    lines.append("|" + "---|" * (len(runs) + 1))
    for lo, hi in zip(buckets, buckets[1:]):
        row = [f"{human(lo)}-{human(hi)}"]
        for r in runs:
            s = sorted(sd for size, sd, _, _ in r["flows"] if lo <= size < hi)
            if not s:
                row.append("-")
                continue
            row.append(f"{percentile(s, 0.5):.2f} / {percentile(s, 0.95):.2f} / {percentile(s, 0.99):.2f} ({len(s)})")
        lines.append("| " + " | ".join(row) + " |")
    row = ["all"]
    for r in runs:
        s = sorted(sd for _, sd, _, _ in r["flows"])
        row.append(f"{percentile(s, 0.5):.2f} / {percentile(s, 0.95):.2f} / {percentile(s, 0.99):.2f} ({len(s)})"
                   if s else "-")
    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def qlen_stats(r):
    total = sum(n for _, n in r["qlen"])
    if total == 0:
        return None
    hist = sorted(r["qlen"])
    mean = sum(kb * n for kb, n in hist) / total
    acc = 0
    p99 = hist[-1][0]
    for kb, n in hist:
        acc += n
        if acc >= 0.99 * total:
            p99 = kb
            break
    return mean, p99, hist[-1][0]


def plots(runs, buckets, prefix):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [f"{human(lo)}-{human(hi)}" for lo, hi in zip(buckets, buckets[1:])]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=False)
    for ax, p in zip(axes, (0.5, 0.99)):
        for r in runs:
            ys = []
            for lo, hi in zip(buckets, buckets[1:]):
                s = sorted(sd for size, sd, _, _ in r["flows"] if lo <= size < hi)
                ys.append(percentile(s, p) if s else float("nan"))
            ax.plot(names, ys, marker="o", label=r["label"])
        ax.set_title(f"FCT slowdown p{int(p * 100)}")
        ax.set_xlabel("flow size")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("slowdown (FCT / ideal)")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(prefix + "-slowdown.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for r in runs:
        s = sorted(sd for _, sd, _, _ in r["flows"])
        if s:
            ax.plot(s, [(i + 1) / len(s) for i in range(len(s))], label=r["label"])
    ax.set_xscale("log")
    ax.set_xlabel("FCT slowdown")
    ax.set_ylabel("CDF of flows")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(prefix + "-slowdown-cdf.png", dpi=120)
    plt.close(fig)

    if any(r["qlen"] for r in runs):
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        for r in runs:
            hist = sorted(r["qlen"])
            total = sum(n for _, n in hist)
            if not total:
                continue
            xs, ys, acc = [], [], 0
            for kb, n in hist:
                acc += n
                xs.append(kb)
                ys.append(acc / total)
            ax.step(xs, ys, where="post", label=r["label"])
        ax.set_xscale("symlog")
        ax.set_xlabel("switch egress queue (KB, sampled)")
        ax.set_ylabel("CDF of samples")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(prefix + "-qlen.png", dpi=120)
        plt.close(fig)

    if any(r["steps"] for r in runs):
        fig, ax = plt.subplots(figsize=(6.5, 4.5))
        for r in runs:
            if r["steps"]:
                xs = [int(s["step"]) for s in r["steps"]]
                ys = [int(s["duration_ns"]) / 1e3 for s in r["steps"]]
                ax.plot(xs, ys, label=f"{r['label']} {r['steps'][0]['kind']}")
        ax.set_xlabel("collective step")
        ax.set_ylabel("step time (us)")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(prefix + "-steps.png", dpi=120)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="tita-sim output directories (or LABEL=DIR)")
    ap.add_argument("--buckets", help="comma-separated bucket edges in bytes (default 0,10K,100K,1M,10M)")
    ap.add_argument("--png", help="write plots with this path prefix")
    args = ap.parse_args()
    buckets = DEFAULT_BUCKETS
    if args.buckets:
        buckets = [float(x) for x in args.buckets.split(",")] + [float("inf")]
    runs = [load_run(a) for a in args.runs]
    print("FCT slowdown (p50 / p95 / p99, flows in bucket)\n")
    print(table(runs, buckets))
    print()
    print("| run | flows done/started | failed | PFC pauses | switch drops | queue mean / p99 / max (KB) | "
          "events/s | sim ms per wall s | peak RSS (MB) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        s = r["summary"]
        q = qlen_stats(r)
        qs = f"{q[0]:.1f} / {q[1]} / {q[2]}" if q else "-"
        print(f"| {r['label']} | {s.get('flows_finished', '?')}/{s.get('flows_started', '?')} | "
              f"{s.get('flows_failed', '?')} | {s.get('pfc_pauses_sent', '?')} | {s.get('switch_drops', '?')} | {qs} | "
              f"{s.get('events_per_second', 0):.0f} | {s.get('sim_ms_per_wall_second', 0):.3f} | "
              f"{s.get('peak_rss_kb', 0) / 1024:.0f} |")
    for r in runs:
        if r["steps"]:
            d = [int(s["duration_ns"]) for s in r["steps"]]
            print(f"\n{r['label']}: {r['steps'][0]['kind']} {len(d)} steps, step time mean {sum(d) / len(d) / 1e3:.2f} us, "
                  f"max {max(d) / 1e3:.2f} us")
    if args.png:
        os.makedirs(os.path.dirname(os.path.abspath(args.png)), exist_ok=True)
        plots(runs, buckets, args.png)
        print(f"\nplots: {args.png}-*.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
