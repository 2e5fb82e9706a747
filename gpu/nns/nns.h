#pragma once
// Exact nearest-neighbour search: k nearest and fixed-radius neighbours of query points among
// target points, with one public operation per query kind and a CPU (FLANN kd-tree, as PCL) and
// three GPU implementations. Every GPU method returns the same neighbours in the same order:
// ascending squared distance (float, computed as FLANN does), ties by ascending target index.
// Non-finite target points are never returned; non-finite queries get no neighbours. GPU
// methods whose input exceeds one call (nns_call_capacity, cumulus/tiles.h) search in slabs with
// the same results.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/point_cloud.h"
#include "core/timing.h"
#include "core/zeroed_vector.h"

#define CUMULUS_METHOD_ENUM NnsMethod
#define CUMULUS_METHOD_ROWS "nns/nns_methods.def"
#include "core/method_enum.h"

namespace cumulus {

struct KnnResult {
  int k = 0;
  // queries * k entries, row per query; missing neighbours (fewer than k finite targets, or
  // beyond max_distance) are index -1 with distance +inf.
  // Sized without being zero-filled (core/zeroed_vector.h): every method writes every entry.
  ZeroedVector<std::int32_t> indices;
  ZeroedVector<float> sq_distances;
  std::string method;
  StageTimes stages;
  double total_ms = 0;
};

struct RadiusResult {
  // CSR: neighbours of query q are entries offsets[q] .. offsets[q + 1].
  std::vector<std::uint32_t> offsets;
  ZeroedVector<std::int32_t> indices;  // as KnnResult's
  ZeroedVector<float> sq_distances;
  std::string method;
  StageTimes stages;
  double total_ms = 0;
};

// Largest k the GPU methods accept (their per-query lists live in registers and local memory).
constexpr int kMaxKnnK = 256;

// The argument checks of knn_search and radius_search: InvalidArgument as described below.
void validate_knn(int k, NnsMethod method, float max_distance);
void validate_radius(float radius);

// Points come as spans, so callers search any contiguous points in place (a vector, a numpy
// array's memory in the Python module) without copying them into a vector first.
//
// The k nearest targets of every query. With max_distance finite, only targets with squared
// distance <= max_distance^2 count (the ICP correspondence rule). Throws InvalidArgument for
// k < 1, k > kMaxKnnK on the GPU, or a negative or NaN max_distance; GpuError without a GPU.
KnnResult knn_search(std::span<const Point3f> targets, std::span<const Point3f> queries, int k,
                     NnsMethod method, float max_distance = std::numeric_limits<float>::infinity());

// All targets with squared distance < radius^2 (strict, as FLANN's radius search), sorted as
// above. max_neighbours > 0 keeps only the nearest that many.
RadiusResult radius_search(std::span<const Point3f> targets, std::span<const Point3f> queries,
                           float radius, NnsMethod method, std::size_t max_neighbours = 0);

// The above as one call of the method, never tiled: what the tiling layer (tiles/tiles.h) runs
// on each tile. knn_search and radius_search are this call when the input fits one, the tiled
// search otherwise; nothing below the tiling layer calls back up into it.
KnnResult knn_search_call(std::span<const Point3f> targets, std::span<const Point3f> queries, int k,
                          NnsMethod method,
                          float max_distance = std::numeric_limits<float>::infinity());
RadiusResult radius_search_call(std::span<const Point3f> targets, std::span<const Point3f> queries,
                                float radius, NnsMethod method, std::size_t max_neighbours = 0);

}  // namespace cumulus
