#!/bin/bash
# The cost of the plug-in slot for the built-in algorithms (issue 14): builds
# bench/cc/on_ack_loop.cc against the tree's cc/ twice, as it is (eight built-ins
# and the plug-in slot) and with the slot taken out (eight alternatives, std::visit
# as before plug-ins), then
#   - counts instructions per on_ack with callgrind (calls 2N minus calls N, / N),
#   - times whole runs of both builds alternately (RUNS pairs, user CPU seconds).
# -O2, generic x86-64 (valgrind does not decode AVX-512). Usage:
#   scripts/cc-dispatch-cost.sh [WORK_DIR] [RUNS]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/tita-dispatch-cost}
runs=${2:-5}
rm -rf "$work" && mkdir -p "$work/slot" "$work/noslot/tita/cc"
cxx="g++ -O2 -std=c++20"

# As it is.
(cd "$work/slot" && $cxx -I"$src/cc/include" -c "$src"/cc/src/*.cc &&
  $cxx -I"$src/cc/include" "$src/bench/cc/on_ack_loop.cc" ./*.o -ldl -o ../loop-slot)

# Without the slot: the registry's last alternative and its uses removed.
cp -r "$src/cc/include/tita" "$work/noslot/"
sed -i 's/TitaFlow, PluginFlow>;/TitaFlow>;/' "$work/noslot/tita/cc/cc.h"
sed -i 's/dispatch_impl(fn, std::make_index_sequence<std::variant_size_v<Registry::StateVariant>>{});/std::visit(fn, algo_);/' \
  "$work/noslot/tita/cc/cc.h"
sed -e 's/constexpr size_t kBuiltins = kCount - 1;.*/constexpr size_t kBuiltins = kCount;/' \
    -e '/static_assert(std::is_same_v<std::variant_alternative_t<kBuiltins, ParamsVariant>, PluginParams>);/d' \
    -e 's/PluginParams& p = out->v_.emplace<PluginParams>();/return -ENOENT; PluginParams p;/' \
    "$src/cc/src/registry.cc" >"$work/noslot/registry.cc"
grep -q 'TitaFlow>;' "$work/noslot/tita/cc/cc.h" && grep -q 'std::visit(fn, algo_);' "$work/noslot/tita/cc/cc.h" ||
  { echo "cc-dispatch-cost.sh: cc.h changed shape; update the script" >&2; exit 1; }
(cd "$work/noslot" && $cxx -I"$work/noslot" -c registry.cc &&
  for f in "$src"/cc/src/*.cc; do [ "$(basename "$f")" = registry.cc ] || $cxx -I"$work/noslot" -c "$f"; done &&
  $cxx -I"$work/noslot" "$src/bench/cc/on_ack_loop.cc" ./*.o -ldl -o ../loop-noslot)

ir() {  # ir BINARY ARGS...: instructions of one run
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected/ {print $4}'
}
cpu() {  # cpu BINARY ARGS...: user seconds of one run
  /usr/bin/time -f %U "$@" 2>&1 >/dev/null | tail -1
}
echo "algorithm  hops  instructions/ACK slot  no slot   time ratio slot/no-slot, median [min, max] of $runs pairs"
for case in "none 0 300000000" "dcqcn 0 300000000" "hpcc 5 30000000" "tita 5 30000000"; do
  set -- $case
  a=$1 h=$2 n=$3
  per() { echo $(( ($(ir "$1" $a $h 200000) - $(ir "$1" $a $h 100000)) / 100000 )); }
  ratios=()
  for ((i = 0; i < runs; ++i)); do
    s=$(cpu "$work/loop-slot" $a $h $n)
    o=$(cpu "$work/loop-noslot" $a $h $n)
    ratios+=("$(python3 -c "print(f'{$s / $o:.3f}')")")
  done
  summary=$(printf '%s\n' "${ratios[@]}" | sort -n | python3 -c "import sys; v=[float(x) for x in sys.stdin]; print(f'{v[len(v)//2]:.3f} [{v[0]:.3f}, {v[-1]:.3f}]')")
  printf '%-9s  %4s  %21s  %7s   %s\n' "$a" "$h" "$(per "$work/loop-slot")" "$(per "$work/loop-noslot")" "$summary"
done
