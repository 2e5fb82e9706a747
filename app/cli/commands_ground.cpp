// cumulus-cli ground: the ground plane of a scan (RANSAC), its points and the rest.
#include <iomanip>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "filter/filter.h"
#include "filter_args.h"
#include "ground/ground.h"
#include "io/io.h"
#include "json.h"
#include "write_cloud.h"

namespace cumulus::cli {

int run_ground(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(
      argv, {"json", "allow-precision-loss"},
      {"method", "threshold", "iterations", "axis", "max-angle", "seed", "out", "ground-out"});
  a.expect_positionals(1, 1, "cumulus-cli ground FILE [--threshold D] [--axis X,Y,Z]");
  const GroundMethod method = method_arg(a, default_method<GroundMethod>());
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
  const std::string path = a.positionals()[0];
  const PointCloud cloud = load_cloud(path);
  const GroundResult r = segment_ground_plane(cloud, p, method);
  if (a.has("out")) write_cloud(a, a.get("out"), gather_points(cloud, off_ground(cloud, r.ground)));
  if (a.has("ground-out")) write_cloud(a, a.get("ground-out"), gather_points(cloud, r.ground));
  const std::size_t finite = cloud.size() - r.non_finite;
  if (a.flag("json")) {
    print_json(out,
               QJsonObject{{"path", QString::fromStdString(path)},
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
  out << std::fixed << std::setprecision(4) << path << " with " << r.method << ":\n"
      << "  ground: " << r.ground.size() << " of " << finite << " finite points\n"
      << "  plane: " << r.plane[0] << " x + " << r.plane[1] << " y + " << r.plane[2] << " z + "
      << r.plane[3] << " = 0\n"
      << std::setprecision(3) << "  " << r.total_ms << " ms\n";
  if (a.has("out")) out << "  wrote the other points to " << a.get("out") << '\n';
  if (a.has("ground-out")) out << "  wrote the ground to " << a.get("ground-out") << '\n';
  return 0;
}

}  // namespace cumulus::cli
