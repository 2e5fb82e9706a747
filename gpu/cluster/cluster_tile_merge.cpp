// The exact merge of clusterings of overlapping tiles handed over one at a time (a Dask run's
// tiles in the Python module): a union-find over the tiles' components.
#include <numeric>

#include "cluster/cluster.h"
#include "core/error.h"
#include "core/union_find.h"

namespace cumulus {

ClusterTileMerge::ClusterTileMerge(std::size_t points) : first_(points, -1) {
  if (points >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("clouds of 2^31 points or more are not supported");
}

void ClusterTileMerge::add(const std::uint32_t* members, const std::int32_t* labels,
                           std::size_t count) {
  std::int32_t components = 0;
  for (std::size_t k = 0; k < count; ++k) {
    if (members[k] >= first_.size())
      throw InvalidArgument("tile member " + std::to_string(members[k]) +
                            " is outside the cloud of " + std::to_string(first_.size()) +
                            " points");
    components = std::max(components, labels[k] + 1);
  }
  if (parent_.size() + std::size_t(components) >=
      std::size_t(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("too many tile components to merge");
  const auto base = std::int32_t(parent_.size());
  parent_.resize(parent_.size() + std::size_t(components));
  std::iota(parent_.begin() + base, parent_.end(), base);
  for (std::size_t k = 0; k < count; ++k) {
    if (labels[k] < 0) continue;
    const std::int32_t c = base + labels[k];
    std::int32_t& f = first_[members[k]];
    if (f < 0)
      f = c;
    else
      unite(parent_, f, c);
  }
}

ClusterResult ClusterTileMerge::finish(const ClusterParams& params) {
  validate(params);
  WallTimer t;
  // Roots as compact component ids (< n, as canonicalize() requires).
  const std::size_t n = first_.size();
  std::vector<std::int32_t> id(parent_.size(), -1), component(n, -1);
  std::int32_t next = 0;
  std::size_t placed = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (first_[i] < 0) continue;
    ++placed;
    const auto root = std::size_t(find_root(parent_, first_[i]));
    if (id[root] < 0) id[root] = next++;
    component[i] = id[root];
  }
  ClusterResult r;
  canonicalize(component, params, r);
  r.non_finite = n - placed;
  r.stages.emplace_back("canonicalize", t.ms());
  return r;
}

}  // namespace cumulus
