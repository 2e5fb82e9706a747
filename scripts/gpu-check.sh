#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool) with the headless build carried in .gpu/:
#   .gpu/bin.tar.xz (cumulus-cli, the non-GUI tests, the Open3D module), .gpu/data (a copy of
#   ../shared/data), and once per warm machine .gpu-lib/lib.tar.xz (the Debian runtime libraries
#   they need, unpacked into /opt/deps). Writes logs and benchmark output to $OUT.
#   scripts/gpu-pack.sh makes .gpu/ and .gpu-lib/ on this machine; then, on the GPU machine:
#   scripts/gpu-check.sh libs (carrying .gpu-lib), then (carrying .gpu)
#   scripts/gpu-check.sh tests|sanitize|bench|icp|icp-bench|features|features-bench|filters|all
#   and, for the GUI (scripts/gpu-pack-gui.sh makes .gpu-gui/; carry its parts and the data):
#   scripts/gpu-check.sh gui   (GUI_PROGRAM: test_gui, test_windows or test_small_things, default
#   test_gui; GUI_TESTS: its arguments, default the GPU latency test; GUI_VENDORS: the GLX
#   vendors, default "nvidia mesa")
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/out}
mkdir -p /opt/deps "$out"
if [ ! -d /opt/deps/lib ]; then
  # The library parts carried so far (.gpu-lib/partNN, one or more a call); unpacked once all
  # `count` have come.
  mkdir -p /opt/deps/parts
  cp "$root"/.gpu-lib/part* /opt/deps/parts/ 2>/dev/null
  [ -f "$root/.gpu-lib/count" ] && cp "$root/.gpu-lib/count" /opt/deps/parts/
  have=$(ls /opt/deps/parts | grep -c '^part')
  want=$(cat /opt/deps/parts/count 2>/dev/null || echo 0)
  if [ "$want" -gt 0 ] && [ "$have" -ge "$want" ]; then
    cat /opt/deps/parts/part* | xz -d | tar xf - -C /opt/deps && rm -rf /opt/deps/parts
  else
    echo "libraries: $have of $want parts here; carry the rest of .gpu-lib (scripts/gpu-check.sh libs)"
    exit 1
  fi
fi
[ "${1:-}" = libs ] && { echo "libraries in /opt/deps/lib: $(ls /opt/deps/lib | wc -l)"; exit 0; }

if [ "${1:-}" = gui ]; then
  # The GUI's pack (scripts/gpu-pack-gui.sh: .gpu-gui/partNN, one or more a call), unpacked into
  # /opt/gui once all have come; then test_gui's GPU measurement under Xvfb, drawn by the GPU's
  # OpenGL (the driver's GLX, chosen through glvnd) and by Mesa's software one.
  g=/opt/gui
  if [ ! -d $g/bin ]; then
    mkdir -p $g/parts
    cp "$root"/.gpu-gui/part* "$root"/.gpu-gui/count $g/parts/ 2>/dev/null
    have=$(ls $g/parts | grep -c '^part')
    want=$(cat $g/parts/count 2>/dev/null || echo 0)
    if [ "$want" -gt 0 ] && [ "$have" -ge "$want" ]; then
      cat $g/parts/part* | xz -d | tar xf - -C $g && rm -rf $g/parts
    else
      echo "GUI pack: $have of $want parts here; carry the rest of .gpu-gui"
      exit 1
    fi
  fi
  # Xvfb runs xkbcomp from /usr/bin, reads the keymaps under /usr/share/X11/xkb and loads Mesa's
  # software GLX from the Debian path, none of which a variable moves: put them there where the
  # host has none.
  [ -e /usr/bin/xkbcomp ] || cp $g/bin/xkbcomp /usr/bin/
  [ -e /usr/share/X11/xkb ] || { mkdir -p /usr/share/X11 && cp -r $g/xkb /usr/share/X11/xkb; }
  dri=/usr/lib/x86_64-linux-gnu/dri
  [ -e $dri/swrast_dri.so ] || { mkdir -p $dri && cp $g/dri/swrast_dri.so $dri/; }
  printf '<?xml version="1.0"?>\n<fontconfig><dir>%s/fonts</dir><cachedir>/tmp/fc</cachedir></fontconfig>\n' $g > $g/fonts.conf
  export LD_LIBRARY_PATH=/opt/deps/lib:$g/lib:${LD_LIBRARY_PATH:-}
  export QT_PLUGIN_PATH=$g/plugins FONTCONFIG_FILE=$g/fonts.conf LIBGL_DRIVERS_PATH=$g/dri
  export CUMULUS_DATA=${CUMULUS_DATA:-$root/.gpu/data} CUMULUS_SAMPLE_DIR=$root/sample_data
  export CUMULUS_GUI_BINARY=$g/bin/cumulus
  $g/bin/Xvfb :7 -screen 0 1920x1080x24 -nolisten tcp > "$out/xvfb.log" 2>&1 &
  xvfb=$!
  for _ in $(seq 50); do [ -e /tmp/.X11-unix/X7 ] && break; sleep 0.1; done
  export DISPLAY=:7
  for vendor in ${GUI_VENDORS:-nvidia mesa}; do
    echo "== OpenGL through glvnd's vendor $vendor"
    __GLX_VENDOR_LIBRARY_NAME=$vendor $g/bin/${GUI_PROGRAM:-test_gui} ${GUI_TESTS:-liveGpuClusteringOfAKittiFrameShowsItsLatency} \
      2>&1 | tee -a "$out/gui.log" | grep -vE '^(PASS|QDEBUG)'
  done
  kill $xvfb
  exit 0
