#!/bin/bash
# Runs every libFuzzer target for a while and reports what it did.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET ...]      (default 300 s; all targets)
#
# Targets: parse (lib/wire's parser); tita_fuzz's engine, api, switch,
# switch-config, switch-set, cc-params, verbs-config (tests/fuzz/tita_fuzz.cc); sim-files
# (tita-sim's readers, tests/fuzz/sim_fuzz.cc). Each starts from its
# checked-in seeds and keeps what it finds in out/fuzz/TARGET (reused by the
# next run); a crash leaves its input in out/fuzz/crashes/. Prints, per target:
# inputs run, executions per second, coverage (edges) and features at the start
# and the end, the corpus size, and crashes. Needs clang (scripts/setup.sh) and a
# build with fuzzing on (meson's fuzz option, auto when clang++ is found).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(parse engine api switch switch-config switch-set cc-params verbs-config sim-files)
build=${BUILD:-build}
ninja -C "$build" tests/fuzz/parse_fuzzer tests/fuzz/tita_fuzz tests/fuzz/sim_fuzz >/dev/null
mkdir -p out/fuzz/crashes
printf '%-14s %12s %10s %16s %16s %8s %8s\n' target execs exec/s "cov start->end" "ft start->end" corpus crashes
for t in "${targets[@]}"; do
  work=out/fuzz/$t
  mkdir -p "$work"
  if [ "$t" = parse ]; then
    bin=$build/tests/fuzz/parse_fuzzer seeds=tests/fuzz/corpus max=2048
  elif [ "$t" = sim-files ]; then
    bin=$build/tests/fuzz/sim_fuzz seeds=tests/fuzz/seeds/sim-files max=4096
  else
    bin=$build/tests/fuzz/tita_fuzz seeds=tests/fuzz/seeds/$t max=4096
  fi
  log=out/fuzz/$t.log
  before=$(ls out/fuzz/crashes | wc -l)
  TITA_FUZZ=$t "$bin" -max_total_time="$seconds" -max_len=$max -print_final_stats=1 -error_exitcode=1 \
    -artifact_prefix=out/fuzz/crashes/$t- "$work" "$seeds" >"$log" 2>&1 || true
  after=$(ls out/fuzz/crashes | wc -l)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  first=$(grep -m1 -E '^#[0-9]+.*(INITED|cov:)' "$log" || true)
  last=$(grep -E '^#[0-9]+.*cov:' "$log" | tail -1 || true)
  cov() { sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$1"; }
  ft() { sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$1"; }
  corp=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")
  printf '%-14s %12s %10s %16s %16s %8s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$(cov "$first")->$(cov "$last")" \
    "$(ft "$first")->$(ft "$last")" "${corp:-?}" "$((after - before))"
done
