// How Open3D's results relate to PCL's where their definitions differ (no Open3D needed).
#include <cmath>

#include "peers/open3d_peer.h"

namespace cumulus::open3d_peer {

std::size_t fpfh_rows_pcl_plus_own_spfh(const FeatureResult& pcl, const FeatureResult& open3d,
                                        double tol) {
  if (pcl.bins != 33 || open3d.bins != 33 || pcl.size() != open3d.size()) return 0;
  std::size_t rows = 0;
  for (std::size_t i = 0; i < pcl.size(); ++i) {
    const float *a = pcl.row(i), *b = open3d.row(i);
    bool ok = std::isfinite(a[0]) && std::isfinite(b[0]);
    for (int part = 0; ok && part < 3; ++part) {
      double sum = 0;
      for (int k = part * 11; ok && k < part * 11 + 11; ++k) {
        const double d = double(b[k]) - double(a[k]);
        ok = d >= -tol;
        sum += d;
      }
      ok = ok && std::abs(sum - 100.0) <= 100.0 * tol;
    }
    rows += ok;
  }
  return rows;
}

}  // namespace cumulus::open3d_peer
