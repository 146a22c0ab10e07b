#!/usr/bin/python3
"""Writes tita_fuzz's seed corpora (tests/fuzz/seeds/TARGET/) from real frames.

Usage: make_seeds.py BUILD_DIR [OUT_DIR]

The frames come from a capture of two tita engines exchanging every verb over
a lossy link (BUILD_DIR/tests/engine/engine_capture, the capture tshark decodes
in the engine-tshark test): SENDs, WRITEs, READ requests and responses, ACKs,
NAKs, CNPs. Each engine seed is a scenario in tita_fuzz's record format
(tests/fuzz/tita_fuzz.cc): requests of our own posted, then real frames of one
opcode delivered to both QPs with time passing; one seed replays the whole
conversation's frames towards one side; one is an ARP request and answer. Switch seeds put the same frames on
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


def main():
    build = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")
    with tempfile.TemporaryDirectory() as tmp:
        cap = os.path.join(tmp, "engine.pcap")
        subprocess.run([os.path.join(build, "tests", "engine", "engine_capture"), cap], check=True,
                       stdout=subprocess.DEVNULL)
        frames = pcap_frames(cap)
    by_op = {}
    for f in frames:
        by_op.setdefault(opcode(f), []).append(f)
    seeds = {"engine": {}, "switch": {}, "switch-config": {}, "cc-params": {}}
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
    for target, files in seeds.items():
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(files)} seeds in {d}")


if __name__ == "__main__":
    main()
