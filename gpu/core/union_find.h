#pragma once
// Union-find on the host over int32 ids, roots the smallest id of their set: the brute-force
// clustering reference and the merge of clustering slabs.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace cumulus {

// Root of i, halving the path on the way.
inline std::int32_t find_root(std::vector<std::int32_t>& parent, std::int32_t i) {
  while (parent[std::size_t(i)] != i) {
    parent[std::size_t(i)] = parent[std::size_t(parent[std::size_t(i)])];
    i = parent[std::size_t(i)];
  }
  return i;
}

inline void unite(std::vector<std::int32_t>& parent, std::int32_t a, std::int32_t b) {
  a = find_root(parent, a);
  b = find_root(parent, b);
  if (a != b) parent[std::size_t(std::max(a, b))] = std::min(a, b);
}

}  // namespace cumulus
