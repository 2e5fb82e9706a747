// cumulus-cli bench sequence: clustering and odometry through `cumulus-cli sequence` from
// frames on disk (frames/s, read and stage times), and LiDAR odometry on generated drives
// (level and hilly) with ground truth, every ICP method's CPU or GPU variant against the local
// map and against the last scan: time a frame and the trajectory's errors, in one process.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include <unistd.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <fstream>

#include "args.h"
#include "bench.h"
#include "commands.h"
#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "io/io.h"
#include "sequence/odometry.h"
#include "sequence/trajectory.h"

namespace cumulus::cli {

namespace {

// `cumulus-cli sequence` itself on frames written to disk (reader threads, CUDA started once, a
// line of JSON per frame): a row with its frames/s, and the read, compute and stage times a
// frame (medians over the frames).
BenchRow from_disk(const std::string& frames, const std::string& task, const char* method,
                   std::size_t count, std::size_t points) {
  std::ostringstream log;
  std::vector<std::string> args{frames, "--task", task, "--method", method, "--json"};
  if (task == "objects") args.insert(args.end(), {"--voxel", "0.1"});  // the LiDAR chain
  const int rc = run_sequence(args, log);
  BenchRow row{"from disk", "level drive: " + task, double(count), points, 0, method};
  std::vector<std::pair<std::string, std::vector<double>>> stages;  // in the order they ran
  const auto stage = [&](const std::string& name) -> std::vector<double>& {
    for (auto& [n, v] : stages)
      if (n == name) return v;
    return stages.emplace_back(name, std::vector<double>{}).second;
  };
  std::vector<double> read, compute;
  std::istringstream lines(log.str());
  QJsonObject summary;
  for (std::string line; std::getline(lines, line);) {
    const QJsonObject o = QJsonDocument::fromJson(QByteArray::fromStdString(line)).object();
    if (o.contains("summary")) {
      summary = o;
      continue;
    }
    read.push_back(o["read_ms"].toDouble());
    compute.push_back(o["compute_ms"].toDouble());
    const QJsonValue st = o["stages_ms"];
    if (st.isArray()) {
      for (const auto& v : st.toArray()) {
        const QJsonObject e = v.toObject();
        stage(e["stage"].toString().toStdString()).push_back(e["ms"].toDouble());
      }
    } else {
      const QJsonObject so = st.toObject();
      for (auto it = so.begin(); it != so.end(); ++it)
        stage(it.key().toStdString()).push_back(it.value().toDouble());
    }
  }
  const double fps = summary["frames_per_s"].toDouble();
  row.median_ms = row.min_ms = row.max_ms = fps > 0 ? 1000.0 / fps : 0;
  row.clusters = std::size_t(summary["processed"].toDouble());
  row.stages.emplace_back("read (reader threads)", median(read));
  for (const auto& [name, v] : stages)
    row.stages.emplace_back(name, median(v));
  std::ostringstream agree;
  agree << std::fixed << std::setprecision(1) << fps << " frames/s over " << row.clusters
        << " frames (" << (rc == 0 ? "all read and processed" : "SOME FAILED")
        << "); a frame: read " << std::setprecision(3) << median(read) << " ms on 4 reader "
        << "threads, compute " << median(compute) << " ms";
  row.agreement = agree.str();
  return row;
}

}  // namespace

int run_bench_sequence(const Args& a, std::ostream& out, const std::string& command_line) {
  namespace fs = std::filesystem;
  const bool gpu = query_device().available;
  const int frames = int(a.get_int("frames", 200));
  if (frames < 3 || frames > 10000) throw UsageError("--frames takes 3 to 10000");
  const std::string dir = a.get("out", "bench-sequence");
  fs::create_directories(dir);
  std::vector<BenchRow> rows;
  // The level drive from files on disk, as users run sequences: KITTI .bin frames in a scratch
  // folder, read by `cumulus-cli sequence`'s reader threads while the frame before is processed.
  const fs::path scratch = fs::path(a.get("scratch", fs::temp_directory_path().string())) /
                           ("cumulus-bench-sequence-" + std::to_string(::getpid()));
  fs::create_directories(scratch / "velodyne");
  struct RemoveScratch {
    fs::path p;
    ~RemoveScratch() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } remove_scratch{scratch};
  std::size_t frame_points = 0;
  {
    StreetDriveParams d;
    d.frames = frames;
    d.speed = std::min(1.0, 120.0 / frames);
    for (int k = 0; k < frames; ++k) {
      const PointCloud c = generate_street_frame(d, k, nullptr);
      frame_points = c.size();
      char name[32];
      std::snprintf(name, sizeof name, "%06d.bin", k);
      save_kitti_bin((scratch / "velodyne" / name).string(), c);
    }
    // PCL's clustering takes a second or two a frame (its chain to objects a quarter of one):
    // their rows read the first ten.
    std::ofstream list(scratch / "first10.txt");
    for (int k = 0; k < std::min(frames, 10); ++k) {
      char name[32];
      std::snprintf(name, sizeof name, "%06d.bin", k);
      list << (scratch / "velodyne" / name).string() << '\n';
    }
  }
  for (const char* task : {"cluster", "objects", "odometry"})
    for (const char* method : {"cpu", "gpu"}) {
      if (std::string(method) == "gpu" && !gpu) continue;
      const bool few = std::string(task) != "odometry" && std::string(method) == "cpu";
      rows.push_back(
          from_disk((scratch / (few ? "first10.txt" : "velodyne")).string(), task, method,
                    few ? std::size_t(std::min(frames, 10)) : std::size_t(frames), frame_points));
      out << std::left << std::setw(19) << "from disk" << std::setw(24) << rows.back().label
          << std::setw(5) << method << std::right << std::fixed << std::setprecision(3)
          << std::setw(9) << rows.back().median_ms << " ms a frame  " << rows.back().agreement
          << '\n'
          << std::flush;
    }
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
      ScanGround ground;
      const char* name;
    };
    for (const Mode mode :
         {Mode{OdometryTarget::LocalMap, IcpMetric::PointToPoint, ScanGround::Auto, "scan-to-map"},
          Mode{OdometryTarget::LocalMap, IcpMetric::PointToPlane, ScanGround::Auto,
               "scan-to-map-plane"},
          Mode{OdometryTarget::LocalMap, IcpMetric::PointToPlane, ScanGround::Remove,
               "plane-no-ground"},
          Mode{OdometryTarget::Scan, IcpMetric::PointToPoint, ScanGround::Auto, "scan-to-scan"}})
      for (const IcpMethod m : {IcpMethod::Cpu, IcpMethod::Gpu}) {
        if (is_gpu_method(m) && !gpu) continue;
        OdometryParams p;
        p.target = mode.target;
        p.metric = mode.metric;
        p.scan_ground = mode.ground;
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
        set_times(row, ms);
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
      "neighbours, estimated every scan: PCL's for `cpu`, ours for `gpu`) with the ground kept "
      "(the default), `plane-no-ground` the same without it. `cpu`: PCL's ICP and "
      "filters; `gpu`: ours. Times: "
      "median wall time a frame (stages: mean a frame); the clusters column holds the frames; "
      "agreement: the trajectory's absolute error (RMSE after alignment), relative error a "
      "frame and KITTI-style drift. `from disk`: the level drive written as KITTI .bin files "
      "and run through `cumulus-cli sequence --task cluster|objects|odometry --method M` (its "
      "defaults: clustering at 0.5 m; objects: voxel grid 0.1 m, level ground plane, clusters of "
      "10 or more at 0.5 m, boxes; 4 reader threads, 8 frames queued): time a frame is the whole "
      "run's wall time over its frames (1 / frames a "
      "second), stages are medians a frame, `read` on the reader threads (overlapped with the "
      "compute); PCL's clustering and chain read the first 10 frames only.\n",
      command_line, out);
}

}  // namespace cumulus::cli
