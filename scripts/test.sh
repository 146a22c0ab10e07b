#!/usr/bin/env bash
# Install what is missing, build, and run every test suite; then build the unit
# tests again with AddressSanitizer and UndefinedBehaviorSanitizer and run them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
meson test -C build --print-errorlogs

echo "== unit tests under ASan + UBSan"
if [ ! -f build-san/build.ninja ]; then
  meson setup build-san -Db_sanitize=address,undefined -Db_lundef=false -Ddebug=true -Doptimization=1 \
    -Dfuzz=disabled -Dbenchmarks=disabled -Ddpdk=disabled -Dns3=disabled
fi
ninja -C build-san
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-san --suite unit --print-errorlogs
