// The stages in order, each the library's own call on the previous stage's output.
#include "objects/pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "objects/cuda/chain_gpu.h"

namespace cumulus {

namespace {

template <class Method>
Method method_of(const std::string& name, const char* stage) {
  if (const auto m = parse_method<Method>(name)) return *m;
  throw InvalidArgument(std::string(stage) + " has no method '" + name + "'");
}

}  // namespace

PipelineParams lidar_chain() {
  PipelineParams p;
  p.voxel = VoxelGridParams{{0.1f, 0.1f, 0.1f}, 0};
  GroundPlaneParams g;
  g.axis = {0, 0, 1};
  p.ground = g;
  p.cluster = ClusterParams{0.5f, 10, 100000};
  return p;
}

bool device_chain_takes(const PipelineParams& params) {
  return params.cluster && !params.crop && !params.statistical && !params.radius &&
         !params.range_ground;
}

namespace {

// The chain's progress in thousandths of its stages; without a caller, no callback reaches a
// stage, so each runs as it would alone (PCL's plain tree, what the benchmarks time).
class ChainReport {
 public:
  ChainReport(const PipelineProgress& progress, std::size_t stages)
      : progress_(progress), total_(1000 * std::max<std::size_t>(stages, 1)) {}

  // Before the next stage: throws Cancelled when told to stop.
  void next() { tell(1000 * begun_++); }
  void end() { tell(total_); }
  // What a stage that reports within itself is given.
  std::function<bool(std::size_t, std::size_t)> within() const {
    if (!progress_) return {};
    return [this](std::size_t done, std::size_t total) {
      const std::size_t at = 1000 * (begun_ - 1);  // the stage under way
      return progress_(at + (total ? std::min<std::size_t>(999, done * 1000 / total) : 0), total_);
    };
  }

 private:
  void tell(std::size_t done) const {
    if (progress_ && !progress_(done, total_)) throw Cancelled("pipeline cancelled");
  }

  const PipelineProgress& progress_;
  std::size_t total_;
  std::size_t begun_ = 0;  // stages begun
};

}  // namespace

PipelineResult run_pipeline(const PointCloud& input, const PipelineParams& params,
                            const std::string& name, const Point3f* page_locked,
                            const PipelineProgress& progress) {
  const auto chosen = parse_method<PipelineMethod>(name);
  if (!chosen)
    throw InvalidArgument("the pipeline's method is " + method_table(PipelineMethod{}).names() +
                          ", not '" + name + "'");
  if (params.ground && params.range_ground)
    throw InvalidArgument("the pipeline removes the ground one way: a plane or the range image");
  if (*chosen == PipelineMethod::Gpu && device_chain_takes(params)) {
    ChainReport report(progress, 1);
    report.next();
    PipelineResult r = run_chain_gpu(input, params, page_locked);
    report.end();
    return r;
  }
  ChainReport report(progress, std::size_t(params.crop.has_value()) + params.voxel.has_value() +
                                   params.statistical.has_value() + params.radius.has_value() +
                                   params.ground.has_value() + params.range_ground.has_value() +
                                   params.cluster.has_value());
  // Stage by stage: each stage's own call, cpu or gpu.
  const std::string method = *chosen == PipelineMethod::Cpu ? "cpu" : "gpu";
  WallTimer total;
  PipelineResult r;
  PointCloud cloud = input;
  const auto record = [&](const char* name, const std::string& m, std::size_t in, double ms,
                          StageTimes stages) {
    r.stages.push_back({name, m, in, cloud.size(), ms, std::move(stages)});
    if (cloud.empty())
      throw Error(std::string("pipeline: the ") + name + " stage left no point (" +
                  std::to_string(in) + " in); the input is untouched");
  };
  const auto filter = [&](const char* name, auto&& run) {
    report.next();
    const std::size_t in = cloud.size();
    FilterResult f = run(method_of<FilterMethod>(method, name));
    cloud = std::move(f.cloud);
    record(name, f.method, in, f.total_ms, std::move(f.stages));
  };
  if (params.crop)
    filter("crop box", [&](FilterMethod m) { return crop_box(cloud, *params.crop, m); });
  if (params.voxel)
    filter("voxel grid", [&](FilterMethod m) { return voxel_grid(cloud, *params.voxel, m); });
  if (params.statistical)
    filter("statistical outliers", [&](FilterMethod m) {
      return remove_statistical_outliers(cloud, *params.statistical, m);
    });
  if (params.radius)
    filter("radius outliers",
           [&](FilterMethod m) { return remove_radius_outliers(cloud, *params.radius, m); });
  r.filtered = cloud;
  const auto remove_ground = [&](const char* name, std::size_t in, GroundResult g) {
    r.ground_plane = g.plane;
    r.ground_points = g.ground.size();
    r.kept = off_ground(cloud, g.ground);
    r.ground = std::move(g.ground);
    cloud = gather_points(cloud, r.kept);
    record(name, g.method, in, g.total_ms, std::move(g.stages));
  };
  if (params.ground || params.range_ground) report.next();
  if (params.ground)
    remove_ground("ground plane", cloud.size(),
                  segment_ground_plane(cloud, *params.ground,
                                       method_of<GroundMethod>(method, "ground plane")));
  if (params.range_ground)
    remove_ground("range ground", cloud.size(),
                  segment_ground_range(cloud, *params.range_ground,
                                       method_of<RangeGroundMethod>(method, "range ground")));
  if (!params.ground && !params.range_ground) {
    r.kept.resize(cloud.size());
    for (std::size_t i = 0; i < cloud.size(); ++i)
      r.kept[i] = std::int32_t(i);
  }
  if (params.cluster) {
    report.next();
    const std::size_t in = cloud.size();
    ClusterResult c = euclidean_cluster(
        cloud, *params.cluster, method_of<ClusterMethod>(method, "clustering"), report.within());
    r.labels = std::move(c.labels);
    r.stages.push_back({"clustering", c.method, in, c.sizes.size(), c.total_ms, c.stages});
    WallTimer t;
    r.objects = describe_objects(cloud, r.labels, r.ground_plane);
    r.stages.push_back({"boxes", "cpu", c.sizes.size(), r.objects.size(), t.ms(), {}});
  }
  report.end();
  r.cloud = std::move(cloud);
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
