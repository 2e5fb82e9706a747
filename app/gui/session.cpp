#include "session.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <cmath>

#include "core/error.h"
#include "save_file.h"

namespace cumulus::app {

namespace {

const char* kind_name(SessionDataset::Kind k) {
  switch (k) {
    case SessionDataset::Kind::Depth:
      return "depth";
    case SessionDataset::Kind::Sequence:
      return "sequence";
    default:
      return "cloud";
  }
}

QJsonArray vec(const double* v, int n) {
  QJsonArray a;
  for (int i = 0; i < n; ++i)
    a.append(v[i]);
  return a;
}

QJsonObject panel(const PanelSettings& p) {
  return {{"method", p.method}, {"live", p.live}};
}

// Reads one session's values, each checked; every error names the session file and the key.
class Reader {
 public:
  explicit Reader(const QString& path) : path_(path.toStdString()) {}
  [[noreturn]] void fail(const QString& key, const QString& why) const {
    throw Error("the session " + path_ + " is not valid: '" + key.toStdString() + "' " +
                why.toStdString());
  }
  QJsonObject object(const QJsonObject& o, const QString& key) const {
    const QJsonValue v = o.value(key);
    if (v.isUndefined() || v.isNull()) return {};
    if (!v.isObject()) fail(key, "must be an object");
    return v.toObject();
  }
  double number(const QJsonObject& o, const QString& key, double fallback, double low,
                double high) const {
    const QJsonValue v = o.value(key);
    if (v.isUndefined()) return fallback;
    if (!v.isDouble() || !(v.toDouble() >= low && v.toDouble() <= high))
      fail(key, QString("must be a number from %1 to %2").arg(low).arg(high));
    return v.toDouble();
  }
  bool boolean(const QJsonObject& o, const QString& key, bool fallback) const {
    const QJsonValue v = o.value(key);
    if (v.isUndefined()) return fallback;
    if (!v.isBool()) fail(key, "must be true or false");
    return v.toBool();
  }
  QString text(const QJsonObject& o, const QString& key) const {
    const QJsonValue v = o.value(key);
    if (v.isUndefined()) return {};
    if (!v.isString()) fail(key, "must be a string");
    return v.toString();
  }
  std::array<double, 3> triple(const QJsonObject& o, const QString& key) const {
    const QJsonArray a = o.value(key).toArray();
    if (a.size() != 3) fail(key, "must hold three numbers");
    std::array<double, 3> t{};
    for (int i = 0; i < 3; ++i) {
      if (!a[i].isDouble() || !std::isfinite(a[i].toDouble())) fail(key, "must hold three numbers");
      t[std::size_t(i)] = a[i].toDouble();
    }
    return t;
  }
  PanelSettings panel(const QJsonObject& o) const {
    return {text(o, "method"), boolean(o, "live", false)};
  }

