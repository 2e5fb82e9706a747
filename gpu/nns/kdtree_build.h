#pragma once
// The paper's kd-tree: left-balanced, stored in arrays without child pointers (node i has
// children 2i and 2i+1, 1-based), split axis cycling x, y, z with depth, each node holding only
// its point and that point's index in the input (structure of arrays, for coalesced loads).
// Built on the host by the left-balanced median partition, as in the paper.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/point_cloud.h"

namespace cumulus::nns {

struct LeftBalancedKdTree {
  // Node i (1-based) is entry i - 1 of each array.
  std::vector<float> x, y, z;
  std::vector<std::int32_t> index;  // position of the node's point in the input
  std::size_t size() const { return index.size(); }
};

// Split axis of node i (1-based): its depth modulo 3.
inline int kd_axis(std::uint32_t node) {
  int depth = 0;
  while (node > 1) {
    node >>= 1;
    ++depth;
  }
  return depth % 3;
}

// Nodes in the left subtree of a left-balanced tree of m nodes: every level full except the
// last, which fills from the left.
std::size_t left_subtree_size(std::size_t m);

// Builds the tree over the finite points (non-finite ones are left out).
LeftBalancedKdTree build_left_balanced(const Point3f* points, std::size_t n);

}  // namespace cumulus::nns
