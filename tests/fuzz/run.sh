#!/bin/sh
# run.sh FUZZER WORKDIR SEED_CORPUS [libFuzzer flags...]
# New inputs go to WORKDIR, never into the checked-in seed corpus.
set -e
fuzzer=$1 work=$2 seeds=$3
shift 3
mkdir -p "$work"
exec "$fuzzer" "$@" "$work" "$seeds"
