#include "cloud_lod.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <thread>

namespace cumulus::ui {

namespace {

// Bits of v (below 128) spread to every third bit: one axis of a Morton code.
constexpr std::array<std::uint32_t, 128> kSpread = [] {
  std::array<std::uint32_t, 128> t{};
  for (std::uint32_t v = 0; v < 128; ++v)
    for (int b = 0; b < 7; ++b)
      t[v] |= ((v >> b) & 1u) << (3 * b);
  return t;
}();

// A stride coprime with n near n / golden ratio: rank k of a cell is its (k * stride mod n)-th
// point in the cloud's order, so consecutive ranks land far apart and any first ranks spread over
// the whole cell.
std::uint64_t golden_stride(std::uint64_t n) {
  if (n <= 2) return 1;
  auto s = std::uint64_t(double(n) * 0.6180339887498949);
  while (std::gcd(s, n) != 1)
    ++s;
  return s;
}

}  // namespace

LodIndex LodIndex::build(const PointCloud& cloud, const Bounds& bounds, std::size_t leaf_points) {
  const std::size_t n = cloud.size();
  if (n >= (std::size_t(1) << 32))
    throw std::length_error("the 3D view draws clouds of fewer than 2^32 points");
  LodIndex ix;
  ix.order_.resize(n);
  if (leaf_points == 0) leaf_points = std::clamp<std::size_t>(n / 256, 4096, 65536);
  // The finest level: about one grid cell for every four points, at most 64 a side (the grid's
  // counts then stay within a core's cache: the passes below look them up at random).
  int levels = 1;
  while (levels < 6 && (std::size_t(1) << (3 * (levels + 1))) <= std::max<std::size_t>(8, 4 * n))
    ++levels;
  const std::uint32_t side = 1u << levels;
  const std::array<double, 3> lo{bounds.min.x, bounds.min.y, bounds.min.z},
      hi{bounds.max.x, bounds.max.y, bounds.max.z};
  std::array<double, 3> scale{};
  for (int a = 0; a < 3; ++a)
    scale[a] = hi[a] > lo[a] ? double(side) / (hi[a] - lo[a]) : 0;
  const bool any_finite = bounds.valid;
  // The Morton code of a finite point's grid cell; `codes` for the others.
  const std::size_t codes = std::size_t(1) << (3 * levels);
  const auto code_of = [&](const Point3f& p) {
    if (!any_finite || !is_finite(p)) return std::uint32_t(codes);
    const auto axis = [&](float v, int a) {
      return std::min(side - 1, std::uint32_t(std::max(0.0, (double(v) - lo[a]) * scale[a])));
    };
    return kSpread[axis(p.x, 0)] | kSpread[axis(p.y, 1)] << 1 | kSpread[axis(p.z, 2)] << 2;
  };

  // The cloud in one slice a thread; each slice's points of each grid cell (non-finite ones
  // last), then all slices' first positions in Morton order.
  const std::size_t slices =
      n >= (1u << 20) ? std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16) : 1;
  const auto slice = [&](std::size_t t) { return std::pair{n * t / slices, n * (t + 1) / slices}; };
  const auto in_parallel = [&](const auto& work) {
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < slices; ++t)
      threads.emplace_back(work, t);
    work(std::size_t(0));
    for (auto& thread : threads)
      thread.join();
  };
  std::vector<std::vector<std::uint32_t>> slice_grid(slices,
                                                     std::vector<std::uint32_t>(codes + 1, 0));
  in_parallel([&](std::size_t t) {
    for (std::size_t i = slice(t).first; i < slice(t).second; ++i)
      ++slice_grid[t][code_of(cloud.points[i])];
  });
  std::vector<std::uint32_t> grid(codes + 1, 0);
  for (const auto& g : slice_grid)
    for (std::size_t k = 0; k <= codes; ++k)
      grid[k] += g[k];
  std::exclusive_scan(grid.begin(), grid.end(), grid.begin(), std::uint32_t(0));
  ix.drawable_ = grid[codes];

  // The leaves: octree nodes of at most `leaf_points` points or of the finest level, in Morton
  // order (a node's grid cells are a range of codes).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> leaves;
  const auto visit = [&](const auto& self, int level, std::uint32_t prefix) -> void {
    const int shift = 3 * (levels - level);
    const std::uint32_t begin = prefix << shift, end = (prefix + 1) << shift;
    const std::uint32_t count = grid[end] - grid[begin];
    if (count == 0) return;
    if (count <= leaf_points || level == levels) {
      leaves.emplace_back(begin, end);
      return;
    }
    for (std::uint32_t k = 0; k < 8; ++k)
      self(self, level + 1, prefix * 8 + k);
  };
  visit(visit, 0, 0);
  const std::size_t cells = leaves.size();
  ix.cells_.resize(cells);
  // Where each slice's points of each cell go (a counting sort), and the grid cells' leaves.
  std::vector<std::size_t> cursor(slices * (cells + 1), 0);
  std::size_t first = 0;
  for (std::size_t c = 0; c <= cells; ++c)
    for (std::size_t t = 0; t < slices; ++t) {
      cursor[t * (cells + 1) + c] = first;
      if (c == cells) {
        first += slice_grid[t][codes];  // the non-finite points, after all cells
        continue;
      }
      for (std::uint32_t k = leaves[c].first; k < leaves[c].second; ++k)
        first += slice_grid[t][k];
    }
  for (std::size_t c = 0; c < cells; ++c) {
    ix.cells_[c].count = grid[leaves[c].second] - grid[leaves[c].first];
    std::fill(grid.begin() + leaves[c].first, grid.begin() + leaves[c].second, std::uint32_t(c));
  }
  grid[codes] = std::uint32_t(cells);
  slice_grid.clear();
  const std::vector<std::size_t> cell_first(cursor.begin(), cursor.begin() + std::ptrdiff_t(cells));

  // Each cell's rounds: the first count * 2^(r - kRounds) ranks end round r - 1, floored after
  // adding the cell's phase (a golden-ratio sequence), so that the rounding errors of the cells
  // cancel; the last round ends at the count. Then where each cell's share of each round starts:
  // round by round, cell by cell.
  ix.ends_.resize(cells * kRounds);
  for (std::size_t c = 0; c < cells; ++c) {
    const double phase = std::fmod(double(c) * 0.6180339887498949, 1.0);
    const std::uint32_t m = ix.cells_[c].count;
    for (int r = 1; r <= kRounds; ++r)
      ix.ends_[c * kRounds + std::size_t(r - 1)] =
          std::min(m, std::uint32_t(std::ldexp(double(m), r - kRounds) + phase));
  }
  ix.start_.resize(cells * kRounds);
  std::size_t position = 0;
  for (int r = 0; r < kRounds; ++r)
    for (std::size_t c = 0; c < cells; ++c) {
      ix.start_[c * kRounds + std::size_t(r)] = position;
      position += ix.roundEnd(c, r + 1) - ix.roundEnd(c, r);
    }

  // The points of each cell in the cloud's order, the non-finite ones straight to their place
  // at the end of the draw order; each cell's bounds.
  std::vector<std::uint32_t> by_cell(n);
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::vector<std::array<float, 6>> slice_bounds(
      slices * cells, std::array<float, 6>{inf, -inf, inf, -inf, inf, -inf});
  in_parallel([&](std::size_t t) {
    std::size_t* next = cursor.data() + t * (cells + 1);
    std::array<float, 6>* bound = slice_bounds.data() + t * cells;
    for (std::size_t i = slice(t).first; i < slice(t).second; ++i) {
      const Point3f& p = cloud.points[i];
      const std::uint32_t c = grid[code_of(p)];
      if (c == cells) {
        ix.order_[next[c]++] = std::uint32_t(i);
        continue;
      }
      by_cell[next[c]++] = std::uint32_t(i);
      auto& b = bound[c];
      b[0] = std::min(b[0], p.x), b[1] = std::max(b[1], p.x);
      b[2] = std::min(b[2], p.y), b[3] = std::max(b[3], p.y);
      b[4] = std::min(b[4], p.z), b[5] = std::max(b[5], p.z);
    }
  });
  for (std::size_t c = 0; c < cells; ++c) {
    auto& b = ix.cells_[c].bounds;
    b = slice_bounds[c];
    for (std::size_t t = 1; t < slices; ++t) {
      const auto& o = slice_bounds[t * cells + c];
      for (int a = 0; a < 6; a += 2)
        b[a] = std::min(b[a], o[a]), b[a + 1] = std::max(b[a + 1], o[a + 1]);
    }
  }

  // Rank k of a cell is its (k * stride mod count)-th point (see golden_stride), written to the
  // cell's share of each round in turn: reads within one cell, a few sequential writes. Each
  // thread takes the cells of its slice of the draw order.
  in_parallel([&](std::size_t t) {
    const auto [from, to] = slice(t);
    for (std::size_t c = 0; c < cells; ++c) {
      const std::size_t at_cell = cell_first[c];
      if (at_cell < from || at_cell >= to) continue;
      const std::uint32_t m = ix.cells_[c].count;
      const std::uint64_t stride = golden_stride(m);
      const std::uint32_t* points = by_cell.data() + at_cell;
      std::uint64_t at = 0;
      for (int r = 0; r < kRounds; ++r) {
        std::uint32_t* out = ix.order_.data() + ix.start(c, r);
        for (std::uint32_t k = ix.roundEnd(c, r); k < ix.roundEnd(c, r + 1); ++k) {
          *out++ = points[at];
          at += stride;
          if (at >= m) at -= m;
        }
      }
    }
  });
  return ix;
}

