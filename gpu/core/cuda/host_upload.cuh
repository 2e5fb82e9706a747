#pragma once
// Uploads of clouds from the caller's memory. The driver takes pageable memory to the device
// through its own page-locked staging, one copy on the calling thread; registering the caller's
// range for the copy (cudaHostRegister) lets the copy engine read it at the bus's speed, but the
// registration and its undoing cost more than they save below tens of megabytes. On an H200's
// 16-core host (2026-11-30, docs/benchmarks.md), pageable against registered (register, copy,
// unregister): 1.5 MB 0.14-0.25 ms against 0.41, 6 MB 0.82-0.88 against 0.92-0.94; in `bench
// cluster`'s upload stage, 24 MB 1.7-3.5 against 1.6-2.1 ms, 96 MB 11.1-14.0 against 5.9-7.2.
#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>

#include "core/cuda/buffer.cuh"
#include "core/cuda/check.cuh"

namespace cumulus::cuda {

// From this many bytes an upload from pageable memory registers the range for its copy.
inline constexpr std::size_t kRegisterUploadsFrom = std::size_t(32) << 20;

// The caller's range registered for the life of this object (read only where the device allows
// it: the caller's cloud is const), or not registered where the driver refuses: a range that
// shares a page with a registered one (the caller's own registration, say), memory the driver
// cannot lock. A refusal is no error: the copy then goes the driver's pageable way. (upload()
// asks for none over page-locked memory: that is copied as it is.)
class RegisteredRange {
 public:
  RegisteredRange(const void* host, std::size_t bytes) : host_(const_cast<void*>(host)) {
    static const unsigned flags = [] {
      int device = 0, read_only = 0;
      if (cudaGetDevice(&device) != cudaSuccess ||
          cudaDeviceGetAttribute(&read_only, cudaDevAttrHostRegisterReadOnlySupported, device) !=
              cudaSuccess) {
        (void)cudaGetLastError();
        return unsigned(cudaHostRegisterDefault);
      }
      return read_only ? unsigned(cudaHostRegisterReadOnly) : unsigned(cudaHostRegisterDefault);
    }();
    registered_ = cudaHostRegister(host_, bytes, flags) == cudaSuccess;
    if (!registered_) (void)cudaGetLastError();  // not sticky: clear it for the next check
  }
  ~RegisteredRange() {
    // An unregistration that fails leaves the pages locked until the process ends; nothing to
    // undo here, and a destructor must not throw.
    if (registered_ && cudaHostUnregister(host_) != cudaSuccess) (void)cudaGetLastError();
  }
  RegisteredRange(const RegisteredRange&) = delete;
  RegisteredRange& operator=(const RegisteredRange&) = delete;
  bool registered() const { return registered_; }

 private:
  void* host_;
  bool registered_ = false;
};

// Copies `bytes` from host memory to device memory on stream s, as cudaMemcpyAsync would, except
// that a pageable range of at least kRegisterUploadsFrom bytes is registered for the copy and s is
// synchronised before it returns (the range is unregistered after its copy has landed). Such
// uploads take turns: two overlapping registrations would refuse each other, and one range's
// unregistration must not come while another thread's copy of it is in flight.
inline void upload(void* device, const void* host, std::size_t bytes, cudaStream_t s) {
  if (bytes >= kRegisterUploadsFrom && !device_address_of_pinned(host)) {
    static std::mutex turns;
    const std::lock_guard<std::mutex> lock(turns);
    const RegisteredRange range(host, bytes);
    CU_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, s));
    if (range.registered()) CU_CHECK(cudaStreamSynchronize(s));
    return;
  }
  CU_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, s));
}

}  // namespace cumulus::cuda
