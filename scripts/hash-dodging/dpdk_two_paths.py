#!/usr/bin/python3
"""Hash Dodging on real DPDK processes: two paths, one black-holed mid-transfer.

    tita-perf client -- S1 ==(link A)== S2 -- tita-perf server
                           ==(link B)==

S1 and S2 are tita-switch processes on vhost-user ports (--no-huge); S1 reaches
the server over an ECMP group of its two links to S2, and S2 the client over
its two links back, both with the dodge offset on the UDP source port. The
client writes 64 KB messages for --seconds with every byte checked, both
tita-perf processes with --dodge udp_sport. After a third of the run, the
script asks S1 (rte_telemetry, /tita_switch/fault) to silently drop everything
it routes to the link the transfer uses. Expected: the client's QP detects the
stall, moves its dodge value once, S1 sends it down the other link, the
server's ACKs follow, and the transfer completes with every byte intact.
tita-doctor, reading before and after the fault, names S1's black-holed port
first among the losses and the client's QP leaving its path.

Placement: S1 and the server on core 1, S2 and the client on core 0; the
tita-perf processes sleep when idle, the switches poll.

With --spray N the tita-perf processes spray each QP over N entropy values
(--recovery sr --spray N --spray-policy offset, doc/multipath.md) instead of
dodging. Checked: the transfer finishes with every byte intact, the black-holed
port dropped frames and the other carried the transfer afterwards, tita-doctor
names the port. Reported: the links' split before the fault, the drops, the
values retired and the timeouts (none when the values were on both links).

Usage: dpdk_two_paths.py BUILD_DIR WORK_DIR [--seconds 6] [--spray N] [--check]
  --check: exit 1 unless every expectation holds (the meson tests 'dpdk-dodge'
  and 'dpdk-spray').
Writes WORK_DIR/result.json and, with matplotlib, WORK_DIR/goodput.png.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "ops"))
from dpdk_telemetry import Telemetry  # noqa: E402

failures = []


def starved(side):
    """What tita-perf's host says of its own polling: a host descheduled for
    milliseconds sees its peer as silent (the failure line says so)."""
    return (f"host polled late {side.get('late_polls', 0)} times, "
            f"{side.get('late_ms', 0):.1f} ms in all")


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def switch_config(down, up, seed, link_gbps=None):
    """Ports: 0 towards the local host, 1 and 2 the two links (shaped to
    link_gbps if given); `down` is the local host's address, `up` the remote one's."""
    ports = [{"name": n} for n in down["ports"]]
    if link_gbps:
        for p in ports[1:]:
            p["rate_gbps"] = link_gbps
    return {"ports": ports,
            "routes": [{"prefix": down["ip"] + "/32", "ports": [0]},
                       {"prefix": up + "/32", "ports": [1, 2]}],
            "ecmp": {"seed": seed, "dodge": {"field": "udp_sport"}},
            "pfc": {"enabled": False}, "int": {"enabled": True}}


def run(build, work, seconds, spray, link_gbps=None):
    perf = os.path.join(build, "apps", "tita-perf")
    switch = os.path.join(build, "apps", "tita-switch", "tita-switch")
    os.makedirs(work, exist_ok=True)
    tag = f"hd{os.getpid()}"
    sock = {k: os.path.join(work, f"{k}.sock") for k in ("s1_0", "s1_1", "s1_2", "s2_0")}
    for s in sock.values():
        if os.path.exists(s):
            os.unlink(s)
    s1_cfg = switch_config({"ip": "10.0.0.1", "ports": ["net_vhost0", "net_vhost1", "net_vhost2"]}, "10.0.0.2", 7, link_gbps)
    s2_cfg = switch_config({"ip": "10.0.0.2", "ports": ["net_vhost0", "net_virtio_user1", "net_virtio_user2"]},
                           "10.0.0.1", 11, link_gbps)
    for name, cfg in (("s1", s1_cfg), ("s2", s2_cfg)):
        with open(os.path.join(work, f"{name}.json"), "w") as f:
            json.dump(cfg, f)
    eal = ["--no-huge", "-m", "512", "--no-pci", "--log-level=*:error"]
    procs = []

    def start(cmd, name):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append((name, p))
        return p

    s1 = start([switch, "-l", "1"] + eal + [f"--file-prefix={tag}-s1",
                                             f"--vdev=net_vhost0,iface={sock['s1_0']},queues=1",
                                             f"--vdev=net_vhost1,iface={sock['s1_1']},queues=1",
                                             f"--vdev=net_vhost2,iface={sock['s1_2']},queues=1",
                                             "--", "--config", os.path.join(work, "s1.json"), "--stats-ms", "0",
                                             "--json"], "S1")
    time.sleep(1.5)
    s2 = start([switch, "-l", "0"] + eal + [f"--file-prefix={tag}-s2",
                                             f"--vdev=net_vhost0,iface={sock['s2_0']},queues=1",
                                             f"--vdev=net_virtio_user1,path={sock['s1_1']}",
                                             f"--vdev=net_virtio_user2,path={sock['s1_2']}",
                                             "--", "--config", os.path.join(work, "s2.json"), "--stats-ms", "0",
                                             "--json"], "S2")
    time.sleep(1.5)
    paths = ["--recovery", "sr", "--spray", str(spray), "--spray-policy", "offset"] if spray else ["--dodge", "udp_sport"]
    # Without shaped links: paced at 1 Gb/s. With them: DCQCN from twice
    # what both links carry, unpaced, finds the rate.
    rate = (["--rate", str(1.9 * link_gbps), "--pace", "--cc", "none"] if link_gbps else ["--rate", "1", "--pace"])
    common = paths + ["--idle-sleep", "--base-rtt-us", "5000", "--pacing-slack-us", "200",
              "--timeout", "18",
              "--tcp-port", "18611", "--json"]
    server = start([perf, "-l", "1"] + eal + [f"--file-prefix={tag}-rx", f"--vdev=net_virtio_user0,path={sock['s2_0']}",
                                               "--", "--port", "net_virtio_user0", "--ip", "10.0.0.2", "--server"]
                   + common, "server")
    time.sleep(1.0)
    series = os.path.join(work, "series.csv")
    client = start([perf, "-l", "0"] + eal + [f"--file-prefix={tag}-tx", f"--vdev=net_virtio_user0,path={sock['s1_0']}",
                                               "--", "--port", "net_virtio_user0", "--ip", "10.0.0.1",
                                               "--client", "127.0.0.1", "--test", "write", "--size", "65536",
                                               "--qps", "1", "--tx-depth", "16", "--mtu", "1024",
                                               "--duration", str(seconds), *rate, "--check",
                                               "--series", series, "--series-interval-us", "50000"]
                   + common, "client")
    result = {}
    try:
        tel = Telemetry(f"{tag}-s1")
        # Wait for the transfer to run (setup takes a while on a loaded machine),
        # then black-hole the link it uses now.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # (None until the switch has registered its commands)
            tx = {i: (tel.query(f"/tita_switch/port,{i}") or {}).get("tx_packets", 0) for i in (1, 2)}
            if sum(tx.values()) > 5000:
                break
            time.sleep(0.1)
        if link_gbps:
            # No fault: the links' rates are what is measured.
            return finish(result, procs, client, server, s1, s2, work, seconds, series)
        time.sleep(seconds / 4)
        # tita-doctor reads everything once now and again 2 s later: the fault
        # and the QP's path change fall between its readings.
        doctor = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "ops", "tita-doctor")
        doc = subprocess.Popen([sys.executable, doctor, "diagnose", "--window", "2", "--json"]
                               + [w for p in ("s1", "s2", "tx", "rx") for w in ("--prefix", f"{tag}-{p}")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The fault goes in once its first reading is taken (it says so on
        # stderr): on a loaded machine its start alone can take a second.
        doc_err = []
        for line in doc.stderr:
            doc_err.append(line)
            if "first reading" in line:
                break
        time.sleep(0.2)
        # The link in use is the one that moved frames just now, and the QP's
        # path changes so far are not the fault's: on a starved machine a stall
        # can move the QP before the fault (dodge.cc, kStall), and only the
        # changes after it are checked.
        with Telemetry(f"{tag}-tx") as tx_tel:
            result["path_changes_before"] = client_path_changes(tx_tel)
        first = {i: tel.query(f"/tita_switch/port,{i}")["tx_packets"] for i in (1, 2)}
        time.sleep(0.2)
        ports = {i: tel.query(f"/tita_switch/port,{i}") for i in (1, 2)}
        used = max((1, 2), key=lambda i: ports[i]["tx_packets"] - first[i])
        result["before"] = {i: ports[i]["tx_packets"] for i in (1, 2)}
        result["faulted_port"] = used
        result["fault_mono_ns"] = time.monotonic_ns()
        result["fault_reply"] = tel.query(f"/tita_switch/fault,{used},drop_all")
        print(f"black hole on S1 port {used} ({ports[used]['name']}) while the transfer runs; "
              f"frames sent on ports 1, 2 so far: {result['before']}", flush=True)
        out, err = doc.communicate(timeout=60)
        err = "".join(doc_err) + err
        try:
            result["doctor"] = json.loads(out)["findings"]
        except ValueError:
            print(f"info tita-doctor printed no findings (exit {doc.returncode}): {err.strip()[-400:]}", flush=True)
            result["doctor"] = []
        return finish(result, procs, client, server, s1, s2, work, seconds, series)
    finally:
        for name, p in procs:
            if p.poll() is None:
                p.kill()


def finish(result, procs, client, server, s1, s2, work, seconds, series):
    """The client's and the server's results, then the switches' final reports."""
    try:
        out, err = client.communicate(timeout=seconds + 120)
        with open(os.path.join(work, "client.err"), "w") as f:
            f.write(err)
        lines = [l for l in out.splitlines() if l.startswith("{")]
        if client.returncode != 0 or not lines:
            raise RuntimeError(f"client failed ({client.returncode}): {err[-1500:]}")
        result["client"] = json.loads(lines[-1])
        out, err = server.communicate(timeout=60)
        lines = [l for l in out.splitlines() if l.startswith("{")]
        result["server"] = json.loads(lines[-1]) if lines else {}
        for name, sw in (("s1", s1), ("s2", s2)):
            sw.send_signal(signal.SIGINT)
            out, _ = sw.communicate(timeout=30)
            start_at = out.find("{")
            result[name] = json.loads(out[start_at:]) if start_at >= 0 else {}
    finally:
        for name, p in procs:
            if p.poll() is None:
                p.kill()
    result["series"] = series
    return result


