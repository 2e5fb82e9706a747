#pragma once
// From a raw scan to objects: crop box, voxel grid, statistical and radius outlier removal,
// ground-plane removal, Euclidean clustering and boxes, each stage optional, with one method
// name for all (cpu: PCL's classes, PCL's tutorial chain; gpu: ours). Each stage is the
// library's own call, so every stage's result is what that call gives on the previous stage's
// output.
#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "core/point_cloud.h"
#include "core/timing.h"
#include "core/zeroed_vector.h"
#include "filter/filter.h"
#include "ground/ground.h"
#include "ground/range_ground.h"
#include "objects/objects.h"

#define CUMULUS_METHOD_ENUM PipelineMethod
#define CUMULUS_METHOD_ROWS "objects/pipeline_methods.def"
#include "core/method_enum.h"

namespace cumulus {

struct PipelineParams {
  std::optional<CropBoxParams> crop;
  std::optional<VoxelGridParams> voxel;
  std::optional<StatisticalOutlierParams> statistical;
  std::optional<RadiusOutlierParams> radius;
  std::optional<GroundPlaneParams> ground;        // removed before clustering (a RANSAC plane)
  std::optional<RangeGroundParams> range_ground;  // or the range image's ground (not both)
  std::optional<ClusterParams> cluster;           // and the objects of its clusters
};

struct PipelineStage {
  std::string name;  // "crop box", "voxel grid", ...
  std::string method;
  std::size_t points_in = 0, points_out = 0;
  double ms = 0;
  StageTimes stages;
};

struct PipelineResult {
  std::vector<PipelineStage> stages;
  PointCloud filtered;               // what the filters left: the ground stage's input
  std::vector<std::int32_t> ground;  // its ground points (indices into filtered), ascending
  std::vector<std::int32_t> kept;    // the points of `cloud`, as indices into filtered
  PointCloud cloud;  // what the last filter left, off the ground: the clustered points
  std::optional<std::array<double, 4>> ground_plane;  // range image: the plane fitted to it
  std::size_t ground_points = 0;
  UnfilledVector<std::int32_t> labels;  // per point of `cloud` (clustering on), -1 for none
  std::vector<DetectedObject> objects;
  double total_ms = 0;
};

// A LiDAR scan's chain at street scale: voxel grid 0.1 m, the level ground plane (0.2 m)
// removed, clusters of 10 to 100,000 points at 0.5 m, boxes.
PipelineParams lidar_chain();

// Whether `gpu` keeps the points on the device from stage to stage for these stages:
// clustering, with or without a voxel grid and a ground plane before it; crop boxes, outlier
// filters and the range-image ground go stage by stage.
bool device_chain_takes(const PipelineParams& params);

// Told how far a chain is: (done, total) in thousandths of its stages, the clustering's share
// moving with its searches (PCL's) or slabs, every other stage's at its end. Returning false
// stops the chain with Cancelled before its next stage, or within clustering. PCL's filters and
// ground RANSAC keep their kd-tree to themselves and have no progress: they run to their end
// first, as do the GPU's stages (milliseconds).
using PipelineProgress = std::function<bool(std::size_t done, std::size_t total)>;

// "cpu" or "gpu": every stage with its method of that name. Error naming the stage when a
// stage leaves no point for the next (everything cropped, every point an outlier, ...).
// `page_locked`, when given, holds the cloud's points (the same values) in page-locked memory,
// which the device-resident chain uploads by DMA (sequences' readers fill such buffers); the
// other methods read the cloud itself.
PipelineResult run_pipeline(const PointCloud& cloud, const PipelineParams& params,
                            const std::string& method, const Point3f* page_locked = nullptr,
                            const PipelineProgress& progress = {});

}  // namespace cumulus
