#!/bin/sh
# Regenerates the raw results behind doc/validation.md: ns-3 runs of the HPCC
# paper's setup (fat_tree_320, 100 Gb/s hosts, 400 Gb/s fabric, 1 us links,
# 1 KiB MTU, an ACK per packet, the HPCC artifact's ECN marking and buffer) for
# every congestion control, then the tables and plots (report.py).
#
#   scripts/validation/run.sh EXPERIMENT...      (from the repository root)
#
# Experiments (each runs every algorithm in $CCS unless said otherwise):
#   ws30 ws50 fb30 fb50       web-search / FB-Hadoop Poisson traffic at 30 / 50 % load
#   ws30i ws50i fb30i fb50i   the same plus 60-to-1 incasts of 500 KB (2 % of capacity)
#   incast                    one 60-to-1 incast of 500 KB alone (fairness, queue)
#   int                       tita with INT on half the switches, and on none (ECN +
#                             RTT), on ws30 ws50 fb30 fb50 and ws50i
#   lit                       ws30 ws50 fb30 fb50 ws30i ws50i fb30i fb50i incast
#   all                       lit int, then report
#   report                    only the tables and plots, from what has run
#
# Environment (defaults in brackets):
#   TOPO    topology, an HPCC file or fattree:... [data/workloads/fat_tree_320.topo]
#   CCS     algorithms [dcqcn dcqcn-cnp timely hpcc swift powertcp nscc tita];
#           dcqcn-cnp is DCQCN with CNP packets (one per QP per 50 us) instead of
#           the preset's CE echo in every ACK
#   PRESET  tita-sim --preset [hpcc-artifact: the HPCC simulator's run.py settings];
#           PRESET= runs tita's own defaults (the setup of the first validation)
#   SEED    workload seed [1]; SEEDS="1 2 3" runs the experiments once per seed
#   OUT     results directory [results/validation]; raw outputs stay out of git
#   BUILD   meson build directory with tita-sim [build]
#   SIM     the tita-sim binary [$BUILD/ns3-model/tita-sim]; a copy keeps long sweeps
#           safe from rebuilds
#   WS_DUR30 WS_DUR50 FB_DUR30 FB_DUR50   Poisson arrival windows [5ms 3ms 1ms 0.6ms]
#   STOP    hard stop of every run [60ms]
#   FORCE=1 rerun runs whose summary.json exists (otherwise they are kept)
#   DOC     where report writes the markdown tables and PNGs [doc/validation]
#
# Run time on the 2-vCPU VM, one simulation at a time (see doc/validation.md):
# about 10-25 min per fat_tree_320 run before the ns-3 speed-up, so `all` is a
# day; each run is skipped when its output exists, so it can be resumed.
set -eu

TOPO=${TOPO:-data/workloads/fat_tree_320.topo}
CCS=${CCS:-dcqcn dcqcn-cnp timely hpcc swift powertcp nscc tita}
PRESET=${PRESET-hpcc-artifact}
SEED=${SEED:-1}
OUT=${OUT:-results/validation}
BUILD=${BUILD:-build}
WS_DUR30=${WS_DUR30:-5ms}
WS_DUR50=${WS_DUR50:-3ms}
FB_DUR30=${FB_DUR30:-1ms}
FB_DUR50=${FB_DUR50:-0.6ms}
STOP=${STOP:-60ms}
FORCE=${FORCE:-0}
DOC=${DOC:-doc/validation}
SIM=${SIM:-$BUILD/ns3-model/tita-sim}
HERE=$(dirname "$0")

if [ -n "${SEEDS:-}" ]; then
	for s in $SEEDS; do SEEDS= SEED=$s sh "$0" "$@" || exit 1; done
	exit 0
fi

if [ -n "$PRESET" ]; then
	# Hosts, switches and the algorithms' parameters as the reference simulator
	# runs them (doc/ns3-vs-hpcc-artifact.md).
	SETUP="--preset=$PRESET --qlen-interval=10us --progress=60"
else
	# tita's defaults with the HPCC paper's MTU, ACK rate and buffer.
	SETUP="--ns3::RdmaNicNetDevice::PathMtu=1024 --ns3::RdmaNicNetDevice::AckReqEvery=1
 --ns3::TitaSwitchNode::BufferSize=33554432 --qlen-interval=10us --progress=60"
fi

tag=$(echo "$TOPO" | sed 's|.*/||; s|\.topo$||; s|[:=,]|_|g')
base=$OUT/$tag/${PRESET:-defaults}/seed$SEED

