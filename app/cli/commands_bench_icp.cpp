// cumulus-cli bench icp: ICP on the bunny at the paper's sizes, the LiDAR pair and KITTI frames,
// plus k-nearest-neighbour query throughput of every search method.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include <Eigen/Geometry>

#include "args.h"
#include "bench.h"
#include "core/device.h"
#include "core/error.h"
#include "features/features.h"
#include "io/io.h"
#include "io/scan_poses.h"
#include "nns/nns.h"
#include "peers/open3d_peer.h"
#include "registration/icp.h"

namespace cumulus::cli {

namespace {

struct IcpCase {
  std::string sweep, label;
  double x;
  std::vector<Point3f> source, target;
  IcpParams params;
  std::optional<Eigen::Matrix4d> truth;
  std::vector<Point3f> target_normals;  // point to plane: PCL's, given to every method
  const std::vector<Point3f>* normals() const {
    return target_normals.empty() ? nullptr : &target_normals;
  }
};

// m of the finite points spread evenly over the cloud (every n/m-th), so subsets keep the
// whole surface. (The raw bunny scans are organized range grids, mostly NaN.)
std::vector<Point3f> subsample(const std::vector<Point3f>& all, std::size_t m) {
  std::vector<Point3f> pts;
  for (const auto& p : all)
    if (std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z)) pts.push_back(p);
  if (m >= pts.size()) return pts;
  std::vector<Point3f> out(m);
  for (std::size_t j = 0; j < m; ++j)
    out[j] = pts[j * pts.size() / m];
  return out;
}

namespace fs = std::filesystem;

// The label of the largest bunny case: the one that point to plane, GICP and k-NN also run on.
std::string largest_bunny(const std::vector<std::size_t>& sizes) {
  return "bunny " + std::to_string(*std::max_element(sizes.begin(), sizes.end()));
}

// The case again under another metric, in its own sweep, with its target's finite points only.
IcpCase with_metric(const IcpCase& base, const std::string& sweep, IcpMetric metric) {
  IcpCase c = base;
  c.sweep = sweep;
  c.label += " " + sweep;
  c.params.metric = metric;
  std::erase_if(c.target, [](const Point3f& p) { return !is_finite(p); });
  return c;
}

// The bunny's sizes from --bunny-sizes N,N,...; the paper's four (Table 2) without it, the
// largest of them the whole of bun000.
std::vector<std::size_t> bunny_sizes(const Args& a) {
  if (!a.has("bunny-sizes")) return {10503, 20417, 30331, 40256};
  std::vector<std::size_t> sizes;
  const std::string list = a.get("bunny-sizes");
  std::istringstream ss(list);
  for (std::string w; std::getline(ss, w, ',');) {
    const long long n = parse_int("--bunny-sizes", w);
    if (n < 3 || n > 100000000)
      throw UsageError("--bunny-sizes takes sizes of 3 to 100000000 points, not " + w);
    sizes.push_back(std::size_t(n));
  }
  // getline yields no empty last field, so "400," would pass as "400".
  if (sizes.empty() || list.back() == ',')
    throw UsageError("--bunny-sizes takes sizes separated by commas, not '" + list + "'");
  return sizes;
}

std::vector<IcpCase> icp_cases(const std::string& data, const std::vector<std::size_t>& sizes) {
  std::vector<IcpCase> cases;
  if (data.empty()) return cases;
  const fs::path d(data);
  if (fs::exists(d / "bunny/bun000.ply") && fs::exists(d / "bunny/bun045.ply")) {
    const auto target = load_cloud((d / "bunny/bun000.ply").string()).points;
    const auto source = load_cloud((d / "bunny/bun045.ply").string()).points;
    const auto truth =
        relative_scan_pose((d / "bunny/bun.conf").string(), "bun045.ply", "bun000.ply");
    const std::size_t source_finite = subsample(source, source.size()).size(),
                      target_finite = subsample(target, target.size()).size();
    for (std::size_t size : sizes) {
      IcpCase c{"bunny",
                "bunny " + std::to_string(size),
                double(size),
                subsample(source, size * source_finite / target_finite),
                subsample(target, size),
                IcpParams{},
                truth};
      c.params.max_correspondence_distance = 0.01;
      // Start 5 degrees and 1 cm off the true pose, as after a coarse alignment.
      if (truth) c.params.initial = rigid_transform(3, -4, 2, 0.006, -0.005, 0.004) * *truth;
      cases.push_back(std::move(c));
    }
  }
  // relative.txt moves 251371071 onto 251370668 (checked: ICP from the identity moves that scan
  // the same way, and starting from relative.txt lowers the first iteration's error 4x).
  const fs::path a = d / "lidar-pair/251371071.pcd", b = d / "lidar-pair/251370668.pcd";
  if (fs::exists(a) && fs::exists(b)) {
    IcpCase c{
        "lidar",     "lidar-pair", 0, load_cloud(a.string()).points, load_cloud(b.string()).points,
        IcpParams{}, std::nullopt};
    c.x = double(c.source.size());
    c.params.max_correspondence_distance = 1.0;
    if (fs::exists(d / "lidar-pair/relative.txt"))
      c.truth = read_matrix_file((d / "lidar-pair/relative.txt").string());
    cases.push_back(std::move(c));
  }
  const fs::path k0 = d / "kitti/000000.bin", k1 = d / "kitti/000001.bin";
  if (fs::exists(k0) && fs::exists(k1)) {
    IcpCase c{"lidar",
              "kitti 1->0",
              0,
              load_cloud(k1.string()).points,
              load_cloud(k0.string()).points,
              IcpParams{},
              std::nullopt};
    c.x = double(c.source.size());
    c.params.max_correspondence_distance = 1.0;
    cases.push_back(std::move(c));
  }
  // Point to plane on the largest bunny and the LiDAR frames, every method from the same
  // normals (PCL's NormalEstimation, 20 neighbours, computed once and not timed); then GICP on
  // the same clouds, PCL's defaults beside our correspondence distance.
  std::vector<IcpCase> plane, gicp;
  const std::string largest = largest_bunny(sizes);
  for (const IcpCase& base : cases) {
    if (base.sweep == "bunny" && base.label != largest) continue;
    IcpCase c = with_metric(base, "plane", IcpMetric::PointToPlane);
    PointCloud t;
    t.points = c.target;
    t.width = std::uint32_t(t.points.size());
    NormalParams np;
    np.neighbourhood = Neighbourhood::nearest(20);
    c.target_normals = estimate_normals(t, np, FeatureMethod::Cpu).normals;
    plane.push_back(std::move(c));
    gicp.push_back(with_metric(base, "gicp", IcpMetric::Gicp));
  }
  for (auto* more : {&plane, &gicp})
    for (auto& c : *more)
      cases.push_back(std::move(c));
  return cases;
}

// The bar for "the same result as PCL".
std::string compare_icp(const IcpResult& ref, const IcpResult& r) {
  const double dt = (r.transform - ref.transform).cwiseAbs().maxCoeff();
  const double df = std::abs(r.fitness - ref.fitness) / std::max(std::abs(ref.fitness), 1e-300);
  if (r.iterations == ref.iterations && r.stop == ref.stop && dt <= 1e-5 && df <= 1e-6)
    return "identical";
  std::ostringstream s;
  s << "DIFFERENT: iterations " << r.iterations << " vs " << ref.iterations << ", stop "
    << stop_name(r.stop) << " vs " << stop_name(ref.stop) << ", transform max diff " << dt
    << ", fitness rel diff " << df;
  return s.str();
}

std::string truth_error(const IcpResult& r, const std::optional<Eigen::Matrix4d>& truth) {
  if (!truth) return "–";
  const Eigen::Matrix4d e = truth->inverse() * r.transform;
  std::ostringstream s;
  s << std::setprecision(3) << rotation_angle_deg(e) << " deg, " << translation_norm(e) * 1000
    << " mm";
  return s.str();
}

// Open3D's RegistrationICP on the case (its own stopping rule), against PCL's transform.
BenchRow measure_open3d(const IcpCase& c, const IcpResult* ref, int reps, std::ostream& table3) {
  BenchRow row{c.sweep, c.label, c.x, c.source.size(), c.params.max_correspondence_distance,
               "open3d"};
  try {
    PointCloud source, target;
    source.points = c.source;
    target.points = c.target;
    source.width = std::uint32_t(source.size());
    target.width = std::uint32_t(target.size());
    std::vector<double> t;
    IcpResult last;
    for (int i = 0; i < std::max(1, reps); ++i) {
      last = open3d_peer::icp(source, target, c.normals(), c.params);
      t.push_back(last.total_ms);
    }
    set_times(row, t);
    std::ostringstream s;
    if (ref) {
      const Eigen::Matrix4d e = ref->transform.inverse() * last.transform;
      s << "from PCL's transform: " << std::setprecision(3) << rotation_angle_deg(e) << " deg, "
        << translation_norm(e) * 1000 << " mm";
    }
    row.agreement = s.str();
    table3 << "| " << c.label << " | " << c.source.size() << " | open3d | (not reported) | "
           << "its criteria | " << std::setprecision(6) << last.fitness << " (inlier RMSE^2) | "
           << truth_error(last, c.truth) << " | " << std::fixed << std::setprecision(3)
           << row.median_ms << " |\n"
           << std::defaultfloat;
  } catch (const std::exception& e) {
    row.agreement = std::string("error: ") + e.what();
  }
  return row;
}

std::string compare_knn(const KnnResult& ref, const KnnResult& r) {
  if (r.sq_distances != ref.sq_distances) {
    std::size_t diff = 0;
    for (std::size_t i = 0; i < r.sq_distances.size(); ++i)
      diff += r.sq_distances[i] != ref.sq_distances[i];
    return "DIFFERENT: " + std::to_string(diff) + " distances differ";
  }
  std::size_t ties = 0;
  for (std::size_t i = 0; i < r.indices.size(); ++i)
    ties += r.indices[i] != ref.indices[i];
  // Equal distances with other indices are ties that FLANN breaks its own way.
  return ties ? "identical (" + std::to_string(ties) + " ties ordered differently)" : "identical";
}

// Open3D measures in double and rounds once, where FLANN sums in float: equal up to that.
std::string compare_knn_rounded(const KnnResult& ref, const KnnResult& r) {
  std::size_t diff = 0;
  double worst = 0;
  for (std::size_t i = 0; i < r.sq_distances.size() && i < ref.sq_distances.size(); ++i) {
    const double a = r.sq_distances[i], b = ref.sq_distances[i];
    const double rel = std::abs(a - b) / std::max(1.0, std::abs(b));
    worst = std::max(worst, rel);
    diff += rel > 4e-6;
  }
  std::ostringstream s;
  s << (diff ? "DIFFERENT: " + std::to_string(diff) + " distances differ beyond float rounding"
             : "the same distances up to float rounding")
    << " (max relative difference " << std::setprecision(2) << worst << ")";
  return s.str();
}

}  // namespace

