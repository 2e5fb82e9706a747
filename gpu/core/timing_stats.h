#pragma once
// Statistics of repeated runs, for the benchmarks and the GUI's run history.
#include <cstddef>
#include <vector>

#include "core/timing.h"

namespace cumulus {

struct TimingStats {
  double median = 0, min = 0, max = 0;
  std::size_t runs = 0;
};
TimingStats timing_stats(std::vector<double> samples);

// Per-stage medians over repeated runs (stages matched by position and name).
StageTimes median_stages(const std::vector<StageTimes>& runs);

}  // namespace cumulus
