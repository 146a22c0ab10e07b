#!/bin/sh
# A congestion-control plug-in from its own project, run everywhere unchanged,
# by the route doc/cc/writing-an-algorithm.md documents: tita is installed with
# `meson install --destdir` into a scratch root whose .pc files are used as
# installed (relocatable); examples/cc-plugin's files are copied into an empty
# directory and built there with meson and pkg-config's tita-cc alone (no DPDK,
# no ISA-L, no -march in its flags), and run its own unit test; then the
# installed tita-sim runs it in an incast (every flow finishes, the queue stays
# bounded, the flows share fairly), the installed tita-perf over a crossed
# net_ring pair, and the golden trace compares its decisions through the ns-3
# NIC and through the DPDK host with a direct call. Broken plug-ins and bad parameters are one line and
# exit status 2, never a crash.
#   cc_plugin_test.sh BUILD EXAMPLE_DIR BAD_PLUGIN_CC NS3_TESTS WORK [DPDK_RING_TEST]
set -eu
build=$1 example=$2 bad_src=$3 ns3_tests=$4 work=$5 dpdk_test=${6:-}
. "$(dirname "$0")/stage.sh"
stage_install "$build" "$work"
bin=$ROOT_PREFIX/bin

echo "== tita-cc: the cc/ headers, nothing of DPDK or ISA-L"
flags=$(pkg-config --cflags --libs tita-cc)
echo "pkg-config --cflags --libs tita-cc: $flags"
case "$flags" in
  *march*|*rte_*|*dpdk*|*isal*|*-include*) echo "FAIL: tita-cc brings more than the cc/ headers"; exit 1 ;;
esac
[ -f "$(pkg-config --variable=includedir tita-cc)/tita/cc/plugin.h" ] || { echo "FAIL: no tita/cc/plugin.h"; exit 1; }

echo "== the example, copied into an empty directory and built there"
mkdir -p "$work/mycc"
cp "$example/meson.build" "$example/dctcp.cc" "$example/dctcp_test.cc" "$work/mycc/"
(
  cd "$work/mycc"
  meson setup build >setup.log 2>&1 || { tail -20 setup.log; exit 1; }
  ninja -C build >/dev/null
  meson test -C build --print-errorlogs
) || exit 1
so=$(find "$work/mycc/build" -maxdepth 1 -name 'libtita-dctcp.so' | head -1)
[ -n "$so" ] || { echo "FAIL: no libtita-dctcp.so"; exit 1; }
if nm -D --undefined-only "$so" | grep -q tita; then
  echo "FAIL: the plug-in needs tita symbols:"; nm -D --undefined-only "$so" | grep tita; exit 1
fi

echo "== listed with its parameters"
"$bin/tita-sim" --cc-plugin="$so" --cc=help | grep -A2 '^dctcp (plug-in)' | tee "$work/help.txt"
grep -q 'min_window_mtus' "$work/help.txt"

echo "== a bare file name is the file in the current directory"
(cd "$(dirname "$so")" && "$bin/tita-sim" --cc-plugin="$(basename "$so")" --cc=help) | grep -q '^dctcp (plug-in)' ||
  { echo "FAIL: --cc-plugin=$(basename "$so") from its directory"; exit 1; }

echo "== tita-sim: a 4-to-1 incast under dctcp"
out=$work/sim
"$bin/tita-sim" --cc-plugin="$so" --cc=dctcp --cc-params=g=0.0625 --topo=star:n=5,rate=100Gbps,delay=1us \
  --workload=incast:senders=4,receiver=0,bytes=4MB --progress=0 --qlen-interval=0s --out="$out" 2>"$work/sim.log" ||
  { cat "$work/sim.log"; exit 1; }
tail -1 "$work/sim.log"
python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
s = json.load(open(out + "/summary.json"))
fct = [int(r["fct_ns"]) for r in csv.DictReader(open(out + "/fct.csv"))]
maxq = max(int(r["max_qlen_bytes"]) for r in csv.DictReader(open(out + "/links.csv")))
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok &= cond
check(s["flows_finished"] == 4 and s["flows_failed"] == 0, "every flow finished")
check(s["switch_drops"] == 0 and s["nic_drops"] == 0, "nothing dropped")
check(s["cc"] == "dctcp", "the plug-in ran")
# Same sizes, same start: fair sharing means close finish times.
check(min(fct) > 0.8 * max(fct), f"finish times within 20% ({min(fct)} .. {max(fct)} ns)")
# Bounded by the algorithm: well under the PFC threshold of the 32 MiB buffer.
check(maxq < 2_000_000, f"the bottleneck queue stays below 2 MB (max {maxq} B)")
sys.exit(0 if ok else 1)
PY

