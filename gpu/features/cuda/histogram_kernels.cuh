#pragma once
// The histogram kernels: PFH, and FPFH's two halves, a group of threads per point, pairs near a
// bin edge deferred to the host. Included by features_gpu.cu only, which is compiled with
// -fmad=false so that the pair features round as PCL's float code does.
#include <cuda_runtime.h>

#include <climits>

#include "features/cuda/rows.cuh"
#include "features/features.h"
#include "features/pair_math.h"
#include "nns/cuda/cell_order.cuh"

namespace cumulus::feat {

namespace fm = features_math;

// ---- histograms ---------------------------------------------------------------------------

// A group of G threads works on one point; G = 64 is the paper's work-group (one per block),
// G = 32 is ours (a warp, several per block). Neighbourhoods up to kStage points are staged in
// shared memory; larger radius neighbourhoods are read through the cache instead.
constexpr int kStage = 128;

template <int G, int Groups>
__device__ inline void group_sync() {
  if constexpr (Groups == 1)
    __syncthreads();
  else
    __syncwarp();
}

struct Staged {
  float3* pos;
  float3* nrm;
};

template <int G, int Groups>
__device__ inline bool stage(const float3* pts, const float3* nrm, const int* idx, int count,
                             Staged st, int lane) {
  const bool fits = count <= kStage;
  if (fits)
    for (int a = lane; a < count; a += G) {
      const int g = idx[a];
      st.pos[a] = pts[g];
      st.nrm[a] = nrm[g];
    }
  group_sync<G, Groups>();
  return fits;
}

// The pairs (i, j), j < i, of a neighbourhood in PCL's loop order, dealt out G at a time.
struct PairWalk {
  int i, j;
  __device__ PairWalk(long long p) {
    i = int((1.0 + sqrt(1.0 + 8.0 * double(p))) * 0.5);
    while (static_cast<long long>(i) * (i - 1) / 2 > p)
      --i;
    while (static_cast<long long>(i + 1) * i / 2 <= p)
      ++i;
    j = int(p - static_cast<long long>(i) * (i - 1) / 2);
  }
  __device__ void advance(int by) {
    j += by;
    while (j >= i) {
      j -= i;
      ++i;
    }
  }
};

// Adds 1 to counts[bin] for every active lane of the warp, one atomic per distinct bin.
__device__ inline void count_bin(unsigned* counts, int bin, bool active) {
  const unsigned live = __ballot_sync(0xffffffffu, active);
  if (!active) return;
  const unsigned same = __match_any_sync(live, bin);
  if ((__ffs(same) - 1) == int(threadIdx.x & 31)) atomicAdd(&counts[bin], unsigned(__popc(same)));
}

// Pairs whose bins depend on the last ulp of acos/atan2 (see pair_math.h) are not counted on the
// device; they are listed here and decided on the host with PCL's libm, then patched in.
struct Deferred {
  int row, a, b;  // the histogram's point, and the pair (a is PCL's p1, b its p2)
};
struct DeferList {
  Deferred* items;
  unsigned* count;
  unsigned capacity;
  __device__ void push(int row, int a, int b) const {
    const unsigned i = atomicAdd(count, 1u);
    if (i < capacity) items[i] = {row, a, b};
  }
};

// PFH of one point per group. kFloatAtomics: the paper's float histogram in shared memory, one
// atomic add of the increment per pair (exact: every addend is the same, so any order gives
// PCL's sum). Otherwise ours: warp-aggregated integer counts, turned into PCL's repeated float
// sum at the end.
template <int G, int Groups, bool kFloatAtomics>
__global__ void k_pfh(const float3* pts, const float3* nrm, int n, const int* order, Rows rows,
                      DeferList defer, float* out) {
  __shared__ float3 s_pos[Groups][kStage];
  __shared__ float3 s_nrm[Groups][kStage];
  __shared__ unsigned s_count[Groups][125];
  __shared__ float s_hist[Groups][125];
  const int group = threadIdx.x / G, lane = threadIdx.x % G;
  const int slot = blockIdx.x * Groups + group;
  const bool live = slot < n;  // every thread stays for the warp-wide votes
  const int q = nns::point_in_order(order, slot, live);
  const unsigned b = live ? rows.begin(q) : 0u, e = live ? rows.end(q) : 0u;
  const int count = int(e - b);
  for (int h = lane; h < 125; h += G) {
    s_count[group][h] = 0;
    s_hist[group][h] = 0.0f;
  }
  const bool fits =
      stage<G, Groups>(pts, nrm, rows.index + b, count, {s_pos[group], s_nrm[group]}, lane);
  const float incr = fm::pfh_increment(std::uint64_t(count));
  const long long pairs = static_cast<long long>(count) * (count - 1) / 2;
  const long long rounds = (pairs + G - 1) / G;
  PairWalk w(lane);
  // Every lane of a group runs the same number of rounds, so the warp votes stay converged.
  for (long long r = 0; r < rounds; ++r) {
    const long long p = r * G + lane;
    const bool active = p < pairs;
    int bin = 0;
    bool unsure = false;
    if (active) {
      const int gi = fits ? 0 : rows.index[b + unsigned(w.i)];
      const int gj = fits ? 0 : rows.index[b + unsigned(w.j)];
      const float3 pi = fits ? s_pos[group][w.i] : pts[gi];
      const float3 ni = fits ? s_nrm[group][w.i] : nrm[gi];
      const float3 pj = fits ? s_pos[group][w.j] : pts[gj];
      const float3 nj = fits ? s_nrm[group][w.j] : nrm[gj];
      bin = fm::pfh_bin(v3(pi), v3(ni), v3(pj), v3(nj), &unsure);
      if (unsure) defer.push(q, rows.index[b + unsigned(w.i)], rows.index[b + unsigned(w.j)]);
      w.advance(G);
    }
    const bool counted = active && !unsure;
    if constexpr (kFloatAtomics) {
      if (counted) atomicAdd(&s_hist[group][bin], incr);
    } else {
      count_bin(s_count[group], bin, counted);
    }
  }
  group_sync<G, Groups>();
  if (!live) return;
  float* o = out + std::size_t(q) * 125;
  for (int h = lane; h < 125; h += G)
    o[h] = kFloatAtomics ? s_hist[group][h] : fm::repeated_sum(incr, s_count[group][h]);
}

// The SPFH table's rows lie kGpuSpfhStride (features.h) floats apart: the weighting gathers every
// neighbour's row, eight consecutive bins a load of a lane group, and rows 132 bytes apart made
// most of those loads straddle two 32-byte sectors (ncu's source counters, KITTI at 0.5 m: 184 M
// sectors asked of L1 where 95 M hold the bins). At 160 bytes each load is one sector: the kernel
// 739 -> 718 us there, 48 -> 42 us on the LiDAR frame at k = 16 (H200; the second sector had
// mostly hit in L1, so L2's traffic did not fall).

// FPFH, first half: each point's SPFH against its own neighbours (itself skipped by index),
// 11 bins per feature, one group per point.
template <int G, int Groups>
__global__ void k_spfh(const float3* pts, const float3* nrm, int n, const int* order, Rows rows,
                       DeferList defer, float* spfh) {
  __shared__ unsigned s_count[Groups][33];
  const int group = threadIdx.x / G, lane = threadIdx.x % G;
  const int slot = blockIdx.x * Groups + group;
  const bool live = slot < n;
  const int q = nns::point_in_order(order, slot, live);
  const unsigned b = live ? rows.begin(q) : 0u, e = live ? rows.end(q) : 0u;
  const int count = int(e - b);
  for (int h = lane; h < 33; h += G)
    s_count[group][h] = 0;
  group_sync<G, Groups>();
  const fm::V3 pq = live ? v3(pts[q]) : fm::V3{0, 0, 0};
  const fm::V3 nq = live ? v3(nrm[q]) : fm::V3{0, 0, 0};
  const int rounds = (count + G - 1) / G;
  for (int r = 0; r < rounds; ++r) {
    const int a = r * G + lane;
    int g = -1;
    if (a < count) g = rows.index[b + unsigned(a)];
    bool active = g >= 0 && g != q;
    int bins[3] = {0, 11, 22};
    if (active) {
      bool unsure = false;
      fm::spfh_bins(pq, nq, v3(pts[g]), v3(nrm[g]), bins, &unsure);
      if (unsure) {
        defer.push(q, q, g);
        active = false;
      }
    }
    for (int f = 0; f < 3; ++f)
      count_bin(s_count[group], bins[f], active);
  }
  group_sync<G, Groups>();
  if (!live) return;
  const float incr = fm::spfh_increment(std::uint64_t(count));
  for (int h = lane; h < 33; h += G)
    spfh[std::size_t(q) * kGpuSpfhStride + h] = fm::repeated_sum(incr, s_count[group][h]);
}

// The exponent of a float's last place (-149 for denormals): every float of magnitude at least
// as large is a whole multiple of 2 to this power.
__device__ inline int ulp_exponent(float v) {
  return max(int((__float_as_uint(v) >> 23) & 0xffu), 1) - 150;
}

// FPFH's scale for feature f (100 over the sum of its weighted bins, as PCL's normaliser) from
// the bins' double sums and last places (the rule in k_fpfh_weight's comment); where the rule
// does not hold, summed again in PCL's order.
__device__ inline double feature_scale(int f, const double* sums, const int* ulps, const Rows& rows,
                                       const float* spfh, unsigned b, unsigned e) {
  double total = 0.0;
  int smallest = INT_MAX;
  for (int t = 0; t < 11; ++t) {
    total += sums[f * 11 + t];
    smallest = min(smallest, ulps[f * 11 + t]);
  }
  if (smallest != INT_MAX && !(total < ldexp(1.0, 52 + smallest))) {
    total = 0.0;  // some addition may round: PCL's order
    for (unsigned j = b; j < e; ++j) {
      const float d2 = rows.d2[j];
      if (d2 == 0.0f) continue;
      const float wgt = 1.0f / d2;
      const float* h = spfh + std::size_t(rows.index[j]) * kGpuSpfhStride + f * 11;
      for (int t = 0; t < 11; ++t)
        total += double(h[t] * wgt);
    }
  }
  return total != 0.0 ? 100.0 / total : 0.0;
}

// FPFH, second half: the neighbours' SPFHs weighted by 1 / squared distance (the point itself
// and duplicates, at distance 0, are skipped, as PCL does), each feature scaled to sum to 100.
// Bin sums run in neighbour order in float, as PCL's loop. PCL's normalising sums add the same
// products one by one in double; here each lane sums its bins' products and the bins' sums are
// added, which is the same double wherever no addition rounds: when every product is a multiple
// of the smallest one's last place q and the total stays below 2^52 q (so every partial sum is
// exact in any order). A feature for which that does not hold is summed in PCL's order by one
// lane, as before (one lane's chain of 704 dependent loads and adds per point was most of this
// kernel's time).
template <int G, int Groups>
__global__ void k_fpfh_weight(int n, Rows rows, const float* spfh, float* out) {
  constexpr int kBinsPerLane = (33 + G - 1) / G;
  __shared__ int s_index[Groups][G];
  __shared__ float s_weight[Groups][G];
  __shared__ double s_sum[Groups][33];
  __shared__ int s_ulp[Groups][33];
  __shared__ double s_factor[Groups][3];
  const int group = threadIdx.x / G, lane = threadIdx.x % G;
  const int q = blockIdx.x * Groups + group;
  const bool live = q < n;
  const unsigned b = live ? rows.begin(q) : 0u, e = live ? rows.end(q) : 0u;
  float acc[kBinsPerLane] = {};
  double sum[kBinsPerLane] = {};
  int ulp[kBinsPerLane];
  for (int r = 0; r < kBinsPerLane; ++r)
    ulp[r] = INT_MAX;
  for (unsigned c = b; c < e; c += G) {
    // G neighbours' indices and weights at a time, each weight divided once.
    if (c + unsigned(lane) < e) {
      const float d2 = rows.d2[c + unsigned(lane)];
      s_index[group][lane] = d2 == 0.0f ? -1 : rows.index[c + unsigned(lane)];
      s_weight[group][lane] = d2 == 0.0f ? 0.0f : 1.0f / d2;
    }
    group_sync<G, Groups>();
    const int m = int(min(e - c, unsigned(G)));
    for (int t = 0; t < m; ++t) {
      const int g = s_index[group][t];
      if (g < 0) continue;
      const float w = s_weight[group][t];
      for (int r = 0; r < kBinsPerLane; ++r) {
        const int h = lane + r * G;
        if (h >= 33) break;
        const float v = spfh[std::size_t(g) * kGpuSpfhStride + h] * w;
        acc[r] += v;
        sum[r] += double(v);
        if (v != 0.0f) ulp[r] = min(ulp[r], ulp_exponent(v));
      }
    }
    group_sync<G, Groups>();
  }
  for (int r = 0; r < kBinsPerLane; ++r) {
    const int h = lane + r * G;
    if (h < 33) {
      s_sum[group][h] = sum[r];
      s_ulp[group][h] = ulp[r];
    }
  }
  group_sync<G, Groups>();
  if (lane < 3 && live)
    s_factor[group][lane] = feature_scale(lane, s_sum[group], s_ulp[group], rows, spfh, b, e);
  group_sync<G, Groups>();
  if (!live) return;
  for (int r = 0; r < kBinsPerLane; ++r) {
    const int h = lane + r * G;
    if (h < 33) out[std::size_t(q) * 33 + h] = float(double(acc[r]) * s_factor[group][h / 11]);
  }
}

// One deferred pair's increment per patch. Patches of a bin all add the same increment, so
// their order does not matter: the bin ends as PCL's sequential sum.
struct Patch {
  unsigned index;
  float incr;
};

__global__ void k_patch(const Patch* patches, unsigned m, float* hist) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) atomicAdd(&hist[patches[i].index], patches[i].incr);
}

}  // namespace cumulus::feat
