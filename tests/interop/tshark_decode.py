#!/usr/bin/python3
"""tshark decodes the frames tita builds: for every opcode, the BTH, DETH, RETH, AETH and
ImmDt fields Wireshark shows equal the ones tita wrote.

Usage: tshark_decode.py TITA_WIRE WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

FIELDS = [
    ("opcode", "infiniband.bth.opcode"),
    ("psn", "infiniband.bth.psn"),
    ("destqp", "infiniband.bth.destqp"),
    ("pkey", "infiniband.bth.p_key"),
    ("ackreq", "infiniband.bth.a"),
    ("se", "infiniband.bth.se"),
    ("padcnt", "infiniband.bth.padcnt"),
    ("deth.q_key", "infiniband.deth.q_key"),
    ("deth.srcqp", "infiniband.deth.srcqp"),
    ("reth.va", "infiniband.reth.va"),
    ("reth.r_key", "infiniband.reth.r_key"),
    ("reth.dmalen", "infiniband.reth.dmalen"),
    ("aeth.syndrome", "infiniband.aeth.syndrome"),
    ("aeth.msn", "infiniband.aeth.msn"),
    ("immdt", "infiniband.immdt"),
    ("atomiceth.swap_or_add_data", "infiniband.atomiceth.swapdt"),
    ("atomiceth.compare_data", "infiniband.atomiceth.cmpdt"),
    ("atomicacketh", "infiniband.atomicacketh.origremdt"),
]


def lookup(record, key):
    # Wireshark shows the AtomicETH address and key under the RETH field names.
    if key.startswith("reth.") and "atomiceth" in record:
        key = "atomiceth." + key[len("reth."):]
    v = record
    for part in key.split("."):
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    return v


def as_int(text, field):
    text = text.strip()
    if text in ("True", "False"):
        return int(text == "True")
    if field == "infiniband.immdt":  # a byte string: hex digits, no prefix
        return int(text.replace(":", ""), 16)
    return int(text, 0)


def main():
    tita, workdir = sys.argv[1], sys.argv[2]
    if shutil.which("tshark") is None:
        print("tshark is not installed (scripts/setup.sh installs it)")
        sys.exit(1)
    os.makedirs(workdir, exist_ok=True)
    failures, checked = [], 0
    for ipv6 in (False, True):
        pcap = os.path.join(workdir, f"tshark-{'v6' if ipv6 else 'v4'}.pcap")
        out = subprocess.run([tita, "gen", "--pcap", pcap, "--count", "5", "--seed", "21"] +
                             (["--ipv6"] if ipv6 else []), check=True, capture_output=True, text=True).stdout
        records = [json.loads(l) for l in out.splitlines()]
        args = ["tshark", "-r", pcap, "-T", "fields", "-E", "separator=|", "-E", "occurrence=f"]
        for _, f in FIELDS:
            args += ["-e", f]
        res = subprocess.run(args, check=True, capture_output=True, text=True)
        rows = res.stdout.splitlines()
        if len(rows) != len(records):
            failures.append(f"tshark printed {len(rows)} rows for {len(records)} frames")
            continue
        for rec, row in zip(records, rows):
            cols = row.split("|")
            name = f"{rec['opcode_name']} ({'v6' if ipv6 else 'v4'})"
            for (key, field), text in zip(FIELDS, cols):
                want = lookup(rec, key)
                if isinstance(want, bool):
                    want = int(want)
                if want is None:
                    if text != "":
                        failures.append(f"{name}: tshark shows {field}={text} that tita did not write")
                    continue
                # Wireshark 4.0 does not know the CNP opcode's headers; only the BTH is decoded.
                if text == "":
                    failures.append(f"{name}: tshark shows no {field}")
                    continue
                if as_int(text, field) != want:
                    failures.append(f"{name}: {field} tshark {text} != tita {want}")
                checked += 1
    for f in failures[:40]:
        print("FAIL:", f)
    print(f"tshark decode: {checked} field values checked, {len(failures)} mismatches")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
