#pragma once
// Euclidean cluster extraction with PCL's semantics: two points are neighbours when their
// squared distance is strictly below tolerance^2; clusters are the connected components;
// clusters outside [min_size, max_size] are dropped whole. Every method returns the same
// canonical result, so results compare with ==.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/point_cloud.h"
#include "core/timing.h"
#include "core/zeroed_vector.h"

#define CUMULUS_METHOD_ENUM ClusterMethod
#define CUMULUS_METHOD_ROWS "cluster/cluster_methods.def"
#include "core/method_enum.h"

namespace cumulus {

// Called as a long run goes with (work done, total work); returning false stops the run, which
// then throws Cancelled.
using ClusterProgress = std::function<bool(std::size_t done, std::size_t total)>;

struct ClusterParams {
  float tolerance = 0.5f;  // metres
  std::size_t min_size = 1;
  std::size_t max_size = std::numeric_limits<std::int32_t>::max();
};

struct ClusterResult {
  // One label per input point: the cluster's rank in `sizes`, or -1 for points in dropped
  // clusters and for non-finite points. Every method writes each label (a fresh result's are not
  // zero-filled first: core/zeroed_vector.h).
  UnfilledVector<std::int32_t> labels;
  // Sizes of the kept clusters, largest first; equal sizes ordered by their smallest point
  // index (PCL leaves that order unspecified; a fixed order makes results comparable).
  std::vector<std::size_t> sizes;
  std::size_t non_finite = 0;        // points skipped because a coordinate is NaN or Inf
  std::size_t dropped_clusters = 0;  // clusters outside [min_size, max_size]
  std::string method;
  StageTimes stages;    // per-stage times in ms (upload, grid, graph, labelling, download, ...)
  double total_ms = 0;  // wall time of the whole call, transfers included
};

// Throws InvalidArgument for a tolerance that is not a positive finite number or min > max.
void validate(const ClusterParams& params);

// Runs one method. GPU methods throw GpuError when no GPU can be used, or when the matrix
// methods' adjacency matrix would not fit in GPU memory.
// `progress` reaches the CPU method (points searched) and the tiled layer (slabs done).
ClusterResult euclidean_cluster(const PointCloud& cloud, const ClusterParams& params,
                                ClusterMethod method, const ClusterProgress& progress = {});

// The same for raw points. With `points` in page-locked memory (allocate_pinned_points), as
// frames that a sensor driver writes into such buffers, `gpu` reads them over the bus in its
// first kernel, with no copy ahead of it (its first stage is then "upload and grid"; a pointer
// off 16 bytes is copied), and the other GPU methods upload them by direct DMA.
ClusterResult euclidean_cluster(const Point3f* points, std::size_t n, const ClusterParams& params,
                                ClusterMethod method, const ClusterProgress& progress = {});

// The same into `into`, whose vectors keep their memory from call to call, as a sequence's
// frames are labelled one after another (on an H200 the KITTI frames took the same time either
// way: bench cluster's gpu[pinned] and gpu[pinned,reused] rows). Tiled clouds and the CPU
// method fill it anew. After an exception `into` holds no valid result.
void euclidean_cluster(const Point3f* points, std::size_t n, const ClusterParams& params,
                       ClusterMethod method, ClusterResult& into,
                       const ClusterProgress& progress = {});

// One call of `method`, never tiled: the building block of the tiled layer below. The entries
// above are this call when the cloud fits one, euclidean_cluster_tiled otherwise.
ClusterResult euclidean_cluster_call(const Point3f* points, std::size_t n,
                                     const ClusterParams& params, ClusterMethod method,
                                     const ClusterProgress& progress = {});
void euclidean_cluster_call(const Point3f* points, std::size_t n, const ClusterParams& params,
                            ClusterMethod method, ClusterResult& into,
                            const ClusterProgress& progress = {});

// Clouds beyond one call: the finite points in slabs along the cloud's longest axis, each slab
// with a halo of the tolerance on both sides, clustered one slab at a time by `method` and
// merged exactly (every pair of neighbours lies in the slab of either point, and a point that
// two slabs share joins their components in a union-find). Slabs hold at most
// `max_tile_points` points (0: cluster_call_capacity(method)). `progress(done, total)` is
// called after each slab and may return false to stop: Cancelled is thrown. InvalidArgument
// when the cloud is too dense along that axis for slabs of that size.
ClusterResult euclidean_cluster_tiled(const Point3f* points, std::size_t n,
                                      const ClusterParams& params, ClusterMethod method,
                                      std::size_t max_tile_points = 0,
                                      const ClusterProgress& progress = {});

// The exact merge of clusterings of overlapping tiles (slabs here, a Dask run's tiles in the
// Python module): each tile is clustered whole (every component kept) and handed over with its
// members' indices into the cloud; a point in two tiles joins their components. When every pair
// of neighbours lies together in at least one tile (halos of the tolerance), the merged
// components are the whole cloud's, and finish() gives the labels one call would.
class ClusterTileMerge {
 public:
  explicit ClusterTileMerge(std::size_t points);
  // `labels[k]` is the component (0, 1, ...; -1: none) of point `members[k]` within the tile.
  // InvalidArgument for an index outside the cloud.
  void add(const std::uint32_t* members, const std::int32_t* labels, std::size_t count);
  // The canonical result; points in no tile are non-finite ones (counted as such).
  ClusterResult finish(const ClusterParams& params);

 private:
  std::vector<std::int32_t> first_, parent_;
};

// Points one call of `method` takes: for `gpu`, 2^26 points, and no more than its memory per
// point fits in the cap of set_gpu_memory_limit (or, for large clouds without a cap, in the
// device's free memory). Unbounded for the others. `gpu` tiles on its own beyond this.
std::size_t cluster_call_capacity(ClusterMethod method, std::size_t n);

// Turns a component id per point (any ids; -1 for skipped points) into the canonical labels,
// sizes and drop counts of a ClusterResult. Used by the CPU methods and as the host-side
// reference for the GPU canonicalisation.
void canonicalize(const std::vector<std::int32_t>& component, const ClusterParams& params,
                  ClusterResult& result);

// Brute-force O(n^2) clustering for tests on small clouds: an independent reference.
ClusterResult cluster_brute_force(const PointCloud& cloud, const ClusterParams& params);

}  // namespace cumulus