fi
[ -d "$root/.gpu/bin" ] || tar xJf "$root/.gpu/bin.tar.xz" -C "$root/.gpu"
export LD_LIBRARY_PATH=/opt/deps/lib:${LD_LIBRARY_PATH:-}
export CUMULUS_DATA=${CUMULUS_DATA:-$root/.gpu/data} CUMULUS_SAMPLE_DIR=$root/sample_data
bin=$root/.gpu/bin
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$out/gpu.txt"
what=${1:-all}

if [ "$what" = tests ] || [ "$what" = all ]; then
  for t in test_device test_cluster test_segment test_io test_data test_nns test_icp test_features test_filter test_outliers test_ground test_range_ground test_objects test_odometry test_open3d; do
    "$bin/$t" 2>&1 | tee -a "$out/tests.log" | grep -E "FAIL|Totals|Loc" | head -40
  done
fi

if [ "$what" = sanitize ] || [ "$what" = all ]; then
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  "$bin/cumulus-cli" generate clusters --out /tmp/small.pcd --size 6000 --clusters 24 --degree 16 --distance 4 >/dev/null
  # Hard input for the same kernels: NaNs and points far beyond the grid's reach.
  { printf 'x y z\n'; for k in $(seq 0 99); do echo "0.$k 1 2"; echo "500000.$k 0 0"; done; echo "nan 0 0"; echo "3 inf 1"; } > /tmp/hard.xyz
  for m in gpu gpu-edge-rs gpu-matrix-rs; do
    for tool in memcheck racecheck synccheck initcheck; do
      printf '%-14s %-10s ' "hard:$m" "$tool"
      "$cs" --tool $tool --error-exitcode 9 "$bin/cumulus-cli" cluster /tmp/hard.xyz --tolerance 0.5 --method $m > /tmp/san.log 2>&1
      rc=$?
      cat /tmp/san.log >> "$out/sanitize.log"
      echo "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|clusters from' /tmp/san.log | tr '\n' ' ' | cut -c1-150)"
    done
  done
  for m in gpu gpu-vertex-es gpu-vertex-rs gpu-edge-es gpu-edge-rs gpu-matrix-es gpu-matrix-rs; do
    for tool in memcheck racecheck synccheck initcheck; do
      printf '%-14s %-10s ' "$m" "$tool"
      "$cs" --tool $tool --error-exitcode 9 "$bin/cumulus-cli" cluster /tmp/small.pcd --tolerance 1 --min 2 --method $m \
        > /tmp/san.log 2>&1
      rc=$?
      cat /tmp/san.log >> "$out/sanitize.log"
      echo "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|clusters from' /tmp/san.log | tr '\n' ' ' | cut -c1-150)"
    done
  done
