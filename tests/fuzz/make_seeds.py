#!/usr/bin/python3
"""Writes tita_fuzz's seed corpora (tests/fuzz/seeds/TARGET/) from real frames.

Usage: make_seeds.py BUILD_DIR [OUT_DIR]

The frames come from a capture of two tita engines exchanging every verb over
a lossy link (BUILD_DIR/tests/engine/engine_capture, the capture tshark decodes
in the engine-tshark test): SENDs, WRITEs, READ requests and responses, ACKs,
NAKs, CNPs. Each engine seed is a scenario in tita_fuzz's record format
(tests/fuzz/tita_fuzz.cc): requests of our own posted, then real frames of one
opcode delivered to both QPs with time passing; one seed replays the whole
conversation's frames towards one side; one is an ARP request and answer; the
sr-* seeds do the same with a capture in selective-repeat mode (SACKs, atomics)
towards the selective-repeat QP. Api seeds are verbs scenarios over the
loopback (tita_fuzz's api records); verbs-config and sim-files seeds are the
settings and files tita's own documents use. Switch seeds put the same frames on
every port, with a PFC pause and resume and an 802.1Q-tagged copy. The
configuration and parameter seeds are the documents tita's own tests and
templates use.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile


def pcap_frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, out = 24, []
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def rec(op, body=b""):
    return bytes([op]) + struct.pack("<H", len(body)) + body


def frame_rec(qp, frame, mr=0, raw=False):
    return rec((qp << 3) | (0x40 if raw else 0), bytes([mr]) + frame)


def time_rec(us, op=4):
    """Time passes: the record's length field is the microseconds, no body."""
    return bytes([op]) + struct.pack("<H", us)


def post(qp, kind, size=1024, off=0, remote=0):
    return rec(5 | (qp << 3), bytes([kind, size & 255, size >> 8, off & 255, off >> 8, remote]))


def opcode(frame):
    # Ethernet (+ 802.1Q) / IPv4 / UDP 4791 / BTH
    l3 = 18 if frame[12:14] == b"\x81\x00" else 14
    if len(frame) < l3 + 20 + 8 + 12:
        return None
    ihl = (frame[l3] & 15) * 4
    return frame[l3 + ihl + 8]


def pfc(pause_quanta, priority=3):
    quanta = [0] * 8
    quanta[priority] = pause_quanta
    body = struct.pack(">HH8H", 0x0101, 1 << priority, *quanta)
    f = bytes.fromhex("0180c2000001") + bytes.fromhex("020000000009") + b"\x88\x08" + body
    return f + b"\0" * (60 - len(f))


def vlan(frame, pcp=3, vid=10):
    return frame[:12] + b"\x81\x00" + struct.pack(">H", pcp << 13 | vid) + frame[12:]


def api_rec(op, body=b""):
    return bytes([op]) + struct.pack("<H", len(body)) + bytes(body)


