#!/usr/bin/python3
"""Metrics of one tita-sim run, as doc/validation.md reports them.

    scripts/validation/metrics.py RUN_DIR [--incast FLOWS_FILE] [--json]

A run directory is what `tita-sim --out` writes (fct.csv, summary.json,
qlen_hist.csv, links.csv). Everything here is derived from those files and, for
runs with incasts, from the flow file that scheduled them (gen_flows.py), which
tells incast flows apart from the Poisson background.

- FCT slowdown (fct.csv `slowdown`: FCT / the flow alone in the empty network,
  clamped at 1 as the HPCC artifact does) at p50/p95/p99, nearest rank, per
  flow-size bucket, over the Poisson flows only; "short" = flows < 100 KB,
  "long" = flows >= 1 MB.
- PFC pauses sent by switches and switch drops (summary.json).
- ToR downlink queues: the switch egress ports whose rate is the host rate (in
  the fat trees used here only ToR ports facing hosts run at the host rate),
  sampled every --qlen-interval: mean, p50, p99, p99.9, max (KB).
- Incasts: per event (flows of one receiver starting together), Jain's index of
  the flows' average rates (bytes / FCT) and the spread of their FCTs; the
  event's completion time against its ideal (the event's bytes and their
  packets' headers at the receiver's line rate).
"""
import argparse
import csv
import json
import math
import os
import sys

BUCKETS = [(0, 10_000), (10_000, 100_000), (100_000, 1_000_000), (1_000_000, 10_000_000), (10_000_000, math.inf)]
MTU = 1024
HEADER_BYTES = 86  # per packet on the wire, as tita-sim's ideal FCT counts them
SHORT = (0, 100_000)
LONG = (1_000_000, math.inf)


def human(n):
    if n == math.inf:
        return "inf"
    for unit, div in (("MB", 1e6), ("KB", 1e3)):
        if n >= div:
            return f"{n / div:g}{unit}"
    return f"{n:g}B"


def bucket_name(lo, hi):
    return f"{human(lo)}-{human(hi)}" if hi != math.inf else f">={human(lo)}"


def pctl(sorted_values, p):
    """Nearest rank (the HPCC artifact's get_pctl)."""
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * p))]


def stats(values):
    s = sorted(values)
    return {"n": len(s), "p50": pctl(s, 0.5), "p95": pctl(s, 0.95), "p99": pctl(s, 0.99),
            "mean": sum(s) / len(s) if s else float("nan")}


def read_incast_keys(path):
    """(src host, dst host, start_ns) of the incast flows in a gen_flows.py file."""
    keys = set()
    meta = path + ".json"
    with open(meta) as f:
        m = json.load(f)
    hosts = {v: i for i, v in enumerate(m["host_vertices"])}
    with open(path) as f:
        n = int(f.readline())
        for _ in range(n):
            src, dst, _pg, _dport, size, start = f.readline().split()
            keys.add((hosts[int(src)], hosts[int(dst)], round(float(start) * 1e9)))
    return keys


def load(run_dir, incast_file=None):
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    incast_keys = read_incast_keys(incast_file) if incast_file else set()
    flows, incast = [], []
    with open(os.path.join(run_dir, "fct.csv")) as f:
        for r in csv.DictReader(f):
            if int(r["group"]) >= 0:
                continue
            rec = (int(r["bytes"]), max(1.0, float(r["slowdown"])), int(r["fct_ns"]), int(r["start_ns"]),
                   int(r["src"]), int(r["dst"]), r["ok"] == "1")
            key = (rec[4], rec[5], rec[3])
            # start_ns in fct.csv is the simulator's; the file's seconds round to the ns.
            if key in incast_keys or (rec[4], rec[5], rec[3] + 1) in incast_keys or \
                    (rec[4], rec[5], rec[3] - 1) in incast_keys:
                incast.append(rec)
            else:
                flows.append(rec)
    host_rate = None
    q_hist = {}
    with open(os.path.join(run_dir, "links.csv")) as f:
        rates = sorted({int(r["rate_bps"]) for r in csv.DictReader(f)})
        host_rate = rates[0] if rates else None
    qp = os.path.join(run_dir, "qlen_hist.csv")
    if os.path.exists(qp):
        with open(qp) as f:
            for r in csv.DictReader(f):
                if int(r["rate_bps"]) == host_rate:
                    kb = int(r["kb"])
                    q_hist[kb] = q_hist.get(kb, 0) + int(r["samples"])
    return {"summary": summary, "flows": flows, "incast": incast, "qlen_hist": q_hist, "host_rate": host_rate}


