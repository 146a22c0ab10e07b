#!/usr/bin/python3
"""The StarPulse reports' questions about training iterations, in tita-sim
(doc/training.md, "The StarPulse questions"): the same workload on the 8-rail
multi-rail cluster and on a classic 3-tier fat-tree with the same GPUs and
bisection; DCQCN against HPCC against tita; ECMP against Hash Dodging against
spraying; a healthy fabric against one core link black-holed mid-iteration;
and the reports' whole-system claims (a legacy stack against the StarPulse one).

    scripts/training/run.py [--build build] [--out out/training] [--scale smallest|small|medium|full]
                            [--seeds 1,2,3] [--only Q,...] [--force]

Scales (GPUs are 8 a server; --full is not run by the tests: expect hours):
  smallest  16 GPUs (2 servers), tp 8 dp 2, GPT-style, 2 layers, 1 seed, two
            configurations (multi-rail and fat-tree): the meson test's run
  small     32 GPUs (4 servers, 2 blocks / 2 pods), GPT-style (hidden 512,
            4 layers, ga 4) and MoE (tp 1, ep 32, hidden 512, 4 layers); about
            2-3 CPU seconds a run
  medium    64 GPUs (8 servers: the reports' GPT-3 scale), the small scale's models
            (MoE: ep 64); about twice the small scale's cost a run
  full      64 GPUs (8 servers), GPT-style hidden 2048, 8 layers, ga 4; MoE 8 layers

Fabrics, the same at every scale in shape: multi-rail with 2 blocks, NIC k of a
server on its block's rail-k ToR, every ToR on every spine (as many spines as
servers in a block, links at the NIC rate: non-blocking); fat-tree with a
server per ToR (its 8 NICs on it), 2 pods, ToR uplinks 2 x 400G to the pod's
aggregation switches, as many core links up as down (non-blocking). Both have an
NVSwitch per server (NVLink 3.6 Tb/s, as a fluid), 100 Gb/s NICs unless a
configuration says 400G.

Routing policies (switches hash with the Hash Dodging offset everywhere,
TitaSwitchNode::DodgeField=udp-sport): ecmp (one path per QP), dodge (Hash
Dodging at the NIC: a QP moves on timeouts, stalls or loss), spray (selective
repeat, 4 node-disjoint entropy values per QP, SprayPolicy=offset).
Fault: blackhole:link=core (the first core/spine link) at half the healthy
run's iteration time, with a stop at 100 x that time: an iteration a QP pinned
to the black hole never finishes is reported unfinished.

Questions (--only): topology, cc, routing, fault, dualport, claims (the
smallest scale has topology only). dualport runs on its own multi-rail
fabric: a block per server (one server each, 2 spines), so that losing a ToR
is black-holing its spine links, the only links tita-sim can black-hole.

Seeds: seed s runs with --seed=s and TitaSwitchNode::EcmpSalt=s-1 (another
set of per-switch ECMP hashes; the collectives themselves are deterministic).

Writes OUT/<scale>/<config>/seed<s>/ (tita-sim's outputs and run.log), then
OUT/<scale>/results.json, results.md (one table per question: iteration time,
analytical bound, exposed communication, its share, DP/EP bus bandwidth,
median of the seeds with min-max) and breakdown-<question>.png (the
iteration-time breakdown, scripts/training/breakdown.py). A run whose
iterations.csv exists is not run again unless --force.
"""
import argparse
import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import breakdown  # noqa: E402
import make_workload  # noqa: E402

SCALES = {
    "smallest": {"servers": 2, "seeds": [1],
                 "gpt": dict(hidden=512, layers=2, tp=8, tokens=1024, seq=1024, ga=2)},
    "small": {"servers": 4, "seeds": [1, 2, 3],
              "gpt": dict(hidden=512, layers=4, tp=8, tokens=2048, seq=2048, ga=4),
              "moe": dict(hidden=512, layers=4, tp=1, ep=32, experts=32, topk=1, tokens=1024, seq=1024, ga=1)},
    "medium": {"servers": 8, "seeds": [1, 2, 3],
               "gpt": dict(hidden=512, layers=4, tp=8, tokens=2048, seq=2048, ga=4),
               "moe": dict(hidden=512, layers=4, tp=1, ep=64, experts=64, topk=1, tokens=1024, seq=1024, ga=1)},
    "full": {"servers": 8, "seeds": [1, 2, 3],
             "gpt": dict(hidden=2048, layers=8, tp=8, tokens=2048, seq=2048, ga=4),
             "moe": dict(hidden=2048, layers=8, tp=1, ep=64, experts=64, topk=1, tokens=1024, seq=1024, ga=1)},
}

