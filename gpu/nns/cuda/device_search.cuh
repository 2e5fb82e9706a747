#pragma once
// The k-nearest and radius searches over device-resident queries, for callers that keep the
// neighbours on the device (features); defined in nns_gpu.cu.
#include <cuda_runtime.h>

#include <vector>

#include "core/cuda/buffer.cuh"
#include "nns/cuda/device_index.cuh"

namespace cumulus::nns {

// Threads a block of the searches' kernels (four queries a block where a warp takes a query).
inline constexpr int kSearchThreads = 128;

// Rows of k (index, squared distance) per query, as knn_search returns them. Asynchronous.
// `order`, where given, is a permutation of [0, nq) in which the warp-a-query kernels take the
// queries (DeviceIndex::cell_order for the index's own points): the same rows.
void search_knn(const DeviceIndex& index, const float3* queries, int nq, int k, float max_d2,
                int* out_index, float* out_d2, cudaStream_t s, const int* order = nullptr);

// The CSR result of a radius search stays in `index`/`d2`, rows sorted as radius_search sorts.
struct RadiusScratch {
  cuda::DeviceBuffer<unsigned> counts, offsets;
  cuda::PinnedBuffer<unsigned> offsets_host;  // where the offsets land, for the caller's vector
  cuda::DeviceBuffer<unsigned> most;          // the longest row and the long rows' count (grid)
  cuda::PinnedBuffer<unsigned> most_host;
  cuda::DeviceBuffer<unsigned> long_rows;  // the rows too long for a warp's shared memory
  cuda::DeviceBuffer<unsigned long long> keys, sorted_keys;
  cuda::DeviceBuffer<unsigned char> temp;
  cuda::DeviceBuffer<int> index;
  cuda::DeviceBuffer<float> d2;
};

// Fills b (offsets on the device and in host_offsets) and returns the number of neighbours.
// Synchronises s once, after counting, to size the output.
std::size_t search_radius(const DeviceIndex& index, const float3* queries, int nq, float r2,
                          RadiusScratch& b, std::vector<unsigned>& host_offsets, cudaStream_t s);

}  // namespace cumulus::nns
