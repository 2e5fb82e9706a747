// Clustering beyond one call (GPU memory, or the 2^26 points a `gpu` call takes): slabs with
// halos along the longest axis, one call per slab, an exact union-find merge on the host.
// Every pass over the whole cloud runs on all cores (core/parallel.h): at 100M points one
// thread spent seconds here while the GPU took a fraction of that.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <future>
#include <memory>
#include <numeric>

#include "cluster/cluster.h"
#include "cluster/cluster_impl.h"
#include "cluster/cuda/cluster_gpu.h"
#include "cluster/slab_partition.h"
#include "core/capacity.h"
#include "core/device.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/union_find.h"

namespace cumulus {

namespace {

// Device bytes a `gpu` call needs per point (hash slots for 2 to 4 cells per point, the sorted
// points, union-find, open cell pairs and relabelling arrays: up to about 300), rounded up from
// its workspace.
constexpr std::size_t kGpuBytesPerPoint = 320;
constexpr std::size_t kGpuMaxCallPoints = std::size_t(1) << 26;
// A slab's labels below this are counted in per-thread arrays: canonical labels put the largest
// components first, and atomics on one ground cluster's counter would serialise the threads.
constexpr std::int32_t kLocalLabels = 1024;

// Components of all slabs numbered one after another; per component its core points' count and
// smallest index (a halo point is counted in the slab whose core holds it).
struct Components {
  std::vector<std::int32_t> size, first;
  std::int32_t add(std::size_t count) {
    if (size.size() + count >= std::size_t(std::numeric_limits<std::int32_t>::max()))
      throw InvalidArgument("too many slab components to merge");
    const auto base = std::int32_t(size.size());
    size.resize(size.size() + count, 0);
    first.resize(first.size() + count, std::numeric_limits<std::int32_t>::max());
    return base;
  }
};

// Where a slab's labels go: its core points take their component (base + label) in
// `component`, and the components their counts and first points; its halo points' components
// go to `halo_component` (one per halo point) for the unions after the last slab.
struct SlabMerge {
  const std::uint32_t* members;
  std::size_t core;
  Components& comps;
  UnfilledVector<std::int32_t>& component;
  std::int32_t* halo_component;
  std::int32_t base = 0;

  // The labels of members [begin, end) of the slab, which has `clusters` components.
  void take(std::size_t begin, std::size_t end, const std::int32_t* labels, std::size_t clusters) {
    if (begin == 0) base = comps.add(clusters);
    const std::size_t core_end = std::min(end, std::max(begin, core));
    parallel_parts(core_end - begin, parts_for(core_end - begin, kSlabGrain),
                   [&](std::size_t b, std::size_t e, std::size_t) {
                     take_core(begin + b, begin + e, labels + b, clusters);
                   });
    for (std::size_t k = std::max(begin, core); k < end; ++k)
      halo_component[k - core] = base + labels[k - begin];
  }

 private:
  // Members [begin, end), labels[k] the label of member begin + k. Points of a component come in
  // runs (a cluster's points lie together in a scan or a file): one count per run, in a
  // thread's own array for the largest components (the first labels), atomically for the rest.
  void take_core(std::size_t begin, std::size_t end, const std::int32_t* labels,
                 std::size_t clusters) {
    std::int32_t local_size[kLocalLabels] = {}, local_first[kLocalLabels] = {};
    std::int32_t run_label = -1, run_first = 0, run_size = 0;
    auto close_run = [&] {
      if (run_size == 0) return;
      if (run_label < kLocalLabels) {
        if (local_size[run_label] == 0) local_first[run_label] = run_first;  // members rise
        local_size[run_label] += run_size;
      } else {
        add_to(std::size_t(base + run_label), run_size, run_first);
      }
    };
    for (std::size_t k = begin; k < end; ++k) {
      const std::int32_t l = labels[k - begin];
      if (l < 0 || std::size_t(l) >= clusters)
        throw Error("internal: a finite point of a slab has no component");
      const auto i = std::int32_t(members[k]);
      component[std::size_t(i)] = base + l;
      if (l != run_label) {
        close_run();
        run_label = l, run_first = i, run_size = 0;
      }
      ++run_size;
    }
    close_run();
    for (std::int32_t l = 0; l < kLocalLabels; ++l)
      if (local_size[l] > 0) add_to(std::size_t(base + l), local_size[l], local_first[l]);
  }

