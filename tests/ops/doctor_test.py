#!/usr/bin/python3
"""tita-doctor diagnose against a fault matrix on a real DPDK setup.

Usage: doctor_test.py BUILD_DIR WORKDIR [CASE ...]

Every case is a 2-to-1 incast: tita-switch (vhost-user ports, the receiver's
a 1 Gb/s shaped bottleneck with ECN, PFC on priority 3, INT on) and three
tita-perf processes (two senders, one receiver) on virtio-user ports, all
real DPDK processes. One fault is injected, `tita-doctor diagnose --json` runs
while the traffic does, and its first finding must name the fault (question,
check or drop reason, and where); the healthy case must have no problem and
exit 0. A NIC capped at half its rate is ops-accept's case (tests/ops/accept_test.py).
"""
import copy
import json
import os
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from opscheck import check, finish, free_port  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "..", "apps", "ops"))
from dpdk_telemetry import Telemetry, socket_path  # noqa: E402

DOCTOR = os.path.join(HERE, "..", "..", "apps", "ops", "tita-doctor")
SENDERS = 2
BOTTLENECK = f"net_vhost{SENDERS}"  # the receiver's port, after the senders'
RECEIVER_IP = "10.0.0.100"
GOOD = {
    # ECN on every port below the queue at which PFC pauses (tita-doctor
    # precheck's ecn_reach: the 100 Gb/s defaults lie above it in this buffer).
    "ports": [{"name": f"net_vhost{i}", "ecn": {"enabled": True, "kmin_bytes": 20_000, "kmax_bytes": 100_000}}
              for i in range(SENDERS)]
    + [{"name": BOTTLENECK, "rate_gbps": 1.0, "buffer_bytes": 2_000_000,
        "ecn": {"enabled": True, "kmin_bytes": 20_000, "kmax_bytes": 100_000, "pmax": 0.2}}],
    "routes": [{"prefix": f"10.0.0.{i + 1}/32", "ports": [i]} for i in range(SENDERS)]
    + [{"prefix": f"{RECEIVER_IP}/32", "ports": [SENDERS]}],
    # Headroom for what is already on its way when a pause goes out: the
    # virtio rings hold 256 frames per direction, far more than a NIC's FIFO.
    "buffer": {"total_bytes": 4_000_000, "headroom_bytes": 1_000_000},
    "pfc": {"enabled": True, "priorities": [3]},
    "int": {"enabled": True},
}
EAL = ["--no-huge", "-m", "512", "--no-pci", "--log-level=*:error"]
COMMON = ["--idle-sleep", "--base-rtt-us", "200", "--pacing-slack-us", "200"]


def doctor(window=2, extra=()):
    """tita-doctor diagnose on the job of the switch: the test's processes
    (another tenant's on this machine are not read)."""
    r = subprocess.run([sys.executable, DOCTOR, "diagnose", "--window", str(window), "--json", "--job", "demo-sw",
                        *extra], capture_output=True, text=True, timeout=90)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, {"findings": [], "error": r.stderr}


