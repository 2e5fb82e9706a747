// cumulus-cli register: ICP alignment of a source cloud onto a target cloud.
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "core/error.h"
#include "icp_args.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "json.h"
#include "registration/global.h"
#include "registration/icp.h"
#include "write_cloud.h"

namespace cumulus::cli {

namespace {

// The exit status when a global alignment finds none (a result, not an error).
constexpr int kNotFoundExit = 3;

QJsonArray matrix_json(const Eigen::Matrix4d& m) {
  QJsonArray rows;
  for (int r = 0; r < 4; ++r) {
    QJsonArray row;
    for (int c = 0; c < 4; ++c)
      row.append(m(r, c));
    rows.append(row);
  }
  return rows;
}

// With `global` the initial guess is the global alignment's, set later.
IcpParams icp_params_from(const Args& a, bool global) {
  IcpParams p;
  p.max_correspondence_distance = a.get_double("max-distance", p.max_correspondence_distance);
  p.criteria.max_iterations = int(a.get_int("max-iterations", p.criteria.max_iterations));
  p.criteria.transformation_epsilon =
      a.get_double("transformation-epsilon", p.criteria.transformation_epsilon);
  p.criteria.rotation_epsilon = a.get_double("rotation-epsilon", p.criteria.rotation_epsilon);
  p.criteria.fitness_epsilon = a.get_double("fitness-epsilon", p.criteria.fitness_epsilon);
  p.criteria.absolute_mse = a.get_double("absolute-mse", p.criteria.absolute_mse);
  p.criteria.failure_after_max_iterations = a.flag("fail-at-max-iterations");
  if (a.has("metric")) {
    const auto m = parse_metric(a.get("metric"));
    if (!m)
      throw UsageError("--metric must be point-to-point, point-to-plane or gicp, not '" +
                       a.get("metric") + "'");
    p.metric = *m;
  }
  gicp_args(a, p.metric, p.gicp);
  p.normals_k = int(a.get_int("normals-k", p.normals_k));
  if (p.normals_k < 3 || p.normals_k > 1000) throw UsageError("--normals-k takes 3 to 1000");
  kernel_args(a, p.kernel, p.kernel_scale);
  if (a.has("initial") && !global) {
    const std::string v = a.get("initial");
    // A single word that names no file was most likely meant as a path: say so, rather than
    // that it is not a number.
    if (std::filesystem::exists(v))
      p.initial = read_matrix_file(v);
    else if (v.find_first_of(" \t\n,;") == std::string::npos)
      throw InvalidArgument("--initial: no file '" + v + "', and not 16 numbers");
    else
      p.initial = parse_matrix(v);
  }
  validate(p);
  return p;
}

QJsonObject icp_json(const IcpResult& r) {
  QJsonArray history;
  for (std::size_t i = 0; i < r.history.size(); ++i) {
    const auto& h = r.history[i];
    history.append(QJsonObject{{"iteration", double(i + 1)},
                               {"correspondences", double(h.correspondences)},
                               {"mse", h.mse},
                               {"rotation_cosine", h.rotation_cosine},
                               {"translation_sq", h.translation_sq}});
  }
  return QJsonObject{{"method", QString::fromStdString(r.method)},
                     {"metric", metric_name(r.metric)},
                     {"kernel", kernel_name(r.kernel)},
                     {"transform", matrix_json(r.transform)},
                     {"fitness", r.fitness},
                     {"converged", r.converged},
                     {"iterations", r.iterations},
                     {"stop_reason", stop_name(r.stop)},
                     {"stop_description", QString::fromStdString(stop_description(r.stop))},
                     {"rotation_deg", rotation_angle_deg(r.transform)},
                     {"translation", translation_norm(r.transform)},
                     {"source_points", double(r.source_points)},
                     {"target_points", double(r.target_points)},
                     {"source_dropped", double(r.source_dropped)},
                     {"target_dropped", double(r.target_dropped)},
                     {"cost_evaluations", r.cost_evaluations},
                     {"error_per_iteration", history},
                     {"stages_ms", stages_json(r.stages)},
                     {"total_ms", r.total_ms}};
}

GlobalParams global_params_from(const Args& a) {
  GlobalParams g;
  g.voxel = a.get_double("voxel", g.voxel);
  g.hypotheses = int(a.get_int("hypotheses", g.hypotheses));
  g.confidence = a.get_double("confidence", g.confidence);
  g.pcl_iterations = int(a.get_int("pcl-iterations", g.pcl_iterations));
  g.similarity = a.get_double("similarity", g.similarity);
  g.min_overlap = a.get_double("min-overlap", g.min_overlap);
  g.seed = std::uint64_t(a.get_int("seed", std::int64_t(g.seed)));
  g.refine = false;  // the ICP below, with this command's own ICP options
  validate(g);
  return g;
}

QJsonObject global_json(const GlobalResult& g) {
  QJsonObject o{{"method", QString::fromStdString(g.method)},
                {"found", g.found},
                {"voxel", g.voxel},
                {"source_keypoints", double(g.source_keypoints.size())},
                {"target_keypoints", double(g.target_keypoints.size())},
                {"correspondences", double(g.matches.size())},
                {"inliers", double(g.inliers)},
                {"inlier_rmse", g.inlier_rmse},
                {"overlap", g.overlap},
                {"hypotheses", double(g.hypotheses)},
                {"valid_hypotheses", double(g.valid_hypotheses)},
                {"candidates", double(g.candidates)},
                {"transform", matrix_json(g.coarse)},
                {"rotation_deg", rotation_angle_deg(g.coarse)},
                {"translation", translation_norm(g.coarse)},
                {"stages_ms", stages_json(g.stages)},
                {"total_ms", g.total_ms}};
  if (!g.found) o.insert("reason", QString::fromStdString(g.reason));
  return o;
}

void print_global(std::ostream& out, const GlobalResult& g) {
  out << "global alignment with " << g.method << ": " << (g.found ? "found" : "NOT found")
      << "\n  voxel " << std::setprecision(6) << g.voxel << ", keypoints "
      << g.source_keypoints.size() << " -> " << g.target_keypoints.size() << ", "
      << g.matches.size() << " pairs, " << g.inliers << " inliers (RMSE " << g.inlier_rmse
      << "), overlap " << std::setprecision(4) << 100 * g.overlap << " %\n";
  if (g.method != "cpu")
    out << "  " << g.hypotheses << " hypotheses drawn, " << g.valid_hypotheses
        << " passed the edge-length test, " << g.candidates
        << " distinct best fits compared by overlap\n";
  if (!g.found) {
    out << "  no alignment found: " << g.reason << "\n";
  } else {
    out << "  coarse: rotation " << std::setprecision(6) << rotation_angle_deg(g.coarse)
        << " deg, translation " << translation_norm(g.coarse) << "\n";
  }
  print_time(out, g.total_ms, g.stages);
}

// The global method: --global-method, else the device --method names, else the default.
GlobalMethod global_method_arg(const Args& a) {
  if (a.has("global-method")) {
    if (auto m = parse_method<GlobalMethod>(a.get("global-method"))) return *m;
    throw UsageError("unknown global method '" + a.get("global-method") + "' (" +
                     method_table(GlobalMethod{}).names() + ")");
  }
  if (a.has("method"))
    return is_gpu_method(method_arg(a, IcpMethod::Cpu)) ? GlobalMethod::Gpu : GlobalMethod::Cpu;
  return default_method<GlobalMethod>();
}

}  // namespace

int run_register(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"json", "fail-at-max-iterations", "allow-precision-loss"},
               {"method",
                "max-iterations",
                "max-distance",
                "transformation-epsilon",
                "rotation-epsilon",
                "fitness-epsilon",
                "absolute-mse",
                "initial",
                "out",
                "transform-out",
                "metric",
                "normals-k",
                "kernel",
                "kernel-scale",
                "gicp-k",
                "gicp-inner-iterations",
                "gicp-gradient-tolerance",
                "gicp-translation-epsilon",
                "gicp-rotation-epsilon",
                "global-method",
                "voxel",
                "hypotheses",
                "confidence",
                "pcl-iterations",
                "similarity",
                "min-overlap",
                "seed",
                "matches-out"});
  a.expect_positionals(2, 2,
                       "cumulus-cli register SOURCE TARGET [--method NAME] [--metric M] "
                       "[--max-iterations N] "
                       "[--max-distance D] [--transformation-epsilon E] [--fitness-epsilon F] "
                       "[--initial 4x4-or-file|global] [--out FILE] [--json]");
  const IcpMethod method = method_arg(a, default_method<IcpMethod>());
  const bool global = a.has("initial") && a.get("initial") == "global";
  for (const char* only : {"global-method", "voxel", "hypotheses", "confidence", "pcl-iterations",
                           "similarity", "min-overlap", "seed", "matches-out"})
    if (!global && a.has(only))
      throw UsageError(std::string("--") + only + " belongs to --initial global");
  IcpParams params = icp_params_from(a, global);
  const PointCloud source = load_cloud(a.positionals()[0]);
  const PointCloud target = load_cloud(a.positionals()[1]);
  std::optional<GlobalResult> g;
  if (global) {
    g = register_global(source, target, global_params_from(a), global_method_arg(a));
    if (a.has("matches-out")) write_matches_csv(a.get("matches-out"), *g);
    if (!g->found) {
      if (a.flag("json")) {
        print_json(out, QJsonObject{{"source", QString::fromStdString(a.positionals()[0])},
                                    {"target", QString::fromStdString(a.positionals()[1])},
                                    {"global", global_json(*g)}});
      } else {
        print_global(out, *g);
      }
      return kNotFoundExit;
    }
    params.initial = g->coarse;
    if (!a.has("max-distance"))
      params.max_correspondence_distance = GlobalParams{}.inlier_distance * g->voxel;
  }
  const IcpResult r = icp(source, target, params, method);
  if (a.has("out")) write_cloud(a, a.get("out"), transformed(source, r.transform));
  if (a.has("transform-out")) {
    AtomicOstream f(a.get("transform-out"));
    f << format_matrix(r.transform);
    f.commit();
  }
  if (a.flag("json")) {
    QJsonObject o = icp_json(r);
    o.insert("source", QString::fromStdString(a.positionals()[0]));
    o.insert("target", QString::fromStdString(a.positionals()[1]));
    o.insert("max_correspondence_distance", params.max_correspondence_distance);
    o.insert("max_iterations", params.criteria.max_iterations);
    o.insert("transformation_epsilon", params.criteria.transformation_epsilon);
    o.insert("fitness_epsilon", params.criteria.fitness_epsilon);
    o.insert("absolute_mse", params.criteria.absolute_mse);
    if (params.metric == IcpMetric::Gicp)
      o.insert("gicp",
               QJsonObject{{"k", params.gicp.k},
                           {"epsilon", params.gicp.epsilon},
                           {"inner_iterations", params.gicp.max_inner_iterations},
                           {"gradient_tolerance", params.gicp.translation_gradient_tolerance},
                           {"translation_epsilon", params.gicp.translation_epsilon},
                           {"rotation_epsilon", params.gicp.rotation_epsilon}});
    if (g) o.insert("global", global_json(*g));
    print_json(out, o);
    return 0;
  }
  if (g) print_global(out, *g);
  out << a.positionals()[0] << " -> " << a.positionals()[1] << " with " << r.method << " ("
      << metric_name(r.metric)
      << (r.kernel != RobustKernel::None ? std::string(", ") + kernel_name(r.kernel) + " kernel"
                                         : std::string())
      << "): " << r.iterations << " iterations, stopped: " << stop_name(r.stop) << " ("
      << stop_description(r.stop) << "), " << (r.converged ? "converged" : "NOT converged") << "\n";
  out << std::setprecision(9) << "  fitness (mean squared distance): " << r.fitness << "\n";
  out << "  rotation " << std::setprecision(6) << rotation_angle_deg(r.transform)
      << " deg, translation " << translation_norm(r.transform) << "\n";
  out << "  transform:\n";
  std::istringstream lines(format_matrix(r.transform));
  for (std::string line; std::getline(lines, line);)
    out << "    " << line << "\n";
  if (r.source_dropped || r.target_dropped)
    out << "  left out non-finite points: " << r.source_dropped << " source, " << r.target_dropped
        << " target\n";
  print_time(out, r.total_ms, r.stages);
  return 0;
}

}  // namespace cumulus::cli
