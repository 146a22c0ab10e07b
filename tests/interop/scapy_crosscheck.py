#!/usr/bin/python3
"""Cross-check tita's wire layer against scapy's RoCE layer (scapy.contrib.roce).

(a) Frames tita builds: scapy decodes the same field values, and the ICRC that
    scapy computes equals tita's. scapy 2.5 has no IPv6 ICRC, so IPv6 frames are
    checked against the definition in roce-wire.md, written out below with zlib.
(b) Frames scapy builds (random fields, every opcode): tita parses them, verifies
    their ICRC and reports the same fields.

Usage: scapy_crosscheck.py TITA_WIRE WORKDIR
"""
import json
import os
import random
import struct
import subprocess
import sys
import zlib

import logging
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.all import Ether, IP, IPv6, UDP, Raw, Dot1Q, rdpcap, wrpcap  # noqa: E402
from scapy.contrib.roce import BTH, AETH  # noqa: E402

# Extension headers by opcode, in wire order (IBA 9.2-9.5), written independently of tita.
DETH, RETH, AETH_, IMM, ATOMIC, ATOMIC_ACK, CNP = "deth", "reth", "aeth", "immdt", "atomiceth", "atomicacketh", "cnp"
EXT = {
    0x00: [], 0x01: [], 0x02: [], 0x03: [IMM], 0x04: [], 0x05: [IMM],
    0x06: [RETH], 0x07: [], 0x08: [], 0x09: [IMM], 0x0A: [RETH], 0x0B: [RETH, IMM],
    0x0C: [RETH], 0x0D: [AETH_], 0x0E: [], 0x0F: [AETH_], 0x10: [AETH_],
    0x11: [AETH_], 0x12: [AETH_, ATOMIC_ACK], 0x13: [ATOMIC], 0x14: [ATOMIC],
    0x64: [DETH], 0x65: [DETH, IMM], 0x81: [CNP],
}
HAS_PAYLOAD = {op for op in EXT if op <= 0x0B or 0x0D <= op <= 0x10 or op in (0x64, 0x65)}
EXT_LEN = {DETH: 8, RETH: 16, AETH_: 4, IMM: 4, ATOMIC: 28, ATOMIC_ACK: 8, CNP: 16}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def decode_ext(op, data):
    """Extension headers from the bytes after the BTH; returns (fields, rest)."""
    out = {}
    for h in EXT[op]:
        b, data = data[:EXT_LEN[h]], data[EXT_LEN[h]:]
        if h == DETH:
            qkey, src = struct.unpack("!II", b)
            out[h] = {"q_key": qkey, "srcqp": src & 0xFFFFFF}
        elif h == RETH:
            va, rkey, dmalen = struct.unpack("!QII", b)
            out[h] = {"va": va, "r_key": rkey, "dmalen": dmalen}
        elif h == AETH_:
            out[h] = {"syndrome": b[0], "msn": int.from_bytes(b[1:4], "big")}
        elif h == IMM:
            out[h] = struct.unpack("!I", b)[0]
        elif h == ATOMIC:
            va, rkey, swap, cmp_ = struct.unpack("!QIQQ", b)
            out[h] = {"va": va, "r_key": rkey, "swap_or_add_data": swap, "compare_data": cmp_}
        elif h == ATOMIC_ACK:
            out[h] = struct.unpack("!Q", b)[0]
    return out, data


def icrc_definition(frame):
    """ICRC per roce-wire.md: CRC-32 over 8 x 0xFF and the masked IP datagram."""
    l3 = 14
    if struct.unpack("!H", frame[12:14])[0] == 0x8100:
        l3 = 18
    ip = bytearray(frame[l3:])
    if ip[0] >> 4 == 6:
        total = 40 + struct.unpack("!H", ip[4:6])[0]
        ip = ip[:total]
        ip[0] = 0x6F
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF
        udp = 40
    else:
        total = struct.unpack("!H", ip[2:4])[0]
        ip = ip[:total]
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b"\xff\xff"
        udp = (ip[0] & 15) * 4
    ip[udp + 6:udp + 8] = b"\xff\xff"
    ip[udp + 8 + 4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(ip[:-4])) & 0xFFFFFFFF


