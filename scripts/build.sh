#!/usr/bin/env bash
# Configure (once) and build tita in build/: everything, or the ninja targets
# given (scripts/demo.sh builds only what the demo runs). Options for
# `meson setup` come from MESON_SETUP_ARGS. When packages were installed after
# build/ was configured (scripts/setup.sh all after a demo), build/ is
# reconfigured so the parts they enable (ns-3, verbs, fuzzers) are built.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  # shellcheck disable=SC2086
  meson setup build ${MESON_SETUP_ARGS:-}
elif [ -n "$(find /var/lib/dpkg/info -name '*.list' -newer build/meson-private/coredata.dat -print -quit)" ]; then
  echo "build: packages installed since build/ was configured; reconfiguring"
  meson setup --reconfigure build
fi
# A build set up before the .pc files were relocatable is brought to it.
relocatable='import json, sys; print(any(o["name"] == "pkgconfig.relocatable" and o["value"] for o in json.load(sys.stdin)))'
if [ "$(meson introspect --buildoptions build | python3 -c "$relocatable")" != True ]; then
  meson configure build -Dpkgconfig.relocatable=true >/dev/null
fi
ninja -C build "$@"
