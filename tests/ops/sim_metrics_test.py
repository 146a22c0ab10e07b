#!/usr/bin/python3
"""tita-sim's metrics under the live metric names, read by Prometheus.

Usage: sim_metrics_test.py TITA_SIM WORKDIR

A 4-to-1 incast under DCQCN in tita-sim writes metrics.jsonl every 20 us;
tita-exporter --from-sim turns it into OpenMetrics (the names of a live run,
simulated time dilated 1000x: Prometheus keeps milliseconds); promtool imports
it into a TSDB; Prometheus, started on that TSDB, answers PromQL: eight QPs (a
sender and a receiver per flow), every byte of the four 4 MB flows received at
host 0 (up to each flow's last sample), the bottleneck queue and its ECN marks, CNPs at the senders.
"""
import json
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from opscheck import Prometheus, check, finish, need_prometheus  # noqa: E402

EXPORTER = os.path.join(HERE, "..", "..", "apps", "ops", "tita-exporter")
EPOCH = 1767225600.0


def main():
    sim, work = sys.argv[1:3]
    need_prometheus()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    out = os.path.join(work, "sim")
    r = subprocess.run([sim, "--topo=star:n=5,rate=100Gbps,delay=1us", "--workload=incast:senders=4,receiver=0,bytes=4MB",
                        "--cc=dcqcn", "--progress=0", "--qlen-interval=0s", "--metrics=20us", f"--out={out}"],
                       capture_output=True, text=True)
    check(r.returncode == 0, "tita-sim ran: " + (r.stderr.strip().splitlines() or [""])[-1])
    om = os.path.join(work, "sim.om")
    with open(om, "w") as f:
        r = subprocess.run([sys.executable, EXPORTER, "--from-sim", os.path.join(out, "metrics.jsonl"),
                            "--dilate", "1000", "--epoch", str(EPOCH)], stdout=f, stderr=subprocess.PIPE, text=True)
    check(r.returncode == 0, f"tita-exporter --from-sim {r.stderr.strip()}")
    r = subprocess.run([sys.executable, EXPORTER, "--from-sim", os.path.join(out, "metrics.jsonl")],
                       capture_output=True, text=True)
    check(r.returncode == 2 and "--dilate" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          "20 us samples without --dilate: one line naming --dilate, exit 2")
    tsdb = os.path.join(work, "tsdb")
    r = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", om, tsdb], capture_output=True,
                       text=True)
    check(r.returncode == 0, "promtool imports the OpenMetrics file" + ("" if r.returncode == 0 else ": " + r.stderr))
    prom = Prometheus(work, "global:\n  scrape_interval: 15s\n", tsdb, ["--storage.tsdb.retention.time=100y"])
    value = prom.value
    try:
        mid, end = EPOCH + 1.0, EPOCH + 3.6  # simulated 1 ms and 3.6 ms
        qps = value("count(tita_qp_info)", mid)
        check(qps == 8, f"{qps} QPs at simulated 1 ms (a sender and a receiver per flow)")
        got = value('sum(max_over_time(tita_qp_rx_payload_bytes_total{process="host0"}[5s]))', end)
        # A flow's QPs leave the samples when it completes: the last sample of each
        # is at most 20 us (50 KB at 100 Gb/s, shared by four) before its end.
        check(got is not None and 0.99 * 16e6 <= got <= 16e6,
              f"host 0 received {got} B of the 4 x 4 MB by the flows' last samples")
        q = value('max(max_over_time(tita_switch_queue_bytes[5s]))', end)
        check(q is not None and q > 0, f"the bottleneck queue reached {q} B")
        marks = value("sum(max_over_time(tita_switch_ecn_marked_packets_total[5s]))", end)
        check(marks is not None and marks > 0, f"the switch marked {marks} packets")
        cnps = value('sum(max_over_time(tita_qp_cnps_received_total{process!="host0"}[5s]))', end)
        check(cnps is not None and cnps > 0, f"the senders received {cnps} CNPs")
    finally:
        prom.stop()

    # tita-doctor on finished runs: nothing wrong with this one; with a 1 % error
    # rate on the receiver's link (the topology file's last column), loss there.
    doctor = os.path.join(HERE, "..", "..", "apps", "ops", "tita-doctor")
    r = subprocess.run([sys.executable, doctor, "diagnose", "--from-sim", os.path.join(out, "metrics.jsonl"), "--json"],
                       capture_output=True, text=True, timeout=60)
    found = json.loads(r.stdout)["findings"] if r.returncode in (0, 1) else []
    check(r.returncode == 0 and not [f for f in found if f["problem"]],
          f"tita-doctor --from-sim on the lossless incast: exit {r.returncode}, nothing wrong")
    topo = os.path.join(work, "lossy.topo")
    with open(topo, "w") as f:  # four hosts on one switch (node 4); host 3's link loses 1 %
        f.write("5 1 4\n4\n0 4 100Gbps 1000ns 0\n1 4 100Gbps 1000ns 0\n2 4 100Gbps 1000ns 0\n"
                "3 4 100Gbps 1000ns 0.01\n")
    lossy = os.path.join(work, "lossy")
    r = subprocess.run([sim, f"--topo={topo}", "--workload=incast:senders=3,receiver=3,bytes=2MB", "--cc=dcqcn",
                        "--progress=0", "--qlen-interval=0s", "--metrics=20us", f"--out={lossy}"],
                       capture_output=True, text=True)
    summary = json.load(open(os.path.join(lossy, "summary.json"))) if r.returncode == 0 else {}
    check(summary.get("switch_drops_by_reason", {}).get("fault_random", 0) > 0 and summary.get("flows_failed") == 0,
          f"a 1 % error rate on a link: {summary.get('switch_drops_by_reason')} dropped, every flow finished")
    r = subprocess.run([sys.executable, doctor, "diagnose", "--from-sim", os.path.join(lossy, "metrics.jsonl"),
                        "--json"], capture_output=True, text=True, timeout=60)
    found = json.loads(r.stdout)["findings"] if r.returncode in (0, 1) else []
    first = found[0] if found else {}
    check(r.returncode == 1 and first.get("question") == "loss" and "switch4" in first.get("where", "")
          and "fault_random" in first.get("what", ""),
          f"tita-doctor --from-sim names the lossy link: exit {r.returncode}, {first.get('where')}: {first.get('what')}")

    # The matrix's faults that tita-sim can have, each named first (and HPCC
    # with INT on: nothing wrong).
    def sim_case(name, args):
        d = os.path.join(work, name)
        r = subprocess.run([sim, "--progress=0", "--qlen-interval=0s", "--metrics=20us", f"--out={d}"] + args,
                           capture_output=True, text=True)
        if r.returncode != 0:
            return r.returncode, {}
        r = subprocess.run([sys.executable, doctor, "diagnose", "--from-sim", os.path.join(d, "metrics.jsonl"),
                            "--json"], capture_output=True, text=True, timeout=60)
        found = json.loads(r.stdout)["findings"] if r.returncode in (0, 1) else []
        problems = [f for f in found if f["problem"]]
        return r.returncode, (problems[0] if problems else {})

    star = ["--topo=star:n=5,rate=100Gbps,delay=1us", "--workload=incast:senders=4,receiver=0,bytes=1MB"]
    rc, first = sim_case("hpcc", star + ["--cc=hpcc"])
    check(rc == 0 and not first, f"tita-sim, HPCC with INT: exit {rc}, nothing wrong {first.get('what', '')}")
    rc, first = sim_case("hpcc-int-off", star + ["--cc=hpcc", "--int-off=all"])
    check(rc == 1 and first.get("question") == "configuration" and "hpcc reads INT" in first.get("what", ""),
          f"tita-sim, HPCC with INT off at every switch: exit {rc}: {first.get('where')}: {first.get('what')}")
    rc, first = sim_case("pfc-off", ["--topo=star:n=9,rate=100Gbps,delay=1us",
                                     "--workload=incast:senders=8,receiver=0,bytes=2MB", "--cc=dcqcn",
                                     "--ns3::TitaSwitchNode::LosslessPriorities=0",
                                     "--ns3::TitaSwitchNode::BufferSize=1000000"])
    check(rc == 1 and first.get("question") == "loss" and "switch0 port p0" in first.get("where", "")
          and "lossless" in first.get("fix", ""),
          f"tita-sim, PFC off (8-to-1, 1 MB buffer): exit {rc}: {first.get('where')}: {first.get('what')}")
    finish()


if __name__ == "__main__":
    main()
