# Sourced: installs build $1 into $2/root and points pkg-config at it (tita's
# .pc files only: their dependencies are installed system-wide). Sets
# PKG_CONFIG_PATH and ROOT_PREFIX (the installed prefix inside the scratch root).
stage_install() {
  _build=$1 _work=$2
  rm -rf "$_work"
  meson install -C "$_build" --destdir "$_work/root" --no-rebuild >/dev/null
  mkdir -p "$_work/pc"
  for pc in $(find "$_work/root" -name 'libtita*.pc'); do
    prefix=$(sed -n 's/^prefix=//p' "$pc")
    sed "s|^prefix=.*|prefix=$_work/root$prefix|" "$pc" >"$_work/pc/$(basename "$pc")"
  done
  ROOT_PREFIX=$_work/root$prefix
  export PKG_CONFIG_PATH="$_work/pc"
}
