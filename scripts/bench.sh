#!/usr/bin/env bash
# Build a release tree (build-rel/) and run the Google Benchmark suites.
# Usage: scripts/bench.sh [suite...]   (suites: wire cc engine; default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ ! -f build-rel/build.ninja ]; then
  meson setup build-rel --buildtype=release -Dfuzz=disabled
fi
ninja -C build-rel
grep -m1 "model name" /proc/cpuinfo
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(wire cc engine)
for s in "${suites[@]}"; do
  exe=build-rel/bench/$s/${s}_bench
  [ -x "$exe" ] || { echo "bench.sh: no benchmark '$s'"; continue; }
  "$exe" --benchmark_min_time=0.2
done
