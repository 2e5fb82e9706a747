// cumulus-cli pipeline: a raw scan to objects (filters, ground removal, clustering, boxes),
// from flags or a preset file whose keys are the flags' names.
#include <QFile>
#include <QJsonDocument>

#include <cmath>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <set>

#include "args.h"
#include "commands.h"
#include "filter_args.h"
#include "interrupt.h"
#include "io/io.h"
#include "json.h"
#include "objects/objects_export.h"
#include "objects/pipeline.h"
#include "write_cloud.h"

namespace cumulus::cli {

namespace {

const std::set<std::string> kFlags = {"json", "crop-negative", "keep-outliers",
                                      "allow-precision-loss"};
const std::set<std::string> kOptions = {
    "preset", "method",           "crop",  "voxel",     "min-points", "sor",      "ror",
    "ground", "ground-threshold", "level", "tolerance", "min",        "max",      "out",
    "rows",   "columns",          "fov",   "epsilon",   "max-slope",  "max-step", "sensor-height"};
// What a preset may set: every option but the file names.
const std::set<std::string> kPresetKeys = {
    "method",        "crop",          "voxel",     "min-points",
    "sor",           "ror",           "ground",    "ground-threshold",
    "level",         "tolerance",     "min",       "max",
    "crop-negative", "keep-outliers", "rows",      "columns",
    "fov",           "epsilon",       "max-slope", "max-step",
    "sensor-height"};

std::string joined(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s;
}

// The preset's settings as arguments, ahead of the command line's (which win).
std::vector<std::string> preset_args(const std::string& path) {
  QFile f(QString::fromStdString(path));
  if (!f.open(QIODevice::ReadOnly)) throw Error("cannot read the preset " + path);
  QJsonParseError parse{};
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &parse);
  if (parse.error != QJsonParseError::NoError || !doc.isObject())
    throw Error("the preset " + path +
                " is not a JSON object: " + parse.errorString().toStdString());
  std::vector<std::string> args;
  const QJsonObject o = doc.object();
  for (auto it = o.begin(); it != o.end(); ++it) {
    const std::string key = it.key().toStdString();
    const std::string option = "--" + key;
    if (!kPresetKeys.count(key))
      throw Error("the preset " + path + " names an unknown setting '" + key +
                  "' (valid: " + joined(kPresetKeys) + ")");
    const QJsonValue v = it.value();
    if (key == "crop-negative" || key == "keep-outliers") {
      if (!v.isBool()) throw Error("the preset's '" + key + "' must be true or false");
      if (v.toBool()) args.push_back(option);
      continue;
    }
    std::string text;
    if (v.isString()) {
      text = v.toString().toStdString();
    } else if (v.isDouble()) {
      text = QString::number(v.toDouble(), 'g', 17).toStdString();
    } else if (v.isArray()) {
      for (const auto& x : v.toArray()) {
        if (!x.isDouble()) throw Error("the preset's '" + key + "' must hold numbers");
        if (!text.empty()) text += ',';
        text += QString::number(x.toDouble(), 'g', 17).toStdString();
      }
    } else {
      throw Error("the preset's '" + key + "' must be a number, a string or a list of numbers");
    }
    args.push_back(option);
    args.push_back(text);
  }
  return args;
}

std::string preset_of(const std::vector<std::string>& argv) {
  for (std::size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "--preset") return argv[i + 1];
  for (const auto& a : argv)
    if (a.rfind("--preset=", 0) == 0) return a.substr(9);
  return {};
}

}  // namespace

PipelineParams pipeline_params(const Args& a) {
  PipelineParams p;
  p.crop = crop_arg(a);
  p.voxel = voxel_arg(a);
  p.statistical = sor_arg(a);
  p.radius = ror_arg(a);
  const std::string ground = a.get("ground", "ransac-plane");
  if (ground == "ransac-plane") {
    GroundPlaneParams g;
    g.threshold = a.get_double("ground-threshold", g.threshold);
    const std::string level = a.get("level", "yes");
    if (level != "yes" && level != "no") throw UsageError("--level is yes or no");
    if (level == "yes") g.axis = {0, 0, 1};
    p.ground = g;
  } else if (ground == "range-rdp") {
    p.range_ground = range_ground_params(a, "ground-threshold");
  } else if (ground != "none") {
    throw UsageError("unknown ground method '" + ground + "' (none, ransac-plane, range-rdp)");
  }
  ClusterParams c;
  c.tolerance = a.get_float("tolerance", 0.5);
  const long long lo = a.get_int("min", 10), hi = a.get_int("max", c.max_size);
  if (lo < 1 || hi < lo) throw UsageError("--min must be at least 1 and at most --max");
  c.min_size = std::size_t(lo);
  c.max_size = std::size_t(hi);
  p.cluster = c;
  return p;
}

