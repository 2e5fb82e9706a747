// Built instead of ground_gpu.cu when nvcc is missing.
#include "core/error.h"
#include "ground/cuda/ground_gpu.h"

namespace cumulus {

PlaneFit ground_plane_gpu(const PointCloud&, const GroundPlaneParams&, StageTimes&) {
  throw_no_cuda("gpu ground plane");
}

}  // namespace cumulus
