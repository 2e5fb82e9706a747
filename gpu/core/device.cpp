#include "core/device.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#ifdef CUMULUS_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cumulus {

DeviceInfo query_device() {
  DeviceInfo info;
#ifdef CUMULUS_HAS_CUDA
  info.built_with_cuda = true;
  cudaDriverGetVersion(&info.driver_version);
  cudaRuntimeGetVersion(&info.runtime_version);
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    info.reason = std::string("CUDA reports ") + cudaGetErrorString(err) +
                  (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice
                       ? " (no NVIDIA GPU or driver on this machine)"
                       : "");
    cudaGetLastError();  // clear the sticky error so later queries start clean
    return info;
  }
  if (count == 0) {
    info.reason = "no CUDA device found";
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    info.reason = "cannot read the properties of CUDA device 0";
    cudaGetLastError();
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.total_memory = prop.totalGlobalMem;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
    info.free_memory = free_bytes;
  else
    cudaGetLastError();
#else
  info.reason = "this build has no CUDA support (nvcc was not found when it was configured)";
#endif
  return info;
}

std::vector<DeviceInfo> query_devices() {
  std::vector<DeviceInfo> all{query_device()};
#ifdef CUMULUS_HAS_CUDA
  int count = 0;
  if (!all.front().available || cudaGetDeviceCount(&count) != cudaSuccess) return all;
  for (int d = 1; d < count; ++d) {
    DeviceInfo info = all.front();
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    info.name = prop.name;
    info.total_memory = prop.totalGlobalMem;
    info.free_memory = 0;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    all.push_back(info);
  }
#endif
  return all;
}

std::string describe(const DeviceInfo& info) {
  if (!info.available) return "No GPU: " + info.reason;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (%.1f GiB, sm_%d%d, %d SMs)", info.name.c_str(),
                double(info.total_memory) / (1024.0 * 1024.0 * 1024.0), info.compute_major,
                info.compute_minor, info.multiprocessors);
  return buf;
}

namespace {
// CUMULUS_GPU_MEMORY_MB sets the cap for a whole process (the GUI or a CLI run), e.g. to make
// clustering work in slabs on a small cloud.
std::size_t limit_from_environment() {
  const char* env = std::getenv("CUMULUS_GPU_MEMORY_MB");
  if (!env) return 0;
  char* end = nullptr;
  const double mb = std::strtod(env, &end);
  return end != env && mb > 0 && mb < 1e9 ? std::size_t(mb * 1024 * 1024) : 0;
}
std::atomic<std::size_t> g_memory_limit{limit_from_environment()};
}  // namespace

void set_gpu_memory_limit(std::size_t bytes) {
  g_memory_limit = bytes;
}
std::size_t gpu_memory_limit() {
  return g_memory_limit;
}

namespace {
std::atomic<int> g_fail_countdown{-1};
std::mutex g_release_mutex;
std::vector<void (*)()>& releases() {
  static std::vector<void (*)()> list;
  return list;
}
}  // namespace

namespace cuda {
bool injected_allocation_failure() {
  int v = g_fail_countdown.load();
  while (v >= 0)
    if (g_fail_countdown.compare_exchange_weak(v, v - 1)) return v == 0;
  return false;
}
void register_release(void (*release)()) {
  std::lock_guard<std::mutex> lock(g_release_mutex);
  releases().push_back(release);
}
}  // namespace cuda

int fail_gpu_allocation_after(int n) {
  return g_fail_countdown.exchange(n < 0 ? -1 : n);
}

void release_gpu_workspaces() {
  std::vector<void (*)()> list;
  {
    std::lock_guard<std::mutex> lock(g_release_mutex);
    list = releases();
  }
  for (auto* release : list)
    release();
}

namespace {

// n elements of T, page-locked where a GPU can be used and the driver grants it.
template <class T>
std::shared_ptr<T[]> allocate_pinned(std::size_t n) {
  n = std::max<std::size_t>(n, 1);
#ifdef CUMULUS_HAS_CUDA
  static const bool gpu = query_device().available;
  void* p = nullptr;
  if (gpu && cudaMallocHost(&p, n * sizeof(T)) == cudaSuccess)
    return std::shared_ptr<T[]>(static_cast<T*>(p), [](T* q) { cudaFreeHost(q); });
  cudaGetLastError();
#endif
  return std::shared_ptr<T[]>(new T[n]);
}

}  // namespace

std::shared_ptr<Point3f[]> allocate_pinned_points(std::size_t n) {
  return allocate_pinned<Point3f>(n);
}

std::shared_ptr<float[]> allocate_pinned_floats(std::size_t n) {
  return allocate_pinned<float>(n);
}

std::shared_ptr<std::uint16_t[]> allocate_pinned_u16(std::size_t n) {
  return allocate_pinned<std::uint16_t>(n);
}

bool is_page_locked(const void* p) {
#ifdef CUMULUS_HAS_CUDA
  cudaPointerAttributes a{};
  if (p && cudaPointerGetAttributes(&a, p) == cudaSuccess) return a.type == cudaMemoryTypeHost;
  (void)cudaGetLastError();
#else
  (void)p;
#endif
  return false;
}

std::string describe_host() {
  std::string cpu = "unknown CPU";
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  const DeviceInfo d = query_device();
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s, %u logical cores; GPU: %s; CUDA driver %d.%d, runtime %d.%d",
                cpu.c_str(), std::thread::hardware_concurrency(), describe(d).c_str(),
                d.driver_version / 1000, (d.driver_version % 1000) / 10, d.runtime_version / 1000,
                (d.runtime_version % 1000) / 10);
  return buf;
}

}  // namespace cumulus