  void add_to(std::size_t c, std::int32_t size, std::int32_t first) {
    std::atomic_ref<std::int32_t>(comps.size[c]).fetch_add(size, std::memory_order_relaxed);
    std::atomic_ref<std::int32_t> f(comps.first[c]);
    std::int32_t cur = f.load(std::memory_order_relaxed);
    while (first < cur && !f.compare_exchange_weak(cur, first, std::memory_order_relaxed)) {
    }
  }
};

// Clusters slab s with `method` (every component kept) and hands its labels to `merge`.
void cluster_slab(const Point3f* points, const Slabs& slabs, std::size_t s, ClusterMethod method,
                  const ClusterParams& all, SlabMerge& merge, StageTimes& stages) {
  const std::uint32_t* mem = slabs.members.get() + slabs.begin[s];
  const std::size_t m = slabs.size(s);
  auto gather = [&](std::size_t b, std::size_t e, Point3f* dst) {
    parallel_parts(e - b, parts_for(e - b, kSlabGrain),
                   [&](std::size_t lo, std::size_t hi, std::size_t) {
                     for (std::size_t k = lo; k < hi; ++k)
                       dst[k] = points[mem[b + k]];
                   });
  };
  auto take = [&](std::size_t b, std::size_t e, const std::int32_t* labels, std::size_t clusters) {
    merge.take(b, e, labels, clusters);
  };
  if (is_gpu_method(method)) {
    gpu_cluster_gathered(m, {gather, take}, all, method, stages);
    return;
  }
  std::vector<Point3f> buffer(m);
  gather(0, m, buffer.data());
  const ClusterResult part = euclidean_cluster_call(buffer.data(), m, all, method);
  stages.insert(stages.end(), part.stages.begin(), part.stages.end());
  take(0, m, part.labels.data(), part.sizes.size());
}

// Adds each stage's time to the one of the same name in `sum`, keeping the first order seen.
void add_stages(StageTimes& sum, const StageTimes& more) {
  // A stage by reference, not a structured binding: Debian 12's clang 14 (the fuzz build's
  // compiler) does not capture bindings in lambdas.
  for (const auto& stage : more) {
    auto it =
        std::find_if(sum.begin(), sum.end(), [&](const auto& e) { return e.first == stage.first; });
    if (it == sum.end())
      sum.push_back(stage);
    else
      it->second += stage.second;
  }
}

}  // namespace

std::size_t cluster_call_capacity(ClusterMethod method, std::size_t n) {
  if (method != ClusterMethod::Gpu) return std::numeric_limits<std::size_t>::max();
  return gpu_call_capacity(kGpuBytesPerPoint, n, kGpuMaxCallPoints);
}

ClusterResult euclidean_cluster_tiled(const Point3f* points, std::size_t n,
                                      const ClusterParams& params, ClusterMethod method,
                                      std::size_t max_tile_points,
                                      const ClusterProgress& progress) {
  validate(params);
  if (n >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("clouds of 2^31 points or more are not supported");
  WallTimer total, t;
  ClusterResult r;
  // Each point's component while merging, its label at the end: 4 bytes a point set to -1 (the
  // non-finite points' label) on a thread of its own while the cloud is partitioned, as one
  // thread takes about as long to fault in and fill them as all cores take to partition.
  // (The future, declared after r, waits for the thread when destroyed, a throw included.)
  auto labels_ready = std::async(std::launch::async, [&r, n] { r.labels.assign(n, -1); });
  const std::size_t capacity = cluster_call_capacity(method, n);
  const std::size_t cap = max_tile_points > 0 ? std::min(max_tile_points, capacity) : capacity;
  StageTimes partition;  // reported under one "partition (N slabs)" line
  const Slabs slabs = partition_into_slabs(points, n, params.tolerance, cap, partition);
  const std::size_t count = slabs.count(), finite = slabs.finite;
  t.reset();
  labels_ready.get();
  partition.emplace_back("labels set (waited for)", t.ms());
  double partition_ms = 0;
  for (const auto& stage : partition)
    partition_ms += stage.second;
  r.stages.emplace_back("partition (" + std::to_string(count) + " slabs)", partition_ms);
  for (const auto& [name, ms] : partition)
    r.stages.emplace_back("  " + name, ms);

  // Each slab clustered whole (every component kept); components are numbered across slabs.
  ClusterParams all = params;
  all.min_size = 1;
  all.max_size = std::numeric_limits<std::int32_t>::max();
  auto& component = r.labels;
  std::vector<std::size_t> halo_begin(count + 1, 0);
  for (std::size_t s = 0; s < count; ++s)
    halo_begin[s + 1] = halo_begin[s] + slabs.halo(s);
  std::vector<std::int32_t> halo_component(halo_begin.back());
  Components comps;
  StageTimes slab_stages;
  t.reset();
  for (std::size_t s = 0; s < count; ++s) {
    if (slabs.size(s) == 0) continue;
    SlabMerge merge{slabs.members.get() + slabs.begin[s], slabs.core[s], comps, component,
                    halo_component.data() + halo_begin[s]};
    StageTimes stages;
    cluster_slab(points, slabs, s, method, all, merge, stages);
    add_stages(slab_stages, stages);
    if (progress && !progress(s + 1, count)) throw Cancelled("clustering cancelled");
  }
  r.stages.emplace_back(std::string(method_name(method)) + " per slab, labels taken", t.ms());
  for (const auto& [name, ms] : slab_stages)
    r.stages.emplace_back("  " + name, ms);

  // A halo point joins its component in this slab with its component in its core slab.
  t.reset();
  const std::size_t K = comps.size.size();
  std::vector<std::int32_t> parent(K);
  std::iota(parent.begin(), parent.end(), 0);
  for (std::size_t s = 0; s < count; ++s) {
    const std::uint32_t* halo = slabs.members.get() + slabs.begin[s] + slabs.core[s];
    for (std::size_t k = 0; k < slabs.halo(s); ++k)
      unite(parent, component[halo[k]], halo_component[halo_begin[s] + k]);
  }
  r.stages.emplace_back("halo unions", t.ms());

  // Canonical labels: clusters by size, largest first, ties by their smallest point index.
  t.reset();
  std::vector<std::int32_t>& root = parent;  // parent[c] <= c: one ascending pass finds roots
  for (std::size_t c = 0; c < K; ++c) {
    const auto p = std::size_t(parent[c]);
    if (p == c) continue;
    root[c] = root[p];
    const auto rc = std::size_t(root[c]);
    comps.size[rc] += comps.size[c];
    comps.first[rc] = std::min(comps.first[rc], comps.first[c]);
  }
  std::vector<std::int32_t> clusters;
  for (std::size_t c = 0; c < K; ++c)
    if (root[c] == std::int32_t(c) && comps.size[c] > 0) clusters.push_back(std::int32_t(c));
  std::vector<std::int32_t> rank(K, -1);
  rank_components(clusters, comps.size, comps.first, params, rank, r);
  for (std::size_t c = 0; c < K; ++c)
    rank[c] = rank[std::size_t(root[c])];
  parallel_parts(n, parts_for(n, kSlabGrain), [&](std::size_t b, std::size_t e, std::size_t) {
    for (std::size_t i = b; i < e; ++i)
      if (component[i] >= 0) component[i] = rank[std::size_t(component[i])];
  });
  r.non_finite = n - finite;
  r.stages.emplace_back("canonicalize", t.ms());
  r.method = method_name(method);
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
