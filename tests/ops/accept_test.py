#!/usr/bin/python3
"""tita-doctor accept between two tita-perf processes on a vhost-user pair.

Usage: accept_test.py BUILD_DIR WORKDIR

The link is taken as 1 Gb/s: a pair that reaches it is accepted (exit 0); the
same pair with the client's NIC capped at half the rate (what a PCIe link
trained to half its width does: no loss, no congestion, just less) is named,
with "the sender cannot go faster" as the cause (exit 1).
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from opscheck import check, finish  # noqa: E402
DOCTOR = os.path.join(HERE, "..", "..", "apps", "ops", "tita-doctor")


def accept(work, name, extra):
    sock = os.path.join(work, name + ".sock")
    if os.path.exists(sock):
        os.unlink(sock)
    eal = ["--no-huge", "-m", "512", "--no-pci"]
    r = subprocess.run([sys.executable, DOCTOR, "accept",
                        "--server-eal", " ".join(["-l", "0"] + eal + [f"--file-prefix=acc-s-{name}",
                                                                        f"--vdev=net_vhost0,iface={sock}"]),
                        "--client-eal", " ".join(["-l", "1"] + eal + [f"--file-prefix=acc-c-{name}",
                                                                        f"--vdev=net_virtio_user0,path={sock}"]),
                        "--server-port", "net_vhost0", "--client-port", "net_virtio_user0", "--link-gbps", "1",
                        "--json"] + extra, capture_output=True, text=True, timeout=180)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"findings": [], "results": {}, "error": r.stderr}


def main():
    build, work = sys.argv[1:3]
    os.makedirs(work, exist_ok=True)
    rc, rep = accept(work, "healthy", [])
    check(rc == 0 and not rep["findings"],
          f"a pair that reaches its 1 Gb/s link is accepted: exit {rc}, {rep['results']} {rep.get('error', '')}")
    rc, rep = accept(work, "capped", ["--nic-gbps", "0.5"])
    f = rep["findings"][0] if rep["findings"] else {}
    check(rc == 1 and "cannot go faster" in f.get("what", "") and f.get("side") == "host",
          f"the client's NIC capped at half the link: exit {rc}: {f.get('what')}")
    finish()


if __name__ == "__main__":
    main()
