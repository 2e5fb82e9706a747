#!/usr/bin/env bash
# Prepares .gpu-gui/ (git-ignored) for the GUI's tests on the GPU machine, which has the NVIDIA
# driver but no display and none of our Debian libraries: the GUI tests that take a GPU path
# where there is one (test_gui, test_windows, test_small_things), the GUI program test_gui
# starts, an X server (Xvfb) with its keymap compiler and keymaps, Mesa's software GLX for that
# server (and for a run without the GPU's OpenGL), the Qt xcb platform plugins, a font, and every
# shared library these load that scripts/gpu-pack.sh's parts (.gpu-lib) do not already carry.
# Packed with xz in parts of 16 MiB: the device tool carries at most 64 MiB a call, the working
# tree and a part of .gpu-lib included. scripts/gpu-check.sh gui unpacks them once all have come
# and runs the GUI's GPU measurement (or other GUI tests).
#   scripts/gpu-pack-gui.sh     (after scripts/gpu-pack.sh; builds what it packs in ./build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -f .gpu-lib/part00 ] || { echo "run scripts/gpu-pack.sh first (its libraries are not repeated here)"; exit 1; }
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)" --target test_gui test_windows test_small_things cumulus
multiarch=/usr/lib/x86_64-linux-gnu
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/{bin,lib,dri,plugins/platforms,plugins/xcbglintegrations,fonts,xkb}
cp build/tests/test_{gui,windows,small_things} build/app/gui/cumulus "$stage/bin/"
cp /usr/bin/Xvfb /usr/bin/xkbcomp "$stage/bin/"
strip "$stage"/bin/test_* "$stage/bin/cumulus"
cp -L "$multiarch/dri/swrast_dri.so" "$stage/dri/"
cp -L "$multiarch/qt6/plugins/platforms/libqxcb.so" "$stage/plugins/platforms/"
cp -L "$multiarch"/qt6/plugins/xcbglintegrations/*.so "$stage/plugins/xcbglintegrations/"
cp -r /usr/share/X11/xkb/. "$stage/xkb/"
cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf "$stage/fonts/"
# glvnd chooses the GLX vendor by name (libGLX_<name>.so.0) and the X server's Mesa GLX loads
# libglapi: neither shows in ldd, so both are named.
extra="$multiarch/libGLX_mesa.so.0 $multiarch/libglapi.so.0"
cat .gpu-lib/part[0-9]* | xz -dc | tar tf - | sed 's|^lib/||' | sort > "$stage/have"
{
  for f in "$stage"/bin/* "$stage"/dri/* "$stage"/plugins/*/* $extra; do ldd "$f" | awk '/=>/ {print $3}'; done
  echo "$extra" | tr ' ' '\n'
} | sort -u | grep -vE 'lib(c|m|stdc\+\+|gcc_s|pthread|dl|rt)\.so|ld-linux' |
  while read -r lib; do
    grep -qxF "$(basename "$lib")" "$stage/have" || cp -L "$lib" "$stage/lib/"
  done
rm "$stage/have"
rm -rf .gpu-gui && mkdir -p .gpu-gui
tar -C "$stage" -cf - . | xz -T0 -9 | split -b 16M -d - .gpu-gui/part
ls .gpu-gui | grep -c '^part' > .gpu-gui/count
du -sh .gpu-gui/*
