#include "core/limits.h"

#include <algorithm>
#include <cmath>

namespace cumulus {

double floor_ms(const DeviceLimits& l, double bytes_up, double bytes_down, std::size_t batch,
                int grid_steps) {
  const auto ms = [](double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e6) : 0.0; };
  const double up = ms(bytes_up, l.h2d_pinned_gbps), down = ms(bytes_down, l.d2h_pinned_gbps);
  if (batch > 1) return std::max(up, down) + l.launch_sync_us * 1e-3 / double(batch);
  // The cheaper of the two waits measured (0: not measured, so not a candidate).
  const auto measured = [](double us) { return us > 0 ? us : HUGE_VAL; };
  const double cheaper = std::min(measured(l.grid_barrier_us), measured(l.dependent_step_us));
  const double step_us = cheaper < HUGE_VAL ? cheaper : 0.0;
  return up + down + l.launch_sync_us * 1e-3 + std::max(grid_steps, 0) * step_us * 1e-3;
}

}  // namespace cumulus
