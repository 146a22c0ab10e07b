#!/bin/sh
# Installs the build into a scratch directory and builds a consumer against it
# with nothing but pkg-config: the public headers and libtita.pc are complete.
set -eu
build=$1 src=$2 work=$3
rm -rf "$work"
meson install -C "$build" --destdir "$work/root" --no-rebuild >/dev/null
pc=$(find "$work/root" -name libtita.pc | head -1)
prefix=$(sed -n 's/^prefix=//p' "$pc")
# Point libtita.pc (only it: its dependencies are installed system-wide) at the scratch root.
mkdir -p "$work/pc"
sed "s|^prefix=.*|prefix=$work/root$prefix|" "$pc" >"$work/pc/libtita.pc"
flags=$(PKG_CONFIG_PATH="$work/pc" pkg-config --cflags --libs libtita)
c++ -std=c++20 -o "$work/consumer" "$src" $flags
"$work/consumer"
