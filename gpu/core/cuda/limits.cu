// The floors' measurements (core/limits.h): copies timed with events on one stream, launches
// timed on the host around a wait.
#include <cooperative_groups.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/dependent_launch.cuh"
#include "core/cuda/occupancy.cuh"
#include "core/cuda/workspace.cuh"
#include "core/device.h"
#include "core/limits.h"

namespace cumulus {

namespace {

__global__ void k_empty() {}

// One step of a loop split into kernels: it waits for the step before it and leaves a word a
// block, so that each step's blocks have something the next one could depend on.
__global__ void k_wave_step(unsigned* words) {
  cuda::wait_for_previous_grid();
  if (threadIdx.x == 0) words[blockIdx.x] += 1;
}

// The same step letting the next one onto the SMs once all its blocks have started, so that the
// next one's blocks wait resident rather than being launched as this one ends.
__global__ void k_wave_step_early(unsigned* words) {
  cuda::wait_for_previous_grid();
  cuda::allow_next_grid();
  if (threadIdx.x == 0) words[blockIdx.x] += 1;
}

// Holds the stream until the host writes `*go` (page-locked memory read over the bus), so that a
// chain queued behind it runs at the device's pace rather than the host's launch rate.
__global__ void k_hold(const volatile unsigned* go) {
  while (*go == 0) {
  }
}

// `steps` steps of a loop in one resident grid, a barrier across the grid between them.
__global__ void k_wave_barriers(unsigned* words, int steps) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  for (int i = 0; i < steps; ++i) {
    if (threadIdx.x == 0) words[blockIdx.x] += 1;
    grid.sync();
  }
}

// A loop's shapes: blocks of ICP's and the clustering's kernels (128 threads) filling the GPU
// once, the largest blocks (1,024) filling it once, and one of those an SM.
struct Shape {
  int threads;
  bool one_an_sm;
};
constexpr Shape kShapes[] = {{128, false}, {1024, false}, {1024, true}};

// The blocks of `kernel` a shape launches: all that fit resident, or at most one an SM.
template <class Kernel>
int shape_blocks(Kernel kernel, Shape shape, int sms) {
  const int resident = cuda::resident_blocks(kernel, shape.threads);
  return shape.one_an_sm ? std::min(sms, resident) : resident;
}

// One measurement of a loop's step: the kernel it launches, on which shape, with how many blocks.
struct StepPlan {
  const char* how;  // LoopStepWait::how
  void (*kernel)(unsigned*);
  const char* launch_name;
  Shape shape;
  int blocks;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The best of `runs` timed copies (after two untimed), in GB/s.
template <class Copy>
double best_gbps(std::size_t bytes, int runs, cudaStream_t s, Copy&& copy) {
  cuda::Event start, stop;
  double best = 0;
  for (int i = 0; i < runs + 2; ++i) {
    start.record(s);
    copy();
    stop.record(s);
    stop.wait();
    const double ms = stop.since(start);
    if (i >= 2 && ms > 0) best = std::max(best, double(bytes) / (ms * 1e6));
  }
  return best;
}

// Pageable copies are synchronous for the host: timed with its clock.
template <class Copy>
double best_gbps_host(std::size_t bytes, int runs, Copy&& copy) {
  double best = 0;
  for (int i = 0; i < runs + 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i >= 2 && ms > 0) best = std::max(best, double(bytes) / (ms * 1e6));
  }
  return best;
}

template <class Step>
double median_us(int runs, Step&& step) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    t.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(t);
}

}  // namespace