def scapy_icrc(pkt):
    return struct.unpack("<I", pkt[BTH].compute_icrc(None))[0]


def check_tita_built(tita, workdir, ipv6, seed):
    pcap = os.path.join(workdir, f"tita-{'v6' if ipv6 else 'v4'}.pcap")
    args = [tita, "gen", "--pcap", pcap, "--count", "15", "--seed", str(seed)] + (["--ipv6"] if ipv6 else [])
    lines = subprocess.run(args, check=True, capture_output=True, text=True).stdout.splitlines()
    records = [json.loads(l) for l in lines]
    packets = rdpcap(pcap)
    check(len(packets) == len(records) and len(records) >= 300, f"expected >= 300 frames, got {len(records)}")
    for pkt, want in zip(packets, records):
        name = f"tita-built {want['opcode_name']} psn {want['psn']}"
        frame = bytes(pkt)
        check(frame.hex() == want["frame"], f"{name}: pcap bytes differ from what gen reported")
        bth = pkt[BTH]
        l3 = pkt[IPv6] if ipv6 else pkt[IP]
        got = {
            "opcode": bth.opcode, "se": bool(bth.solicited), "mig_req": bool(bth.migreq),
            "padcnt": bth.padcount, "tver": bth.version, "pkey": bth.pkey, "fecn": bool(bth.fecn),
            "becn": bool(bth.becn), "destqp": bth.dqpn, "ackreq": bool(bth.ackreq), "psn": bth.psn,
            "udp_sport": pkt[UDP].sport, "src": l3.src, "dst": l3.dst,
            "dscp": (l3.tc if ipv6 else l3.tos) >> 2, "ecn": (l3.tc if ipv6 else l3.tos) & 3,
            "ttl": l3.hlim if ipv6 else l3.ttl,
        }
        for k, v in got.items():
            if k in ("src", "dst"):
                import ipaddress
                check(ipaddress.ip_address(v) == ipaddress.ip_address(want[k]), f"{name}: {k} {v} != {want[k]}")
            else:
                check(v == want[k], f"{name}: {k} scapy {v} != tita {want[k]}")
        # Everything between the BTH and the ICRC, as scapy sees it.
        rest = bytes(bth.payload)
        if bth.opcode == 0x11:
            check(pkt.haslayer(AETH) and pkt[AETH].syndrome == want["aeth"]["syndrome"]
                  and pkt[AETH].msn == want["aeth"]["msn"], f"{name}: scapy AETH differs")
        ext, data = decode_ext(bth.opcode, rest)
        for h, v in ext.items():
            check(want.get(h) == v, f"{name}: {h} {v} != {want.get(h)}")
        payload = data[:len(data) - bth.padcount] if bth.opcode in HAS_PAYLOAD else b""
        check(payload.hex() == want["payload"], f"{name}: payload differs")
        icrc = icrc_definition(frame)
        check(icrc == want["icrc"], f"{name}: ICRC by definition {icrc:#x} != tita {want['icrc']:#x}")
        check(struct.unpack("<I", frame[-4:])[0] == want["icrc"], f"{name}: ICRC not stored LSB first")
        if not ipv6:
            check(scapy_icrc(pkt) == want["icrc"], f"{name}: scapy ICRC {scapy_icrc(pkt):#x} != {want['icrc']:#x}")
    return len(records)


def random_ext(rng, op):
    b = b""
    for h in EXT[op]:
        if h == DETH:
            b += struct.pack("!II", rng.getrandbits(32), rng.getrandbits(24))
        elif h == RETH:
            b += struct.pack("!QII", rng.getrandbits(64), rng.getrandbits(32), rng.getrandbits(32))
        elif h == AETH_:
            b += bytes([rng.getrandbits(7)]) + rng.getrandbits(24).to_bytes(3, "big")
        elif h == IMM:
            b += struct.pack("!I", rng.getrandbits(32))
        elif h == ATOMIC:
            b += struct.pack("!QIQQ", rng.getrandbits(64), rng.getrandbits(32), rng.getrandbits(64), rng.getrandbits(64))
        elif h == ATOMIC_ACK:
            b += struct.pack("!Q", rng.getrandbits(64))
        elif h == CNP:
            b += bytes(16)
    return b


