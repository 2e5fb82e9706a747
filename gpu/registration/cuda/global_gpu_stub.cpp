// Built instead of the CUDA sources when nvcc is missing.
#include "core/error.h"
#include "registration/cuda/global_gpu.h"

namespace cumulus {

FeatureMatches gpu_match_features(const FeatureResult&, const FeatureResult&) {
  throw_no_cuda("gpu global registration");
}

Candidates gpu_candidates(const std::vector<Point3f>&, const std::vector<Point3f>&,
                          const FeatureMatches&, const GlobalParams&, double, const MoreRounds&) {
  throw_no_cuda("gpu global registration");
}

}  // namespace cumulus
