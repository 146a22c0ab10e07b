#!/usr/bin/env bash
# What connecting through tita's rdma_cm costs a small message: ib_send_lat 2 B
# (5000 iterations, typical latency) between two tita-run processes on a
# vhost/virtio-user pair, its QPs connected by perftest's TCP exchange (plain)
# and by librdmacm (-R), alternating, RUNS times each; prints every run and the
# median [min, max] of each.
#
#   scripts/bench-rdmacm.sh [RUNS]      (default 6; needs a build in ./build)
set -euo pipefail
runs=${1:-6}
root=$(cd "$(dirname "$0")/.." && pwd)
run="$root/build/apps/tita-run"
work=$(mktemp -d /tmp/tita-bench-rdmacm.XXXXXX)
trap 'rm -rf "$work"' EXIT

one() {  # $1: "" (plain) or "-R"
  local sock="$work/l.sock" cli_addr=127.0.0.1
  rm -f "$sock"
  [ "$1" = "-R" ] && cli_addr=10.0.0.1
  timeout 60 "$run" --vdev "net_vhost0,iface=$sock" --ip 10.0.0.1 --progress adaptive --log info -- \
    ib_send_lat $1 -d tita0 -n 5000 >"$work/srv.log" 2>&1 &
  local srv=$!
  for _ in $(seq 200); do
    grep -q "listening on port\|Waiting for client" "$work/srv.log" 2>/dev/null && break
    sleep 0.05
  done
  sleep 0.5
  timeout 60 "$run" --vdev "net_virtio_user0,path=$sock" --ip 10.0.0.2 --progress adaptive -- \
    ib_send_lat $1 -d tita0 -n 5000 "$cli_addr" 2>&1 | awk '/^ *2 +5000 / {print $5}'
  wait "$srv" || true
}

plain=() cm=()
for r in $(seq "$runs"); do
  p=$(one "") c=$(one -R)
  echo "run $r: plain $p us, rdma_cm $c us"
  plain+=("$p") cm+=("$c")
done
python3 - "${plain[*]}" "${cm[*]}" <<'PY'
import statistics, sys
for name, text in (("plain", sys.argv[1]), ("rdma_cm", sys.argv[2])):
    v = [float(x) for x in text.split()]
    print(f"{name}: median {statistics.median(v):.2f} us [{min(v):.2f}, {max(v):.2f}] over {len(v)} runs")
PY
