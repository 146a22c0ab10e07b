#!/usr/bin/env python3
"""tita against Linux Soft-RoCE under a hostile network: every scenario of
tests/interop/impair.py (loss, reordering, duplication, corruption, netem in
the rxe VM, both directions) times READ, WRITE and SEND of 1 MiB with 16
outstanding, tita as client and rxe as client, plus ibv_rc_pingpong -c.

  scripts/interop/impair-table.py BUILD_DIR OUT.json [--label LABEL]
      [--scenarios 'loss 3%,corrupt 1%'] [--ops READ,WRITE] [--iters 20]
  scripts/interop/impair-table.py --render BEFORE.json AFTER.json
      prints the markdown table of doc/interop.md (before | after per cell)

Needs root (the VM runs in a network namespace) and the VM image
(scripts/rxe-vm/build-image.sh builds it on first use). A run that does not
finish within --timeout seconds is recorded as a hang.
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


def cell(r):
    if r is None:
        return "-"
    if r.get("hang"):
        return "**hangs**"
    if not r["ok"]:
        why = "RETRY_EXC_ERR" if "status 12" in (r["tail_tita"] + r["tail_rxe"]) else "fails"
        return f"**{why}** ({r['seconds']:.0f} s)"
    mb = f"{r['mb_s']:.2f} MB/s" if r.get("mb_s") is not None else ""
    ratio = f"{r['ratio']:.2f}x" if r.get("ratio") is not None else ""
    t = r["tita"]
    to = f", {t['timeouts']} timeouts" if t.get("timeouts") else ""
    to += f", {t['tail_probes']} tail probes" if t.get("tail_probes") else ""
    return f"{ratio} {mb}{to}".strip()


def render(before, after):
    b = {(r["scenario"], r["op"], r["client"]): r for r in before["runs"]}
    a = {(r["scenario"], r["op"], r["client"]): r for r in after["runs"]}
    keys = sorted(set(a) | set(b), key=lambda k: (list(impair.SCENARIOS).index(k[0]), k[1], k[2]))
    print(f"Before: {before['label']} ({before['when']}); after: {after['label']} ({after['when']}).")
    print("Each cell: data packets sent / packets needed, perftest's MB/s, tita's timeouts and tail probes.\n")
    print("| scenario | operation | client | before | after |")
    print("|---|---|---|---|---|")
    for k in keys:
        print(f"| {k[0]} | {k[1]} | {k[2]} | {cell(b.get(k))} | {cell(a.get(k))} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?")
    ap.add_argument("out", nargs="?")
    ap.add_argument("--render", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--label", default="")
    ap.add_argument("--scenarios", default=",".join(impair.SCENARIOS))
    ap.add_argument("--ops", default="READ,WRITE,SEND")
    ap.add_argument("--clients", default="tita,rxe")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=150)
    ap.add_argument("--extra", default="", help="extra tita-run options, space separated")
    args = ap.parse_args()
    if args.render:
        with open(args.render[0]) as f, open(args.render[1]) as g:
            render(json.load(f), json.load(g))
        return 0
    if not args.build or not args.out:
        ap.error("BUILD_DIR and OUT.json are required")
    why = rxe_vm.qemu_missing()
    if why:
        print(f"impair-table: the Soft-RoCE VM cannot run here: {why}", file=sys.stderr)
        return 77
    impair.BUILD = os.path.abspath(args.build)
    work = os.path.splitext(os.path.abspath(args.out))[0] + ".work"
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "build-image.log"), "w") as log:
        image = rxe_vm.build_image(log)
    ns = rxe_vm.Namespace("tita-impair")
    vm = None
    result = {"label": args.label, "when": time.strftime("%Y-%m-%d"), "runs": [], "pingpong": []}
    try:
        ns.enter()
        vm = rxe_vm.Vm(ns, image, work, vm_ip=impair.VM_IP + "/24")
        vm.wait_ready()
        impair.pin_neighbour(vm)
        port = 18500
        extra = args.extra.split()
        for scenario in args.scenarios.split(","):
            impair.set_netem(vm, impair.SCENARIOS[scenario])
            for op in args.ops.split(","):
                for client in args.clients.split(","):
                    port += 1
                    r = impair.run_case(vm, op, client, iters=args.iters, port=port, timeout=args.timeout,
                                        extra=extra)
                    r["scenario"] = scenario
                    r["hang"] = "timeout" in (r["tita_rc"], r["rxe_rc"])
                    r["netem"] = impair.netem_stats(vm)
                    result["runs"].append(r)
                    print(f"{scenario:>13} {op:>5} {client}-client: {cell(r)}  netem {r['netem']}", flush=True)
                    with open(args.out, "w") as f:
                        json.dump(result, f, indent=1)
            for client in args.clients.split(","):
                port += 1
                r = impair.pingpong_check(vm, client, port=port, timeout=args.timeout)
                r["scenario"] = scenario
                result["pingpong"].append(r)
                print(f"{scenario:>13} pingpong -c {client}-client: {'ok' if r['ok'] else 'FAIL'}", flush=True)
    finally:
        if vm is not None:
            vm.close()
        ns.close()
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
