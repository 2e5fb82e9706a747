#include "core/timing_stats.h"

#include <algorithm>

namespace cumulus {

TimingStats timing_stats(std::vector<double> v) {
  TimingStats t;
  t.runs = v.size();
  if (v.empty()) return t;
  std::sort(v.begin(), v.end());
  t.min = v.front();
  t.max = v.back();
  t.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  return t;
}

StageTimes median_stages(const std::vector<StageTimes>& runs) {
  StageTimes out;
  if (runs.empty()) return out;
  for (std::size_t s = 0; s < runs.front().size(); ++s) {
    std::vector<double> v;
    for (const auto& r : runs)
      if (s < r.size() && r[s].first == runs.front()[s].first) v.push_back(r[s].second);
    out.emplace_back(runs.front()[s].first, timing_stats(v).median);
  }
  return out;
}

}  // namespace cumulus
