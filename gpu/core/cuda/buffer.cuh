#pragma once
// Owners of device and pinned host memory. Buffers grow on demand and keep their capacity, so
// repeated runs on same-size inputs allocate nothing.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "core/cuda/check.cuh"

namespace cumulus::cuda {

// Where a buffer's memory comes from: device memory, or page-locked host memory (for
// asynchronous copies).
struct DeviceMemory {
  static constexpr const char* kAllocName = "cudaMalloc";
  static cudaError_t allocate(void** p, std::size_t bytes) { return cudaMalloc(p, bytes); }
  static void free(void* p) noexcept { cudaFree(p); }
};
struct PinnedMemory {
  static constexpr const char* kAllocName = "cudaMallocHost";
  static cudaError_t allocate(void** p, std::size_t bytes) { return cudaMallocHost(p, bytes); }
  static void free(void* p) noexcept { cudaFreeHost(p); }
};

template <typename T, typename Memory>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t n) { reserve(n); }
  ~Buffer() { release(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    swap(o);
    return *this;
  }

  // Makes room for n elements; old contents are not kept when it grows.
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    release();
    if (injected_allocation_failure())
      check(cudaErrorMemoryAllocation, (std::string(Memory::kAllocName) + " (injected)").c_str(),
            __FILE__, __LINE__);
    void* p = nullptr;
    check(Memory::allocate(&p, n * sizeof(T)), Memory::kAllocName, __FILE__, __LINE__);
    data_ = static_cast<T*>(p);
    capacity_ = n;
  }
  void release() noexcept {
    if (data_) Memory::free(data_);
    data_ = nullptr;
    capacity_ = 0;
  }
  T* get() const { return data_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t bytes() const { return capacity_ * sizeof(T); }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(capacity_, o.capacity_);
  }
  T* data_ = nullptr;
  std::size_t capacity_ = 0;
};

template <typename T>
using DeviceBuffer = Buffer<T, DeviceMemory>;
template <typename T>
using PinnedBuffer = Buffer<T, PinnedMemory>;

// A stream and a set of timing events, created once.
class Stream {
 public:
  Stream() { CU_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { CU_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { CU_CHECK(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t s) { CU_CHECK(cudaEventRecord(e_, s)); }
  cudaEvent_t get() const { return e_; }
  // Blocks the host until the work before the event has run.
  void wait() const { CU_CHECK(cudaEventSynchronize(e_)); }
  // Milliseconds from `start` to this event (both must have completed).
  float since(const Event& start) const {
    float ms = 0;
    CU_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

// The address under which kernels read page-locked host memory (cudaMallocHost, cudaHostRegister)
// over the bus, or nullptr for pageable memory, which only a copy can take to the device.
inline const void* device_address_of_pinned(const void* host) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, host) != cudaSuccess) {
    (void)cudaGetLastError();  // an unknown pointer is pageable memory, not an error to keep
    return nullptr;
  }
  return a.type == cudaMemoryTypeHost ? a.devicePointer : nullptr;
}

inline int blocks_for(std::size_t n, int threads) {
  return int((n + std::size_t(threads) - 1) / std::size_t(threads));
}

}  // namespace cumulus::cuda
