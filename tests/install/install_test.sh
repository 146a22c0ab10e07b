#!/bin/sh
# Installs the build into a scratch directory and builds consumers against it
# with nothing but pkg-config: the public headers and the .pc files are
# complete, for a shared and a fully static link (pkg-config --static), and a
# program that does not capture needs no libpcap (libtita-capture is separate).
set -eu
build=$1 src=$2 capture_src=$3 work=$4
. "$(dirname "$0")/stage.sh"
stage_install "$build" "$work"

c++ -std=c++20 -o "$work/consumer" "$src" $(pkg-config --cflags --libs libtita)
"$work/consumer"
if readelf -d "$work/consumer" | grep -q 'NEEDED.*libpcap'; then
  echo "FAIL: a consumer of libtita links libpcap"
  exit 1
fi

# Every static dependency of DPDK resolved (-lsystemd among them).
c++ -std=c++20 -o "$work/consumer-static" "$src" $(pkg-config --static --cflags --libs libtita) 2>"$work/static.log" || {
  grep -v 'warning' "$work/static.log" | head -20
  echo "FAIL: pkg-config --static libtita does not link"
  exit 1
}
"$work/consumer-static"

c++ -std=c++20 -o "$work/capture-consumer" "$capture_src" $(pkg-config --cflags --libs libtita-capture)
"$work/capture-consumer" "$work/one.pcap"