echo "== tita-doctor precheck takes the plug-in's algorithm"
rc=0
"$bin/tita-doctor" precheck --switch "$example/../../apps/tita-switch/examples/switch.json" --cc-plugin "$so" \
  --cc dctcp >"$work/precheck.log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then echo "FAIL: precheck --cc-plugin: exit $rc"; cat "$work/precheck.log"; exit 1; fi
tail -1 "$work/precheck.log"
rc=0
"$bin/tita-doctor" precheck --switch "$example/../../apps/tita-switch/examples/switch.json" --cc dctcp \
  >"$work/precheck-no.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "give it with --cc-plugin" "$work/precheck-no.log" ||
  { echo "FAIL: precheck --cc dctcp without its plug-in: exit $rc"; cat "$work/precheck-no.log"; exit 1; }

echo "== tita-perf over a crossed net_ring pair"
"$bin/tita-perf" --no-huge -m 512 -l 0,1 --vdev=net_ring0 --log-level=lib.eal:crit -- --loopback --duration 1 \
  --cc-plugin "$so" --cc dctcp --cc-param g=0.125 --check >"$work/perf.log" 2>&1 || { cat "$work/perf.log"; exit 1; }
grep -A1 '^test' "$work/perf.log"
awk '/^write/ { ok = $5 > 0 } END { exit ok ? 0 : 1 }' "$work/perf.log" || { echo "FAIL: tita-perf moved nothing"; exit 1; }

echo "== the same decisions through the ns-3 NIC and directly"
TITA_TEST_CC_PLUGIN="$so" "$ns3_tests" --suite=tita --fullness=QUICK --verbose 2>&1 | grep -E 'dctcp' | tee "$work/golden.txt"
grep -q 'PASS golden trace: dctcp' "$work/golden.txt"
if [ -n "$dpdk_test" ]; then
  echo "== the same decisions through the DPDK host and directly"
  TITA_TEST_CC_PLUGIN="$so" "$dpdk_test" --gtest_filter='*DpdkGolden*/dctcp' >"$work/golden-dpdk.txt" 2>&1 ||
    { cat "$work/golden-dpdk.txt"; exit 1; }
  grep -E 'dctcp: .* ACKs' "$work/golden-dpdk.txt"
  grep -q '\[       OK \] Dpdk/DpdkGolden.DirectAndThroughTheHostDecideAlike/dctcp' "$work/golden-dpdk.txt" ||
    { echo "FAIL: the DPDK golden trace did not run for dctcp"; cat "$work/golden-dpdk.txt"; exit 1; }
else
  echo "SKIP: the DPDK golden trace (built without DPDK)"
fi

echo "== refused with one line"
refuse() {  # refuse WHAT EXPECTED ARGS...
  what=$1 expect=$2
  shift 2
  rc=0
  "$bin/tita-sim" "$@" --progress=0 --out="$work/refused" >"$work/refused.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || { echo "FAIL: $what was accepted"; exit 1; }
  lines=$(wc -l <"$work/refused.log")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -q "$expect" "$work/refused.log"; then
    echo "FAIL: $what: exit $rc, $lines lines:"; cat "$work/refused.log"; exit 1
  fi
  echo "ok   $what: $(cat "$work/refused.log")"
}
for kind in NO_ENTRY DUPLICATE OVERSIZE; do
  c++ -std=c++20 -shared -fPIC -fvisibility=hidden -DBAD_$kind -o "$work/bad_$kind.so" "$bad_src" \
    $(pkg-config --cflags tita-cc)
done
refuse "a missing entry point" "no tita_cc_plugin_ops_v1" --cc-plugin="$work/bad_NO_ENTRY.so"
refuse "a duplicate name" "'hpcc': the name is taken" --cc-plugin="$work/bad_DUPLICATE.so"
refuse "an oversized state" "per-flow state of 4096 bytes, at most" --cc-plugin="$work/bad_OVERSIZE.so"
refuse "a file that is no plug-in" "cannot open\|invalid ELF\|too short" --cc-plugin="$bad_src"
refuse "a bare name that is nowhere" "give its path, e.g. ./libnothere.so" --cc-plugin=libnothere.so
refuse "a bad parameter" "dctcp parameter 'g' = 7 is out of range" --cc-plugin="$so" --cc=dctcp --cc-params=g=7 --topo=star:n=3
refuse "an unknown parameter" "dctcp has no parameter 'gain'" --cc-plugin="$so" --cc=dctcp --cc-params=gain=1 --topo=star:n=3
echo "cc-plugin: all checks passed"