# run NAME CC WORKLOAD DURATION [EXTRA...]: one simulation into $base/NAME/CC
run() {
	name=$1 cc=$2 workload=$3 dur=$4
	shift 4
	dir=$base/$name/$cc
	if [ "$FORCE" != 1 ] && [ -f "$dir/summary.json" ]; then
		echo "run.sh: $dir exists, kept"
		return 0
	fi
	mkdir -p "$dir"
	case "$cc" in
	tita-int-half) cc_arg=tita; set -- "$@" --int-off=half ;;
	tita-int-off) cc_arg=tita; set -- "$@" --int-off=all ;;
	dcqcn-cnp) cc_arg=dcqcn; set -- "$@" --ns3::RdmaNicNetDevice::CongestionNotification=cnp ;;
	*) cc_arg=$cc ;;
	esac
	echo "run.sh: $name $cc ($(date +%H:%M:%S))"
	# shellcheck disable=SC2086
	"$SIM" --topo="$TOPO" --workload="$workload" --cc="$cc_arg" --duration="$dur" --stop="$STOP" \
		--seed="$SEED" --out="$dir" $SETUP "$@" 2>"$dir/stderr.log" || {
		echo "run.sh: $name $cc failed, see $dir/stderr.log" >&2
		return 1
	}
	tail -1 "$dir/stderr.log"
}

cdf() { echo "data/workloads/$1.cdf"; }

# poisson EXP WORKLOAD LOAD DUR [INCAST]
poisson() {
	exp=$1 wl=$2 load=$3 dur=$4 incast=${5:-0}
	mkdir -p "$base/$exp"
	w="poisson:cdf=$(cdf "$wl"),load=$load"
	if [ "$incast" = 1 ]; then
		f=$base/$exp/incast.flows
		python3 "$HERE/gen_flows.py" --topo "$TOPO" --out "$f" --load 0.02 --duration "$dur" \
			--senders 60 --bytes 500000 --seed "$SEED"
		w="$w;flows:path=$f"
	fi
	for cc in $CCS; do run "$exp" "$cc" "$w" "$dur"; done
}

incast_alone() {
	mkdir -p "$base/incast"
	f=$base/incast/incast.flows
	python3 "$HERE/gen_flows.py" --topo "$TOPO" --out "$f" --at 10000 --senders 60 --bytes 500000 --seed "$SEED"
	for cc in $CCS; do run incast "$cc" "flows:path=$f" 0; done
}

int_runs() {
	saved=$CCS
	CCS="tita-int-half tita-int-off"
	poisson ws30 websearch 0.3 "$WS_DUR30"
	poisson ws50 websearch 0.5 "$WS_DUR50"
	poisson fb30 fb_hadoop 0.3 "$FB_DUR30"
	poisson fb50 fb_hadoop 0.5 "$FB_DUR50"
	poisson ws50i websearch 0.5 "$WS_DUR50" 1
	CCS=$saved
}

report() {
	python3 "$HERE/report.py" "$base" --doc "$DOC"
}

[ -x "$SIM" ] || { echo "run.sh: build $SIM first (ninja -C $BUILD ns3-model/tita-sim)" >&2; exit 1; }
[ $# -gt 0 ] || { sed -n '2,35p' "$0"; exit 1; }
for e in "$@"; do
	case "$e" in
	ws30) poisson ws30 websearch 0.3 "$WS_DUR30" ;;
	ws50) poisson ws50 websearch 0.5 "$WS_DUR50" ;;
	fb30) poisson fb30 fb_hadoop 0.3 "$FB_DUR30" ;;
	fb50) poisson fb50 fb_hadoop 0.5 "$FB_DUR50" ;;
	ws30i) poisson ws30i websearch 0.3 "$WS_DUR30" 1 ;;
	ws50i) poisson ws50i websearch 0.5 "$WS_DUR50" 1 ;;
	fb30i) poisson fb30i fb_hadoop 0.3 "$FB_DUR30" 1 ;;
	fb50i) poisson fb50i fb_hadoop 0.5 "$FB_DUR50" 1 ;;
	incast) incast_alone ;;
	int)
		int_runs
		;;
	lit) sh "$0" ws30 ws50 fb30 fb50 ws30i ws50i fb30i fb50i incast ;;
	all)
		sh "$0" lit int
		report
		;;
	report) report ;;
	*)
		echo "run.sh: unknown experiment '$e'" >&2
		exit 1
		;;
	esac
done
