#!/usr/bin/python3
"""Collectives on a multi-rail cluster under dcqcn, hpcc and tita (doc/validation.md).

Ring AllReduce and All-to-All iteration times, All-to-All with and without the
PXN-style relay (a GPU hands data for another rail to the GPU of its own server
on that rail over NVLink, so inter-server traffic stays rail-local), and the
share of NIC bytes that crosses the spine (cross-rail or cross-block).

    collectives.py OUT_DIR [--sim build/ns3-model/tita-sim] [--blocks 2 --servers 8]
                   [--spines 8,2] [--cc dcqcn,hpcc,tita] [--doc doc/validation]

Defaults: 2 blocks x 8 servers x 8 GPUs (128 GPUs, 8 rails, 400G NICs and fabric,
NVLink), once with 8 spines (every rail ToR has as much uplink as downlink) and
once with 2 (4:1 oversubscribed at the spines); AllReduce of 16 MB, All-to-All of
256 KB and 4 MB per GPU (its total, split over the 127 others).
"""
import argparse
import csv
import json
import os
import subprocess
import sys

WORKLOADS = [
    ("allreduce 16MB", "allreduce:ranks=all,bytes=16M,order=rail"),
    ("alltoall 256KB", "alltoall:ranks=all,bytes=256K,pxn=0"),
    ("alltoall 256KB PXN", "alltoall:ranks=all,bytes=256K,pxn=1"),
    ("alltoall 4MB", "alltoall:ranks=all,bytes=4M,pxn=0"),
    ("alltoall 4MB PXN", "alltoall:ranks=all,bytes=4M,pxn=1"),
]


def spine_share(links_csv, spines):
    """Bytes NICs sent into the fabric, and the share of them that crossed a spine."""
    rows = list(csv.DictReader(open(links_csv)))
    nic_rate = min(int(r["rate_bps"]) for r in rows)  # NIC and fabric links; NVLink is faster
    degree = {}
    for r in rows:
        if int(r["rate_bps"]) == nic_rate:
            degree.setdefault(r["from_node"], set()).add(r["to_node"])
    hosts = {n for n, peers in degree.items() if len(peers) == 1}
    injected = sum(int(r["tx_bytes"]) for r in rows if r["from_node"] in hosts and int(r["rate_bps"]) == nic_rate)
    # Spines are the topology's first vertices (tita-topology.cc adds them first);
    # a byte that crosses a spine is counted once, on the spine's way down.
    via_spine = sum(int(r["tx_bytes"]) for r in rows if int(r["from_node"]) < spines)
    return injected, (via_spine / injected if injected else 0.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sim", default="build/ns3-model/tita-sim")
    ap.add_argument("--blocks", type=int, default=2)
    ap.add_argument("--servers", type=int, default=8)
    ap.add_argument("--spines", default="8,2")
    ap.add_argument("--cc", default="dcqcn,hpcc,tita")
    ap.add_argument("--doc", default=None)
    a = ap.parse_args()
    tables = []
    for spines in [int(x) for x in a.spines.split(",")]:
        tables.append(run_config(a, spines))
    table = "\n\n".join(tables)
    print(table)
    with open(os.path.join(a.out, "collectives.md"), "w") as f:
        f.write(table + "\n")
    if a.doc:
        os.makedirs(a.doc, exist_ok=True)
        with open(os.path.join(a.doc, "collectives.md"), "w") as f:
            f.write(table + "\n")


def run_config(a, spines):
    topo = (f"multirail:blocks={a.blocks},servers={a.servers},gpus=8,spines={spines},"
            "nic_rate=400Gbps,fabric_rate=400Gbps,nvlink=1")
    gpus = a.blocks * a.servers * 8
    results = []
    for name, wl in WORKLOADS:
        for cc in a.cc.split(","):
            out = os.path.join(a.out, f"spines{spines}", name.replace(" ", "-"), cc)
            if not os.path.exists(os.path.join(out, "collectives.csv")):
                r = subprocess.run([a.sim, f"--topo={topo}", f"--workload={wl}", f"--cc={cc}", "--progress=0",
                                    "--qlen-interval=0s", f"--out={out}"], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"{name} {cc}: tita-sim failed: {r.stderr[-1500:]}")
            c = list(csv.DictReader(open(os.path.join(out, "collectives.csv"))))[0]
            s = json.load(open(os.path.join(out, "summary.json")))
            injected, share = spine_share(os.path.join(out, "links.csv"), spines)
            results.append({"name": name, "cc": cc, "us": int(c["duration_ns"]) / 1e3, "done": c["done"],
                            "share": share, "pfc": s["pfc_pauses_sent"], "wall": s["run_wall_seconds"]})
            print(f"spines {spines} {name:20} {cc:6} {results[-1]['us']:10.1f} us  spine share {share:.3f}  "
                  f"PFC {s['pfc_pauses_sent']}  ({s['run_wall_seconds']:.1f} s wall)", flush=True)
    ccs = a.cc.split(",")
    over = (a.servers / spines) if spines < a.servers else 1
    lines = [f"{gpus} GPUs ({a.blocks} blocks x {a.servers} servers x 8 GPUs, 8 rails), {spines} spines "
             f"({over:g}:1 at the spines), 400G NICs and fabric, NVLink. Iteration time (us); in brackets "
             "the share of NIC bytes that crossed a spine, and PFC pauses.", "",
             "| collective | " + " | ".join(ccs) + " |", "|---|" + "---|" * len(ccs)]
    for name, _ in WORKLOADS:
        cells = []
        for cc in ccs:
            r = next(x for x in results if x["name"] == name and x["cc"] == cc)
            cells.append(f"{r['us']:.0f} ({r['share']:.2f}; {r['pfc']})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    for size in ("256KB", "4MB"):
        for cc in ccs:
            base = next(x for x in results if x["name"] == f"alltoall {size}" and x["cc"] == cc)["us"]
            pxn = next(x for x in results if x["name"] == f"alltoall {size} PXN" and x["cc"] == cc)["us"]
            lines.append(f"- All-to-All {size}, {cc}: with PXN {100 * (pxn - base) / base:+.0f} % "
                         f"({base:.0f} -> {pxn:.0f} us)")
    return "\n".join(lines)

if __name__ == "__main__":
    main()
