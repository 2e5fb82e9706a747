// cumulus-cli filter: crop box, voxel grid, statistical and radius outlier removal, in that
// order (the pipeline's), with any method.
#include <iomanip>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "filter/filter.h"
#include "filter_args.h"
#include "io/io.h"
#include "json.h"
#include "write_cloud.h"

namespace cumulus::cli {

namespace {

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
  // Every option checked before the cloud is read.
  const auto crop = crop_arg(a);
  const auto voxel = voxel_arg(a);
  const auto sor = sor_arg(a);
  const auto ror = ror_arg(a);
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
  if (crop) {
    FilterResult r = crop_box(cloud, *crop, method);
    stage("crop box", r, cloud.size());
    cloud = std::move(r.cloud);
  }
  if (voxel && !cloud.empty()) {
    FilterResult r = voxel_grid(cloud, *voxel, method);
    stage("voxel grid", r, cloud.size());
    cloud = std::move(r.cloud);
  }
  if (sor && !cloud.empty()) {
    FilterResult r = remove_statistical_outliers(cloud, *sor, method);
    stage("statistical outliers", r, cloud.size());
    cloud = std::move(r.cloud);
  }
  if (ror && !cloud.empty()) {
    FilterResult r = remove_radius_outliers(cloud, *ror, method);
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
