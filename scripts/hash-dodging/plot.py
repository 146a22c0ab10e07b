#!/usr/bin/python3
"""Tables and the recovery plot of scripts/hash-dodging/run.sh's tita-dodge runs.

Usage: plot.py OUT_DIR [--png FILE]
Reads OUT_DIR/<run>/summary.json and series.csv; prints a markdown table of
every run; with --png writes the long flow's goodput around the fault, path
control on against off, for the black hole and the random loss.
"""
import argparse
import csv
import json
import os


def load(out, name):
    d = os.path.join(out, name)
    if not os.path.exists(os.path.join(d, "summary.json")):
        return None
    s = json.load(open(os.path.join(d, "summary.json")))
    rows = list(csv.DictReader(open(os.path.join(d, "series.csv"))))
    s["t_ms"] = [(int(r["t_ns"]) - s["fault_at_ns"]) / 1e6 for r in rows]
    s["gbps"] = [float(r["flow_gbps"]) for r in rows]
    s["coll_gbps"] = [float(r["coll_gbps"]) for r in rows]
    s["name"] = name
    return s


def fmt_us(ns):
    return "-" if ns is None or ns < 0 else f"{ns / 1e3:.0f}"


def fmt_time(ns):
    if ns is None or ns < 0:
        return "-"
    return f"{ns / 1e6:.3f} ms" if ns < 1e9 else f"{ns / 1e9:.2f} s"


def table(runs):
    print("| run | fault | path control | recovery | detection us | recovery us | long flow | "
          "long flow done | collective | collective path changes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in runs:
        flow = f"{s['flow_status'].replace('IBV_WC_', '') or 'unfinished'}, {s['flow_delivered_bytes'] / 1e6:.0f}" \
               f"/{s['flow_bytes'] / 1e6:.0f} MB, {s['flow_path_changes']} changes"
        coll = fmt_time(s["collective_ns"]) if s["collective_done"] else \
            f"not done ({s['collective_failed_messages']} messages failed)"
        fault = s["fault"] + (f" {s['loss'] * 100:g}%" if s["fault"] == "loss" else "")
        print(f"| {s['name']} | {fault} | {'on' if s['dodge'] else 'off'} | {s['recovery']} | "
              f"{fmt_us(s['detect_ns'])} | {fmt_us(s['recover_ns'])} | {flow} | {fmt_time(s['flow_done_ns'])} | "
              f"{coll} | {s['collective_path_changes']} |")


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    by = {s["name"]: s for s in runs}
    panels = [("bh", "black hole on an aggregation-to-core port"), ("loss", "5% silent loss on that port")]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    for ax, (key, title) in zip(axes, panels):
        for suffix, color, label in (("-on", "tab:blue", "Hash Dodging on"), ("-off", "tab:red", "off")):
            s = by.get(key + suffix)
            if s is None:
                continue
            ax.plot(s["t_ms"], s["gbps"], color=color, lw=1.1, label=label)
            if suffix == "-on" and s["detect_ns"] >= 0:
                ax.axvline(s["detect_ns"] / 1e6, color=color, ls=":", lw=0.9)
        ax.axvline(0, color="black", ls="--", lw=0.8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("ms after the fault")
        ax.set_xlim(-0.5, 3)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("long flow goodput, Gb/s")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.suptitle("fat_tree_320, 100 Gb/s hosts, HPCC, go-back-N: a 100 MB flow and a 40-rank All-to-All", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--png")
    a = ap.parse_args()
    names = ["nofault", "bh-on", "bh-off", "bh-off-t16", "loss-on", "loss-off",
             "nofault-sr", "bh-on-sr", "loss-on-sr", "loss-off-sr"]
    runs = [r for r in (load(a.out, n) for n in names) if r is not None]
    table(runs)
    if a.png:
        plot(runs, a.png)


if __name__ == "__main__":
    main()
