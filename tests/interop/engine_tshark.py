#!/usr/bin/python3
"""Frames the engine puts on the wire decode in tshark as RoCEv2 with the fields
tita's own parser reads: a lossy two-engine run of every verb is captured, then
tshark's decoding of every frame is compared with `tita-wire parse`.

Usage: engine_tshark.py ENGINE_CAPTURE TITA_WIRE WORKDIR
"""
import json
import os
import subprocess
import sys


def main():
    capture, tita_wire, workdir = sys.argv[1:4]
    os.makedirs(workdir, exist_ok=True)
    pcap = os.path.join(workdir, "engine.pcap")
    subprocess.run([capture, pcap], check=True)
    ours = [json.loads(l) for l in subprocess.run([tita_wire, "parse", "--pcap", pcap], check=True,
                                                  capture_output=True, text=True).stdout.splitlines()]
    fields = ["frame.protocols", "infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.bth.destqp",
              "infiniband.aeth.syndrome", "infiniband.aeth.msn"]
    args = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=|", "-E", "occurrence=f"]
    for f in fields:
        args += ["-e", f]
    rows = subprocess.run(args, check=True, capture_output=True, text=True).stdout.splitlines()
    failures = []
    if len(rows) != len(ours):
        failures.append(f"tshark saw {len(rows)} frames, tita {len(ours)}")
    opcodes, syndromes = set(), set()
    for i, (row, mine) in enumerate(zip(rows, ours)):
        protos, opcode, psn, destqp, syndrome, msn = row.split("|")
        if mine["result"] != "ok":
            failures.append(f"frame {i + 1}: tita's parser says {mine['result']}")
            continue
        if "infiniband" not in protos:
            failures.append(f"frame {i + 1}: tshark does not see InfiniBand ({protos})")
            continue
        if int(opcode) != mine["opcode"] or int(psn) != mine["psn"] or int(destqp, 16) != mine["destqp"]:
            failures.append(f"frame {i + 1}: tshark {opcode}/{psn}/{destqp} != tita {mine['opcode']}/{mine['psn']}/"
                            f"{mine['destqp']}")
        if "aeth" in mine:
            if syndrome == "" or int(syndrome) != mine["aeth"]["syndrome"] or int(msn) != mine["aeth"]["msn"]:
                failures.append(f"frame {i + 1}: AETH tshark {syndrome}/{msn} != tita {mine['aeth']}")
            syndromes.add(mine["aeth"]["syndrome"] & 0x60)
        opcodes.add(mine["opcode"])
    # Every RC opcode the engine uses appeared, and the loss produced NAKs.
    want = set(range(0x00, 0x12))
    missing = sorted(want - opcodes)
    if missing:
        failures.append(f"opcodes never seen: {[hex(m) for m in missing]}")
    if 0x60 not in syndromes:
        failures.append("no NAK was captured although the link dropped 2%")
    for f in failures[:30]:
        print("FAIL:", f)
    print(f"engine tshark: {len(rows)} frames, {len(opcodes)} opcodes, {len(failures)} problems")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
