"""What the operations tests share: check() with its failure list, a free
loopback port, and a Prometheus server of the test's own (Debian's package)
queried over its HTTP API."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def finish():
    sys.exit(1 if failures else 0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need_prometheus():
    """Skips the test (exit 77) without prometheus, promtool or prometheus_client."""
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            print(f"SKIP: {tool} is not installed (Debian package prometheus)")
            sys.exit(77)
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        print("SKIP: python3-prometheus-client is not installed")
        sys.exit(77)


class Prometheus:
    """A prometheus process on a free loopback port, ready when constructed."""

    def __init__(self, work, config_text, tsdb, extra=()):
        self.port = free_port()
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write(config_text)
        self.log = open(os.path.join(work, "prometheus.log"), "w")
        self.proc = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tsdb}",
                                      f"--web.listen-address=127.0.0.1:{self.port}", *extra],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{self.base}/-/ready", timeout=2)
                break
            except OSError:
                time.sleep(0.2)

    def query(self, expr, t=None):
        """The result vector of a PromQL instant query (now, or at Unix time t)."""
        args = {"query": expr} if t is None else {"query": expr, "time": f"{t:.3f}"}
        with urllib.request.urlopen(f"{self.base}/api/v1/query?" + urllib.parse.urlencode(args), timeout=10) as r:
            reply = json.load(r)
        if reply.get("status") != "success":
            raise RuntimeError(f"{expr}: {reply}")
        return reply["data"]["result"]

    def value(self, expr, t=None):
        """The first series' value of a query, or None."""
        r = self.query(expr, t)
        return float(r[0]["value"][1]) if r else None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