def run_case(build, work, switch_cfg, cc="dcqcn", test="write", sender=lambda i: [], receiver=(), during=None, seconds=8, start_delay=3.0):
    """Starts the incast with the fault, runs during() (default: the doctor)
    start_delay seconds after the senders, tears everything down; returns
    during()'s result."""
    os.makedirs(work, exist_ok=True)
    perf = os.path.join(build, "apps", "tita-perf")
    switch = os.path.join(build, "apps", "tita-switch", "tita-switch")
    socks = [os.path.join(work, f"vh{i}.sock") for i in range(SENDERS + 1)]
    for s in socks:
        if os.path.exists(s):
            os.unlink(s)
    cfg_path = os.path.join(work, "switch.json")
    with open(cfg_path, "w") as f:
        json.dump(switch_cfg, f)
    logs = open(os.path.join(work, "processes.log"), "w")
    procs = []
    # A TCP port of this run's own: a client that reached another run's server
    # (another test on this machine) would test the wrong thing.
    oob = ["--tcp-port", str(free_port())]
    try:
        sw = [switch, "-l", "1"] + EAL + ["--file-prefix=demo-sw"]
        sw += [f"--vdev=net_vhost{i},iface={s},queues=1" for i, s in enumerate(socks)]
        procs.append(subprocess.Popen(sw + ["--", "--config", cfg_path, "--stats-ms", "0"], stdout=logs,
                                      stderr=logs))
        deadline = time.time() + 20
        while not all(os.path.exists(s) for s in socks) and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        rx = [perf, "-l", "0"] + EAL + ["--file-prefix=demo-rx", f"--vdev=net_virtio_user0,path={socks[SENDERS]}",
                                        "--", "--port", "net_virtio_user0", "--ip", RECEIVER_IP, "--server",
                                        "--clients", str(SENDERS)] + oob + COMMON + list(receiver)
        procs.append(subprocess.Popen(rx, stdout=logs, stderr=logs))
        time.sleep(1.0)
        for i in range(SENDERS):
            extra = sender(i)
            # A sender's own --mtu, --cc or --rate replaces the common one.
            own = [w for flag, value in (("--mtu", "1024"), ("--cc", cc), ("--rate", "1")) if flag not in extra
                   for w in (flag, value)]
            tx = [perf, "-l", "0"] + EAL + [
                f"--file-prefix=demo-tx{i}", f"--vdev=net_virtio_user0,path={socks[i]}", "--", "--port",
                "net_virtio_user0", "--ip", f"10.0.0.{i + 1}", "--client", "127.0.0.1", "--test", test, "--size",
                "65536", "--qps", "1", "--tx-depth", "16", "--duration", str(seconds),
                "--pace", "--linger", "15"] + own + oob + COMMON + extra
            procs.append(subprocess.Popen(tx, stdout=logs, stderr=logs))
        time.sleep(start_delay)
        wait_traffic()
        return (during or doctor)()
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in reversed(procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        logs.close()


def wait_traffic(timeout=20.0):
    """Until the switch has sent a frame into the receiver's port: on a loaded
    machine the processes can take seconds more to start and connect, and a
    window before the traffic sees none of it (the doctor says so)."""
    deadline = time.time() + timeout
    try:
        with Telemetry("demo-sw", timeout=timeout) as t:
            while time.time() < deadline:
                p = t.query(f"/tita_switch/port,{BOTTLENECK}")
                if isinstance(p, dict) and p.get("tx_packets", 0) > 0:
                    return
                time.sleep(0.2)
    except (OSError, RuntimeError, ValueError):
        pass


def changed(fn):
    cfg = copy.deepcopy(GOOD)
    fn(cfg)
    return cfg


def first_problem(rep):
    f = [x for x in rep["findings"] if x["problem"]]
    return f[0] if f else {}


def describe(f):
    return f"[{f.get('question')}/{f.get('check', '-')}] {f.get('where')}: {f.get('what')}"


def starve_sender():
    """From now on sender 0's polling thread (the process's main thread, lcore 0)
    runs only when nothing else wants CPU 0 (SCHED_IDLE), and a busy loop
    pinned to CPU 0 always wants it: a sender starved of CPU mid-run. Its
    telemetry thread keeps its normal class, so the doctor can still ask."""
    pid = subprocess.run(["pgrep", "-f", "file-prefix=demo-tx0"], capture_output=True, text=True).stdout.split()[0]
    hog = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
    try:
        subprocess.run(["chrt", "--idle", "-p", "0", pid], check=True)
        time.sleep(0.5)
        return doctor()
    finally:
        hog.kill()
        hog.wait()


def tenants(build):
    """What the doctor reads: another job on the machine (a tita-perf started by
    another parent) is not read silently: without --job or --prefix the doctor
    refuses and lists both jobs; --job reads the incast's processes only; a
    process named with --prefix that does not answer is missing evidence."""
    perf = os.path.join(build, "apps", "tita-perf")
    other = subprocess.Popen(["sh", "-c", shlex.join([perf, "-l", "0,1"] + EAL + [
        "--vdev=net_ring0", "--file-prefix=other-tenant", "--", "--loopback", "--duration", "20", "--rate", "0.1",
        "--idle-sleep"]) + " >/dev/null 2>&1; exit 0"])  # sh stays: the tenant's parent is not the test
    try:
        deadline = time.time() + 20
        while time.time() < deadline and socket_path("other-tenant") is None and \
                other.poll() is None:
            time.sleep(0.2)
        time.sleep(1.0)
        r = subprocess.run([sys.executable, DOCTOR, "diagnose", "--window", "1", "--json"], capture_output=True,
                           text=True, timeout=90)
        refusal = r.stderr.strip()
        both = r.returncode == 2 and "jobs run here" in refusal and "other-tenant" in refusal and "demo-sw" in refusal \
            and len(refusal.splitlines()) == 1
        _, rep = doctor()
        job_only = sorted(rep.get("processes", [])) == ["demo-rx", "demo-sw", "demo-tx0", "demo-tx1"]
        r = subprocess.run([sys.executable, DOCTOR, "diagnose", "--window", "1", "--json"]
                           + [w for p in ("demo-sw", "demo-rx", "demo-tx0", "demo-tx1", "demo-absent")
                              for w in ("--prefix", p)], capture_output=True, text=True, timeout=90)
        named = json.loads(r.stdout) if r.stdout.startswith("{") else {}
        absent = [f for f in named.get("missing", []) if "demo-absent" in f["where"]]
        return {"refused": both, "refusal": refusal, "job_only": job_only, "read": rep.get("processes"),
                "absent_named": r.returncode == 1 and bool(absent), "absent": absent[:1]}
    finally:
        subprocess.run(["pkill", "-INT", "-P", str(other.pid)])  # the tenant's tita-perf, by its parent
        other.wait(timeout=30)


def black_hole():
    with Telemetry("demo-sw") as t:
        t.query(f"/tita_switch/fault,{BOTTLENECK},drop_all")
    time.sleep(0.5)
    return doctor()


# name: (run_case arguments, what the first problem must be: {field: substring})
CASES = {
    "ecn-off": (dict(switch_cfg=changed(lambda c: c["ports"][SENDERS].update(ecn={"enabled": False}))),
                {"question": "configuration", "check": "ecn", "where": BOTTLENECK, "what": "ECN marking is off"}),
    "pfc-off": (dict(switch_cfg=changed(lambda c: c["pfc"].update(enabled=False))),
                {"question": "configuration", "check": "pfc", "what": "PFC is off"}),
    "dscp-mismatch": (dict(switch_cfg=GOOD, sender=lambda i: ["--dscp", "10"]),
                      {"question": "configuration", "check": "pfc", "what": "(DSCP 10) is not lossless"}),
    "int-off-hpcc": (dict(switch_cfg=changed(lambda c: c["int"].update(enabled=False)), cc="hpcc"),
                     {"question": "configuration", "check": "int", "what": "hpcc reads INT"}),
    "mtu-mismatch": (dict(switch_cfg=GOOD, sender=lambda i: ["--mtu", "2048"], receiver=["--mtu", "1024"]),
                     {"question": "configuration", "check": "mtu", "what": "different path MTUs"}),
    "random-loss": (dict(switch_cfg=changed(lambda c: c["ports"][SENDERS].update(faults={"drop_probability": 0.01}))),
                    {"question": "loss", "where": BOTTLENECK, "what": "fault_random", "side": "network"}),
    "black-hole": (dict(switch_cfg=GOOD, during=black_hole, start_delay=2.5),
                   {"question": "loss", "where": BOTTLENECK, "what": "fault_port_drop"}),
    "unrouted-peer": (dict(switch_cfg=GOOD, sender=lambda i: ["--peer-gid", "10.0.0.99"] if i == 0 else []),
                      {"question": "configuration", "check": "route", "where": "demo-tx0", "what": "10.0.0.99"}),
    "arp-through-switch": (dict(switch_cfg=GOOD, sender=lambda i: ["--arp"] if i == 0 else [], start_delay=3.5),
                           {"where": "demo-tx0", "what": "ARP"}),
    "wrong-rkey": (dict(switch_cfg=GOOD, sender=lambda i: ["--inject-fault", "bad-rkey"] if i == 0 else []),
                   {"question": "connection", "what": "remote access error"}),
    "receiver-not-ready": (dict(switch_cfg=GOOD, test="send", receiver=["--inject-fault", "no-recv"]),
                           {"question": "connection", "where": "demo-rx", "what": "no receive posted"}),
    "psn-mismatch": (dict(switch_cfg=GOOD, sender=lambda i: ["--inject-fault", "bad-psn", "--timeout", "4"]
                          if i == 0 else []),
                     {"question": "connection", "where": "demo-tx0", "what": "disagree on the PSN"}),
    "cpu-starved-sender": (dict(switch_cfg=GOOD, during=starve_sender),
                           {"question": "performance", "check": "cpu", "where": "demo-tx0"}),
}


def main():
    build, work = sys.argv[1:3]
    only = sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    if not only or "healthy" in only:
        rc, rep = run_case(build, os.path.join(work, "healthy"), GOOD)
        with open(os.path.join(work, "healthy", "doctor.json"), "w") as f:
            json.dump(dict(rep, exit=rc), f, indent=1)
        problems = [f for f in rep["findings"] if f["problem"]]
        # On a machine with more runnable work than CPUs (other tests, other
        # users) the doctor rightly names processes that wait for a CPU (and the
        # drops it puts down to them); that, and nothing else, is still a
        # healthy fabric.
        loaded = os.getloadavg()[0] > (os.cpu_count() or 1)
        cpu_only = problems and loaded and all(f.get("check") == "cpu" or "explained_by" in f for f in problems)
        check((rc == 0 and not problems or cpu_only) and len(rep.get("processes", [])) >= 4,
              f"healthy: exit {rc}, {len(problems)} problems {[describe(f) for f in problems][:2]}, "
              f"{len(rep['findings'])} findings{' (load ' + str(os.getloadavg()[0]) + ')' if loaded else ''} "
              f"{rep.get('error', '')}")
    if not only or "tenants" in only:
        got = run_case(build, os.path.join(work, "tenants"), GOOD, during=lambda: tenants(build))
        check(got["refused"] and got["job_only"] and got["absent_named"],
              f"tenants: two jobs refused without --job: {got['refused']} ({got['refusal'][:160]}); "
              f"--job demo-sw read {got['read']}; "
              f"a named process that does not answer reported: {got['absent']}")
    plugin = os.path.join(build, "tests", "ops", "libops-dctcp.so")
    if (not only or "plug-in" in only) and os.path.exists(plugin):
        # Senders on a plug-in's algorithm: without --cc-plugin the doctor says
        # it cannot read them (missing evidence); with it, nothing is missing.
        def both():
            r1 = doctor(extra=[])
            r2 = doctor(extra=["--cc-plugin", plugin])
            return r1, r2
        (rc1, rep1), (rc2, rep2) = run_case(build, os.path.join(work, "plug-in"), GOOD, cc="dctcp",
                                            sender=lambda i: ["--cc-plugin", plugin], receiver=["--cc-plugin", plugin],
                                            during=both)
        unknown = [f for f in rep1.get("missing", []) if "dctcp" in f["what"] and "--cc-plugin" in f["fix"]]
        known = [f for f in rep2.get("missing", []) if "dctcp" in f["what"]]
        check(rc1 == 1 and len(unknown) >= 2 and rep2.get("findings") is not None and not known and
              rep2.get("read", {}).get("qps"),
              f"plug-in: without --cc-plugin exit {rc1}, {len(unknown)} QPs named unreadable; with it exit {rc2}, "
              f"{len(known)} ({describe(first_problem(rep2)) if first_problem(rep2) else 'no problem'})")
    for name, (kw, want) in CASES.items():
        if only and name not in only:
            continue
        rc, rep = run_case(build, os.path.join(work, name), **kw)
        f = first_problem(rep)
        ok = rc == 1 and all(v in str(f.get(k, "")) for k, v in want.items())
        check(ok, f"{name}: exit {rc}, first problem {describe(f)} {rep.get('error', '')}")
        if not ok:
            for x in rep["findings"][:6]:
                print("     " + describe(x))
    finish()


if __name__ == "__main__":
    main()
