#!/usr/bin/python3
"""Results over several seeds: each algorithm's FCT slowdowns as median [min, max]
across seeds, and tita against every baseline seed by seed.

    scripts/validation/seeds.py results/validation/fat_tree_320/hpcc-artifact [--md FILE]

The directory holds seedN/EXPERIMENT/ALGORITHM runs (run.sh with SEEDS="1 2 3").
A claim "tita beats X" is made only where tita's figure is lower than X's in
every seed; the ratio X / tita is shown as median [min, max] over seeds.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import metrics as M  # noqa: E402
from report import EXPERIMENTS, ORDER, TITLES  # noqa: E402

# (label, metric path) of the figures compared.
FIGURES = [("short p50", ("short", "p50")), ("short p95", ("short", "p95")), ("short p99", ("short", "p99")),
           ("long p50", ("long", "p50")), ("long p99", ("long", "p99"))]
LABELS = {"dcqcn": "dcqcn (CE echoed in ACKs)", "dcqcn-cnp": "dcqcn (CNP packets, 50 us)"}


def spread(values, fmt="{:.2f}"):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} [{fmt.format(min(values))}, {fmt.format(max(values))}]"


def collect(root):
    """{experiment: {cc: {seed: metrics}}}"""
    out = {}
    for seed_dir in sorted(os.listdir(root)):
        if not seed_dir.startswith("seed"):
            continue
        seed = int(seed_dir[4:])
        for exp in os.listdir(os.path.join(root, seed_dir)):
            ed = os.path.join(root, seed_dir, exp)
            incast = os.path.join(ed, "incast.flows")
            for cc in os.listdir(ed):
                d = os.path.join(ed, cc)
                if os.path.isfile(os.path.join(d, "summary.json")) and os.path.isfile(os.path.join(d, "fct.csv")):
                    m = M.metrics(d, incast if os.path.exists(incast) else None)
                    m["timeouts"] = M.load(d)["summary"].get("qp_timeouts")
                    out.setdefault(exp, {}).setdefault(cc, {})[seed] = m
    return out


def get(m, path):
    return m[path[0]][path[1]]


def tables(data):
    lines = []
    exps = [e for e in EXPERIMENTS if e in data] + sorted(e for e in data if e not in EXPERIMENTS)
    for exp in exps:
        ccs = sorted(data[exp], key=lambda c: ORDER.index(c) if c in ORDER else 99)
        seeds = sorted({s for c in ccs for s in data[exp][c]})
        lines += [f"### {TITLES.get(exp, exp)} (seeds {', '.join(map(str, seeds))})", "",
                  "FCT slowdown, median [min, max] over seeds; short < 100 KB, long >= 1 MB.", "",
                  "| algorithm | " + " | ".join(f for f, _ in FIGURES) +
                  " | PFC pauses | drops (switch + NIC) | timeouts | flows finished |",
                  "|---|" + "---|" * (len(FIGURES) + 4)]
        for cc in ccs:
            runs = data[exp][cc].values()
            cells = [spread([get(m, p) for m in runs]) for _, p in FIGURES]
            cells.append(spread([m["pfc_pauses"] for m in runs], "{:.0f}"))
            cells.append(spread([m["switch_drops"] + m["nic_drops"] for m in runs], "{:.0f}"))
            cells.append(spread([m["timeouts"] for m in runs], "{:.0f}"))
            cells.append(" / ".join(f"{m['flows_finished']}/{m['flows_started']}" for m in runs))
            lines.append(f"| {LABELS.get(cc, cc)} | " + " | ".join(cells) + " |")
        if "tita" in data[exp]:
            lines += ["", "Baseline / tita, per seed (above 1: tita lower); the verdict needs every seed.", "",
                      "| baseline | " + " | ".join(f for f, _ in FIGURES) + " |",
                      "|---|" + "---|" * len(FIGURES)]
            tita = data[exp]["tita"]
            for cc in ccs:
                if cc.startswith("tita"):
                    continue
                cells = []
                for _, p in FIGURES:
                    ratios = [get(data[exp][cc][s], p) / get(tita[s], p)
                              for s in seeds if s in tita and s in data[exp][cc] and get(tita[s], p)]
                    verdict = ""
                    if ratios and min(ratios) > 1.0:
                        verdict = " tita lower"
                    elif ratios and max(ratios) < 1.0:
                        verdict = f" {cc} lower"
                    cells.append(spread(ratios) + verdict)
                lines.append(f"| {LABELS.get(cc, cc)} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--md", help="also write the tables here")
    a = ap.parse_args()
    text = tables(collect(a.root))
    print(text)
    if a.md:
        with open(a.md, "w") as f:
            f.write("# Baselines over seeds, in the HPCC simulator's configuration\n\n"
                    "Generated by `scripts/validation/seeds.py " + a.root + " --md " + a.md + "` from\n"
                    "`SEEDS=\"1 2 3\" CCS=\"dcqcn dcqcn-cnp timely hpcc tita\" scripts/validation/run.sh ws30 ws50 fb50`\n"
                    "(tita-sim --preset=hpcc-artifact; see doc/validation.md).\n\n" + text + "\n")


if __name__ == "__main__":
    main()
