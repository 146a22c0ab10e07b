#!/usr/bin/python3
"""tita's metrics read by a real Prometheus server.

Usage: prometheus_test.py BUILD_DIR WORKDIR

A 2-to-1 incast under DCQCN through tita-switch (scripts/demo/incast.py: real
DPDK processes on vhost-user ports) runs for 12 s; tita-exporter serves the
metrics of every process on a loopback port; Debian's prometheus, started here
with its own configuration and storage, scrapes it every second; PromQL queries
over its HTTP API must then show the senders' QPs moving bytes, the switch's
bottleneck marking ECN and the senders receiving CNPs, and the exposition must
pass `promtool check metrics` (Prometheus' naming conventions).
"""
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "demo"))
import incast  # noqa: E402
from opscheck import Prometheus, check, finish, free_port, need_prometheus  # noqa: E402

EXPORTER = os.path.join(HERE, "..", "..", "apps", "ops", "tita-exporter")


def main():
    build, work = sys.argv[1:3]
    need_prometheus()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    exp_port = free_port()
    exp_log = open(os.path.join(work, "exporter.log"), "w")
    exporter = subprocess.Popen([sys.executable, EXPORTER, "--listen", f"127.0.0.1:{exp_port}"],
                                stdout=exp_log, stderr=subprocess.STDOUT)
    prom = Prometheus(work, "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                      "scrape_configs:\n  - job_name: tita\n    static_configs:\n"
                      f"      - targets: ['127.0.0.1:{exp_port}']\n", os.path.join(work, "tsdb"))
    value = prom.value
    result = {}
    run = threading.Thread(target=lambda: result.update(
        incast.run_one(build, os.path.join(work, "incast"), "dcqcn", 12, senders=2, sender_gbps=1.0)))
    try:
        run.start()
        time.sleep(9)  # the incast is in its steady state, Prometheus has scraped several times
        text = urllib.request.urlopen(f"http://127.0.0.1:{exp_port}/metrics", timeout=10).read().decode()
        with open(os.path.join(work, "metrics.txt"), "w") as f:
            f.write(text)
        lint = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        check(lint.returncode == 0, "promtool check metrics: the exposition follows Prometheus' conventions"
              + ("" if lint.returncode == 0 else ":\n" + lint.stdout + lint.stderr))
        check(value('up{job="tita"}') == 1, "Prometheus scrapes tita-exporter")
        procs = value("count(tita_process_up == 1)")
        check(procs is not None and procs >= 4, f"{procs} tita processes answer (switch, receiver, two senders)")
        qps = value('count(tita_qp_info{process=~"demo-tx.*", state="RTS"})')
        check(qps == 2, f"{qps} sender QPs in RTS")
        goodput = value('sum(rate(tita_qp_tx_payload_bytes_total{process=~"demo-tx.*"}[4s]))')
        check(goodput is not None and 20e6 < goodput < 250e6,
              f"the senders move {(goodput or 0) * 8 / 1e9:.3f} Gb/s (PromQL rate over 4 s) into 1 Gb/s")
        rates = prom.query('tita_qp_rate_bytes_per_second{process=~"demo-tx.*"}')
        check(len(rates) == 2 and all(float(r["value"][1]) * 8 < 1.05e9 for r in rates),
              "DCQCN holds each sender at or below its 1 Gb/s: "
              + ", ".join(f"{float(r['value'][1]) * 8 / 1e9:.3f}" for r in rates))
        marks = value("sum(increase(tita_switch_ecn_marked_packets_total[6s]))")
        check(marks is not None and marks > 0, f"the switch marked {marks} packets ECN CE in 6 s")
        cnps = value('sum(increase(tita_qp_cnps_received_total{process=~"demo-tx.*"}[6s]))')
        check(cnps is not None and cnps > 0, f"the senders received {cnps} CNPs in 6 s")
        # The high-water mark, not the length at scrape instants: DCQCN keeps
        # the queue short enough that every scrape can find it empty.
        q = value('max(tita_switch_queue_max_bytes{priority="3"})')
        check(q is not None and q > 0, f"the bottleneck queue reached {q} B")
        # Drops by reason, as Prometheus has them: none may be a parse or
        # routing failure. Overflow at the bottleneck is reported, not
        # failed: on a 2-vCPU machine the switch process can be descheduled
        # for ~10 ms, and what the senders sent meanwhile arrives at once.
        drops = value('sum(tita_switch_dropped_packets_total)')
        overflow = value('sum(tita_switch_dropped_packets_total{port="net_vhost2", '
                         'reason=~"egress_threshold|buffer_full"})')
        check(drops is not None and overflow is not None and drops == overflow,
              f"the switch's drops by reason: {drops} in all, {overflow} of them the bottleneck's queue "
              f"overflowing (none malformed, unsupported, unroutable or TTL-expired)")
        rtt = value('max(tita_qp_rtt_seconds{process=~"demo-tx.*"})')
        check(rtt is not None and 0 < rtt < 0.1, f"the senders' last RTT samples are below {rtt} s")
        run.join(timeout=120)
        check("flows" in result and len(result["flows"]) == 2, "the incast finished")
    finally:
        prom.stop()
        exporter.terminate()
        exporter.wait(timeout=10)
        run.join(timeout=120)
    finish()


if __name__ == "__main__":
    main()
