#include "nns/grid_plan.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace cumulus::nns {

namespace {

// The absolute margin that covers float rounding of cell assignment for cells of edge `cell`,
// `max_dim` of them along the longest axis, coordinates up to `magnitude`.
float grid_slack(double cell, int max_dim, double magnitude) {
  const double ulp = std::ldexp(std::max(magnitude, cell * max_dim), -23);
  return float(cell * (1e-5 + 1e-6 * max_dim) + 8 * ulp);
}

}  // namespace

GridDensity knn_density(int k) {
  GridDensity d;
  if (k >= kFinerKnnFromK) {
    d.fine_points_per_cell = 0.3f * float(k);
    d.fine_shells = 2;
  }
  return d;
}

Bounds scan_bounds(const Point3f* points, std::size_t n) {
  Bounds b;
  for (std::size_t i = 0; i < n; ++i) {
    const float v[3] = {points[i].x, points[i].y, points[i].z};
    if (!std::isfinite(v[0]) || !std::isfinite(v[1]) || !std::isfinite(v[2])) continue;
    for (int a = 0; a < 3; ++a) {
      b.lo[a] = std::min(b.lo[a], v[a]);
      b.hi[a] = std::max(b.hi[a], v[a]);
    }
    ++b.finite;
  }
  return b;
}

GridPlan plan_grid(const Point3f* points, std::size_t n, float points_per_cell, float reach,
                   float within_reach) {
  return plan_grid(scan_bounds(points, n), points_per_cell, reach, within_reach);
}

GridPlan plan_grid(const Bounds& bounds, float points_per_cell, float reach, float within_reach) {
  GridPlan plan;
  plan.finite = bounds.finite;
  if (plan.finite == 0) return plan;
  double lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    lo[a] = bounds.lo[a];
    hi[a] = bounds.hi[a];
  }
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
  plan.slack = grid_slack(plan.cell, max_dim, magnitude);
  return plan;
}

namespace {

// Targets per occupied cell of edge c, weighted by targets, from a sample of m of the n: a
// sample point shares its cell with (m - 1) / (n - 1) of the cell's other targets on average.
// The sample's keys (below 2^63) counted in an open-addressing table rather than sorted: the
// radius outlier filter asks on every call (occupied_per_target).
double occupied_density(const std::vector<std::uint64_t>& keys, std::size_t n) {
  const std::size_t m = keys.size();
  if (m < 2 || n < 2) return 1;
  constexpr std::uint64_t kEmpty = ~std::uint64_t(0);
  const std::size_t slots = std::bit_ceil(2 * m);
  std::vector<std::uint64_t> table(slots, kEmpty);
  std::vector<std::uint32_t> count(slots, 0);
  for (const std::uint64_t key : keys) {
    std::size_t at = std::size_t((key * 0x9E3779B97F4A7C15ull) >> 32) & (slots - 1);
    while (table[at] != kEmpty && table[at] != key)
      at = (at + 1) & (slots - 1);
    table[at] = key;
    ++count[at];
  }
  double shared = 0;
  for (const std::uint32_t c : count)
    shared += double(c) * double(c > 0 ? c - 1 : 0);
  return 1 + shared / double(m) * double(n - 1) / double(m - 1);
}

constexpr std::size_t kSample = 512;

// Calls f(point) for an even sample of the n points, the finite ones among every (n / kSample)-th
// (so from kSample to 2 kSample of them, all below that).
template <class F>
void each_sampled(const Point3f* points, std::size_t n, F&& f) {
  const std::size_t stride = std::max<std::size_t>(1, n / kSample);
  for (std::size_t i = 0; i < n; i += stride) {
    const Point3f& p = points[i];
    if (std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z)) f(p);
  }
}

// The sample of each_sampled as coordinates.
std::vector<std::array<float, 3>> even_sample(const Point3f* points, std::size_t n) {
  std::vector<std::array<float, 3>> sample;
  sample.reserve(2 * kSample);
  each_sampled(points, n, [&](const Point3f& p) { sample.push_back({p.x, p.y, p.z}); });
  return sample;
}

