#pragma once
// The paper's search of the left-balanced kd-tree: depth-first, nearer child first, the farther
// child pushed on an explicit stack with its splitting-plane distance, and popped subtrees
// pruned when that distance already exceeds the current limit ("trim optimisation").
#include <cuda_runtime.h>

#include "core/cuda/distance.cuh"

namespace cumulus::nns {

struct KdTreeView {
  const float* x;
  const float* y;
  const float* z;
  const int* index;
  int n;
};

// Deep enough for any tree of up to 2^31 nodes: at most one entry per level.
constexpr int kKdStack = 32;

template <class Visitor>
__device__ void kdtree_visit(float3 q, const KdTreeView& t, Visitor& v) {
  unsigned stack_node[kKdStack];
  float stack_plane[kKdStack];
  int top = 0;
  unsigned node = 1;
  int axis = 0;
  while (true) {
    // Descend to a leaf, visiting every node on the way.
    while (node <= unsigned(t.n)) {
      const float3 p =
          make_float3(__ldg(t.x + node - 1), __ldg(t.y + node - 1), __ldg(t.z + node - 1));
      v.visit(cuda::dist2(q, p), __ldg(t.index + node - 1));
      const float qa = axis == 0 ? q.x : axis == 1 ? q.y : q.z;
      const float pa = axis == 0 ? p.x : axis == 1 ? p.y : p.z;
      const float diff = __fsub_rn(qa, pa);
      const unsigned near = diff < 0 ? 2 * node : 2 * node + 1;
      const unsigned far = near ^ 1u;
      if (far <= unsigned(t.n)) {
        stack_node[top] = far;
        stack_plane[top] = __fmul_rn(diff, diff);
        ++top;
      }
      node = near;
      axis = axis == 2 ? 0 : axis + 1;
    }
    // Backtrack to the nearest pending subtree that can still hold something wanted. The
    // plane distance is a lower bound of any distance on the far side as FLANN rounds it.
    node = 0;
    while (top > 0) {
      --top;
      if (stack_plane[top] <= v.limit()) {
        node = stack_node[top];
        break;
      }
    }
    if (node == 0) return;
    axis = (31 - __clz(node)) % 3;
  }
}

}  // namespace cumulus::nns
