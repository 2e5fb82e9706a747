#pragma once
// How many points one GPU call may take, from an estimate of its device memory per point.
#include <algorithm>
#include <cstddef>
#include <limits>

#include "core/device.h"

namespace cumulus {

// The cap of set_gpu_memory_limit, or for large inputs without one (above 2^22 points: asking
// costs more than a small frame's whole run) nine tenths of the device's free memory, divided
// by `bytes_per_point`; at most `hard_limit`. Unbounded without a cap and for small inputs.
inline std::size_t gpu_call_capacity(std::size_t bytes_per_point, std::size_t points,
                                     std::size_t hard_limit) {
  std::size_t budget = gpu_memory_limit();
  if (budget == 0 && points > (std::size_t(1) << 22)) {
    const DeviceInfo info = query_device();
    if (info.available) budget = info.free_memory / 10 * 9;
  }
  if (budget == 0) return hard_limit;
  return std::min(hard_limit, std::max<std::size_t>(budget / bytes_per_point, 1));
}

}  // namespace cumulus
