#!/usr/bin/env bash
# Simulation speed and memory of the ns-3 model (issue 6 benchmarks):
#   1. the HPCC paper's fat_tree_320 with web-search at 30% load, 10 ms of arrivals, HPCC;
#   2. the 2K-GPU multi-rail cluster (8 blocks x 32 servers x 8 GPUs, 32 spines, 400G)
#      running one ring AllReduce over all 2048 GPUs (rail-major ring order).
# Each run reports events/s, simulated ms per wall second (summary.json) and peak
# memory and CPU time (/usr/bin/time -v). Run on an otherwise idle machine: figures
# move with the load of other processes.
#
#   scripts/sim/bench.sh [BUILD_DIR] [OUT_DIR]      (defaults: build-ns3, out/sim-bench)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-ns3}
out=${2:-out/sim-bench}
sim="$build/ns3-model/tita-sim"
[ -x "$sim" ] || { echo "build $sim first: meson setup $build && ninja -C $build ns3-model/tita-sim" >&2; exit 1; }
mkdir -p "$out"

run() {
  local name=$1; shift
  echo "== $name"
  /usr/bin/time -v "$sim" --out="$out/$name" --progress=30 "$@" 2> "$out/$name.log" || { tail "$out/$name.log"; exit 1; }
  grep -E "tita-sim: done" "$out/$name.log"
  python3 - "$out/$name" "$out/$name.log" <<'EOF'
import json, re, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
log = open(sys.argv[2]).read()
def field(name):
    m = re.search(r"\s*" + re.escape(name) + r": (.*)", log)
    return m.group(1).strip() if m else "?"
print(f"  simulated {s['sim_seconds']*1e3:.3f} ms, {s['events']} events in {s['run_wall_seconds']:.1f} s: "
      f"{s['events_per_second']:.0f} events/s, {s['sim_ms_per_wall_second']:.4f} simulated ms per wall second")
print(f"  CPU: user {field('User time (seconds)')} s + system {field('System time (seconds)')} s; "
      f"peak RSS {int(field('Maximum resident set size (kbytes)'))/1024:.0f} MB; "
      f"flows {s['flows_finished']}/{s['flows_started']}, PFC pauses {s['pfc_pauses_sent']}, drops {s['switch_drops']}")
EOF
}

run ft320-websearch30-hpcc \
  --topo=data/workloads/fat_tree_320.topo \
  --workload=poisson:cdf=data/workloads/websearch.cdf,load=0.3 \
  --cc=hpcc --duration=10ms --seed=1

run multirail2k-allreduce-hpcc \
  --topo=multirail:blocks=8,servers=32,gpus=8,spines=32,nic_rate=400Gbps,fabric_rate=400Gbps \
  --workload=allreduce:ranks=all,bytes=1M,order=rail \
  --cc=hpcc --qlen-interval=0
