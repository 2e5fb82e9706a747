// cumulus-cli bench: benchmarks of every algorithm, CSV + Markdown + PNG plots.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include <pcl/pcl_config.h>
#include <QtGlobal>

#include "args.h"
#include "bench.h"
#include "cluster/cluster.h"
#include "commands.h"
#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "peers/open3d_peer.h"
#include "segment/segment.h"

namespace cumulus::cli {

namespace {

namespace fs = std::filesystem;

struct Case {
  std::string sweep, label;
  double x;
  PointCloud cloud;
  float tolerance;
};

std::vector<Case> synthetic_cases(bool quick) {
  std::vector<Case> cases;
  auto add = [&](const std::string& sweep, double x, ClusterCloudParams p) {
    cases.push_back(
        {sweep, std::to_string(std::size_t(x)), x, generate_cluster_cloud(p), p.tolerance});
  };
  const std::size_t big = quick ? 65536 : 262144;
  // Table 2 of the paper.
  for (std::size_t size = 4096; size <= big; size *= 2)
    add("size", double(size), {size, 128, 32, 4, 1.0f, 1});
  for (std::size_t k = 16; k <= (quick ? 1024 : 8192); k *= quick ? 4 : 2)
    add("clusters", double(k), {big, k, 32, 4, 1.0f, 2});
  for (std::size_t d = 1; d <= (quick ? 512 : 2048); d *= quick ? 4 : 2)
    add("degree", double(d), {big, 128, d, 4, 1.0f, 3});
  for (std::size_t D = 1; D <= 1024; D *= quick ? 4 : 2)
    add("distance", double(D), {65536, 1024, 32, D, 1.0f, 4});
  return cases;
}

std::vector<Case> real_cases(const std::string& data_dir, const std::string& sample_dir,
                             float tolerance) {
  std::vector<Case> cases;
  std::vector<std::string> files;
  if (!data_dir.empty())
    for (const char* f :
         {"kitti/000000.bin", "kitti/000001.bin", "kitti/000002.bin", "cupcl/sample.pcd",
          "lidar-pair/251370668.pcd", "lidar-pair/251371071.pcd"})
      if (fs::exists(fs::path(data_dir) / f)) files.push_back((fs::path(data_dir) / f).string());
  if (!sample_dir.empty() && fs::exists(fs::path(sample_dir) / "street_scene.pcd"))
    files.push_back((fs::path(sample_dir) / "street_scene.pcd").string());
  for (const auto& f : files) {
    PointCloud c = load_cloud(f);
    const std::string label =
        fs::path(f).parent_path().filename().string() + "/" + fs::path(f).filename().string();
    // Labels are padded in the log; keep them short enough to stay aligned.
    cases.push_back({"real", label, double(c.size()), std::move(c), tolerance});
  }
  return cases;
}

std::string compare(const ClusterResult& ref, const ClusterResult& r) {
  if (r.labels == ref.labels) return "identical";
  std::size_t diff = 0;
  for (std::size_t i = 0; i < r.labels.size() && i < ref.labels.size(); ++i)
    diff += r.labels[i] != ref.labels[i];
  return "DIFFERENT: " + std::to_string(diff) + " labels differ; clusters " +
         std::to_string(r.sizes.size()) + " vs " + std::to_string(ref.sizes.size());
}

// One row: `run(params)` clusters the case's cloud by the method called `name`.
template <class Run>
BenchRow measure(const Case& c, const std::string& name, int warmup, int repeat,
                 const ClusterResult* reference, ClusterResult* keep, Run&& run) {
  BenchRow row{c.sweep, c.label, c.x, c.cloud.size(), c.tolerance, name};
  ClusterParams p;
  p.tolerance = c.tolerance;
  try {
    for (int i = 0; i < warmup; ++i)
      run(p);
    std::vector<double> totals;
    std::vector<StageTimes> stages;
    ClusterResult last;
    for (int i = 0; i < std::max(repeat, 1); ++i) {
      last = run(p);
      totals.push_back(last.total_ms);
      stages.push_back(last.stages);
    }
    set_times(row, totals);
    row.clusters = last.sizes.size();
    for (std::size_t s = 0; s < last.stages.size(); ++s) {
      std::vector<double> v;
      for (const auto& st : stages)
        if (s < st.size()) v.push_back(st[s].second);
      row.stages.emplace_back(last.stages[s].first, median(v));
    }
    row.agreement = reference ? compare(*reference, last) : "reference";
    if (keep) *keep = std::move(last);
  } catch (const std::exception& e) {
    row.agreement = std::string("error: ") + e.what();
  }
  return row;
}

// A GPU clustering's floor: the points up (12 bytes each), a label each down (4 bytes).
void set_cluster_floor(BenchRow& row) {
  set_floor(row, 12.0 * double(row.points), 4.0 * double(row.points));
}

BenchRow measure(const Case& c, ClusterMethod m, int warmup, int repeat,
                 const ClusterResult* reference, ClusterResult* keep) {
  BenchRow row = measure(c, method_name(m), warmup, repeat, reference, keep,
                         [&](const ClusterParams& p) { return euclidean_cluster(c.cloud, p, m); });
  if (is_gpu_method(m)) set_cluster_floor(row);
  return row;
}

// `gpu` on points in page-locked memory; with `reuse`, into one result call after call (its
// vectors' memory kept, as a sequence's frames are labelled).
BenchRow measure_points(const Case& c, const Point3f* pts, int warmup, int repeat,
                        const ClusterResult* reference, bool reuse) {
  BenchRow row{c.sweep,        c.label,     c.x,
               c.cloud.size(), c.tolerance, reuse ? "gpu[pinned,reused]" : "gpu[pinned]"};
  ClusterParams p;
  p.tolerance = c.tolerance;
  try {
    ClusterResult last;
    const auto call = [&] {
      if (reuse)
        euclidean_cluster(pts, c.cloud.size(), p, ClusterMethod::Gpu, last);
      else
        last = euclidean_cluster(pts, c.cloud.size(), p, ClusterMethod::Gpu);
    };
    for (int i = 0; i < warmup; ++i)
      call();
    std::vector<double> totals;
    for (int i = 0; i < std::max(repeat, 1); ++i) {
      call();
      totals.push_back(last.total_ms);
    }
    set_times(row, totals);
    row.clusters = last.sizes.size();
    row.stages = last.stages;
    row.agreement = reference ? compare(*reference, last) : "reference";
  } catch (const std::exception& e) {
    row.agreement = std::string("error: ") + e.what();
  }
  set_cluster_floor(row);
  return row;
}

int run_bench_cluster(const Args& a, std::ostream& out, const std::string& command_line) {
  const std::string dir = a.get("out", "bench-cluster");
  fs::create_directories(dir);
  const int repeat = int(a.get_int("repeat", 5)), warmup = int(a.get_int("warmup", 1));
  const int pcl_repeat = int(a.get_int("pcl-repeat", 1));
  std::vector<ClusterMethod> methods;
  bool open3d = open3d_peer::available() && !a.flag("no-open3d");
  if (a.has("methods")) {
    std::istringstream ss(a.get("methods"));
    open3d = open3d && a.get("methods").find("open3d") != std::string::npos;
    for (std::string name; std::getline(ss, name, ',');) {
      if (name == "open3d") continue;
      auto m = parse_method<ClusterMethod>(name);
      if (!m) throw UsageError("unknown method '" + name + "'");
      methods.push_back(*m);
    }
  } else {
    methods = all_methods<ClusterMethod>();
  }
  if (!query_device().available) {
    methods.erase(std::remove_if(methods.begin(), methods.end(), is_gpu_method<ClusterMethod>),
                  methods.end());
    out << "no GPU (" << query_device().reason << "): measuring cpu only\n";
  }
  std::vector<Case> cases;
  const std::string sweeps = a.get("sweeps", "size,clusters,degree,distance,real");
  if (sweeps.find("real") != std::string::npos) {
    auto real = real_cases(a.get("data", ""), a.get("sample", ""), a.get_float("tolerance", 0.5));
    for (auto& c : real)
      cases.push_back(std::move(c));
  }
  for (auto& c : synthetic_cases(a.flag("quick")))
    if (sweeps.find(c.sweep) != std::string::npos) cases.push_back(std::move(c));
  if (a.has("max-points")) {
    const auto cap = std::size_t(a.get_int("max-points", 0));
    cases.erase(std::remove_if(cases.begin(), cases.end(),
                               [cap](const Case& c) { return c.cloud.size() > cap; }),
                cases.end());
  }
  std::vector<BenchRow> rows;
  const bool has_cpu =
      std::find(methods.begin(), methods.end(), ClusterMethod::Cpu) != methods.end();
  for (const auto& c : cases) {
    ClusterResult reference;
    const ClusterResult* ref = nullptr;
    if (has_cpu) {
      rows.push_back(measure(c, ClusterMethod::Cpu, 0, pcl_repeat, nullptr, &reference));
      ref = rows.back().agreement == "reference" ? &reference : nullptr;
      out << std::left << std::setw(9) << c.sweep << std::setw(30) << c.label << std::setw(15)
          << "cpu" << std::right << std::fixed << std::setprecision(3) << std::setw(12)
          << rows.back().median_ms << " ms\n"
          << std::flush;
    }
    // Open3D's DBSCAN with min_points 1 is the same partition: its time beside PCL's.
    if (open3d && (c.sweep == "real" || c.cloud.size() <= 65536)) {
      rows.push_back(measure(c, "open3d", 0, pcl_repeat, ref, nullptr, [&](const ClusterParams& p) {
        return open3d_peer::cluster(c.cloud, p);
      }));
      out << std::left << std::setw(9) << c.sweep << std::setw(30) << c.label << std::setw(15)
          << "open3d" << std::right << std::setw(12) << rows.back().median_ms << " ms  "
          << rows.back().agreement.substr(0, 80) << '\n'
          << std::flush;
    }
    // `gpu` once more with the frame already in page-locked memory, as a sensor driver would
    // deliver it: the same computation, only the upload differs.
    if (c.sweep == "real" &&
        std::find(methods.begin(), methods.end(), ClusterMethod::Gpu) != methods.end()) {
      auto pinned = allocate_pinned_points(c.cloud.size());
      std::copy(c.cloud.points.begin(), c.cloud.points.end(), pinned.get());
      for (const bool reuse : {false, true}) {
        rows.push_back(measure_points(c, pinned.get(), warmup, repeat, ref, reuse));
        out << std::left << std::setw(9) << c.sweep << std::setw(30) << c.label << std::setw(15)
            << rows.back().method << std::right << std::setw(12) << rows.back().median_ms << " ms  "
            << rows.back().agreement.substr(0, 80) << '\n';
      }
    }
    for (auto m : methods) {
      if (m == ClusterMethod::Cpu) continue;
      rows.push_back(measure(c, m, warmup, repeat, ref, nullptr));
      const auto& r = rows.back();
      out << std::left << std::setw(9) << c.sweep << std::setw(30) << c.label << std::setw(15)
          << r.method << std::right << std::setw(12) << r.median_ms << " ms  "
          << r.agreement.substr(0, 80) << "  [";
      for (const auto& [name, ms] : r.stages)
        out << ' ' << name << ' ' << std::setprecision(3) << ms;
      out << " ]\n" << std::flush;
    }
  }
  return write_bench_report(rows, dir, "cluster", "Euclidean clustering benchmark", "",
                            command_line, out);
}

// The benchmarks `bench all` runs, in its order; each writes NAME.csv and NAME.md into --out.
constexpr const char* kAllParts[] = {"cluster", "segment", "icp",      "register", "features",
                                     "filter",  "ground",  "pipeline", "sequence"};

// Every algorithm's benchmark into one folder, and report.md with the host description.
int run_bench_all(const Args& a, std::ostream& out, const std::string& command_line) {
  const std::string dir = a.get("out", "bench-all");
  fs::create_directories(dir);
  int rc = run_bench_cluster(a, out, command_line);
  rc = std::max(rc, run_bench_segment(a, out, command_line));
  if (!a.get("data", "").empty()) {
    rc = std::max(rc, run_bench_icp(a, out, command_line));
    rc = std::max(rc, run_bench_register(a, out, command_line));
    rc = std::max(rc, run_bench_features(a, out, command_line));
    rc = std::max(rc, run_bench_filter(a, out, command_line));
    rc = std::max(rc, run_bench_ground(a, out, command_line));
    rc = std::max(rc, run_bench_pipeline(a, out, command_line));
    rc = std::max(rc, run_bench_sequence(a, out, command_line));
  }
  std::stringstream body;
  for (const char* part : kAllParts) {
    std::ifstream f(dir + "/" + part + ".md");
    // A part not run (icp without --data) must not put the stream into a failed state.
    if (f && f.peek() != std::ifstream::traits_type::eof()) body << f.rdbuf() << "\n";
  }
  AtomicOstream report(dir + "/report.md");
  const DeviceInfo d = query_device();
  report
      << "# Cumulus performance report\n\n"
      << "- Machine: " << describe_host() << "\n"
      << "- GPU: " << (d.available ? describe(d) : "none (" + d.reason + ")") << "\n"
      << "- Versions: Cumulus " << CUMULUS_VERSION << ", PCL " << PCL_VERSION_PRETTY << ", "
      << open3d_peer::version() << ", Qt " << qVersion() << ", CUDA runtime "
      << d.runtime_version / 1000 << '.' << (d.runtime_version % 1000) / 10 << "\n"
      << "- Command: `" << command_line << "`\n"
      << "- Method: one warm-up run, then the median, min and max of the repeats; GPU stage "
         "times from CUDA "
         "events, totals as wall time of the whole call with upload and download.\n\n"
      << "Algorithms measured: Euclidean clustering, RDP segmentation, ICP (with k-NN "
         "search), normals with PFH/FPFH, crop box and voxel grid (ICP, features and filters need "
         "--data).\n\n";
  // The clustering report, one heading level down.
  std::string line;
  while (std::getline(body, line))
    report << (line.rfind("#", 0) == 0 ? "#" + line : line) << '\n';
  report.commit();
  out << "wrote " << dir << "/report.md\n";
  return rc;
}

// Two runs of the benchmarks side by side (two `bench all` directories, or two of one
// benchmark): every row timed in both (benchmark, sweep, case, method, sweep value and
// tolerance alike), its two medians and their ratio, and the later run's agreement.
int run_bench_compare(const Args& a, std::ostream& out) {
  if (!a.has("before") || !a.has("after"))
    throw UsageError("bench compare needs --before DIR and --after DIR");
  const fs::path before = a.get("before"), after = a.get("after");
  for (const auto& d : {before, after})
    if (!fs::is_directory(d)) throw IoError(d.string(), "not a directory of benchmark results");
  const auto num = [](double v) { return fixed_text(v, v < 10 ? 4 : 1); };
  using Key = std::tuple<std::string, std::string, std::string, double, double>;
  std::ostringstream md;
  md << "| benchmark | sweep | case | method | before (ms) | after (ms) | speed-up | agreement "
        "(after) |\n|---|---|---|---|---:|---:|---:|---|\n";
  std::size_t both = 0, only_before = 0, only_after = 0, untimed = 0;
  for (const char* part : kAllParts) {
    const fs::path b = before / (std::string(part) + ".csv"),
                   f = after / (std::string(part) + ".csv");
    if (!fs::exists(b) || !fs::exists(f)) continue;
    const auto old_rows = read_bench_csv(b.string());
    std::map<Key, const BenchRow*> earlier;
    for (const auto& r : old_rows)
      earlier[{r.sweep, r.label, r.method, r.x, r.tolerance}] = &r;
    for (const auto& r : read_bench_csv(f.string())) {
      const auto it = earlier.find({r.sweep, r.label, r.method, r.x, r.tolerance});
      if (it == earlier.end()) {
        ++only_after;
        continue;
      }
      const BenchRow& o = *it->second;
      earlier.erase(it);
      if (!(o.median_ms > 0 && r.median_ms > 0)) {  // skipped in either run
        ++untimed;
        continue;
      }
      ++both;
      std::string agreement = r.agreement.substr(0, 60);
      std::replace(agreement.begin(), agreement.end(), '|', '/');
      md << "| " << part << " | " << r.sweep << " | " << r.label << " | " << r.method << " | "
         << num(o.median_ms) << " | " << num(r.median_ms) << " | " << std::setprecision(2)
         << std::fixed << o.median_ms / r.median_ms << "x | " << agreement << " |\n";
    }
    only_before += earlier.size();
  }
  if (both == 0)
    throw Error("bench compare: no row was timed in both " + before.string() + " and " +
                after.string());
  md << "\n"
     << both << " rows timed in both runs; " << untimed << " skipped in one of them; "
     << only_before << " only before; " << only_after << " only after.\n";
  out << md.str();
  if (a.has("out")) {
    AtomicOstream f(a.get("out"));
    f << md.str();
    f.commit();
  }
  return 0;
}

// Clustering beyond one call: a generated cloud of --points points clustered in one piece
// (where one call can take it) and in slabs of each --tile-points size, with the time of each
// and whether its labels equal the first run's.
int run_bench_tiled(const Args& a, std::ostream& out) {
  const auto n = std::size_t(a.get_int("points", 10'000'000));
  if (n < 1000 || n > 1'000'000'000) throw UsageError("--points must be 1000 .. 1000000000");
  std::vector<std::size_t> tiles;
  std::istringstream ss(a.get("tile-points", "4000000,16000000"));
  for (std::string w; std::getline(ss, w, ',');)
    tiles.push_back(std::size_t(parse_int("--tile-points", w)));
  const auto method = parse_method<ClusterMethod>(a.get("methods", "gpu"));
  if (!method) throw UsageError("bench tiled takes one clustering method in --methods");
  ClusterCloudParams cp;
  cp.size = n;
  cp.clusters = std::max<std::size_t>(1, n / 2048);
  cp.degree = 16;
  cp.point_distance = 4;
  WallTimer gen;
  const PointCloud cloud = generate_cluster_cloud(cp);
  out << "generated " << n << " points in " << cp.clusters << " clusters (" << gen.ms() / 1000
      << " s)\n";
  const ClusterParams params{cp.tolerance, 1, std::size_t(1) << 31};
  UnfilledVector<std::int32_t> first;
  auto report = [&](const std::string& how, const ClusterResult& r) {
    const bool same = first.empty() || r.labels == first;
    if (first.empty()) first = r.labels;
    out << std::left << std::setw(28) << how << std::right << std::setw(12) << std::fixed
        << std::setprecision(1) << r.total_ms << " ms  " << r.sizes.size() << " clusters  "
        << (same ? "identical" : "DIFFERENT");
    const char* sep = "  (";
    for (const auto& [stage, ms] : r.stages)
      out << std::exchange(sep, "; ") << stage << " " << ms << " ms";
    out << ")\n";
    return same;
  };
  bool all_same = true;
  if (n <= cluster_call_capacity(*method, n)) {
    all_same &= report("one piece", euclidean_cluster(cloud.points.data(), n, params, *method));
  } else {
    out << "one piece: more than one " << method_name(*method) << " call takes ("
        << cluster_call_capacity(*method, n) << " points)\n";
  }
  // CUDA's start and the first allocations of the workspace and staging buffers are paid once
  // per process; a run before the timed ones keeps them out of the figures.
  if (is_gpu_method(*method) && !tiles.empty())
    euclidean_cluster_tiled(cloud.points.data(), n, params, *method, tiles[0]);
  for (std::size_t t : tiles)
    all_same &= report("slabs of <= " + std::to_string(t),
                       euclidean_cluster_tiled(cloud.points.data(), n, params, *method, t));
  return all_same ? 0 : 1;
}

}  // namespace

int run_bench(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"quick", "no-open3d", "json"},
               {"out",
                "repeat",
                "warmup",
                "pcl-repeat",
                "methods",
                "data",
                "sample",
                "sweeps",
                "tolerance",
                "csv",
                "max-points",
                "batch",
                "cases",
                "pcl-max-pairs",
                "points",
                "tile-points",
                "icp-lanes",
                "grid-points-per-cell",
                "fine-points-per-cell",
                "bunny-sizes",
                "frames",
                "scratch",
                "starts",
                "cpu-starts",
                "pcl-iterations",
                "before",
                "after"});
  a.expect_positionals(
      1, 1,
      "cumulus-cli bench "
      "cluster|segment|icp|register|features|filter|ground|pipeline|sequence|tiled|io|limits|all|"
      "compare|plot "
      "[options]");
  std::string command_line = "cumulus-cli bench";
  for (const auto& s : argv)
    command_line += " " + s;
  const std::string what = a.positionals()[0];
  if (what == "cluster") return run_bench_cluster(a, out, command_line);
  if (what == "all") return run_bench_all(a, out, command_line);
  if (what == "compare") return run_bench_compare(a, out);
  if (what == "segment") return run_bench_segment(a, out, command_line);
  if (what == "icp") return run_bench_icp(a, out, command_line);
  if (what == "register") return run_bench_register(a, out, command_line);
  if (what == "features") return run_bench_features(a, out, command_line);
  if (what == "filter") return run_bench_filter(a, out, command_line);
  if (what == "ground") return run_bench_ground(a, out, command_line);
  if (what == "pipeline") return run_bench_pipeline(a, out, command_line);
  if (what == "sequence") return run_bench_sequence(a, out, command_line);
  if (what == "tiled") return run_bench_tiled(a, out);
  if (what == "io") return run_bench_io(a, out, command_line);
  if (what == "limits") return run_bench_limits(a, out, command_line);
  if (what == "plot") {
    if (!a.has("csv")) throw UsageError("bench plot needs --csv FILE");
    const std::string dir = a.get("out", fs::path(a.get("csv")).parent_path().string());
    std::string why;
    if (!dir.empty()) fs::create_directories(dir);
    const std::string prefix = fs::path(a.get("csv")).stem().string();
    read_bench_csv(a.get("csv"));  // a clear error for a file that is not a benchmark CSV
    const auto pngs = plot_bench(a.get("csv"), dir.empty() ? "." : dir, prefix, &why);
    if (pngs.empty()) throw Error("cannot plot: " + why);
    for (const auto& p : pngs)
      out << "wrote " << p << '\n';
    return 0;
  }
  throw UsageError("bench: unknown benchmark '" + what +
                   "' (cluster, segment, icp, register, features, filter, ground, pipeline, "
                   "sequence, tiled, io, limits, all, compare, plot)");
}

}  // namespace cumulus::cli
