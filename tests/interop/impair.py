"""Impairments between tita and Linux Soft-RoCE: netem inside the rxe VM, on
the VM's data NIC in both directions (egress: a root netem; ingress: through
an ifb), and one perftest or ibv_rc_pingpong run under it, with what each side
sent counted.

Used by rxe_interop.py (group "impair", a bounded set in the test suite) and by
scripts/interop/impair-table.py (every scenario, the table in doc/interop.md).

A run's packet ratio is the data packets the data's sender put on the wire
(retransmissions included) over the packets the data needs (messages x their
packets at the path MTU): tita's own counters when tita sends the data (its
WRITEs and SENDs, its READ responses), rxe's hw_counters when rxe does.
"""
import os
import re
import subprocess
import tempfile
import time

import rxe_vm

BUILD = "build"  # the build directory holding apps/tita-run (set by the caller)

# Scenario -> the netem arguments applied each way. netem's limit (1000 packets
# by default) also drops; raised for the ones that hold packets back.
SCENARIOS = {
    "none": "",
    "loss 1%": "loss 1%",
    "loss 3%": "loss 3%",
    "loss 5%": "loss 5%",
    "reorder 25%": "delay 1ms reorder 25% 50%",
    "duplicate 2%": "duplicate 2%",
    "corrupt 1%": "corrupt 1%",
}
NETEM_LIMIT = 100000

TITA_IP, VM_IP = "10.0.0.1", "10.0.0.2"
HOST_FROM_VM = "10.0.2.2"
VDEV = "net_af_packet0,iface=tap0,qdisc_bypass=0,framecnt=4096"
MTU_PAYLOAD = 1024  # the path MTU both ends settle on over the 1500-byte tap
# tita's MAC, fixed, and a permanent neighbour entry for it in the VM: with
# ARP left to time out between runs, Debian 6.1's rxe frees a QP whose packets
# still wait on the failed neighbour entry (rxe_skb_tx_dtor, a kernel panic
# seen under loss here).
TITA_MAC = "02:00:0a:00:00:01"


def pin_neighbour(vm):
    vm.sh(f"ip neigh replace {TITA_IP} lladdr {TITA_MAC} dev {data_nic(vm)} nud permanent")


def data_nic(vm):
    return vm.run(["cat", "/run/tita-data-nic"])["out"].strip()


def set_netem(vm, spec):
    """netem `spec` on both directions of the VM's data NIC ('' clears)."""
    nic = data_nic(vm)
    script = (f"tc qdisc del dev {nic} root 2>/dev/null; tc qdisc del dev {nic} ingress 2>/dev/null; "
              f"ip link del tita-ifb 2>/dev/null; ")
    if spec:
        netem = f"netem limit {NETEM_LIMIT} {spec}"
        # A second `modprobe ifb` can leave no ifb0: the device is made by name.
        script += (f"tc qdisc add dev {nic} root {netem} && "
                   f"modprobe ifb numifbs=0 && (ip link show tita-ifb >/dev/null 2>&1 || "
                   f"ip link add tita-ifb type ifb) && ip link set tita-ifb up && "
                   f"tc qdisc add dev {nic} handle ffff: ingress && "
                   f"tc filter add dev {nic} parent ffff: matchall action mirred egress redirect dev tita-ifb && "
                   f"tc qdisc add dev tita-ifb root {netem}")
    r = vm.sh(script)
    if spec and r["rc"] != 0:
        raise RuntimeError(f"netem in the VM failed: {r['out']}")


def netem_stats(vm):
    """[(sent packets, dropped)] of the egress and the ingress netem."""
    nic = data_nic(vm)
    out = vm.sh(f"tc -s qdisc show dev {nic} root; tc -s qdisc show dev tita-ifb root 2>/dev/null")["out"]
    return [(int(s), int(d)) for s, d in re.findall(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out)]


def rxe_counters(vm):
    out = vm.sh("cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep . *")["out"]
    return {k: int(v) for k, v in re.findall(r"^(\w+):(\d+)$", out, re.M)}


def tita_qp_totals(text):
    """Sums of the per-QP lines tita-run logs at --log info when a QP is destroyed
    (lib/verbs/src/device.cc, Device::report_qp)."""
    keys = {"sent": r"sent (\d+) packets", "retransmitted": r"(\d+) retransmitted", "timeouts": r"(\d+) timeouts",
            "tail_probes": r"(\d+) tail probes", "received": r"received (\d+)", "duplicates": r"(\d+) duplicates",
            "out_of_order": r"(\d+) out of order", "rtt_samples": r"(\d+) RTT samples",
            "int_records": r"(\d+) INT records", "cnps_received": r"(\d+) CNPs received"}
    tot = dict.fromkeys(keys, 0)
    for line in text.splitlines():
        if "QP 0x" not in line:
            continue
        for k, pat in keys.items():
            m = re.search(pat, line)
            if m:
                tot[k] += int(m.group(1))
    return tot


