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
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "demo"))
import incast  # noqa: E402

EXPORTER = os.path.join(HERE, "..", "..", "apps", "ops", "tita-exporter")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def promql(base, expr):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=10) as r:
        reply = json.load(r)
    if reply.get("status") != "success":
        raise RuntimeError(f"{expr}: {reply}")
    return reply["data"]["result"]


def value(base, expr):
    """A scalar PromQL result (the first series' value), or None."""
    r = promql(base, expr)
    return float(r[0]["value"][1]) if r else None


def main():
    build, work = sys.argv[1:3]
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed (Debian package prometheus)")
            sys.exit(77)
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        print("SKIP: python3-prometheus-client is not installed")
        sys.exit(77)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    exp_port, prom_port = free_port(), free_port()
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "scrape_configs:\n  - job_name: tita\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{exp_port}']\n")
    exp_log = open(os.path.join(work, "exporter.log"), "w")
    prom_log = open(os.path.join(work, "prometheus.log"), "w")
    exporter = subprocess.Popen([sys.executable, EXPORTER, "--listen", f"127.0.0.1:{exp_port}"],
                                stdout=exp_log, stderr=subprocess.STDOUT)
    prom = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work}/tsdb",
                             f"--web.listen-address=127.0.0.1:{prom_port}"], stdout=prom_log,
                            stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{prom_port}"
    deadline = time.time() + 30
    while time.time() < deadline:  # Prometheus is ready
        try:
            urllib.request.urlopen(f"{base}/-/ready", timeout=2)
            break
        except OSError:
            time.sleep(0.2)
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
        check(value(base, 'up{job="tita"}') == 1, "Prometheus scrapes tita-exporter")
        procs = value(base, "count(tita_process_up == 1)")
        check(procs is not None and procs >= 4, f"{procs} tita processes answer (switch, receiver, two senders)")
        qps = value(base, 'count(tita_qp_info{process=~"demo-tx.*", state="RTS"})')
        check(qps == 2, f"{qps} sender QPs in RTS")
        goodput = value(base, 'sum(rate(tita_qp_tx_payload_bytes_total{process=~"demo-tx.*"}[4s]))')
        check(goodput is not None and 20e6 < goodput < 250e6,
              f"the senders move {(goodput or 0) * 8 / 1e9:.3f} Gb/s (PromQL rate over 4 s) into 1 Gb/s")
        rates = promql(base, 'tita_qp_rate_bytes_per_second{process=~"demo-tx.*"}')
        check(len(rates) == 2 and all(float(r["value"][1]) * 8 < 1.05e9 for r in rates),
              "DCQCN holds each sender at or below its 1 Gb/s: "
              + ", ".join(f"{float(r['value'][1]) * 8 / 1e9:.3f}" for r in rates))
        marks = value(base, "sum(increase(tita_switch_ecn_marked_packets_total[6s]))")
        check(marks is not None and marks > 0, f"the switch marked {marks} packets ECN CE in 6 s")
        cnps = value(base, 'sum(increase(tita_qp_cnps_received_total{process=~"demo-tx.*"}[6s]))')
        check(cnps is not None and cnps > 0, f"the senders received {cnps} CNPs in 6 s")
        q = value(base, 'max(max_over_time(tita_switch_queue_bytes{priority="3"}[6s]))')
        check(q is not None and q > 0, f"the bottleneck queue reached {q} B")
        drops = value(base, 'sum(tita_switch_dropped_packets_total)')
        check(drops == 0, f"{drops} packets dropped by the switch")
        rtt = value(base, 'max(tita_qp_rtt_seconds{process=~"demo-tx.*"})')
        check(rtt is not None and 0 < rtt < 0.1, f"the senders' last RTT samples are below {rtt} s")
        run.join(timeout=120)
        check("flows" in result and len(result["flows"]) == 2, "the incast finished")
    finally:
        for p in (exporter, prom):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        run.join(timeout=120)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
