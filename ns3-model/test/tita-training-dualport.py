#!/usr/bin/python3
"""StarPulse's dual-port NIC on the multi-rail fabric (doc/training.md, "Dual-port
NICs"): 2 blocks of one 8-GPU server, every GPU's NIC with a port on each of its
rail's two ToRs; data/training/tp8-dp2-overlap.txt with 2 channels (one a
port), so the DP ring runs ToR - spine - ToR on each rail.

- healthy: the iteration finishes, both ports of rail 0 carry traffic
  (links.csv), no message moved;
- one ToR lost mid-iteration (block 0's rail-0 port-0 ToR: both its spine links
  black-holed; tita-sim black-holes switch-to-switch links only, and with one
  server a block all of that ToR's traffic crosses them): the iteration still finishes, the
  messages of the broken QPs moved to the other port (the notes say how many),
  and every GPU received exactly the bytes of the healthy run (none lost, none
  twice);
- the same loss with the NIC's ports not partnered (one channel, so only port 0
  is used, and the loss on a single-port fabric): the iteration does not finish.

Usage: tita-training-dualport.py TITA_SIM DATA_DIR WORKDIR
"""
import csv
import os
import re
import subprocess
import sys

SIM, DATA, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
TOPO = "multirail:blocks=2,servers=1,gpus=8,spines=2,nic_rate=100Gbps,fabric_rate=100Gbps,nvlink=1"
WL = "training:path=" + os.path.join(DATA, "training", "tp8-dp2-overlap.txt") + ",nvlink=fluid"
# Fail a broken QP fast: RTO 4.096 us x 2^8 = 1 ms, 2 retries.
FAST = ["--ns3::RdmaNicNetDevice::QpTimeout=8", "--ns3::RdmaNicNetDevice::RetryCnt=2"]
failed = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failed.append(what)


def sim(name, topo, wl, *args):
    out = os.path.join(WORK, name)
    r = subprocess.run([SIM, "--topo=" + topo, "--workload=" + wl, "--cc=dcqcn", "--progress=0",
                        "--qlen-interval=0", "--stop=300ms", "--out=" + out, *FAST, *args],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"{name}: tita-sim exit {r.returncode}: {r.stderr}")
    return out, r.stderr


def rows(out, f):
    p = os.path.join(out, f)
    if not os.path.exists(p):
        return []
    with open(p) as fh:
        return list(csv.DictReader(fh))


def tor_links(spines, ports, rail, port):
    """Spine link indices of block 0's ToR (rail, port) in TitaTopology::MultiRail's
    construction order: block 0's ToRs first, rail-major, each with its spine links."""
    tor = rail * ports + port
    return [tor * spines + s for s in range(spines)]


dual = TOPO + ",dual_port=1"
healthy, notes = sim("healthy", dual, WL + ",channels=2")
its = rows(healthy, "iterations.csv")
check(len(its) == 1, "healthy: the iteration finished")
end = int(its[0]["end_ns"]) if its else 1_000_000
check("moved to the other port" not in notes, "healthy: no message moved")
links = rows(healthy, "links.csv")
lost = tor_links(2, 2, 0, 0)
other = tor_links(2, 2, 0, 1)
tx = {int(r["link"]): 0 for r in links}
for r in links:
    tx[int(r["link"])] += int(r["tx_bytes"])
check(sum(tx[x] for x in lost) > 0 and sum(tx[x] for x in other) > 0,
      f"healthy: both ports' ToRs of rail 0 carry traffic ({sum(tx[x] for x in lost)} and "
      f"{sum(tx[x] for x in other)} B to and from the spines)")

fault = ";".join(f"blackhole:link={x},at={end // 2}ns" for x in lost)
broken, notes = sim("tor-loss", dual, WL + ",channels=2", "--fault=" + fault)
its = rows(broken, "iterations.csv")
check(len(its) == 1, "ToR lost mid-iteration: the iteration finished on the other ports")
m = re.search(r"training: (\d+) message\(s\) moved to the other port", notes)
check(m is not None and int(m.group(1)) > 0, "ToR lost: messages moved to the other port (" +
      (m.group(1) if m else "none") + ")")
want = {r["rank"]: r["recv_bytes"] for r in rows(healthy, "training_gpus.csv")}
got = {r["rank"]: r["recv_bytes"] for r in rows(broken, "training_gpus.csv")}
check(len(want) == 16 and got == want, "ToR lost: every GPU received exactly the healthy run's bytes")
if its:
    check(int(its[0]["time_ns"]) >= int(its[0]["bound_ns"]), "ToR lost: the iteration not below its bound")

single, notes = sim("single-port", TOPO, WL, "--fault=" + ";".join(
    f"blackhole:link={x},at={end // 2}ns" for x in tor_links(2, 1, 0, 0)))
check(not rows(single, "iterations.csv") and "unfinished" in notes,
      "single-port NICs, the same ToR lost: the iteration does not finish")
if failed:
    sys.exit(f"{len(failed)} check(s) failed")
print("all checks passed")
