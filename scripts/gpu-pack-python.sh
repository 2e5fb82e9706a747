#!/usr/bin/env bash
# Prepares .gpu-py/ (git-ignored) for running the Python module and its Dask layer on a GPU
# machine whose own Python differs from Debian's (the module is built for /usr/bin/python3):
# Debian's interpreter and standard library, numpy, Dask and their dependencies, the module
# from the build (./build or $CUMULUS_BUILD_DIR, with CUDA), and the shared libraries they all
# load, packed with xz.
#   scripts/gpu-pack-python.sh
# On the GPU machine:
#   mkdir -p /opt/py && tar xJf .gpu-py/py.tar.xz -C /opt/py
#   export PYTHONHOME=/opt/py/usr LD_LIBRARY_PATH=/opt/py/lib PYTHONPATH=/opt/py/module
#   /opt/py/usr/bin/python3.11 -m cumulus.bench dask --points 100e6
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${CUMULUS_BUILD_DIR:-$root/build}
cmake --build "$build" -j "$(nproc)" --target cumulus_python
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/usr/bin" "$stage/usr/lib/python3/dist-packages" "$stage/lib" "$stage/module"
cp /usr/bin/python3.11 "$stage/usr/bin/"
tar -C /usr/lib -cf - --exclude=__pycache__ --exclude=python3.11/test --exclude=idlelib \
  --exclude=tkinter --exclude=lib2to3 --exclude=ensurepip --exclude="_tkinter*" --exclude="_dbm*" \
  --exclude="_gdbm*" python3.11 | tar -C "$stage/usr/lib" -xf -
# numpy, Dask's distributed scheduler and what they import.
for p in numpy dask distributed tornado msgpack cloudpickle toolz tlz partd fsspec locket \
  psutil yaml _yaml sortedcontainers tblib zict click jinja2 markupsafe packaging urllib3 \
  heapdict.py zipp importlib_metadata pytest _pytest pluggy iniconfig py py.py attr attrs; do
  src=/usr/lib/python3/dist-packages/$p
  [ -e "$src" ] || continue
  cp -r "$src" "$stage/usr/lib/python3/dist-packages/"
done
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
cp -r "$build/python/cumulus" "$stage/module/"
# Every shared library these load but the C/C++ runtime, which the host has.
find "$stage" \( -name '*.so' -o -name '*.so.*' -o -name python3.11 \) -type f |
  xargs -r ldd 2>/dev/null | awk '/=>/ {print $3}' | sort -u |
  grep -vE 'lib(c|m|stdc\+\+|gcc_s|pthread|dl|rt)\.so|ld-linux' | xargs -r -I{} cp -L {} "$stage/lib/"
mkdir -p .gpu-py
tar -C "$stage" -cf - . | xz -T0 -6 > .gpu-py/py.tar.xz
du -sh .gpu-py
