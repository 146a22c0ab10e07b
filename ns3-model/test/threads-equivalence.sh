#!/bin/sh
# tita-sim --threads=N writes the same results whatever N: the runs of a
# fat-tree web-search workload (HPCC, DCQCN, HPCC with a core link going down)
# and of a multi-rail AllReduce and All-to-All with PXN over
# NVLink, with 1, 2 and 3 threads, must give byte-identical outputs (every
# flow's FCT, PFC events, queue histograms, link bytes, collective steps, the
# metrics). --threads=1 is the sequential reference: the same logical
# processes and event order on one thread.
#
#   threads-equivalence.sh TITA_SIM DATA_DIR WORK_DIR
set -eu
sim=$1 data=$2 work=$3
rm -rf "$work"
mkdir -p "$work"

run() {  # NAME FILES ARGS...: runs with 1, 2 and 3 threads, compared with 1's
  name=$1 files=$2
  shift 2
  for n in 1 2 3; do
    "$sim" --progress=0 --out="$work/$name-$n" --threads=$n "$@" > "$work/$name-$n.log" 2>&1 ||
      { cat "$work/$name-$n.log"; exit 1; }
  done
  for n in 2 3; do
    for f in $files; do
      if ! cmp -s "$work/$name-1/$f" "$work/$name-$n/$f"; then
        echo "FAIL $name: $f differs between --threads=1 and --threads=$n"
        diff "$work/$name-1/$f" "$work/$name-$n/$f" | head -5
        exit 1
      fi
    done
  done
  rows=$(($(wc -l < "$work/$name-1/fct.csv") - 1))
  [ "$rows" -gt 0 ] || { echo "FAIL $name: no flow finished"; exit 1; }
  lps=$(sed -n 's/.*threads 1: \([0-9]*\) logical processes.*/\1/p' "$work/$name-1.log")
  [ "${lps:-0}" -gt 1 ] || { echo "FAIL $name: not split into logical processes"; cat "$work/$name-1.log"; exit 1; }
  echo "ok $name: $lps logical processes, $rows fct rows; $files identical with 1, 2 and 3 threads"
}

common="fct.csv qlen_hist.csv pfc.csv links.csv metrics.jsonl"
ws="--topo=fattree:pods=2,tors=2,aggs=2,hosts=4,cores=2 --workload=poisson:cdf=$data/workloads/websearch.cdf,load=0.5"
ws="$ws --duration=1ms --metrics=100us --ns3::TitaSwitchNode::BufferSize=1000000"
# shellcheck disable=SC2086
run websearch-hpcc "$common" $ws --cc=hpcc
# shellcheck disable=SC2086
run websearch-dcqcn "$common" $ws --cc=dcqcn
# A core link going down mid-run (drops, a timeout, rerouting: global events
# acting on switches between rounds).
# shellcheck disable=SC2086
run websearch-fault "$common" $ws --cc=hpcc --fault="down:link=core,at=200us,converge=50us"
# A ring AllReduce over 16 GPUs on two rails and NVLink (messages, collective
# steps decided in the serial phase).
run allreduce "$common steps.csv collectives.csv" --topo=multirail:blocks=2,servers=2,gpus=4,spines=2,nvlink=1 \
  --workload=allreduce:ranks=all,bytes=1M --cc=hpcc --metrics=20us
# All-to-All with PXN (NVLink hand-over, then one message per remote GPU).
run alltoall-pxn "$common steps.csv collectives.csv" --topo=multirail:blocks=2,servers=2,gpus=4,spines=2,nvlink=1 \
  --workload=alltoall:ranks=all,bytes=256K,pxn=1 --cc=hpcc --metrics=5us
if grep -q " 0 PFC pauses" "$work/websearch-dcqcn-1.log" && grep -q " 0 PFC pauses" "$work/websearch-hpcc-1.log"; then
  echo "note: no PFC pause in the web-search runs"
fi

# Mistakes are one line and status 2 before anything runs; a topology without
# link delays cannot be cut and says so (one logical process), then runs.
expect_usage() {  # TEXT ARGS...
  text=$1
  shift
  rc=0
  "$sim" "$@" > "$work/usage.out" 2> "$work/usage.err" || rc=$?
  if [ "$rc" -ne 2 ] || [ "$(wc -l < "$work/usage.err")" -ne 1 ] || ! grep -q -- "$text" "$work/usage.err"; then
    echo "FAIL usage $*: status $rc, $(cat "$work/usage.err")"
    exit 1
  fi
}
expect_usage "at most 256" --threads=300
expect_usage "drop --SimulatorImplementationType" --threads=2 --SimulatorImplementationType=ns3::DefaultSimulatorImpl
expect_usage "not with --threads" --threads=2 --pcap=0 --topo=star:n=3
"$sim" --progress=0 --out="$work/zero" --threads=2 --topo=fattree:pods=2,tors=2,aggs=2,hosts=4,cores=2,delay=0 \
  --workload=incast:senders=4,receiver=0,bytes=100000 --cc=hpcc > "$work/zero.log" 2>&1 || { cat "$work/zero.log"; exit 1; }
grep -q "threads 2: 1 logical processes, 0 links cut; 11 links without delay .* share one logical process" "$work/zero.log" ||
  { echo "FAIL zero delay: no fall-back line"; cat "$work/zero.log"; exit 1; }
echo "ok usage errors and the zero-delay fall-back"