def tita_cmd(argv, extra=()):
    return [os.path.join(BUILD, "apps", "tita-run"), "--vdev", VDEV, "--ip", TITA_IP, "--mac", TITA_MAC, "--progress", "adaptive", "--log", "info", *extra,
            "--", *argv]


def perftest_bw(report):
    rows = [l.split() for l in report.splitlines() if re.match(r"^\s*\d+\s+\d+\s+[\d.]+\s+[\d.]+", l)]
    return float(rows[-1][3]) if rows else None


# Once one side of a pair has exited, how long the other may take to follow.
# Both programs end within a second of each other unless the last ACK was
# lost after its receiver exited: the sender then retransmits its last
# message to a QP that is gone (rxe reads the retry_cnt of 7 that
# ibv_rc_pingpong and perftest set as "retry forever"), which no peer can
# answer (tita ends it after retry_cnt doubling timeouts: 17 s at
# perftest's timeout of 14). Waiting the whole timeout for that cost CI minutes.
FOLLOW_S = 45


def run_pair(vm, server_on_vm, vm_argv, tita_argv, timeout, extra=()):
    """One program pair: the server side first. Returns (tita rc, tita output, vm rc, vm output);
    an rc is "timeout" when the program was still running at `timeout`, or
    FOLLOW_S after the other side exited."""
    log = tempfile.TemporaryFile()
    if server_on_vm:
        pid = vm.spawn(vm_argv)
        time.sleep(3)
        p = subprocess.Popen(tita_cmd(tita_argv, extra), stdout=log, stderr=subprocess.STDOUT)
    else:
        p = subprocess.Popen(tita_cmd(tita_argv, extra), stdout=log, stderr=subprocess.STDOUT)
        time.sleep(3)
        pid = vm.spawn(vm_argv)
    deadline = time.time() + timeout
    trc = vrc = None
    vout = ""
    first_exit = None
    while trc is None or vrc is None:
        if trc is None:
            trc = p.poll()
        if vrc is None:
            v = vm.call({"op": "wait", "id": pid, "timeout": 1})
            if v.get("rc") is not None:
                vrc, vout = v["rc"], v["out"]
        now = time.time()
        if first_exit is None and (trc is not None or vrc is not None):
            first_exit = now
        if now > deadline or (first_exit is not None and now - first_exit > FOLLOW_S):
            break
        if trc is None and vrc is not None:
            time.sleep(0.5)
    if trc is None:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        trc = "timeout"
    if vrc is None:
        vout = vm.call({"op": "kill", "id": pid}).get("out", "")
        vrc = "timeout"
    log.seek(0)
    return trc, log.read().decode(errors="replace"), vrc, vout


OPS = {  # perftest program, what the client's peer sends back
    "READ": "ib_read_bw", "WRITE": "ib_write_bw", "SEND": "ib_send_bw", "ATOMIC": "ib_atomic_bw",
}


