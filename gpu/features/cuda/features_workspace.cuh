#pragma once
// What the GPU features keep between calls: the uploaded points and their index, the rows of
// neighbours, and every device and page-locked buffer of the normals and histograms. Private to
// features/cuda (features_gpu.cu).
#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "core/cuda/buffer.cuh"
#include "core/cuda/staged_download.cuh"
#include "features/cuda/histogram_kernels.cuh"
#include "features/cuda/rows.cuh"
#include "features/pcl_normal.h"
#include "nns/cuda/device_index.cuh"
#include "nns/cuda/device_search.cuh"

namespace cumulus::feat {

struct DeviceRows {
  cuda::DeviceBuffer<int> index;
  cuda::DeviceBuffer<float> d2;
  nns::RadiusScratch radius;
  std::vector<unsigned> host_offsets;
  Rows view;
  // Neighbours a row on average: k, or the radius search's total over the points.
  double mean(int n) const {
    if (view.uniform) return view.uniform;
    return n && host_offsets.size() > std::size_t(n) ? double(host_offsets[std::size_t(n)]) / n
                                                     : 0.0;
  }
};

struct Workspace {
  cuda::Stream stream;
  nns::DeviceIndex index;  // owns the uploaded points
  DeviceRows feature_rows, normal_rows;
  cuda::DeviceBuffer<float3> normals;
  cuda::DeviceBuffer<pcl_normal::Covariance> covariance;  // the pcl_compatible normals
  cuda::DeviceBuffer<float> curvature, spfh, out;
  cuda::DeviceBuffer<unsigned> offsets;  // the paper's host neighbourhoods
  cuda::DeviceBuffer<Deferred> deferred;
  cuda::DeviceBuffer<unsigned> deferred_count;
  cuda::DeviceBuffer<Patch> patches;
  cuda::StagedDownload histograms_down;
  cuda::PinnedBuffer<float3> normals_host;  // the normals on their way to the result (NormalsDown)
  cuda::PinnedBuffer<float> curvature_host;
  cuda::Event normals_landed;
};

}  // namespace cumulus::feat