void LodIndex::appendRanges(std::size_t c, std::uint32_t from, std::uint32_t to,
                            std::vector<DrawRange>& out) const {
  for (int r = 0; r < kRounds && from < to; ++r) {
    const std::uint32_t a = roundEnd(c, r), b = roundEnd(c, r + 1);
    const std::uint32_t lo = std::max(a, from), hi = std::min(b, to);
    if (lo < hi) out.push_back({start(c, r) + (lo - a), hi - lo});
  }
}

std::uint32_t LodIndex::available(std::size_t c, std::size_t uploaded) const {
  for (int r = 0; r < kRounds; ++r) {
    const std::uint32_t a = roundEnd(c, r), b = roundEnd(c, r + 1);
    const std::size_t s = start(c, r);
    if (s + (b - a) > uploaded) return a + std::uint32_t(uploaded > s ? uploaded - s : 0);
  }
  return cells_[c].count;
}

std::vector<std::uint32_t> LodIndex::extendInOrder(const std::vector<double>& sizes,
                                                   const std::vector<std::uint32_t>& available,
                                                   const std::vector<std::uint32_t>& shown,
                                                   std::size_t budget) const {
  std::vector<std::uint32_t> out = shown;
  for (int r = 0; r < kRounds && budget > 0; ++r)
    for (std::size_t c = 0; c < cells_.size() && budget > 0; ++c) {
      // A cell whose prefix stops short of this round (not yet uploaded) waits: its ranks are
      // drawn as a prefix, never with a hole.
      const std::uint32_t from = out[c];
      if (!(sizes[c] > 0) || from < roundEnd(c, r)) continue;
      const std::uint32_t to = std::min(roundEnd(c, r + 1), available[c]);
      if (from >= to) continue;
      const auto take = std::uint32_t(std::min<std::size_t>(to - from, budget));
      out[c] = from + take;
      budget -= take;
    }
  return out;
}

