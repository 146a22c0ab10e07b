#!/usr/bin/env python3
"""A memif server process exits right after its peer has gone, again and again;
every exit must be a clean 0 (issue 30: the server died with SIGSEGV at exit in
librte_net_memif, EAL's interrupt thread reading a handle the driver had freed in
memory rte_eal_cleanup unmapped; lib/dpdk now parks that thread first).

  teardown.py BUILD_DIR WORK_DIR [ROUNDS]

Each round: a server holds tita0 (memif server role) until told to go; a client
(memif client role) opens its device, stays 0.3 s and exits; the server is told
to go 0.3 to 0.65 s after the client's device opened, while a second client,
started at 0.3 s, tries to connect (the crash needed a peer's disconnect or
connection attempt and the server's cleanup to meet).
The server and the first client must exit 0, the late one by itself (it may
find the server gone), never by a signal. Both are
unmodified pyverbs programs under tita-run.
"""
import os
import subprocess
import sys
import time

BUILD, WORK = sys.argv[1], sys.argv[2]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 24
TITA_RUN = os.path.join(BUILD, "apps", "tita-run")
PY = "/usr/bin/python3"
HOLD = ("import sys, time\n"
        "from pyverbs.device import Context\n"
        "c = Context(name='tita0')\n"
        "print('open', flush=True)\n"
        "sys.stdin.read() if sys.argv[1] == 'stdin' else time.sleep(float(sys.argv[1]))\n"
        "c.close()\n")

if subprocess.run([PY, "-c", "import pyverbs.device"], capture_output=True).returncode != 0:
    print("SKIP: pyverbs is not installed (Debian python3-pyverbs)")
    sys.exit(77)


def listening(sock):
    """Whether the memif server listens on its (abstract) socket."""
    with open("/proc/net/unix") as f:
        return any(line.rstrip().endswith("@" + sock) for line in f)


os.makedirs(WORK, exist_ok=True)
failures = []
env = dict(os.environ, TITA_LINK_WAIT_MS="0", TITA_PROGRESS="adaptive")
for r in range(ROUNDS):
    sock = os.path.join(WORK, f"t{r}.sock")
    srv = subprocess.Popen([TITA_RUN, "--vdev", f"net_memif0,role=server,socket={sock},id=0", "--ip", "10.0.0.1",
                            "--", PY, "-c", HOLD, "stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 60
    while not listening(sock) and srv.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    cli = subprocess.Popen([TITA_RUN, "--vdev", f"net_memif0,role=client,socket={sock},id=0", "--ip", "10.0.0.2",
                            "--", PY, "-c", HOLD, "0.3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    # The client's device is open (its memif connected or connecting) ...
    cli_out = cli.stdout.readline().decode(errors="replace")
    # ... and the server goes around the time the client does, while a second
    # client tries to connect to it.
    time.sleep(0.3)
    late = subprocess.Popen([TITA_RUN, "--vdev", f"net_memif0,role=client,socket={sock},id=0", "--ip", "10.0.0.3",
                             "--", PY, "-c", HOLD, "0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    time.sleep((r % 8) * 0.05)
    srv.stdin.close()
    if late.wait(timeout=120) < 0:  # it may find the server gone (an error exit); never a signal
        failures.append(f"round {r}: the late client died of signal {-late.returncode}")
    try:
        srv.wait(timeout=120)
    except subprocess.TimeoutExpired:
        srv.kill()
        srv.wait()
        failures.append(f"round {r}: the server did not exit")
        continue
    out = srv.stdout.read()
    cli_out += cli.communicate(timeout=120)[0].decode(errors="replace")
    if cli.returncode != 0:
        failures.append(f"round {r}: client exited {cli.returncode}: {cli_out[-300:]}")
    if srv.returncode != 0:
        why = f"signal {-srv.returncode}" if srv.returncode < 0 else f"status {srv.returncode}"
        failures.append(f"round {r}: server exited with {why}: {out.decode(errors='replace')[-300:]}")
    print(f"round {r}: server {srv.returncode}, client {cli.returncode}, late client {late.returncode}", flush=True)

for f in failures:
    print("FAIL:", f)
if failures:
    sys.exit(1)
print(f"OK: {ROUNDS} rounds, every exit 0")
