// Built instead of limits.cu when nvcc is missing.
#include "core/error.h"
#include "core/limits.h"

namespace cumulus {

DeviceLimits measure_device_limits() {
  throw_no_cuda("measuring the GPU's limits");
}

}  // namespace cumulus
