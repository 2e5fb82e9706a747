#pragma once
// Entry points of the CUDA neighbour searches (nns_gpu.cu); a stub throws GpuError when the
// build has no CUDA.
#include "nns/grid_plan.h"
#include "nns/nns.h"

namespace cumulus {

void gpu_knn(const std::vector<Point3f>& targets, const std::vector<Point3f>& queries, int k,
             NnsMethod method, float max_d2, KnnResult& out);
void gpu_radius(const std::vector<Point3f>& targets, const std::vector<Point3f>& queries, float r2,
                NnsMethod method, RadiusResult& out);
// The grid's bounds of the points as the device finds them (for tests against scan_bounds).
nns::Bounds gpu_bounds(const std::vector<Point3f>& points);

}  // namespace cumulus