 private:
  std::string path_;
};

}  // namespace

QJsonObject session_to_json(const Session& s, const QString& session_path) {
  const QDir base = QFileInfo(session_path).absoluteDir();
  QJsonArray datasets;
  for (const auto& d : s.datasets) {
    QJsonObject o{{"kind", kind_name(d.kind)},
                  {"path", base.relativeFilePath(d.path)},
                  {"absolute_path", d.path}};
    if (d.kind == SessionDataset::Kind::Depth) o["depth_scale"] = d.depth_scale;
    if (d.kind == SessionDataset::Kind::Sequence) o["frame"] = double(d.frame);
    if (d.clustered) o["clustered"] = true;
    if (d.segmented) o["segmented"] = true;
    datasets.append(o);
  }
  QJsonObject cluster = panel(s.cluster_panel);
  cluster["tolerance"] = double(s.cluster.tolerance);
  cluster["min_size"] = double(s.cluster.min_size);
  cluster["max_size"] = double(s.cluster.max_size);
  cluster["remove_ground"] = s.cluster_remove_ground;
  QJsonObject segment = panel(s.segment_panel);
  segment["epsilon"] = double(s.segment.epsilon);
  segment["distance"] =
      s.segment.distance == SegmentDistance::Perpendicular ? "perpendicular" : "vertical";
  segment["row_pitch"] = double(s.segment.row_pitch);
  segment["median"] = s.segment.median;
  QJsonObject filter = panel(s.filter_panel);
  if (const auto& c = s.filter.crop)
    filter["crop"] = QJsonObject{
        {"min", vec(c->min.data(), 3)}, {"max", vec(c->max.data(), 3)}, {"negative", c->negative}};
  if (const auto& v = s.filter.voxel) {
    const double leaf[3] = {v->leaf[0], v->leaf[1], v->leaf[2]};
    filter["voxel"] =
        QJsonObject{{"leaf", vec(leaf, 3)}, {"min_points", double(v->min_points_per_voxel)}};
  }
  if (const auto& o = s.filter.statistical)
    filter["statistical"] =
        QJsonObject{{"mean_k", o->mean_k}, {"stddev", o->stddev_mul}, {"negative", o->negative}};
  if (const auto& o = s.filter.radius)
    filter["radius"] = QJsonObject{
        {"radius", o->radius}, {"min_neighbours", o->min_neighbors}, {"negative", o->negative}};
  if (const auto& g = s.filter.ground) filter["ground"] = QJsonObject{{"threshold", g->threshold}};
  QJsonObject pipeline = panel(s.pipeline_panel);
  pipeline["preset"] = s.pipeline;
  const OdometryParams& op = s.odometry.params;
  const QJsonObject odometry{
      {"method", QString::fromUtf8(method_name(s.odometry.method))},
      {"metric", QString::fromUtf8(metric_name(op.metric))},
      {"ground", op.scan_ground == ScanGround::Auto   ? "auto"
                 : op.scan_ground == ScanGround::Keep ? "keep"
                                                      : "remove"},
      {"target", op.target == OdometryTarget::Scan ? "scan-to-scan" : "scan-to-map"},
      {"map_scans", op.map_scans},
      {"voxel", double(op.voxel)},
      {"max_distance", op.max_correspondence_distance}};
  QJsonObject view{{"color_mode", s.color_mode}, {"point_size", s.point_size}, {"axes", s.axes}};
  if (const auto& c = s.camera)
    view["camera"] = QJsonObject{
        {"position", vec(c->position.data(), 3)}, {"focal_point", vec(c->focal_point.data(), 3)},
        {"view_up", vec(c->view_up.data(), 3)},   {"view_angle", c->view_angle},
        {"parallel_scale", c->parallel_scale},    {"parallel", c->parallel}};
  return {
      {"cumulus_session", kSessionVersion},
      {"datasets", datasets},
      {"current", s.current},
      {"panels",
       QJsonObject{
           {"cluster", cluster}, {"segment", segment}, {"filter", filter}, {"pipeline", pipeline}}},
      {"odometry", odometry},
      {"view", view},
      {"window", QJsonObject{{"state", QString::fromLatin1(s.window_state.toBase64())},
                             {"geometry", QString::fromLatin1(s.geometry.toBase64())}}}};
}

Session session_from_json(const QJsonObject& json, const QString& session_path) {
  const Reader r(session_path);
  const QJsonValue version = json.value("cumulus_session");
  if (!version.isDouble())
    throw Error("the session " + session_path.toStdString() +
                " is not a Cumulus session (no cumulus_session version)");
  if (version.toInt() > kSessionVersion)
    throw Error("the session " + session_path.toStdString() +
                " was written by a newer Cumulus (version " + std::to_string(version.toInt()) +
                ")");
  Session s;
  const QJsonValue list = json.value("datasets");
  if (!list.isUndefined() && !list.isArray()) r.fail("datasets", "must be a list");
  for (const QJsonValue& v : list.toArray()) {
    if (!v.isObject()) r.fail("datasets", "must hold objects");
    const QJsonObject o = v.toObject();
    SessionDataset d;
    const QString kind = r.text(o, "kind");
    if (kind == "depth")
      d.kind = SessionDataset::Kind::Depth;
    else if (kind == "sequence")
      d.kind = SessionDataset::Kind::Sequence;
    else if (kind != "cloud" && !kind.isEmpty())
      r.fail("kind", "must be cloud, depth or sequence, not " + kind);
    const QString rel = r.text(o, "path"), abs = r.text(o, "absolute_path");
    if (rel.isEmpty() && abs.isEmpty()) r.fail("path", "is missing");
    d.path = resolve_dataset_path(rel, abs, session_path, d.kind == SessionDataset::Kind::Sequence);
    if (d.path.isEmpty())
      d.path = abs.isEmpty() ? QFileInfo(session_path).absoluteDir().filePath(rel) : abs;
    d.depth_scale = r.number(o, "depth_scale", 0, 0, 1e6);
    d.frame = std::size_t(r.number(o, "frame", 0, 0, 1e9));
    d.clustered = r.boolean(o, "clustered", false);
    d.segmented = r.boolean(o, "segmented", false);
    s.datasets.push_back(d);
  }
  s.current = int(r.number(json, "current", -1, -1, double(s.datasets.size()) - 1));
  const QJsonObject panels = r.object(json, "panels");
  const QJsonObject cluster = r.object(panels, "cluster");
  s.cluster_panel = r.panel(cluster);
  s.cluster.tolerance = float(r.number(cluster, "tolerance", s.cluster.tolerance, 1e-6, 1e6));
  s.cluster.min_size =
      std::size_t(r.number(cluster, "min_size", double(s.cluster.min_size), 1, 2147483647.0));
  s.cluster.max_size =
      std::size_t(r.number(cluster, "max_size", double(s.cluster.max_size), 1, 2147483647.0));
  s.cluster_remove_ground = r.boolean(cluster, "remove_ground", false);
  const QJsonObject segment = r.object(panels, "segment");
  s.segment_panel = r.panel(segment);
  s.segment.epsilon = float(r.number(segment, "epsilon", s.segment.epsilon, 1e-6, 1e6));
  if (const QString d = r.text(segment, "distance"); d == "perpendicular")
    s.segment.distance = SegmentDistance::Perpendicular;
  else if (!d.isEmpty() && d != "vertical")
    r.fail("distance", "must be vertical or perpendicular");
  s.segment.row_pitch = float(r.number(segment, "row_pitch", s.segment.row_pitch, 1e-9, 1e6));
  s.segment.median = int(r.number(segment, "median", 0, 0, 5));
  if (s.segment.median != 0 && s.segment.median != 3 && s.segment.median != 5)
    r.fail("median", "must be 0, 3 or 5");
  const QJsonObject filter = r.object(panels, "filter");
  s.filter_panel = r.panel(filter);
  if (const QJsonObject c = r.object(filter, "crop"); !c.isEmpty())
    s.filter.crop =
        CropBoxParams{r.triple(c, "min"), r.triple(c, "max"), r.boolean(c, "negative", false)};
  if (const QJsonObject v = r.object(filter, "voxel"); !v.isEmpty()) {
    const auto leaf = r.triple(v, "leaf");
    s.filter.voxel = VoxelGridParams{{float(leaf[0]), float(leaf[1]), float(leaf[2])},
                                     std::size_t(r.number(v, "min_points", 0, 0, 1e9))};
  }
  if (const QJsonObject o = r.object(filter, "statistical"); !o.isEmpty())
    s.filter.statistical = StatisticalOutlierParams{
        int(r.number(o, "mean_k", 50, 1, kMaxOutlierMeanK)), r.number(o, "stddev", 1, -1e6, 1e6),
        r.boolean(o, "negative", false)};
  if (const QJsonObject o = r.object(filter, "radius"); !o.isEmpty())
    s.filter.radius = RadiusOutlierParams{r.number(o, "radius", 0.5, 1e-9, 1e6),
                                          int(r.number(o, "min_neighbours", 2, 0, 1e6)),
                                          r.boolean(o, "negative", false)};
  if (const QJsonObject g = r.object(filter, "ground"); !g.isEmpty()) {
    GroundPlaneParams p;
    p.threshold = r.number(g, "threshold", p.threshold, 1e-9, 1e6);
    s.filter.ground = p;
  }
  const QJsonObject pipeline = r.object(panels, "pipeline");
  s.pipeline_panel = r.panel(pipeline);
  s.pipeline = r.object(pipeline, "preset");
  if (const QJsonObject o = r.object(json, "odometry"); !o.isEmpty()) {
    OdometrySettings& os = s.odometry;
    // Each name as the CLI takes it; a missing key keeps the default.
    const auto named = [&](const char* key, auto parse, auto& into, const QString& valid) {
      const QString t = r.text(o, key);
      if (t.isEmpty()) return;
      const auto v = parse(t.toStdString());
      if (!v) r.fail(key, "must be " + valid + ", not " + t);
      into = *v;
    };
    named(
        "method", [](const std::string& t) { return parse_method<IcpMethod>(t); }, os.method,
        QString::fromStdString(method_table(IcpMethod{}).names()));
    named("metric", parse_metric, os.params.metric, "point-to-point, point-to-plane or gicp");
    named("ground", parse_scan_ground, os.params.scan_ground, "auto, keep or remove");
    named("target", parse_odometry_target, os.params.target, "scan-to-map or scan-to-scan");
    os.params.map_scans = int(r.number(o, "map_scans", os.params.map_scans, 1, 1000));
    os.params.voxel = float(r.number(o, "voxel", os.params.voxel, 1e-6, 1e3));
    os.params.max_correspondence_distance =
        r.number(o, "max_distance", os.params.max_correspondence_distance, 1e-6, 1e6);
    try {
      validate(os.params);
    } catch (const InvalidArgument& e) {
      r.fail("odometry", QString::fromUtf8(e.what()));
    }
  }
  const QJsonObject view = r.object(json, "view");
  s.color_mode = int(r.number(view, "color_mode", 0, 0, 100));
  s.point_size = r.number(view, "point_size", 2, 1, 20);
  s.axes = r.boolean(view, "axes", true);
  if (const QJsonObject c = r.object(view, "camera"); !c.isEmpty()) {
    ui::VtkCloudView::CameraState cam;
    cam.position = r.triple(c, "position");
    cam.focal_point = r.triple(c, "focal_point");
    cam.view_up = r.triple(c, "view_up");
    cam.view_angle = r.number(c, "view_angle", 30, 1e-3, 179);
    cam.parallel_scale = r.number(c, "parallel_scale", 1, 1e-12, 1e12);
    cam.parallel = r.boolean(c, "parallel", false);
    s.camera = cam;
  }
  const QJsonObject window = r.object(json, "window");
  s.window_state = QByteArray::fromBase64(r.text(window, "state").toLatin1());
  s.geometry = QByteArray::fromBase64(r.text(window, "geometry").toLatin1());
  return s;
}

void write_session(const QString& path, const Session& s) {
  write_file(path, QJsonDocument(session_to_json(s, path)).toJson());
}

Session read_session(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly))
    throw IoError(path.toStdString(), "cannot open the session: " + f.errorString().toStdString());
  QJsonParseError e{};
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &e);
  if (e.error != QJsonParseError::NoError || !doc.isObject())
    throw IoError(path.toStdString(),
                  "not a session (JSON: " + e.errorString().toStdString() + ")");
  return session_from_json(doc.object(), path);
}

QString resolve_dataset_path(const QString& relative, const QString& absolute,
                             const QString& session_path, bool is_sequence) {
  // A sequence may be a pattern or a list file, not only a folder: any existing path will do,
  // and a pattern is taken as saved.
  const auto exists = [is_sequence](const QString& p) {
    return !p.isEmpty() && (QFileInfo::exists(p) || (is_sequence && p.contains('*')));
  };
  if (!relative.isEmpty()) {
    const QString joined =
        QDir::cleanPath(QFileInfo(session_path).absoluteDir().filePath(relative));
    if (exists(joined)) return joined;
  }
  return exists(absolute) ? absolute : QString();
}

}  // namespace cumulus::app
