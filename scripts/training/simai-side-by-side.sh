#!/bin/bash
# SimAI's ns-3 simulator (aliyun/SimAI) and tita-sim on the same training
# workload file and a topology of the same shape: 2 servers x 8 GPUs, 8 rails,
# 400 Gb/s NICs and fabric links of 1 us, NVLink 3.6 Tb/s. Not part of the test
# suite: it clones SimAI from GitHub (network needed) and builds it (about 8
# minutes on 2 cores). Figures and what explains them: doc/training.md, "Side
# by side with SimAI".
#
#   scripts/training/simai-side-by-side.sh [WORKDIR] [WORKLOAD...]
#
# WORKDIR (default /tmp/tita-simai) keeps the SimAI build between runs.
# WORKLOADs default to data/training/tp8-dp2-overlap.txt. Both simulators run
# HPCC with 1024-byte payloads (tita's path MTU) and no per-message send
# latency in SimAI (AS_SEND_LAT=0; SimAI's default is 6 us, its README uses 3).
# Prints, per workload, each simulator's iteration time, exposed communication,
# CPU seconds and peak RSS. Needs root (SimAI writes /etc/astra-sim) and
# tita-sim built in build/.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${1:-/tmp/tita-simai}
shift || true
WORKLOADS=("$@")
[ ${#WORKLOADS[@]} -gt 0 ] || WORKLOADS=("$HERE/data/training/tp8-dp2-overlap.txt")
TITA_SIM=$HERE/build/ns3-model/tita-sim
[ -x "$TITA_SIM" ] || { echo "simai-side-by-side: build tita first (scripts/build.sh): no $TITA_SIM" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "simai-side-by-side: needs root (SimAI writes /etc/astra-sim)" >&2; exit 2; }
for w in "${WORKLOADS[@]}"; do [ -r "$w" ] || { echo "simai-side-by-side: no workload file $w" >&2; exit 2; }; done

# The last SimAI commit whose pinned ns-3-alibabacloud commit is public (the
# newer pins, 3e0c7c1 and 7e3cb5b, are not on GitHub's branches).
SIMAI_COMMIT=b5ff47c9ead9381e8cac8b9bab3ad0da1bece89b
NS3_COMMIT=c2bfbf46a8003b70a3132a51e3df97591c39af1d
mkdir -p "$WORK"
SIM="$WORK/SimAI"
N="$SIM/astra-sim-alibabacloud/extern/network_backend/ns3-interface"
BIN="$N/simulation/build/scratch/ns3.36.1-AstraSimNetwork-debug"
if [ ! -x "$BIN" ]; then
  [ -d "$SIM/.git" ] || git clone -q https://github.com/aliyun/SimAI "$SIM"
  git -C "$SIM" checkout -q "$SIMAI_COMMIT"
  [ -d "$WORK/ns-3-alibabacloud/.git" ] || git clone -q https://github.com/aliyun/ns-3-alibabacloud "$WORK/ns-3-alibabacloud"
  git -C "$WORK/ns-3-alibabacloud" checkout -q "$NS3_COMMIT"
  # What SimAI's scripts/build.sh -c ns3 lays out: ns-3 under the network
  # backend, the front end in scratch/, astra-sim as an ns-3 application.
  A="$SIM/astra-sim-alibabacloud"
  mkdir -p "$N" && cp -r "$WORK/ns-3-alibabacloud/." "$N/"
  cp "$A/astra-sim/network_frontend/ns3/AstraSimNetwork.cc" "$A"/astra-sim/network_frontend/ns3/*.h "$N/simulation/scratch/"
  rm -rf "$N/simulation/src/applications/astra-sim" && cp -r "$A/astra-sim" "$N/simulation/src/applications/"
  mkdir -p /etc/astra-sim/{inputs/system,inputs/workload,simulation,config,topo,results}
  # HPCC (CC_MODE 3) crashes at these commits: the fork's SeqTs header is 10
  # bytes (a 64-bit sequence number and a 16-bit priority group) but the
  # switch writes its INT record 6 bytes past the UDP header, over the
  # priority group (SIGSEGV in BEgressQueue::DoEnqueue; SimAI issue 206).
  sed -i 's/GetStaticSize() + 20 + 8 + 6\]/GetStaticSize() + 20 + 8 + 10]/' \
    "$N/simulation/src/point-to-point/model/switch-node.cc"
  grep -q 'GetStaticSize() + 20 + 8 + 10\]' "$N/simulation/src/point-to-point/model/switch-node.cc" ||
    { echo "simai-side-by-side: the INT offset fix no longer applies to switch-node.cc" >&2; exit 1; }
  # The debug profile (SimAI's optimized one crashed when tried), MPI off (with
  # it the multithreaded scheduler needs MPI_Init, which the front end never
  # calls), only the modules the front end uses.
  (cd "$N/simulation" &&
    ./ns3 configure -d debug --enable-mtp --disable-mpi --disable-examples --disable-tests \
      --enable-modules="applications;point-to-point;csma;internet;network;core;mtp;mpi" > "$WORK/configure.log" &&
    nice ./ns3 build -j"$(nproc)" scratch/AstraSimNetwork > "$WORK/build.log")
fi

RUN="$WORK/run"
mkdir -p "$RUN"
cd "$RUN"
TOPO=Spectrum-X_16g_8gps_400Gbps_H100
[ -f "$TOPO" ] || python3 "$SIM/astra-sim-alibabacloud/inputs/topo/gen_Topo_Template.py" -topo Spectrum-X -g 16 \
  -gps 8 -gt H100 -psn 2 -bw 400Gbps -apbw 400Gbps -nvbw 3600Gbps -l 0.001ms -nl 0.0002ms > /dev/null
sed -e 's/^CC_MODE .*/CC_MODE 3/' -e 's/^ENABLE_TRACE .*/ENABLE_TRACE 0/' -e 's/^PACKET_PAYLOAD_SIZE .*/PACKET_PAYLOAD_SIZE 1024/' \
  "$SIM/astra-sim-alibabacloud/inputs/config/SimAI.conf" > simai-hpcc-1024.conf

# "CPU s, peak RSS MB" of a /usr/bin/time -v report.
usage() { awk -F': ' '/User time/{u=$2} /System time/{s=$2} /Maximum resident/{m=$2} END{printf "%.2f CPU s, %.0f MB", u+s, m/1024}' "$1"; }

printf '%-28s %-8s %14s %14s  %s\n' workload sim "iteration us" "exposed us" "cost"
for w in "${WORKLOADS[@]}"; do
  name=$(basename "$w" .txt)
  mkdir -p "$RUN/simai-$name" && cd "$RUN/simai-$name"
  AS_SEND_LAT=0 /usr/bin/time -v -o time.txt "$BIN" -t 1 -w "$w" -n "../$TOPO" -c ../simai-hpcc-1024.conf > stdout.txt 2> stderr.txt
  # ncclFlowModel_EndToEnd.csv, row 2: ..., total exposed comm ("459 (36.48%)"), Total time (us).
  sed -n 2p ncclFlowModel_EndToEnd.csv | awk -F', ' -v n="$name" -v c="$(usage time.txt)" \
    '{split($9, e, " "); printf "%-28s %-8s %14s %14s  %s\n", n, "SimAI", $10, e[1], c}'
  out="$RUN/tita-$name"
  /usr/bin/time -v -o "$RUN/tita-$name.time" "$TITA_SIM" --topo=multirail:blocks=1,servers=2,gpus=8,spines=2,nvlink=1 \
    --workload=training:path="$w",nvlink=fluid --cc=hpcc --out="$out" > /dev/null 2>&1
  # iterations.csv: iteration,start_ns,end_ns,time_ns,compute_ns,comm_ns,exposed_comm_ns,...
  sed -n 2p "$out/iterations.csv" | awk -F, -v n="$name" -v c="$(usage "$RUN/tita-$name.time")" \
    '{printf "%-28s %-8s %14.1f %14.1f  %s\n", n, "tita", $4 / 1e3, $7 / 1e3, c}'
  cd "$RUN"
done