def client_path_changes(tel):
    """The client's QP counters by reason (rte_telemetry /tita/qp), {} if unread."""
    for eid in tel.query("/tita/engines") or []:
        for qpn in tel.query(f"/tita/qps,{eid}") or []:
            q = tel.query(f"/tita/qp,{eid},{qpn}") or {}
            if "path_changes" in q:
                return {k: v for k, v in q.items() if k.startswith("path_changes")}
    return {}


def drops_of(port, reason):
    d = port.get("drops", {})
    return d.get(reason, 0) if isinstance(d, dict) else 0


def plot(series, fault_mono_ns, path):
    try:
        import csv
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    rows = list(csv.DictReader(open(series)))
    if not rows:
        return
    t0 = int(rows[0]["t_ns"])
    fig, ax = plt.subplots(figsize=(7, 2.6))
    ax.plot([(int(r["t_ns"]) - t0) / 1e9 for r in rows], [int(r["goodput_bps"]) / 1e9 for r in rows], lw=1.2)
    ax.axvline((fault_mono_ns - t0) / 1e9, color="tab:red", ls="--", lw=1, label="black hole on the path")
    ax.set_xlabel("seconds")
    ax.set_ylabel("goodput Gb/s")
    ax.set_title("tita-perf through two tita-switches, one link black-holed")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def rates(a):
    """--link-gbps R: the same QP on one path (--dodge, no fault moves it) and
    sprayed over both (--spray 2 or more), DCQCN from 4R in both runs."""
    runs = {}
    for spray in (0, max(a.spray, 2)):
        work = os.path.join(a.work, f"spray{spray}")
        r = run(a.build, work, a.seconds, spray, a.link_gbps)
        c = r["client"]
        s1 = r.get("s1", {}).get("ports", [])
        runs[spray] = {"gbps": c.get("gbps", 0), "check": c.get("check"), "messages": c.get("messages"),
                       "links_tx_packets": [s1[i]["tx_packets"] for i in (1, 2)] if len(s1) > 2 else None,
                       "links_drops": [s1[i].get("drops") for i in (1, 2)] if len(s1) > 2 else None,
                       "retransmitted": c.get("client", {}).get("retransmitted_packets"),
                       "timeouts": c.get("client", {}).get("timeouts"),
                       "spray_retired": c.get("client", {}).get("spray_retired"),
                       "spray_dsacks": c.get("client", {}).get("spray_dsacks"),
                       "spray_paths": c.get("client", {}).get("spray_paths")}
        print(f"info {'sprayed over ' + str(spray) if spray else 'one path'}: {runs[spray]}", flush=True)
    one, many = runs[0], runs[max(a.spray, 2)]
    for name, r in (("one path", one), ("sprayed", many)):
        check(r["check"] == "ok" and (r["messages"] or 0) > 0, f"{name}: {r['messages']} messages, every byte "
                                                               f"checked ({r['check']})")
    check(one["gbps"] <= 1.05 * a.link_gbps, f"one path: {one['gbps']:.2f} Gb/s, at most its link's "
                                             f"{a.link_gbps:g} Gb/s (the shaper holds)")
    # Checked: the sprayed QP moves more than one link can (the shaper holds a
    # link to 1.05x its rate, as the one-path run shows; 1.1x leaves a margin
    # above that), and each link carries a real share of its frames, so both
    # links carry it; reported: the ratio to one path and how near it comes to
    # the links' sum (spurious resends of packets late behind a link's queue
    # take a few percent; doc/multipath.md). The CI machine once moved only
    # 1.19x one link, a quarter of the frames on the second (the hosts' poll
    # loops descheduled), which the former 1.2x bound called a failure.
    check(many["gbps"] >= 1.1 * a.link_gbps,
          f"sprayed: {many['gbps']:.2f} Gb/s, at least 1.1x one link's {a.link_gbps:g} Gb/s: more than one link "
          f"carries ({many['gbps'] / max(one['gbps'], 1e-9):.2f}x the QP on one path)")
    frames = many["links_tx_packets"] or [0, 0]
    check(min(frames) >= 0.1 * max(sum(frames), 1),
          f"sprayed: each link carried at least 10% of the frames ({frames})")
    print(f"info sprayed: {many['gbps']:.2f} Gb/s, {many['gbps'] / (2 * a.link_gbps):.0%} of both links' "
          f"{2 * a.link_gbps:g} Gb/s; links' frames {many['links_tx_packets']}", flush=True)
    with open(os.path.join(a.work, "result.json"), "w") as f:
        json.dump({"link_gbps": a.link_gbps, "one_path": one, "sprayed": many}, f, indent=2)
    if a.check:
        sys.exit(1 if failures else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("work")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--spray", type=int, default=0)
    ap.add_argument("--link-gbps", type=float, help="shape both links to this rate, no fault: one path against "
                    "spraying over both")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.link_gbps:
        return rates(a)
    r = run(a.build, a.work, a.seconds, a.spray)
    c, s = r["client"], r["server"]
    cl, sv = c.get("client", {}), c.get("server", {})
    s1_ports = r.get("s1", {}).get("ports", [])
    used, other = r["faulted_port"], 3 - r["faulted_port"]
    port_drops = drops_of(s1_ports[used], "fault_port_drop") if len(s1_ports) > used else 0
    other_tx = s1_ports[other]["tx_packets"] if len(s1_ports) > other else 0
    check(c.get("check") == "ok" and c.get("messages", 0) > 0,
          f"transfer complete: {c.get('messages', 0):.0f} messages of 64 KB, every byte checked ({c.get('check')})")
    check(port_drops > 0, f"S1 dropped {port_drops} frames on the black-holed port {used}")
    check(other_tx > r["before"][other], f"S1 port {other} carried the transfer afterwards "
                                         f"({r['before'][other]} -> {other_tx} frames)")
    loss = [f for f in r.get("doctor", []) if f["question"] == "loss"]
    first = loss[0] if loss else {}
    if a.spray:
        # What spraying must do on DPDK: the transfer finishes intact around
        # a black hole (above), and before the fault the QP's values share the
        # two links (each carried at least a quarter of the frames).
        # Reported: the drops, the values retired and the timeouts (none
        # expected: the black-holed value is left on the other's evidence).
        before = r["before"]
        total = sum(before.values())
        check(total > 0 and min(before.values()) >= total / 4,
              f"before the fault both links carried the QP: frames on ports 1, 2 {before}")
        print(f"info dropped on the black hole: {port_drops}; values retired: {cl.get('spray_retired')}; "
              f"timeouts: {cl.get('timeouts')}", flush=True)
        check("fault_port_drop" in first.get("what", ""),
              f"tita-doctor: first loss {first.get('where')}: {first.get('what')}")
    else:
        early = r.get("path_changes_before", {})
        if early.get("path_changes"):
            print(f"info the client's QP changed path before the fault: {early}", flush=True)
        moves = cl.get("path_changes", 0) - early.get("path_changes", 0)
        check(moves == 1, f"the client's QP changed path once after the fault ({moves}; "
                          f"{cl.get('path_changes')} in all, by reason {cl.get('path_changes_by')}, "
                          f"{cl.get('spurious_stalls')} spurious stalls; {starved(cl)})")
        check(sv.get("path_follows", 0) >= 1, f"the server's ACKs followed (path_follows {sv.get('path_follows')})")
        moved = [f for f in loss if "path control moved" in f["what"]]
        check("fault_port_drop" in first.get("what", "") and moved and "-tx" in moved[0]["where"],
              f"tita-doctor: first loss {first.get('where')}: {first.get('what')}; path control seen: "
              f"{moved[0]['where'] + ': ' + moved[0]['what'] if moved else 'no'}")
    if not a.spray:
        check(cl.get("timeouts", 0) == 0, f"no retransmission timeout (timeouts {cl.get('timeouts')}; {starved(cl)})")
    summary = {"messages": c.get("messages"), "gbps": c.get("gbps"), "check": c.get("check"),
               "client": cl, "server": sv, "faulted_port": used, "s1_port_drops": port_drops,
               "other_port_tx": other_tx, "before": r["before"]}
    with open(os.path.join(a.work, "result.json"), "w") as f:
        json.dump(summary, f, indent=2)
    plot(r["series"], r["fault_mono_ns"], os.path.join(a.work, "goodput.png"))
    if a.check:
        sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