def check_scapy_built(tita, workdir, seed):
    rng = random.Random(seed)
    packets, expect = [], []
    for i in range(15):
        for op in EXT:
            ipv6 = i % 5 == 4
            n = rng.randrange(0, 1400) if op in HAS_PAYLOAD else 0
            pad = (4 - n % 4) % 4
            payload = bytes(rng.getrandbits(8) for _ in range(n))
            ext = random_ext(rng, op)
            bth = BTH(opcode=op, solicited=rng.getrandbits(1), migreq=rng.getrandbits(1), padcount=pad,
                      pkey=rng.getrandbits(16), fecn=rng.getrandbits(1), becn=rng.getrandbits(1),
                      dqpn=rng.getrandbits(24), ackreq=rng.getrandbits(1), psn=rng.getrandbits(24))
            tos = rng.getrandbits(8)
            sport = 0xC000 | rng.getrandbits(14)
            body = Raw(ext + payload + bytes(pad))
            if ipv6:
                l3 = IPv6(src=f"fd00::{rng.getrandbits(16):x}", dst=f"fd00::{rng.getrandbits(16):x}", tc=tos,
                          fl=rng.getrandbits(20), hlim=64)
                frame = bytes(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / l3 / UDP(sport=sport, dport=4791, chksum=0) / bth / body)
                # scapy leaves the IPv6 ICRC zero; fill it in by the definition.
                frame = frame[:-4] + struct.pack("<I", icrc_definition(frame))
                pkt = Ether(frame)
            else:
                l3 = IP(src=f"10.{rng.getrandbits(8)}.0.1", dst="10.1.2.3", tos=tos, ttl=rng.randrange(1, 255))
                pkt = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / l3 / UDP(sport=sport, dport=4791, chksum=0) / bth / body
                pkt = Ether(bytes(pkt))  # let scapy fill lengths, checksum and ICRC
            packets.append(pkt)
            expect.append({"opcode": op, "psn": pkt[BTH].psn, "destqp": pkt[BTH].dqpn, "pkey": pkt[BTH].pkey,
                           "se": bool(pkt[BTH].solicited), "ackreq": bool(pkt[BTH].ackreq), "padcnt": pad,
                           "udp_sport": sport, "dscp": tos >> 2, "ecn": tos & 3, "payload": payload.hex(),
                           "icrc": struct.unpack("<I", bytes(pkt)[-4:])[0], "ip_version": 6 if ipv6 else 4,
                           **decode_ext(op, ext)[0]})
    pcap = os.path.join(workdir, "scapy.pcap")
    wrpcap(pcap, packets)
    out = subprocess.run([tita, "parse", "--pcap", pcap], check=True, capture_output=True, text=True).stdout
    got = [json.loads(l) for l in out.splitlines()]
    check(len(got) == len(expect), f"tita parsed {len(got)} of {len(expect)} frames")
    for g, want in zip(got, expect):
        name = f"scapy-built opcode {want['opcode']:#x} psn {want['psn']}"
        check(g["result"] == "ok", f"{name}: tita says {g['result']}")
        if g["result"] != "ok":
            continue
        for k, v in want.items():
            check(g.get(k) == v, f"{name}: {k} tita {g.get(k)} != scapy {v}")
    return len(expect)


def main():
    tita, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    n = check_tita_built(tita, workdir, False, 11)
    n6 = check_tita_built(tita, workdir, True, 12)
    m = check_scapy_built(tita, workdir, 13)
    for f in failures[:40]:
        print("FAIL:", f)
    print(f"scapy cross-check: {n} IPv4 + {n6} IPv6 tita-built frames, {m} scapy-built frames, "
          f"{len(failures)} mismatches")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
