#!/usr/bin/python3
"""Tables and plots of doc/validation.md from the runs of run.sh.

    scripts/validation/report.py results/validation/fat_tree_320 [--doc doc/validation]

Reads every EXPERIMENT/ALGORITHM run directory under the results directory
(metrics.py does the per-run work), prints the markdown tables on stdout, also
writes them to RESULTS/tables.md, and writes one PNG per experiment into --doc:
p50 and p99 FCT slowdown per flow-size bucket, and the CCDF of the sampled ToR
downlink queue.
"""
import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics as M  # noqa: E402

ORDER = ["dcqcn", "dcqcn-cnp", "timely", "hpcc", "swift", "powertcp", "nscc", "tita", "tita-int-half", "tita-int-off"]
EXPERIMENTS = ["ws30", "ws50", "fb30", "fb50", "ws30i", "ws50i", "fb30i", "fb50i", "incast"]
TITLES = {
    "ws30": "web-search, 30 % load", "ws50": "web-search, 50 % load",
    "fb30": "FB-Hadoop, 30 % load", "fb50": "FB-Hadoop, 50 % load",
    "ws30i": "web-search 30 % + 60-to-1 incasts", "ws50i": "web-search 50 % + 60-to-1 incasts",
    "fb30i": "FB-Hadoop 30 % + 60-to-1 incasts", "fb50i": "FB-Hadoop 50 % + 60-to-1 incasts",
    "incast": "one 60-to-1 incast of 500 KB, alone",
}


