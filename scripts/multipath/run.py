#!/usr/bin/python3
"""Multipath measurements (doc/multipath.md, "Measured at scale"): every path
policy on the same fabric and the same traffic, in ns-3 through tita-sim.

    scripts/multipath/run.py [--build build] [--out out/multipath] [--only NAME,...]
                             [--policies NAME,...] [--quick] [--force]

Policies (the same switches everywhere: ECMP over the UDP source port with the
hash-offset of Hash Dodging, TitaSwitchNode::DodgeField=udp-sport):
  ecmp    one path per QP, go-back-N (the RoCE default)
  dodge   one path per QP that moves when it fails (Hash Dodging, NIC DodgeField)
  rr      selective repeat, each QP sprayed over 4 UDP source ports round robin
  reps    the same, REPS-like recycling of values whose ACKs came back unmarked
  offset  the same, the 4 values chosen so the paths are node-disjoint
  flowlet offset's values, but changed per flowlet: a QP keeps its value
          until it pauses 5 us (SprayFlowlet), so a burst stays in order

Scenarios (DCQCN everywhere, the baseline the field compares against):
  ft-a2a          fat_tree_320, All-to-All over 320 ranks, 1 MB per rank
  ft-allreduce    fat_tree_320, ring AllReduce over 320 ranks, 4 MB
  ft-perm         fat_tree_320, a permutation: every host sends 4 MB to the host
                  with its place on the next ToR, all at once (16 flows from
                  every ToR to one other: what ECMP collisions cost, with no
                  receiver shared by two senders)
  ft-websearch    fat_tree_320, web-search flow sizes, Poisson, 50% load, 2 ms of arrivals
  ft-down         ft-a2a with an aggregation-core link withdrawn from ECMP at 20 us
  ft-blackhole    ft-a2a with that link silently dropping everything from 20 us
  ft-half         ft-a2a with that link at half its rate
  mr-allreduce    the 2K-GPU multi-rail cluster (8 blocks x 32 servers x 8 GPUs,
                  32 spines, 400 Gb/s), ring AllReduce of 1 MB over all 2,048 GPUs
  mr-a2a          the same cluster, All-to-All over rail 0 of its 256 servers
                  (the first 256 ranks in rail order: every pair of blocks
                  crosses the spines), 4 MB per rank

Runs stop at 20 ms of simulated time (mr-allreduce: 60 ms, its ideal is 33 ms);
a collective not done by then is reported so.

Each run goes to OUT/SCENARIO/POLICY (tita-sim's outputs); a run whose
summary.json exists is not run again unless --force. Then OUT/results.json,
OUT/results.md (the tables doc/multipath.md quotes) and OUT/*.png: completion
time against the ideal per scenario and policy, web-search slowdown per size
bucket, and the spread (max / mean) of the core links' utilisation.

--quick runs the fat_tree_320 scenarios only (about 17 minutes on 2 vCPUs);
the two multi-rail scenarios add about 18 minutes.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "sim"))
import analyze  # noqa: E402

SWITCH = ["--ns3::TitaSwitchNode::DodgeField=udp-sport"]
SPRAY = ["--ns3::RdmaNicNetDevice::SelectiveRepeat=true", "--ns3::RdmaNicNetDevice::SprayPaths=4"]
POLICIES = {
    "ecmp": [],
    "dodge": ["--ns3::RdmaNicNetDevice::DodgeField=udp-sport"],
    "rr": SPRAY + ["--ns3::RdmaNicNetDevice::SprayPolicy=round_robin"],
    "reps": SPRAY + ["--ns3::RdmaNicNetDevice::SprayPolicy=reps"],
    "offset": SPRAY + ["--ns3::RdmaNicNetDevice::SprayPolicy=offset"],
    "flowlet": SPRAY + ["--ns3::RdmaNicNetDevice::SprayPolicy=offset", "--ns3::RdmaNicNetDevice::SprayFlowlet=5us"],
}
FT = "--topo=" + os.path.join(ROOT, "data", "workloads", "fat_tree_320.topo")
MR = "--topo=multirail:blocks=8,servers=32,gpus=8,spines=32,nic_rate=400Gbps,fabric_rate=400Gbps"
A2A = "--workload=alltoall:ranks=all,bytes=1M"
PERM = "ft-perm.flows"  # written into OUT by permutation_flows()
SCENARIOS = {
    "ft-a2a": [FT, A2A],
    "ft-perm": [FT, "--workload=flows:path={out}/" + PERM],
    "ft-allreduce": [FT, "--workload=allreduce:ranks=all,bytes=4M"],
    "ft-websearch": [FT, "--workload=poisson:cdf=" + os.path.join(ROOT, "data", "workloads", "websearch.cdf")
                     + ",load=0.5", "--duration=2ms"],
    "ft-down": [FT, A2A, "--fault=down:link=core,at=20us"],
    "ft-blackhole": [FT, A2A, "--fault=blackhole:link=core,at=20us"],
    "ft-half": [FT, A2A, "--fault=half:link=core"],
    "mr-allreduce": [MR, "--workload=allreduce:ranks=all,bytes=1M,order=rail", "--qlen-interval=0", "--stop=60ms"],
    "mr-a2a": [MR, "--workload=alltoall:ranks=256,bytes=4M", "--qlen-interval=0"],
}
QUICK = [s for s in SCENARIOS if s.startswith("ft-")]
# A run that cannot finish (a QP pinned to a black hole) is cut off here
# (a scenario's own --stop comes later and wins).
STOP = "--stop=20ms"
PERM_BYTES = 4_000_000


def permutation_flows(topo, path):
    """The ft-perm flow file (HPCC format: count, then src dst pg dport size
    start_s): host i of ToR t sends to host i of ToR t+1 (the ToRs in the order
    of their first host), every flow at once."""
    tor_of, hosts_of = {}, {}
    with open(topo) as f:
        _, _, nlinks = (int(x) for x in f.readline().split())
        switches = set(int(x) for x in f.readline().split())
        for _ in range(nlinks):
            a, b = (int(x) for x in f.readline().split()[:2])
            if (a in switches) != (b in switches):
                h, t = (b, a) if a in switches else (a, b)
                tor_of[h] = t
    for h in sorted(tor_of):
        hosts_of.setdefault(tor_of[h], []).append(h)
    tors = sorted(hosts_of, key=lambda t: hosts_of[t][0])
    lines = []
    for k, t in enumerate(tors):
        nxt = hosts_of[tors[(k + 1) % len(tors)]]
        for i, h in enumerate(hosts_of[t]):
            lines.append(f"{h} {nxt[i % len(nxt)]} 3 100 {PERM_BYTES} 0.000001")
    with open(path, "w") as f:
        f.write(f"{len(lines)}\n" + "\n".join(lines) + "\n")


def run_one(sim, out, scenario, policy, force):
    d = os.path.join(out, scenario, policy)
    if not force and os.path.exists(os.path.join(d, "summary.json")):
        return d
    os.makedirs(d, exist_ok=True)
    args = [a.replace("{out}", out) for a in SCENARIOS[scenario]]
    argv = [sim, STOP, *args, "--cc=dcqcn", "--seed=1", *SWITCH, *POLICIES[policy], f"--out={d}"]
    t0 = time.time()
    with open(os.path.join(d, "run.log"), "w") as log:
        log.write(" ".join(argv) + "\n")
        log.flush()
        rc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        sys.exit(f"run.py: {scenario}/{policy} failed (exit {rc}); see {d}/run.log")
    print(f"{scenario:13s} {policy:7s} {time.time() - t0:6.1f} s", flush=True)
    return d


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def core_spread(d):
    """max / mean utilisation of the links into and out of the highest switch tier."""
    links = read_csv(os.path.join(d, "links.csv"))
    top = max((int(r["from_tier"]) for r in links), default=-1)
    u = [float(r["utilization"]) for r in links
         if top > 1 and int(r["from_tier"]) >= 1 and int(r["to_tier"]) >= 1
         and top in (int(r["from_tier"]), int(r["to_tier"]))]
    mean = sum(u) / len(u) if u else 0.0
    return (max(u) / mean if mean > 0 else None), mean


def collect(d):
    s = json.load(open(os.path.join(d, "summary.json")))
    r = {"sim_seconds": s.get("sim_seconds"), "timeouts": s["qp_timeouts"],
         "wall_seconds": s["total_wall_seconds"],
         "switch_drops": s.get("switch_drops"), "out_of_order_received": s.get("out_of_order_received"),
         "flows_finished": s.get("flows_finished"), "flows_started": s.get("flows_started")}
    flows = read_csv(os.path.join(d, "fct.csv"))
    if flows and s["workload"].startswith("flows:"):
        done = [r for r in flows if r["ok"] == "1"]
        slow = sorted(float(r["slowdown"]) for r in done)
        r["last_fct_ns"] = max((int(x["fct_ns"]) for x in done), default=None)
        r["ideal_fct_ns"] = max(int(x["ideal_ns"]) for x in flows)
        r["flows_done"] = len(done) == len(flows)
        r["slowdown_p50"] = analyze.percentile(slow, 0.5)
        r["slowdown_p99"] = analyze.percentile(slow, 0.99)
    cols = read_csv(os.path.join(d, "collectives.csv"))
    if cols:
        r["collective_ns"] = max(int(c["duration_ns"]) for c in cols)
        r["ideal_ns"] = max(int(c["ideal_ns"]) for c in cols)
        r["collectives_done"] = all(c["done"] == "1" for c in cols)
    r["core_spread"], r["core_mean_util"] = core_spread(d)
    return r


def fmt_us(ns):
    return f"{ns / 1e3:.1f}" if ns is not None else "-"


def tables(results, runs_dir):
    md = []
    coll = [s for s in results if "collective_ns" in next(iter(results[s].values()))]
    if coll:
        md.append("Completion time in us (x the ideal), every message delivered unless marked; "
                  "timeouts; core-link utilisation max / mean.\n")
        md.append("| scenario | ideal | " + " | ".join(POLICIES) + " |")
        md.append("|" + "---|" * (len(POLICIES) + 2))
        for s in coll:
            ideal = next(iter(results[s].values()))["ideal_ns"]
            row = [s, fmt_us(ideal)]
            for p in POLICIES:
                r = results[s].get(p)
                if r is None:
                    row.append("-")
                    continue
                cell = f"{fmt_us(r['collective_ns'])} ({r['collective_ns'] / ideal:.2f}x)"
                if not r["collectives_done"]:
                    cell = f"not done by {r['sim_seconds'] * 1e3:.0f} ms"
                cell += f", {r['timeouts']} TO"
                if r["core_spread"]:
                    cell += f", spread {r['core_spread']:.2f}"
                row.append(cell)
            md.append("| " + " | ".join(row) + " |")
        md.append("")
    perm = [s for s in results if "last_fct_ns" in next(iter(results[s].values()))]
    if perm:
        md.append("Permutation: the last flow's completion in us (x its ideal), FCT slowdown p50 / p99, "
                  "timeouts, core-link utilisation max / mean.\n")
        md.append("| scenario | ideal | " + " | ".join(POLICIES) + " |")
        md.append("|" + "---|" * (len(POLICIES) + 2))
        for s in perm:
            ideal = next(iter(results[s].values()))["ideal_fct_ns"]
            row = [s, fmt_us(ideal)]
            for p in POLICIES:
                r = results[s].get(p)
                if r is None:
                    row.append("-")
                    continue
                cell = (f"{fmt_us(r['last_fct_ns'])} ({r['last_fct_ns'] / ideal:.2f}x)" if r["flows_done"]
                        else f"not done by {r['sim_seconds'] * 1e3:.0f} ms")
                cell += f", {r['slowdown_p50']:.2f} / {r['slowdown_p99']:.2f}, {r['timeouts']} TO"
                if r["core_spread"]:
                    cell += f", spread {r['core_spread']:.2f}"
                row.append(cell)
            md.append("| " + " | ".join(row) + " |")
        md.append("")
    if "ft-websearch" in results:
        runs = [analyze.load_run(f"{p}={os.path.join(runs_dir, 'ft-websearch', p)}") for p in POLICIES
                if p in results["ft-websearch"]]
        md.append("ft-websearch: FCT slowdown p50 / p95 / p99 (flows) per size bucket.\n")
        md.append(analyze.table(runs, analyze.DEFAULT_BUCKETS))
        spreads = ", ".join(f"{p} {results['ft-websearch'][p]['core_spread']:.2f}" for p in POLICIES
                            if results["ft-websearch"].get(p, {}).get("core_spread"))
        md.append(f"\nCore-link utilisation spread (max / mean): {spreads}.\n")
        return "\n".join(md), runs
    return "\n".join(md), []


def plot(results, ws_runs, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("run.py: no matplotlib, no plots")
        return
    not_done = 100.0  # drawn at this ratio, hatched

    def ratio(r):
        if r is None:
            return 0
        if "collective_ns" in r:
            return r["collective_ns"] / r["ideal_ns"] if r["collectives_done"] else not_done
        return r["last_fct_ns"] / r["ideal_fct_ns"] if r.get("flows_done") else not_done

    coll = [s for s in results if "collective_ns" in next(iter(results[s].values()))
            or "last_fct_ns" in next(iter(results[s].values()))]
    if coll:
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
        width = 0.8 / len(POLICIES)
        for i, p in enumerate(POLICIES):
            xs = [j + i * width for j in range(len(coll))]
            ratio_ = [ratio(results[s].get(p)) for s in coll]
            spread = [results[s].get(p, {}).get("core_spread") or 0 for s in coll]
            bars = axes[0].bar(xs, ratio_, width, label=p, color=f"C{i}")
            for b, v in zip(bars, ratio_):
                if v == not_done:
                    b.set_hatch("//")
                    b.set_alpha(0.5)
            axes[1].bar(xs, spread, width, label=p, color=f"C{i}")
        axes[0].set_yscale("log")
        for ax, title in ((axes[0], "completion (collective, last flow) / ideal\n(log; hatched at 100: not done)"),
                          (axes[1], "core-link utilisation max / mean")):
            ax.set_xticks([j + 0.4 - width / 2 for j in range(len(coll))])
            ax.set_xticklabels(coll, rotation=30, ha="right", fontsize=8)
            ax.set_title(title, fontsize=9)
            ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        axes[0].legend(fontsize=7, ncol=len(POLICIES))
        fig.suptitle("tita-sim, DCQCN: path policies (scripts/multipath/run.py)", fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "collectives.png"), dpi=100)
        plt.close(fig)
    if ws_runs:
        analyze.plots(ws_runs, analyze.DEFAULT_BUCKETS, os.path.join(out, "websearch"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "multipath"))
    ap.add_argument("--only", help="comma-separated scenarios (default: all; see --help)")
    ap.add_argument("--policies", help="comma-separated policies (default: all)")
    ap.add_argument("--quick", action="store_true", help="the fat_tree_320 scenarios only")
    ap.add_argument("--force", action="store_true", help="run again what has results")
    a = ap.parse_args()
    sim = os.path.join(a.build, "ns3-model", "tita-sim")
    if not os.access(sim, os.X_OK):
        sys.exit(f"run.py: no {sim}: build it first (scripts/build.sh)")
    scenarios = a.only.split(",") if a.only else (QUICK if a.quick else list(SCENARIOS))
    policies = a.policies.split(",") if a.policies else list(POLICIES)
    for name, known in ((scenarios, SCENARIOS), (policies, POLICIES)):
        bad = [n for n in name if n not in known]
        if bad:
            sys.exit(f"run.py: unknown {', '.join(bad)}; known: {', '.join(known)}")
    os.makedirs(a.out, exist_ok=True)
    permutation_flows(FT.split("=", 1)[1], os.path.join(a.out, PERM))
    results = {}
    for s in scenarios:
        results[s] = {}
        for p in policies:
            results[s][p] = collect(run_one(sim, a.out, s, p, a.force))
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    md, ws_runs = tables(results, a.out)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md + "\n")
    print(md)
    plot(results, ws_runs, a.out)
    print(f"wrote {a.out}/results.json, results.md and plots")


if __name__ == "__main__":
    main()
