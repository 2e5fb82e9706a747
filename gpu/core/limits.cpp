#include "core/limits.h"

#include <algorithm>

namespace cumulus {

double floor_ms(const DeviceLimits& l, double bytes_up, double bytes_down, std::size_t batch) {
  const auto ms = [](double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e6) : 0.0; };
  const double up = ms(bytes_up, l.h2d_pinned_gbps), down = ms(bytes_down, l.d2h_pinned_gbps);
  if (batch > 1) return std::max(up, down) + l.launch_sync_us * 1e-3 / double(batch);
  return up + down + l.launch_sync_us * 1e-3;
}

}  // namespace cumulus
