#!/usr/bin/env python3
"""FCT slowdowns of the HPCC paper's simulator (the artifact: ns-3.17, scratch/third)
against tita-sim's on the same flow file: scripts/validation/hpcc-artifact.sh runs
both and this script; doc/validation/vs-artifact.md is its output.

Usage: vs_artifact.py [--flows FLOWFILE] LABEL ARTIFACT_FCT_TXT TITA_FCT_CSV [LABEL ART TITA ...] > out.md
       (a LABEL of the form @FLOWFILE:LABEL names that pair's flow file)

artifact fct.txt line: sip dip sport dport size start_ns fct_ns standalone_fct_ns
  (node id = (ip >> 8) & 0xffff, as third.cc's ip_to_node_id)
tita fct.csv: header with id,src,dst,bytes,start_ns,end_ns,fct_ns,ideal_ns,slowdown,...

Slowdown = fct / ideal, floored at 1 (fct_analysis.py).  Percentile = a[int(n*p)] of the
sorted list (fct_analysis.py's get_pctl).  Flows are matched on (src, dst, size, start_ns).
"""
import csv
import sys
from collections import Counter

FIXED = [("<100KB", 0, 100_000), ("100KB-1MB", 100_000, 1_000_000),
         ("1MB-10MB", 1_000_000, 10_000_000), (">10MB", 10_000_000, 1 << 62)]
PCTS = [0.5, 0.95, 0.99]


def pctl(a, p):
    return a[int(len(a) * p)]


def read_flowfile(path):
    flows = []
    with open(path) as f:
        n = int(f.readline().split()[0])
        for line in f:
            s = line.split()
            if len(s) < 6:
                continue
            src, dst, size = int(s[0]), int(s[1]), int(s[4])
            start_ns = round(float(s[5]) * 1e9)
            flows.append((src, dst, size, start_ns))
    return n, flows


def read_artifact(path):
    d = {}
    with open(path) as f:
        for line in f:
            s = line.split()
            if len(s) < 8:
                continue
            sip, dip = int(s[0], 16), int(s[1], 16)
            src, dst = (sip >> 8) & 0xFFFF, (dip >> 8) & 0xFFFF
            size, start, fct, ideal = int(s[4]), int(s[5]), int(s[6]), int(s[7])
            key = (src, dst, size, start)
            assert key not in d, key
            d[key] = dict(fct=fct, ideal=ideal, slow=max(1.0, fct / ideal), end=start + fct)
    return d


def read_tita(path):
    d = {}
    notok = 0
    with open(path) as f:
        r = csv.DictReader(f)
        for row in r:
            key = (int(row["src"]), int(row["dst"]), int(row["bytes"]), int(round(float(row["start_ns"]))))
            assert key not in d, key
            fct, ideal = float(row["fct_ns"]), float(row["ideal_ns"])
            slow = max(1.0, fct / ideal)
            if "ok" in row and row["ok"] not in ("1", "true", "True"):
                notok += 1
            d[key] = dict(fct=fct, ideal=ideal, slow=slow, slow_col=float(row["slowdown"]),
                          ok=row.get("ok"), end=float(row["end_ns"]))
    return d, notok


def fmt(x):
    return "%.3f" % x


