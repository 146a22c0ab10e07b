#!/usr/bin/env python3
"""rdma-core's pyverbs suite on tita and on Linux Soft-RoCE, side by side.

  scripts/interop/pyverbs-side-by-side.py BUILD_DIR OUT_DIR
  scripts/interop/pyverbs-side-by-side.py --render OUT_DIR   the table again, from the logs

Runs Debian's rdma-core 44 suite (/usr/share/doc/rdma-core/tests, from
python3-pyverbs) twice, unmodified: over tita0 inside tita-run (the test
suite's `verbs-pyverbs` run: tests/verbs/run_verbs.py BUILD pyverbs WORK) and
over rxe0 in the Soft-RoCE VM (the same suite, copied in, `--dev rxe0 --gid 1`).
Writes OUT_DIR/tita.log, OUT_DIR/rxe.log, OUT_DIR/side-by-side.json and prints
the table of doc/interop.md: each test's outcome on both, grouped by what
differs, with the suite's own skip reasons.

Needs root (tita-run's device view, the VM's namespace) and the VM image
(scripts/rxe-vm/build-image.sh builds it on first use).
"""
import base64
import io
import json
import os
import re
import subprocess
import sys
import tarfile

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(root, "tests", "interop"))
import rxe_vm  # noqa: E402

SUITE = "/usr/share/doc/rdma-core/tests"
CHUNK = 64 * 1024  # argv strings stay below Linux's 128 KiB per argument


def outcomes(log):
    """{test id: (outcome, reason)} from unittest's -v lines ("name (path) ...
    outcome", the docstring's first line between them when the test has one)."""
    res, current = {}, None
    for line in log.splitlines():
        m = re.match(r"^(test\w*) \(([\w.]+)\)", line)
        if m:
            current = m.group(2) if m.group(2).endswith("." + m.group(1)) else f"{m.group(2)}.{m.group(1)}"
        # The outcome ends the header's line, or starts a line of its own when
        # the device logged something in between (tita-run's refusals do).
        r = re.search(r"(?:^| \.\.\. )(ok|FAIL|ERROR|skipped|expected failure)(?: '(.*)')?$", line)
        if r and current:
            res[current] = (r.group(1), (r.group(2) or "").strip())
            current = None
    return res


def run_rxe(vm, out):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        t.add(SUITE, arcname="tests")
    data = base64.b64encode(buf.getvalue()).decode()
    vm.sh("rm -rf /tmp/pv && mkdir -p /tmp/pv && : > /tmp/pv/s.b64")
    for i in range(0, len(data), CHUNK):
        r = vm.run(["sh", "-c", 'printf %s "$1" >> /tmp/pv/s.b64', "-", data[i:i + CHUNK]])
        if r["rc"] != 0:
            raise RuntimeError(f"copying the suite into the VM failed: {r['out']}")
    r = vm.sh("cd /tmp/pv && base64 -d s.b64 | tar xzf - && gunzip -f tests/*.gz")
    if r["rc"] != 0:
        raise RuntimeError(f"unpacking the suite in the VM failed: {r['out']}")
    r = vm.sh("cd /tmp/pv && python3 tests/run_tests.py --dev rxe0 --gid 1 -v 2>&1", timeout=3000)
    with open(os.path.join(out, "rxe.log"), "w") as f:
        f.write(r["out"] or "")
    return r["out"] or ""


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--render":
        with open(os.path.join(sys.argv[2], "tita.log")) as f, open(os.path.join(sys.argv[2], "rxe.log")) as g:
            return table(f.read(), g.read(), sys.argv[2])
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    why = rxe_vm.qemu_missing()
    if why:
        print(f"pyverbs-side-by-side: the Soft-RoCE VM cannot run here: {why}", file=sys.stderr)
        return 77
    os.makedirs(out, exist_ok=True)
    work = os.path.join(out, "tita-work")
    r = subprocess.run([sys.executable, os.path.join(root, "tests", "verbs", "run_verbs.py"), build, "pyverbs", work],
                       capture_output=True, text=True)
    print(r.stdout.strip())
    with open(os.path.join(work, "pyverbs.log")) as f:
        tita_log = f.read()
    with open(os.path.join(out, "tita.log"), "w") as f:
        f.write(tita_log)
    with open(os.path.join(out, "build-image.log"), "w") as log:
        image = rxe_vm.build_image(log)
    ns = rxe_vm.Namespace("tita-pyverbs")
    vm = None
    try:
        ns.enter()
        vm = rxe_vm.Vm(ns, image, out)
        vm.wait_ready()
        rxe_log = run_rxe(vm, out)
    finally:
        if vm is not None:
            vm.close()
        ns.close()
    return table(tita_log, rxe_log, out)


def table(tita_log, rxe_log, out):
    t, x = outcomes(tita_log), outcomes(rxe_log)
    rows = [{"test": k, "tita": t.get(k, ("-", ""))[0], "tita_reason": t.get(k, ("-", ""))[1],
             "rxe": x.get(k, ("-", ""))[0], "rxe_reason": x.get(k, ("-", ""))[1]} for k in sorted(set(t) | set(x))]
    with open(os.path.join(out, "side-by-side.json"), "w") as f:
        json.dump(rows, f, indent=1)

    def count(side, what):
        return sum(1 for r in rows if r[side] == what)

    print("| outcome | tita | rxe |\n|---|---|---|")
    for what in ("ok", "skipped", "FAIL", "ERROR", "expected failure"):
        print(f"| {what} | {count('tita', what)} | {count('rxe', what)} |")
    print(f"| tests seen | {len(t)} | {len(x)} |\n")
    print("Tests whose outcome differs (the suite's reason where it skipped):\n")
    print("| test | tita | rxe |\n|---|---|---|")
    for r in rows:
        if r["tita"] != r["rxe"]:
            tr = f"{r['tita']} ({r['tita_reason']})" if r["tita_reason"] else r["tita"]
            xr = f"{r['rxe']} ({r['rxe_reason']})" if r["rxe_reason"] else r["rxe"]
            print(f"| {r['test']} | {tr} | {xr} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
