#!/bin/sh
# TitaSimulatorImpl keeps ns-3's event order: the same runs under it and under
# ns3::DefaultSimulatorImpl must write byte-identical results (every flow's
# FCT, the queue-length histograms, PFC counts, link bytes).
#
#   simulator-equivalence.sh TITA_SIM DATA_DIR WORK_DIR
set -eu
sim=$1 data=$2 work=$3
rm -rf "$work"
mkdir -p "$work"

run() {  # NAME ARGS...: one run under each simulator implementation, compared
  name=$1
  shift
  for impl in Tita Default; do
    "$sim" --progress=0 --out="$work/$name-$impl" --SimulatorImplementationType=ns3::${impl}SimulatorImpl "$@" \
      > "$work/$name-$impl.log" 2>&1 || { cat "$work/$name-$impl.log"; exit 1; }
  done
  for f in fct.csv qlen_hist.csv pfc.csv links.csv; do
    if ! cmp -s "$work/$name-Tita/$f" "$work/$name-Default/$f"; then
      echo "FAIL $name: $f differs between TitaSimulatorImpl and DefaultSimulatorImpl"
      diff "$work/$name-Tita/$f" "$work/$name-Default/$f" | head -5
      exit 1
    fi
  done
  flows=$(($(wc -l < "$work/$name-Tita/fct.csv") - 1))
  [ "$flows" -gt 0 ] || { echo "FAIL $name: no flow finished"; exit 1; }
  echo "ok $name: $flows flows, identical fct/qlen/pfc/links"
}

# Web-search traffic under tita (pacing timers, INT) on a small fat-tree.
run websearch --topo=fattree:pods=2,tors=2,aggs=2,hosts=4,cores=2 \
  --workload="poisson:cdf=$data/workloads/websearch.cdf,load=0.5" --cc=tita --duration=1ms
# A 16-to-1 incast without congestion control into a 2 MB buffer: PFC pauses
# and resumes (hundreds), timers cancelled and moved.
run incast --topo=star:n=17 --workload="incast:senders=16,receiver=0,bytes=1000000,jitter=1000,at=0" \
  --cc=none --ns3::TitaSwitchNode::BufferSize=2000000
if grep -q " 0 PFC pauses" "$work/incast-Tita.log"; then
  echo "FAIL incast: no PFC pause to compare"
  exit 1
fi