def qlen_stats(hist):
    total = sum(hist.values())
    if not total:
        return None
    items = sorted(hist.items())
    out = {"samples": total, "mean_kb": sum(k * n for k, n in items) / total, "max_kb": items[-1][0]}
    for name, p in (("p50_kb", 0.5), ("p99_kb", 0.99), ("p999_kb", 0.999)):
        acc = 0
        for kb, n in items:
            acc += n
            if acc >= p * total:
                out[name] = kb
                break
    out["nonzero_frac"] = 1 - hist.get(0, 0) / total
    return out


def incast_stats(incast, host_rate):
    events = {}
    for rec in incast:
        events.setdefault(rec[5], []).append(rec)  # by receiver
    # One receiver may host several events: split each receiver's flows by start time.
    out = []
    for dst, recs in events.items():
        recs.sort(key=lambda r: r[3])
        groups, cur = [], [recs[0]]
        for r in recs[1:]:
            if r[3] - cur[0][3] > 1000:  # events start within 1 us (no jitter)
                groups.append(cur)
                cur = [r]
            else:
                cur.append(r)
        groups.append(cur)
        for g in groups:
            rates = [r[0] / r[2] for r in g]
            jain = sum(rates) ** 2 / (len(rates) * sum(x * x for x in rates))
            fcts = sorted(r[2] for r in g)
            # The event alone: every byte, with its 1 KiB packets' 86 B of headers
            # (as the ideal FCT counts them), through the receiver's link.
            wire = sum(r[0] + math.ceil(r[0] / MTU) * HEADER_BYTES for r in g)
            ideal_ns = wire * 8 / host_rate * 1e9
            out.append({"dst": dst, "flows": len(g), "start_ns": g[0][3], "jain": jain,
                        "fct_min_us": fcts[0] / 1e3, "fct_med_us": pctl(fcts, 0.5) / 1e3,
                        "fct_max_us": fcts[-1] / 1e3, "event_over_ideal": fcts[-1] / ideal_ns})
    out.sort(key=lambda e: e["start_ns"])
    return out


def metrics(run_dir, incast_file=None):
    d = load(run_dir, incast_file)
    s = d["summary"]
    m = {"cc": s.get("cc"), "cc_params": s.get("cc_params", ""), "flows_started": s.get("flows_started"),
         "flows_finished": s.get("flows_finished"), "flows_failed": s.get("flows_failed"),
         "pfc_pauses": s.get("pfc_pauses_sent"), "switch_drops": s.get("switch_drops"),
         "nic_drops": s.get("nic_drops"), "sim_ms": s.get("sim_seconds", 0) * 1e3,
         "wall_s": s.get("total_wall_seconds"), "buckets": {}}
    for lo, hi in BUCKETS:
        m["buckets"][bucket_name(lo, hi)] = stats([sd for b, sd, *_ in d["flows"] if lo <= b < hi])
    m["short"] = stats([sd for b, sd, *_ in d["flows"] if SHORT[0] <= b < SHORT[1]])
    m["long"] = stats([sd for b, sd, *_ in d["flows"] if LONG[0] <= b < LONG[1]])
    m["all"] = stats([sd for _, sd, *_ in d["flows"]])
    m["tor_down_qlen"] = qlen_stats(d["qlen_hist"])
    if d["incast"]:
        ev = incast_stats(d["incast"], d["host_rate"])
        m["incast"] = {"events": len(ev), "flows": len(d["incast"]),
                       "jain_mean": sum(e["jain"] for e in ev) / len(ev),
                       "jain_min": min(e["jain"] for e in ev),
                       "over_ideal_mean": sum(e["event_over_ideal"] for e in ev) / len(ev),
                       "slowdown": stats([sd for _, sd, *_ in d["incast"]]),
                       "per_event": ev}
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--incast", help="flow file (gen_flows.py) of the run's incasts")
    ap.add_argument("--json", action="store_true", help="print every metric as JSON")
    a = ap.parse_args()
    m = metrics(a.run, a.incast)
    if a.json:
        json.dump(m, sys.stdout, indent=1)
        print()
        return 0
    print(f"{a.run}: {m['cc']} {m['cc_params']}  flows {m['flows_finished']}/{m['flows_started']} "
          f"PFC {m['pfc_pauses']} drops {m['switch_drops']}")
    for name, st in list(m["buckets"].items()) + [("<100KB", m["short"]), (">=1MB", m["long"])]:
        print(f"  {name:>12}: p50 {st['p50']:.2f} p95 {st['p95']:.2f} p99 {st['p99']:.2f} (n={st['n']})")
    q = m["tor_down_qlen"]
    if q:
        print(f"  ToR down queue KB: mean {q['mean_kb']:.1f} p50 {q['p50_kb']} p99 {q['p99_kb']} "
              f"p99.9 {q['p999_kb']} max {q['max_kb']}")
    if "incast" in m:
        i = m["incast"]
        print(f"  incast: {i['events']} events, Jain mean {i['jain_mean']:.3f} min {i['jain_min']:.3f}, "
              f"last flow / ideal {i['over_ideal_mean']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