std::vector<double> lod_screen_sizes(const std::vector<LodCell>& cells, const double clip[16],
                                     double width, double height) {
  std::vector<double> sizes(cells.size(), 0.0);
  const double view = std::max(1.0, width * height);
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const auto& b = cells[c].bounds;
    if (cells[c].count == 0 || !(b[0] <= b[1])) continue;
    // The eight corners in clip coordinates; the cell is outside when all are beyond one plane.
    int beyond[6] = {0, 0, 0, 0, 0, 0};
    bool behind = false;
    double x0 = 1, x1 = -1, y0 = 1, y1 = -1;
    for (int k = 0; k < 8; ++k) {
      const double x = b[k & 1], y = b[2 + ((k >> 1) & 1)], z = b[4 + ((k >> 2) & 1)];
      const double cx = clip[0] * x + clip[1] * y + clip[2] * z + clip[3],
                   cy = clip[4] * x + clip[5] * y + clip[6] * z + clip[7],
                   cz = clip[8] * x + clip[9] * y + clip[10] * z + clip[11],
                   cw = clip[12] * x + clip[13] * y + clip[14] * z + clip[15];
      beyond[0] += cx > cw, beyond[1] += cx<-cw, beyond[2] += cy> cw, beyond[3] += cy < -cw;
      beyond[4] += cz > cw, beyond[5] += cz < -cw;
      if (!(cw > 1e-12)) {
        behind = true;
        continue;
      }
      x0 = std::min(x0, cx / cw), x1 = std::max(x1, cx / cw);
      y0 = std::min(y0, cy / cw), y1 = std::max(y1, cy / cw);
    }
    if (std::any_of(std::begin(beyond), std::end(beyond), [](int k) { return k == 8; })) continue;
    if (behind) {
      sizes[c] = view;
      continue;
    }
    const double dx = std::min(x1, 1.0) - std::max(x0, -1.0),
                 dy = std::min(y1, 1.0) - std::max(y0, -1.0);
    sizes[c] = std::clamp(0.25 * std::max(dx, 0.0) * width * std::max(dy, 0.0) * height, 1.0, view);
  }
  return sizes;
}

