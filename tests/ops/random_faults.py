#!/usr/bin/python3
"""tita-doctor against faults drawn at random, scored.

Usage: random_faults.py BUILD_DIR WORKDIR [--count N] [--seed S] [--kinds K,K,...] [--require]
       random_faults.py --list

Each draw picks one fault kind (the fault matrix of doc/operations.md, and
kinds it does not list: ECN thresholds above the queue PFC allows, mixed
congestion control on one bottleneck, a sender capped by its own rate, a
half-rate link, a wrong DSCP on one host, a receiver slower than its senders,
a PFC storm from one host;
and, now and then, no fault at all), its host and port and its parameters at
random, builds the 2-to-1 incast of doctor_test.py (tita-switch and three
tita-perf processes, real DPDK processes on vhost-user ports) with it, runs
`tita-doctor diagnose --json` during the traffic, and scores the first problem:

  right        it names the fault (question, check or drop reason, where)
  unexplained  it says no known cause fits (question "unexplained")
  no-evidence  its first problem is evidence it expected and did not get
  busy-cpu     it names a process waiting for a CPU, on a machine with more
               runnable work than CPUs (true, and not the fault injected)
  wrong        it names another cause
  healthy      no problem, exit 0 (on a faulty setup)
  ok / false   for a draw without a fault: no problem / a problem (busy-cpu
               when the only problems are processes waiting for a CPU)

With --require the exit status is 1 when a draw scored wrong, healthy or false.
The seed is printed: --seed S --count N replays a run.
"""
import argparse
import copy
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doctor_test as dt  # noqa: E402

RX = "demo-rx"


def tx(i):
    return f"demo-tx{i}"


def port(i):
    return f"net_vhost{i}"


def cfg(fn):
    c = copy.deepcopy(dt.GOOD)
    fn(c)
    return c


def starve(prefix):
    """From now on the process's polling thread runs only when nothing else wants
    CPU 0 (SCHED_IDLE beside a busy loop there): doctor_test's starve_sender for
    any host."""
    def during():
        pid = subprocess.run(["pgrep", "-f", f"file-prefix={prefix}( |$)"], capture_output=True,
                             text=True).stdout.split()[0]
        hog = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
        try:
            subprocess.run(["chrt", "--idle", "-p", "0", pid], check=True)
            time.sleep(0.5)
            return dt.doctor()
        finally:
            hog.kill()
            hog.wait()
    return during


def black_hole(p):
    def during():
        with dt.Telemetry("demo-sw") as t:
            t.query(f"/tita_switch/fault,{p},drop_all")
        time.sleep(0.5)
        return dt.doctor()
    return during


def one_sender(i, args):
    return lambda j: list(args) if j == i else []


# Each kind: rng -> (what was injected, run_case arguments, [alternative
# expectations of the first problem: {field: substring}]). Only the ports that
# carry data (the receiver's) can show an ECN, PFC or threshold fault: the
# senders' ports carry ACKs.
def k_ecn_off(rng):
    return ("ECN off at the bottleneck", dict(switch_cfg=cfg(lambda c: c["ports"][dt.SENDERS].update(
        ecn={"enabled": False}))), [{"question": "configuration", "check": "ecn", "where": dt.BOTTLENECK}])


def k_pfc_off(rng):
    return ("PFC off", dict(switch_cfg=cfg(lambda c: c["pfc"].update(enabled=False))),
            [{"question": "configuration", "check": "pfc", "what": "PFC is off"}])


