#pragma once
// What the GPU backend can use on this machine.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/point_cloud.h"

namespace cumulus {

struct DeviceInfo {
  bool available = false;
  std::string name;              // e.g. "NVIDIA H100 80GB HBM3"
  std::size_t total_memory = 0;  // bytes
  std::size_t free_memory = 0;   // bytes
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::string reason;  // why it is unavailable, when it is
  bool built_with_cuda = false;
  int driver_version = 0;  // e.g. 13000 for CUDA 13.0; 0 when unknown
  int runtime_version = 0;
};

// Caps the GPU memory that memory-hungry methods may plan to use (bytes; 0 = no cap beyond
// what the device has free; CUMULUS_GPU_MEMORY_MB sets it at start). The matrix clustering
// methods refuse inputs over the cap; `gpu` clustering works in slabs within it.
void set_gpu_memory_limit(std::size_t bytes);
std::size_t gpu_memory_limit();

// Frees the device and page-locked buffers that GPU methods keep between runs (they grow on
// demand and stay, so that repeated runs allocate nothing); the next run allocates afresh. A run
// in progress finishes first.
void release_gpu_workspaces();

// A test hook: the n-th GPU memory allocation from now on (0: the next one) fails as if the
// device were out of memory; a negative n turns it off. Returns how many allocations were still
// to go before the failure (negative: none was armed, or it has fired).
int fail_gpu_allocation_after(int n);

// Page-locked host memory for n points, for the fastest uploads; ordinary memory where no GPU
// can be used.
std::shared_ptr<Point3f[]> allocate_pinned_points(std::size_t n);
std::shared_ptr<float[]> allocate_pinned_floats(std::size_t n);
std::shared_ptr<std::uint16_t[]> allocate_pinned_u16(std::size_t n);
// Whether `p` lies in page-locked host memory that the GPU reaches over the bus (the above, the
// page-locked pool's blocks, registered memory); false without a GPU.
bool is_page_locked(const void* p);

// CPU model, logical cores, GPU, driver and runtime: one line for benchmark reports.
std::string describe_host();

// Queries device 0 once per call; never throws.
DeviceInfo query_device();
// Every device this process can see (CUDA_VISIBLE_DEVICES narrows them; GPU methods use the
// first), in CUDA's order; free memory is read for the first only, to create no context on the
// others. One entry saying why, with available false, when there is none.
std::vector<DeviceInfo> query_devices();
// One line for status bars and logs: "NVIDIA H100 (79.1 GiB)" or "No GPU: <reason>".
std::string describe(const DeviceInfo& info);

}  // namespace cumulus
