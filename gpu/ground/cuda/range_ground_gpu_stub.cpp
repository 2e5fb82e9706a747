// Built instead of range_ground_gpu.cu when nvcc is missing.
#include "core/error.h"
#include "ground/range_ground_impl.h"

namespace cumulus {

RangeGroundFit range_ground_gpu(const PointCloud&, const RangeGroundParams&, StageTimes&) {
  throw_no_cuda("gpu range-image ground");
}

}  // namespace cumulus