def table(rows_a, rows_t, buckets):
    """rows_*: dict key -> rec; buckets: list of (name, keys)."""
    out = ["| bucket | n | art p50 | tita p50 | ratio | art p95 | tita p95 | ratio | art p99 | tita p99 | ratio |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    flagged = []
    for name, keys in buckets:
        if not keys:
            out.append("| %s | 0 | | | | | | | | | |" % name)
            continue
        a = sorted(rows_a[k]["slow"] for k in keys)
        t = sorted(rows_t[k]["slow"] for k in keys)
        cells = [name, str(len(keys))]
        for p in PCTS:
            va, vt = pctl(a, p), pctl(t, p)
            r = vt / va
            cells += [fmt(va), fmt(vt), "%.3f" % r]
            if abs(r - 1) > 0.15:
                flagged.append("%s p%d: tita/art = %.3f (art %.3f, tita %.3f)" % (name, round(p * 100), r, va, vt))
        out.append("| " + " | ".join(cells) + " |")
    return out, flagged


def realign(A, ref_keys, tol=2):
    """The artifact logs startTime = Seconds(double) of the file's %.9f start, which can land 1 ns off
    (double truncation).  Re-key artifact flows onto the reference keys (same src,dst,size; start within tol ns)."""
    idx = {}
    for k in ref_keys:
        idx.setdefault(k[:3], []).append(k[3])
    out, shifted, unmatched = {}, Counter(), 0
    for k, v in A.items():
        cands = [s for s in idx.get(k[:3], []) if abs(s - k[3]) <= tol]
        if len(cands) == 1:
            nk = k[:3] + (cands[0],)
            shifted[k[3] - cands[0]] += 1
        else:
            nk = k
            unmatched += 1
        assert nk not in out
        out[nk] = v
    return out, shifted, unmatched


def compare(label, art_path, tita_path, flowfile=None):
    A = read_artifact(art_path)
    T, notok = read_tita(tita_path)
    A, shifted, unmatched = realign(A, T.keys())
    L = ["## %s" % label, "", "artifact: `%s`  " % art_path, "tita-sim: `%s`" % tita_path, ""]
    L.append("artifact start_ns minus flow-file/tita start_ns (matched on src,dst,size, |diff|<=2 ns): %s; unmatched %d" %
             (dict(sorted(shifted.items())), unmatched))
    L.append("")
    if flowfile:
        n_hdr, flows = read_flowfile(flowfile)
        fset = Counter(flows)
        L.append("flow file `%s`: header says %d flows, %d lines, %d distinct (src,dst,size,start)" %
                 (flowfile, n_hdr, len(flows), len(fset)))
        L.append("- artifact finished: %d; missing from artifact: %d; extra in artifact: %d" %
                 (len(A), len(set(fset) - set(A)), len(set(A) - set(fset))))
        L.append("- tita finished (rows): %d; missing from tita: %d; extra in tita: %d; rows with ok!=1: %d" %
                 (len(T), len(set(fset) - set(T)), len(set(T) - set(fset)), notok))
    common = sorted(set(A) & set(T), key=lambda k: (k[2], k[3], k[0], k[1]))
    L.append("- flows in both outputs: %d (artifact only %d, tita only %d)" %
             (len(common), len(set(A) - set(T)), len(set(T) - set(A))))
    sa = sorted(k[2] for k in A)
    st = sorted(k[2] for k in T)
    L.append("- size multisets identical: %s; total bytes art %d, tita %d" % (sa == st, sum(sa), sum(st)))
    # ideal FCT
    diffs = [(T[k]["ideal"] - A[k]["ideal"], k) for k in common]
    nexact = sum(1 for d, _ in diffs if abs(d) < 0.5)
    nrel = sum(1 for d, k in diffs if abs(d) / A[k]["ideal"] > 0.001)
    worst = max(diffs, key=lambda x: abs(x[0])) if diffs else (0, None)
    L.append("- ideal FCT: %d/%d equal within 0.5 ns; %d differ by >0.1%%; largest diff %.1f ns (flow %s, art %s, tita %s)" %
             (nexact, len(common), nrel, worst[0], worst[1],
              A[worst[1]]["ideal"] if worst[1] else "-", T[worst[1]]["ideal"] if worst[1] else "-"))
    # tita slowdown column vs recomputed
    bad = sum(1 for k in common if abs(T[k]["slow_col"] - T[k]["slow"]) > 1e-3 * T[k]["slow"])
    L.append("- tita `slowdown` column vs fct_ns/ideal_ns floored at 1: %d rows differ by >0.1%%" % bad)
    L.append("- last completion: artifact %.6f s, tita %.6f s" %
             (max(A[k]["end"] for k in A) * 1e-9, max(T[k]["end"] for k in T) * 1e-9))
    L.append("")

    # fixed buckets + overall
    buckets = [(n, [k for k in common if lo <= k[2] < hi]) for n, lo, hi in FIXED]
    buckets.append(("all", common))
    L.append("### Slowdown by fixed size bucket (bytes; lower bound inclusive)")
    L.append("")
    t, flagged = table(A, T, buckets)
    L += t
    L.append("")
    # artifact's own bucketing: flows sorted by size, 20 bins of 5% of the flows each
    L.append("### Slowdown by fct_analysis.py bins (flows sorted by size, 5% of flows per bin; label = largest size in bin)")
    L.append("")
    n = len(common)
    qb = []
    for i in range(0, 100, 5):
        lo, hi = i * n // 100, (i + 5) * n // 100
        keys = common[lo:hi]
        qb.append(("%2d-%d%% <=%d" % (i, i + 5, keys[-1][2]), keys))
    t, flagged2 = table(A, T, qb)
    L += t
    L.append("")
    # mean slowdown per fixed bucket
    L.append("mean slowdown: " + "; ".join(
        "%s art %.3f tita %.3f (x%.3f)" % (nm, sum(A[k]["slow"] for k in ks) / len(ks),
                                            sum(T[k]["slow"] for k in ks) / len(ks),
                                            (sum(T[k]["slow"] for k in ks) / sum(A[k]["slow"] for k in ks)))
        for nm, ks in buckets if ks))
    L.append("")
    # per-flow FCT ratio
    def med(x):
        x = sorted(x)
        return x[len(x) // 2] if x else float("nan")
    parts = []
    for nm, ks in buckets:
        r_all = [T[k]["fct"] / A[k]["fct"] for k in ks]
        r_unc = [T[k]["fct"] / A[k]["fct"] for k in ks if A[k]["fct"] / A[k]["ideal"] < 1.02]
        parts.append("%s median %.3f (uncontended in artifact, fct<1.02x ideal: median %.3f over %d)" %
                     (nm, med(r_all), med(r_unc), len(r_unc)))
    L.append("per-flow tita_fct/artifact_fct: " + "; ".join(parts))
    L.append("")
    if flagged or flagged2:
        L.append("**cells with tita/artifact off by more than 15%:**")
        L.append("")
        for f in flagged:
            L.append("- fixed: " + f)
        for f in flagged2:
            L.append("- 5%-bin: " + f)
        L.append("")
    return L


def main(argv):
    flowfile = None
    if len(argv) >= 2 and argv[0] == "--flows":
        flowfile = argv[1]
        argv = argv[2:]
    out = ["# HPCC artifact vs tita-sim: FCT slowdown", "",
           "Slowdown = FCT / ideal (standalone) FCT, floored at 1; percentile = sorted[int(n*p)] as fct_analysis.py.",
           "ratio = tita / artifact.", ""]
    i = 0
    while i + 3 <= len(argv):
        lab, a, t = argv[i:i + 3]
        ff = flowfile
        if lab.startswith("@"):  # @flowfile:label
            ff, lab = lab[1:].split(":", 1)
        out += compare(lab, a, t, ff)
        i += 3
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