DeviceLimits measure_device_limits() {
  cuda::require_device("measuring the GPU's limits");
  DeviceLimits l;
  l.device = describe(query_device());
  // 64 MiB: large enough that a copy's fixed cost is under 1 % of it on PCIe 5.
  const std::size_t bytes = std::size_t(64) << 20;
  l.copy_bytes = bytes;
  cuda::Stream stream;
  cudaStream_t s = stream.get();
  cuda::DeviceBuffer<unsigned char> dev, dev2;
  cuda::PinnedBuffer<unsigned char> pinned;
  dev.reserve(bytes);
  dev2.reserve(bytes);
  pinned.reserve(bytes);
  std::vector<unsigned char> pageable(bytes, 1);
  std::fill(pinned.get(), pinned.get() + bytes, 1);
  l.h2d_pinned_gbps = best_gbps(bytes, 10, s, [&] {
    CU_CHECK(cudaMemcpyAsync(dev.get(), pinned.get(), bytes, cudaMemcpyHostToDevice, s));
  });
  l.d2h_pinned_gbps = best_gbps(bytes, 10, s, [&] {
    CU_CHECK(cudaMemcpyAsync(pinned.get(), dev.get(), bytes, cudaMemcpyDeviceToHost, s));
  });
  l.h2d_pageable_gbps = best_gbps_host(bytes, 5, [&] {
    CU_CHECK(cudaMemcpy(dev.get(), pageable.data(), bytes, cudaMemcpyHostToDevice));
  });
  l.d2h_pageable_gbps = best_gbps_host(bytes, 5, [&] {
    CU_CHECK(cudaMemcpy(pageable.data(), dev.get(), bytes, cudaMemcpyDeviceToHost));
  });
  // Read and written: twice the bytes cross the device's memory.
  l.device_copy_gbps =
      2 * best_gbps(bytes, 10, s, [&] {
        CU_CHECK(cudaMemcpyAsync(dev2.get(), dev.get(), bytes, cudaMemcpyDeviceToDevice, s));
      });
  for (int i = 0; i < 100; ++i)
    k_empty<<<1, 1, 0, s>>>();
  CU_CHECK_LAUNCH("k_empty");
  stream.sync();
  l.launch_sync_us = median_us(2000, [&] {
    k_empty<<<1, 1, 0, s>>>();
    CU_CHECK(cudaStreamSynchronize(s));
  });
  {
    const int queued = 20000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < queued; ++i)
      k_empty<<<1, 1, 0, s>>>();
    CU_CHECK_LAUNCH("k_empty");
    stream.sync();
    l.launch_queued_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        queued;
  }
  int device = 0, cooperative = 0;
  CU_CHECK(cudaGetDevice(&device));
  CU_CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  // Each shape's dependent kernels, with and without the next let in early, and its barriers
  // where the GPU can launch cooperatively.
  const int sms = query_device().multiprocessors;
  std::vector<StepPlan> plans;
  for (const Shape shape : kShapes) {
    plans.push_back({"dependent", &k_wave_step, "launch of k_wave_step", shape,
                     shape_blocks(&k_wave_step, shape, sms)});
    plans.push_back({"dependent, next let in early", &k_wave_step_early,
                     "launch of k_wave_step_early", shape,
                     shape_blocks(&k_wave_step_early, shape, sms)});
    if (cooperative)
      plans.push_back(
          {"barrier", nullptr, nullptr, shape, shape_blocks(&k_wave_barriers, shape, sms)});
  }
  // A word a block of the largest grid.
  std::size_t word_count = 1;
  for (const StepPlan& p : plans)
    word_count = std::max(word_count, std::size_t(p.blocks));
  cuda::DeviceBuffer<unsigned> words;
  words.reserve(word_count);
  CU_CHECK(cudaMemsetAsync(words.get(), 0, word_count * sizeof(unsigned), s));
  cuda::PinnedBuffer<unsigned> go;
  go.reserve(1);
  const auto* go_device = static_cast<const unsigned*>(cuda::device_address_of_pinned(go.get()));
  const auto dependent_step = [&](void (*kernel)(unsigned*), const char* name, int blocks,
                                  int threads) {
    const auto chain = [&](int count) {
      for (int i = 0; i < count; ++i)
        cuda::launch_dependent(name, kernel, blocks, threads, s, words.get());
    };
    chain(100);
    stream.sync();
    // Queued behind k_hold, the chain is all in the queue before it starts. 256 steps a run: the
    // host's queue of launches must not fill while the device is held (it would wait for room
    // that only the release it has not written yet makes).
    std::vector<double> per_step;
    for (int run = 0; run < 5 && go_device; ++run) {
      const int steps = 256;
      volatile unsigned* flag = go.get();
      *flag = 0;
      k_hold<<<1, 1, 0, s>>>(go_device);
      cuda::Event start, stop;
      try {
        CU_CHECK_LAUNCH("k_hold");
        start.record(s);
        chain(steps);
        stop.record(s);
      } catch (...) {
        *flag = 1;  // never leave the device held
        throw;
      }
      *flag = 1;
      stop.wait();
      per_step.push_back(double(stop.since(start)) * 1e3 / steps);
    }
    return per_step.empty() ? 0.0 : median(per_step);
  };
  const auto barrier = [&](int blocks, int threads) {
    const auto barriers = [&](int count) {
      unsigned* w = words.get();
      void* args[] = {&w, &count};
      CU_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(&k_wave_barriers),
                                           dim3(unsigned(blocks)), dim3(unsigned(threads)), args, 0,
                                           s));
    };
    barriers(100);
    // The difference of two runs leaves the launch out.
    const int few = 200, many = 4200;
    cuda::Event a, b, c;
    a.record(s);
    barriers(few);
    b.record(s);
    barriers(many);
    c.record(s);
    c.wait();
    return std::max(0.0, (c.since(b) - b.since(a)) * 1e3 / (many - few));
  };
  // The cheapest measured (0: not measured).
  const auto keep = [](double& cheapest, double us) {
    if (us > 0 && (cheapest <= 0 || us < cheapest)) cheapest = us;
  };
  for (const StepPlan& p : plans) {
    const bool barriers = p.kernel == nullptr;
    const double us = barriers ? barrier(p.blocks, p.shape.threads)
                               : dependent_step(p.kernel, p.launch_name, p.blocks, p.shape.threads);
    l.loop_steps.push_back({p.how, p.shape.threads, p.blocks, us});
    keep(barriers ? l.grid_barrier_us : l.dependent_step_us, us);
  }
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  k_empty<<<1, 1, 0, s>>>();
  CU_CHECK(cudaStreamEndCapture(s, &graph));
  try {
    CU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 100; ++i)
      CU_CHECK(cudaGraphLaunch(exec, s));
    stream.sync();
    l.graph_launch_us = median_us(2000, [&] {
      CU_CHECK(cudaGraphLaunch(exec, s));
      CU_CHECK(cudaStreamSynchronize(s));
    });
  } catch (...) {
    if (exec) cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    throw;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return l;
}

}  // namespace cumulus
