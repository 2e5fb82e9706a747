// Global registration on the GPU: exact nearest descriptors both ways (a thread per row, the
// other cloud's rows streamed through shared memory in tiles), and every RANSAC hypothesis at
// once (a warp per hypothesis: its first lane draws and solves the triangle, the warp counts the
// inlier pairs), a round at a time, each round's best keys found by one descending sort.
#include <cub/device/device_radix_sort.cuh>

#include <cmath>
#include <cstdint>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/workspace.cuh"
#include "registration/cuda/global_gpu.h"
#include "registration/global_math.h"

namespace cumulus {

namespace {

constexpr int kRowThreads = 128;
constexpr int kTileRows = 64;
constexpr int kSliceRows = 1024;
constexpr int kHypothesisWarps = 8;

struct GlobalWorkspace {
  cuda::Stream stream;
  cuda::DeviceBuffer<float> rows_a, rows_b;
  cuda::DeviceBuffer<std::uint8_t> ok_a, ok_b;
  cuda::DeviceBuffer<unsigned long long> nearest;
  cuda::DeviceBuffer<float> source, target, pair_s, pair_t;
  cuda::DeviceBuffer<std::int32_t> index_s, index_t;
  cuda::DeviceBuffer<unsigned long long> keys, sorted;
  cuda::DeviceBuffer<unsigned int> valid;
  cuda::DeviceBuffer<unsigned char> temp;
};

// The nearest finite row of b to each finite row of a: squared L2 summed in bin order (no fused
// multiply-adds in this file, so the host's loop gives the same floats). Each block column takes
// a slice of b's rows (a few thousand rows of a alone would fill a fraction of the GPU); the
// slices meet in `nearest` as (distance bits, index) keys under atomicMin: non-negative floats
// order as their bits, so the least key is the nearest row, ties to the lower index.
template <int Bins>
__global__ void nearest_rows(const float* a, const std::uint8_t* a_ok, int na, const float* b,
                             const std::uint8_t* b_ok, int nb, unsigned long long* nearest) {
  __shared__ float tile[kTileRows * Bins];
  __shared__ std::uint8_t tile_ok[kTileRows];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const bool active = i < na && a_ok[i];
  float x[Bins];
  if (active)
    for (int k = 0; k < Bins; ++k)
      x[k] = a[std::size_t(i) * Bins + k];
  float best = INFINITY;
  int arg = -1;
  const int begin = blockIdx.y * kSliceRows, end = min(nb, begin + kSliceRows);
  for (int base = begin; base < end; base += kTileRows) {
    const int rows = min(kTileRows, end - base);
    __syncthreads();
    for (int e = threadIdx.x; e < rows * Bins; e += blockDim.x)
      tile[e] = b[std::size_t(base) * Bins + e];
    for (int r = threadIdx.x; r < rows; r += blockDim.x)
      tile_ok[r] = b_ok[base + r];
    __syncthreads();
    if (!active) continue;
    for (int r = 0; r < rows; ++r) {
      if (!tile_ok[r]) continue;
      const float* y = tile + r * Bins;
      float d = 0;
      for (int k = 0; k < Bins; ++k) {
        const float e = x[k] - y[k];
        d += e * e;
      }
      if (d < best) {
        best = d;
        arg = base + r;
      }
    }
  }
  if (active && arg >= 0)
    atomicMin(nearest + i, (static_cast<unsigned long long>(__float_as_uint(best)) << 32) |
                               static_cast<unsigned int>(arg));
}

// Key of a hypothesis (global_impl.h's hypothesis_key; 0 for a rejected triangle), for the
// hypotheses first .. first + count.
__global__ void score_hypotheses(const float* s_points, const float* t_points,
                                 const std::int32_t* index_s, const std::int32_t* index_t,
                                 const float* pair_s, const float* pair_t, std::uint32_t n,
                                 std::uint64_t seed, double similarity, float limit2,
                                 std::uint32_t first, std::uint32_t count, unsigned long long* keys,
                                 unsigned int* valid) {
  const int lane = threadIdx.x & 31;
  const std::uint32_t slot = blockIdx.x * kHypothesisWarps + (threadIdx.x >> 5);
  const std::uint32_t h = first + slot;
  __shared__ unsigned int block_valid;
  if (threadIdx.x == 0) block_valid = 0;
  __syncthreads();
  if (slot < count) {
    float m[12];
    int ok = 0;
    if (lane == 0)
      ok = global_math::make_hypothesis(s_points, t_points, index_s, index_t, n, seed, h,
                                        similarity, m);
    ok = __shfl_sync(0xffffffffu, ok, 0);
    unsigned long long key = 0;
    if (ok) {
      for (int e = 0; e < 12; ++e)
        m[e] = __shfl_sync(0xffffffffu, m[e], 0);
      unsigned int inliers = 0;
      for (std::uint32_t k = lane; k < n; k += 32)
        inliers += global_math::residual2(m, pair_s + 3 * std::size_t(k),
                                          pair_t + 3 * std::size_t(k)) <= limit2;
      for (int off = 16; off > 0; off >>= 1)
        inliers += __shfl_down_sync(0xffffffffu, inliers, off);
      key = (static_cast<unsigned long long>(inliers + 1) << 32) | (0xffffffffu - h);
      if (lane == 0) atomicAdd(&block_valid, 1u);
    }
    if (lane == 0) keys[slot] = key;
  }
  __syncthreads();
  if (threadIdx.x == 0 && block_valid) atomicAdd(valid, block_valid);
}

// Rows and their finite flags onto the device (`flags` must outlive the copies).
void upload_rows(const FeatureResult& f, const std::vector<std::uint8_t>& flags,
                 cuda::DeviceBuffer<float>& rows, cuda::DeviceBuffer<std::uint8_t>& ok,
                 cudaStream_t s) {
  rows.reserve(std::max<std::size_t>(f.histograms.size(), 1));
  ok.reserve(std::max<std::size_t>(flags.size(), 1));
  CU_CHECK(cudaMemcpyAsync(rows.get(), f.histograms.data(), f.histograms.size() * sizeof(float),
                           cudaMemcpyHostToDevice, s));
  CU_CHECK(cudaMemcpyAsync(ok.get(), flags.data(), flags.size(), cudaMemcpyHostToDevice, s));
}

// Queues the nearest row of b for each row of a into `keys` (na entries).
void queue_nearest(const cuda::DeviceBuffer<float>& a, const cuda::DeviceBuffer<std::uint8_t>& a_ok,
                   int na, const cuda::DeviceBuffer<float>& b,
                   const cuda::DeviceBuffer<std::uint8_t>& b_ok, int nb, int bins,
                   unsigned long long* keys, cudaStream_t s) {
  if (na == 0 || nb == 0) return;
  const dim3 grid(unsigned(cuda::blocks_for(std::size_t(na), kRowThreads)),
                  unsigned((nb + kSliceRows - 1) / kSliceRows));
  if (bins == 33)
    nearest_rows<33>
        <<<grid, kRowThreads, 0, s>>>(a.get(), a_ok.get(), na, b.get(), b_ok.get(), nb, keys);
  else
    nearest_rows<125>
        <<<grid, kRowThreads, 0, s>>>(a.get(), a_ok.get(), na, b.get(), b_ok.get(), nb, keys);
  CU_CHECK_LAUNCH("nearest_rows");
}

template <class T>
void upload(const std::vector<T>& v, cuda::DeviceBuffer<T>& d, cudaStream_t s) {
  d.reserve(std::max<std::size_t>(v.size(), 1));
  CU_CHECK(cudaMemcpyAsync(d.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, s));
}

}  // namespace

FeatureMatches gpu_match_features(const FeatureResult& source, const FeatureResult& target) {
  if (source.bins != 33 && source.bins != 125)
    throw InvalidArgument("descriptors of 33 (FPFH) or 125 (PFH) bins only");
  auto held = cuda::acquire_workspace<GlobalWorkspace>("gpu global registration");
  GlobalWorkspace& ws = held.ws;
  const cudaStream_t s = ws.stream.get();
  const auto s_ok = finite_rows(source), t_ok = finite_rows(target);
  upload_rows(source, s_ok, ws.rows_a, ws.ok_a, s);
  upload_rows(target, t_ok, ws.rows_b, ws.ok_b, s);
  const int ns = int(source.size()), nt = int(target.size());
  const std::size_t both = std::size_t(ns) + std::size_t(nt);
  ws.nearest.reserve(std::max<std::size_t>(both, 1));
  // All ones: above every key, and what is left where a row found none.
  CU_CHECK(cudaMemsetAsync(ws.nearest.get(), 0xff, both * sizeof(unsigned long long), s));
  queue_nearest(ws.rows_a, ws.ok_a, ns, ws.rows_b, ws.ok_b, nt, source.bins, ws.nearest.get(), s);
  queue_nearest(ws.rows_b, ws.ok_b, nt, ws.rows_a, ws.ok_a, ns, source.bins, ws.nearest.get() + ns,
                s);
  std::vector<unsigned long long> keys(both);
  CU_CHECK(cudaMemcpyAsync(keys.data(), ws.nearest.get(), both * sizeof(unsigned long long),
                           cudaMemcpyDeviceToHost, s));
  ws.stream.sync();
  const auto row = [&](std::size_t k) {
    return keys[k] == ~0ull ? -1 : std::int32_t(keys[k] & 0xffffffffu);
  };
  FeatureMatches m;
  for (std::size_t i = 0; i < std::size_t(ns); ++i) {
    const std::int32_t j = row(i);
    if (j >= 0 && row(std::size_t(ns) + std::size_t(j)) == std::int32_t(i)) {
      m.source.push_back(std::int32_t(i));
      m.target.push_back(j);
    }
  }
  return m;
}

Candidates gpu_candidates(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                          const FeatureMatches& matches, const GlobalParams& params,
                          double inlier_distance, const MoreRounds& more) {
  auto held = cuda::acquire_workspace<GlobalWorkspace>("gpu global registration");
  GlobalWorkspace& ws = held.ws;
  const cudaStream_t s = ws.stream.get();
  const auto n = std::uint32_t(matches.size());
  const auto s_flat = flat_points(source), t_flat = flat_points(target);
  std::vector<float> ps(3 * std::size_t(n)), pt(3 * std::size_t(n));
  for (std::size_t k = 0; k < n; ++k)
    for (int d = 0; d < 3; ++d) {
      ps[3 * k + std::size_t(d)] = s_flat[3 * std::size_t(matches.source[k]) + std::size_t(d)];
      pt[3 * k + std::size_t(d)] = t_flat[3 * std::size_t(matches.target[k]) + std::size_t(d)];
    }
  upload(s_flat, ws.source, s);
  upload(t_flat, ws.target, s);
  upload(matches.source, ws.index_s, s);
  upload(matches.target, ws.index_t, s);
  upload(ps, ws.pair_s, s);
  upload(pt, ws.pair_t, s);
  ws.keys.reserve(kRoundHypotheses);
  ws.sorted.reserve(kRoundHypotheses);
  ws.valid.reserve(1);
  std::size_t temp_bytes = 0;
  CU_CHECK(cub::DeviceRadixSort::SortKeysDescending(
      nullptr, temp_bytes, ws.keys.get(), ws.sorted.get(), int(kRoundHypotheses), 0, 64, s));
  ws.temp.reserve(temp_bytes);
  const float limit2 = float(inlier_distance * inlier_distance);
  Candidates c;
  std::vector<unsigned long long> top(kCandidates);
  const auto total = std::uint32_t(params.hypotheses);
  for (std::uint32_t first = 0; first < total; first += kRoundHypotheses) {
    const std::uint32_t count = std::min(kRoundHypotheses, total - first);
    CU_CHECK(cudaMemsetAsync(ws.valid.get(), 0, sizeof(unsigned int), s));
    const int blocks = int((count + kHypothesisWarps - 1) / kHypothesisWarps);
    score_hypotheses<<<blocks, 32 * kHypothesisWarps, 0, s>>>(
        ws.source.get(), ws.target.get(), ws.index_s.get(), ws.index_t.get(), ws.pair_s.get(),
        ws.pair_t.get(), n, params.seed, params.similarity, limit2, first, count, ws.keys.get(),
        ws.valid.get());
    CU_CHECK_LAUNCH("score_hypotheses");
    std::size_t bytes = ws.temp.capacity();
    CU_CHECK(cub::DeviceRadixSort::SortKeysDescending(ws.temp.get(), bytes, ws.keys.get(),
                                                      ws.sorted.get(), int(count), 0, 64, s));
    const std::size_t kept = std::min<std::size_t>(kCandidates, count);
    unsigned int valid = 0;
    CU_CHECK(cudaMemcpyAsync(top.data(), ws.sorted.get(), kept * sizeof(unsigned long long),
                             cudaMemcpyDeviceToHost, s));
    CU_CHECK(cudaMemcpyAsync(&valid, ws.valid.get(), sizeof valid, cudaMemcpyDeviceToHost, s));
    ws.stream.sync();
    c.valid += valid;
    for (std::size_t i = 0; i < kept && top[i] != 0; ++i)
      c.keep(top[i]);
    c.drawn = first + count;
    if (!more(c.drawn, c.keys.empty() ? 0 : key_inliers(c.keys.front()))) break;
  }
  return c;
}

}  // namespace cumulus
