#!/usr/bin/env bash
# Prepares .gpu/ (git-ignored) for scripts/gpu-check.sh on a GPU machine that has the NVIDIA
# driver and CUDA but none of our Debian libraries: a headless build with its tests, the
# shared libraries it loads (except the C/C++ runtime, which the host has), packed with xz to
# stay small, and a copy of the real data.
#   scripts/gpu-pack.sh [DATA_DIR]     (default ../shared/data)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$root/../shared/data}
cd "$root"
cmake -S . -B build-headless -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUMULUS_HEADLESS=ON -DCUMULUS_BUILD_TESTS=ON
cmake --build build-headless -j "$(nproc)"
rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .gpu/data
cp build-headless/app/cli/cumulus-cli build-headless/tests/test_{cluster,segment,io,device,data,nns,icp,gicp,global,features,tiles,filter,outliers,ground,range_ground,objects,odometry,open3d,cli} .gpu/bin/
# The Open3D module beside the programs, where the peer looks for it (when this build has it).
module=$(find build-headless/gpu/peers -name libcumulus_open3d.so | head -1)
[ -n "$module" ] && cp "$module" .gpu/bin/
strip .gpu/bin/*
for b in .gpu/bin/*; do ldd "$b" | awk '/=>/ {print $3}'; done | sort -u |
  grep -vE 'lib(c|m|stdc\+\+|gcc_s|pthread|dl|rt)\.so|ld-linux' | xargs -r -I{} cp -L {} .gpu/lib/
# The libraries travel on their own (.gpu-lib/): with Open3D's they pass 60 MB, and the device
# tool carries at most 64 MiB a call, the working tree included. So they go in 30 MB parts: carry
# .gpu-lib/part00, .gpu-lib/part01, ... one call each with `scripts/gpu-check.sh libs`, which
# unpacks them into /opt/deps once the last has come; then carry .gpu for the runs.
rm -rf .gpu-lib && mkdir -p .gpu-lib
tar -C .gpu -cf - lib | xz -T0 -6 | split -b 30M -d - .gpu-lib/part
n=$(ls .gpu-lib | grep -c '^part'); echo "$n" > .gpu-lib/count
# The binaries travel packed too: the device tool carries at most 64 MiB.
tar -C .gpu -cf - bin | xz -T0 -6 > .gpu/bin.tar.xz
rm -rf .gpu/lib .gpu/bin
for d in kitti cupcl lidar-pair depth; do [ -d "$data/$d" ] && cp -r "$data/$d" .gpu/data/; done
mkdir -p .gpu/data/bunny
mkdir -p .gpu/data/pcl
[ -f "$data/pcl/table_scene_mug_stereo_textured.pcd" ] && cp "$data/pcl/table_scene_mug_stereo_textured.pcd" .gpu/data/pcl/
for f in bun.conf bun000.ply bun045.ply bun_zipper.ply; do [ -f "$data/bunny/$f" ] && cp "$data/bunny/$f" .gpu/data/bunny/; done
du -sh .gpu .gpu-lib
