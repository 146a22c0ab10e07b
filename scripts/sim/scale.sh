#!/usr/bin/env bash
# Speed-up and peak memory of tita-sim --threads (issue 32): each workload run
# sequentially (no --threads) and with --threads=N for every N given, RUNS times
# each; per setting the median, min and max of the run's wall time (summary.json
# run_wall_seconds: the simulation, not the set-up), the speed-up against
# --threads=1 (the same logical processes on one thread), the parallel
# efficiency (speed-up / N) and the peak RSS (/usr/bin/time -v). The outputs of
# every parallel run are checked identical to --threads=1's. State the machine
# and its load with the figures: other processes move them.
#
#   scripts/sim/scale.sh [-b BUILD_DIR] [-o OUT_DIR] [-r RUNS] [-w WORKLOADS] [THREADS...]
#     WORKLOADS: comma-separated of ft-small (a 2-pod fat-tree, web-search 50%,
#     1 ms, HPCC), ft320-1ms (fat_tree_320, web-search 30%, 1 ms, HPCC), ft320 (fat_tree_320, web-search 30%, 10 ms, HPCC), ar2k (the
#     2K-GPU ring AllReduce of 1 MB); default ft-small. THREADS: default 1 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build out=out/sim-scale runs=3 workloads=ft-small
while getopts b:o:r:w: opt; do
  case $opt in
    b) build=$OPTARG ;;
    o) out=$OPTARG ;;
    r) runs=$OPTARG ;;
    w) workloads=$OPTARG ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
threads=("$@")
[ ${#threads[@]} -gt 0 ] || threads=(1 2)
sim="$build/ns3-model/tita-sim"
[ -x "$sim" ] || { echo "scale.sh: build $sim first (ninja -C $build ns3-model/tita-sim)" >&2; exit 1; }
mkdir -p "$out"

args_of() {
  case $1 in
    ft-small) echo "--topo=fattree:pods=2,tors=2,aggs=2,hosts=4,cores=2 --workload=poisson:cdf=data/workloads/websearch.cdf,load=0.5 --cc=hpcc --duration=1ms --seed=1" ;;
    ft320-1ms) echo "--topo=data/workloads/fat_tree_320.topo --workload=poisson:cdf=data/workloads/websearch.cdf,load=0.3 --cc=hpcc --duration=1ms --seed=1" ;;
    ft320) echo "--topo=data/workloads/fat_tree_320.topo --workload=poisson:cdf=data/workloads/websearch.cdf,load=0.3 --cc=hpcc --duration=10ms --seed=1" ;;
    ar2k) echo "--topo=multirail:blocks=8,servers=32,gpus=8,spines=32,nic_rate=400Gbps,fabric_rate=400Gbps --workload=allreduce:ranks=all,bytes=1M,order=rail --cc=hpcc --qlen-interval=0" ;;
    *) echo "scale.sh: unknown workload '$1' (ft-small, ft320-1ms, ft320, ar2k)" >&2; exit 2 ;;
  esac
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
IFS=, read -ra wls <<< "$workloads"
for wl in "${wls[@]}"; do
  read -ra args <<< "$(args_of "$wl")"
  for setting in seq "${threads[@]}"; do
    for r in $(seq 1 "$runs"); do
      dir="$out/$wl-$setting-$r"
      extra=()
      [ "$setting" = seq ] || extra=(--threads="$setting")
      /usr/bin/time -v "$sim" --progress=0 --out="$dir" "${args[@]}" "${extra[@]}" > "$dir.log" 2>&1 ||
        { tail "$dir.log"; exit 1; }
    done
  done
  python3 - "$out" "$wl" "$runs" seq "${threads[@]}" <<'PY'
import filecmp, json, re, statistics, sys
out, wl, runs, settings = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def stats(setting):
    walls, rss = [], []
    for r in range(1, runs + 1):
        d = f"{out}/{wl}-{setting}-{r}"
        walls.append(json.load(open(d + "/summary.json"))["run_wall_seconds"])
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(d + ".log").read())
        rss.append(int(m.group(1)) / 1024 if m else float("nan"))
    return walls, rss
base = statistics.median(stats("1")[0]) if "1" in settings else None
print(f"{wl}: setting | wall s median (min-max) over {runs} | speed-up vs --threads=1 | efficiency | peak RSS MB")
for s in settings:
    walls, rss = stats(s)
    med = statistics.median(walls)
    line = f"  {'sequential' if s == 'seq' else '--threads=' + s:12} | {med:.2f} ({min(walls):.2f}-{max(walls):.2f})"
    if base and s != "seq":
        sp = base / med
        line += f" | {sp:.2f} | {sp / int(s):.2f}"
    else:
        line += " | - | -"
    line += f" | {statistics.median(rss):.0f}"
    print(line)
    if s not in ("seq", "1"):
        for f in ("fct.csv", "pfc.csv", "links.csv", "qlen_hist.csv"):
            a, b = f"{out}/{wl}-1-1/{f}", f"{out}/{wl}-{s}-1/{f}"
            if not filecmp.cmp(a, b, shallow=False):
                print(f"  MISMATCH: {f} differs between --threads=1 and --threads={s}")
PY
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
