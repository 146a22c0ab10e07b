#!/usr/bin/python3
"""tita-switch as a real DPDK process on net_pcap ports.

Each switch port is `--vdev net_pcapN,rx_pcap=inN.pcap,tx_pcap=outN.pcap`: the
switch reads the input files as fast as it polls, forwards, and exits through
--exit-when-idle once the inputs are exhausted and its queues are empty. The
output pcaps are then checked frame by frame: forwarding, ECMP spread and
dodging, ECN marks, INT records, PFC frames, faults; `tita-wire parse` confirms
every RoCEv2 frame still parses with a valid ICRC.

Usage: switch_test.py CASE TITA_SWITCH TITA_WIRE SWITCH_FRAMES WORKDIR
"""
import json
import math
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "ops"))
from dpdk_telemetry import Telemetry, socket_path, wait_for_socket  # noqa: E402

CASE, SWITCH, WIRE, FRAMES, WORK = sys.argv[1:6]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


# ---------------------------------------------------------------- pcap and frames

def read_pcap(path):
    """[(ts_ns, bytes)] of a pcap (micro- or nanosecond timestamps)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        return []
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xa1b2c3d4, 0xa1b23c4d):
        endian = "<"
    else:
        endian = ">"
        magic = struct.unpack(">I", data[:4])[0]
    scale = 1 if magic == 0xa1b23c4d else 1000
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        out.append((sec * 1_000_000_000 + frac * scale, data[off:off + caplen]))
        off += caplen
    return out


def ip_str(b):
    if len(b) == 4:
        return socket.inet_ntop(socket.AF_INET, b)
    if b[:12] == bytes(10) + b"\xff\xff":
        return socket.inet_ntop(socket.AF_INET, b[12:])
    return socket.inet_ntop(socket.AF_INET6, b)


def decode(b):
    """Fields of an Ethernet frame: L2, IP, UDP and what follows the IP datagram."""
    d = {"len": len(b), "ethertype": struct.unpack("!H", b[12:14])[0], "pcp": None}
    l3 = 14
    if d["ethertype"] == 0x8100:
        d["pcp"] = b[14] >> 5
        d["ethertype"] = struct.unpack("!H", b[16:18])[0]
        l3 = 18
    if d["ethertype"] == 0x8808:
        opcode, enable = struct.unpack("!HH", b[14:18])
        d["pfc"] = {"dst": b[:6].hex(), "opcode": opcode, "class_enable": enable,
                    "quanta": list(struct.unpack("!8H", b[18:34]))}
        return d
    if d["ethertype"] == 0x0800:
        ihl = (b[l3] & 15) * 4
        d.update(ip=4, dscp=b[l3 + 1] >> 2, ecn=b[l3 + 1] & 3, ttl=b[l3 + 8],
                 src=ip_str(b[l3 + 12:l3 + 16]), dst=ip_str(b[l3 + 16:l3 + 20]))
        end = l3 + struct.unpack("!H", b[l3 + 2:l3 + 4])[0]
        l4 = l3 + ihl
    elif d["ethertype"] == 0x86DD:
        tc = (struct.unpack("!I", b[l3:l3 + 4])[0] >> 20) & 0xFF
        d.update(ip=6, dscp=tc >> 2, ecn=tc & 3, ttl=b[l3 + 7],
                 src=ip_str(b[l3 + 8:l3 + 24]), dst=ip_str(b[l3 + 24:l3 + 40]))
        end = l3 + 40 + struct.unpack("!H", b[l3 + 4:l3 + 6])[0]
        l4 = l3 + 40
    else:
        return d
    d["sport"], d["dport"] = struct.unpack("!HH", b[l4:l4 + 4])
    d["psn"] = int.from_bytes(b[l4 + 8 + 9:l4 + 8 + 12], "big")
    trailer = b[end:]
    d["trailer"] = None
    if len(trailer) >= 8 and trailer[0] == 0x54:
        flags = trailer[1]
        hops = flags & 15
        recs = [struct.unpack("!IIII", trailer[8 + 16 * i:24 + 16 * i]) for i in range(hops)]
        d["trailer"] = {"collect": bool(flags & 0x40), "overflow": bool(flags & 0x20), "hops": hops,
                        "records": [dict(zip(("rate_mbps", "ts_ns", "tx_bytes", "qlen_bytes"), r)) for r in recs]}
    return d


def frames(path):
    return [dict(decode(b), ts=ts) for ts, b in read_pcap(path)]


def wire_parse(path):
    out = subprocess.run([WIRE, "parse", "--pcap", path], capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def all_roce_valid(path, what):
    results = wire_parse(path)
    bad = [r["result"] for r in results if r["result"] != "ok"]
    check(not bad, f"{what}: tita-wire parse says {bad[:3]} for {len(bad)} of {len(results)} frames")
    return results


# ---------------------------------------------------------------- running the switch

def gen(path, flows):
    args = [FRAMES, "--out", path]
    for f in flows:
        args += ["--flow", ",".join(f"{k}={v}" for k, v in f.items())]
    subprocess.run(args, check=True)


def eal_args(n_ports, tag):
    args = ["--no-huge", "-m", "512", "-l", "0", "--no-pci", "--file-prefix", f"tsw_{tag}_{os.getpid()}",
            "--log-level", "*:warning", "--log-level", "pmd.net.pcap:error"]
    for i in range(n_ports):
        args += ["--vdev", f"net_pcap{i},rx_pcap={WORK}/in{i}.pcap,tx_pcap={WORK}/out{i}.pcap"]
    return args


def run_switch(cfg, n_ports, inputs, tag, extra=(), idle_ms=300, timeout=90):
    """inputs: {port: [flow, ...]}; returns (returncode, final JSON or None, stderr)."""
    for i in range(n_ports):
        gen(f"{WORK}/in{i}.pcap", inputs.get(i, []))
        if os.path.exists(f"{WORK}/out{i}.pcap"):
            os.remove(f"{WORK}/out{i}.pcap")
    with open(f"{WORK}/{tag}.json", "w") as f:
        json.dump(cfg, f, indent=2)
    cmd = [SWITCH] + eal_args(n_ports, tag) + ["--", "--config", f"{WORK}/{tag}.json", "--json",
                                                "--exit-when-idle", str(idle_ms), "--stats-ms", "0"] + list(extra)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    report = None
    try:
        report = json.loads(p.stdout)
    except ValueError:
        print(p.stdout[-2000:])
    if p.returncode != 0 or report is None:
        print(" ".join(cmd))
        print(p.stderr[-3000:])
    check(p.returncode == 0, f"{tag}: tita-switch exited {p.returncode}")
    return p.returncode, report, p.stderr


def ports_cfg(n, **per_port):
    ports = [{"name": f"net_pcap{i}"} for i in range(n)]
    for i, extra in per_port.items():
        ports[int(i[1:])].update(extra)
    return ports


def port_report(report, i):
    return report["ports"][i]


# ---------------------------------------------------------------- cases

def case_forwarding():
    cfg = {"ports": ports_cfg(3),
           "routes": [{"prefix": "10.0.1.0/24", "ports": [1]},
                      {"prefix": "10.0.2.2/32", "ports": ["net_pcap2"]},
                      {"prefix": "fd00::2/128", "ports": [2]}]}
    flows = [{"dst": "10.0.1.5", "sport": 0xC001, "count": 20},
             {"dst": "10.0.2.2", "sport": 0xC002, "count": 15, "pcp": 5},
             {"src": "fd00::1", "dst": "fd00::2", "count": 10, "payload": 256},
             {"dst": "10.9.9.9", "count": 7},
             {"dst": "10.0.1.5", "ttl": 1, "count": 3}]
    rc, rep, _ = run_switch(cfg, 3, {0: flows}, "fwd")
    if rep is None:
        return
    out0, out1, out2 = (frames(f"{WORK}/out{i}.pcap") for i in range(3))
    check(len(out0) == 0, f"nothing goes back out port 0 ({len(out0)})")
    check(len(out1) == 20 and all(f["dst"] == "10.0.1.5" and f["ttl"] == 63 for f in out1),
          f"port 1 carries the 20 frames to 10.0.1.5 with TTL 63: {[(f.get('dst'), f.get('ttl')) for f in out1[:3]]}")
    v4 = [f for f in out2 if f.get("ip") == 4]
    v6 = [f for f in out2 if f.get("ip") == 6]
    check(len(v4) == 15 and all(f["dst"] == "10.0.2.2" and f["pcp"] == 5 for f in v4),
          f"port 2 carries the 15 tagged frames to 10.0.2.2 ({len(v4)})")
    check(len(v6) == 10 and all(f["dst"] == "fd00::2" and f["ttl"] == 63 for f in v6),
          f"port 2 carries the 10 IPv6 frames, hop limit 63 ({len(v6)})")
    check([f["psn"] for f in out1] == list(range(20)), "frames of a flow stay in order")
    all_roce_valid(f"{WORK}/out1.pcap", "port 1")
    all_roce_valid(f"{WORK}/out2.pcap", "port 2")
    p0 = port_report(rep, 0)
    check(p0["rx_packets"] == 55, f"port 0 received 55 ({p0['rx_packets']})")
    check(p0["drops"]["no_route"] == 7, f"7 no-route drops on port 0 ({p0['drops']['no_route']})")
    check(p0["drops"]["ttl_expired"] == 3, f"3 TTL drops on port 0 ({p0['drops']['ttl_expired']})")
    check(port_report(rep, 1)["tx_packets"] == 20 and port_report(rep, 2)["tx_packets"] == 25, "tx counters")
    check(port_report(rep, 1)["pmd_tx_packets"] == 20, "the PMD sent what the switch counted")


def case_ecmp():
    cfg = {"ports": ports_cfg(5),
           "routes": [{"prefix": "10.0.2.0/24", "ports": [1, 2, 3, 4]}],
           "ecmp": {"seed": 12345, "dodge": {"field": "udp_sport", "mask": "0x0003"}}}
    flows = []
    for i in range(200):
        for d in range(4):
            flows.append({"dst": f"10.0.2.{1 + i % 50}", "sport": 0xC000 + 4 * i + d, "count": 1, "payload": 64})
    rc, rep, _ = run_switch(cfg, 5, {0: flows}, "ecmp")
    if rep is None:
        return
    where = {}
    for p in range(1, 5):
        for f in frames(f"{WORK}/out{p}.pcap"):
            where[f["sport"]] = p
    check(len(where) == 800, f"all 800 frames forwarded ({len(where)})")
    moved = all(len({where.get(0xC000 + 4 * i + d) for d in range(4)}) == 4 for i in range(200))
    check(moved, "the four dodge values of every flow leave on four different ports")
    count = [sum(1 for i in range(200) if where.get(0xC000 + 4 * i) == p) for p in range(1, 5)]
    sd = math.sqrt(200 * 0.25 * 0.75)
    check(all(abs(c - 50) <= 5 * sd for c in count), f"dodge-0 flows spread over 4 ports: {count}")


def case_ecn():
    # 0.5 Gb/s: the pcap PMD delivers several times faster, so the queue builds
    # even on a loaded machine; above Kmax (50 KB) every ECT frame is marked.
    port1 = {"rate_gbps": 0.5, "ecn": {"kmin_bytes": 20000, "kmax_bytes": 50000, "pmax": 0.2}}
    cfg = {"ports": ports_cfg(2, p1=port1), "routes": [{"prefix": "default", "ports": [1]}]}
    flows = [{"dst": "10.0.1.2", "sport": 0xC001, "count": 1500, "payload": 1000},
             {"dst": "10.0.1.2", "sport": 0xC002, "count": 100, "payload": 1000, "ecn": 0}]
    csv = f"{WORK}/qlen.csv"
    rc, rep, _ = run_switch(cfg, 2, {0: flows}, "ecn_over", extra=["--qlen-csv", csv, "--qlen-interval-us", "50"])
    if rep is None:
        return
    out = frames(f"{WORK}/out1.pcap")
    ce = [f for f in out if f["ecn"] == 3]
    check(len(out) == 1600, f"every frame delivered ({len(out)})")
    # Frames leaving more than Kmax (50 KB, 47 frames) behind are always marked.
    check(len(ce) >= 1000, f"an overloaded 0.5 Gb/s port marks CE ({len(ce)} of 1500 ECT frames)")
    check(all(f["sport"] == 0xC001 for f in ce), "Not-ECT frames are never marked")
    check(port_report(rep, 1)["ecn_marked"] == len(ce), "ecn_marked counts the CE frames")
    check(port_report(rep, 1)["max_qlen_bytes"] > 200000, f"the queue built up ({port_report(rep, 1)['max_qlen_bytes']})")
    all_roce_valid(f"{WORK}/out1.pcap", "CE-marked frames")
    # 1600 frames of 1058 bytes need 27.1 ms at 0.5 Gb/s; a port never beats its
    # rate (less one 16 KB bucket), and may fall behind it when the machine is busy.
    span = (out[-1]["ts"] - out[0]["ts"]) / 1e6
    check(26.5 <= span <= 2000, f"the shaped port took {span:.1f} ms for 1600 frames at 0.5 Gb/s (27.1 expected)")
    with open(csv) as f:
        rows = [line.strip().split(",") for line in f]
    check(rows[0] == ["time_ns", "mono_ns", "net_pcap0", "net_pcap1"], f"qlen csv header {rows[0]}")
    qmax = max(int(r[3]) for r in rows[1:])
    check(len(rows) > 100 and qmax > 200000, f"qlen csv samples the queue ({len(rows)} rows, max {qmax})")

    # Below Kmin: 15 frames (15.9 KB) can never make the queue exceed Kmin (20 KB).
    rc, rep, _ = run_switch(cfg, 2, {0: [{"dst": "10.0.1.2", "count": 15, "payload": 1000}]}, "ecn_under")
    if rep is None:
        return
    out = frames(f"{WORK}/out1.pcap")
    check(len(out) == 15 and not any(f["ecn"] == 3 for f in out), "no CE below Kmin")


def case_int():
    cfg = {"ports": ports_cfg(2, p1={"rate_gbps": 10}), "routes": [{"prefix": "default", "ports": [1]}]}
    flows = [{"dst": "10.0.1.2", "sport": 0xC001, "count": 200, "payload": 1000, "collect": 1},
             {"dst": "10.0.1.2", "sport": 0xC002, "count": 5, "payload": 500, "collect": 1, "hops": 5},
             {"dst": "10.0.1.2", "sport": 0xC003, "count": 10, "payload": 300}]
    rc, rep, _ = run_switch(cfg, 2, {0: flows}, "int")
    if rep is None:
        return
    out = frames(f"{WORK}/out1.pcap")
    check(len(out) == 215, f"all frames out ({len(out)})")
    tx_total = 0
    prev = None
    ok_rates, ok_tx, ok_ts, ok_q = True, True, True, True
    for f in out:
        tx_total += f["len"]
        t = f["trailer"]
        if f["sport"] == 0xC001:
            if not check(t is not None and t["hops"] == 1 and not t["overflow"], "one hop record pushed"):
                return
            r = t["records"][0]
            ok_rates &= r["rate_mbps"] == 10000
            ok_tx &= r["tx_bytes"] == tx_total  # the port's bytes including this frame
            ok_q &= r["qlen_bytes"] <= 215 * 1100
            if prev is not None:
                # Back to back at 10 Gb/s: the start times differ by the previous frame's time on the wire.
                gap = r["ts_ns"] - prev[0]
                ok_ts &= gap >= prev[1] * 8 // 10 - 1
            prev = (r["ts_ns"], f["len"])
        elif f["sport"] == 0xC002:
            check(t is not None and t["hops"] == 5 and t["overflow"], "a full trailer gets OVERFLOW, no record")
        else:
            check(t is None, "frames without a trailer get none")
    check(ok_rates, "records carry the port rate, 10,000 Mb/s")
    check(ok_tx, "records carry the port's tx bytes including the frame")
    check(ok_ts, "record timestamps advance at least by the previous frame's wire time")
    check(ok_q, "queue lengths are within what was sent")
    last = [f for f in out if f["sport"] == 0xC001][-1]["trailer"]["records"][0]
    check(last["qlen_bytes"] < 2000, f"the queue is (nearly) empty when the last records leave ({last['qlen_bytes']})")
    parsed = all_roce_valid(f"{WORK}/out1.pcap", "frames with INT records")
    check(sum(1 for p in parsed if p.get("telemetry_hops") == 1) == 200, "tita-wire sees one hop on 200 frames")
    p1 = port_report(rep, 1)
    check(p1["int_pushed"] == 200 and p1["int_overflowed"] == 5, f"INT counters {p1['int_pushed']}/{p1['int_overflowed']}")


def case_pfc():
    port1 = {"rate_gbps": 1}
    cfg = {"ports": ports_cfg(2, p1=port1), "routes": [{"prefix": "default", "ports": [1]}],
           "buffer": {"headroom_bytes": 200000},
           "pfc": {"enabled": True, "priorities": [3], "xoff_bytes": 30000, "xon_bytes": 10000}}
    flows = [{"dst": "10.0.1.2", "count": 300, "payload": 1000, "dscp": 26}]
    rc, rep, _ = run_switch(cfg, 2, {0: flows}, "pfc")
    if rep is None:
        return
    back = frames(f"{WORK}/out0.pcap")
    pfc = [f["pfc"] for f in back if "pfc" in f]
    check(len(pfc) == len(back) and len(pfc) >= 2, f"port 0 sends PFC frames upstream ({len(pfc)} of {len(back)})")
    if pfc:
        first, last = pfc[0], pfc[-1]
        check(first["dst"] == "0180c2000001" and first["opcode"] == 0x0101, f"802.1Qbb frame {first}")
        check(first["class_enable"] == 1 << 3 and first["quanta"][3] == 0xFFFF, f"XOFF for priority 3: {first}")
        check(last["class_enable"] == 1 << 3 and last["quanta"][3] == 0, f"XON (quanta 0) at the end: {last}")
    p0 = port_report(rep, 0)
    check(p0["pfc_frames_sent"] == len(pfc), f"pfc_frames_sent {p0['pfc_frames_sent']} = frames in the pcap")
    q3 = p0["queues"][3]
    check(q3["pfc_pause_sent"] >= 1 and q3["pfc_resume_sent"] >= 1, f"priority 3 pause/resume counts {q3}")
    check(q3["pfc_pause_sent"] + q3["pfc_resume_sent"] == len(pfc), "each PFC frame carries priority 3 once")
    check(len(frames(f"{WORK}/out1.pcap")) + port_report(rep, 1)["dropped"] == 300, "every frame delivered or counted")
    all_roce_valid(f"{WORK}/out1.pcap", "lossless frames")

    cfg["pfc"]["enabled"] = False
    rc, rep, _ = run_switch(cfg, 2, {0: flows}, "nopfc")
    if rep is not None:
        check(not frames(f"{WORK}/out0.pcap"), "no PFC frames with PFC off")


def case_faults():
    cfg = {"ports": ports_cfg(6,
                              p1={"faults": {"drop_probability": 0.2}},
                              p2={"faults": {"black_hole": {"src": "10.0.0.1", "dst": "10.0.2.9", "sport": 0xC009,
                                                            "dport": 4791, "proto": 17}}},
                              p4={"faults": {"drop_all": True}},
                              p5={"faults": {"delay_us": 30000}}),
           "routes": [{"prefix": "10.0.1.0/24", "ports": [1]},
                      {"prefix": "10.0.2.0/24", "ports": [2]},
                      {"prefix": "10.0.4.0/24", "ports": [3, 4]},
                      {"prefix": "10.0.5.0/24", "ports": [5]}]}
    flows = [{"dst": "10.0.1.5", "count": 2000, "payload": 64},
             {"dst": "10.0.2.9", "sport": 0xC009, "count": 50, "payload": 64},
             {"dst": "10.0.2.9", "sport": 0xC00A, "count": 50, "payload": 64},
             {"dst": "10.0.5.1", "count": 5, "payload": 64}]
    flows += [{"dst": "10.0.4.1", "sport": 0xC100 + i, "count": 1, "payload": 64} for i in range(200)]
    rc, rep, _ = run_switch(cfg, 6, {0: flows}, "faults", idle_ms=500)
    if rep is None:
        return
    out = {p: frames(f"{WORK}/out{p}.pcap") for p in range(1, 6)}
    n1 = len(out[1])
    sd = math.sqrt(2000 * 0.2 * 0.8)
    check(abs(n1 - 1600) <= 4 * sd, f"20% random loss: {n1} of 2000 delivered")
    check(port_report(rep, 1)["drops"]["fault_random"] == 2000 - n1, "random drops counted")
    sports = [f["sport"] for f in out[2]]
    check(sports.count(0xC009) == 0 and sports.count(0xC00A) == 50,
          f"the black hole takes exactly its flow ({sports.count(0xC009)} / {sports.count(0xC00A)})")
    check(port_report(rep, 2)["drops"]["fault_black_hole"] == 50, "black-hole drops counted")
    dropped = port_report(rep, 4)["drops"]["fault_port_drop"]
    check(len(out[4]) == 0 and 0 < dropped < 200 and len(out[3]) + dropped == 200,
          f"drop_all on port 4 swallows the flows ECMP sends there ({len(out[3])} + {dropped})")
    if out[5] and out[2]:
        lag = (out[5][0]["ts"] - out[2][0]["ts"]) / 1e6
        check(lag >= 25, f"30 ms delay line: port 5 starts {lag:.1f} ms after port 2")
    check(len(out[5]) == 5, "delayed frames all arrive")


def case_telemetry():
    cfg = {"ports": ports_cfg(2, p1={"rate_gbps": 10}), "routes": [{"prefix": "default", "ports": [1]}]}
    gen(f"{WORK}/in0.pcap", [{"dst": "10.0.1.2", "count": 50, "payload": 500}])
    gen(f"{WORK}/in1.pcap", [])
    with open(f"{WORK}/tel.json", "w") as f:
        json.dump(cfg, f)
    tag = "tel"
    prefix = f"tsw_{tag}_{os.getpid()}"
    cmd = [SWITCH] + eal_args(2, tag) + ["--", "--config", f"{WORK}/tel.json", "--max-seconds", "20",
                                          "--stats-ms", "200"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if not check(wait_for_socket(prefix) is not None, "telemetry socket appears"):
            return
        t = Telemetry(prefix)
        # The commands exist once the ports are open; the counters once the 50 frames went through.
        for _ in range(200):
            stats = t.reply("/tita_switch/stats").get("/tita_switch/stats")
            if stats and stats.get("tx_packets") == 50:
                break
            time.sleep(0.05)
        ports = t.reply("/tita_switch/ports")
        check(ports == {"/tita_switch/ports": [0, 1]}, f"/tita_switch/ports: {ports}")
        port1 = t.reply("/tita_switch/port,1")["/tita_switch/port"]
        check(port1["name"] == "net_pcap1" and port1["tx_packets"] == 50 and port1["rate_mbps"] == 10000,
              f"/tita_switch/port,1: {port1}")
        by_name = t.reply("/tita_switch/port,net_pcap0")["/tita_switch/port"]
        check(by_name["rx_packets"] == 50, f"/tita_switch/port,net_pcap0: {by_name}")
        stats = t.reply("/tita_switch/stats")["/tita_switch/stats"]
        check(stats["rx_packets"] == 50 and stats["tx_packets"] == 50, f"/tita_switch/stats: {stats}")
        queues = t.reply("/tita_switch/queues,1")["/tita_switch/queues"]
        check(queues["priority_3"]["dequeued_packets"] == 50, f"/tita_switch/queues,1: {queues}")
        qlen = t.reply("/tita_switch/qlen")["/tita_switch/qlen"]
        check(qlen == {"net_pcap0": 0, "net_pcap1": 0}, f"/tita_switch/qlen: {qlen}")
        t.close()
        # DPDK's own client reads the same commands.
        r = subprocess.run(["/usr/bin/python3", "/usr/bin/dpdk-telemetry.py", "-f", prefix],
                           input="/tita_switch/stats\n", capture_output=True, text=True, timeout=20)
        check('"tx_packets": 50' in r.stdout, f"dpdk-telemetry.py reads /tita_switch/stats: {r.stdout[-300:]}")
        time.sleep(0.6)  # at least two periodic stats lines (every 200 ms) before stopping
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    check(p.returncode == 0, f"exit {p.returncode} after SIGINT")
    check("net_pcap1" in out and "tx_pkts" in out, "final counters printed as text")
    check(any(line.startswith("[") and "pps" in line for line in err.splitlines()), "periodic stats lines on stderr")


def case_config():
    def bad(cfg, words, args=(), check_only=True):
        path = f"{WORK}/bad.json"
        with open(path, "w") as f:
            f.write(cfg if isinstance(cfg, str) else json.dumps(cfg))
        cmd = [SWITCH]
        if not check_only:
            cmd += eal_args(2, "badcfg") + ["--"]
        cmd += ["--config", path] + list(args) + (["--check"] if check_only else ["--max-seconds", "1"])
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        lines = [line for line in p.stderr.splitlines() if line.startswith("tita-switch:")]
        check(p.returncode == 2, f"{words}: exit 2, not {p.returncode} ({p.stderr.strip()[-200:]})")
        check(len(lines) == 1 and all(w in lines[0] for w in words), f"one line naming {words}: {p.stderr.strip()}")

    base = {"ports": ports_cfg(2), "routes": [{"prefix": "default", "ports": [1]}]}
    gen(f"{WORK}/in0.pcap", [])
    gen(f"{WORK}/in1.pcap", [])
    bad("{", ["parse error"])
    bad({"ports": []}, ["ports"])
    bad(dict(base, colour="red"), ["colour", "unknown setting"])
    bad({"ports": [{"name": "net_pcap0", "rate_gbps": -1}]}, ["ports[0].rate_gbps", "must be in"])
    bad({"ports": [{"name": "net_pcap0"}, {"name": "net_pcap0"}]}, ["ports[1].name", "twice"])
    bad(dict(base, routes=[{"prefix": "10.0.0.0/33", "ports": [1]}]), ["routes[0].prefix", "0..32"])
    bad(dict(base, routes=[{"prefix": "10.0.0.0/24", "ports": [7]}]), ["routes[0].ports", "no port 7"])
    bad(dict(base, pfc={"enabled": True, "xoff_bytes": 100, "xon_bytes": 200}), ["pfc.xon_bytes"])
    bad(dict(base, ports=[{"name": "net_pcap0", "ecn": {"kmin_bytes": 9, "kmax_bytes": 1}}]), ["ports[0].ecn"])
    bad(dict(base, ecmp={"dodge": {"field": "ttl"}}), ["ecmp.dodge.field", "ttl"])
    bad(dict(base, buffer={"total_bytes": 1000}), ["buffer_bytes", "no shared buffer"])
    bad(base, ["--set", "path=value"], args=["--set", "nonsense"])
    # Shapes only the flags meet, and numbers too large for JSON's parser.
    bad('{"ports": 5}', ["push_back"], args=["--port", "p0"])
    bad('{"ports": [], "seed": 1e999999}', ["number overflow"])
    bad(base, ["routes[1].ports", "99999999999999999999999"], args=["--route", "default=99999999999999999999999"])
    bad(dict(base, ports=[{"name": "net_pcap0"}, {"name": "net_pcap9"}]), ["port 'net_pcap9'"], check_only=False)
    # Bytes that are not UTF-8 from the command line (a file's are the parser's
    # to refuse): a message, not the JSON serializer's exception (found by the
    # switch-set fuzzer; it aborted --check --json).
    bad(base, ["--set", "not UTF-8", "0xA1"], args=[b"--set", b"ports.0.name=tr\xa1x", "--json"])
    bad(base, ["config: text that is not UTF-8", "0xFF"], args=[b"--port", b"\xff", "--json"])
    # The shipped examples are valid.
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "apps", "tita-switch", "examples")
    for name in sorted(os.listdir(examples)):
        p = subprocess.run([SWITCH, "--config", os.path.join(examples, name), "--check"], capture_output=True, text=True)
        check(p.returncode == 0, f"example {name}: {p.stderr.strip()}")
    # Flags alone make a switch.
    p = subprocess.run([SWITCH, "--port", "a", "--port", "b", "--route", "default=1", "--set", "ports.1.rate_gbps=10",
                        "--check"], capture_output=True, text=True)
    check(p.returncode == 0 and "2 ports, 1 routes" in p.stdout, f"flags-only configuration: {p.stdout}{p.stderr}")
    # RED thresholds are bytes at the port; unset ones the default at its rate;
    # base_rate_gbps scales them (the HPCC artifact's per-100G settings).
    def red(*sets):
        args = [SWITCH, "--port", "a", "--port", "b", "--route", "default=1", "--set", "ports.1.rate_gbps=25"]
        for kv in sets:
            args += ["--set", "ports.1.ecn." + kv]
        p = subprocess.run(args + ["--check", "--json"], capture_output=True, text=True)
        if not check(p.returncode == 0, f"RED {sets}: {p.stderr.strip()}"):
            return None
        e = json.loads(p.stdout)["ports"][1]["ecn"]
        return e["kmin_bytes"], e["kmax_bytes"], e["pmax"]
    check(red() == (100000, 400000, 0.2), f"RED defaults at 25 Gb/s: {red()}")
    check(red("kmin_bytes=40000") == (40000, 400000, 0.2), f"Kmin at the port: {red('kmin_bytes=40000')}")
    scaled = red("kmin_bytes=40000", "kmax_bytes=160000", "base_rate_gbps=100")
    check(scaled == (10000, 40000, 0.2), f"Kmin/Kmax per 100 Gb/s at a 25 Gb/s port: {scaled}")


def case_signal():
    cfg = {"ports": ports_cfg(2), "routes": [{"prefix": "default", "ports": [1]}]}
    gen(f"{WORK}/in0.pcap", [])
    gen(f"{WORK}/in1.pcap", [])
    with open(f"{WORK}/sig.json", "w") as f:
        json.dump(cfg, f)
    for sig in (signal.SIGTERM, signal.SIGINT):
        tag = f"sig{int(sig)}"
        cmd = [SWITCH] + eal_args(2, tag) + ["--", "--config", f"{WORK}/sig.json", "--json", "--max-seconds", "60",
                                              "--stats-ms", "0"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(100):
            if socket_path(f"tsw_{tag}_{os.getpid()}"):
                break
            time.sleep(0.1)
        time.sleep(0.3)
        t0 = time.time()
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        check(p.returncode == 0, f"{sig.name}: exit {p.returncode}: {err[-300:]}")
        check(time.time() - t0 < 5, f"{sig.name}: prompt shutdown")
        try:
            rep = json.loads(out)
            check(len(rep["ports"]) == 2, "final JSON lists the ports")
        except ValueError:
            check(False, f"{sig.name}: final JSON on stdout: {out[-300:]}")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    globals()["case_" + CASE]()
    if failures:
        print(f"{CASE}: {len(failures)} failure(s)")
        sys.exit(1)
    print(f"{CASE}: ok")


if __name__ == "__main__":
    main()
