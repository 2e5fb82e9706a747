#include "core/limits.h"

#include <algorithm>

namespace cumulus {

double floor_ms(const DeviceLimits& l, double bytes_up, double bytes_down, std::size_t batch,
                int grid_steps) {
  const auto ms = [](double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e6) : 0.0; };
  const double up = ms(bytes_up, l.h2d_pinned_gbps), down = ms(bytes_down, l.d2h_pinned_gbps);
  if (batch > 1) return std::max(up, down) + l.launch_sync_us * 1e-3 / double(batch);
  // Where only one of the two ways was measured, it is the cheapest known.
  double step_us = l.grid_barrier_us > 0 ? l.grid_barrier_us : l.dependent_step_us;
  if (l.grid_barrier_us > 0 && l.dependent_step_us > 0)
    step_us = std::min(l.grid_barrier_us, l.dependent_step_us);
  return up + down + l.launch_sync_us * 1e-3 + std::max(grid_steps, 0) * step_us * 1e-3;
}

}  // namespace cumulus
