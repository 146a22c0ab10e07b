#!/usr/bin/python3
"""tita-sim's link faults and the outputs multipath measurements read
(doc/multipath.md, ns3-model/doc/tita-ns3.md), on a 2-pod fat-tree:

- bad --fault values: one line naming the problem, exit 2, no run;
- a black-holed core link under an All-to-All: with spraying every message
  arrives; per-flow ECMP (go-back-N, no dodging) leaves messages stuck;
- a link down from the start carries nothing, the other core links do; a link
  at half rate is built at half rate (links.csv);
- port_series.csv utilisations lie in [0, 1] (plus a frame's rounding) and
  name real peers; every
  collective has an ideal time no longer than its duration; order=spread puts
  ring neighbours on different ToRs.

Usage: tita-sim-faults.py TITA_SIM WORKDIR
"""
import csv
import json
import os
import subprocess
import sys

SIM, WORK = sys.argv[1], sys.argv[2]
TOPO = "fattree:pods=2"
SPRAY = ["--ns3::TitaSwitchNode::DodgeField=udp-sport", "--ns3::RdmaNicNetDevice::SelectiveRepeat=true",
         "--ns3::RdmaNicNetDevice::SprayPaths=4", "--ns3::RdmaNicNetDevice::SprayPolicy=offset"]
failed = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)


def sim(name, *args, expect=0):
    out = os.path.join(WORK, name)
    r = subprocess.run([SIM, "--topo=" + TOPO, "--cc=dcqcn", "--progress=0", "--out=" + out] + list(args),
                       capture_output=True, text=True, timeout=600)
    if r.returncode != expect:
        raise SystemExit(f"{name}: exit {r.returncode}, expected {expect}: {r.stderr[-1500:]}")
    return out, r.stderr


def rows(out, f):
    return list(csv.DictReader(open(os.path.join(out, f))))


for arg, want in (("--fault=melt:link=core", "unknown kind 'melt'"),
                  ("--fault=blackhole:link=191,at=1us", "has a host end"),
                  ("--fault=down:link=100000", "is not core or a link index below"),
                  ("--fault=blackhole:link=core,when=3", "when"),
                  ("--fault=blackhole:link=core,converge=1us", "converge")):
    _, err = sim("bad", "--workload=alltoall:ranks=4,bytes=64K", arg, expect=2)
    lines = [l for l in err.splitlines() if l.strip()]
    check(len(lines) == 1 and want in lines[0] and lines[0].startswith("tita-sim: "), f"{arg}: {lines[-1:]}")

a2a = "--workload=alltoall:ranks=all,bytes=256K"
out, _ = sim("bh-spray", a2a, "--fault=blackhole:link=core,at=5us", "--stop=50ms", *SPRAY)
s = json.load(open(os.path.join(out, "summary.json")))
co = rows(out, "collectives.csv")[0]
check(s["switch_drops"] > 0 and s["flows_finished"] == s["flows_started"] and co["done"] == "1"
      and s["qp_timeouts"] == 0,
      f"black hole, spraying: {s['flows_finished']}/{s['flows_started']} messages, {s['switch_drops']} dropped, "
      f"{s['qp_timeouts']} timeouts, All-to-All {int(co['duration_ns']) / 1e3:.1f} us (ideal "
      f"{int(co['ideal_ns']) / 1e3:.1f})")
out, _ = sim("bh-ecmp", a2a, "--fault=blackhole:link=core,at=5us", "--stop=50ms")
s = json.load(open(os.path.join(out, "summary.json")))
check(s["switch_drops"] > 0 and s["flows_finished"] < s["flows_started"],
      f"black hole, per-flow ECMP: {s['flows_finished']}/{s['flows_started']} messages by 50 ms")

# A link taken down mid-run: its ends withdraw it and the fabric reroutes
# (WithdrawLink), so even per-flow ECMP loses no QP to it.
out, _ = sim("down-ecmp", a2a, "--fault=down:link=core,at=5us", "--stop=50ms")
s = json.load(open(os.path.join(out, "summary.json")))
check(s["flows_finished"] == s["flows_started"] and s["qp_timeouts"] == 0,
      f"link down at 5 us, per-flow ECMP: {s['flows_finished']}/{s['flows_started']} messages, "
      f"{s['qp_timeouts']} timeouts, {s['switch_drops']} dropped")

out, _ = sim("down", a2a, "--fault=down:link=core", "--series=10us")
links = rows(out, "links.csv")
core = [r for r in links if max(int(r["from_tier"]), int(r["to_tier"])) == 3]
down = [r for r in core if r["link"] == core[0]["link"]]
# (A core switch that lost its link into a pod also gets nothing to send into
# the other pod from that one: a few other directions may stay idle.)
busy = sum(1 for r in core if r not in down and int(r["tx_bytes"]) > 0)
check(all(int(r["tx_bytes"]) == 0 for r in down) and busy >= 0.9 * (len(core) - 2),
      f"link {core[0]['link']} down from the start: {[r['tx_bytes'] for r in down]} bytes; "
      f"{busy} of {len(core) - 2} other core directions carry traffic")
nodes = {r["from_node"] for r in links}
series = rows(out, "port_series.csv")
# A frame is counted in the interval it starts in: one frame over line rate at most.
check(len(series) > 0 and all(0 <= float(r["utilization"]) <= 1.05 for r in series)
      and all(r["peer"] in nodes for r in series),
      f"port_series.csv: {len(series)} rows, max utilisation {max(float(r['utilization']) for r in series):.3f}")

out, _ = sim("half", "--workload=alltoall:ranks=8,bytes=64K", "--fault=half:link=core")
links = rows(out, "links.csv")
core = [r for r in links if max(int(r["from_tier"]), int(r["to_tier"])) == 3]
check(int(core[0]["rate_bps"]) * 2 == int(core[2]["rate_bps"]),
      f"half: link {core[0]['link']} at {core[0]['rate_bps']} bps, the next at {core[2]['rate_bps']}")

hops = {}
for order in ("host", "spread"):
    out, _ = sim("ring-" + order, f"--workload=allreduce:ranks=16,bytes=1M,order={order}")
    co = rows(out, "collectives.csv")[0]
    check(co["done"] == "1" and 0 < int(co["ideal_ns"]) <= int(co["duration_ns"]),
          f"allreduce order={order}: {int(co['duration_ns']) / 1e3:.1f} us, ideal {int(co['ideal_ns']) / 1e3:.1f}")
    hops[order] = {int(r["hops"]) for r in rows(out, "fct.csv")}
check(min(hops["spread"]) > 2 and min(hops["host"]) == 2,
      f"ring neighbours: hops {sorted(hops['host'])} by host order, {sorted(hops['spread'])} spread over ToRs")

sys.exit(1 if failed else 0)
