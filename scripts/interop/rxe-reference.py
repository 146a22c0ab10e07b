#!/usr/bin/env python3
"""Linux Soft-RoCE talking to itself under the same hostile network, the
yardstick for tita's figures against rxe (doc/interop.md, "rxe against rxe").

Two VMs of scripts/rxe-vm (Debian's kernel, rdma_rxe), their data NICs joined
by a qemu socket link (no host kernel support needed), netem on VM A's data
NIC in both directions exactly as tests/interop/impair.py applies it against
tita. perftest 1 MiB with 16 outstanding, VM A the server and VM B the client,
and the packet ratio from the data sender's rxe hw_counters (sent_pkts over
the packets the data needs at the path MTU), as impair.py counts rxe's side.

  scripts/interop/rxe-reference.py OUT.json [--scenarios 'none,loss 3%']
      [--ops READ,WRITE,SEND] [--iters 16] [--timeout 300]

Needs root and the VM image (scripts/rxe-vm/build-image.sh, built on first
use). Both VMs are TCG guests on this machine's cores: the rates say what
this machine does, the ratios what rxe does.
"""
import argparse
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "tests", "interop"))
import impair  # noqa: E402
import rxe_vm  # noqa: E402

A_IP, B_IP = "10.0.0.2", "10.0.0.3"
LINK_PORT = 7210  # the socket link between the two VMs' data NICs
B_AGENT = 7101
B_MAC = "52:54:00:00:00:03"


def run_case(a, b, op, iters, timeout, port):
    prog = impair.OPS[op]
    opts = ["-n", str(iters), "-F", "-d", "rxe0", "-x", "1", "-p", str(port)]
    if op != "ATOMIC":
        opts += ["-s", str(1 << 20)]
    opts += ["-o", "16"] if op in ("READ", "ATOMIC") else ["-t", "16"]
    before = {"a": impair.rxe_counters(a), "b": impair.rxe_counters(b)}
    t0 = time.time()
    sid = a.spawn([prog, *opts])
    time.sleep(3)
    cid = b.spawn([prog, *opts, A_IP])
    c = b.wait(cid, timeout)
    s = a.wait(sid, 60 if c["rc"] != "timeout" else 5)
    seconds = time.time() - t0
    after = {"a": impair.rxe_counters(a), "b": impair.rxe_counters(b)}
    delta = {vm: {k: after[vm].get(k, 0) - before[vm].get(k, 0) for k in after[vm]} for vm in after}
    # The data's sender: the client (B) for WRITE and SEND, the server (A) for READ.
    sender = delta["a"] if op in ("READ", "ATOMIC") else delta["b"]
    needed = iters * (1 if op == "ATOMIC" else (1 << 20) // impair.MTU_PAYLOAD)
    return {"op": op, "ok": c["rc"] == 0 and s["rc"] == 0, "client_rc": c["rc"], "server_rc": s["rc"],
            "seconds": round(seconds, 1), "mb_s": impair.perftest_bw(c.get("out", "")), "needed": needed,
            "sent": sender.get("sent_pkts", 0), "ratio": round(sender.get("sent_pkts", 0) / needed, 2),
            "requester": {k: delta["b"].get(k, 0) for k in ("completer_retry_err", "retry_exceeded_err",
                                                            "rcvd_seq_err", "sent_pkts")},
            "responder": {k: delta["a"].get(k, 0) for k in ("duplicate_request", "out_of_seq_request", "sent_pkts")},
            "tail": "\n".join((c.get("out") or "").strip().splitlines()[-3:])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--scenarios", default="none,loss 3%,reorder 25%,corrupt 1%")
    ap.add_argument("--ops", default="READ,WRITE,SEND")
    ap.add_argument("--iters", type=int, default=16)
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args()
    why = rxe_vm.qemu_missing()
    if why:
        print(f"rxe-reference: {why}", file=sys.stderr)
        return 2
    scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    for s in scenarios:
        if s not in impair.SCENARIOS:
            print(f"rxe-reference: unknown scenario '{s}' (known: {', '.join(impair.SCENARIOS)})", file=sys.stderr)
            return 2
    work = os.path.join(os.path.dirname(os.path.abspath(args.out)) or ".", "rxe-reference-work")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "build-image.log"), "w") as log:
        image = rxe_vm.build_image(log)
    ns = rxe_vm.Namespace("tita-rxe-ref")
    vms = []
    runs = []
    try:
        ns.enter()
        a = rxe_vm.Vm(ns, image, work, vm_ip=A_IP + "/24", name="vm-a",
                      data_netdev=f"socket,listen=127.0.0.1:{LINK_PORT}")
        vms.append(a)
        time.sleep(1)
        b = rxe_vm.Vm(ns, image, work, vm_ip=B_IP + "/24", name="vm-b", agent_port=B_AGENT, forwarded=[],
                      data_netdev=f"socket,connect=127.0.0.1:{LINK_PORT}")
        vms.append(b)
        a.wait_ready()
        b.wait_ready()
        # Both data NICs come up with the image's MAC: B takes another.
        nic = impair.data_nic(b)
        # (The image has no ping: perftest's own TCP exchange over this link is the check.)
        r = b.sh(f"ip link set {nic} address {B_MAC}")
        if r["rc"] != 0:
            raise RuntimeError(f"VM B's data NIC refused a new MAC: {r['out']}")
        port = 18500
        for scenario in scenarios:
            impair.set_netem(a, impair.SCENARIOS[scenario])
            for op in [o.strip() for o in args.ops.split(",")]:
                port += 1
                r = run_case(a, b, op, args.iters, args.timeout, port)
                r["scenario"] = scenario
                r["netem"] = impair.netem_stats(a)
                runs.append(r)
                print(f"{scenario}: {op}: ok {r['ok']}, {r['seconds']} s, ratio {r['ratio']}, {r['mb_s']} MB/s, "
                      f"requester {r['requester']}, responder {r['responder']}, netem {r['netem']}", flush=True)
        impair.set_netem(a, "")
    finally:
        for vm in vms:
            vm.close()
        ns.close()
    with open(args.out, "w") as f:
        json.dump({"when": time.strftime("%Y-%m-%d %H:%M"), "iters": args.iters, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
