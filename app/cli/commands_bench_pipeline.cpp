// cumulus-cli bench pipeline: a raw scan to objects (voxel grid 0.1 m, level ground plane,
// clustering 0.5 m, boxes) with every stage PCL's (PCL's tutorial chain) and with every stage
// the GPU's, in one process: the whole chain's time and each stage's; and the same chain with
// the range image's ground, CPU against GPU.
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "args.h"
#include "bench.h"
#include "core/device.h"
#include "core/error.h"
#include "io/io.h"
#include "objects/pipeline.h"
#include "objects/pipeline_compare.h"
#include "peers/open3d_peer.h"

namespace cumulus::cli {

int run_bench_pipeline(const Args& a, std::ostream& out, const std::string& command_line) {
  namespace fs = std::filesystem;
  const bool gpu = query_device().available;
  const std::string data = a.get("data", ""), sample = a.get("sample", "");
  const int repeat = int(a.get_int("repeat", 20)), warmup = int(a.get_int("warmup", 2));
  std::vector<std::pair<std::string, PointCloud>> cases;
  const auto add = [&](const std::string& path, const std::string& label) {
    if (!path.empty() && fs::exists(path)) cases.emplace_back(label, load_cloud(path));
  };
  if (!data.empty())
    for (const char* f : {"kitti/000000.bin", "kitti/000001.bin", "cupcl/sample.pcd"})
      add(data + "/" + f, f);
  if (!sample.empty()) add(sample + "/street_scene.pcd", "street_scene.pcd");
  if (cases.empty()) throw UsageError("bench pipeline needs --data DIR or --sample DIR");
  PipelineParams range_chain = lidar_chain();
  range_chain.ground.reset();
  range_chain.range_ground = RangeGroundParams{};
  const std::pair<const char*, PipelineParams> chains[] = {{"chain", lidar_chain()},
                                                           {"range-ground", range_chain}};
  const std::string dir = a.get("out", "bench-pipeline");
  fs::create_directories(dir);
  std::vector<BenchRow> rows;
  const bool open3d = open3d_peer::available() && !a.flag("no-open3d");
  for (const auto& [chain, p] : chains)
    for (const auto& [label, cloud] : cases) {
      const bool plane = p.ground.has_value();
      PipelineResult ref;
      for (const char* method : {"cpu", "gpu-stages", "gpu"}) {
        if (std::string(method) != "cpu" && !gpu) continue;
        const int reps = std::string(method) == "cpu" ? std::max(1, repeat / 4) : repeat;
        BenchRow row{chain, label, 0.1, cloud.size(), 0.5, method};
        PipelineResult last =
            timed_runs(warmup, reps, row, [&] { return run_pipeline(cloud, p, method); });
        row.clusters = last.objects.size();
        for (const auto& s : last.stages)
          row.stages.emplace_back(s.name, s.ms);
        if (std::string(method) == "cpu")
          row.agreement =
              plane ? "reference (PCL's tutorial chain)" : "reference (PCL's stages, our ground)";
        else
          row.agreement = compare_pipelines(ref, last).summary;
        if (std::string(method) == "cpu") ref = std::move(last);
        out << std::left << std::setw(20) << chain << std::setw(24) << label << ' ' << std::setw(5)
            << method << std::right << std::fixed << std::setprecision(4) << std::setw(10)
            << row.median_ms << " ms  " << row.agreement << '\n'
            << std::flush;
        rows.push_back(std::move(row));
      }
      if (!open3d || !plane) continue;
      // Open3D's calls for the same chain (no range-image ground in Open3D).
      BenchRow row{chain, label, 0.1, cloud.size(), 0.5, "open3d"};
      try {
        const PipelineResult last = timed_runs(0, std::max(1, repeat / 4), row,
                                               [&] { return open3d_peer::chain(cloud, p); });
        row.clusters = last.objects.size();
        for (const auto& s : last.stages)
          row.stages.emplace_back(s.name, s.ms);
        std::ostringstream agree;
        agree << last.objects.size() << " objects, PCL " << ref.objects.size() << "; ground "
              << std::setprecision(2) << plane_angle_deg(*last.ground_plane, *ref.ground_plane)
              << " deg from PCL's; " << last.filtered.size() << " voxels, PCL "
              << ref.filtered.size();
        row.agreement = agree.str();
      } catch (const std::exception& e) {
        row.agreement = std::string("error: ") + e.what();
      }
      out << std::left << std::setw(20) << chain << std::setw(24) << label << " open3d"
          << std::right << std::fixed << std::setprecision(4) << std::setw(9) << row.median_ms
          << " ms  " << row.agreement << '\n'
          << std::flush;
      rows.push_back(std::move(row));
    }
  return write_bench_report(
      rows, dir, "pipeline", "Pipeline: a raw scan to objects",
      "Voxel grid 0.1 m, ground plane (RANSAC, level, 0.2 m) removed, Euclidean clustering "
      "0.5 m (10 to 100,000 points), boxes. `cpu`: every stage PCL's class; `gpu-stages`: every "
      "stage ours, each its own call (uploading its input and downloading its output); `gpu`: "
      "the same kernels with the points kept on the device from stage to stage (one upload; the "
      "voxels, the ground's and the rest's indices and the labels come back; the range-image "
      "chain goes stage by stage). Wall time from host points to boxes; the clusters column "
      "holds the objects. "
      "Agreement, stage by stage: the same points out of every filter (voxel centroids within "
      "1 mm), the RANSAC plane within 0.5 degree and 1 cm of PCL's with at least its inliers, "
      "the range image's ground the same points, the same clusters where both clustered the "
      "same points. "
      "`range-ground`: the same chain with the range image's ground (64 x 2048, 0.2 m) instead "
      "of the plane; its `cpu` keeps PCL's filters and clustering. `open3d` (when this build has "
      "it): the chain in Open3D's calls (VoxelDownSample, SegmentPlane with no axis "
      "constraint, SelectByIndex, ClusterDBSCAN with min_points 1, an axis-aligned box per "
      "cluster).\n",
      command_line, out);
}

}  // namespace cumulus::cli
