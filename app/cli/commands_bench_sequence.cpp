// cumulus-cli bench sequence: LiDAR odometry on generated drives (level and hilly) with ground
// truth, every ICP method's CPU or GPU variant against the local map and against the last
// scan: time a frame and the trajectory's errors, in one process.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "args.h"
#include "bench.h"
#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "sequence/odometry.h"
#include "sequence/trajectory.h"

namespace cumulus::cli {

int run_bench_sequence(const Args& a, std::ostream& out, const std::string& command_line) {
  namespace fs = std::filesystem;
  const bool gpu = query_device().available;
  const int frames = int(a.get_int("frames", 200));
  if (frames < 3 || frames > 10000) throw UsageError("--frames takes 3 to 10000");
  const std::string dir = a.get("out", "bench-sequence");
  fs::create_directories(dir);
  std::vector<BenchRow> rows;
  for (const StreetTerrain terrain : {StreetTerrain::Level, StreetTerrain::Hilly}) {
    StreetDriveParams d;
    d.frames = frames;
    d.scene.terrain = terrain;
    d.speed = std::min(1.0, 120.0 / frames);  // within the street's 180 m of buildings
    const std::string label =
        std::string(terrain == StreetTerrain::Hilly ? "hilly" : "level") + " drive";
    std::vector<PointCloud> scans;
    Trajectory truth;
    for (int k = 0; k < frames; ++k) {
      std::array<double, 16> m{};
      scans.push_back(generate_street_frame(d, k, &m));
      Pose p;
      for (int i = 0; i < 16; ++i)
        p(i / 4, i % 4) = m[std::size_t(i)];
      truth.push_back(p);
    }
    struct Mode {
      OdometryTarget target;
      IcpMetric metric;
      const char* name;
    };
    for (const Mode mode :
         {Mode{OdometryTarget::LocalMap, IcpMetric::PointToPoint, "scan-to-map"},
          Mode{OdometryTarget::LocalMap, IcpMetric::PointToPlane, "scan-to-map-plane"},
          Mode{OdometryTarget::Scan, IcpMetric::PointToPoint, "scan-to-scan"}})
      for (const IcpMethod m : {IcpMethod::Cpu, IcpMethod::Gpu}) {
        if (is_gpu_method(m) && !gpu) continue;
        OdometryParams p;
        p.target = mode.target;
        p.metric = mode.metric;
        Odometry odo(p, m, is_gpu_method(m) ? FilterMethod::Gpu : FilterMethod::Cpu);
        std::vector<double> ms;
        double ground = 0, voxel = 0, icp_ms = 0, map = 0;
        for (const auto& s : scans) {
          const OdometryStep st = odo.add(s);
          ms.push_back(st.total_ms);
          ground += st.ground_ms, voxel += st.filter_ms, icp_ms += st.icp_ms, map += st.map_ms;
        }
        const TrajectoryErrors e = trajectory_errors(odo.poses(), truth);
        BenchRow row{mode.name, label, double(frames), scans.front().size(), 0, method_name(m)};
        std::sort(ms.begin(), ms.end());
        row.median_ms = ms[ms.size() / 2];
        row.min_ms = ms.front();
        row.max_ms = ms.back();
        row.clusters = std::size_t(frames);
        const double n = frames;
        row.stages = {{"ground", ground / n},
                      {"voxel grid", voxel / n},
                      {"icp", icp_ms / n},
                      {"map", map / n}};
        std::ostringstream agree;
        agree << std::fixed << std::setprecision(3) << e.path_length << " m: ATE " << e.ate_rmse
              << " m, RPE " << e.rpe_translation << " m " << e.rpe_rotation_deg << " deg, drift "
              << e.drift_percent << " % " << std::setprecision(4) << e.drift_deg_per_m
              << " deg/m, end " << std::setprecision(3) << e.drift_by_frame.back()
              << " % of the path";
        row.agreement = agree.str();
        out << std::left << std::setw(19) << mode.name << std::setw(13) << label << std::setw(5)
            << row.method << std::right << std::fixed << std::setprecision(3) << std::setw(9)
            << row.median_ms << " ms a frame  " << row.agreement << '\n'
            << std::flush;
        rows.push_back(std::move(row));
      }
  }
  return write_bench_report(
      rows, dir, "sequence", "Sequences: LiDAR odometry",
      "Generated drives (`cumulus-cli generate sequence`: 64 beams, 1 m a frame on average (less "
      "beyond 120 frames, to stay in the street), 30 % faster and slower, weaving 1 m across "
      "the lane, 1 % of returns lost; level, and hilly with a 10 % ramp) with their ground "
      "truth. Each scan: "
      "the range image's ground left out, voxel grid 0.25 m, ICP point to point (pairs to 1 m, "
      "30 iterations) from a constant-velocity prediction, against a local map of the last 10 "
      "scans (voxel 0.5 m) or the last scan; `plane`: point to plane on the map's normals (20 "
      "neighbours, estimated every scan: PCL's for `cpu`, ours for `gpu`). `cpu`: PCL's ICP and "
      "filters; `gpu`: ours. Times: "
      "median wall time a frame (stages: mean a frame); the clusters column holds the frames; "
      "agreement: the trajectory's absolute error (RMSE after alignment), relative error a "
      "frame and KITTI-style drift.\n",
      command_line, out);
}

}  // namespace cumulus::cli
