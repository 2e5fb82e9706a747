#pragma once
// What every GPU entry point starts with: the check that a device is usable, and its
// per-process workspace of device buffers, held under a lock for the whole run (one GPU job of a
// kind at a time; buffers keep their capacity between runs).
#include <memory>
#include <mutex>
#include <string>

#include "core/device.h"
#include "core/error.h"

namespace cumulus::cuda {

// Throws GpuError "<what> needs a GPU: <reason>". The device cannot appear or vanish while the
// process runs, so it is queried once (the query costs a context).
inline void require_device(const std::string& what) {
  static const DeviceInfo dev = query_device();
  if (!dev.available) throw GpuError(what + " needs a GPU: " + dev.reason);
}

// Adds a function that frees a kind of workspace to what release_gpu_workspaces() calls
// (device.cpp).
void register_release(void (*release)());

template <class T>
struct LockedWorkspace {
  std::unique_lock<std::mutex> lock;
  T& ws;
};

// The workspace of type T, created on first use, with its lock taken.
template <class T>
LockedWorkspace<T> acquire_workspace() {
  static std::mutex mutex;
  static std::unique_ptr<T> ws;
  std::unique_lock<std::mutex> lock(mutex);
  if (!ws) {
    ws = std::make_unique<T>();
    static const bool registered = (register_release([] {
                                      std::lock_guard<std::mutex> held(mutex);
                                      ws.reset();
                                    }),
                                    true);
    (void)registered;
  }
  return {std::move(lock), *ws};
}

// The start of a GPU entry point named `what`: require_device, then the workspace.
template <class T>
LockedWorkspace<T> acquire_workspace(const std::string& what) {
  require_device(what);
  return acquire_workspace<T>();
}

// Buffers of type B kept between runs beside workspace W and used under its lock; release
// frees them under that lock too.
template <class B, class W>
B& buffers_beside() {
  static B b;
  static const bool registered = (register_release([] {
                                    auto held = acquire_workspace<W>();
                                    b = B{};
                                  }),
                                  true);
  (void)registered;
  return b;
}

}  // namespace cumulus::cuda
