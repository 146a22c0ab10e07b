#!/usr/bin/python3
"""Incast flow files for tita-sim (`--workload=...;flows:path=FILE`).

    scripts/validation/gen_flows.py --topo TOPO --out FILE [--load 0.02 | --at NS]
        [--senders 60] [--bytes 500000] [--duration 5ms] [--seed 1]

Writes FILE in the HPCC simulator's flow format (count, then `src dst 3 100 size
start_s` with topology vertex ids), sorted by start, and FILE.json with the host
vertex ids (host index -> vertex) so metrics.py can tell incast flows apart.

Each event: one receiver and `senders` distinct other hosts, all chosen
uniformly at random, each sending `bytes` at the same instant. With --load,
events arrive as a Poisson process over --duration carrying that fraction of
the hosts' total capacity (the HPCC paper's incasts, as we read it: 60-to-1 of
500 KB on top of the background load). With --at, a single event at that time.

TOPO is tita-sim's --topo: an HPCC topology file or fattree:pods=,tors=,aggs=,
hosts=,cores= (vertex numbering as TitaTopology::FatTree builds it).
"""
import argparse
import json
import random
import sys


def parse_time_s(s):
    for suf, mul in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if s.endswith(suf):
            return float(s[: -len(suf)]) * mul
    return float(s)


def host_vertices(topo):
    if topo.startswith("fattree"):
        kv = dict(x.split("=") for x in topo.split(":", 1)[1].split(",")) if ":" in topo else {}
        pods, tors = int(kv.get("pods", 5)), int(kv.get("tors", 4))
        aggs, hosts, cores = int(kv.get("aggs", 4)), int(kv.get("hosts", 16)), int(kv.get("cores", 4))
        v, out = aggs * cores, []  # cores first
        for _ in range(pods):
            v += aggs
            for _ in range(tors):
                v += 1  # the ToR
                out.extend(range(v, v + hosts))
                v += hosts
        return out
    with open(topo) as f:
        nodes, _switches, _links = (int(x) for x in f.readline().split())
        sw = {int(x) for x in f.readline().split()}
    return [i for i in range(nodes) if i not in sw]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topo", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--load", type=float, help="incast bytes as a fraction of the hosts' capacity")
    ap.add_argument("--at", help="a single event at this time (ns, or with a unit)")
    ap.add_argument("--senders", type=int, default=60)
    ap.add_argument("--bytes", type=int, default=500_000)
    ap.add_argument("--duration", default="5ms")
    ap.add_argument("--host-rate", type=float, default=100e9)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    hv = host_vertices(a.topo)
    n = len(hv)
    if a.senders >= n:
        sys.exit(f"{a.senders} senders need more than {n} hosts")
    rng = random.Random(a.seed)
    starts = []
    if a.at is not None:
        starts = [parse_time_s(a.at if not a.at.isdigit() else a.at + "ns")]
    elif a.load:
        rate = a.load * n * a.host_rate / 8 / (a.senders * a.bytes)  # events per second
        t, end = rng.expovariate(rate), parse_time_s(a.duration)
        while t < end:
            starts.append(t)
            t += rng.expovariate(rate)
    else:
        sys.exit("give --load or --at")
    flows = []
    for t in starts:
        t = round(t * 1e9) / 1e9  # whole ns
        recv = rng.randrange(n)
        senders = rng.sample([h for h in range(n) if h != recv], a.senders)
        flows += [(t, s, recv) for s in senders]
    flows.sort()
    with open(a.out, "w") as f:
        f.write(f"{len(flows)}\n")
        for t, s, r in flows:
            f.write(f"{hv[s]} {hv[r]} 3 100 {a.bytes} {t:.9f}\n")
    with open(a.out + ".json", "w") as f:
        json.dump({"topo": a.topo, "events": len(starts), "senders": a.senders, "bytes": a.bytes,
                   "host_vertices": hv}, f)
    print(f"{a.out}: {len(starts)} events, {len(flows)} flows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
