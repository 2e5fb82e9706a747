// Normals and point feature histograms on the GPU. Compiled with -fmad=false: the pair features
// must round exactly as PCL's float code does, or pairs near a bin edge change bins.
#include <cmath>

#include "cuda/stage_clock.cuh"
#include "cuda/workspace.cuh"
#include "features/pair_math.h"
#include "features_gpu.h"
#include "nns/device_index.cuh"
#include "nns/device_search.cuh"

namespace cumulus {
namespace feat {

namespace fm = features_math;

// Neighbourhood rows on the device: k-nearest rows are all `uniform` long (k is clamped to the
// point count, so every row is full); radius rows come from offsets.
struct Rows {
  const unsigned* offsets = nullptr;
  int uniform = 0;
  const int* index = nullptr;
  const float* d2 = nullptr;
  __device__ unsigned begin(int q) const {
    return uniform ? unsigned(q) * unsigned(uniform) : offsets[q];
  }
  __device__ unsigned end(int q) const {
    return uniform ? unsigned(q + 1) * unsigned(uniform) : offsets[q + 1];
  }
};

__device__ inline fm::V3 v3(float3 p) {
  return {p.x, p.y, p.z};
}

// ---- normals ------------------------------------------------------------------------------

// Eigen-decomposition of a symmetric 3x3 matrix by cyclic Jacobi rotations, in double; columns
// of v are the eigenvectors of the diagonal left in a.
__device__ void jacobi_eigen(double a[3][3], double v[3][3]) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      v[r][c] = r == c ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 32; ++sweep) {
    const double off = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    const double diag = a[0][0] * a[0][0] + a[1][1] * a[1][1] + a[2][2] * a[2][2];
    if (off <= 1e-30 * diag || off == 0.0) break;
    for (int p = 0; p < 2; ++p)
      for (int q = p + 1; q < 3; ++q) {
        if (a[p][q] == 0.0) continue;
        const double theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
        const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
        const double apq = a[p][q];
        a[p][p] -= t * apq;
        a[q][q] += t * apq;
        a[p][q] = a[q][p] = 0.0;
        for (int r = 0; r < 3; ++r) {
          if (r != p && r != q) {
            const double arp = a[r][p], arq = a[r][q];
            a[r][p] = a[p][r] = c * arp - s * arq;
            a[r][q] = a[q][r] = s * arp + c * arq;
          }
          const double vrp = v[r][p], vrq = v[r][q];
          v[r][p] = c * vrp - s * vrq;
          v[r][q] = s * vrp + c * vrq;
        }
      }
  }
}

