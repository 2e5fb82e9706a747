// Without CUDA the device-resident chain reports why it cannot run.
#include "core/error.h"
#include "objects/cuda/chain_gpu.h"

namespace cumulus {

PipelineResult run_chain_gpu(const PointCloud&, const PipelineParams&, const Point3f*) {
  throw_no_cuda("gpu pipeline");
}

}  // namespace cumulus