def api_seeds(out):
    """Scenarios in tita_fuzz's api records: QPs, connections over the loopback,
    receives and every kind of request, with valid keys and with wrong ones."""
    MR_RW, MR_RO, MR_WO, MR_LOCAL, MR_NONE = range(5)
    WRITE, WRITE_IMM, SEND, SEND_IMM, READ, CAS, FAA = range(7)
    SIGNALED, INLINE = 2, 8

    def create(pd=0):
        return api_rec(0, [64, 64, 4, 64, 0, pd << 1])

    def connect(a, b, sr=False, mtu=2):
        return api_rec(2, [a, b, mtu | 0x40, 0x0F | (0x10 if sr else 0) | 0x80 | (4 << 5)])

    def sge(mr, off, length, key=0):
        return [mr | key << 6, off & 255, (off >> 8) & 255, length & 255, length >> 8]

    def recv(qp, mr=MR_LOCAL, off=0, length=4096):
        return api_rec(4, [qp, 1] + sge(mr, off, length))

    def send(qp, op, local, remote_mr=MR_RW, remote_off=0, flags=SIGNALED, bad_rkey=False, imm=7):
        return api_rec(3, [qp, 0, op, flags, 1, remote_mr | (0x80 if bad_rkey else 0), remote_off & 255,
                           (remote_off >> 8) & 255, imm] + local)

    def time(us):
        return bytes([8]) + struct.pack("<H", us)

    base = create() + create() + create() + create() + connect(0, 1) + connect(1, 0) + connect(2, 3, sr=True) \
        + connect(3, 2, sr=True) + recv(1) + recv(1, off=0) + recv(3)
    every = b""
    for qp in (0, 2):
        every += (send(qp, SEND, sge(MR_RW, 0, 100)) + send(qp, WRITE, sge(MR_RW, 0, 3000), MR_WO, 16)
                  + send(qp, READ, sge(MR_LOCAL, 0, 2000), MR_RO, 0) + send(qp, FAA, sge(MR_RW, 64, 8), MR_RW, 64)
                  + send(qp, CAS, sge(MR_RW, 72, 8), MR_RW, 72) + send(qp, WRITE_IMM, sge(MR_RW, 0, 10), MR_RW, 128)
                  + send(qp, SEND, sge(MR_RW, 0, 40), flags=SIGNALED | INLINE) + time(20))
    out["loopback-every-verb"] = base + every + time(200)
    bad = (send(0, WRITE, sge(MR_RW, 0, 100), MR_RO, 0) + send(0, WRITE, sge(MR_RW, 0, 100), MR_RW, 0, bad_rkey=True)
           + send(0, READ, sge(MR_RO, 0, 100), MR_RW, 0) + send(0, FAA, sge(MR_RW, 0, 8), MR_RW, 3)
           + send(2, WRITE, sge(MR_RW, 0, 100, key=3), MR_RW, 0) + send(2, WRITE, sge(MR_RW, 8000, 1000), MR_RW, 0)
           + send(2, READ, sge(MR_LOCAL, 0, 100), MR_RW, 0xFFF0) + send(2, SEND, sge(MR_NONE, 0, 100)) + time(100))
    out["loopback-bad-access"] = base + bad + time(200)
    pds = create(1) + create(1) + connect(4, 5) + connect(5, 4)
    out["two-pds"] = base + pds + send(4, WRITE, sge(MR_WO, 0, 100), MR_WO, 0) \
        + send(0, WRITE, sge(MR_RW, 0, 100), MR_WO, 0) + send(4, WRITE, sge(MR_RW, 0, 100), MR_RW, 0) + time(100)
    # The ladder as separate modify records (what ibv_modify_qp passes).
    def modify(qp, state, mask, dest):
        body = [qp, state] + list(struct.pack("<I", mask)) + [2, 7, 0, 0, dest, 8, 3, 3, 1, 4, 4, 0x0F, 0, 0, 0, 0,
                                                              0, 0, 0, 0]
        return api_rec(1, body)
    init = 1 | 8 | 16 | 32
    rtr = 1 | 0x80 | 0x100 | (1 << 20) | 0x1000 | (1 << 17) | (1 << 15)
    rts = 1 | (1 << 16) | 0x200 | 0x400 | 0x800 | 0x2000
    ladder = create() + create()
    for a, b in ((0, 1), (1, 0)):
        ladder += modify(a, 1, init, b) + modify(a, 2, rtr, b) + modify(a, 3, rts, b)
    out["modify-ladder"] = ladder + recv(1) + send(0, SEND, sge(MR_RW, 0, 500)) + send(0, WRITE, sge(MR_RW, 0, 500))\
        + time(100) + api_rec(7, [1]) + send(0, WRITE, sge(MR_RW, 0, 500)) + time(60000)
    out["register"] = base + api_rec(5, [MR_RW, 0, 16, 0, 16, 0x0F, 0, 0]) + api_rec(5, [MR_RO, 0, 0, 0, 8, 0x06, 0, 1]) \
        + send(0, WRITE, sge(5, 0, 100), 5, 0) + api_rec(6, [5]) + send(0, WRITE, sge(MR_RW, 0, 100), 5, 0) + time(100)


