// cumulus-cli filter: crop box, voxel grid, statistical and radius outlier removal, in that
// order (the pipeline's), with any method.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "filter/filter.h"
#include "io/io.h"
#include "json.h"
#include "write_cloud.h"

namespace cumulus::cli {

namespace {

// "a,b" or "a,b,c" or "a,b,c,d,e,f" (or one number for all three of a leaf).
std::vector<double> numbers(const Args& a, const std::string& option, std::size_t count) {
  std::vector<double> values;
  std::stringstream text(a.get(option));
  for (std::string part; std::getline(text, part, ',');)
    values.push_back(parse_double("--" + option, part));
  if (count == 3 && values.size() == 1) values.assign(3, values[0]);
  if (values.size() != count)
    throw UsageError("--" + option + " takes " + std::to_string(count) +
                     " numbers separated by commas");
  return values;
}

QJsonObject stage_json(const char* name, std::size_t in, const FilterResult& r) {
  return {{"stage", name},
          {"method", QString::fromStdString(r.method)},
          {"points_in", double(in)},
          {"points_out", double(r.cloud.size())},
          {"non_finite", double(r.non_finite)},
          {"stages_ms", stages_json(r.stages)},
          {"total_ms", r.total_ms}};
}

}  // namespace

int run_filter(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"json", "crop-negative", "keep-outliers", "allow-precision-loss"},
               {"method", "crop", "voxel", "min-points", "sor", "ror", "out"});
  a.expect_positionals(1, 1,
                       "cumulus-cli filter FILE [--crop X0,Y0,Z0,X1,Y1,Z1] [--voxel LEAF] "
                       "[--sor K,STDDEV] [--ror RADIUS,MIN]");
  if (!a.has("crop") && !a.has("voxel") && !a.has("sor") && !a.has("ror"))
    throw UsageError(
        "filter needs at least one of --crop, --voxel, --sor, --ror (see cumulus-cli filter "
        "--help)");
  const FilterMethod method = method_arg(a, default_method<FilterMethod>());
  const std::string path = a.positionals()[0];
  PointCloud cloud = load_cloud(path);
  QJsonArray stages;
  std::ostringstream report;
  std::string emptied;  // the stage that kept no point
  report << std::fixed << std::setprecision(3);
  const auto stage = [&](const char* name, const FilterResult& r, std::size_t in) {
    stages.append(stage_json(name, in, r));
    report << "  " << name << ": " << r.cloud.size() << " of " << in << " points, " << r.total_ms
           << " ms\n";
    if (r.cloud.empty()) {
      report << "  " << name << " kept no point: nothing is left for the next stage\n";
      emptied = name;
    }
  };
  if (a.has("crop")) {
    const auto v = numbers(a, "crop", 6);
    CropBoxParams p{{v[0], v[1], v[2]}, {v[3], v[4], v[5]}, a.flag("crop-negative")};
    FilterResult r = crop_box(cloud, p, method);
    stage("crop box", r, cloud.size());
    cloud = std::move(r.cloud);
  }
  if (a.has("voxel") && !cloud.empty()) {
    const auto v = numbers(a, "voxel", 3);
    VoxelGridParams p{{float(v[0]), float(v[1]), float(v[2])},
                      std::size_t(a.get_int("min-points", 0))};
    if (a.get_int("min-points", 0) < 0) throw UsageError("--min-points must not be negative");
    FilterResult r = voxel_grid(cloud, p, method);
    stage("voxel grid", r, cloud.size());
    cloud = std::move(r.cloud);
  }
  if (a.has("sor") && !cloud.empty()) {
    const auto v = numbers(a, "sor", 2);
    if (v[0] != std::floor(v[0]) || v[0] < 1 || v[0] > kMaxOutlierMeanK)
      throw UsageError("--sor: the neighbour count K must be a whole number from 1 to " +
                       std::to_string(kMaxOutlierMeanK));
    const StatisticalOutlierParams p{int(v[0]), v[1], a.flag("keep-outliers")};
    FilterResult r = remove_statistical_outliers(cloud, p, method);
    stage("statistical outliers", r, cloud.size());
    cloud = std::move(r.cloud);
  }
  if (a.has("ror") && !cloud.empty()) {
    const auto v = numbers(a, "ror", 2);
    if (v[1] != std::floor(v[1]) || v[1] < 0 || v[1] > 1e6)
      throw UsageError("--ror: the neighbour count MIN must be a whole number from 0 to 1000000");
    const RadiusOutlierParams p{v[0], int(v[1]), a.flag("keep-outliers")};
    FilterResult r = remove_radius_outliers(cloud, p, method);
    stage("radius outliers", r, cloud.size());
    cloud = std::move(r.cloud);
  }
  if (a.has("out")) {
    if (cloud.empty())
      throw Error("nothing to write to " + a.get("out") + ": the " + emptied +
                  " stage kept no point");
    write_cloud(a, a.get("out"), cloud);
  }
  if (a.flag("json")) {
    print_json(out, QJsonObject{{"path", QString::fromStdString(path)},
                                {"method", method_name(method)},
                                {"points_out", double(cloud.size())},
                                {"stages", stages}});
    return 0;
  }
  out << path << " with " << method_name(method) << ":\n" << report.str();
  if (a.has("out")) out << "  wrote " << a.get("out") << '\n';
  return 0;
}

}  // namespace cumulus::cli
