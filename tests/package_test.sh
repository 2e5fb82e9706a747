#!/usr/bin/env bash
# test_package: `cpack -G DEB` makes cumulus_VERSION_ARCH.deb whose control fields name its
# library dependencies, and whose files, unpacked, run: both programs' --version, the CLI on the
# packaged sample data, the man page, and the Python module imported from the package.
#   package_test.sh BUILD_DIR VERSION PYTHON
set -euo pipefail
build=$1 version=$2 python=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$build"
cpack -G DEB -B "$work/out" > "$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/out/cumulus_"$version"_*.deb)
fail() { echo "FAIL: $*"; exit 1; }
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libqt6core6 libqt6widgets6 libvtk9.1 libpcl-io1.13 python3-numpy qt6-qpa-plugins; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib: $depends"
done
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "wrong version"
dpkg-deb -x "$deb" "$work/root"
r=$work/root/usr
for f in bin/cumulus bin/cumulus-cli share/man/man1/cumulus-cli.1 share/applications/cumulus.desktop \
  share/mime/packages/cumulus.xml share/icons/hicolor/scalable/apps/cumulus.svg \
  share/doc/cumulus/LICENSE share/cumulus/sample_data/street_scene.pcd share/cumulus/bench_plot.py; do
  [ -e "$r/$f" ] || fail "missing /usr/$f"
done
"$r/bin/cumulus-cli" --version | grep -q "^cumulus-cli $version " || fail "cumulus-cli --version"
QT_QPA_PLATFORM=offscreen "$r/bin/cumulus" --version | grep -q "$version" || fail "cumulus --version"
"$r/bin/cumulus-cli" info "$r/share/cumulus/sample_data/street_scene.pcd" > /dev/null ||
  fail "cumulus-cli info on the packaged sample"
grep -q "^.SS cluster" "$r/share/man/man1/cumulus-cli.1" || fail "man page lacks the commands"
# The packaged CLI draws plots with the script installed beside it.
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  printf '%s\n' "sweep,case,x,points,tolerance,method,median_ms,min_ms,max_ms,clusters,agreement,stages_ms,floor_ms" \
    "size,4096,4096,4096,1,cpu,6.1,6,6.3,16,reference,,0" "size,8192,8192,8192,1,cpu,12.5,12,13,16,reference,,0" \
    > "$work/cluster.csv"
  out=$(env -u CUMULUS_PLOT_SCRIPT "$r/bin/cumulus-cli" bench plot --csv "$work/cluster.csv" \
        --out "$work" 2>&1) || fail "bench plot with the packaged script: $out"
  [ -s "$work/cluster_size.png" ] || fail "bench plot wrote no PNG: $out"
fi
if [ -d "$r/lib/python3/dist-packages/cumulus" ]; then
  PYTHONPATH=$r/lib/python3/dist-packages "$python" -c "
import cumulus, sys
assert cumulus.__file__.startswith('$r'), cumulus.__file__
c = cumulus.read('$r/share/cumulus/sample_data/street_scene.pcd')
assert len(cumulus.cluster(c, 0.5, method='cpu')) == len(c)
" || fail "the packaged Python module"
fi
echo "PASS: $(basename "$deb")"