def sim_seeds(out, workloads):
    out["topology-small"] = b"\0" + b"4 2 3\n2 3\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1us 0.001\n2 3 400Gbps 0.001ms 0\n"
    with open(os.path.join(workloads, "fat_tree_320.topo"), "rb") as f:
        lines = f.read().split(b"\n")
    out["topology-hpcc-head"] = b"\0" + b"\n".join(lines[:2] + lines[2:60])  # the real file's shape, cut
    out["flows"] = b"\1" + b"3\n0 1 3 100 100000 2.0\n1 0 3 100 5000 2.000001\n2 5 3 100 1 0\n"
    for name in ("websearch", "fb_hadoop"):
        with open(os.path.join(workloads, name + ".cdf"), "rb") as f:
            out["cdf-" + name] = b"\2" + f.read()
    out["values"] = b"\3" + (b"rate 100Gbps\nrate 40Mb/s\nrate 1e11\ntime 4us\ntime 0.001ms\ntime 1000\n"
                              b"bytes 1MiB\nbytes 5e5\nreal 0.5\ncount 7\n"
                              b"cc dcqcn rate_ai_bps=40Mb/s,rate_timer_ns=300us\ncc hpcc eta=0.95\n")


def main():
    build = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
    with tempfile.TemporaryDirectory() as tmp:
        cap = os.path.join(tmp, "engine.pcap")
        subprocess.run([os.path.join(build, "tests", "engine", "engine_capture"), cap], check=True,
                       stdout=subprocess.DEVNULL)
        frames = pcap_frames(cap)
        sr_cap = os.path.join(tmp, "sr.pcap")
        subprocess.run([os.path.join(build, "tests", "engine", "engine_capture"), sr_cap, "--selective-repeat"],
                       check=True, stdout=subprocess.DEVNULL)
        sr_frames = pcap_frames(sr_cap)
    by_op = {}
    for f in frames:
        by_op.setdefault(opcode(f), []).append(f)
    seeds = {"engine": {}, "api": {}, "switch": {}, "switch-config": {}, "switch-set": {}, "cc-params": {}, "verbs-config": {},
             "sim-files": {}}
    ours = post(0, 0, 3000) + post(0, 2, 2048, 4096) + post(0, 3, 8, 64) + post(1, 2, 1024) + post(1, 1, 512)
    for op, fs in sorted((k, v) for k, v in by_op.items() if k is not None):
        body = ours
        for i, f in enumerate(fs[:3]):
            body += frame_rec(0, f, mr=i) + frame_rec(1, f, mr=i + 1) + time_rec(5)
        seeds["engine"][f"opcode-{op:02x}"] = body
        seeds["engine"][f"opcode-{op:02x}-raw"] = ours + frame_rec(0, fs[0], raw=True)
    # ARP for our address (10.0.0.1) and an answer from the peer (10.0.0.153), as
    # the engine's neighbour table takes them (delivered raw: ARP is not RoCE).
    def arp(op, sha, spa, tha, tpa, dst):
        return (dst + sha + b"\x08\x06" + struct.pack(">HHBBH", 1, 0x0800, 6, 4, op) + sha + spa + tha + tpa
                + b"\0" * 18)
    peer_mac, our_mac = bytes.fromhex("020000000099"), bytes.fromhex("020000000001")
    peer_ip, our_ip = bytes([10, 0, 0, 153]), bytes([10, 0, 0, 1])
    seeds["engine"]["arp"] = (frame_rec(0, arp(1, peer_mac, peer_ip, b"\0" * 6, our_ip, b"\xff" * 6), raw=True)
                              + frame_rec(0, arp(2, peer_mac, peer_ip, our_mac, our_ip, our_mac), raw=True)
                              + time_rec(5))
    conv = ours
    for i, f in enumerate(frames[:60]):
        conv += frame_rec(i & 1, f, mr=i % 5)
        if i % 10 == 9:
            conv += time_rec(20)
    seeds["engine"]["conversation"] = conv
    # Selective repeat (QP 1): the frames of a capture whose QPs recover
    # selectively (NAKs with SACKs in tita's trailer) and exchange atomics too;
    # one seed delivers the data frames in reverse order (every one out of order).
    sr_ours = post(1, 0, 3000) + post(1, 2, 2048, 4096) + post(1, 3, 8, 64) + post(1, 1, 512) + post(1, 4, 8, 72)
    sr_by_op = {}
    for f in sr_frames:
        sr_by_op.setdefault(opcode(f), []).append(f)
    for op, fs in sorted((k, v) for k, v in sr_by_op.items() if k is not None):
        body = sr_ours
        for i, f in enumerate(fs[:3]):
            body += frame_rec(1, f, mr=i) + time_rec(5)
        seeds["engine"][f"sr-opcode-{op:02x}"] = body
    conv = sr_ours
    for i, f in enumerate(sr_frames[:60]):
        conv += frame_rec(1, f, mr=i % 5)
        if i % 10 == 9:
            conv += time_rec(20)
    seeds["engine"]["sr-conversation"] = conv
    data = [f for f in sr_frames if opcode(f) is not None and opcode(f) <= 0x0B][:20]
    seeds["engine"]["sr-reversed"] = sr_ours + b"".join(frame_rec(1, f) for f in reversed(data)) + time_rec(50)
    api_seeds(seeds["api"])
    # Switch: frames on every port, a pause and a resume, a tagged copy, time passing.
    sw = b""
    for i, f in enumerate(frames[:60]):
        sw += rec((i % 4) | (8 if i % 5 == 4 else 0), f)
    sw += rec(1, pfc(0xFFFF)) + rec(0, vlan(frames[0])) + time_rec(100) + rec(1, pfc(0))
    seeds["switch"]["conversation"] = sw
    for op, fs in sorted((k, v) for k, v in by_op.items() if k is not None):
        seeds["switch"][f"opcode-{op:02x}"] = rec(0, fs[0]) + rec(3, vlan(fs[0])) + rec(8 | 2, fs[-1])
    seeds["switch"]["pfc"] = rec(0, pfc(0xFFFF)) + rec(3, pfc(100, 5)) + time_rec(16) + rec(0, pfc(0))
    # tita-switch configurations: tita's own (tests/ops, the demo, a template).
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "scripts", "demo"))
    sys.path.insert(0, os.path.join(here, "..", "ops"))
    import incast  # noqa: E402
    seeds["switch-config"]["incast"] = json.dumps(incast.switch_config(3, 1.0, 0.01)).encode()
    seeds["switch-config"]["full"] = json.dumps({
        "ports": [{"name": "p0", "rate_gbps": 100, "buffer_bytes": 1000000, "strict_priority": False,
                   "ecn": {"enabled": True, "kmin_bytes": 1000, "kmax_bytes": 20000, "pmax": 0.1},
                   "faults": {"drop_probability": 0.01, "delay_ns": 100}},
                  {"name": "p1", "mac": "02:00:00:00:00:01", "next_hop_mac": "02:00:00:00:00:02"}],
        "routes": [{"prefix": "10.0.0.0/24", "ports": [0, 1]}, {"prefix": "default", "ports": ["p1"]},
                   {"prefix": "fd00::/64", "ports": [0]}],
        "buffer": {"total_bytes": 4000000, "headroom_bytes": 100000},
        "pfc": {"enabled": True, "priorities": [3, 4]}, "int": {"enabled": True},
        "priority": {"trust_pcp": False, "dscp_map": {"26": 3, "48": 6}}, "seed": 7}).encode()
    seeds["switch-config"]["minimal"] = b'{"ports": [{"name": "a"}], "routes": []}'
    # --set lines (first byte '#'), on tita_fuzz's two-port document.
    seeds["switch-config"]["set"] = b"#" + b"\n".join([
        b"ports.0.rate_gbps=10", b"ports.1.ecn.kmin_bytes=1000", b"ports.1.ecn.kmax_bytes=20000", b"pfc.enabled=true",
        b"pfc.priorities=[3]", b'routes=[{"prefix": "default", "ports": [1]}]', b"int.enabled=true", b"seed=7"])
    # The same without the mark for switch-set, and lines doc/switch.md shows.
    seeds["switch-set"]["set"] = seeds["switch-config"]["set"][1:]
    seeds["switch-set"]["faults"] = b"\n".join([
        b"ports.1.faults.drop_probability=0.01", b"ports.1.faults.delay_us=5", b"ports.0.buffer_bytes=200000",
        b'ports.1.faults.black_hole={"dport": 4791}', b"ports.0.faults.drop_all=true", b"mmu.buffer_bytes=1000000",
        b"routes.0.ports=[0,1]"])
    # CC parameter strings: byte 0 picks the algorithm (tita_fuzz's order), then lines.
    algos = ["none", "dcqcn", "timely", "hpcc", "swift", "powertcp", "nscc", "tita"]
    sim = os.path.join(build, "ns3-model", "tita-sim")
    perf = os.path.join(build, "apps", "tita-perf")
    if os.path.exists(perf):
        cmd = [perf, "--no-huge", "-m", "64", "--no-pci", "--log-level=*:error", "--file-prefix=make-seeds", "--",
               "--cc", "help"]
    else:
        cmd = [sim, "--cc=help"]
    text = subprocess.run(cmd, capture_output=True, text=True).stdout
    params, current = {}, None
    for line in text.splitlines():
        if line and not line.startswith(" "):
            current = line.split(":")[0].split(" ")[0]
            params[current] = []
        elif current and line.strip():
            words = line.split()
            default = words[words.index("default") + 1] if "default" in words else "1"
            params[current].append(f"{words[0]}={default}")
    for i, a in enumerate(algos):
        seeds["cc-params"][a] = bytes([i]) + "\n".join(params.get(a, [])).encode()
    for i, a in enumerate(algos):
        names = " ".join(params.get(a, []))
        seeds["verbs-config"][f"json-{a}"] = b"\0" + json.dumps({
            "vdev": "net_memif0,role=server,socket=/tmp/m", "ip": f"10.0.0.{i + 1}", "progress": "adaptive",
            "neighbours": {"10.0.0.9": "02:00:00:00:00:09"}, "cc": a, "cc_params": params.get(a, []),
            "recovery": "sr" if i % 2 else "gbn", "max_qps": 128, "rate_gbps": 25, "log": "info"}).encode()
        seeds["verbs-config"][f"env-{a}"] = b"\1" + "\n".join([
            "vdev=net_vhost0,iface=/tmp/s", "ip=10.0.0.1", f"cc={a}", f"cc_params={names}", "mac=02:00:00:00:00:01",
            "hugepages=false", "memory_mb=256", "base_rtt_us=20", "pace=true", "link_wait_ms=1000",
            "arp_retry_ms=10", "arp_tries=3", "neighbours=10.0.0.2=02:00:00:00:00:02,10.0.0.3=02:00:00:00:00:03",
            "device=tita1", "port=0000:00:08.0"]).encode()
    sim_seeds(seeds["sim-files"], os.path.join(here, "..", "..", "data", "workloads"))
    for target, files in seeds.items():
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(files)} seeds in {d}")


if __name__ == "__main__":
    main()
