#!/usr/bin/env python3
"""Runs cc_bench with many short repetitions and prints, per benchmark, the
minimum and the median ns per operation (shared or noisy machines: the minimum
is the figure to compare), the sample-generation cost subtracted, and the
state-size counters. Usage: summarize.py path/to/cc_bench [extra args]"""
import json
import statistics
import subprocess
import sys

out = subprocess.run([sys.argv[1], "--benchmark_repetitions=15", "--benchmark_min_time=0.05",
                      "--benchmark_format=json", *sys.argv[2:]],
                     check=True, capture_output=True, text=True).stdout
runs = {}
counters = {}
for b in json.loads(out)["benchmarks"]:
    if b.get("run_type") != "iteration":
        continue
    runs.setdefault(b["run_name"], []).append(b["cpu_time"])
    counters[b["run_name"]] = {k: v for k, v in b.items() if k.endswith("_bytes")}
base = {name.split("/")[-1]: min(t) for name, t in runs.items() if name.startswith("sample_only")}
print(f"{'benchmark':28} {'min ns':>8} {'median':>8} {'net min':>8}  counters")
for name, times in runs.items():
    net = ""
    if name.startswith("on_ack/"):
        net = f"{min(times) - base.get(name.split('/')[-1], 0):8.1f}"
    extra = " ".join(f"{k}={int(v)}" for k, v in counters[name].items())
    print(f"{name:28} {min(times):8.2f} {statistics.median(times):8.2f} {net:>8}  {extra}")
