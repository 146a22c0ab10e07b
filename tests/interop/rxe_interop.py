#!/usr/bin/env python3
"""tita against Linux Soft-RoCE (rdma_rxe in a qemu VM with Debian's kernel),
unmodified programs on both sides: tita's through tita-run, the VM's native.

  rxe_interop.py BUILD_DIR WORK_DIR [GROUP ...]
      GROUP: pingpong ud perftest rdmacm data loss cc impair (default: all)

pingpong  ibv_rc_pingpong 64 B to 1 MiB, tita client / rxe server and the reverse
ud        ibv_ud_pingpong 1 B to the MTU (1024 B), with and without events, both ways:
          UD datagrams, address handles and the GRH area between tita and rxe
perftest  ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw, both ways
rdmacm    rping -V, ucmatose and udaddy both ways, ib_write_bw/ib_send_lat -R rxe to tita:
          tita's CM (QP 1) against Linux's rdma_cm
data      the data-checking peers: verbs_check (C, over tita) against verbs_peer.py
          (pyverbs, in the VM), each role on each side: every opcode's bytes
          compared at both ends, atomics under contention
loss      the data checks again with 1% and 3% loss each way (netem in the VM,
          egress and, through an ifb, ingress): complete, intact, no retry
          exhaustion
cc        every congestion control of tita writing to rxe, which echoes no tita
          telemetry and drops CNPs: each must finish at a sane rate, none stall
impair    1 MiB READ, WRITE, SEND and atomics, 16
          outstanding, 16 iterations, under 3% loss, reordering alone and 1%
          corruption each way (tests/interop/impair.py), tita the client and
          rxe the client of each (rxe's READs and its requests under
          reordering, and tita's SENDs under reordering, 5 outstanding and 5
          iterations: case_depth), and ibv_rc_pingpong -c both ways
          under each: every run completes (a pingpong left with its last
          ACK lost after the peer exited runs once more: impair.py), tita as requester sends (or, for
          READs, has rxe send) at most 4x the packets needed, and netem's
          counters show the impairment on both qdiscs

Exits 77 (skipped, with the reason) only where the VM cannot run: not root, or
qemu/debootstrap missing. Figures go to WORK_DIR/results.json.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import impair  # noqa: E402
import rxe_vm  # noqa: E402

BUILD, WORK = sys.argv[1], sys.argv[2]
GROUPS = sys.argv[3:] or ["pingpong", "ud", "perftest", "rdmacm", "data", "loss", "cc", "impair"]
TITA_RUN = os.path.join(BUILD, "apps", "tita-run")
VERBS_CHECK = os.path.join(BUILD, "tests", "verbs", "verbs_check")
TITA_IP, VM_IP = "10.0.0.1", "10.0.0.2"
VDEV = "net_af_packet0,iface=tap0,qdisc_bypass=0,framecnt=4096"
HOST_FROM_VM = "10.0.2.2"  # the namespace's loopback, seen from the VM

failures = []
results = {}


def fail(msg):
    print("FAIL:", msg, flush=True)
    failures.append(msg)


def tita(argv, extra=()):
    return [TITA_RUN, "--vdev", VDEV, "--ip", TITA_IP, "--progress", "adaptive", *extra, "--", *argv]


def host(argv, timeout=180, extra=()):
    try:
        r = subprocess.run(tita(argv, extra), capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        return "timeout", (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else str(e.stdout)


def vm_server_tita_client(vm, name, vm_argv, tita_argv, settle=3, timeout=180, extra=()):
    """The VM's program listens; tita's connects to it through the forwarded port."""
    pid = vm.spawn(vm_argv)
    time.sleep(settle)
    rc, out = host(tita_argv, timeout, extra)
    v = vm.wait(pid, timeout)
    ok = rc == 0 and v["rc"] == 0
    if not ok:
        fail(f"{name}: tita rc {rc}, rxe rc {v['rc']}\n  tita: {tail(out)}\n  rxe: {tail(v['out'])}")
    return ok, out, v["out"]


def tita_server_vm_client(vm, name, tita_argv, vm_argv, settle=3, timeout=180, extra=()):
    """tita's program listens in the namespace; the VM's connects to 10.0.2.2
    (on a port qemu does not forward, rxe_vm.TITA_SIDE above the VM's)."""
    p = subprocess.Popen(tita(tita_argv, extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(settle)
    v = vm.run(vm_argv, timeout)
    try:
        out, _ = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        rc = "timeout"
    ok = rc == 0 and v["rc"] == 0
    if not ok:
        fail(f"{name}: tita rc {rc}, rxe rc {v['rc']}\n  tita: {tail(out)}\n  rxe: {tail(v['out'])}")
    return ok, out, v["out"]


def tail(text, n=6):
    return "\n    ".join((text or "").strip().splitlines()[-n:])


def bw_of(text):
    """perftest's BW average column (the 4th number of its last result row)."""
    rows = [l.split() for l in text.splitlines() if re.match(r"^\s*\d+\s+\d+\s+[\d.]+\s+[\d.]+", l)]
    return float(rows[-1][3]) if rows else None


# ---------------------------------------------------------------- groups

def pingpong(vm):
    port = 18500
    for size, iters in ((64, 500), (4096, 300), (65536, 100), (1048576, 20)):
        opts = ["-s", str(size), "-n", str(iters)]
        for direction in ("tita->rxe", "rxe->tita"):
            port += 1
            p = ["-p", str(port if direction == "tita->rxe" else port + rxe_vm.TITA_SIDE)]
            name = f"ibv_rc_pingpong {size} B, {direction}"
            if direction == "tita->rxe":
                ok, out, vout = vm_server_tita_client(vm, name, ["ibv_rc_pingpong", "-d", "rxe0", "-g", "1", *opts, *p],
                                                      ["ibv_rc_pingpong", "-d", "tita0", "-g", "0", *opts, *p,
                                                       "127.0.0.1"])
            else:
                ok, out, vout = tita_server_vm_client(vm, name, ["ibv_rc_pingpong", "-d", "tita0", "-g", "0", *opts, *p],
                                                      ["ibv_rc_pingpong", "-d", "rxe0", "-g", "1", *opts, *p,
                                                       HOST_FROM_VM])
            m = re.search(r"= ([\d.]+) usec/iter", out)
            if ok and m is None:
                fail(f"{name}: no result line")
            elif m:
                results[name] = f"{m.group(1)} usec/iter"
                print(f"{name}: {m.group(1)} usec/iter", flush=True)


def ud(vm):
    port = 18530  # rxe_vm.FORWARDED (reused: servers exit after each run)
    for opts in (["-s", "1", "-n", "500"], ["-s", "1024", "-n", "500"], ["-e", "-s", "512", "-n", "200"]):
        for direction in ("tita->rxe", "rxe->tita"):
            port += 1
            p = ["-p", str(port if direction == "tita->rxe" else port + rxe_vm.TITA_SIDE)]
            name = f"ibv_ud_pingpong {' '.join(opts)}, {direction}"
            if direction == "tita->rxe":
                ok, out, vout = vm_server_tita_client(vm, name, ["ibv_ud_pingpong", "-d", "rxe0", "-g", "1", *opts, *p],
                                                      ["ibv_ud_pingpong", "-d", "tita0", "-g", "0", *opts, *p,
                                                       "127.0.0.1"])
            else:
                ok, out, vout = tita_server_vm_client(vm, name, ["ibv_ud_pingpong", "-d", "tita0", "-g", "0", *opts, *p],
                                                      ["ibv_ud_pingpong", "-d", "rxe0", "-g", "1", *opts, *p,
                                                       HOST_FROM_VM])
            m = re.search(r"(\d+) iters in [\d.]+ seconds = ([\d.]+) usec/iter", out)
            if ok and (m is None or m.group(1) != opts[opts.index("-n") + 1]):
                fail(f"{name}: no result line with every iteration")
            elif m:
                results[name] = f"{m.group(2)} usec/iter"
                print(f"{name}: {m.group(2)} usec/iter", flush=True)


def perftest(vm):
    port = 18510
    tests = [("ib_write_bw", ["-s", "65536", "-n", "300"]), ("ib_read_bw", ["-s", "65536", "-n", "300"]),
             ("ib_send_bw", ["-s", "4096", "-n", "1000"]), ("ib_atomic_bw", ["-n", "1000"])]
    for prog, opts in tests:
        for direction in ("tita->rxe", "rxe->tita"):
            port += 1
            common = [*opts, "-F", "-p", str(port if direction == "tita->rxe" else port + rxe_vm.TITA_SIDE)]
            name = f"{prog} {' '.join(opts)}, {direction} (client->server)"
            if direction == "tita->rxe":
                ok, out, vout = vm_server_tita_client(vm, name, [prog, "-d", "rxe0", "-x", "1", *common],
                                                      [prog, "-d", "tita0", "-x", "0", *common, "127.0.0.1"])
                report = out
            else:
                ok, out, vout = tita_server_vm_client(vm, name, [prog, "-d", "tita0", "-x", "0", *common],
                                                      [prog, "-d", "rxe0", "-x", "1", *common, HOST_FROM_VM])
                report = vout
            bw = bw_of(report)
            if ok and not bw and bw_of(out if report is vout else vout):
                # perftest in the TCG VM now and then times its run from a TSC
                # it misreads and prints 0.00 where both sides completed every
                # message: the other side's figure, said so.
                bw = bw_of(out if report is vout else vout)
                print(f"{name}: the client printed 0.00 MB/s (both exited 0); the server's figure:", flush=True)
            if ok and not bw:
                fail(f"{name}: no bandwidth reported:\n    {tail(report)}")
            elif bw:
                results[name] = f"{bw} MB/s"
                print(f"{name}: {bw} MB/s", flush=True)


def data(vm, tag="", sizes_max=1 << 20, timeout=300, port=18540, extra=()):
    """Both pairings; returns tita's output (both runs) for its counters."""
    peer = ["python3", "/usr/local/bin/verbs_peer.py", "--device", "rxe0", "--gid", "1", "--sizes-max", str(sizes_max)]
    check = [VERBS_CHECK, "--device", "tita0", "--sizes-max", str(sizes_max)]
    vm_port, tita_port = ["--port", str(port)], ["--port", str(port + rxe_vm.TITA_SIDE)]
    outs = []
    for name, run in ((f"data{tag}: tita (verbs_check) client -> rxe (pyverbs) server",
                       lambda n: vm_server_tita_client(vm, n, peer + vm_port + ["--server"],
                                                       check + vm_port + ["--client", "127.0.0.1"],
                                                       settle=4, timeout=timeout, extra=extra)),
                      (f"data{tag}: rxe (pyverbs) client -> tita (verbs_check) server",
                       lambda n: tita_server_vm_client(vm, n, check + tita_port + ["--server"],
                                                       peer + tita_port + ["--client", HOST_FROM_VM],
                                                       settle=3, timeout=timeout, extra=extra))):
        ok, out, vout = run(name)
        outs.append(out)
        for line in (out + vout).splitlines():
            if line.startswith("verbs_") or line.startswith("FAIL"):
                print(f"  {line}")
    return "\n".join(outs)


def netem(vm, loss_pct):
    nic = vm.run(["cat", "/run/tita-data-nic"])["out"].strip()
    script = (f"tc qdisc del dev {nic} root 2>/dev/null; tc qdisc del dev {nic} ingress 2>/dev/null; "
              f"ip link del tita-ifb 2>/dev/null; ")
    if loss_pct > 0:
        script += (f"tc qdisc add dev {nic} root netem loss {loss_pct}% && "
                   f"modprobe ifb numifbs=0 && ip link add tita-ifb type ifb && ip link set tita-ifb up && "
                   f"tc qdisc add dev {nic} handle ffff: ingress && "
                   f"tc filter add dev {nic} parent ffff: matchall action mirred egress redirect dev tita-ifb && "
                   f"tc qdisc add dev tita-ifb root netem loss {loss_pct}%")
    r = vm.sh(script)
    if loss_pct > 0 and r["rc"] != 0:
        raise RuntimeError(f"netem in the VM failed: {r['out']}")


def netem_drops(vm):
    nic = vm.run(["cat", "/run/tita-data-nic"])["out"].strip()
    out = vm.sh(f"tc -s qdisc show dev {nic} root; tc -s qdisc show dev tita-ifb root")["out"]
    return [int(n) for n in re.findall(r"dropped (\d+)", out)]


def loss(vm):
    for pct in (1, 3):
        netem(vm, pct)
        t0 = time.time()
        out = data(vm, tag=f" {pct}% loss each way", sizes_max=262144, timeout=600, port=18540 + pct,
                   extra=("--log", "info"))
        drops, tot = netem_drops(vm), impair.tita_qp_totals(out)
        print(f"  netem dropped {drops} (egress, ingress); tita: {tot}", flush=True)
        if len(drops) != 2 or min(drops) == 0:
            fail(f"{pct}% loss: netem dropped {drops}: the loss was not applied both ways")
        if tot["retransmitted"] == 0:
            fail(f"{pct}% loss: tita retransmitted nothing")
        results[f"data under {pct}% loss each way"] = (f"{time.time() - t0:.0f} s, netem dropped {sum(drops)}, "
                                                        f"tita retransmitted {tot['retransmitted']} packets "
                                                        f"({tot['timeouts']} timeouts)")
    netem(vm, 0)


def cc(vm):
    port = 18520
    for algo in ("none", "dcqcn", "timely", "hpcc", "swift", "powertcp", "nscc", "tita"):
        port += 1
        common = ["-s", "65536", "-n", "300", "-F", "-p", str(port)]
        name = f"cc {algo}: ib_write_bw tita -> rxe"
        ok, out, vout = vm_server_tita_client(vm, name, ["ib_write_bw", "-d", "rxe0", "-x", "1", *common],
                                              ["ib_write_bw", "-d", "tita0", "-x", "0", *common, "127.0.0.1"],
                                              extra=("--cc", algo, "--rate-gbps", "10", "--base-rtt-us", "1000",
                                                     "--log", "info"), timeout=240)
        tot = impair.tita_qp_totals(out)
        sent, retx, samples = tot["sent"], tot["retransmitted"], tot["rtt_samples"]
        bw = bw_of(out)
        if ok and not bw:
            fail(f"{name}: no bandwidth reported")
        elif bw is not None:
            results[name] = f"{bw} MB/s, {retx} of {sent} packets retransmitted, {samples} RTT samples"
            print(f"{name}: {results[name]}", flush=True)
            if bw < 1.0:
                fail(f"{name}: {bw} MB/s: the algorithm starved without tita's feedback")
            if ok and samples == 0:
                fail(f"{name}: no RTT sample: rxe echoes no timestamp, the requester's own probes give them")


IMPAIR_SCENARIOS = ("loss 3%", "reorder 25%", "corrupt 1%")
IMPAIR_ITERS = 16  # perftest iterations per run (no fewer than the 16 outstanding)
# Issue 29's goal is 3x at 3% loss; measured 1.0x-1.7x in every scenario here
# since the loss window starts small for a peer not known to be tita and the
# tail-loss probe (doc/interop.md). 4x leaves room for a slower VM (the CI
# machine once gave twice this machine's ratios) and still catches a storm
# (20x-300x before the loss window, 11x with no netem before slow start).
MAX_RATIO = 4.0


# The cells whose requester goes back to the first missing packet and asks
# again for everything after it (rxe: 7x-33x the packets, as against rxe:
# doc/interop.md, "rxe against rxe") take 45-100 s each at 16 outstanding
# here; tita's SEND under reordering 38 s. They run with SHORT_DEPTH
# outstanding and as many iterations, which keeps the CI run in its time and
# still has several READs (or messages) in flight on every gap;
# scripts/interop/impair-table.py measures every cell at 16.
SHORT_DEPTH = 5  # perftest takes no fewer than 5 iterations


def case_depth(scenario, op, client):
    """Outstanding operations (and iterations) of one cell: rxe's READs from
    tita, rxe's requests under reordering and tita's SENDs under reordering
    are the short ones."""
    reorder = scenario.startswith("reorder")
    if client == "rxe" and (op == "READ" or reorder):
        return SHORT_DEPTH
    if client == "tita" and op == "SEND" and reorder:
        return SHORT_DEPTH
    return IMPAIR_ITERS


def impair_group(vm):
    impair.BUILD = BUILD
    impair.pin_neighbour(vm)
    port = 18500  # rxe_vm.FORWARDED: 18500-18559 (servers exit after each run, so other groups reuse them too)
    for scenario in IMPAIR_SCENARIOS:
        impair.set_netem(vm, impair.SCENARIOS[scenario])
        for op in ("READ", "WRITE", "SEND", "ATOMIC"):
            for client in ("tita", "rxe"):
                port += 1
                depth = case_depth(scenario, op, client)
                name = f"impair {scenario}: {op} {client} client" + (f", {depth} outstanding" if depth != IMPAIR_ITERS
                                                                     else "")
                r = impair.run_case(vm, op, client, iters=depth, outstanding=depth, port=port, timeout=240)
                netem = impair.netem_stats(vm)
                t = r["tita"]
                results[name] = (f"ok {r['ok']}, {r['seconds']} s, ratio {r['ratio']}, {r['mb_s']} MB/s, "
                                 f"tita {t['retransmitted']} retransmitted, {t['timeouts']} timeouts; netem {netem}")
                print(f"{name}: {results[name]}", flush=True)
                if not r["ok"]:
                    fail(f"{name}: tita rc {r['tita_rc']}, rxe rc {r['rxe_rc']}\n  tita: {r['tail_tita']}\n"
                         f"  rxe: {r['tail_rxe']}")
                    continue
                # tita as the requester: its WRITEs and SENDs, or the responses
                # its READs made rxe send.
                if client == "tita" and op != "ATOMIC" and (r["ratio"] or 0) > MAX_RATIO:
                    fail(f"{name}: {r['ratio']}x the packets needed (at most {MAX_RATIO}x)")
                if len(netem) != 2 or min(n for n, _ in netem) == 0:
                    fail(f"{name}: netem saw {netem}: not applied both ways")
                elif scenario.startswith("loss") and min(d for _, d in netem) == 0:
                    fail(f"{name}: netem dropped {netem}: the loss was not applied both ways")
        for client in ("tita", "rxe"):
            port += 1
            r = impair.pingpong_check(vm, client, port=port, timeout=240)
            name = f"impair {scenario}: ibv_rc_pingpong -c {client} client"
            results[name] = ("ok" if r["ok"] else "FAIL") + (f" (run again after {r['teardown_races']} lost "
                                                              "last ACK)" if r["teardown_races"] else "")
            if not r["ok"]:
                fail(f"{name}: tita rc {r['tita_rc']}, rxe rc {r['rxe_rc']}\n  tita: {r['tail_tita']}\n"
                     f"  rxe: {r['tail_rxe']}")
    impair.set_netem(vm, "")


def rdmacm(vm):
    """librdmacm programs between tita's CM (tita-run) and Linux's rdma_cm on
    rxe0, both ways: the CM's REQ/REP/RTU/DREQ/DREP MADs on QP 1 must be what
    the kernel's CM accepts and sends. rping moves and verifies (-V) 20 pings of
    4 KiB with RDMA READ and WRITE, ucmatose runs two connections at once (both
    ways), udaddy resolves two UD QPs by SIDR_REQ/SIDR_REP and exchanges 20
    datagrams each way on each; ib_write_bw -R and ib_send_lat -R (rxe the client: see below) connect
    their QPs through the CMs. No TCP side channel: everything goes over RoCE."""
    rping_s = ["rping", "-s", "-C", "20", "-S", "4096", "-V"]
    rping_c = ["rping", "-c", "-C", "20", "-S", "4096", "-V", "-v"]
    cases = [
        ("rping", rping_s, rping_c),
        ("ucmatose", ["ucmatose", "-c", "2", "-C", "20"], ["ucmatose", "-c", "2", "-C", "20"]),
        ("udaddy", ["udaddy", "-c", "2", "-C", "20", "-S", "512"], ["udaddy", "-c", "2", "-C", "20", "-S", "512"]),
        ("ib_write_bw -R", ["ib_write_bw", "-R", "-s", "65536", "-n", "300"],
         ["ib_write_bw", "-R", "-s", "65536", "-n", "300"]),
        ("ib_send_lat -R", ["ib_send_lat", "-R", "-n", "500"], ["ib_send_lat", "-R", "-n", "500"]),
    ]
    # How each program names the address: rping -a (both roles), ucmatose -s
    # (the client: the server's), perftest the device and the server's address.
    def srv_args(prog, ip, dev):
        return ["-a", ip] if prog == "rping" else [] if prog in ("ucmatose", "udaddy") else ["-d", dev]

    def cli_args(prog, ip, dev):
        return ["-a", ip] if prog == "rping" else ["-s", ip] if prog in ("ucmatose", "udaddy") else ["-d", dev, ip]

    def verdict(name, who, rc, out):
        # rping's server may end 255 when its CM thread asks for an event after
        # the main thread closed the channel (tests/verbs/run_verbs.py).
        lines = [l for l in (out or "").strip().splitlines() if not l.startswith("tita:")]
        race = rc == 255 and "server DISCONNECT EVENT" in (out or "") and lines and \
            lines[-1].strip() == "rdma_get_cm_event: Bad file descriptor"
        if rc != 0 and not race:
            fail(f"{name}: {who} exited {rc}\n    {tail(out)}")
            return False
        return True

    for name, srv, cli in cases:
        # rxe serves, tita connects. Not perftest: -R connects twice (its
        # control channel, then the data QPs), and Debian 12's server listens
        # for the second only after its last control message, which tita's
        # client answers with the REQ 0.5 ms later, before the emulated VM's
        # server listens: a REJ (invalid service ID), as a kernel client that
        # quick would get (perftest 24.x retries the connect for this race).
        label = f"{name}, tita->rxe"
        if not srv[0].startswith("ib_"):
            pid = vm.spawn(srv + srv_args(srv[0], VM_IP, "rxe0"))
            time.sleep(3)
            rc, out = host(cli + cli_args(cli[0], VM_IP, "tita0"), timeout=120)
            v = vm.wait(pid, 120)
            ok = verdict(label, "tita (client)", rc, out) & verdict(label, "rxe (server)", v["rc"], v["out"])
            report(label, ok, out, cli)
        # tita serves, rxe connects.
        label = f"{name}, rxe->tita"
        tita_srv = srv + srv_args(srv[0], TITA_IP, "tita0")
        vm_cli = cli + cli_args(cli[0], TITA_IP, "rxe0")
        p = subprocess.Popen(tita(tita_srv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(3)
        v = vm.run(vm_cli, 120)
        try:
            sout, _ = p.communicate(timeout=120)
            src = p.returncode
        except subprocess.TimeoutExpired:
            p.kill()
            sout, _ = p.communicate()
            src = "timeout"
        ok = verdict(label, "rxe (client)", v["rc"], v["out"]) & verdict(label, "tita (server)", src, sout)
        report(label, ok, v["out"], cli)


def report(label, ok, client_out, cli):
    """The client's figure: pings verified, MB/s or typical latency."""
    if not ok:
        return
    if cli[0] == "rping":
        n = len(re.findall(r"^ping data: rdma-ping-\d+", client_out, re.M))
        if n != 20:
            fail(f"{label}: the client verified {n} of 20 pings")
            return
        results[label] = "20 pings verified"
    elif cli[0] == "ucmatose":
        if "test complete" not in client_out:
            fail(f"{label}: ucmatose did not complete its test")
            return
        results[label] = "2 connections, 20 messages each way"
    elif cli[0] == "udaddy":
        if "data transfers complete" not in client_out or "return status 0" not in client_out:
            fail(f"{label}: udaddy did not complete its transfers")
            return
        results[label] = "2 UD ids by SIDR, 20 datagrams each way"
    elif "bw" in cli[0]:
        bw = bw_of(client_out)
        if bw is None:
            fail(f"{label}: no result row")
            return
        results[label] = f"{bw} MB/s"
    else:
        m = re.search(r"^\s*\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+([\d.]+)", client_out, re.M)
        if m is None:
            fail(f"{label}: no result row")
            return
        results[label] = f"{m.group(1)} us typical"
    print(f"{label}: {results[label]}", flush=True)


def main():
    why = rxe_vm.qemu_missing()
    if why:
        print(f"SKIP: the Soft-RoCE VM cannot run here: {why}")
        return 77
    os.makedirs(WORK, exist_ok=True)
    with open(os.path.join(WORK, "build-image.log"), "w") as log:
        t0 = time.time()
        image = rxe_vm.build_image(log)
    print(f"VM image: {image} ({time.time() - t0:.0f} s)", flush=True)
    ns = rxe_vm.Namespace("tita-rxe")
    vm = None
    try:
        ns.enter()
        t0 = time.time()
        vm = rxe_vm.Vm(ns, image, WORK, vm_ip=VM_IP + "/24")
        vm.wait_ready()
        print(f"VM up in {time.time() - t0:.0f} s: " + vm.run(["rdma", "link"])["out"].strip(), flush=True)
        for g in GROUPS:
            t0 = time.time()
            print(f"== {g}", flush=True)
            {"pingpong": pingpong, "ud": ud, "perftest": perftest, "data": data, "loss": loss, "cc": cc,
             "impair": impair_group, "rdmacm": rdmacm}[g](vm)
            results[f"group {g} seconds"] = round(time.time() - t0)
    finally:
        if vm is not None:
            vm.close()
        ns.close()
    with open(os.path.join(WORK, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    if failures:
        # Again at the end, where a truncated log still shows them.
        print(f"{len(failures)} failure(s):")
        for f in failures:
            print("  " + f.splitlines()[0])
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
