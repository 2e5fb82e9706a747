#pragma once
// The floors of GPU work on the machine it runs on, measured rather than taken from data sheets:
// what moving bytes over PCIe costs (page-locked and pageable), what the device's own memory
// moves, what a launch costs (waited for, queued behind others, or as a one-kernel graph), and
// what a step costs in a loop whose every step depends on the whole GPU's last one (a kernel
// launched dependent on the one before, or a barrier across one resident grid).
// A benchmark row's floor is its bytes at those bandwidths plus one launch waited for, plus, for
// such a loop, the cheaper of those two waits a step: no implementation of the same transfers and
// steps can be faster.
#include <cstddef>
#include <string>
#include <vector>

namespace cumulus {

// One shape of a loop over the whole GPU and what a step of it waited: `how` is "dependent" (a
// kernel launched dependent on the last), "dependent, next let in early" (the same, each kernel
// letting the next one onto the SMs once all its blocks have started) or "barrier" (a barrier
// across one resident grid).
struct LoopStepWait {
  std::string how;
  int block_threads = 0;
  int blocks = 0;
  double us = 0;
};

struct DeviceLimits {
  std::string device;          // describe(query_device())
  double h2d_pinned_gbps = 0;  // GB/s (1e9 bytes), best of the timed copies
  double d2h_pinned_gbps = 0;
  double h2d_pageable_gbps = 0;
  double d2h_pageable_gbps = 0;
  double device_copy_gbps = 0;  // device to device: bytes read plus bytes written per second
  double launch_sync_us = 0;    // an empty kernel launched and waited for (median)
  double launch_queued_us = 0;  // an empty kernel queued behind others (mean over a long queue)
  double graph_launch_us = 0;   // a one-kernel CUDA graph launched and waited for (median)
  // A step of a loop split into kernels, each launched dependent on the one before it
  // (programmatic dependent launch; plain launches where the GPU has none), the median of a few
  // chains' means: the cheapest of the shapes in loop_steps; 0 where it could not be measured.
  double dependent_step_us = 0;
  // A barrier across one resident grid in one cooperative kernel, the mean over many: the
  // cheapest of the shapes in loop_steps; 0 where the GPU cannot launch cooperatively.
  double grid_barrier_us = 0;
  // Every shape measured: blocks of 128 threads (ICP's and the clustering's) filling the GPU
  // once, blocks of 1,024 filling it once, and one block of 1,024 an SM, since a loop's wait
  // grows with its blocks and a loop need not keep every thread the GPU holds.
  std::vector<LoopStepWait> loop_steps;
  std::size_t copy_bytes = 0;  // the size of each timed copy
};

// Measures the first GPU (about a second). Throws GpuError without one.
DeviceLimits measure_device_limits();

// The least time moving bytes_up to the GPU and bytes_down back at the page-locked bandwidths
// and waiting for one launch can take, in ms. For one item of a batch of `batch` streamed
// through (its uploads and downloads overlapping on the two copy engines, one launch waited for
// by all): the slower direction plus its share of the launch. `grid_steps`: a loop's steps that
// each need every point's result of the step before (an ICP iteration's sums before its solve,
// the solve before the next search), each at least one wait for the whole GPU: the cheaper of
// the two measured.
double floor_ms(const DeviceLimits& l, double bytes_up, double bytes_down, std::size_t batch = 1,
                int grid_steps = 0);

}  // namespace cumulus