namespace {

QJsonArray vec(const std::array<double, 3>& v) {
  return {v[0], v[1], v[2]};
}

QJsonObject object_json(const DetectedObject& o) {
  return {{"id", o.id},
          {"points", double(o.points)},
          {"centroid", vec(o.centroid)},
          {"min", vec(o.min)},
          {"max", vec(o.max)},
          {"box_centre", vec(o.box.centre)},
          {"box_size", vec(o.box.size)},
          {"box_heading", vec(o.box.heading)},
          {"above_ground", std::isnan(o.above_ground) ? QJsonValue() : o.above_ground}};
}

void write_objects(const std::string& dir, const PipelineResult& r, const Args& a) {
  std::filesystem::create_directories(dir);
  save_objects_csv(dir + "/objects.csv", r.objects);
  save_objects_json(dir + "/objects.json", r.objects);
  PointCloud labelled = r.cloud;
  labelled.labels.assign(r.labels.begin(), r.labels.end());
  write_cloud(a, dir + "/objects.pcd", labelled);
}

}  // namespace

int run_pipeline(const std::vector<std::string>& argv, std::ostream& out) {
  std::vector<std::string> all;
  if (const std::string preset = preset_of(argv); !preset.empty()) all = preset_args(preset);
  all.insert(all.end(), argv.begin(), argv.end());
  const Args a(all, kFlags, kOptions);
  a.expect_positionals(1, 1, "cumulus-cli pipeline FILE [--preset P.json] [options]");
  const std::string method = a.get("method", method_name(default_method<PipelineMethod>()));
  if (!parse_method<PipelineMethod>(method))
    throw UsageError("unknown method '" + method + "' (" + method_table(PipelineMethod{}).names() +
                     ")");
  const PipelineParams p = pipeline_params(a);
  const std::string path = a.positionals()[0];
  const PointCloud cloud = load_cloud(path);
  RunProgress progress("pipeline (" + method + ")");
  const PipelineResult r = run_pipeline(cloud, p, method, nullptr, std::ref(progress));
  if (a.has("out")) write_objects(a.get("out"), r, a);
  if (a.flag("json")) {
    QJsonArray stages, objects;
    for (const auto& s : r.stages)
      stages.append(QJsonObject{{"stage", QString::fromStdString(s.name)},
                                {"method", QString::fromStdString(s.method)},
                                {"in", double(s.points_in)},
                                {"out", double(s.points_out)},
                                {"ms", s.ms},
                                {"stages_ms", stages_json(s.stages)}});
    for (const auto& o : r.objects)
      objects.append(object_json(o));
    QJsonObject j{{"path", QString::fromStdString(path)},
                  {"method", QString::fromStdString(method)},
                  {"points", double(cloud.size())},
                  {"stages", stages},
                  {"ground_points", double(r.ground_points)},
                  {"objects", objects},
                  {"total_ms", r.total_ms}};
    if (r.ground_plane)
      j["ground_plane"] = QJsonArray{(*r.ground_plane)[0], (*r.ground_plane)[1],
                                     (*r.ground_plane)[2], (*r.ground_plane)[3]};
    print_json(out, j);
    return 0;
  }
  out << path << " with " << method << ":\n" << std::fixed << std::setprecision(3);
  for (const auto& s : r.stages)
    out << "  " << std::left << std::setw(22) << s.name << std::right << std::setw(9) << s.points_in
        << " -> " << std::setw(9) << s.points_out
        << (s.name == "clustering" ? " clusters"
            : s.name == "boxes"    ? " boxes   "
                                   : " points  ")
        << std::setw(10) << s.ms << " ms\n";
  out << "  " << r.objects.size() << " objects, " << r.total_ms << " ms in all\n";
  if (a.has("out"))
    out << "  wrote objects.csv, objects.json and objects.pcd to " << a.get("out") << '\n';
  return 0;
}

}  // namespace cumulus::cli
