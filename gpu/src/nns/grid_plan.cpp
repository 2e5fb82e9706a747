#include "nns/grid_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace cumulus::nns {

GridPlan plan_grid(const Point3f* points, std::size_t n, float points_per_cell, float reach) {
  // A tuning knob for benchmarks: CUMULUS_GRID_POINTS_PER_CELL overrides the density, the one
  // for a bounded reach too.
  float within_reach = 0.5f;
  if (const char* env = std::getenv("CUMULUS_GRID_POINTS_PER_CELL")) {
    const float v = std::strtof(env, nullptr);
    if (v > 0 && std::isfinite(v)) points_per_cell = within_reach = v;
  }
  GridPlan plan;
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (std::size_t i = 0; i < n; ++i) {
    const float v[3] = {points[i].x, points[i].y, points[i].z};
    if (!std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2])) continue;
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], double(v[a]));
      hi[a] = std::max(hi[a], double(v[a]));
    }
    ++plan.finite;
  }
  if (plan.finite == 0) return plan;
  double extent[3], largest = 0, magnitude = 0;
  for (int a = 0; a < 3; ++a) {
    extent[a] = hi[a] - lo[a];
    largest = std::max(largest, extent[a]);
    magnitude = std::max({magnitude, std::abs(lo[a]), std::abs(hi[a])});
  }
  if (largest <= 0) largest = 1;  // all targets on one spot: one cell
  // Flat or linear clouds still get a volume to divide.
  double volume = 1;
  for (double e : extent)
    volume *= std::max(e, largest * 1e-3);
  const double max_cells = 8.0 * double(plan.finite) + 4096.0;
  auto count = [&](double c) {
    double total = 1;
    for (double e : extent)
      total *= std::floor(e / c) + 1;
    return total;
  };
  auto size_cell = [&](float per_cell) {
    double c = std::cbrt(volume * double(per_cell) / double(plan.finite));
    while (count(c) > max_cells)
      c *= 1.25;
    return c;
  };
  double cell = size_cell(points_per_cell);
  if (reach > 0 && cell > reach) cell = size_cell(within_reach);
  // A cell far below float resolution of the coordinates would make assignment meaningless.
  cell = std::max(cell, magnitude * 1e-5 + 1e-30);
  plan.cell = float(cell);
  int max_dim = 1;
  for (int a = 0; a < 3; ++a) {
    plan.lo[a] = float(lo[a]);
    plan.dims[a] = int(std::floor(extent[a] / double(plan.cell))) + 1;
    max_dim = std::max(max_dim, plan.dims[a]);
  }
  const double ulp = std::ldexp(std::max(magnitude, double(plan.cell) * max_dim), -23);
  plan.slack = float(double(plan.cell) * (1e-5 + 1e-6 * max_dim) + 8 * ulp);
  return plan;
}

}  // namespace cumulus::nns