// The sample's cells of edge c from the corner lo, as one key each.
std::vector<std::uint64_t> cell_keys(const std::vector<std::array<float, 3>>& sample,
                                     const std::array<float, 3>& lo, double c) {
  std::vector<std::uint64_t> keys;
  keys.reserve(sample.size());
  for (const auto& v : sample) {
    std::uint64_t key = 0;
    for (int a = 0; a < 3; ++a)
      key = (key << 21) | (std::uint64_t(std::max(0.0, std::floor((double(v[a]) - lo[a]) / c))) &
                           ((std::uint64_t(1) << 21) - 1));
    keys.push_back(key);
  }
  return keys;
}

}  // namespace

double occupied_per_target(const Point3f* points, std::size_t n, const GridPlan& plan) {
  // plan_fine_grid's sample, its cells found as the device finds them (nns/cuda/grid.cuh,
  // grid_coord: a float product with the inverse edge, truncated, since std::floor is a library
  // call here). Every radius outlier call asks: 9.2 us for a KITTI frame with the sample's
  // double quotients, std::floor and a sort, 5.6 us this way (the 2-core CI machine).
  const float inv_cell = 1.0f / plan.cell;
  std::vector<std::uint64_t> keys;
  keys.reserve(2 * kSample);
  each_sampled(points, n, [&](const Point3f& p) {
    const float v[3] = {p.x, p.y, p.z};
    std::uint64_t key = 0;
    for (int a = 0; a < 3; ++a) {
      const float t = (v[a] - plan.lo[a]) * inv_cell;
      const int cell = !(t >= 0.f) ? 0 : t >= float(plan.dims[a]) ? plan.dims[a] - 1 : int(t);
      key = (key << 21) | (std::uint64_t(cell) & ((std::uint64_t(1) << 21) - 1));
    }
    keys.push_back(key);
  });
  return occupied_density(keys, plan.finite);
}

std::optional<GridPlan> plan_fine_grid(const Point3f* points, std::size_t n, const GridPlan& coarse,
                                       float occupied) {
  if (coarse.finite < 64 || !(occupied > 0)) return std::nullopt;
  // Below this many targets a coarse cell, the second grid does not pay for itself (H200, ICP:
  // the bunny's 52 lost 10 %, a KITTI frame's 455 gained 15 %). A bounded search that does not
  // fit the fine grid's box falls back to the coarse one, having spent its test.
  const double kWorthwhile = std::max(100.0, 1.5 * double(occupied));
  const std::vector<std::array<float, 3>> sample = even_sample(points, n);
  const auto keys_for = [&](double c) { return cell_keys(sample, coarse.lo, c); };
  const double extent[3] = {double(coarse.cell) * coarse.dims[0],
                            double(coarse.cell) * coarse.dims[1],
                            double(coarse.cell) * coarse.dims[2]};
  const auto count = [&](double c) {
    double total = 1;
    for (double e : extent)
      total *= std::ceil(e / c);
    return total;
  };
  const double budget = std::min(64.0 * double(coarse.finite) + 4096.0, double(1 << 25));
  double cell = coarse.cell;
  // The square law is only near (scan lines sample a surface unevenly): a few corrections, each
  // from a fresh estimate.
  for (int step = 0; step < 3; ++step) {
    const double density = occupied_density(keys_for(cell), coarse.finite);
    if (step == 0 && density <= kWorthwhile) return std::nullopt;
    if (step > 0 && density >= 0.8 * occupied && density <= 1.25 * occupied) break;
    double refined = cell * std::sqrt(double(occupied) / density);
    while (count(refined) > budget)
      refined *= 1.1;
    cell = std::min(refined, double(coarse.cell) / 1.5);
  }
  if (cell >= double(coarse.cell) / 1.5) return std::nullopt;
  GridPlan plan = coarse;
  plan.cell = float(cell);
  int max_dim = 1;
  double magnitude = 0;
  for (int a = 0; a < 3; ++a) {
    plan.dims[a] = int(std::ceil(extent[a] / cell));
    max_dim = std::max(max_dim, plan.dims[a]);
    magnitude = std::max(
        {magnitude, std::abs(double(coarse.lo[a])), std::abs(double(coarse.lo[a]) + extent[a])});
  }
  plan.slack = grid_slack(plan.cell, max_dim, magnitude);
  return plan;
}

}  // namespace cumulus::nns
