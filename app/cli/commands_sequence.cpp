// cumulus-cli sequence: one task over every frame of a sequence in one process (CUDA starts
// once), reader threads loading the next frames into a bounded queue while the current one is
// processed; a line of JSON per frame and a summary.
#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <iomanip>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "args.h"
#include "cluster/cluster.h"
#include "cluster/cluster_export.h"
#include "commands.h"
#include "core/device.h"
#include "core/error.h"
#include "feature_args.h"
#include "filter_args.h"
#include "frame_reader.h"
#include "icp_args.h"
#include "interrupt.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "io/projection.h"
#include "json.h"
#include "segment/segment.h"
#include "sequence/odometry.h"
#include "sequence/sequence.h"
#include "sequence/trajectory.h"

namespace cumulus::cli {

namespace {

std::string stem(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

// What a frame's line says in text: its clusters, objects or position.
std::string frame_text(const QJsonObject& line, const std::string& task) {
  std::ostringstream t;
  if (task == "odometry") {
    const QJsonArray p = line["pose"].toArray();
    t << std::fixed << std::setprecision(2) << "at (" << p[3].toDouble() << ", " << p[7].toDouble()
      << ", " << p[11].toDouble() << ") m, " << line["iterations"].toInt() << " iterations, ";
  } else {
    const char* what = task == "cluster"    ? "clusters"
                       : task == "segment"  ? "segments"
                       : task == "features" ? "descriptors"
                                            : "objects";
    t << std::size_t(line[what].toDouble()) << ' ' << what << ", ";
  }
  return t.str();
}

OdometryParams odometry_params(const Args& a) {
  OdometryParams p;
  p.voxel = a.get_float("voxel", p.voxel);
  p.map_voxel = a.get_float("map-voxel", p.map_voxel);
  p.max_correspondence_distance = a.get_double("max-distance", p.max_correspondence_distance);
  p.max_iterations = int(a.get_int("max-iterations", p.max_iterations));
  p.map_scans = int(a.get_int("map-scans", p.map_scans));
  const std::string target = a.get("odometry", "scan-to-map");
  const auto parsed = parse_odometry_target(target);
  if (!parsed) throw UsageError("--odometry is scan-to-map or scan-to-scan, not '" + target + "'");
  p.target = *parsed;
  p.motion_prior = !a.flag("no-motion-prior");
  const std::string ground = a.get("scan-ground", "auto");
  const auto scan_ground = parse_scan_ground(ground);
  if (!scan_ground) throw UsageError("--scan-ground is auto, keep or remove, not '" + ground + "'");
  p.scan_ground = *scan_ground;
  if (a.has("metric")) {
    const auto m = parse_metric(a.get("metric"));
    if (!m)
      throw UsageError("--metric is point-to-point, point-to-plane or gicp, not '" +
                       a.get("metric") + "'");
    p.metric = *m;
  }
  gicp_args(a, p.metric, p.gicp);
  p.normals_k = int(a.get_int("normals-k", p.normals_k));
  kernel_args(a, p.kernel, p.kernel_scale);
  validate(p);
  return p;
}

QJsonArray pose_json(const Pose& p) {
  QJsonArray a;
  for (int k = 0; k < 12; ++k)
    a.append(p(k / 4, k % 4));
  return a;
}

// The estimate against the ground truth, into the summary; the drift of every frame to DIR.
void add_errors(QJsonObject& summary, const Trajectory& estimate, const std::string& truth_path,
                const std::string& dir) {
  const Trajectory truth = relative_to_first(read_kitti_poses(truth_path));
  if (truth.size() != estimate.size())
    throw Error("the ground truth " + truth_path + " has " + std::to_string(truth.size()) +
                " poses for " + std::to_string(estimate.size()) + " frames");
  const TrajectoryErrors e = trajectory_errors(estimate, truth);
  summary["path_length_m"] = e.path_length;
  summary["ate_rmse_m"] = e.ate_rmse;
  summary["ate_max_m"] = e.ate_max;
  summary["rpe_translation_m"] = e.rpe_translation;
  summary["rpe_rotation_deg"] = e.rpe_rotation_deg;
  summary["drift_percent"] = e.drift_percent;
  summary["drift_deg_per_m"] = e.drift_deg_per_m;
  if (dir.empty()) return;
  AtomicOstream csv(dir + "/drift.csv");
  csv << "frame,drift_percent\n";
  for (std::size_t i = 0; i < e.drift_by_frame.size(); ++i)
    csv << i << ',' << e.drift_by_frame[i] << '\n';
  csv.commit();
}

}  // namespace

int run_sequence(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv,
               {"json", "strict", "crop-negative", "keep-outliers", "allow-precision-loss",
                "no-motion-prior", "page-locked"},
               {"task",
                "method",
                "queue",
                "readers",
                "out",
                "crop",
                "voxel",
                "min-points",
                "sor",
                "ror",
                "ground",
                "ground-threshold",
                "level",
                "tolerance",
                "min",
                "max",
                "rows",
                "columns",
                "fov",
                "epsilon",
                "max-slope",
                "max-step",
                "sensor-height",
                "odometry",
                "max-distance",
                "max-iterations",
                "map-scans",
                "map-voxel",
                "scan-ground",
                "metric",
                "gicp-k",
                "gicp-inner-iterations",
                "gicp-gradient-tolerance",
                "gicp-translation-epsilon",
                "gicp-rotation-epsilon",
                "kernel",
                "kernel-scale",
                "poses",
                "pose-format",
                "ground-truth",
                "times",
                "scale",
                "distance",
                "median",
                "descriptor",
                "k",
                "radius",
                "normals-k",
                "normals-radius",
                "viewpoint"});
  a.expect_positionals(
      1, 1, "cumulus-cli sequence PATH --task cluster|objects|odometry|segment|features [options]");
  const std::string task = a.get("task", "");
  if (task != "cluster" && task != "objects" && task != "odometry" && task != "segment" &&
      task != "features")
    throw UsageError("sequence needs --task cluster, objects, odometry, segment or features");
  const std::string method = a.get("method", method_name(default_method<ClusterMethod>()));
  std::optional<ClusterMethod> cluster_method;
  std::optional<Odometry> odometry;
  std::optional<SegmentMethod> segment_method;
  SegmentParams segment;
  std::optional<FeatureMethod> feature_method;
  FeatureParams features;
  if (task == "features") {
    feature_method =
        parse_method<FeatureMethod>(a.get("method", method_name(default_method<FeatureMethod>())));
    if (!feature_method)
      throw UsageError("unknown method '" + a.get("method") + "' (" +
                       method_table(FeatureMethod{}).names() + ")");
    features = feature_params(a);
    validate(features, *feature_method, false);
  } else if (task == "segment") {
    segment_method =
        parse_method<SegmentMethod>(a.get("method", method_name(default_method<SegmentMethod>())));
    if (!segment_method)
      throw UsageError("unknown method '" + a.get("method") + "' (" +
                       method_table(SegmentMethod{}).names() + ")");
    segment.epsilon = a.required_float("epsilon", "sequence --task segment", "metres");
    const std::string d = a.get("distance", "vertical");
    if (d != "vertical" && d != "perpendicular")
      throw UsageError("--distance must be vertical or perpendicular");
    segment.distance = d == "vertical" ? SegmentDistance::Vertical : SegmentDistance::Perpendicular;
    segment.median = int(a.get_int("median", 0));
    validate(segment);
  } else if (task == "odometry") {
    const auto icp_method = parse_method<IcpMethod>(method);
    if (!icp_method)
      throw UsageError("unknown method '" + method + "' (" + method_table(IcpMethod{}).names() +
                       ")");
    odometry.emplace(odometry_params(a), *icp_method,
                     is_gpu_method(*icp_method) ? FilterMethod::Gpu : FilterMethod::Cpu);
  } else if (task == "cluster") {
    cluster_method = parse_method<ClusterMethod>(method);
    if (!cluster_method)
      throw UsageError("unknown method '" + method + "' (" + method_table(ClusterMethod{}).names() +
                       ")");
  } else if (!parse_method<PipelineMethod>(method)) {
    throw UsageError("unknown method '" + method + "' (" + method_table(PipelineMethod{}).names() +
                     ")");
  }
  ClusterParams cluster;
  cluster.tolerance = a.get_float("tolerance", 0.5);
  cluster.min_size = std::size_t(std::max<long long>(1, a.get_int("min", 1)));
  if (a.has("max")) cluster.max_size = std::size_t(std::max<long long>(1, a.get_int("max", 1)));
  validate(cluster);
  const PipelineParams pipeline = task == "objects" ? pipeline_params(a) : PipelineParams{};
  const std::string pose_format = a.get("pose-format", "kitti");
  if (pose_format != "kitti" && pose_format != "tum")
    throw UsageError("--pose-format is kitti or tum, not '" + pose_format + "'");
  for (const char* o : {"poses", "ground-truth", "times"})
    if (a.has(o) && task != "odometry")
      throw UsageError(std::string("--") + o + " belongs to --task odometry");
  const long long queue = a.get_int("queue", 8);
  if (queue < 1 || queue > 1024) throw UsageError("--queue takes 1 to 1024 frames");
  const long long readers = a.get_int("readers", 4);
  if (readers < 1 || readers > 64) throw UsageError("--readers takes 1 to 64 threads");
  const std::vector<std::string> paths = sequence_frames(a.positionals()[0]);
  const std::string dir = a.get("out", "");
  if (!dir.empty()) std::filesystem::create_directories(dir);
  const bool json = a.flag("json"), strict = a.flag("strict");

