#!/bin/bash
# tita-sim against the HPCC paper's own simulator (github.com/alibaba-edu/
# High-Precision-Congestion-Control, "the artifact"), on the same topology and
# flow files: builds the artifact, runs its run.py for DCQCN and HPCC
# (hp95ai50) at 100 Gb/s on fat_tree_320, runs tita-sim --preset=hpcc-artifact
# on the same flows, and writes the comparison (scripts/validation/vs_artifact.py)
# to doc/validation/vs-artifact.md.
#
#   scripts/validation/hpcc-artifact.sh ARTIFACT_CHECKOUT PYTHON2 [OUT]
#
# ARTIFACT_CHECKOUT: a clone of the artifact (read at 9f4be2a); nothing in it is
# edited, only built and given the flow files under simulation/mix/.
# PYTHON2: a Python 2.7 interpreter (the artifact's waf, run.py and traffic_gen.py
# are Python 2; Debian 12 has none: build one, e.g. with pyenv). The flow files
# are data/validation/flows_ws{30,50}.txt (traffic_gen.py -c WebSearch -n 320
# -l 0.3|0.5 -b 100G -t 0.005); FLOWS="ws30 ws50" picks among them.
#
# Build flags: the artifact's debug profile does not compile with g++ 12
# (qbb-remote-channel.cc: an ambiguous operator<< between ns-3.17's
# ParameterLogger and libstdc++ 12), so this uses the optimized profile, with
# NS_ASSERT kept and FMA contraction off; -Werror is off for g++ 12's warnings.
# One run at a time; about 6 min (ws30) and 11 min (ws50) per artifact run on
# the 2-vCPU VM, a tenth of that for tita-sim.
set -euo pipefail
art=$(cd "$1" && pwd)
py2=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${3:-$root/results/vs-artifact}
sim=${SIM:-$root/build/ns3-model/tita-sim}
flows=${FLOWS:-"ws30 ws50"}
mkdir -p "$out"
"$py2" -c 'import sys; assert sys.version_info[0] == 2' || { echo "hpcc-artifact.sh: $py2 is not Python 2" >&2; exit 2; }
pybin=$(dirname "$(command -v "$py2")")

cd "$art/simulation"
if [ ! -x build/scratch/third ]; then
  PATH=$pybin:$PATH CXXFLAGS="-O2 -g0 -std=gnu++11 -fpermissive -Wno-error -w -ffp-contract=off -DNS3_ASSERT_ENABLE" \
    CFLAGS="-O2 -w" python ./waf configure -d optimized --disable-python --disable-tests --disable-examples \
    --enable-modules=core,network,internet,point-to-point,applications >"$out/configure.log"
  PATH=$pybin:$PATH python ./waf build -j1 >"$out/build.log"
fi

args=()
for w in $flows; do
  cp "$root/data/validation/flows_$w.txt" "mix/flows_$w.txt"
  for cc in dcqcn hpcc; do
    if [ "$cc" = dcqcn ]; then rp="--cc dcqcn"; tag=dcqcn; else rp="--cc hp --hpai 50"; tag=hp95ai50; fi
    [ -f "mix/fct_fat_flows_${w}_$tag.txt" ] ||
      PATH=$pybin:$PATH /usr/bin/time -v -o "$out/time-art-$cc-$w.txt" python run.py $rp --trace "flows_$w" \
        --bw 100 --topo fat >"$out/art-$cc-$w.log" 2>&1
    (cd "$root" && /usr/bin/time -v -o "$out/time-tita-$cc-$w.txt" "$sim" --preset=hpcc-artifact --cc=$cc \
      --topo=data/workloads/fat_tree_320.topo --workload="flows:path=data/validation/flows_$w.txt" --stop=4s \
      --progress=0 --out="$out/tita-$cc-$w" 2>"$out/tita-$cc-$w.log")
    args+=("@$root/data/validation/flows_$w.txt:$cc, web-search $w" "mix/fct_fat_flows_${w}_$tag.txt"
           "$out/tita-$cc-$w/fct.csv")
  done
done
"$root/scripts/validation/vs_artifact.py" "${args[@]}" >"$root/doc/validation/vs-artifact.md"
for f in "$out"/time-*.txt; do
  echo "$(basename "$f" .txt): $(awk -F': ' '/User time/ {u=$2} /Maximum resident/ {m=$2} END {printf "%.1f CPU s, %.0f MB", u, m/1024}' "$f")"
done
echo "hpcc-artifact.sh: doc/validation/vs-artifact.md written"