fi

if [ "$what" = features ]; then
  # Normals and histograms: their tests, then every kernel under the sanitizers (a bunny subset,
  # k and radius neighbourhoods, radius rows longer than the shared-memory stage).
  "$bin/test_features" 2>&1 | tee -a "$out/tests.log" | grep -E "FAIL|Totals|Loc|QINFO" | head -60
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  "$bin/cumulus-cli" convert "$CUMULUS_DATA/bunny/bun_zipper.ply" /tmp/bunny.pcd >/dev/null
  { printf 'x y z\n'; for k in $(seq 0 59); do echo "0.$k 0.$((k % 7)) 0.0$((k % 5))"; done; echo "0.1 0 0"; echo "0.1 0 0"; echo "nan 0 0"; } > /tmp/hard.xyz
  for m in gpu gpu-paper; do
    for d in pfh fpfh; do
      for nb in "--k 24" "--radius 0.012"; do
        for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
          printf '%-10s %-5s %-15s %-10s ' "$m" "$d" "$nb" "$tool"
          "$cs" --tool $tool --error-exitcode 9 "$bin/cumulus-cli" features /tmp/bunny.pcd --descriptor $d --method $m $nb --normals-k 12 > /tmp/san.log 2>&1
          rc=$?
          cat /tmp/san.log >> "$out/sanitize.log"
          echo "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san.log | tr '\n' ' ' | cut -c1-120)"
        done
      done
      printf '%-10s %-5s %-15s %-10s ' "$m" "$d" "hard k=5" memcheck
      "$cs" --tool memcheck --error-exitcode 9 "$bin/cumulus-cli" features /tmp/hard.xyz --descriptor $d --method $m --k 5 > /tmp/san.log 2>&1
      echo "rc=$? $(grep -E 'ERROR SUMMARY' /tmp/san.log | tr '\n' ' ')"
    done
  done
fi

if [ "$what" = filters ]; then
  # Filters and the ground plane: their tests, every kernel under the sanitizers (a KITTI
  # frame, and a small cloud with NaNs, duplicates and a far point), then the benchmarks.
  for t in test_filter test_outliers test_ground test_range_ground test_objects test_odometry test_open3d; do
    "$bin/$t" 2>&1 | tee -a "$out/tests.log" | grep -E "FAIL|Totals|Loc" | head -40
  done
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  { printf 'x y z\n'; for k in $(seq 0 99); do echo "0.$k 0.$((k % 7)) 0.0$((k % 5))"; echo "0.$k 0.$((k % 7)) 0.0$((k % 5))"; done; echo "900 0 0"; echo "nan 0 0"; echo "3 inf 1"; } > /tmp/hard.xyz
  for input in "$CUMULUS_DATA/kitti/000000.bin" /tmp/hard.xyz; do
    for f in "--crop -20,-20,-3,20,20,3" "--voxel 0.2" "--voxel 0.2 --min-points 3" "--sor 50,1" "--sor 8,-0.5 --keep-outliers" "--ror 0.5,2" "--ror 1,20 --keep-outliers"; do
      for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
        printf '%-8s %-30s %-10s ' "$(basename $input)" "$f" "$tool"
        "$cs" --tool $tool --error-exitcode 9 "$bin/cumulus-cli" filter "$input" $f --method gpu > /tmp/san.log 2>&1
        rc=$?
        cat /tmp/san.log >> "$out/sanitize.log"
        echo "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|points,' /tmp/san.log | tr '\n' ' ' | cut -c1-120)"
      done
    done
  done
  for input in "$CUMULUS_DATA/kitti/000000.bin" /tmp/hard.xyz; do
    for g in "--threshold 0.2" "--threshold 0.05 --axis 0,0,1 --iterations 3000" "--algorithm range-rdp" "--algorithm range-rdp --rows 16 --columns 100"; do
      for tool in ${TOOLS:-memcheck racecheck synccheck initcheck}; do
        printf '%-8s %-30s %-10s ' "$(basename $input)" "ground $g" "$tool"
        "$cs" --tool $tool --error-exitcode 9 "$bin/cumulus-cli" ground "$input" $g --method gpu > /tmp/san.log 2>&1
        rc=$?
        cat /tmp/san.log >> "$out/sanitize.log"
        echo "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|ground:|error' /tmp/san.log | tr '\n' ' ' | cut -c1-120)"
      done
    done
  done
  [ -n "${NO_FILTER_BENCH:-}" ] || "$bin/cumulus-cli" bench filter --data "$CUMULUS_DATA" --sample "$root/sample_data" --out "$out/bench" --repeat ${REPEAT:-20} 2>&1 | tee "$out/bench-filter.log"
  "$bin/cumulus-cli" bench ground --data "$CUMULUS_DATA" --sample "$root/sample_data" --out "$out/bench" --repeat ${REPEAT:-20} 2>&1 | tee "$out/bench-ground.log"