std::vector<std::uint32_t> lod_counts(const std::vector<double>& sizes,
                                      const std::vector<std::uint32_t>& available,
                                      const std::vector<std::uint32_t>& at_least,
                                      std::size_t budget) {
  const std::size_t cells = sizes.size();
  const auto count_at = [&](double lambda, std::vector<std::uint32_t>* out) {
    std::size_t total = 0;
    for (std::size_t c = 0; c < cells; ++c) {
      std::uint32_t k = 0;
      if (sizes[c] > 0) k = std::uint32_t(std::min(double(available[c]), lambda * sizes[c]));
      k = std::max(k, at_least.empty() ? 0u : at_least[c]);
      total += k;
      if (out) (*out)[c] = k;
    }
    return total;
  };
  std::vector<std::uint32_t> counts(cells, 0);
  // Past the largest available / size every cell on screen is whole.
  double hi = 0;
  for (std::size_t c = 0; c < cells; ++c)
    if (sizes[c] > 0) hi = std::max(hi, double(available[c]) / sizes[c] + 1);
  if (count_at(hi, nullptr) <= budget) {
    count_at(hi, &counts);
    return counts;
  }
  double lo = 0;
  for (int it = 0; it < 64 && hi - lo > 1e-9 * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    (count_at(mid, nullptr) <= budget ? lo : hi) = mid;
  }
  count_at(lo, &counts);
  return counts;
}

void merge_ranges(std::vector<DrawRange>& ranges, std::size_t extra) {
  std::sort(ranges.begin(), ranges.end(),
            [](const DrawRange& a, const DrawRange& b) { return a.first < b.first; });
  std::size_t out = 0;
  for (const DrawRange& r : ranges) {
    if (r.count == 0) continue;
    if (out > 0 && r.first <= ranges[out - 1].first + ranges[out - 1].count) {
      DrawRange& last = ranges[out - 1];
      last.count = std::max(last.first + last.count, r.first + r.count) - last.first;
    } else {
      ranges[out++] = r;
    }
  }
  ranges.resize(out);
  if (extra == 0 || ranges.size() < 2) return;
  // Gap k lies after range k; the smallest close while their points fit `extra`.
  std::vector<std::size_t> gaps(ranges.size() - 1);
  std::iota(gaps.begin(), gaps.end(), std::size_t(0));
  const auto gap = [&](std::size_t k) {
    return ranges[k + 1].first - (ranges[k].first + ranges[k].count);
  };
  std::sort(gaps.begin(), gaps.end(),
            [&](std::size_t a, std::size_t b) { return gap(a) < gap(b); });
  std::vector<bool> close(ranges.size(), false);
  std::size_t spent = 0;
  for (const std::size_t k : gaps) {
    if (spent + gap(k) > extra) break;
    spent += gap(k);
    close[k] = true;
  }
  out = 0;
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    if (k > 0 && close[k - 1])
      ranges[out - 1].count = ranges[k].first + ranges[k].count - ranges[out - 1].first;
    else
      ranges[out++] = ranges[k];
  }
  ranges.resize(out);
}

}  // namespace cumulus::ui