def f2(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def load_experiment(path):
    runs = {}
    incast = os.path.join(path, "incast.flows")
    incast = incast if os.path.exists(incast) else None
    for cc in sorted(os.listdir(path), key=lambda c: ORDER.index(c) if c in ORDER else 99):
        d = os.path.join(path, cc)
        if os.path.isfile(os.path.join(d, "summary.json")) and os.path.isfile(os.path.join(d, "fct.csv")):
            runs[cc] = M.metrics(d, incast)
    return runs


def fct_table(runs):
    names = list(M.bucket_name(lo, hi) for lo, hi in M.BUCKETS)
    out = ["| algorithm | " + " | ".join(names) + " | < 100KB | >= 1MB |",
           "|---|" + "---|" * (len(names) + 2)]
    for cc, m in runs.items():
        cells = []
        for st in [m["buckets"][n] for n in names] + [m["short"], m["long"]]:
            cells.append("-" if not st["n"] else f"{f2(st['p50'])} / {f2(st['p95'])} / {f2(st['p99'])}")
        out.append(f"| {cc} | " + " | ".join(cells) + " |")
    out.append("| flows | " + " | ".join(str(next(iter(runs.values()))["buckets"][n]["n"]) for n in names) +
               f" | {next(iter(runs.values()))['short']['n']} | {next(iter(runs.values()))['long']['n']} |")
    return "\n".join(out)


def summary_table(runs):
    out = ["| algorithm | flows done / started | PFC pauses | drops | ToR-down queue KB: mean / p99 / p99.9 / max | "
           "< 100KB p99 | >= 1MB p50 / p99 | simulated ms |",
           "|---|---|---|---|---|---|---|---|"]
    for cc, m in runs.items():
        q = m["tor_down_qlen"]
        qs = f"{q['mean_kb']:.1f} / {q['p99_kb']} / {q['p999_kb']} / {q['max_kb']}" if q else "-"
        out.append(f"| {cc} | {m['flows_finished']} / {m['flows_started']} | {m['pfc_pauses']} | "
                   f"{m['switch_drops'] + m['nic_drops']} | {qs} | {f2(m['short']['p99'])} | "
                   f"{f2(m['long']['p50'])} / {f2(m['long']['p99'])} | {m['sim_ms']:.1f} |")
    return "\n".join(out)


def incast_table(runs):
    out = ["| algorithm | events | Jain (mean / min) | last flow / ideal | incast flow slowdown p50 / p99 | "
           "PFC pauses | ToR-down queue max KB |",
           "|---|---|---|---|---|---|---|"]
    for cc, m in runs.items():
        i = m.get("incast")
        if not i:
            continue
        q = m["tor_down_qlen"]
        out.append(f"| {cc} | {i['events']} | {i['jain_mean']:.3f} / {i['jain_min']:.3f} | "
                   f"{i['over_ideal_mean']:.2f} | {f2(i['slowdown']['p50'])} / {f2(i['slowdown']['p99'])} | "
                   f"{m['pfc_pauses']} | {q['max_kb'] if q else '-'} |")
    return "\n".join(out)


def targets(all_runs):
    out = ["| experiment | tita < 100KB p99 | / hpcc | / dcqcn | >= 1MB p50: tita / hpcc | >= 1MB p99: tita / hpcc "
           "| tita PFC pauses |",
           "|---|---|---|---|---|---|---|"]
    for exp, runs in all_runs.items():
        t, h, d = runs.get("tita"), runs.get("hpcc"), runs.get("dcqcn")
        if not t or not t["short"]["n"]:
            continue
        rh = t["short"]["p99"] / h["short"]["p99"] if h else float("nan")
        rd = t["short"]["p99"] / d["short"]["p99"] if d else float("nan")
        lh = f"{f2(t['long']['p50'])} / {f2(h['long']['p50'])}" if h else "-"
        l9 = f"{f2(t['long']['p99'])} / {f2(h['long']['p99'])}" if h else "-"
        out.append(f"| {exp} | {f2(t['short']['p99'])} | {f2(rh)} | {f2(rd)} | {lh} | {l9} | {t['pfc_pauses']} |")
    return "\n".join(out)


def int_table(all_runs):
    """tita with INT on every switch, on half of them, and on none (ECN + RTT)."""
    out = ["| experiment | < 100KB p99: all / half / none | >= 1MB p99: all / half / none | "
           "ToR-down queue p99 KB: all / half / none | PFC pauses: all / half / none |",
           "|---|---|---|---|---|"]
    for exp, runs in all_runs.items():
        v = [runs.get(k) for k in ("tita", "tita-int-half", "tita-int-off")]
        if not all(v):
            continue
        q = [m["tor_down_qlen"]["p99_kb"] if m["tor_down_qlen"] else "-" for m in v]
        out.append(f"| {exp} | " + " / ".join(f2(m["short"]["p99"]) for m in v) + " | " +
                   " / ".join(f2(m["long"]["p99"]) for m in v) + " | " + " / ".join(str(x) for x in q) + " | " +
                   " / ".join(str(m["pfc_pauses"]) for m in v) + " |")
    return "\n".join(out)


def plot(exp, runs, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [M.bucket_name(lo, hi) for lo, hi in M.BUCKETS]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, key in zip(axes[:2], ("p50", "p99")):
        for cc, m in runs.items():
            ys = [m["buckets"][n][key] if m["buckets"][n]["n"] else float("nan") for n in names]
            ax.plot(names, ys, marker="o", ms=3, label=cc)
        ax.set_yscale("log")
        ax.set_title(f"FCT slowdown {key}")
        ax.tick_params(axis="x", labelsize=7)
        ax.grid(True, which="both", alpha=0.3)
    ax = axes[2]
    for cc, m in runs.items():
        d = M.load(m["_dir"]) if "_dir" in m else None
        hist = d["qlen_hist"] if d else {}
        total = sum(hist.values())
        if not total:
            continue
        xs, ys, acc = [], [], total
        for kb, n in sorted(hist.items()):
            xs.append(max(kb, 0.5))
            ys.append(acc / total)
            acc -= n
        ax.step(xs, ys, where="post", label=cc)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-5, 1)
    ax.set_xlabel("ToR downlink queue (KB)")
    ax.set_title("queue CCDF (10 us samples)")
    ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7)
    fig.suptitle(TITLES.get(exp, exp), fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=70)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results")
    ap.add_argument("--doc", default="doc/validation", help="directory for the PNGs ('' for none)")
    a = ap.parse_args()
    all_runs = {}
    for exp in EXPERIMENTS + sorted(set(os.listdir(a.results)) - set(EXPERIMENTS)):
        p = os.path.join(a.results, exp)
        if os.path.isdir(p):
            runs = load_experiment(p)
            for cc in runs:
                runs[cc]["_dir"] = os.path.join(p, cc)
            if runs:
                all_runs[exp] = runs
    lines = []
    for exp, runs in all_runs.items():
        lines.append(f"### {exp}: {TITLES.get(exp, exp)}\n")
        if any(m["all"]["n"] for m in runs.values()):
            lines.append("FCT slowdown p50 / p95 / p99 per flow size (Poisson flows; last row: flows per bucket)\n")
            lines.append(fct_table(runs) + "\n")
            lines.append(summary_table(runs) + "\n")
        if any("incast" in m for m in runs.values()):
            lines.append("Incasts\n")
            lines.append(incast_table(runs) + "\n")
        if a.doc:
            os.makedirs(a.doc, exist_ok=True)
            plot(exp, runs, os.path.join(a.doc, f"{exp}.png"))
    lines.append("### Targets (tita)\n")
    lines.append(targets(all_runs) + "\n")
    lines.append("### tita with INT on all, half, or none of the switches\n")
    lines.append(int_table(all_runs) + "\n")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(a.results, "tables.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.results, "metrics.json"), "w") as f:
        json.dump({e: {c: {k: v for k, v in m.items() if k != "_dir"} for c, m in r.items()}
                   for e, r in all_runs.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