// PCL's NormalEstimation for one point: the eigenvector of the smallest eigenvalue of the
// neighbourhood covariance, facing the viewpoint; NaN below 3 neighbours or with no spread.
// PCL computes in float and its library build lands up to a few hundredths of a degree from the
// exact answer on real scans; this is the exact one (sums relative to the query point in double,
// then the eigenvectors by Jacobi in double).
__global__ void k_normals(const float3* pts, int n, Rows rows, float3 vp, float3* normals,
                          float* curvature) {
  const int q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= n) return;
  const float3 p = pts[q];
  const unsigned b = rows.begin(q), e = rows.end(q);
  const float nan = __int_as_float(0x7fc00000);
  if (e - b < 3) {
    normals[q] = make_float3(nan, nan, nan);
    curvature[q] = nan;
    return;
  }
  double s[3] = {0, 0, 0}, ss[6] = {0, 0, 0, 0, 0, 0};
  for (unsigned j = b; j < e; ++j) {
    const float3 o = pts[rows.index[j]];
    const double x = double(o.x) - p.x, y = double(o.y) - p.y, z = double(o.z) - p.z;
    s[0] += x;
    s[1] += y;
    s[2] += z;
    ss[0] += x * x;
    ss[1] += x * y;
    ss[2] += x * z;
    ss[3] += y * y;
    ss[4] += y * z;
    ss[5] += z * z;
  }
  const double m = double(e - b);
  const double mx = s[0] / m, my = s[1] / m, mz = s[2] / m;
  double a[3][3];
  a[0][0] = ss[0] / m - mx * mx;
  a[0][1] = a[1][0] = ss[1] / m - mx * my;
  a[0][2] = a[2][0] = ss[2] / m - mx * mz;
  a[1][1] = ss[3] / m - my * my;
  a[1][2] = a[2][1] = ss[4] / m - my * mz;
  a[2][2] = ss[5] / m - mz * mz;
  const double trace = a[0][0] + a[1][1] + a[2][2];
  if (!(trace > 0.0)) {  // every neighbour at the same place
    normals[q] = make_float3(nan, nan, nan);
    curvature[q] = 0.0f;
    return;
  }
  double v[3][3];
  jacobi_eigen(a, v);
  int k = 0;
  if (a[1][1] < a[k][k]) k = 1;
  if (a[2][2] < a[k][k]) k = 2;
  double nx = v[0][k], ny = v[1][k], nz = v[2][k];
  const double len = sqrt(nx * nx + ny * ny + nz * nz);
  nx /= len;
  ny /= len;
  nz /= len;
  const double cos_theta =
      (double(vp.x) - p.x) * nx + (double(vp.y) - p.y) * ny + (double(vp.z) - p.z) * nz;
  if (cos_theta < 0) {
    nx = -nx;
    ny = -ny;
    nz = -nz;
  }
  normals[q] = make_float3(float(nx), float(ny), float(nz));
  curvature[q] = float(fabs(a[k][k] / trace));
}

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
__global__ void k_pfh(const float3* pts, const float3* nrm, int n, Rows rows, DeferList defer,
                      float* out) {
  __shared__ float3 s_pos[Groups][kStage];
  __shared__ float3 s_nrm[Groups][kStage];
  __shared__ unsigned s_count[Groups][125];
  __shared__ float s_hist[Groups][125];
  const int group = threadIdx.x / G, lane = threadIdx.x % G;
  const int q = blockIdx.x * Groups + group;
  const bool live = q < n;  // every thread stays for the warp-wide votes
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

// FPFH, first half: each point's SPFH against its own neighbours (itself skipped by index),
// 11 bins per feature, one group per point.
template <int G, int Groups>
__global__ void k_spfh(const float3* pts, const float3* nrm, int n, Rows rows, DeferList defer,
                       float* spfh) {
  __shared__ unsigned s_count[Groups][33];
  const int group = threadIdx.x / G, lane = threadIdx.x % G;
  const int q = blockIdx.x * Groups + group;
  const bool live = q < n;
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
    spfh[std::size_t(q) * 33 + h] = fm::repeated_sum(incr, s_count[group][h]);
}

// FPFH, second half: the neighbours' SPFHs weighted by 1 / squared distance (the point itself
// and duplicates, at distance 0, are skipped, as PCL does), each feature scaled to sum to 100.
// Bin sums run in neighbour order in float and the normalising sums in double, as PCL's loops.
template <int G, int Groups>
__global__ void k_fpfh_weight(int n, Rows rows, const float* spfh, float* out) {
  __shared__ double s_factor[Groups][3];
  const int group = threadIdx.x / G, lane = threadIdx.x % G;
  const int q = blockIdx.x * Groups + group;
  const bool live = q < n;
  const unsigned b = live ? rows.begin(q) : 0u, e = live ? rows.end(q) : 0u;
  if (lane < 3 && live) {
    double sum = 0.0;
    for (unsigned j = b; j < e; ++j) {
      const float d2 = rows.d2[j];
      if (d2 == 0.0f) continue;
      const float wgt = 1.0f / d2;
      const float* h = spfh + std::size_t(rows.index[j]) * 33 + lane * 11;
      for (int t = 0; t < 11; ++t)
        sum += double(h[t] * wgt);
    }
    s_factor[group][lane] = sum != 0.0 ? 100.0 / sum : 0.0;
  }
  group_sync<G, Groups>();
  if (!live) return;
  for (int h = lane; h < 33; h += G) {
    float acc = 0.0f;
    for (unsigned j = b; j < e; ++j) {
      const float d2 = rows.d2[j];
      if (d2 == 0.0f) continue;
      const float wgt = 1.0f / d2;
      acc += spfh[std::size_t(rows.index[j]) * 33 + h] * wgt;
    }
    out[std::size_t(q) * 33 + h] = float(double(acc) * s_factor[group][h / 11]);
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

// ---- host side ----------------------------------------------------------------------------

struct DeviceRows {
  cuda::DeviceBuffer<int> index;
  cuda::DeviceBuffer<float> d2;
  nns::RadiusScratch radius;
  std::vector<unsigned> host_offsets;
  Rows view;
};

struct Workspace {
  cuda::Stream stream;
  nns::DeviceIndex index;  // owns the uploaded points
  DeviceRows feature_rows, normal_rows;
  cuda::DeviceBuffer<float3> normals;
  cuda::DeviceBuffer<float> curvature, spfh, out;
  cuda::DeviceBuffer<unsigned> offsets;  // the paper's host neighbourhoods
  cuda::DeviceBuffer<Deferred> deferred;
  cuda::DeviceBuffer<unsigned> deferred_count;
  cuda::DeviceBuffer<Patch> patches;
};

// What the host needs to decide deferred pairs: the same points and normals as the device, and
// each row's neighbourhood size (PCL's increment depends on it).
struct HostSide {
  const std::vector<Point3f>& points;
  const std::vector<Point3f>& normals;
  int uniform;                           // k for k-nearest rows
  const std::vector<unsigned>* offsets;  // else row sizes from these
  std::uint64_t row_size(int r) const {
    return uniform ? std::uint64_t(uniform)
                   : std::uint64_t((*offsets)[std::size_t(r) + 1] - (*offsets)[std::size_t(r)]);
  }
};

std::vector<Patch> decide_on_host(const std::vector<Deferred>& d, Descriptor desc,
                                  const HostSide& h) {
  auto v = [](const Point3f& p) { return fm::V3{p.x, p.y, p.z}; };
  std::vector<Patch> patches;
  patches.reserve(d.size() * (desc == Descriptor::Pfh ? 1 : 3));
  for (const Deferred& e : d) {
    const auto a = std::size_t(e.a), b = std::size_t(e.b), row = std::size_t(e.row);
    if (desc == Descriptor::Pfh) {
      const int bin = fm::pfh_bin(v(h.points[a]), v(h.normals[a]), v(h.points[b]), v(h.normals[b]));
      patches.push_back(
          {unsigned(row * 125 + std::size_t(bin)), fm::pfh_increment(h.row_size(e.row))});
    } else {
      int bins[3];
      fm::spfh_bins(v(h.points[a]), v(h.normals[a]), v(h.points[b]), v(h.normals[b]), bins);
      for (int bin : bins)
        patches.push_back(
            {unsigned(row * 33 + std::size_t(bin)), fm::spfh_increment(h.row_size(e.row))});
    }
  }
  return patches;
}

// The histograms of every point: the pair kernel, the host's decisions on deferred pairs, and
// for FPFH the weighting. G = 64 with one group per block is the paper's mapping (its float
// histogram in shared memory), G = 32 with several warps per block is ours (counts).
template <int G, int Groups>
void run_descriptors(Workspace& ws, Descriptor desc, int n, const Rows& rows,
                     const HostSide& host) {
  cudaStream_t s = ws.stream.get();
  constexpr bool kPaper = G == 64;
  const int blocks = (n + Groups - 1) / Groups;
  const float3* pts = ws.index.targets.get();
  const float3* nrm = ws.normals.get();
  float* hist = desc == Descriptor::Pfh ? ws.out.get() : ws.spfh.get();
  ws.deferred_count.reserve(1);
  ws.deferred.reserve(std::max<std::size_t>(std::size_t(n) * 4, 1u << 16));
  unsigned deferred = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    CU_CHECK(cudaMemsetAsync(ws.deferred_count.get(), 0, sizeof(unsigned), s));
    const DeferList list{ws.deferred.get(), ws.deferred_count.get(),
                         unsigned(ws.deferred.capacity())};
    if (desc == Descriptor::Pfh) {
      k_pfh<G, Groups, kPaper><<<blocks, G * Groups, 0, s>>>(pts, nrm, n, rows, list, hist);
      CU_CHECK_LAUNCH("k_pfh");
    } else {
      k_spfh<G, Groups><<<blocks, G * Groups, 0, s>>>(pts, nrm, n, rows, list, hist);
      CU_CHECK_LAUNCH("k_spfh");
    }
    CU_CHECK(cudaMemcpyAsync(&deferred, ws.deferred_count.get(), sizeof(unsigned),
                             cudaMemcpyDeviceToHost, s));
    ws.stream.sync();
    if (deferred <= ws.deferred.capacity()) break;
    ws.deferred.reserve(deferred);  // rare: once more with room for every deferred pair
  }
  if (deferred) {
    std::vector<Deferred> d(deferred);
    CU_CHECK(cudaMemcpyAsync(d.data(), ws.deferred.get(), deferred * sizeof(Deferred),
                             cudaMemcpyDeviceToHost, s));
    ws.stream.sync();
    const std::vector<Patch> patches = decide_on_host(d, desc, host);
    ws.patches.reserve(patches.size());
    CU_CHECK(cudaMemcpyAsync(ws.patches.get(), patches.data(), patches.size() * sizeof(Patch),
                             cudaMemcpyHostToDevice, s));
    k_patch<<<cuda::blocks_for(patches.size(), 256), 256, 0, s>>>(ws.patches.get(),
                                                                  unsigned(patches.size()), hist);
    CU_CHECK_LAUNCH("k_patch");
    ws.stream.sync();  // the host vector of patches ends here
  }
  if (desc == Descriptor::Fpfh) {
    k_fpfh_weight<G, Groups><<<blocks, G * Groups, 0, s>>>(n, rows, ws.spfh.get(), ws.out.get());
    CU_CHECK_LAUNCH("k_fpfh_weight");
  }
}

// The neighbourhoods of every point among the points, on the device.
void search_rows(Workspace& ws, const Neighbourhood& nb, DeviceRows& r) {
  cudaStream_t s = ws.stream.get();
  const int n = int(ws.index.n);
  if (nb.k > 0) {
    const int k = std::min(nb.k, n);
    const std::size_t m = std::size_t(n) * std::size_t(k);
    r.index.reserve(std::max<std::size_t>(m, 1));
    r.d2.reserve(std::max<std::size_t>(m, 1));
    nns::search_knn(ws.index, ws.index.targets.get(), n, k, INFINITY, r.index.get(), r.d2.get(), s);
    r.view = Rows{nullptr, k, r.index.get(), r.d2.get()};
  } else {
    const float r2 = float(double(nb.radius) * double(nb.radius));
    nns::search_radius(ws.index, ws.index.targets.get(), n, r2, r.radius, r.host_offsets, s);
    r.view = Rows{r.radius.offsets.get(), 0, r.radius.index.get(), r.radius.d2.get()};
  }
}

bool same(const Neighbourhood& a, const Neighbourhood& b) {
  return a.k == b.k && a.radius == b.radius;
}

void run_normals(Workspace& ws, const Rows& rows, Point3f vp) {
  const int n = int(ws.index.n);
  ws.normals.reserve(std::size_t(n));
  ws.curvature.reserve(std::size_t(n));
  k_normals<<<cuda::blocks_for(std::size_t(n), 128), 128, 0, ws.stream.get()>>>(
      ws.index.targets.get(), n, rows, make_float3(vp.x, vp.y, vp.z), ws.normals.get(),
      ws.curvature.get());
  CU_CHECK_LAUNCH("k_normals");
}

template <class T>
void download(std::vector<T>& out, const T* d, std::size_t count, cudaStream_t s) {
  out.resize(count);
  if (count) CU_CHECK(cudaMemcpyAsync(out.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost, s));
}

// Normals straight into Point3f (same layout as float3), curvature beside; asynchronous.
void download_normals(Workspace& ws, std::size_t n, std::vector<Point3f>& normals,
                      std::vector<float>& curvature) {
  static_assert(sizeof(Point3f) == sizeof(float3));
  cudaStream_t s = ws.stream.get();
  normals.resize(n);
  if (n)
    CU_CHECK(cudaMemcpyAsync(normals.data(), ws.normals.get(), n * sizeof(float3),
                             cudaMemcpyDeviceToHost, s));
  download(curvature, ws.curvature.get(), n, s);
}

}  // namespace feat

void gpu_normals(const std::vector<Point3f>& points, const Neighbourhood& nb, Point3f vp,
                 NormalsResult& out) {
  using namespace feat;
  cuda::require_device("normals (gpu)");
  auto [lock, ws] = cuda::acquire_workspace<Workspace>();
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t n = points.size();
  ws.index.build(NnsMethod::Gpu, points.data(), n, s);
  clock.mark("upload");
  if (n) search_rows(ws, nb, ws.normal_rows);
  clock.mark("neighbours");
  if (n) run_normals(ws, ws.normal_rows.view, vp);
  clock.mark("normals");
  download_normals(ws, n, out.normals, out.curvature);
  clock.mark("download");
  ws.stream.sync();
  clock.collect(out.stages);
}

void gpu_features(const std::vector<Point3f>& points, const FeatureParams& params, Point3f vp,
                  const std::vector<Point3f>* given, FeatureResult& out) {
  using namespace feat;
  cuda::require_device("features (gpu)");
  auto [lock, ws] = cuda::acquire_workspace<Workspace>();
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t n = points.size();
  const int bins = descriptor_bins(params.descriptor);
  ws.index.build(NnsMethod::Gpu, points.data(), n, s);
  ws.normals.reserve(std::max<std::size_t>(n, 1));
  if (given && n)
    CU_CHECK(cudaMemcpyAsync(ws.normals.get(), given->data(), n * sizeof(float3),
                             cudaMemcpyHostToDevice, s));
  clock.mark("upload");
  search_rows(ws, params.neighbourhood, ws.feature_rows);
  clock.mark("neighbours");
  if (!given) {
    const bool shared = same(params.normals.neighbourhood, params.neighbourhood);
    if (!shared) search_rows(ws, params.normals.neighbourhood, ws.normal_rows);
    run_normals(ws, shared ? ws.feature_rows.view : ws.normal_rows.view, vp);
    clock.mark("normals");
  }
  if (!given) {
    download_normals(ws, n, out.normals, out.curvature);
    ws.stream.sync();  // the host decides deferred pairs with these normals
  }
  ws.out.reserve(n * std::size_t(bins));
  ws.spfh.reserve(params.descriptor == Descriptor::Fpfh ? n * 33 : 1);
  const Neighbourhood& nb = params.neighbourhood;
  const HostSide host{points, given ? *given : out.normals, nb.k > 0 ? std::min(nb.k, int(n)) : 0,
                      &ws.feature_rows.host_offsets};
  run_descriptors<32, 4>(ws, params.descriptor, int(n), ws.feature_rows.view, host);
  clock.mark("descriptors");
  download(out.histograms, ws.out.get(), n * std::size_t(bins), s);
  clock.mark("download");
  ws.stream.sync();
  clock.collect(out.stages);
}

void gpu_paper_descriptors(const std::vector<Point3f>& points, const std::vector<Point3f>& normals,
                           const HostNeighbours& nb, Descriptor descriptor, FeatureResult& out) {
  using namespace feat;
  cuda::require_device("features (gpu-paper)");
  auto [lock, ws] = cuda::acquire_workspace<Workspace>();
  cudaStream_t s = ws.stream.get();
  cuda::StageClock clock(s);
  const std::size_t n = points.size(), m = nb.indices.size();
  const int bins = descriptor_bins(descriptor);
  ws.index.build(NnsMethod::GpuBruteForce, points.data(), n, s);  // upload only: no structure
  ws.normals.reserve(std::max<std::size_t>(n, 1));
  ws.offsets.reserve(n + 1);
  DeviceRows& r = ws.feature_rows;
  r.index.reserve(std::max<std::size_t>(m, 1));
  r.d2.reserve(std::max<std::size_t>(m, 1));
  if (n) {
    CU_CHECK(cudaMemcpyAsync(ws.normals.get(), normals.data(), n * sizeof(float3),
                             cudaMemcpyHostToDevice, s));
    CU_CHECK(cudaMemcpyAsync(ws.offsets.get(), nb.offsets.data(), (n + 1) * sizeof(unsigned),
                             cudaMemcpyHostToDevice, s));
  }
  if (m) {
    CU_CHECK(cudaMemcpyAsync(r.index.get(), nb.indices.data(), m * sizeof(int),
                             cudaMemcpyHostToDevice, s));
    CU_CHECK(cudaMemcpyAsync(r.d2.get(), nb.sq_distances.data(), m * sizeof(float),
                             cudaMemcpyHostToDevice, s));
  }
  clock.mark("upload");
  ws.out.reserve(std::max<std::size_t>(n * std::size_t(bins), 1));
  ws.spfh.reserve(descriptor == Descriptor::Fpfh ? std::max<std::size_t>(n * 33, 1) : 1);
  if (n) {
    const HostSide host{points, normals, 0, &nb.offsets};
    run_descriptors<64, 1>(ws, descriptor, int(n),
                           Rows{ws.offsets.get(), 0, r.index.get(), r.d2.get()}, host);
  }
  clock.mark("descriptors");
  download(out.histograms, ws.out.get(), n * std::size_t(bins), s);
  clock.mark("download");
  ws.stream.sync();
  clock.collect(out.stages);
}

}  // namespace cumulus
