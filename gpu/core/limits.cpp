#include "core/limits.h"

namespace cumulus {

double floor_ms(const DeviceLimits& l, double bytes_up, double bytes_down) {
  const auto ms = [](double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e6) : 0.0; };
  return ms(bytes_up, l.h2d_pinned_gbps) + ms(bytes_down, l.d2h_pinned_gbps) +
         l.launch_sync_us * 1e-3;
}

}  // namespace cumulus
