#!/usr/bin/python3
"""tita-doctor diagnose against real faults in a real DPDK setup.

Usage: doctor_test.py BUILD_DIR WORKDIR

A 2-to-1 incast through tita-switch (scripts/demo/incast.py), three times:
  healthy     DCQCN: the doctor finds nothing wrong (exit 0);
  loss        1 % random loss injected on the bottleneck port: the first finding
              is loss at that port, reason fault_random, the network's side;
  black hole  the bottleneck port starts dropping everything mid-run
              (/tita_switch/fault,PORT,drop_all): the first finding is loss at
              that port, reason fault_port_drop, and the senders' QPs are seen
              timing out with nothing acknowledged.
"""
import json
import os
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from opscheck import check, finish  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "demo"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "apps", "ops"))
import incast  # noqa: E402
from dpdk_telemetry import Telemetry  # noqa: E402

DOCTOR = os.path.join(HERE, "..", "..", "apps", "ops", "tita-doctor")
BOTTLENECK = "net_vhost2"  # incast.switch_config: the receiver's port, after the two senders'


def doctor():
    r = subprocess.run([sys.executable, DOCTOR, "diagnose", "--window", "2", "--json"], capture_output=True,
                       text=True, timeout=60)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"findings": [], "error": r.stderr}


def with_incast(build, work, seconds, during, **kw):
    """Runs the incast in a thread and `during()` while it runs; returns during's result."""
    box = {}

    def run():
        try:
            incast.run_one(build, work, "dcqcn", seconds, senders=2, sender_gbps=1.0, **kw)
        except RuntimeError as e:  # a black-holed sender gives up: expected there
            box["error"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    try:
        return during()
    finally:
        t.join(timeout=seconds + 120)


def main():
    build, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)

    def later(delay, fn):
        def go():
            time.sleep(delay)
            return fn()
        return go

    rc, rep = with_incast(build, os.path.join(work, "healthy"), 9, later(5, doctor))
    problems = [f for f in rep["findings"] if f["problem"]]
    check(rc == 0 and not problems and len(rep.get("processes", [])) >= 4,
          f"healthy incast: exit {rc}, {len(problems)} problems, {len(rep['findings'])} informational findings "
          f"{[f['what'] for f in problems][:2]}")

    rc, rep = with_incast(build, os.path.join(work, "loss"), 9, later(5, doctor), drop=0.01)
    first = rep["findings"][0] if rep["findings"] else {}
    check(rc == 1 and first.get("question") == "loss" and BOTTLENECK in first.get("where", "")
          and "fault_random" in first.get("what", "") and first.get("side") == "network",
          f"1 % loss on {BOTTLENECK}: exit {rc}, first finding: {first.get('where')}: {first.get('what')}")

    def black_hole():
        time.sleep(4)
        with Telemetry("demo-sw") as t:
            t.query(f"/tita_switch/fault,{BOTTLENECK},drop_all")
        time.sleep(0.5)
        return doctor()

    rc, rep = with_incast(build, os.path.join(work, "black-hole"), 9, black_hole)
    f = rep["findings"]
    first = f[0] if f else {}
    check(rc == 1 and first.get("question") == "loss" and BOTTLENECK in first.get("where", "")
          and "fault_port_drop" in first.get("what", ""),
          f"black-holed {BOTTLENECK}: exit {rc}, first finding: {first.get('where')}: {first.get('what')}")
    timeouts = [x for x in f if x["question"] == "connection"]
    check(len(timeouts) >= 1 and all("demo-tx" in x["where"] for x in timeouts),
          f"black-holed {BOTTLENECK}: {len(timeouts)} sender QPs seen without answers")
    finish()


if __name__ == "__main__":
    main()
