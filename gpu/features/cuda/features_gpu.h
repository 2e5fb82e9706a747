#pragma once
// Entry points of the CUDA normals and histograms (features_gpu.cu); a stub throws GpuError when
// the build has no CUDA. Every input here is finite points only.
#include <cstdint>
#include <vector>

#include "features/features.h"

namespace cumulus {

// Neighbourhoods in CSR form, nearest first, the point itself included.
struct HostNeighbours {
  std::vector<std::uint32_t> offsets;
  std::vector<std::int32_t> indices;
  std::vector<float> sq_distances;
};

// The paper's split: neighbours and normals come from the CPU; the GPU builds the histograms.
// Fills out.histograms (points * bins) and appends the upload/descriptors/download stages.
void gpu_paper_descriptors(const std::vector<Point3f>& points, const std::vector<Point3f>& normals,
                           const HostNeighbours& neighbours, Descriptor descriptor,
                           FeatureResult& out);

// Ours: search, normals (unless given) and histograms on the device. Fills out.histograms and,
// when estimated, out.normals / out.curvature.
void gpu_features(const std::vector<Point3f>& points, const FeatureParams& params,
                  Point3f viewpoint_local, const std::vector<Point3f>* normals, FeatureResult& out);

// pcl_compatible: NormalParams::pcl_compatible.
void gpu_normals(const std::vector<Point3f>& points, const Neighbourhood& neighbourhood,
                 Point3f viewpoint_local, bool pcl_compatible, NormalsResult& out);

}  // namespace cumulus
