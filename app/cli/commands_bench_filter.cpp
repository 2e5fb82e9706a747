// cumulus-cli bench filter: crop box, voxel grid and the outlier filters on the real scans (and
// the sample street), PCL against the GPU in one process, with the agreement of each run.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>

#include "args.h"
#include "bench.h"
#include "core/device.h"
#include "core/error.h"
#include "filter/filter.h"
#include "io/io.h"
#include "peers/open3d_peer.h"

namespace cumulus::cli {

namespace {

namespace fs = std::filesystem;

struct FilterCase {
  std::string label;
  PointCloud cloud;
};

// The middle half of the finite points' extent in x and y, all of z: a typical region of
// interest around a sensor.
CropBoxParams middle_box(const PointCloud& c) {
  const Bounds b = c.local_bounds();
  CropBoxParams p;
  const float lo[3] = {b.min.x, b.min.y, b.min.z}, hi[3] = {b.max.x, b.max.y, b.max.z};
  for (std::size_t k = 0; k < 3; ++k) {
    const double quarter = k < 2 ? (hi[k] - lo[k]) / 4.0 : 0.0;
    p.min[k] = c.origin[k] + lo[k] + quarter;
    p.max[k] = c.origin[k] + hi[k] - quarter;
  }
  return p;
}

std::string agreement(const FilterResult& r, const FilterResult& ref, bool voxels) {
  if (!voxels) return r.kept == ref.kept ? "identical" : "DIFFERENT";
  if (r.cloud.size() != ref.cloud.size())
    return "DIFFERENT: " + std::to_string(r.cloud.size()) + " voxels, PCL " +
           std::to_string(ref.cloud.size());
  double d = 0;
  for (std::size_t i = 0; i < r.cloud.size(); ++i) {
    const Point3f &a = r.cloud.points[i], &b = ref.cloud.points[i];
    d = std::max(
        {d, std::abs(double(a.x) - b.x), std::abs(double(a.y) - b.y), std::abs(double(a.z) - b.z)});
  }
  std::ostringstream s;
  s << (d < 1e-3 ? "same voxels" : "DIFFERENT centroids") << ", centroids within "
    << std::setprecision(2) << d << " m";
  return s.str();
}

// Open3D's filters are defined differently (its grid's origin, its neighbour counts): say how
// far apart they land rather than only that they differ.
std::string open3d_agreement(const FilterResult& r, const FilterResult& ref, bool voxels) {
  if (voxels)
    return std::to_string(r.cloud.size()) + " voxels (its own grid), PCL " +
           std::to_string(ref.cloud.size());
  if (r.kept == ref.kept) return "identical";
  std::vector<std::int32_t> both;
  std::set_intersection(r.kept.begin(), r.kept.end(), ref.kept.begin(), ref.kept.end(),
                        std::back_inserter(both));
  return "DIFFERENT: kept " + std::to_string(r.kept.size()) + ", PCL " +
         std::to_string(ref.kept.size()) + ", " + std::to_string(both.size()) + " in both";
}

}  // namespace

int run_bench_filter(const Args& a, std::ostream& out, const std::string& command_line) {
  const bool gpu = query_device().available;
  const std::string data = a.get("data", ""), sample = a.get("sample", "");
  const int repeat = int(a.get_int("repeat", 20)), warmup = int(a.get_int("warmup", 2));
  std::vector<FilterCase> cases;
  const auto add = [&](const std::string& path, const std::string& label) {
    if (!path.empty() && fs::exists(path)) cases.push_back({label, load_cloud(path)});
  };
  if (!data.empty())
    for (const char* f : {"kitti/000000.bin", "kitti/000001.bin", "lidar-pair/251370668.pcd",
                          "cupcl/sample.pcd", "pcl/table_scene_mug_stereo_textured.pcd"})
      add(data + "/" + f, f);
  if (!sample.empty()) add(sample + "/street_scene.pcd", "street_scene.pcd");
  if (cases.empty()) throw UsageError("bench filter needs --data DIR or --sample DIR");
  const std::string dir = a.get("out", "bench-filter");
  fs::create_directories(dir);
  std::vector<BenchRow> rows;
  const bool open3d = open3d_peer::available() && !a.flag("no-open3d");
  // One row set per filter: PCL's tutorial parameters for the outlier filters.
  struct Filter {
    const char* sweep;
    double x;  // leaf, mean_k or radius
    bool voxels;
  };
  const Filter filters[] = {{"crop", 0, false},   {"voxel", 0.05, true}, {"voxel", 0.1, true},
                            {"voxel", 0.2, true}, {"sor", 50, false},    {"ror", 0.5, false}};
  const auto run = [](const Filter& f, const PointCloud& cloud, FilterMethod m) {
    const std::string sweep = f.sweep;
    if (sweep == "crop") return crop_box(cloud, middle_box(cloud), m);
    if (sweep == "sor") return remove_statistical_outliers(cloud, {int(f.x), 1.0, false}, m);
    if (sweep == "ror") return remove_radius_outliers(cloud, {f.x, 2, false}, m);
    const auto leaf = float(f.x);
    return voxel_grid(cloud, {{leaf, leaf, leaf}, 0}, m);
  };
  // --sweeps picks filters by name (every one by default), so one filter can be measured alone.
  std::set<std::string> sweeps;
  {
    std::istringstream ss(a.get("sweeps", "crop,voxel,sor,ror"));
    for (std::string name; std::getline(ss, name, ',');) {
      if (name != "crop" && name != "voxel" && name != "sor" && name != "ror")
        throw UsageError("bench filter: unknown sweep '" + name + "' (crop, voxel, sor, ror)");
      sweeps.insert(name);
    }
    if (sweeps.empty()) throw UsageError("bench filter: --sweeps names no filter");
  }
  for (const auto& c : cases) {
    for (const Filter& f : filters) {
      if (!sweeps.count(f.sweep)) continue;
      FilterResult ref;
      if (f.voxels) {
        try {
          validate(VoxelGridParams{{float(f.x), float(f.x), float(f.x)}, 0}, c.cloud);
        } catch (const InvalidArgument& e) {
          out << "voxel  " << c.label << " leaf " << f.x << ": refused (" << e.what() << ")\n";
          continue;
        }
      }
      for (const FilterMethod m : all_methods<FilterMethod>()) {
        if (is_gpu_method(m) && !gpu) continue;
        const int reps = m == FilterMethod::Cpu ? std::max(1, repeat / 4) : repeat;
        BenchRow row{f.sweep, c.label, f.x, c.cloud.size(), f.x, method_name(m)};
        FilterResult last = timed_runs(warmup, reps, row, [&] { return run(f, c.cloud, m); });
        row.clusters = last.cloud.size();
        row.stages = last.stages;
        row.agreement = m == FilterMethod::Cpu ? "reference" : agreement(last, ref, f.voxels);
        if (m == FilterMethod::Cpu) ref = std::move(last);
        out << std::left << std::setw(7) << row.sweep << std::setw(42) << c.label << std::setw(6)
            << f.x << ' ' << std::setw(5) << row.method << std::right << std::fixed
            << std::setprecision(4) << std::setw(10) << row.median_ms << " ms  " << row.agreement
            << '\n'
            << std::flush;
        rows.push_back(std::move(row));
      }
      if (!open3d || std::string(f.sweep) == "crop") continue;
      if (std::string(f.sweep) == "ror" && c.label.rfind("pcl/", 0) == 0) {
        // Open3D gathers every neighbour within the radius (PCL stops at min_neighbors + 1):
        // 0.5 m around each point of a 30 cm table is most of the scene, minutes a run.
        out << "ror    " << c.label << ": open3d left out (it lists every neighbour within 0.5 m "
            << "of each point of a table top)\n";
        continue;
      }
      BenchRow row{f.sweep, c.label, f.x, c.cloud.size(), f.x, "open3d"};
      try {
        FilterResult last = timed_runs(0, std::max(1, repeat / 4), row, [&] {
          const std::string sweep = f.sweep;
          if (sweep == "sor")
            return open3d_peer::remove_statistical_outliers(c.cloud, {int(f.x), 1.0, false});
          if (sweep == "ror") return open3d_peer::remove_radius_outliers(c.cloud, {f.x, 2, false});
          const auto leaf = float(f.x);
          return open3d_peer::voxel_grid(c.cloud, {{leaf, leaf, leaf}, 0});
        });
        row.clusters = last.cloud.size();
        row.agreement = open3d_agreement(last, ref, f.voxels);
      } catch (const std::exception& e) {
        row.agreement = std::string("error: ") + e.what();
      }
      out << std::left << std::setw(7) << row.sweep << std::setw(42) << c.label << std::setw(6)
          << f.x << " open3d" << std::right << std::setw(9) << row.median_ms << " ms  "
          << row.agreement << '\n'
          << std::flush;
      rows.push_back(std::move(row));
    }
  }
  return write_bench_report(
      rows, dir, "filter", "Filters: crop box, voxel grid, outlier removal",
      "Crop box: the middle half of each cloud's x and y extent. Voxel grid: cubic leaves of "
      "0.05, 0.1 and 0.2 m (the x column). Statistical outliers: 50 neighbours, 1 standard "
      "deviation; radius outliers: 0.5 m, 2 neighbours (PCL's tutorial values). `cpu` is PCL's "
      "CropBox, VoxelGrid, StatisticalOutlierRemoval and RadiusOutlierRemoval; times are wall "
      "times of the whole call, upload, download and gathering the kept points' fields "
      "included. The clusters column holds the points kept. `open3d` (when this build has it): "
      "VoxelDownSample (its grid starts half a leaf below the cloud's corner, so its voxels are "
      "not PCL's), RemoveStatisticalOutliers and RemoveRadiusOutliers (3 points counting the "
      "point itself) on the same clouds; Open3D's crop needs a box object and is left out.\n",
      command_line, out);
}

}  // namespace cumulus::cli
