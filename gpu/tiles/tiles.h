#pragma once
// Neighbour search, normals and features beyond one call (GPU memory, or the cap of
// set_gpu_memory_limit): a coarse grid over the points, the queries taken in runs along its
// cells, each run (a tile) with the targets of the cells within reach of its queries, one call
// per tile, results put back in place. Exact: a query's reach covers every point its result
// depends on, and a call sees its points in the input's order, so even distance ties resolve as
// over the whole input (for the GPU methods, which order ties by index; FLANN orders them by its
// tree, so the CPU method's ties may pick another of the equally distant targets).
//
// Reach per query: a radius search's radius; the k nearest's k-th distance, which a first pass
// bounds (each tile's own k-th distance, checked against the tile's faces; the few queries it
// cannot vouch for go again with that bound as their reach); a normal's neighbourhood; a PFH's
// neighbourhood; an FPFH's neighbourhood plus its neighbours' (their histograms come in too).
// Features take their normals from a tiled normals pass first.
#include <cstddef>
#include <functional>
#include <limits>
#include <span>

#include "features/features.h"
#include "nns/nns.h"

namespace cumulus {

struct TileOptions {
  // Most points one call may take (targets and queries together); 0: what the method's device
  // memory per point allows under the GPU memory cap (unbounded for CPU methods without one).
  std::size_t max_tile_points = 0;
  // Called after each call with (calls done, calls planned so far: a later pass adds to it);
  // returning false stops the run with Cancelled. Normals and features that fit in one call
  // also report within it, in searches (features.h's FeatureProgress), so that a CPU run
  // (PCL's, which never tiles) can be stopped while it runs.
  std::function<bool(std::size_t, std::size_t)> progress;
};

// The same results as knn_search / radius_search / estimate_normals / compute_features; a run
// that fits in one call is that one call. InvalidArgument when the cells within one query's
// reach hold more than max_tile_points points (a huge radius, or a large k in a sparse cloud).
KnnResult knn_search_tiled(std::span<const Point3f> targets, std::span<const Point3f> queries,
                           int k, NnsMethod method,
                           float max_distance = std::numeric_limits<float>::infinity(),
                           const TileOptions& options = {});
RadiusResult radius_search_tiled(std::span<const Point3f> targets, std::span<const Point3f> queries,
                                 float radius, NnsMethod method, std::size_t max_neighbours = 0,
                                 const TileOptions& options = {});
NormalsResult estimate_normals_tiled(const PointCloud& cloud, const NormalParams& params,
                                     FeatureMethod method, const TileOptions& options = {});
FeatureResult compute_features_tiled(const PointCloud& cloud, const FeatureParams& params,
                                     FeatureMethod method,
                                     const std::vector<Point3f>* normals = nullptr,
                                     const TileOptions& options = {});

// Points one call of a method takes before the plain entry points tile on their own: device
// memory per point (an estimate from the method's buffers) within the GPU memory cap, or, for
// large clouds without a cap, the device's free memory. Unbounded for CPU methods.
std::size_t nns_call_capacity(NnsMethod method, int k, std::size_t points);
std::size_t normals_call_capacity(FeatureMethod method, const NormalParams& params,
                                  std::size_t points);
std::size_t features_call_capacity(FeatureMethod method, const FeatureParams& params,
                                   bool normals_given, std::size_t points);

}  // namespace cumulus
