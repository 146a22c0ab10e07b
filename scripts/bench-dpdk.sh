#!/usr/bin/env bash
# tita-perf WRITE bandwidth and message rate over net_ring (one process, two
# lcores) and over vhost/virtio-user (two processes, one core each), at 64 B,
# 1 KB and 4 KB with 1 and 64 QPs, next to dpdk-testpmd on the same kind of
# port in the same run (the ceiling: io forwarding around a ring; txonly into
# rxonly over vhost). Prints one table with tita/testpmd packet-rate ratios.
#
# Usage: scripts/bench-dpdk.sh [seconds per point, default 3]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
scripts/setup.sh >/dev/null
scripts/build.sh >/dev/null
perf=build/apps/tita-perf
eal=(--no-huge -m 1024 --no-pci --log-level='*:error')
sock=/tmp/tita-bench-vhost.sock

# testpmd's rate (Mpps) from its periodic stats: the last Rx-pps line.
testpmd_mpps() { grep -E "Rx-pps:" "$1" | tail -1 | awk '{print $2 / 1e6}'; }

ring_testpmd() {  # size
  local log; log=$(mktemp)
  timeout $((secs + 5)) dpdk-testpmd -l 0,1 "${eal[@]}" --file-prefix=tb-ring --vdev=net_ring0 -- \
    --forward-mode=io --tx-first --txpkts="$1" --mbuf-size=5000 --max-pkt-len=4200 \
    --stats-period 1 >"$log" 2>&1 || true
  testpmd_mpps "$log"; rm -f "$log"
}

vhost_testpmd() {  # size
  local s c; s=$(mktemp); c=$(mktemp); rm -f "$sock"
  timeout $((secs + 6)) dpdk-testpmd -l 0,1 --main-lcore 0 "${eal[@]}" --file-prefix=tb-vs \
    --vdev=net_vhost0,iface=$sock,queues=1 -- --forward-mode=rxonly --mbuf-size=5000 --max-pkt-len=4200 \
    --total-num-mbufs=16384 --stats-period 1 >"$s" 2>&1 &
  sleep 2
  timeout $((secs + 2)) dpdk-testpmd -l 1,0 --main-lcore 1 "${eal[@]}" --file-prefix=tb-vc \
    --vdev=net_virtio_user0,path=$sock,queues=1 -- --forward-mode=txonly --txpkts="$1" --mbuf-size=5000 \
    --max-pkt-len=4200 --total-num-mbufs=16384 --stats-period 1 >"$c" 2>&1 || true
  wait || true
  testpmd_mpps "$s"; rm -f "$s" "$c"
}

tita_ring() {  # size qps
  "$perf" -l 0,1 "${eal[@]}" --file-prefix=tb-tr -- --loopback --test write --size "$1" --qps "$2" \
    --tx-depth 32 --duration "$secs" --json 2>/dev/null | grep '^{'
}

tita_vhost() {  # size qps
  rm -f "$sock"
  "$perf" -l 0 "${eal[@]}" --file-prefix=tb-ts --vdev=net_vhost0,iface=$sock,queues=1 -- \
    --port net_vhost0 --ip 10.0.0.2 --server --json >/dev/null 2>&1 &
  sleep 1.5
  "$perf" -l 1 "${eal[@]}" --file-prefix=tb-tc --vdev=net_virtio_user0,path=$sock,queues=1 -- \
    --port net_virtio_user0 --ip 10.0.0.1 --client 127.0.0.1 --test write --size "$1" --qps "$2" \
    --tx-depth 32 --duration "$secs" --json 2>/dev/null | grep '^{'
  wait || true
}

field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

grep -m1 "model name" /proc/cpuinfo
printf "%-6s %6s %4s %10s %12s %12s %14s %8s\n" port bytes qps "tita Gb/s" "tita Mmsg/s" "tita Mpps" "testpmd Mpps" ratio
for transport in ring vhost; do
  for size in 64 1024 4096; do
    ceiling=$(${transport}_testpmd "$size")
    for qps in 1 64; do
      r=$(tita_$transport "$size" "$qps")
      gbps=$(echo "$r" | field gbps)
      mmsg=$(echo "$r" | field msg_rate_mpps)
      mpps=$(echo "$r" | field pkt_rate_mpps)
      ratio=$(/usr/bin/python3 -c "print(f'{$mpps / $ceiling:.2f}' if $ceiling > 0 else 'n/a')")
      printf "%-6s %6s %4s %10.3f %12.4f %12.4f %14.3f %8s\n" "$transport" "$size" "$qps" "$gbps" "$mmsg" "$mpps" \
        "$ceiling" "$ratio"
    done
  done
done
