#!/usr/bin/env bash
# tita-perf against dpdk-testpmd on the same ports, several runs, median
# [min, max] and same-run ratios (scripts/bench-dpdk.py says what is measured).
#
# Usage: scripts/bench-dpdk.sh [--runs 3] [--seconds 3] [--grid]
# Measure on an idle machine: two busy pollers take both of a 2-vCPU VM's cores.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
scripts/build.sh >/dev/null
exec /usr/bin/python3 scripts/bench-dpdk.py "$@"
