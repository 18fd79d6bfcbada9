#!/usr/bin/env bash
# Packs what bench/gpu/validate.sh needs on a GPU machine that cannot build gpureap (no
# Debian -dev packages there): the gpureap binary (debug info stripped), gpukit-hold, and the
# shared libraries gpureap links that are not glibc's own, into one folder:
#
#   bench/gpu/bundle.sh DIR          from build/ (BUILD=other/build to choose)
#   bench/gpu/validate.sh --kit DIR  there
#
# DIR/MANIFEST says what is inside and the oldest glibc the binaries run on. The GPU machine
# needs that glibc or newer, python3 and nvidia-smi; nothing else.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 DIR   (BUILD=build folder, default build/)" >&2; exit 2; }
dir=$1
build=${BUILD:-$root/build}
gpureap=$build/gpureap hold=$build/bench/gpu/gpukit-hold
[ -x "$gpureap" ] || { echo "bundle.sh: no $gpureap: cmake --build $build --target gpureap gpukit_hold" >&2; exit 1; }
mkdir -p "$dir/bin" "$dir/lib"
rm -f "$dir"/bin/* "$dir"/lib/*
if command -v strip >/dev/null; then strip --strip-debug -o "$dir/bin/gpureap" "$gpureap"; else cp "$gpureap" "$dir/bin/gpureap"; fi
if [ -x "$hold" ]; then
  cp "$hold" "$dir/bin/gpukit-hold"
else
  cc -O2 -o "$dir/bin/gpukit-hold" "$here/hold.c" -ldl
fi
# glibc's libraries (and the loader) come from the GPU machine; everything else travels.
# The HTTP module (alerts, the cluster view) beside the program, where it looks first.
modules=()
if [ -f "$build/gpureap-http.so" ]; then
  cp "$build/gpureap-http.so" "$dir/bin/"
  modules=("$build/gpureap-http.so")
fi
ldd "$gpureap" "${modules[@]}" |
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u | while read -r soname path; do
  case $soname in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux*) ;;
    *) cp -L "$path" "$dir/lib/$soname" ;;
  esac
done
glibc=unknown
if command -v objdump >/dev/null; then
  glibc=$(objdump -T "$dir"/bin/* "$dir"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9][0-9.]*' | sort -uV | tail -1)
fi
version=$(LD_LIBRARY_PATH=$dir/lib "$dir/bin/gpureap" --version)
{
  echo "gpureap: $version ($(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown))"
  echo "built on: $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") $(uname -m)"
  echo "needs: ${glibc#GLIBC_} or newer glibc, python3, nvidia-smi"
  (cd "$dir" && find bin lib -type f -printf '%p %s\n' | sort)
} >"$dir/MANIFEST"
cat "$dir/MANIFEST"
echo "bundle.sh: $(du -sh "$dir" | cut -f1) in $dir; run bench/gpu/validate.sh --kit $dir on the GPU machine"
