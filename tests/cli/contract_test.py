#!/usr/bin/env python3
"""The command-line contract (doc/cli.md), for every program built: each bad
input below is refused with exactly one line on stderr that names the flag or
value at fault, nothing on stdout, and exit status 2, before EAL or ns-3 starts
(none of these runs starts either: the refusals come from the shared checks of
lib/cli, the ns-3 programs' TitaCommandLine and tita_cli.py).

With tita-perf built, a server waiting for its client is then sent SIGTERM: it
must end on it (exit 128 + 15, a line saying so), not wait out its 120 s; and a
server whose out-of-band port is taken must name --tcp-port.

Usage: contract_test.py WORKDIR NAME=PATH...
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

work = sys.argv[1]
tools = dict(a.split("=", 1) for a in sys.argv[2:])
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
out_dir = os.path.join(work, "out")

# (program, arguments, a text the line must contain)
CASES = [
    ("tita-perf", ["--bogus"], "--bogus"),
    ("tita-perf", ["--rate", "5000", "--server"], "--rate"),
    ("tita-perf", ["--ip", "10.0.0.300", "--server"], "--ip: '10.0.0.300'"),
    ("tita-perf", ["--ip", "banana", "--server"], "--ip: 'banana'"),
    ("tita-perf", ["--peer-gid", "1.2.3", "--client", "h"], "--peer-gid"),
    ("tita-perf", ["--mac", "zz", "--server"], "--mac"),
    ("tita-perf", ["--size", "0", "--server"], "--size"),
    ("tita-perf", ["--qps"], "--qps"),
    ("tita-perf", ["--tcp-port", "70000", "--server"], "--tcp-port"),
    ("tita-perf", ["--cc", "bogus", "--server"], "bogus"),
    ("tita-perf", ["--cc-plugin", "libnothere.so", "--server"], "--cc-plugin libnothere.so"),
    ("tita-perf", ["--server", "--client", "h"], "--client"),
    ("tita-perf", [], "--server"),
    ("tita-perf", ["--bogus-eal", "--", "--server"], "EAL arguments (before --): unrecognized option '--bogus-eal'"),
    ("tita-perf", ["--no-huge", "--no-pci", "--vdev=nope0", "--", "--server"], "nope0"),
    ("tita-switch", ["--", "--bogus"], "--bogus"),
    ("tita-switch", ["--bogus-eal", "--", "--port", "x"], "EAL arguments (before --)"),
    ("tita-switch", ["--", "--stats-ms", "-5"], "--stats-ms"),
    ("tita-switch", ["--", "--port", "x", "--route", "10.0.0.300/24=0"], "10.0.0.300"),
    ("tita-switch", ["--", "--set", "nonsense"], "--set"),
    ("tita-wire", ["bogus"], "bogus"),
    ("tita-wire", ["gen"], "--pcap"),
    ("tita-wire", ["gen", "--pcap", os.path.join(work, "x.pcap"), "--count", "0"], "--count"),
    ("tita-wire", ["parse", "--pcap", os.path.join(work, "absent.pcap")], "--pcap"),
    ("tita-run", ["--bogus"], "--bogus"),
    ("tita-run", ["--ip", "banana", "--", "true"], "--ip: 'banana'"),
    ("tita-run", ["--eal", "-l 0", "--vdev", "net_null0", "--ip", "10.0.0.1", "--", "true"], "--eal"),
    ("tita-run", ["--ip", "10.0.0.1", "--vdev", "net_null0"], "program"),
    ("tita-sim", ["--bogus"], "--bogus"),
    ("tita-sim", ["--seed=banana"], "--seed"),
    ("tita-sim", ["--seed"], "--seed"),
    ("tita-sim", ["stray"], "stray"),
    ("tita-sim", ["--stop=5xyz", f"--out={out_dir}"], "--stop"),
    ("tita-sim", ["--topo=star:n=3,rate=10", "--workload=incast:senders=2,receiver=0,bytes=1MB", f"--out={out_dir}"],
     "rate '10' has no unit"),
    ("tita-sim", ["--ns3::RdmaNicNetDevice::PathMtu=banana"], "PathMtu"),
    ("tita-sim", ["--ns3::RdmaNicNetDevice::PathMtu=99999"], "PathMtu"),
    ("tita-sim", ["--ns3::Bogus::X=1"], "ns3::Bogus"),
    ("tita-sim", ["--ns3::RdmaNicNetDevice::PathMtu", "4096"], "needs a value"),
    ("tita-sim", ["--cc-plugin=libnothere.so", "--cc=help"], "--cc-plugin libnothere.so"),
    ("tita-dodge", ["--bogus"], "--bogus"),
    ("tita-dodge", ["--flow-bytes=1e8"], "--flow-bytes"),
    ("tita-dodge", ["--fault=x"], "--fault"),
    ("tita-doctor", ["bogus"], "bogus"),
    ("tita-doctor", ["diagnose", "--window", "x"], "--window"),
    ("tita-doctor", ["precheck", "--bogus"], "--bogus"),
    ("tita-exporter", ["--bogus"], "--bogus"),
    ("tita-exporter", ["--dilate", "x"], "--dilate"),
]

failed = 0
ran = 0
for name, args, want in CASES:
    path = tools.get(name)
    if path is None:
        continue
    ran += 1
    r = subprocess.run([path] + args, capture_output=True, text=True, timeout=120, cwd=work)
    if "ModuleNotFoundError" in r.stderr:  # tita-exporter without prometheus_client
        print(f"SKIP {name}: {r.stderr.strip().splitlines()[-1]}")
        continue
    lines = r.stderr.splitlines()
    ok = r.returncode == 2 and len(lines) == 1 and r.stdout == "" and want in lines[0] and \
        lines[0].startswith(name + ": ")
    print(("ok   " if ok else "FAIL ") + f"{name} {' '.join(args)}: exit {r.returncode}, "
          f"{len(lines)} stderr lines, {len(r.stdout.splitlines())} stdout lines: {lines[0] if lines else ''}")
    if not ok:
        failed += 1
        if lines[1:]:
            print("     stderr: " + " | ".join(lines[:6]))

# --help: on stdout, nothing on stderr, exit 0.
HELP = {"tita-switch": ["--", "--help"], "tita-wire": ["--help"]}
for name, path in sorted(tools.items()):
    r = subprocess.run([path] + HELP.get(name, ["--help"]), capture_output=True, text=True, timeout=120, cwd=work)
    if "ModuleNotFoundError" in r.stderr:
        continue
    ok = r.returncode == 0 and r.stderr == "" and "--" in r.stdout
    if name == "tita-run":  # each setting's own type and unit (IPv4, MiB, us, Gb/s), not TEXT for all
        ok = ok and "TEXT" not in r.stdout and " IPv4 " in r.stdout and " Gb/s " in r.stdout
    print(("ok   " if ok else "FAIL ") + f"{name} --help: exit {r.returncode}, {len(r.stdout.splitlines())} lines on "
          f"stdout, {len(r.stderr.splitlines())} on stderr")
    failed += 0 if ok else 1

if "tita-perf" in tools:
    # A server waiting for its client (EAL up on a null port), stopped by SIGTERM.
    with socket.socket() as free:  # a port nobody listens on
        free.bind(("0.0.0.0", 0))
        port = free.getsockname()[1]
    cmd = [tools["tita-perf"], "--no-huge", "-m", "128", "--no-pci", "--vdev=net_null0", "-l", "0",
           f"--file-prefix=cli-contract-{os.getpid()}", "--log-level=*:error", "--",
           "--port", "net_null0", "--server", "--tcp-port", str(port)]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    listening = False
    while p.poll() is None and not listening:
        with open("/proc/net/tcp") as f:
            rows = [ln.split() for ln in f.readlines()[1:]]
        listening = any(r[1].endswith(f":{port:04X}") and r[3] == "0A" for r in rows)  # 0A: LISTEN
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    last = err.strip().splitlines()[-1] if err.strip() else ""
    ok = listening and p.returncode == 128 + signal.SIGTERM and "signal 15" in last
    print(("ok   " if ok else "FAIL ") + f"tita-perf server waiting for a client, SIGTERM: exit {p.returncode}: {last}")
    failed += 0 if ok else 1

    # Its out-of-band port taken by another process: the message names the flag to change.
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        cmd[cmd.index("--tcp-port") + 1] = str(busy)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    last = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
    ok = r.returncode == 1 and f"TCP port {busy} (--tcp-port)" in last and "another --tcp-port" in last
    print(("ok   " if ok else "FAIL ") + f"tita-perf server, out-of-band port taken: exit {r.returncode}: {last}")
    failed += 0 if ok else 1

print(f"{ran} refusals checked, {failed} failed")
sys.exit(1 if failed or ran == 0 else 0)