int run_bench_icp(const Args& a, std::ostream& out, const std::string& command_line) {
  const std::string dir = a.get("out", "bench-icp");
  fs::create_directories(dir);
  const int repeat = int(a.get_int("repeat", 5)), warmup = int(a.get_int("warmup", 1));
  const int pcl_repeat = int(a.get_int("pcl-repeat", 1));
  const bool gpu = query_device().available;
  if (!gpu) out << "no GPU (" << query_device().reason << "): measuring cpu only\n";
  const bool open3d = open3d_peer::available() && !a.flag("no-open3d");
  const int repeat_open3d = pcl_repeat;
  // --methods a,b limits the methods (both ICP and search names); --cases keeps cases whose
  // label contains one of the given words.
  const std::string only = "," + a.get("methods", "") + ",";
  auto wanted = [&](const std::string& m) {
    return only == ",," || only.find("," + m + ",") != std::string::npos;
  };
  const std::vector<std::size_t> sizes = bunny_sizes(a);
  const std::string largest = largest_bunny(sizes);
  auto cases = icp_cases(a.get("data", ""), sizes);
  // The gpu method's search tuning for sweeps (IcpGpuTuning); results must not change with it.
  IcpGpuTuning tuning;
  tuning.lanes = int(a.get_int("icp-lanes", tuning.lanes));
  if (a.has("grid-points-per-cell"))
    tuning.grid_points_per_cell = tuning.grid_within_reach = a.get_float("grid-points-per-cell", 0);
  tuning.fine_points_per_cell = a.get_float("fine-points-per-cell", tuning.fine_points_per_cell);
  for (auto& c : cases)
    c.params.gpu = tuning;
  if (a.has("cases")) {
    std::vector<IcpCase> kept;
    std::istringstream ss(a.get("cases"));
    std::vector<std::string> words;
    for (std::string w; std::getline(ss, w, ',');)
      words.push_back(w);
    for (auto& c : cases)
      for (const auto& w : words)
        if (c.label.find(w) != std::string::npos) {
          kept.push_back(std::move(c));
          break;
        }
    cases = std::move(kept);
  }
  if (cases.empty())
    throw UsageError("bench icp needs --data DIR with bunny/, lidar-pair/ or kitti/ in it");
  std::vector<BenchRow> rows;
  std::ostringstream table3;
  table3 << "\n## Iterations and accuracy (the paper's Table 3)\n\n"
            "| case | points | method | iterations | stop | fitness | error vs ground truth | ms "
            "|\n|---|---:|---|---:|---|---:|---|---:|\n";
  for (const auto& c : cases) {
    IcpResult ref;
    bool have_ref = false;
    for (auto m : all_methods<IcpMethod>()) {
      if (is_gpu_method(m) && !gpu) continue;
      if (!wanted(method_name(m))) continue;
      BenchRow row{
          c.sweep,       c.label, c.x, c.source.size(), c.params.max_correspondence_distance,
          method_name(m)};
      try {
        const int reps = m == IcpMethod::Cpu ? pcl_repeat : repeat;
        for (int i = 0; i < (m == IcpMethod::Cpu ? 0 : warmup); ++i)
          icp(c.source, c.target, c.normals(), c.params, m);
        std::vector<double> t;
        IcpResult last;
        for (int i = 0; i < std::max(1, reps); ++i) {
          last = icp(c.source, c.target, c.normals(), c.params, m);
          t.push_back(last.total_ms);
        }
        set_times(row, t);
        row.clusters = std::size_t(last.iterations);
        row.stages = last.stages;
        if (m == IcpMethod::Cpu) {
          ref = last;
          have_ref = true;
          row.agreement = "reference";
        } else {
          row.agreement = have_ref ? compare_icp(ref, last) : "no reference";
          // Both clouds (and point to plane's normals) up; the transform and the history down.
          // Each iteration's step needs every pair's sums, and the next search that step: one
          // wait for the whole GPU an iteration at least (GICP: and one a cost evaluation).
          const double normals = c.target_normals.empty() ? 0.0 : 12.0 * double(c.target.size());
          set_floor(row, 12.0 * double(c.source.size() + c.target.size()) + normals,
                    8.0 * 16 + 32.0 * double(last.iterations), 1,
                    last.iterations + last.cost_evaluations);
        }
        table3 << "| " << c.label << " | " << c.source.size() << " | " << row.method << " | "
               << last.iterations << " | " << stop_name(last.stop) << " | " << std::setprecision(6)
               << last.fitness << " | " << truth_error(last, c.truth) << " | " << std::fixed
               << std::setprecision(3) << row.median_ms << " |\n"
               << std::defaultfloat;
      } catch (const std::exception& e) {
        row.agreement = std::string("error: ") + e.what();
      }
      rows.push_back(row);
      out << std::left << std::setw(7) << c.sweep << std::setw(14) << c.label << std::setw(16)
          << row.method << std::right << std::fixed << std::setprecision(3) << std::setw(11)
          << row.median_ms << " ms  it " << std::setw(3) << row.clusters << "  "
          << row.agreement.substr(0, 100) << '\n'
          << std::defaultfloat << std::flush;
    }
    // This build's Open3D module has no GICP.
    if (open3d && wanted("open3d") && c.params.metric != IcpMetric::Gicp) {
      rows.push_back(measure_open3d(c, have_ref ? &ref : nullptr, repeat_open3d, table3));
      out << std::left << std::setw(7) << c.sweep << std::setw(14) << c.label << std::setw(16)
          << "open3d" << std::right << std::fixed << std::setprecision(3) << std::setw(11)
          << rows.back().median_ms << " ms  " << rows.back().agreement.substr(0, 100) << '\n'
          << std::defaultfloat << std::flush;
    }
  }
  // k-NN query throughput: every source point of a case as a query against its target.
  std::ostringstream knn_md;
  knn_md << "\n## k-nearest-neighbour queries\n\n| case | queries | k | method | ms | million "
            "queries/s | agreement |\n|---|---:|---:|---|---:|---:|---|\n";
  for (const auto& c : cases) {
    if (c.label != largest && c.label != "kitti 1->0") continue;
    for (int k : {1, 4, 8, 16, 64}) {
      KnnResult ref;
      std::vector<std::string> names;
      for (auto m : all_methods<NnsMethod>())
        if (m == NnsMethod::Cpu || gpu) names.push_back(method_name(m));
      if (open3d) names.insert(names.begin() + 1, "open3d");
      for (const auto& name : names) {
        if (!wanted(name)) continue;
        const bool host = name == "cpu" || name == "open3d";
        BenchRow row{"knn",     c.label + " k=" + std::to_string(k),
                     double(k), c.source.size(),
                     double(k), name};
        try {
          std::vector<double> t;
          KnnResult last;
          const int reps = host ? pcl_repeat : repeat;
          for (int i = 0; i < (host ? 0 : warmup) + std::max(1, reps); ++i) {
            last = name == "open3d"
                       ? open3d_peer::knn(c.target, c.source, k)
                       : knn_search(c.target, c.source, k, *parse_method<NnsMethod>(name));
            if (i >= (host ? 0 : warmup)) t.push_back(last.total_ms);
          }
          set_times(row, t);
          row.stages = last.stages;
          if (name == "cpu") {
            row.agreement = "reference";
            ref = std::move(last);
          } else {
            row.agreement = ref.indices.empty() ? "no reference"
                            : name == "open3d"  ? compare_knn_rounded(ref, last)
                                                : compare_knn(ref, last);
            if (row.agreement.rfind("identical", 0) == 0) row.agreement = "identical";
          }
        } catch (const std::exception& e) {
          row.agreement = std::string("error: ") + e.what();
        }
        rows.push_back(row);
        knn_md << "| " << c.label << " | " << c.source.size() << " | " << k << " | " << row.method
               << " | " << std::fixed << std::setprecision(3) << row.median_ms << " | "
               << std::setprecision(1)
               << (row.median_ms > 0 ? double(c.source.size()) / row.median_ms / 1000.0 : 0)
               << " | " << row.agreement << " |\n"
               << std::defaultfloat;
        out << std::left << std::setw(7) << "knn" << std::setw(22) << row.label << std::setw(16)
            << row.method << std::right << std::fixed << std::setprecision(3) << std::setw(11)
            << row.median_ms << " ms  " << row.agreement.substr(0, 80) << '\n'
            << std::defaultfloat << std::flush;
      }
    }
  }
  const std::string notes =
      "\nFor ICP, identical means what the issue asks of every method: the same number of "
      "iterations and stop reason as PCL, every entry of the final transform within 1e-5 and "
      "the fitness score within 1e-6 relative. In the knn sweep it means the same squared "
      "distances for every query; indices may differ only between targets at exactly equal "
      "distance. Times include the upload of both clouds, building the search structure, every "
      "iteration, the fitness score and the download. `open3d` (when this build has it): "
      "RegistrationICP with Open3D's own criteria (relative fitness and RMSE change below the "
      "fitness epsilon, at most the same iterations; it does not report how many it ran), the "
      "same target normals for point to plane; agreement gives its distance from PCL's "
      "transform. Its k-NN rows: KDTreeFlann::SearchKNN per query (distances in double, "
      "rounded to float).\n" +
      table3.str() + knn_md.str();
  return write_bench_report(rows, dir, "icp", "ICP registration benchmark", notes, command_line,
                            out);
}

}  // namespace cumulus::cli
