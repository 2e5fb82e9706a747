#pragma once
// Entry points of the CUDA neighbour searches (nns_gpu.cu); a stub throws GpuError when the
// build has no CUDA.
#include "nns/grid_plan.h"
#include "nns/nns.h"

namespace cumulus {

void gpu_knn(std::span<const Point3f> targets, std::span<const Point3f> queries, int k,
             NnsMethod method, float max_d2, KnnResult& out);
void gpu_radius(std::span<const Point3f> targets, std::span<const Point3f> queries, float r2,
                NnsMethod method, RadiusResult& out);
// The grid's bounds of the points as the device finds them (for tests against scan_bounds).
nns::Bounds gpu_bounds(std::span<const Point3f> points);

}  // namespace cumulus
