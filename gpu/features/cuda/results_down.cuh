#pragma once
// The features' results on their way to the caller's vectors while the GPU works: the normals
// through page-locked memory (NormalsDown), the histograms' memory sized on a thread of its own
// (HostRows). Private to features/cuda (features_gpu.cu).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <future>
#include <vector>

#include "core/cuda/check.cuh"
#include "core/host_pages.h"
#include "core/point_cloud.h"
#include "core/timing.h"
#include "core/zeroed_vector.h"
#include "features/cuda/features_workspace.cuh"

namespace cumulus::feat {

// The normals and curvature to the result's vectors through page-locked memory kept with the
// workspace: queued after the normals kernel, and copied into the vectors by the host while the
// descriptors' first kernel runs (finish(), before the host decides deferred pairs with them).
// Through the driver's copy into the pageable vectors the host had waited for them between the
// two kernels: the bunny's FPFH at k = 64 took 1.17-1.18 ms against 1.03-1.05 (H200).
class NormalsDown {
 public:
  NormalsDown(Workspace& ws, std::size_t n, std::vector<Point3f>& normals,
              std::vector<float>& curvature)
      : ws_(ws), n_(n), normals_(normals), curvature_(curvature) {
    static_assert(sizeof(Point3f) == sizeof(float3));
    const cudaStream_t s = ws.stream.get();
    ws.normals_host.reserve(std::max<std::size_t>(n, 1));
    ws.curvature_host.reserve(std::max<std::size_t>(n, 1));
    if (n) {
      CU_CHECK(cudaMemcpyAsync(ws.normals_host.get(), ws.normals.get(), n * sizeof(float3),
                               cudaMemcpyDeviceToHost, s));
      CU_CHECK(cudaMemcpyAsync(ws.curvature_host.get(), ws.curvature.get(), n * sizeof(float),
                               cudaMemcpyDeviceToHost, s));
    }
    ws.normals_landed.record(s);
  }
  // Waits for the copies (not for the work queued after them) and fills the vectors; once.
  void finish() {
    if (done_) return;
    ws_.normals_landed.wait();
    const auto* from = reinterpret_cast<const Point3f*>(ws_.normals_host.get());
    normals_.assign(from, from + n_);
    curvature_.assign(ws_.curvature_host.get(), ws_.curvature_host.get() + n_);
    done_ = true;
  }

 private:
  Workspace& ws_;
  std::size_t n_;
  std::vector<Point3f>& normals_;
  std::vector<float>& curvature_;
  bool done_ = false;
};

// The result's histograms sized on a thread of its own while the GPU computes them: a fresh
// result's memory allocated (zero pages, nothing written: core/zeroed_vector.h) and its pages
// mapped in on all cores (core/host_pages.h). ready() waits for them: after the kernels are
// queued, so that the GPU works meanwhile. (Sized as a std::vector, the zero-fill of PFH's 125
// bins a point on that one thread took as long as the GPU's work on some hosts.)
class HostRows {
 public:
  HostRows(ZeroedVector<float>& rows, std::size_t values)
      : rows_(rows),
        sized_(
            std::async(std::launch::async, [&rows, values] { size_for_writing(rows, values); })) {}
  ZeroedVector<float>& ready() {
    WallTimer waited;
    if (sized_.valid()) sized_.get();
    wait_ms_ += waited.ms();
    return rows_;
  }
  double wait_ms() const { return wait_ms_; }

 private:
  ZeroedVector<float>& rows_;
  std::future<void> sized_;
  double wait_ms_ = 0;
};

}  // namespace cumulus::feat
