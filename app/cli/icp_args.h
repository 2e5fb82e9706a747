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

// The GICP options (--gicp-k, --gicp-inner-iterations, --gicp-gradient-tolerance,
// --gicp-translation-epsilon, --gicp-rotation-epsilon) into `g`; UsageError when they come
// without --metric gicp.
inline void gicp_args(const Args& a, IcpMetric metric, GicpParams& g) {
  for (const char* only : {"gicp-k", "gicp-inner-iterations", "gicp-gradient-tolerance",
                           "gicp-translation-epsilon", "gicp-rotation-epsilon"})
    if (metric != IcpMetric::Gicp && a.has(only))
      throw UsageError(std::string("--") + only + " belongs to --metric gicp");
  g.k = int(a.get_int("gicp-k", g.k));
  g.max_inner_iterations = int(a.get_int("gicp-inner-iterations", g.max_inner_iterations));
  const double tol = a.get_double("gicp-gradient-tolerance", g.translation_gradient_tolerance);
  g.translation_gradient_tolerance = g.rotation_gradient_tolerance = tol;
  g.translation_epsilon = a.get_double("gicp-translation-epsilon", g.translation_epsilon);
  g.rotation_epsilon = a.get_double("gicp-rotation-epsilon", g.rotation_epsilon);
}

}  // namespace cumulus::cli
