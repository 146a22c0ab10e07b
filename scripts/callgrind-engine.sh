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
for size in 64 4096; do
  out=$(mktemp)
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    --toggle-collect='tita::engine::Engine::poll(*' --toggle-collect='tita::engine::Engine::receive(*' \
    build-cg/bench/engine/engine_bench --benchmark_filter="EnginePacketFixed/$size/" >/dev/null 2>&1
  ir=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
  echo "engine, ${size} B payload: $((ir / 32000)) instructions per packet (send + receive + ACK)"
  rm -f "$out"
done