def k_dscp_all(rng):
    d = rng.choice([d for d in range(48) if d // 8 != 3])
    return (f"every sender --dscp {d}", dict(switch_cfg=dt.GOOD, sender=lambda i: ["--dscp", str(d)]),
            [{"question": "configuration", "check": "pfc", "what": f"(DSCP {d}) is not lossless"}])


def k_int_off(rng):
    cc = rng.choice(["hpcc", "powertcp", "tita"])
    return (f"INT off, --cc {cc}", dict(switch_cfg=cfg(lambda c: c["int"].update(enabled=False)), cc=cc),
            [{"question": "configuration", "check": "int", "what": f"{cc} reads INT"}])


def k_mtu(rng):
    i = rng.randrange(dt.SENDERS)
    return (f"{tx(i)} --mtu 2048, the server 1024", dict(switch_cfg=dt.GOOD, sender=one_sender(i, ["--mtu", "2048"]),
                                                        receiver=["--mtu", "1024"]),
            [{"question": "configuration", "check": "mtu", "what": "different path MTUs", "where": tx(i)}])


def k_random_loss(rng):
    p = rng.choice(range(dt.SENDERS + 1))
    prob = round(rng.uniform(0.005, 0.03), 3)
    return (f"{port(p)} loses {prob:.1%} at random", dict(switch_cfg=cfg(lambda c: c["ports"][p].update(
        faults={"drop_probability": prob}))), [{"question": "loss", "where": port(p), "what": "fault_random"}])


def k_black_hole(rng):
    p = rng.choice(range(dt.SENDERS + 1))
    return (f"{port(p)} black-holed mid-run", dict(switch_cfg=dt.GOOD, during=black_hole(port(p)), start_delay=2.5),
            [{"question": "loss", "where": port(p), "what": "fault_port_drop"}])


def k_unrouted(rng):
    i = rng.randrange(dt.SENDERS)
    ip = f"10.0.{rng.randrange(1, 250)}.{rng.randrange(101, 250)}"
    return (f"{tx(i)} --peer-gid {ip}", dict(switch_cfg=dt.GOOD, sender=one_sender(i, ["--peer-gid", ip])),
            [{"question": "configuration", "check": "route", "where": tx(i), "what": ip}])


def k_arp(rng):
    i = rng.randrange(dt.SENDERS)
    return (f"{tx(i)} --arp", dict(switch_cfg=dt.GOOD, sender=one_sender(i, ["--arp"]), start_delay=3.5),
            [{"where": tx(i), "what": "ARP"}])


def k_rkey(rng):
    i = rng.randrange(dt.SENDERS)
    return (f"{tx(i)} bad-rkey", dict(switch_cfg=dt.GOOD, sender=one_sender(i, ["--inject-fault", "bad-rkey"])),
            [{"question": "connection", "what": "remote access error"}])


def k_no_recv(rng):
    return ("server posts no receives", dict(switch_cfg=dt.GOOD, test="send", receiver=["--inject-fault", "no-recv"]),
            [{"question": "connection", "where": RX, "what": "no receive posted"}])


def k_psn(rng):
    i = rng.randrange(dt.SENDERS)
    return (f"{tx(i)} bad-psn", dict(switch_cfg=dt.GOOD, sender=one_sender(i, ["--inject-fault", "bad-psn",
                                                                                 "--timeout", "4"])),
            [{"question": "connection", "where": tx(i), "what": "disagree on the PSN"}])


def k_starved_sender(rng):
    i = rng.randrange(dt.SENDERS)
    return (f"{tx(i)} starved of CPU", dict(switch_cfg=dt.GOOD, during=starve(tx(i))),
            [{"question": "performance", "check": "cpu", "where": tx(i)}])


def k_ecn_above_reach(rng):
    kmin = rng.randrange(400_000, 1_500_001, 50_000)
    kmax = min(1_950_000, int(kmin * rng.uniform(1.2, 1.6)))
    return (f"bottleneck ECN Kmin/Kmax {kmin}/{kmax} B", dict(switch_cfg=cfg(lambda c: c["ports"][dt.SENDERS].update(
        ecn={"enabled": True, "kmin_bytes": kmin, "kmax_bytes": kmax, "pmax": 0.2}))),
        [{"question": "configuration", "check": "ecn_reach", "where": dt.BOTTLENECK},
         {"question": "configuration", "check": "ecn_reach", "where": "demo-sw"}])


def k_mixed_cc(rng):
    i = rng.randrange(dt.SENDERS)
    other = rng.choice(["none", "timely", "swift", "hpcc"])
    return (f"{tx(i)} --cc {other}, the other dcqcn",
            dict(switch_cfg=dt.GOOD, sender=one_sender(i, ["--cc", other])),
            [{"question": "configuration", "check": "mixed_cc", "where": dt.BOTTLENECK}])


def k_self_capped(rng):
    i = rng.randrange(dt.SENDERS)
    rate = round(rng.uniform(0.05, 0.3), 2)
    return (f"{tx(i)} --rate {rate}", dict(switch_cfg=dt.GOOD, sender=one_sender(i, ["--rate", str(rate)])),
            [{"question": "performance", "check": "self_capped", "where": tx(i)}])


def k_half_rate_link(rng):
    p = rng.choice(range(dt.SENDERS + 1))
    return (f"{port(p)} at 0.5 Gb/s (its host sends at 1)",
            dict(switch_cfg=cfg(lambda c: c["ports"][p].update(rate_gbps=0.5))),
            [{"question": "configuration", "check": "link_rate", "where": port(p)}])


def k_dscp_one(rng):
    i = rng.randrange(dt.SENDERS)
    d = rng.choice([d for d in range(48) if d // 8 != 3])
    return (f"{tx(i)} --dscp {d}", dict(switch_cfg=dt.GOOD, sender=one_sender(i, ["--dscp", str(d)])),
            [{"question": "configuration", "check": "pfc", "what": tx(i)}])


def k_slow_receiver(rng):
    return ("the receiver starved of CPU", dict(switch_cfg=dt.GOOD, during=starve(RX)),
            [{"question": "performance", "check": "cpu", "where": RX}])


def k_pfc_storm(rng):
    p = rng.choice(range(dt.SENDERS + 1))
    storm = ["--inject-fault", "pfc-storm"]
    who = RX if p == dt.SENDERS else tx(p)
    args = dict(receiver=storm) if p == dt.SENDERS else dict(sender=one_sender(p, storm))
    return (f"a PFC storm from {who}", dict(switch_cfg=dt.GOOD, **args),
            [{"question": "configuration", "check": "pfc_storm", "where": port(p)}])


def k_none(rng):
    return ("no fault", dict(switch_cfg=dt.GOOD), None)


MATRIX = {"ecn-off": k_ecn_off, "pfc-off": k_pfc_off, "dscp-mismatch": k_dscp_all, "int-off": k_int_off,
          "mtu-mismatch": k_mtu, "random-loss": k_random_loss, "black-hole": k_black_hole,
          "unrouted-peer": k_unrouted, "arp-through-switch": k_arp, "wrong-rkey": k_rkey,
          "receiver-not-ready": k_no_recv, "psn-mismatch": k_psn, "cpu-starved-sender": k_starved_sender}
NEW = {"ecn-above-reach": k_ecn_above_reach, "mixed-cc": k_mixed_cc, "self-capped": k_self_capped,
       "half-rate-link": k_half_rate_link, "wrong-dscp-one-host": k_dscp_one, "slow-receiver": k_slow_receiver,
       "pfc-storm": k_pfc_storm}
KINDS = dict(MATRIX, **NEW, healthy=k_none)


def score(expect, rc, rep):
    problems = [f for f in rep.get("findings", []) if f["problem"]]
    first = problems[0] if problems else {}
    loaded = os.getloadavg()[0] > (os.cpu_count() or 1)
    if expect is None:
        if problems and loaded and all(f.get("check") == "cpu" or "explained_by" in f for f in problems):
            return "busy-cpu", first  # as doctor_test's healthy case on a loaded machine
        return ("ok" if rc == 0 and not problems else "false"), first
    if not problems:
        return "healthy", first
    if any(all(v in str(first.get(k, "")) for k, v in e.items()) for e in expect):
        return "right", first
    if first.get("question") == "unexplained":
        return "unexplained", first
    if first.get("question") == "evidence":
        return "no-evidence", first
    if first.get("check") == "cpu" and (loaded or first["evidence"].get("load_average", 0) > (os.cpu_count() or 1)):
        return "busy-cpu", first
    return "wrong", first


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?")
    ap.add_argument("work", nargs="?")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--kinds", default="", help="draw only these kinds (comma-separated)")
    ap.add_argument("--require", action="store_true", help="exit 1 on a wrong, healthy or false score")
    ap.add_argument("--list", action="store_true", help="the kinds")
    a = ap.parse_args()
    if a.list:
        print("matrix:", " ".join(MATRIX))
        print("new:", " ".join(NEW))
        return 0
    if not a.build or not a.work:
        ap.error("BUILD_DIR and WORKDIR are required")
    kinds = [k for k in a.kinds.split(",") if k] or list(KINDS)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        print(f"random_faults.py: --kinds {','.join(bad)}: unknown (--list)", file=sys.stderr)
        return 2
    seed = a.seed if a.seed is not None else int(os.environ.get("TITA_FAULT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    print(f"seed {seed}, {a.count} draws from {len(kinds)} kinds", flush=True)
    tally, rows = {}, []
    for n in range(a.count):
        kind = rng.choice(kinds)
        what, kw, expect = KINDS[kind](rng)
        rc, rep = dt.run_case(a.build, os.path.join(a.work, f"{n:03d}-{kind}"), **kw)
        with open(os.path.join(a.work, f"{n:03d}-{kind}", "doctor.json"), "w") as f:
            json.dump(dict(rep, exit=rc), f, indent=1)
        s, first = score(expect, rc, rep)
        tally[s] = tally.get(s, 0) + 1
        rows.append({"draw": n, "kind": kind, "injected": what, "score": s, "exit": rc,
                     "first_problem": dt.describe(first) if first else None})
        print(f"{n:3d} {s:<11} {kind:<20} {what}: exit {rc}, first problem "
              f"{dt.describe(first) if first else '-'}{' ' + rep['error'][-200:] if rep.get('error') else ''}",
              flush=True)
    with open(os.path.join(a.work, "scores.json"), "w") as f:
        json.dump({"seed": seed, "tally": tally, "draws": rows}, f, indent=1)
    print("scores: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())) + f" (seed {seed})")
    return 1 if a.require and any(tally.get(k) for k in ("wrong", "healthy", "false")) else 0


if __name__ == "__main__":
    sys.exit(main())
