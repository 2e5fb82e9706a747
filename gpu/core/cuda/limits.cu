// The floors' measurements (core/limits.h): copies timed with events on one stream, launches
// timed on the host around a wait.
#include <algorithm>
#include <chrono>
#include <vector>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"
#include "core/cuda/workspace.cuh"
#include "core/device.h"
#include "core/limits.h"

namespace cumulus {

namespace {

__global__ void k_empty() {}

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
