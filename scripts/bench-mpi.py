#!/usr/bin/env python3
"""MPI_Allreduce bus bandwidth over tita against plain verbs WRITE on the same
port pair, in the same run (issue 30's figure: busbw >= 0.8 of WRITE at 1 MiB).

  sudo scripts/bench-mpi.py [--rounds 3] [--size 1048576] [--out FILE.json]

Each round, on one veth pair with DPDK's af_packet on each end and each side
under its own tita-run (--progress adaptive, as the verbs-mpi test):
  - ib_write_bw -d tita0 -x 0 -F -s SIZE -n 200 (rdma-core's perftest): its BW
    average;
  - the same with -b (both ways at once, as an Allreduce sends; perftest
    reports the two directions' sum);
  - tita-allreduce --min SIZE --max SIZE --iters 40 under mpirun -np 2 (pml ucx,
    UCX_TLS=rc_verbs,ud_verbs, shared memory and TCP excluded): nccl-tests'
    busbw, algbw x 2(n-1)/n, from the time per Allreduce; once with Open MPI's
    own choice of algorithm, once with its ring (coll_tuned_allreduce_algorithm
    4, as tita-doctor accept --tool mpi runs it).
The four alternate; the table gives median [min, max] of each, of the
per-round ratio busbw / WRITE and of busbw / (WRITE -b / 2), the rate each way
when both ways send at once. Needs root (tita-run's view of tita0 for UCX), perftest,
openmpi-bin and a build with tita-allreduce (libopenmpi-dev).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
RUN = os.path.join(BUILD, "apps", "tita-run")
ALLREDUCE = os.path.join(BUILD, "apps", "tita-allreduce")
A, B = "tbm0", "tbm1"
sys.path.insert(0, os.path.join(ROOT, "tests", "verbs"))
import veth  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "apps", "ops"))
import tita_mpi  # noqa: E402


def side(iface, ip, prefix):
    return [RUN, "--eal", f"--file-prefix={prefix}", "--vdev", f"net_af_packet0,iface={iface},qdisc_bypass=0",
            "--ip", ip, "--progress", "adaptive", "--"]


def write_bw(size, bidir=False):
    base = ["ib_write_bw", "-d", "tita0", "-x", "0", "-F", "-s", str(size), "-n", "200", "-p", "18777"] + \
        (["-b"] if bidir else [])
    s = subprocess.Popen(side(A, "10.0.0.1", "bm-s") + base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    time.sleep(1.5)
    c = subprocess.run(side(B, "10.0.0.2", "bm-c") + base + ["127.0.0.1"], capture_output=True, text=True,
                       timeout=180)
    s.communicate(timeout=60)
    for line in c.stdout.splitlines():
        w = line.split()
        if len(w) >= 4 and w[0] == str(size):
            return float(w[3]) * 8 / 1000  # MB/s (10^6) to Gb/s
    raise RuntimeError(f"ib_write_bw printed no result (exit {c.returncode}): {c.stdout[-400:]} {c.stderr[-400:]}")


def allreduce_busbw(size, ring=False):
    cmd = ["mpirun", "--allow-run-as-root"] + tita_mpi.MPIRUN_OPTIONS + (tita_mpi.RING_ALLREDUCE if ring else []) + [
           "-np", "1"] + side(A, "10.0.0.1", "bm-r0") + [ALLREDUCE, "--min", str(size), "--max", str(size),
                                                          "--iters", "40", ":", "-np", "1"] + \
          side(B, "10.0.0.2", "bm-r1") + [ALLREDUCE, "--min", str(size), "--max", str(size), "--iters", "40"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 or "all results right" not in r.stdout:
        raise RuntimeError(f"tita-allreduce failed (exit {r.returncode}): {r.stdout[-400:]} {r.stderr[-400:]}")
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 6 and w[0] == str(size):
            return size * 8 / (float(w[2]) * 1e3)  # 2 ranks: busbw = algbw
    raise RuntimeError("tita-allreduce printed no row")


def stats(xs):
    return {"median": round(statistics.median(xs), 4), "min": round(min(xs), 4), "max": round(max(xs), 4),
            "runs": [round(x, 4) for x in xs]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--out")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench-mpi: needs root (tita-run shows tita0 to UCX in a mount namespace of its own)")
    for f in (RUN, ALLREDUCE):
        if not os.path.exists(f):
            sys.exit(f"bench-mpi: {f} is missing (scripts/build.sh; tita-allreduce needs libopenmpi-dev)")
    err = veth.make_pair(A, B)
    if err is not None:
        sys.exit(f"bench-mpi: cannot make a veth pair: {err}")
    write, bidir, busbw, ring = [], [], [], []
    try:
        for r in range(a.rounds):
            write.append(write_bw(a.size))
            bidir.append(write_bw(a.size, bidir=True))
            busbw.append(allreduce_busbw(a.size))
            ring.append(allreduce_busbw(a.size, ring=True))
            print(f"round {r + 1}: ib_write_bw {write[-1]:.3f} Gb/s, ib_write_bw -b {bidir[-1]:.3f} Gb/s, "
                  f"Allreduce busbw {busbw[-1]:.3f} Gb/s (ring {ring[-1]:.3f}), ratio {busbw[-1] / write[-1]:.2f} "
                  f"(ring {ring[-1] / write[-1]:.2f})", flush=True)
    finally:
        subprocess.run(["ip", "link", "del", A], capture_output=True)
    load = open("/proc/loadavg").read().split()[:3]
    res = {"size": a.size, "write_gbps": stats(write), "write_bidirectional_gbps": stats(bidir),
           "busbw_gbps": stats(busbw), "busbw_ring_gbps": stats(ring),
           "ratio_ring": stats([b / w for b, w in zip(ring, write)]),
           "ratio": stats([b / w for b, w in zip(busbw, write)]),
           "ratio_to_each_way": stats([b / (w / 2) for b, w in zip(busbw, bidir)]), "loadavg_after": load,
           "port": "af_packet on a veth pair, frames up to 1518 B", "cpus": os.cpu_count()}
    print(f"{a.size} B: WRITE {res['write_gbps']['median']} Gb/s [{res['write_gbps']['min']}, "
          f"{res['write_gbps']['max']}], both ways {res['write_bidirectional_gbps']['median']} Gb/s "
          f"[{res['write_bidirectional_gbps']['min']}, {res['write_bidirectional_gbps']['max']}], Allreduce busbw {res['busbw_gbps']['median']} Gb/s "
          f"[{res['busbw_gbps']['min']}, {res['busbw_gbps']['max']}], ratio {res['ratio']['median']} "
          f"[{res['ratio']['min']}, {res['ratio']['max']}], to each way of -b {res['ratio_to_each_way']['median']} "
          f"[{res['ratio_to_each_way']['min']}, {res['ratio_to_each_way']['max']}]; the ring Allreduce busbw "
          f"{res['busbw_ring_gbps']['median']} Gb/s [{res['busbw_ring_gbps']['min']}, {res['busbw_ring_gbps']['max']}], "
          f"ratio {res['ratio_ring']['median']} [{res['ratio_ring']['min']}, {res['ratio_ring']['max']}]")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
