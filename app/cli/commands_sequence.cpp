// cumulus-cli sequence: one task over every frame of a sequence in one process (CUDA starts
// once), reader threads loading the next frames into a bounded queue while the current one is
// processed; a line of JSON per frame and a summary.
#include <condition_variable>
#include <filesystem>
#include <iomanip>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "args.h"
#include "cluster/cluster.h"
#include "cluster/cluster_export.h"
#include "commands.h"
#include "core/error.h"
#include "filter_args.h"
#include "interrupt.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "json.h"
#include "sequence/sequence.h"

namespace cumulus::cli {

namespace {

struct Frame {
  std::size_t index = 0;
  std::string path;
  std::optional<PointCloud> cloud;
  std::string error;  // why it could not be read
  double read_ms = 0;
};

// Frames read by a few threads, at most `capacity` ahead of the consumer, handed out in order.
class FrameReader {
 public:
  FrameReader(std::vector<std::string> paths, std::size_t capacity, std::size_t threads)
      : paths_(std::move(paths)), capacity_(capacity) {
    for (std::size_t t = 0; t < threads; ++t)
      threads_.emplace_back([this] { run(); });
  }
  ~FrameReader() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (auto& t : threads_)
      t.join();
  }
  // The next frame in order, or nothing after the last.
  std::optional<Frame> next() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return delivered_ == paths_.size() || ready_.count(delivered_); });
    if (delivered_ == paths_.size()) return std::nullopt;
    const auto it = ready_.find(delivered_);
    Frame f = std::move(it->second);
    ready_.erase(it);
    ++delivered_;
    changed_.notify_all();
    return f;
  }

 private:
  void run() {
    for (;;) {
      std::size_t i = 0;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] {
          return stop_ || next_ >= paths_.size() || next_ < delivered_ + capacity_;
        });
        if (stop_ || next_ >= paths_.size()) return;
        i = next_++;
      }
      Frame f{i, paths_[i], std::nullopt, {}, 0};
      WallTimer t;
      try {
        f.cloud = load_cloud(paths_[i]);
        if (f.cloud->size() == f.cloud->count_non_finite()) f.error = "no finite point";
      } catch (const std::exception& e) {
        f.error = e.what();
      }
      f.read_ms = t.ms();
      {
        std::lock_guard lock(mutex_);
        ready_.emplace(i, std::move(f));
      }
      changed_.notify_all();
    }
  }

  std::vector<std::string> paths_;
  std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::size_t, Frame> ready_;
  std::size_t next_ = 0, delivered_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

std::string stem(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

}  // namespace

int run_sequence(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"json", "strict", "crop-negative", "keep-outliers", "allow-precision-loss"},
               {"task",  "method",     "queue",     "readers",  "out",          "crop",
                "voxel", "min-points", "sor",       "ror",      "ground",       "ground-threshold",
                "level", "tolerance",  "min",       "max",      "rows",         "columns",
                "fov",   "epsilon",    "max-slope", "max-step", "sensor-height"});
  a.expect_positionals(1, 1, "cumulus-cli sequence PATH --task cluster|objects [options]");
  const std::string task = a.get("task", "");
  if (task != "cluster" && task != "objects")
    throw UsageError("sequence needs --task cluster or --task objects");
  const std::string method = a.get("method", method_name(default_method<ClusterMethod>()));
  std::optional<ClusterMethod> cluster_method;
  if (task == "cluster") {
    cluster_method = parse_method<ClusterMethod>(method);
    if (!cluster_method)
      throw UsageError("unknown method '" + method + "' (" + method_table(ClusterMethod{}).names() +
                       ")");
  } else if (method != "cpu" && method != "gpu") {
    throw UsageError("unknown method '" + method + "' (cpu, gpu)");
  }
  ClusterParams cluster;
  cluster.tolerance = float(a.get_double("tolerance", 0.5));
  cluster.min_size = std::size_t(std::max<long long>(1, a.get_int("min", 1)));
  if (a.has("max")) cluster.max_size = std::size_t(std::max<long long>(1, a.get_int("max", 1)));
  validate(cluster);
  const PipelineParams pipeline = task == "objects" ? pipeline_params(a) : PipelineParams{};
  const long long queue = a.get_int("queue", 8);
  if (queue < 1 || queue > 1024) throw UsageError("--queue takes 1 to 1024 frames");
  const long long readers = a.get_int("readers", 4);
  if (readers < 1 || readers > 64) throw UsageError("--readers takes 1 to 64 threads");
  const std::vector<std::string> paths = sequence_frames(a.positionals()[0]);
  const std::string dir = a.get("out", "");
  if (!dir.empty()) std::filesystem::create_directories(dir);
  const bool json = a.flag("json"), strict = a.flag("strict");

  RunProgress progress("sequence (" + task + ", " + method + ")");
  FrameReader reader(paths, std::size_t(queue), std::size_t(readers));
  WallTimer total;
  std::size_t done = 0, failed = 0;
  double read_ms = 0, compute_ms = 0;
  while (auto frame = reader.next()) {
    read_ms += frame->read_ms;
    QJsonObject line{{"frame", double(frame->index)},
                     {"file", QString::fromStdString(frame->path)},
                     {"read_ms", frame->read_ms}};
    std::string error = frame->error;
    if (error.empty()) {
      try {
        const PointCloud& cloud = *frame->cloud;
        line["points"] = double(cloud.size());
        if (task == "cluster") {
          const ClusterResult r = euclidean_cluster(cloud, cluster, *cluster_method);
          compute_ms += r.total_ms;
          line["clusters"] = double(r.sizes.size());
          line["largest"] = r.sizes.empty() ? 0.0 : double(r.sizes.front());
          line["compute_ms"] = r.total_ms;
          line["stages_ms"] = stages_json(r.stages);
          if (!dir.empty())
            save_cluster_csv(dir + "/" + stem(frame->path) + ".clusters.csv", cloud, r);
        } else {
          const PipelineResult r = run_pipeline(cloud, pipeline, method);
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
      if (!json) out << "frame " << frame->index << " (" << frame->path << "): " << error << '\n';
    } else {
      ++done;
      if (!json)
        out << "frame " << frame->index << ": "
            << std::size_t(line[task == "cluster" ? "clusters" : "objects"].toDouble())
            << (task == "cluster" ? " clusters, " : " objects, ") << std::fixed
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
  const QJsonObject summary{{"summary", true},
                            {"frames", double(paths.size())},
                            {"processed", double(done)},
                            {"failed", double(failed)},
                            {"frames_per_s", seconds > 0 ? double(done) / seconds : 0.0},
                            {"total_ms", total.ms()},
                            {"read_ms", read_ms},
                            {"compute_ms", compute_ms}};
  if (json)
    out << QJsonDocument(summary).toJson(QJsonDocument::Compact).toStdString() << '\n';
  else
    out << done << " of " << paths.size() << " frames in " << std::fixed << std::setprecision(3)
        << seconds << " s (" << summary["frames_per_s"].toDouble() << " frames/s); read " << read_ms
        << " ms on the reader threads, compute " << compute_ms << " ms\n";
  return failed ? 1 : 0;
}

}  // namespace cumulus::cli