fi

if [ "$what" = features-bench ]; then
  "$bin/cumulus-cli" bench features --data "$CUMULUS_DATA" --out "$out/bench" --repeat ${REPEAT:-10} 2>&1 | tee "$out/bench-features.log"
fi

if [ "$what" = icp ]; then
  # Neighbour search and ICP only: their tests, then every kernel under the sanitizers.
  for t in test_nns test_icp; do
    "$bin/$t" 2>&1 | tee -a "$out/tests.log" | grep -E "FAIL|Totals|Loc" | head -40
  done
  cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  P=$CUMULUS_DATA/cupcl/test_P.pcd Q=$CUMULUS_DATA/cupcl/test_Q.pcd
  for metric in point-to-point point-to-plane; do
  for m in gpu gpu-kdtree gpu-bruteforce; do
    for tool in memcheck racecheck synccheck initcheck; do
      printf '%-16s %-10s ' "icp:$m:${metric#point-to-}" "$tool"
      "$cs" --tool $tool --error-exitcode 9 "$bin/cumulus-cli" register "$P" "$Q" --method $m --max-distance 0.5 \
        --max-iterations 10 --metric $metric > /tmp/san.log 2>&1
      rc=$?
      cat /tmp/san.log >> "$out/sanitize.log"
      echo "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|iterations, stopped' /tmp/san.log | tr '\n' ' ' | cut -c1-150)"
    done
  done
  done
  for c in "nans k=8" "duplicates k=100" "far-queries k=1" "utm k=8" "empty-target k=1"; do
    for tool in memcheck racecheck initcheck; do
      printf '%-22s %-10s ' "knn:$c" "$tool"
      "$cs" --tool $tool --error-exitcode 9 "$bin/test_nns" "gpu_knn_equals_flann:$c" > /tmp/san.log 2>&1
      rc=$?
      cat /tmp/san.log >> "$out/sanitize.log"
      echo "rc=$rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|Totals' /tmp/san.log | tr '\n' ' ' | cut -c1-150)"
    done
  done
  for c in nans far-queries; do
    printf '%-22s %-10s ' "radius:$c" memcheck
    "$cs" --tool memcheck --error-exitcode 9 "$bin/test_nns" "gpu_radius_equals_flann:$c" > /tmp/san.log 2>&1
    echo "rc=$? $(grep -E 'ERROR SUMMARY|Totals' /tmp/san.log | tr '\n' ' ' | cut -c1-150)"
  done
fi

if [ "$what" = icp-bench ]; then
  "$bin/cumulus-cli" bench icp --out "$out/bench" --data "$CUMULUS_DATA" ${BENCH_ARGS:-} 2>&1 |
    tee "$out/bench.log" | tail -60
fi

if [ "$what" = bench ] || [ "$what" = all ]; then
  "$bin/cumulus-cli" bench cluster --out "$out/bench" --data "$CUMULUS_DATA" --sample "$root/sample_data" \
    ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log" | tail -80
fi
