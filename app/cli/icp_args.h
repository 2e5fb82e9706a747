#pragma once
// ICP options more than one command takes.
#include "args.h"
#include "core/error.h"
#include "registration/icp.h"

namespace cumulus::cli {

// --kernel none|huber|tukey and --kernel-scale D into `kernel` and `scale` (left as they are
// when not given). UsageError for an unknown kernel or a kernel without its scale.
inline void kernel_args(const Args& a, RobustKernel& kernel, double& scale) {
  if (a.has("kernel")) {
    const auto k = parse_kernel(a.get("kernel"));
    if (!k) throw UsageError("--kernel is none, huber or tukey, not '" + a.get("kernel") + "'");
    kernel = *k;
  }
  scale = a.get_double("kernel-scale", scale);
  if (kernel != RobustKernel::None && !a.has("kernel-scale"))
    throw UsageError(std::string("--kernel ") + kernel_name(kernel) +
                     " needs --kernel-scale D (a distance: residuals beyond it count less)");
}

}  // namespace cumulus::cli
