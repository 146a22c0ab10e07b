#!/usr/bin/env bash
# Instructions per packet spent inside the engine (Engine::poll and ::receive,
# send side + receive side + ACK processing), counted by callgrind: stable from
# run to run, unlike timings on a shared VM. Builds build-cg/ (no -march=native:
# valgrind cannot run AVX-512).
set -euo pipefail
cd "$(dirname "$0")/.."
opts=(--buildtype=release -Dnative=false -Dbenchmarks=enabled -Dfuzz=disabled -Dns3=disabled -Dtests=false)
if [ -f build-cg/build.ninja ]; then
  meson configure build-cg "${opts[@]}" >/dev/null  # a build-cg set up otherwise is brought to these
else
  meson setup build-cg "${opts[@]}" >/dev/null
fi
ninja -C build-cg bench/engine/engine_bench
# TITA_CALLGRIND_KEEP=dir keeps the callgrind files (callgrind_annotate them for
# the per-function breakdown in doc/benchmarks.md).
keep=${TITA_CALLGRIND_KEEP:-}
for acks in 0 1; do
  for size in 64 4096; do
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" \
      --toggle-collect='tita::engine::Engine::poll(*' --toggle-collect='tita::engine::Engine::receive(*' \
      build-cg/bench/engine/engine_bench --benchmark_filter="EnginePacketFixed/$size/$acks/" >/dev/null 2>&1
    ir=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    what=$([ "$acks" = 0 ] && echo "HPCC, an ACK per packet" || echo "DCQCN, ACKs coalesced 1 in 8")
    echo "engine, ${size} B payload, ${what}: $((ir / 32000)) instructions per packet (send + receive + ACK)"
    if [ -n "$keep" ]; then mkdir -p "$keep" && mv "$out" "$keep/callgrind.$size.$acks"; else rm -f "$out"; fi
  done
done

# A second engine on the port (bench/dpdk/engines_cost.cc): instructions per
# data packet inside dpdk::EngineHost::poll_once (host receive, steering and
# transmit with the engine's work), one engine a port against two, each QP's
# frames arriving on its own engine's queue (same) or on the other's (cross:
# every frame through the owner's inbox).
if ninja -C build-cg bench/dpdk/engines_cost >/dev/null 2>&1; then  # brought up to date, as engine_bench above
  for run in "1 same" "2 same" "2 cross"; do
    out=$(mktemp)
    # shellcheck disable=SC2086
    line=$(valgrind --tool=callgrind --callgrind-out-file="$out" \
      --toggle-collect='tita::dpdk::EngineHost::poll_once(*' build-cg/bench/dpdk/engines_cost $run 20000 2>/dev/null |
      tail -1)
    ir=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
    packets=$(echo "$line" | awk '{print $4}')
    echo "DPDK host + engine, 64 B WRITE, ${run% *} engine(s) a port, ${run#* }: $((ir / packets)) instructions per packet ($line)"
    rm -f "$out"
  done
else
  echo "engines_cost not built (DPDK not found): no per-engine figures"
fi