def run_case(vm, op, client, size=1 << 20, iters=20, outstanding=16, port=18550, timeout=150, extra=()):
    """One perftest run (op in OPS, client 'tita' or 'rxe') under whatever netem is set.

    Returns a dict: ok, rc of both, seconds, MB/s, needed and sent data packets
    and their ratio, the data sender's retransmissions and timeouts, rxe's
    error counters."""
    prog = OPS[op]
    opts = ["-n", str(iters), "-F"]
    if op != "ATOMIC":
        opts += ["-s", str(size)]
    opts += ["-o", str(outstanding)] if op in ("READ", "ATOMIC") else ["-t", str(outstanding)]
    before = rxe_counters(vm)
    t0 = time.time()
    if client == "tita":
        p = ["-p", str(port)]
        trc, tout, vrc, vout = run_pair(vm, True, [prog, "-d", "rxe0", "-x", "1", *opts, *p],
                                        [prog, "-d", "tita0", "-x", "0", *opts, *p, "127.0.0.1"], timeout, extra)
        report = tout
    else:
        p = ["-p", str(port + rxe_vm.TITA_SIDE)]
        trc, tout, vrc, vout = run_pair(vm, False, [prog, "-d", "rxe0", "-x", "1", *opts, *p, HOST_FROM_VM],
                                        [prog, "-d", "tita0", "-x", "0", *opts, *p], timeout, extra)
        report = vout
    seconds = time.time() - t0
    after = rxe_counters(vm)
    rxe = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    tita = tita_qp_totals(tout)
    pkts = 1 if op == "ATOMIC" else max(1, -(-size // MTU_PAYLOAD))
    # perftest runs its iterations plus up to tx-depth warm-up messages; the
    # data sender's total is read against the messages it was asked for.
    needed = pkts * iters
    # Who puts the data on the wire: the client for WRITE and SEND, the
    # server for READ (responses) and ATOMIC (its acknowledgements).
    tita_sends_data = (client == "tita") == (op in ("WRITE", "SEND"))
    if tita_sends_data:
        sent = tita["sent"]
    else:
        sent = rxe.get("sent_pkts", 0)
    return {
        "op": op, "client": client, "ok": trc == 0 and vrc == 0, "tita_rc": trc, "rxe_rc": vrc,
        "seconds": round(seconds, 1), "mb_s": perftest_bw(report), "needed": needed, "sent": sent,
        "ratio": round(sent / needed, 2) if needed else None, "tita": tita,
        "rxe": {k: rxe.get(k, 0) for k in ("sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request",
                                           "rcvd_seq_err", "completer_retry_err", "retry_exceeded_err")},
        "tail_tita": "\n".join(tout.strip().splitlines()[-4:]), "tail_rxe": "\n".join((vout or "").strip().splitlines()[-4:]),
    }


def pingpong_check(vm, client, size=65536, iters=50, port=18549, timeout=150):
    """ibv_rc_pingpong -c (receive data validated) under whatever netem is set.

    ibv_rc_pingpong has no closing handshake: each side exits once its last
    message is acknowledged and the peer's last one received. Under loss the
    ACK of the last message can be lost after its receiver exited: then the
    sender is left with that one message and nobody to answer it (rxe
    retransmits it forever, tita ends it in IBV_WC_RETRY_EXC_ERR). Any two
    RC implementations do that; it says nothing of the transfer. A run that
    ends so (one side exited 0 after all its iterations, the other holds only
    its last message) is run again, up to twice, and reported as
    `teardown_races` (at 3% loss each way, 1 run in 29 ended so on 2026-12-07:
    the rate of one lost ACK; two in a row were seen once in CI)."""
    opts = ["-s", str(size), "-n", str(iters), "-c"]
    races = 0
    tries = 3
    for attempt in range(tries):
        before = rxe_counters(vm)
        if client == "tita":
            p = ["-p", str(port)]
            trc, tout, vrc, vout = run_pair(vm, True, ["ibv_rc_pingpong", "-d", "rxe0", "-g", "1", *opts, *p],
                                            ["ibv_rc_pingpong", "-d", "tita0", "-g", "0", *opts, *p, "127.0.0.1"],
                                            timeout)
        else:
            p = ["-p", str(port + rxe_vm.TITA_SIDE)]
            trc, tout, vrc, vout = run_pair(vm, False,
                                            ["ibv_rc_pingpong", "-d", "rxe0", "-g", "1", *opts, *p, HOST_FROM_VM],
                                            ["ibv_rc_pingpong", "-d", "tita0", "-g", "0", *opts, *p], timeout)
        retries = rxe_counters(vm).get("completer_retry_err", 0) - before.get("completer_retry_err", 0)
        ok = trc == 0 and vrc == 0
        if ok or not teardown_race(trc, tout, vrc, vout, iters):
            break
        races += 1
        print(f"ibv_rc_pingpong {client} client: the last ACK was lost after its receiver exited (tita rc {trc}, "
              f"rxe rc {vrc}, rxe retried {retries} times)" + ("; once more" if attempt + 1 < tries else ""),
              flush=True)
    return {"ok": ok, "tita_rc": trc, "rxe_rc": vrc, "teardown_races": races,
            "tail_tita": "\n".join(tout.strip().splitlines()[-3:]),
            "tail_rxe": "\n".join((vout or "").strip().splitlines()[-3:])}


def teardown_race(trc, tout, vrc, vout, iters):
    """One side finished every iteration and exited 0; the other was left
    with its last message unacknowledged: rxe still retransmitting it, or
    tita's QP out of retries on it."""
    done = f"{iters} iters in"
    if trc == 0 and done in tout:
        return vrc == "timeout"
    if vrc == 0 and done in (vout or ""):
        return trc != 0 and "retry count exceeded" in tout
    return False
