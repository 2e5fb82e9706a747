// cumulus-cli ground: the ground of a scan (a RANSAC plane, or the range image's columns), its
// points and the rest.
#include <iomanip>
#include <set>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "filter/filter.h"
#include "filter_args.h"
#include "ground/ground.h"
#include "ground/range_ground.h"
#include "io/io.h"
#include "json.h"
#include "write_cloud.h"

namespace cumulus::cli {

namespace {

const std::set<std::string> kPlaneOnly = {"iterations", "axis", "max-angle", "seed"};
const std::set<std::string> kRangeOnly = {"rows",      "columns",  "fov",          "epsilon",
                                          "max-slope", "max-step", "sensor-height"};

GroundPlaneParams plane_params(const Args& a) {
  GroundPlaneParams p;
  p.threshold = a.get_double("threshold", p.threshold);
  p.max_iterations = int(a.get_int("iterations", p.max_iterations));
  if (a.has("axis")) {
    const auto v = numbers(a, "axis", 3);
    p.axis = {v[0], v[1], v[2]};
  }
  p.max_angle_deg = a.get_double("max-angle", p.max_angle_deg);
  const long long seed = a.get_int("seed", 1);
  if (seed < 0) throw UsageError("--seed must not be negative");
  p.seed = std::uint64_t(seed);
  return p;
}

}  // namespace

RangeGroundParams range_ground_params(const Args& a, const std::string& threshold_option) {
  RangeGroundParams p;
  const auto count = [&](const char* option, std::uint32_t fallback) {
    const long long v = a.get_int(option, fallback);
    if (v < 1 || v > 65536) throw UsageError(std::string("--") + option + " must be 1 to 65536");
    return std::uint32_t(v);
  };
  p.rows = count("rows", p.rows);
  p.columns = count("columns", p.columns);
  if (a.has("fov")) {
    const auto v = numbers(a, "fov", 2);
    p.fov_up_deg = v[0];
    p.fov_down_deg = v[1];
  }
  p.epsilon = a.get_float("epsilon", p.epsilon);
  p.max_slope_deg = a.get_double("max-slope", p.max_slope_deg);
  p.max_step = a.get_double("max-step", p.max_step);
  p.sensor_height = a.get_double("sensor-height", p.sensor_height);
  p.threshold = a.get_double(threshold_option, p.threshold);
  validate(p);
  return p;
}

int run_ground(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(
      argv, {"json", "allow-precision-loss"},
      {"algorithm", "method", "threshold", "iterations", "axis", "max-angle", "seed", "rows",
       "columns", "fov", "epsilon", "max-slope", "max-step", "sensor-height", "out", "ground-out"});
  a.expect_positionals(1, 1, "cumulus-cli ground FILE [--algorithm ransac-plane|range-rdp]");
  const std::string algorithm = a.get("algorithm", "ransac-plane");
  if (algorithm != "ransac-plane" && algorithm != "range-rdp")
    throw UsageError("--algorithm is ransac-plane or range-rdp, not '" + algorithm + "'");
  const bool range = algorithm == "range-rdp";
  for (const auto& o : range ? kPlaneOnly : kRangeOnly)
    if (a.has(o))
      throw UsageError("--" + o + " belongs to --algorithm " +
                       (range ? "ransac-plane" : "range-rdp"));
  const std::string path = a.positionals()[0];
  GroundResult r;
  PointCloud cloud;
  if (range) {
    const RangeGroundMethod method = method_arg(a, default_method<RangeGroundMethod>());
    const RangeGroundParams p = range_ground_params(a, "threshold");
    cloud = load_cloud(path);
    r = segment_ground_range(cloud, p, method);
  } else {
    const GroundMethod method = method_arg(a, default_method<GroundMethod>());
    const GroundPlaneParams p = plane_params(a);
    cloud = load_cloud(path);
    r = segment_ground_plane(cloud, p, method);
  }
  if (a.has("out")) write_cloud(a, a.get("out"), gather_points(cloud, off_ground(cloud, r.ground)));
  if (a.has("ground-out")) write_cloud(a, a.get("ground-out"), gather_points(cloud, r.ground));
  const std::size_t finite = cloud.size() - r.non_finite;
  if (a.flag("json")) {
    print_json(out,
               QJsonObject{{"path", QString::fromStdString(path)},
                           {"algorithm", QString::fromStdString(algorithm)},
                           {"method", QString::fromStdString(r.method)},
                           {"points", double(cloud.size())},
                           {"non_finite", double(r.non_finite)},
                           {"ground", double(r.ground.size())},
                           {"not_ground", double(finite - r.ground.size())},
                           {"plane", QJsonArray{r.plane[0], r.plane[1], r.plane[2], r.plane[3]}},
                           {"hypotheses", r.hypotheses},
                           {"stages_ms", stages_json(r.stages)},
                           {"total_ms", r.total_ms}});
    return 0;
  }
  out << std::fixed << std::setprecision(4) << path << " with " << algorithm << ", " << r.method
      << ":\n"
      << "  ground: " << r.ground.size() << " of " << finite << " finite points\n"
      << (range ? "  plane fitted to the ground: " : "  plane: ") << r.plane[0] << " x + "
      << r.plane[1] << " y + " << r.plane[2] << " z + " << r.plane[3] << " = 0\n"
      << std::setprecision(3) << "  " << r.total_ms << " ms\n";
  if (a.has("out")) out << "  wrote the other points to " << a.get("out") << '\n';
  if (a.has("ground-out")) out << "  wrote the ground to " << a.get("ground-out") << '\n';
  return 0;
}

}  // namespace cumulus::cli