ROUTING = {
    "ecmp": [],
    "dodge": ["--ns3::RdmaNicNetDevice::DodgeField=udp-sport"],
    "spray": ["--ns3::RdmaNicNetDevice::SelectiveRepeat=true", "--ns3::RdmaNicNetDevice::SprayPaths=4",
              "--ns3::RdmaNicNetDevice::SprayPolicy=offset"],
}


def topo(kind, servers, rate="100Gbps"):
    if servers % 2:
        sys.exit("run.py: an even number of servers (two blocks / pods)")
    half = servers // 2
    if kind in ("single", "dual"):
        # The dual-port question: a server a block (so a ToR's traffic all
        # crosses its spine links, which tita-sim can black-hole), 2 spines,
        # single-port NICs or StarPulse's dual-port ones (2 x the NIC rate).
        return (f"multirail:blocks={servers},servers=1,gpus=8,spines=2,nic_rate={rate},fabric_rate={rate},"
                f"nvlink=1" + (",dual_port=1" if kind == "dual" else ""))
    if kind == "multirail":
        return (f"multirail:blocks=2,servers={half},gpus=8,spines={half},nic_rate={rate},"
                f"fabric_rate={rate},nvlink=1")
    # Fat-tree: a server per ToR; ToR: 8 NICs down, 2 x 4-NIC-rate up; an
    # aggregation switch: `half` ToRs down, `half` cores up, all at 4x the NIC rate.
    gbps = int(rate.removesuffix("Gbps"))
    up = f"{4 * gbps}Gbps"
    return (f"fattree:pods=2,tors={half},aggs=2,hosts=8,cores={half},host_rate={rate},fabric_rate={up},"
            f"core_rate={up},gpus=8,nvlink=1")


# A configuration: (workload, fabric, cc, routing, fault, pxn, NIC rate).
def cfg(w, fabric="multirail", cc="tita", routing="ecmp", fault=False, pxn=False, rate="100Gbps"):
    short = {"multirail": "mr", "fattree": "ft", "single": "mr1-single", "dual": "mr1-dual"}[fabric]
    name = f"{w}-{short}-{cc}-{routing}"
    name += ("-torloss" if fabric in ("single", "dual") else "-blackhole") if fault else ""
    name += "-pxn" if pxn else ""
    name += "" if rate == "100Gbps" else "-" + rate.removesuffix("Gbps") + "G"
    return name, dict(workload=w, fabric=fabric, cc=cc, routing=routing, fault=fault, pxn=pxn, rate=rate)


def questions(scale):
    if scale == "smallest":
        return {"topology": ("Multi-rail against fat-tree (tita, ECMP, healthy)",
                             [cfg("gpt"), cfg("gpt", "fattree")])}
    q = {
        "topology": ("Multi-rail against fat-tree, same GPUs and bisection (tita, ECMP, healthy)",
                     [cfg("gpt"), cfg("gpt", "fattree"), cfg("moe"), cfg("moe", "fattree")]),
        "cc": ("DCQCN against HPCC against tita (multi-rail, ECMP, healthy)",
               [cfg("gpt", cc="dcqcn"), cfg("gpt", cc="hpcc"), cfg("gpt", cc="tita"),
                cfg("moe", cc="dcqcn"), cfg("moe", cc="hpcc"), cfg("moe", cc="tita")]),
        "routing": ("ECMP against Hash Dodging against spraying (multi-rail, tita, healthy)",
                    [cfg("gpt", routing="ecmp"), cfg("gpt", routing="dodge"), cfg("gpt", routing="spray")]),
        "fault": ("One core link black-holed mid-iteration (multi-rail, tita)",
                  [cfg("gpt", routing="ecmp", fault=True), cfg("gpt", routing="dodge", fault=True),
                   cfg("gpt", routing="spray", fault=True)]),
        "dualport": ("StarPulse's dual-port NIC: a server a block, single-port against dual-port NICs "
                     "(2 channels, one a port), healthy and with block 0's rail-0 (port-0) ToR lost "
                     "mid-iteration (tita, ECMP, QpTimeout 1 ms, RetryCnt 2)",
                     [cfg("gpt", "single"), cfg("gpt", "single", fault=True),
                      cfg("gpt", "dual"), cfg("gpt", "dual", fault=True)]),
        "claims": ("The reports' claims: a legacy stack (fat-tree, DCQCN, ECMP, no PXN) against StarPulse's "
                   "(multi-rail, tita, Hash Dodging, PXN), at 100G and with 400G NICs",
                   [cfg("gpt", "fattree", "dcqcn"), cfg("gpt", routing="dodge"),
                    cfg("gpt", routing="dodge", rate="400Gbps"),
                    cfg("moe", "fattree", "dcqcn"), cfg("moe", routing="dodge", pxn=True),
                    cfg("moe", routing="dodge", pxn=True, rate="400Gbps")]),
    }
    return q


