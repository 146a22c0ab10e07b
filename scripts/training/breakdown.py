#!/usr/bin/python3
"""The iteration-time breakdown of tita-sim training runs (doc/training.md):
compute, and the communication compute did not hide split by group (exposed
TP, DP, EP, DP_EP, PP), plus waiting (a GPU idle with no collective of its own
running: a pipeline bubble, or waiting on slower members), one bar per
configuration.

    scripts/training/breakdown.py LABEL=OUTDIR [LABEL=OUTDIR ...] [--png FILE] [--md FILE]

OUTDIR is a tita-sim --out of a --workload=training run (iterations.csv,
training_collectives.csv, training_trace.json). For each iteration the GPU
iterations.csv's compute_ns counts (the one with the most compute) is swept
from the iteration's start to its end: an instant it computes is compute; else,
if collectives it takes part in are running, exposed communication of their
group (the first of tp, ep, pp, dp_ep, dp when several run: the blocking ones
before the weight-gradient reductions the GPU does not wait for); else waiting.
The parts add up to the iteration time. Bars show the mean over iterations.
"""
import argparse
import csv
import json
import os
import sys

GROUPS = ["tp", "ep", "pp", "dp_ep", "dp"]
PARTS = ["compute"] + [f"exposed_{g}" for g in GROUPS] + ["wait"]
COLORS = {"compute": "#4c72b0", "exposed_tp": "#dd8452", "exposed_ep": "#c44e52", "exposed_pp": "#8172b3",
          "exposed_dp_ep": "#937860", "exposed_dp": "#55a868", "wait": "#bbbbbb"}


def read_csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def union_len(intervals, lo, hi):
    """Total length of the union of [a, b) clipped to [lo, hi)."""
    total, end = 0, lo
    for a, b in sorted(intervals):
        a, b = max(a, end), min(b, hi)
        if b > a:
            total += b - a
            end = b
    return total


def spans_of(trace, rank, groups_by_id):
    """(compute spans, {group: comm spans}) of one rank, in ns."""
    comp, comm = [], {g: [] for g in GROUPS}
    for e in trace["traceEvents"]:
        if e.get("ph") != "X" or e.get("pid") != rank:
            continue
        a = round(e["ts"] * 1000)
        b = a + round(e["dur"] * 1000)
        if e.get("tid") == 0:
            comp.append((a, b))
        else:
            g = groups_by_id.get(e["args"]["collective"])
            if g in comm:
                comm[g].append((a, b))
    return comp, comm


def busiest_rank(trace, lo, hi):
    best, best_ns = 0, -1
    per = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "X" and e.get("tid") == 0:
            a = e["ts"] * 1000
            if lo <= a < hi:
                per[e["pid"]] = per.get(e["pid"], 0) + e["dur"] * 1000
    for r, ns in sorted(per.items()):
        if ns > best_ns + 0.5:
            best, best_ns = r, ns
    return best


def breakdown(outdir):
    """Mean of each part over the finished iterations of one run, in ns, with
    'time', 'bound' and 'iterations'."""
    its = read_csv(os.path.join(outdir, "iterations.csv"))
    if not its:
        return None
    colls = read_csv(os.path.join(outdir, "training_collectives.csv"))
    groups_by_id = {int(c["id"]): c["group"] for c in colls}
    with open(os.path.join(outdir, "training_trace.json")) as f:
        trace = json.load(f)
    sums = {p: 0.0 for p in PARTS}
    sums["time"] = sums["bound"] = 0.0
    for it in its:
        lo, hi = int(it["start_ns"]), int(it["end_ns"])
        rank = busiest_rank(trace, lo, hi)
        comp, comm = spans_of(trace, rank, groups_by_id)
        # Sweep: split [lo, hi) at every span edge; a piece takes the first
        # label (compute, then the groups in order) whose spans cover it.
        labels = [(comp, "compute")] + [(comm[g], f"exposed_{g}") for g in GROUPS]
        edges = {lo, hi}
        for spans, _ in labels:
            for x, y in spans:
                edges.update(v for v in (x, y) if lo < v < hi)
        edges = sorted(edges)
        at = {v: i for i, v in enumerate(edges)}
        covered = []
        for spans, _ in labels:
            diff = [0] * (len(edges) + 1)
            for x, y in spans:
                x, y = max(x, lo), min(y, hi)
                if y > x:
                    diff[at[x]] += 1
                    diff[at[y]] -= 1
            run, cov = 0, []
            for i in range(len(edges) - 1):
                run += diff[i]
                cov.append(run > 0)
            covered.append(cov)
        part = {p: 0 for p in PARTS}
        for i in range(len(edges) - 1):
            label = "wait"
            for k, (_, lab) in enumerate(labels):
                if covered[k][i]:
                    label = lab
                    break
            part[label] += edges[i + 1] - edges[i]
        for p in PARTS:
            sums[p] += part[p]
        sums["time"] += int(it["time_ns"])
        sums["bound"] += int(it["bound_ns"])
    n = len(its)
    r = {k: v / n for k, v in sums.items()}
    r["iterations"] = n
    return r


def markdown(rows):
    head = "| configuration | iteration ms | bound ms | " + " | ".join(p.replace("_", " ") for p in PARTS) + " |"
    md = [head, "|" + "---|" * (len(PARTS) + 3)]
    for label, r in rows:
        if r is None:
            md.append(f"| {label} | unfinished | " + " | ".join("-" for _ in range(len(PARTS) + 1)) + " |")
            continue
        md.append(f"| {label} | {r['time'] / 1e6:.3f} | {r['bound'] / 1e6:.3f} | "
                  + " | ".join(f"{r[p] / 1e6:.3f}" for p in PARTS) + " |")
    return "\n".join(md) + "\n"


def plot(rows, path, title="Iteration time breakdown"):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [(label, r) for label, r in rows if r is not None]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(rows) + 2), 4.5))
    x = range(len(rows))
    bottom = [0.0] * len(rows)
    for p in PARTS:
        v = [r[p] / 1e6 for _, r in rows]
        if not any(v):
            continue
        ax.bar(x, v, bottom=bottom, color=COLORS[p], label=p.replace("_", " "))
        bottom = [b + y for b, y in zip(bottom, v)]
    ax.scatter(list(x), [r["bound"] / 1e6 for _, r in rows], marker="_", s=400, color="black",
               label="analytical bound", zorder=3)
    ax.set_xticks(list(x))
    ax.set_xticklabels([label for label, _ in rows], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("ms per iteration")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="LABEL=OUTDIR")
    ap.add_argument("--png", help="write the stacked-bar plot here")
    ap.add_argument("--md", help="write the markdown table here (else stdout)")
    ap.add_argument("--title", default="Iteration time breakdown")
    a = ap.parse_args()
    rows = []
    for spec in a.runs:
        label, sep, d = spec.partition("=")
        if not sep:
            label, d = os.path.basename(os.path.normpath(spec)), spec
        if not os.path.exists(os.path.join(d, "iterations.csv")):
            sys.exit(f"breakdown: {d}: no iterations.csv (not a --workload=training run's --out)")
        rows.append((label, breakdown(d)))
    md = markdown(rows)
    if a.md:
        with open(a.md, "w") as f:
            f.write(md)
    else:
        sys.stdout.write(md)
    if a.png:
        plot(rows, a.png, a.title)


if __name__ == "__main__":
    main()
