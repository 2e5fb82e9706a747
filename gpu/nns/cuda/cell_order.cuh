#pragma once
// The point a per-point kernel's slot takes: DeviceIndex::cell_order's entry, or the slot itself
// where the caller passes no order (the points as they come) or the slot is past the points
// (`live` false: nothing is read).
#include <cuda_runtime.h>

namespace cumulus::nns {

__device__ __forceinline__ int point_in_order(const int* order, int slot, bool live = true) {
  return live && order ? order[slot] : slot;
}

}  // namespace cumulus::nns
