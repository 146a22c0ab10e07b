#!/usr/bin/env bash
# Hash Dodging measurements (doc/hash-dodging.md).
#
# ns-3, fat_tree_320 at 100 Gb/s: a 100 MB flow from the first pod to the last
# and a 40-rank All-to-All; 1 ms in, the aggregation switch's port to the core
# on the long flow's path black-holes everything routed to it, or drops 5% at
# random; the control plane withdraws the port 20 s later. Each fault with path
# control on and off, go-back-N (and selective repeat with SR=1), plus the
# black hole with a 268 ms RTO (QpTimeout 16), which survives until the
# reroute (LONG=1). Then tita-perf through two tita-switch processes on vhost
# ports with one link black-holed mid-transfer (DPDK=1).
#
# Usage: scripts/hash-dodging/run.sh [BUILD_DIR] [OUT_DIR]
#        (defaults: build, out/hash-dodging; SR=0 LONG=0 DPDK=0 skip those parts)
# Needs BUILD_DIR configured with -Dns3=enabled: ninja -C BUILD_DIR ns3-model/tita-dodge
# (and apps/tita-perf apps/tita-switch/tita-switch for DPDK=1). Every ns-3 run
# takes 0.5-2 minutes on one core; the table is printed at the end and the plot
# written to OUT_DIR/recovery.png.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
OUT=${2:-out/hash-dodging}
SIM=$BUILD/ns3-model/tita-dodge
if [ ! -x "$SIM" ]; then
  echo "run.sh: $SIM not built (meson setup $BUILD -Dns3=enabled; ninja -C $BUILD ns3-model/tita-dodge)" >&2
  exit 1
fi
mkdir -p "$OUT"

run() {
  local name=$1
  shift
  echo "== $name: $*"
  "$SIM" --out="$OUT/$name" "$@" 2>"$OUT/$name.log" || { tail -5 "$OUT/$name.log"; exit 1; }
  tail -1 "$OUT/$name.log"
}

run nofault --fault=none --dodge=1
run bh-on --fault=blackhole --dodge=1
run bh-off --fault=blackhole --dodge=0
run loss-on --fault=loss --dodge=1
run loss-off --fault=loss --dodge=0
if [ "${SR:-1}" = 1 ]; then
  run nofault-sr --fault=none --dodge=1 --recovery=sr
  run bh-on-sr --fault=blackhole --dodge=1 --recovery=sr
  run loss-on-sr --fault=loss --dodge=1 --recovery=sr
  run loss-off-sr --fault=loss --dodge=0 --recovery=sr
fi
if [ "${LONG:-1}" = 1 ]; then
  run bh-off-t16 --fault=blackhole --dodge=0 --qp-timeout=16 --stop=40s
fi
/usr/bin/python3 scripts/hash-dodging/plot.py "$OUT" --png "$OUT/recovery.png"

if [ "${DPDK:-1}" = 1 ]; then
  echo "== DPDK: tita-perf through two tita-switch processes, one link black-holed"
  /usr/bin/python3 scripts/hash-dodging/dpdk_two_paths.py "$BUILD" "$OUT/dpdk"
fi
