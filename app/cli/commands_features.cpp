// cumulus-cli features (normals + PFH/FPFH of a cloud) and bench features.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "args.h"
#include "bench.h"
#include "commands.h"
#include "core/device.h"
#include "core/error.h"
#include "feature_args.h"
#include "features/features.h"
#include "io/io.h"
#include "json.h"
#include "peers/open3d_peer.h"
#include "tiles/tiles.h"

namespace cumulus::cli {

namespace {

namespace fs = std::filesystem;

Neighbourhood neighbourhood_from(const Args& a, const std::string& k, const std::string& r,
                                 std::optional<Neighbourhood> fallback) {
  if (a.has(k) && a.has(r)) throw UsageError("give --" + k + " or --" + r + ", not both");
  if (a.has(k)) return Neighbourhood::nearest(int(a.get_int(k, 0)));
  if (a.has(r)) return Neighbourhood::within(a.get_float(r, 0));
  if (fallback) return *fallback;
  throw UsageError("features: give the neighbourhood as --k K or --radius R");
}

std::array<double, 3> parse_viewpoint(const std::string& v) {
  std::array<double, 3> p{};
  std::istringstream ss(v);
  char c1 = 0, c2 = 0;
  if (!(ss >> p[0] >> c1 >> p[1] >> c2 >> p[2]) || c1 != ',' || c2 != ',')
    throw UsageError("--viewpoint takes x,y,z (got '" + v + "')");
  return p;
}

// Rows (points) with a bin more than 1e-3 away from the reference's, and the largest difference.
std::string agreement(const FeatureResult& ref, const FeatureResult& r) {
  const HistogramDiff d = compare_histograms(ref, r);
  if (!d.rows) return "identical";
  std::ostringstream s;
  s << d.rows << " of " << ref.size() << " points differ (max " << std::setprecision(3) << d.max
    << ")";
  return s.str();
}

struct FeatureCase {
  std::string sweep, label;
  PointCloud cloud;
  FeatureParams params;
  double x;
};

std::vector<FeatureCase> feature_cases(const std::string& data, const std::string& only) {
  std::vector<FeatureCase> cases;
  const fs::path d(data);
  auto add = [&](const std::string& name, const PointCloud& c, Neighbourhood nb) {
    for (Descriptor desc : {Descriptor::Pfh, Descriptor::Fpfh}) {
      FeatureCase fc{name + " " + descriptor_name(desc),
                     name + " " + descriptor_name(desc) + " " + nb.describe(), c, FeatureParams{},
                     nb.k > 0 ? double(nb.k) : double(nb.radius)};
      fc.params.descriptor = desc;
      fc.params.neighbourhood = nb;
      fc.params.normals.neighbourhood = nb;  // one search serves both stages
      if (only.empty() || fc.label.find(only) != std::string::npos) cases.push_back(fc);
    }
  };
  if (fs::exists(d / "bunny/bun_zipper.ply")) {
    const PointCloud bunny = load_cloud((d / "bunny/bun_zipper.ply").string());
    for (int k : {16, 32, 64, 100})
      add("bunny", bunny, Neighbourhood::nearest(k));
    add("bunny", bunny, Neighbourhood::within(0.005f));
  }
  if (fs::exists(d / "kitti/000000.bin")) {
    const PointCloud kitti = load_cloud((d / "kitti/000000.bin").string());
    for (int k : {16, 32, 64})
      add("kitti", kitti, Neighbourhood::nearest(k));
    add("kitti", kitti, Neighbourhood::within(0.5f));
  }
  return cases;
}

// Pairs a PFH run visits: sum over points of n(n-1)/2 (FPFH: n). A radius neighbourhood's size
// is not known before searching; 64 stands in for it.
double pair_count(const FeatureCase& c) {
  const double n = double(c.cloud.size());
  const double k = c.params.neighbourhood.k > 0 ? c.params.neighbourhood.k : 64;
  return c.params.descriptor == Descriptor::Pfh ? n * k * (k - 1) / 2 : n * k;
}

// Under the tables in features.md: what the times and the verdicts mean.
const std::string kBenchNotes =
    "\nEach time is end to end: upload, neighbour search, normals (same neighbourhood as the "
    "descriptor), histograms and download. cpu is PCL (NormalEstimation + PFHEstimation / "
    "FPFHEstimation, one run). gpu[reused]: the gpu method computing into one result "
    "call after call (its vectors' memory kept, as a caller computing frame after frame would). "
    "Agreement: every bin within 1e-3 (percent units) of PCL's; 'end "
    "to end' compares with each method's own normals (gpu estimates them on the device, so "
    "pairs right on a bin edge can move), 'from PCL's normals' gives every method PCL's "
    "normals. open3d (when this build has it): EstimateNormals turned towards the viewpoint, then "
    "ComputeFPFHFeature, one run, the same neighbourhoods (Open3D has no PFH).\n";

}  // namespace

// Open3D's FPFH from its own normals (timed, end to end), and from PCL's normals (untimed) for
// the histograms' agreement alone.
static BenchRow measure_open3d(const FeatureCase& c, const FeatureResult* ref, std::ostream& out) {
  const double plot_x = c.params.neighbourhood.k > 0 ? c.x : 0.0;
  BenchRow row{c.sweep, c.label, plot_x, c.cloud.size(), c.x, "open3d"};
  try {
    const FeatureResult last = open3d_peer::fpfh(c.cloud, c.params);
    row.median_ms = row.min_ms = row.max_ms = last.total_ms;
    row.clusters = last.nan_histograms;
    row.stages = last.stages;
    if (ref) {
      row.agreement = "end to end: " + agreement(*ref, last);
      const FeatureResult same = open3d_peer::fpfh(c.cloud, c.params, &ref->normals);
      row.agreement += "; from PCL's normals: " + agreement(*ref, same) + "; " +
                       std::to_string(open3d_peer::fpfh_rows_pcl_plus_own_spfh(*ref, same)) +
                       " of " + std::to_string(same.size()) +
                       " rows are PCL's plus the point's own SPFH (which PCL leaves out)";
    }
  } catch (const std::exception& e) {
    row.agreement = std::string("error: ") + e.what();
  }
  out << std::left << std::setw(26) << c.label << std::setw(11) << "open3d" << std::right
      << std::fixed << std::setprecision(3) << std::setw(11) << row.median_ms << " ms  "
      << row.agreement.substr(0, 110) << '\n'
      << std::defaultfloat << std::flush;
  return row;
}

int run_bench_features(const Args& a, std::ostream& out, const std::string& command_line) {
  const std::string dir = a.get("out", "bench-features");
  fs::create_directories(dir);
  const int repeat = int(a.get_int("repeat", 5)), warmup = int(a.get_int("warmup", 1));
  // PCL is skipped where it would visit more pairs than this (PFH is O(n k^2)).
  const double pcl_limit = a.get_double("pcl-max-pairs", 2.5e8);
  const bool gpu = query_device().available;
  if (!gpu) out << "no GPU (" << query_device().reason << "): measuring cpu only\n";
  const bool open3d = open3d_peer::available() && !a.flag("no-open3d");
  const std::string only = "," + a.get("methods", "") + ",";
  auto wanted = [&](const std::string& m) {
    return only == ",," || only.find("," + m + ",") != std::string::npos;
  };
  const auto cases = feature_cases(a.get("data", ""), a.get("cases", ""));
  if (cases.empty())
    throw UsageError("bench features needs --data DIR with bunny/bun_zipper.ply or kitti/ in it");
  std::vector<BenchRow> rows;
  std::ostringstream stages_md;
  stages_md << "\n## Stages (median ms)\n\n| case | method | stages |\n|---|---|---|\n";
  for (const auto& c : cases) {
    FeatureResult ref;
    bool have_ref = false;
    std::vector<Point3f> ref_normals;
    // Each method's row; the gpu method's once more into one result reused call after call
    // (its vectors' memory kept, as a caller computing frame after frame would).
    const auto measure = [&](FeatureMethod m, bool reuse) {
      // Plots are over k; a radius case (x = 0) appears in the tables only.
      const double plot_x = c.params.neighbourhood.k > 0 ? c.x : 0.0;
      BenchRow row{c.sweep, c.label,
                   plot_x,  c.cloud.size(),
                   c.x,     std::string(method_name(m)) + (reuse ? "[reused]" : "")};
      const bool is_pcl = m == FeatureMethod::Cpu;
      if (is_pcl && pair_count(c) > pcl_limit) {
        row.agreement = "skipped (over --pcl-max-pairs)";
        rows.push_back(row);
        out << std::left << std::setw(26) << c.label << std::setw(11) << row.method << row.agreement
            << '\n'
            << std::flush;
        return;
      }
      try {
        const int reps = is_pcl ? 1 : repeat;
        FeatureResult last;
        const auto run = [&] {
          if (reuse)
            compute_features(c.cloud, c.params, m, nullptr, last);
          else
            last = compute_features(c.cloud, c.params, m);
        };
        for (int i = 0; i < (is_pcl ? 0 : warmup); ++i)
          run();
        std::vector<double> t;
        for (int i = 0; i < std::max(1, reps); ++i) {
          run();
          t.push_back(last.total_ms);
        }
        set_times(row, t);
        row.clusters = last.nan_histograms;
        row.stages = last.stages;
        // The points up; normals, curvatures and histograms down.
        if (is_gpu_method(m))
          set_floor(row, 12.0 * double(c.cloud.size()),
                    12.0 * double(last.normals.size()) + 4.0 * double(last.curvature.size()) +
                        4.0 * double(last.histograms.size()));
        if (is_pcl) {
          ref = std::move(last);
          ref_normals = ref.normals;
          have_ref = true;
          row.agreement = "reference";
        } else if (have_ref) {
          row.agreement = "end to end: " + agreement(ref, last);
          // The histogram stage alone: the same normals as PCL's (an untimed extra run).
          const FeatureResult same = compute_features(c.cloud, c.params, m, &ref_normals);
          row.agreement += "; from PCL's normals: " + agreement(ref, same);
        } else {
          row.agreement = "no reference";
        }
      } catch (const std::exception& e) {
        row.agreement = std::string("error: ") + e.what();
      }
      rows.push_back(row);
      stages_md << "| " << c.label << " | " << row.method << " | ";
      for (std::size_t i = 0; i < row.stages.size(); ++i)
        stages_md << (i ? ", " : "") << row.stages[i].first << " " << std::fixed
                  << std::setprecision(3) << row.stages[i].second << std::defaultfloat;
      stages_md << " |\n";
      out << std::left << std::setw(26) << c.label << std::setw(11) << row.method << std::right
          << std::fixed << std::setprecision(3) << std::setw(11) << row.median_ms << " ms  "
          << row.agreement.substr(0, 110) << '\n'
          << std::defaultfloat << std::flush;
    };
    for (FeatureMethod m : all_methods<FeatureMethod>()) {
      if (m != FeatureMethod::Cpu && !gpu) continue;
      if (!wanted(method_name(m))) continue;
      measure(m, false);
      if (m == FeatureMethod::Gpu) measure(m, true);
    }
    if (open3d && wanted("open3d") && c.params.descriptor == Descriptor::Fpfh)
      rows.push_back(measure_open3d(c, have_ref ? &ref : nullptr, out));
  }
  return write_bench_report(rows, dir, "features", "Normals and feature histograms benchmark",
                            kBenchNotes + stages_md.str(), command_line, out);
}

FeatureParams feature_params(const Args& a) {
  FeatureParams p;
  const auto d = parse_descriptor(a.get("descriptor", "fpfh"));
  if (!d) throw UsageError("unknown descriptor '" + a.get("descriptor") + "' (pfh, fpfh)");
  p.descriptor = *d;
  p.neighbourhood = neighbourhood_from(a, "k", "radius", std::nullopt);
  p.normals.neighbourhood = neighbourhood_from(a, "normals-k", "normals-radius", p.neighbourhood);
  if (a.has("viewpoint")) p.normals.viewpoint = parse_viewpoint(a.get("viewpoint"));
  p.normals.pcl_compatible = a.flag("pcl-normals");
  return p;
}

int run_features(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"json", "pcl-normals"},
               {"descriptor", "method", "k", "radius", "normals-k", "normals-radius", "viewpoint",
                "out", "csv", "tile-points"});
  a.expect_positionals(1, 1,
                       "cumulus-cli features FILE --descriptor pfh|fpfh [--method NAME] (--k K | "
                       "--radius R) [--normals-k K | --normals-radius R] [--out FILE] [--json]");
  const FeatureMethod method = method_arg(a, default_method<FeatureMethod>());
  const FeatureParams p = feature_params(a);
  const std::string file = a.positionals()[0];
  const PointCloud cloud = load_cloud(file);
  TileOptions tiles;
  if (a.has("tile-points")) {
    const long long t = a.get_int("tile-points", 0);
    if (t < 1) throw UsageError("--tile-points must be at least 1");
    tiles.max_tile_points = std::size_t(t);
  }
  const FeatureResult r = compute_features_tiled(cloud, p, method, nullptr, tiles);
  if (a.has("out")) {
    const std::string o = a.get("out");
    if (fs::path(o).extension() == ".csv")
      write_features_csv(o, cloud, r);
    else
      write_features_pcd(o, r);
  }
  if (a.has("csv")) write_features_csv(a.get("csv"), cloud, r);
  if (a.flag("json")) {
    print_json(out,
               QJsonObject{{"file", QString::fromStdString(file)},
                           {"method", QString::fromStdString(r.method)},
                           {"descriptor", descriptor_name(r.descriptor)},
                           {"bins", r.bins},
                           {"neighbourhood", QString::fromStdString(p.neighbourhood.describe())},
                           {"normals_neighbourhood",
                            QString::fromStdString(p.normals.neighbourhood.describe())},
                           {"points", double(cloud.size())},
                           {"non_finite_points", double(r.non_finite_points)},
                           {"nan_histograms", double(r.nan_histograms)},
                           {"stages_ms", stages_json(r.stages)},
                           {"total_ms", r.total_ms}});
    return 0;
  }
  out << file << ": " << descriptor_name(r.descriptor) << " (" << r.bins << " bins) of "
      << cloud.size() << " points with " << r.method << ", neighbourhood "
      << p.neighbourhood.describe() << ", normals " << p.normals.neighbourhood.describe() << "\n";
  if (r.non_finite_points)
    out << "  left out " << r.non_finite_points << " non-finite points (their rows are NaN)\n";
  print_time(out, r.total_ms, r.stages);
  return 0;
}

}  // namespace cumulus::cli