def workload_file(out, scale, w):
    path = os.path.join(out, f"{w}.txt")
    a = argparse.Namespace(kind=w, gpus=8 * SCALES[scale]["servers"], ep=1, experts=1, topk=1, tflops=150.0)
    for k, v in SCALES[scale][w].items():
        setattr(a, k, v)
    header, rows = make_workload.lines_for(a)
    text = header + "\n" + f"{len(rows)}\n" + "".join("\t".join(str(x) for x in r) + "\n" for r in rows)
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)
    return path


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def run_one(sim, d, argv, force):
    done = os.path.join(d, "summary.json")
    if not force and os.path.exists(done):
        return
    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(d, "run.log"), "w") as log:
        log.write(" ".join(argv) + "\n")
        log.flush()
        rc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT).returncode
    if rc != 0:
        sys.exit(f"run.py: {d} failed (exit {rc}); see {d}/run.log")
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime
    with open(os.path.join(d, "cpu.json"), "w") as f:
        json.dump({"cpu_s": cpu, "wall_s": time.time() - t0, "load": os.getloadavg()[0]}, f)
    print(f"{os.path.relpath(d):60s} {time.time() - t0:6.1f} s wall {cpu:6.1f} s CPU", flush=True)


def iteration_ns(d):
    its = read_csv(os.path.join(d, "iterations.csv"))
    return int(its[0]["end_ns"]) if its else None


def run_config(sim, out, scale, name, c, seed, force):
    d = os.path.join(out, name, f"seed{seed}")
    wl = workload_file(out, scale, c["workload"])
    spec = f"training:path={wl},nvlink=fluid" + (",pxn=1" if c["pxn"] else "")
    dualq = c["fabric"] in ("single", "dual")
    if dualq:
        spec += ",channels=2"
    argv = [sim, "--topo=" + topo(c["fabric"], SCALES[scale]["servers"], c["rate"]), "--workload=" + spec,
            f"--cc={c['cc']}", f"--seed={seed}", f"--ns3::TitaSwitchNode::EcmpSalt={seed - 1}",
            "--ns3::TitaSwitchNode::DodgeField=udp-sport", "--qlen-interval=0", *ROUTING[c["routing"]]]
    if dualq:
        argv += ["--ns3::RdmaNicNetDevice::QpTimeout=8", "--ns3::RdmaNicNetDevice::RetryCnt=2"]
    if c["fault"]:
        healthy = dict(c, fault=False)
        hname, _ = cfg(**{k: healthy[k] for k in ("fabric", "cc", "routing", "pxn", "rate")}, w=c["workload"])
        hd = run_config(sim, out, scale, hname, healthy, seed, force)
        end = iteration_ns(hd)
        if end is None:
            sys.exit(f"run.py: {hd}: the healthy run did not finish an iteration")
        # The ToR's two spine links (block 0's first ToR: links 0 and 1) or the first core link.
        fault = (";".join(f"blackhole:link={x},at={end // 2}ns" for x in (0, 1)) if dualq
                 else f"blackhole:link=core,at={end // 2}ns")
        argv += [f"--fault={fault}", f"--stop={max(end * 100, 10_000_000)}ns"]
    else:
        argv += ["--stop=2s"]
    run_one(sim, d, argv + [f"--out={d}"], force)
    return d


def collect(d):
    """One run's figures (None values when no iteration finished)."""
    its = read_csv(os.path.join(d, "iterations.csv"))
    colls = read_csv(os.path.join(d, "training_collectives.csv"))
    s = json.load(open(os.path.join(d, "summary.json")))
    cpu = os.path.join(d, "cpu.json")
    r = {"dir": d, "finished": bool(its), "events": s.get("events"),
         "cpu_s": json.load(open(cpu))["cpu_s"] if os.path.exists(cpu) else None,
         "timeouts": s.get("qp_timeouts"), "drops": s.get("switch_drops")}
    if its:
        it = its[0]
        r.update(time_ns=int(it["time_ns"]), bound_ns=int(it["bound_ns"]), compute_ns=int(it["compute_ns"]),
                 comm_ns=int(it["comm_ns"]), exposed_ns=int(it["exposed_comm_ns"]))
        r["share"] = r["exposed_ns"] / r["time_ns"]
        # Without the NVLink (TP) part: what the network leaves exposed.
        b = breakdown.breakdown(d)
        r["net_share"] = (b["time"] - b["compute"] - b["exposed_tp"]) / b["time"]
    for g in ("dp", "ep"):
        bw = [float(c["busbw_GBps"]) for c in colls if c["group"] == g and int(c["bytes"]) > 0]
        r[f"{g}_busbw"] = statistics.mean(bw) if bw else None
    return r


