#!/usr/bin/python3
"""tita-perf through tita-switch, all real DPDK processes on vhost-user ports.

Usage: switch_e2e.py BUILD_DIR CASE WORKDIR
  fair    2-to-1 incast into a 1 Gb/s bottleneck under dcqcn, hpcc and tita: both
          flows get a fair share (Jain >= 0.9), the queue stays below the ECN
          band's top (Kmax) on average in steady state, every byte is checked;
          ECN marks become CNPs (dcqcn) and INT records reach the senders
          (hpcc, tita), as the counters show.
  drops   1% of frames dropped at the switch, go-back-N and selective repeat:
          every byte still arrives (checked), the switch dropped and the
          senders retransmitted.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "demo"))
import incast  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def fair(build, work):
    for cc in ("dcqcn", "hpcc", "tita"):
        r = incast.run_one(build, os.path.join(work, cc), cc, 3, senders=2, sender_gbps=1.0, check=True)
        per = ", ".join(f"{f['gbps']:.3f}" for f in r["flows"])
        check(all(f["check"] == "ok" for f in r["flows"]), f"{cc}: every byte intact")
        check(r["jain"] >= 0.9, f"{cc}: Jain {r['jain']:.3f} >= 0.9 (per flow {per} Gb/s)")
        check(r["q_mean_kb"] * 1000 < incast.KMAX_BYTES,
              f"{cc}: mean steady-state queue {r['q_mean_kb']:.1f} KB below Kmax {incast.KMAX_BYTES / 1000:.0f} KB")
        check(r["total_gbps"] > 0.3, f"{cc}: the bottleneck carried {r['total_gbps']:.3f} Gb/s")
        if cc == "dcqcn":
            check(r["ecn_marked"] > 0 and r["cnps"] > 0,
                  f"dcqcn: {r['ecn_marked']} ECN marks at the switch became {r['cnps']} CNPs at the senders")
        else:
            ints = sum(f["int_records"] for f in r["flows"])
            check(ints > 0, f"{cc}: {ints} INT hop records reached the senders")


def drops(build, work):
    for recovery in ("gbn", "sr"):
        r = incast.run_one(build, os.path.join(work, recovery), "none", 2, senders=1, sender_gbps=0.5, drop=0.01,
                           check=True, recovery=recovery)
        f = r["flows"][0]
        check(f["check"] == "ok" and f["messages"] > 0,
              f"{recovery}: {f['messages']:.0f} messages, every byte intact with 1% dropped")
        check(r["switch_drops"] > 0 and f["retx"] > 0,
              f"{recovery}: the switch dropped {r['switch_drops']} frames, the sender retransmitted {f['retx']}")


def main():
    build, case, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    {"fair": fair, "drops": drops}[case](build, work)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
