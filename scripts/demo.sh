#!/usr/bin/env bash
# The main job: install what is missing, build, and show tita's RoCEv2 frames as
# Wireshark decodes them (one frame of every RC opcode plus CNP, IPv6 and 802.1Q).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
mkdir -p out
build/apps/tita-wire demo --pcap out/roce-demo.pcap
echo
echo "== tshark's summary of out/roce-demo.pcap"
tshark -r out/roce-demo.pcap 2>/dev/null
echo
echo "== tshark's decoding of frame 12 (RDMA WRITE Only with Immediate)"
tshark -r out/roce-demo.pcap -O infiniband -Y frame.number==12 2>/dev/null | sed -n '/InfiniBand/,$p'
