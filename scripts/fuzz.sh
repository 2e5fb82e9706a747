#!/usr/bin/env bash
# Builds the loader fuzzers (clang, ASan + UBSan, CPU only) in build-fuzz/ and runs each for a
# fixed time, starting from the committed seeds in fuzz/seeds/EXT and the committed minimized
# corpus in fuzz/corpus/EXT (what earlier runs found, merged with -merge=1; test_io loads every
# one of those inputs too, which must load or fail with a clear error). Inputs that crash are copied
# to fuzz/regressions/EXT/, where test_io loads every one of them on each test run.
#   scripts/fuzz.sh [SECONDS_PER_LOADER] [EXT...]     (default 60 s; pcd ply bin xyz png tif las)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
seconds=${1:-60}
shift || true
exts=("$@")
[ ${#exts[@]} -gt 0 ] || exts=(pcd ply bin xyz png tif las)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCUMULUS_HEADLESS=ON -DCUMULUS_WITH_CUDA=OFF -DCUMULUS_BUILD_TESTS=OFF -DCUMULUS_FUZZ=ON >/dev/null || exit 1
targets=()
for e in "${exts[@]}"; do targets+=("fuzz_$e"); done
cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]}" || exit 1
status=0
for e in "${exts[@]}"; do
  work=build-fuzz/corpus/$e
  found=build-fuzz/findings/$e
  mkdir -p "$work" "$found" "fuzz/regressions/$e"
  seeds=()
  [ -d "fuzz/seeds/$e" ] && seeds+=("fuzz/seeds/$e")
  [ -d "fuzz/corpus/$e" ] && seeds+=("fuzz/corpus/$e")
  echo "== fuzz_$e for ${seconds}s"
  # Leak reports are PCL's and libtiff's global caches at exit, not per-input leaks.
  ASAN_OPTIONS=detect_leaks=0 build-fuzz/fuzz/fuzz_$e "$work" "${seeds[@]}" \
    -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$found/" -print_final_stats=1 2>&1 | grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|ERROR|SUMMARY|Test unit written" || true
  for crash in "$found"/crash-* "$found"/timeout-* "$found"/oom-*; do
    [ -e "$crash" ] || continue
    cp "$crash" "fuzz/regressions/$e/$(basename "$crash").$e"
    echo "   finding kept as fuzz/regressions/$e/$(basename "$crash").$e"
    status=1
  done
done
exit $status
