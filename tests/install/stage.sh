# Sourced: installs build $1 into $2/root (meson install --destdir) and points
# pkg-config at the installed .pc files as they are: they are relocatable
# (prefix=${pcfiledir}/...), so nothing is rewritten. tita's dependencies are
# installed system-wide. Sets PKG_CONFIG_PATH and ROOT_PREFIX (the installed
# prefix inside the scratch root).
stage_install() {
  _build=$1 _work=$2
  rm -rf "$_work"
  meson install -C "$_build" --destdir "$_work/root" --no-rebuild >/dev/null
  _pc=$(find "$_work/root" -name 'tita-cc.pc' | head -1)
  [ -n "$_pc" ] || { echo "FAIL: no tita-cc.pc installed"; return 1; }
  if ! grep -q '^prefix=${pcfiledir}' "$_pc"; then
    echo "FAIL: $_pc is not relocatable (an old build dir? meson configure $_build -Dpkgconfig.relocatable=true)"
    return 1
  fi
  export PKG_CONFIG_PATH="$(dirname "$_pc")"
  ROOT_PREFIX=$(cd "$(pkg-config --variable=prefix tita-cc)" && pwd)
}
