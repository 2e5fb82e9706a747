#include "nns/kdtree_build.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace cumulus::nns {

std::size_t left_subtree_size(std::size_t m) {
  if (m <= 1) return 0;
  const int h = std::bit_width(m) - 1;                       // levels below the root
  const std::size_t full_above = (std::size_t(1) << h) - 1;  // nodes in the full levels
  const std::size_t last = m - full_above;                   // nodes on the last level
  const std::size_t half = std::size_t(1) << (h - 1);  // last-level slots under the left child
  return (half - 1) + std::min(last, half);
}

namespace {

struct Builder {
  const Point3f* points;
  std::vector<std::int32_t>& order;
  LeftBalancedKdTree& tree;

  float coord(std::int32_t i, int axis) const {
    const Point3f& p = points[i];
    return axis == 0 ? p.x : axis == 1 ? p.y : p.z;
  }

  // Places order[begin, end) as the subtree rooted at `node`, iteratively down the left spine
  // would be equivalent; recursion depth is only log2(n).
  void build(std::size_t begin, std::size_t end, std::uint32_t node, int axis) {
    const std::size_t m = end - begin;
    if (m == 0) return;
    const std::size_t median = begin + left_subtree_size(m);
    std::nth_element(order.begin() + std::ptrdiff_t(begin), order.begin() + std::ptrdiff_t(median),
                     order.begin() + std::ptrdiff_t(end), [&](std::int32_t a, std::int32_t b) {
                       const float ca = coord(a, axis), cb = coord(b, axis);
                       return ca < cb || (ca == cb && a < b);
                     });
    const std::int32_t i = order[median];
    tree.x[node - 1] = points[i].x;
    tree.y[node - 1] = points[i].y;
    tree.z[node - 1] = points[i].z;
    tree.index[node - 1] = i;
    const int next = (axis + 1) % 3;
    build(begin, median, 2 * node, next);
    build(median + 1, end, 2 * node + 1, next);
  }
};

}  // namespace

LeftBalancedKdTree build_left_balanced(const Point3f* points, std::size_t n) {
  std::vector<std::int32_t> order;
  order.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Point3f& p = points[i];
    if (std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z))
      order.push_back(std::int32_t(i));
  }
  LeftBalancedKdTree tree;
  tree.x.resize(order.size());
  tree.y.resize(order.size());
  tree.z.resize(order.size());
  tree.index.resize(order.size());
  Builder{points, order, tree}.build(0, order.size(), 1, 0);
  return tree;
}

}  // namespace cumulus::nns
