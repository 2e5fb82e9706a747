#pragma once
// Entry points of the CUDA global registration (global_gpu.cu); a stub throws GpuError without
// CUDA.
#include "registration/global_impl.h"

namespace cumulus {

// Mutual nearest descriptors, exact (global.h's match_features for `gpu`).
FeatureMatches gpu_match_features(const FeatureResult& source, const FeatureResult& target);

// Every hypothesis drawn, rejected or scored on the device, a round at a time; the best keys of
// each round come back (global_impl.h's Candidates, the same as candidates_cpu's).
Candidates gpu_candidates(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                          const FeatureMatches& matches, const GlobalParams& params,
                          double inlier_distance, const MoreRounds& more);

}  // namespace cumulus