  RunProgress progress("sequence (" + task + ", " + method + ")");
  // On request the readers hand the frames over page-locked, for the methods that take raw
  // points (GPU clustering, the device-resident pipeline): their upload is a DMA, but the
  // readers copy every frame once more. Measured on an H200 host with 4 readers, compute fell
  // by 0.05 ms a frame and frames/s stayed equal or fell (reading is the bound), so it is off
  // by default.
  const bool page_locked = a.flag("page-locked") && query_device().available &&
                           ((cluster_method && is_gpu_method(*cluster_method)) ||
                            (task == "objects" && method == "gpu" && device_chain_takes(pipeline)));
  PinnedPool pool;
  FrameReader reader(paths, std::size_t(queue), std::size_t(readers),
                     parse_depth_scale(a.get("scale", "mm")), page_locked ? &pool : nullptr);
  WallTimer total;
  std::size_t done = 0, failed = 0;
  double read_ms = 0, compute_ms = 0;
  ClusterResult clustered;  // every frame's, its vectors' memory kept from frame to frame
  while (auto frame = reader.next()) {
    read_ms += frame->read_ms;
    QJsonObject line{{"frame", double(frame->index)},
                     {"file", QString::fromStdString(frame->path)},
                     {"read_ms", frame->read_ms}};
    std::string error = frame->error;
    if (error.empty()) {
      try {
        if (task == "segment") {
          // A cloud frame becomes a spinning LiDAR's range image, as cumulus-cli segment does.
          const DepthImage img =
              frame->depth ? *frame->depth : cloud_to_range_image(*frame->cloud, RangeImageModel{});
          const SegmentResult r = segment_columns(img, segment, *segment_method);
          compute_ms += r.total_ms;
          line["pixels"] = double(img.size());
          line["segments"] = double(r.segment_count());
          line["compute_ms"] = r.total_ms;
          line["stages_ms"] = stages_json(r.stages);
          if (!dir.empty())
            save_segments(dir + "/" + stem(frame->path) + ".segments.csv", img, r,
                          SegmentFormat::Csv);
        } else if (!frame->cloud) {
          throw Error("a depth image: only --task segment takes depth images");
        }
        static const PointCloud kNoCloud;
        const PointCloud& cloud = frame->cloud ? *frame->cloud : kNoCloud;  // no copy
        if (frame->cloud) line["points"] = double(cloud.size());
        if (task == "segment") {
          // done above
        } else if (task == "features") {
          const FeatureResult r = compute_features(cloud, features, *feature_method);
          compute_ms += r.total_ms;
          line["descriptors"] = double(r.size() - r.nan_histograms);
          line["bins"] = r.bins;
          line["compute_ms"] = r.total_ms;
          line["stages_ms"] = stages_json(r.stages);
          if (!dir.empty()) write_features_pcd(dir + "/" + stem(frame->path) + ".features.pcd", r);
        } else if (task == "odometry") {
          const OdometryStep st = odometry->add(cloud);
          compute_ms += st.total_ms;
          line["pose"] = pose_json(st.pose);
          line["scan_points"] = double(st.points);
          line["ground_points"] = double(st.ground_points);  // left out of the scan
          line["iterations"] = st.iterations;
          line["correspondences"] = double(st.correspondences);
          line["fitness"] = st.fitness;
          if (!st.converged) line["warning"] = "no correspondences: the predicted pose kept";
          line["compute_ms"] = st.total_ms;
          line["stages_ms"] =
              QJsonObject{{"voxel grid", st.filter_ms}, {"icp", st.icp_ms}, {"map", st.map_ms}};
        } else if (task == "cluster") {
          euclidean_cluster(frame->pinned ? frame->pinned->points.get() : cloud.points.data(),
                            cloud.size(), cluster, *cluster_method, clustered);
          const ClusterResult& r = clustered;
          compute_ms += r.total_ms;
          line["clusters"] = double(r.sizes.size());
          line["largest"] = r.sizes.empty() ? 0.0 : double(r.sizes.front());
          line["compute_ms"] = r.total_ms;
          line["stages_ms"] = stages_json(r.stages);
          if (!dir.empty())
            save_cluster_csv(dir + "/" + stem(frame->path) + ".clusters.csv", cloud, r);
        } else {
          const PipelineResult r = run_pipeline(
              cloud, pipeline, method, frame->pinned ? frame->pinned->points.get() : nullptr);
          compute_ms += r.total_ms;
          line["objects"] = double(r.objects.size());
          line["ground_points"] = double(r.ground_points);
          line["compute_ms"] = r.total_ms;
          QJsonArray stages;
          for (const auto& s : r.stages)
            stages.append(QJsonObject{{"stage", QString::fromStdString(s.name)},
                                      {"out", double(s.points_out)},
                                      {"ms", s.ms}});
          line["stages"] = stages;
          if (!dir.empty()) {
            AtomicOstream csv(dir + "/" + stem(frame->path) + ".objects.csv");
            csv << "id,points,cx,cy,cz,length,width,height,above_ground\n" << std::setprecision(10);
            for (const auto& o : r.objects)
              csv << o.id << ',' << o.points << ',' << o.centroid[0] << ',' << o.centroid[1] << ','
                  << o.centroid[2] << ',' << o.box.size[0] << ',' << o.box.size[1] << ','
                  << o.box.size[2] << ',' << o.above_ground << '\n';
            csv.commit();
          }
        }
      } catch (const Cancelled&) {
        throw;
      } catch (const Error& e) {
        error = e.what();
      }
    }
    if (!error.empty()) {
      ++failed;
      line["error"] = QString::fromStdString(error);
      if (odometry && odometry->poses().size() == frame->index)
        line["pose"] = pose_json(odometry->skip());
      if (!json) out << "frame " << frame->index << " (" << frame->path << "): " << error << '\n';
    } else {
      ++done;
      if (!json)
        out << "frame " << frame->index << ": " << frame_text(line, task) << std::fixed
            << std::setprecision(3) << line["compute_ms"].toDouble() << " ms\n";
    }
    if (json) out << QJsonDocument(line).toJson(QJsonDocument::Compact).toStdString() << '\n';
    out.flush();
    if (!error.empty() && strict)
      throw Error("frame " + std::to_string(frame->index) + " (" + frame->path + "): " + error +
                  " (--strict: stopped; the frames before it are written)");
    if (!progress(frame->index + 1, paths.size())) throw Cancelled("sequence stopped by Ctrl-C");
  }
  const double seconds = total.ms() / 1000;
  QJsonObject summary{{"summary", true},
                      {"frames", double(paths.size())},
                      {"processed", double(done)},
                      {"failed", double(failed)},
                      {"frames_per_s", seconds > 0 ? double(done) / seconds : 0.0},
                      {"total_ms", total.ms()},
                      {"read_ms", read_ms},
                      {"compute_ms", compute_ms},
                      {"page_locked", page_locked}};
  if (odometry) {
    const Trajectory& poses = odometry->poses();
    std::vector<double> times;
    if (a.has("times")) times = read_times(a.get("times"));
    if (a.has("poses")) {
      if (pose_format == "tum")
        save_tum_poses(a.get("poses"), poses, times);
      else
        save_kitti_poses(a.get("poses"), poses);
    }
    if (!dir.empty()) save_kitti_poses(dir + "/poses.txt", poses);
    if (a.has("ground-truth")) add_errors(summary, poses, a.get("ground-truth"), dir);
  }
  if (json)
    out << QJsonDocument(summary).toJson(QJsonDocument::Compact).toStdString() << '\n';
  else
    out << done << " of " << paths.size() << " frames in " << std::fixed << std::setprecision(3)
        << seconds << " s (" << summary["frames_per_s"].toDouble() << " frames/s); read " << read_ms
        << " ms on the reader threads, compute " << compute_ms << " ms\n";
  if (!json && summary.contains("ate_rmse_m"))
    out << "against the ground truth (" << summary["path_length_m"].toDouble() << " m): ATE "
        << summary["ate_rmse_m"].toDouble() << " m RMSE, RPE "
        << summary["rpe_translation_m"].toDouble() << " m and "
        << summary["rpe_rotation_deg"].toDouble() << " deg a frame, drift "
        << summary["drift_percent"].toDouble() << " % and " << summary["drift_deg_per_m"].toDouble()
        << " deg/m\n";
  return failed ? 1 : 0;
}

}  // namespace cumulus::cli
