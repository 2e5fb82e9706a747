#include "cluster/cluster_compare.h"

#include <sstream>

#include "core/error.h"

namespace cumulus {

ClusterAgreement compare_clusters(const ClusterResult& ref, const ClusterResult& other) {
  if (ref.labels.size() != other.labels.size())
    throw InvalidArgument("the two results are for clouds of different sizes");
  ClusterAgreement a;
  const std::size_t n = ref.labels.size();
  // A reference cluster matches when all its points carry one label on the other side and that
  // label's cluster has the same size; the relation is then one-to-one.
  std::vector<int> image(ref.sizes.size(), -2);  // -2: not seen yet, -3: split
  for (std::size_t i = 0; i < n; ++i) {
    const int r = ref.labels[i];
    if (r < 0) continue;
    int& im = image[std::size_t(r)];
    const int o = other.labels[i];
    if (im == -2)
      im = o;
    else if (im != o)
      im = -3;
  }
  std::vector<bool> ref_ok(ref.sizes.size(), false), other_ok(other.sizes.size(), false);
  for (std::size_t r = 0; r < ref.sizes.size(); ++r) {
    const int o = image[r];
    if (o >= 0 && std::size_t(o) < other.sizes.size() &&
        other.sizes[std::size_t(o)] == ref.sizes[r])
      ref_ok[r] = other_ok[std::size_t(o)] = true;
  }
  for (std::size_t r = 0; r < ref_ok.size(); ++r)
    if (!ref_ok[r]) a.reference_clusters.push_back(int(r));
  for (std::size_t o = 0; o < other_ok.size(); ++o)
    if (!other_ok[o]) a.other_clusters.push_back(int(o));
  a.point_differs.assign(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    const int r = ref.labels[i], o = other.labels[i];
    const bool bad = (r < 0) != (o < 0) || (r >= 0 && !ref_ok[std::size_t(r)]) ||
                     (o >= 0 && !other_ok[std::size_t(o)]);
    a.point_differs[i] = bad;
    a.differing_points += bad;
  }
  a.identical = a.differing_points == 0 && ref.sizes.size() == other.sizes.size();
  std::ostringstream s;
  if (a.identical) {
    s << "identical partition (" << ref.sizes.size() << " clusters)";
  } else {
    s << a.differing_points << " points differ: " << a.reference_clusters.size() << " of "
      << ref.sizes.size() << " reference clusters and " << a.other_clusters.size() << " of "
      << other.sizes.size() << " clusters have no exact match";
  }
  a.summary = s.str();
  return a;
}

}  // namespace cumulus