def summarize(runs):
    """Median and range over the seeds of one configuration."""
    done = [r for r in runs if r["finished"]]
    s = {"seeds": len(runs), "finished": len(done)}
    for k in ("time_ns", "bound_ns", "compute_ns", "exposed_ns", "share", "net_share", "dp_busbw", "ep_busbw", "events",
              "cpu_s", "timeouts"):
        v = [r[k] for r in (done if k not in ("events", "cpu_s", "timeouts") else runs)
             if r.get(k) is not None]
        s[k] = (statistics.median(v), min(v), max(v)) if v else None
    return s


def cell(x, scale=1.0, fmt="{:.3f}", rng=True):
    if x is None:
        return "-"
    med, lo, hi = (v * scale for v in x)
    out = fmt.format(med)
    if rng and hi - lo > 1e-9 * max(1.0, abs(med)):
        out += " (" + fmt.format(lo) + "-" + fmt.format(hi) + ")"
    return out


def table(title, names, summaries):
    md = [f"**{title}**", "",
          "| configuration | finished | iteration ms | bound ms | exposed comm ms | comm share % | "
          "network share % | DP busbw GB/s | EP busbw GB/s | QP timeouts | events M | CPU s |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in names:
        s = summaries[n]
        md.append(f"| {n} | {s['finished']}/{s['seeds']} | {cell(s['time_ns'], 1e-6)} | "
                  f"{cell(s['bound_ns'], 1e-6, rng=False)} | {cell(s['exposed_ns'], 1e-6)} | "
                  f"{cell(s['share'], 100, '{:.1f}')} | {cell(s['net_share'], 100, '{:.1f}')} | "
                  f"{cell(s['dp_busbw'], 1, '{:.1f}')} | "
                  f"{cell(s['ep_busbw'], 1, '{:.1f}')} | {cell(s['timeouts'], 1, '{:.0f}')} | "
                  f"{cell(s['events'], 1e-6, '{:.1f}', rng=False)} | {cell(s['cpu_s'], 1, '{:.1f}', rng=False)} |")
    return "\n".join(md) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "training"))
    ap.add_argument("--scale", choices=list(SCALES), default="small")
    ap.add_argument("--full", action="store_const", const="full", dest="scale", help="--scale=full")
    ap.add_argument("--seeds", help="comma-separated (default: the scale's)")
    ap.add_argument("--only", help="questions to run, comma-separated")
    ap.add_argument("--force", action="store_true")
    a = ap.parse_args()
    sim = os.path.join(a.build, "ns3-model", "tita-sim")
    if not os.access(sim, os.X_OK):
        sys.exit(f"run.py: {sim} not built (scripts/build.sh)")
    out = os.path.join(a.out, a.scale)
    os.makedirs(out, exist_ok=True)
    seeds = [int(x) for x in a.seeds.split(",")] if a.seeds else SCALES[a.scale]["seeds"]
    qs = questions(a.scale)
    if a.only:
        unknown = set(a.only.split(",")) - set(qs)
        if unknown:
            sys.exit(f"run.py: --only: unknown question(s) {', '.join(sorted(unknown))}; have {', '.join(qs)}")
        qs = {k: v for k, v in qs.items() if k in a.only.split(",")}
    configs = {}
    for _, (_, cs) in qs.items():
        for name, c in cs:
            configs[name] = c
    runs = {}
    for name, c in configs.items():
        runs[name] = [collect(run_config(sim, out, a.scale, name, c, s, a.force)) for s in seeds]
    summaries = {n: summarize(r) for n, r in runs.items()}
    md = [f"Scale `{a.scale}`: {8 * SCALES[a.scale]['servers']} GPUs, seeds {','.join(map(str, seeds))}; "
          "medians over the seeds, (min-max) where they differ; comm share = exposed communication / "
          "iteration time; network share = the same without the exposed TP (NVLink) part, from the "
          "breakdown.\n"]
    for q, (title, cs) in qs.items():
        names = [n for n, _ in cs]
        md.append(table(title, names, summaries))
        rows = []
        for n in names:
            # The breakdown of the seed with the median iteration time (or the first).
            fin = sorted((r for r in runs[n] if r["finished"]), key=lambda r: r["time_ns"])
            rows.append((n, breakdown.breakdown(fin[len(fin) // 2]["dir"]) if fin else None))
        md.append("Breakdown (ms, median seed):\n\n" + breakdown.markdown(rows))
        breakdown.plot(rows, os.path.join(out, f"breakdown-{q}.png"),
                       f"{q}: scale {a.scale}, {8 * SCALES[a.scale]['servers']} GPUs (median seed)")
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"scale": a.scale, "seeds": seeds, "runs": runs, "summaries": summaries}, f, indent=1)
    print(f"run.py: {out}/results.md")


if __name__ == "__main__":
    main()
