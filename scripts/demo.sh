#!/usr/bin/env bash
# The main job: install what is missing, build, and run an incast through the
# software switch once per congestion control (none, dcqcn, hpcc, tita): three
# tita-perf senders into one receiver over a 1 Gb/s bottleneck, every process a
# real DPDK application on vhost-user ports. Prints throughput, fairness, queue
# and retransmissions per algorithm and writes out/demo/incast.png.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh demo
scripts/build.sh apps/tita-perf apps/tita-switch/tita-switch
/usr/bin/python3 scripts/demo/incast.py build out/demo "$@"
