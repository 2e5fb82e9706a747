#pragma once
// PCL's ICP loop with a robust kernel: a transformation estimation that weighs each pair by the
// kernel and solves with the arithmetic the GPU methods use (icp_math.h), put in place of PCL's
// own (which has no weights). PCL's correspondences, transform of the source and convergence
// criteria are kept. Private to icp.cpp.
#include <pcl/point_cloud.h>
#include <pcl/point_types.h>
#include <pcl/registration/transformation_estimation.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "registration/icp_math.h"

namespace cumulus {

template <class Point>
class WeightedEstimation
    : public pcl::registration::TransformationEstimation<Point, Point, double> {
 public:
  using Cloud = pcl::PointCloud<Point>;
  using Matrix4 = Eigen::Matrix4d;
  static constexpr bool kPlane = std::is_same_v<Point, pcl::PointNormal>;

  WeightedEstimation(int kernel, double scale) : kernel_(kernel), scale_(scale) {}

  void estimateRigidTransformation(const Cloud& src, const Cloud& tgt, Matrix4& m) const override {
    pcl::Indices all(src.size());
    for (std::size_t i = 0; i < all.size(); ++i)
      all[i] = pcl::index_t(i);
    solve(src, all, tgt, all, nullptr, m);
  }
  void estimateRigidTransformation(const Cloud& src, const pcl::Indices& is, const Cloud& tgt,
                                   Matrix4& m) const override {
    solve(src, is, tgt, is, nullptr, m);
  }
  void estimateRigidTransformation(const Cloud& src, const pcl::Indices& is, const Cloud& tgt,
                                   const pcl::Indices& it, Matrix4& m) const override {
    solve(src, is, tgt, it, nullptr, m);
  }
  void estimateRigidTransformation(const Cloud& src, const Cloud& tgt,
                                   const pcl::Correspondences& pairs, Matrix4& m) const override {
    pcl::Indices is, it;
    std::vector<float> d2;
    for (const auto& c : pairs) {
      is.push_back(c.index_query);
      it.push_back(c.index_match);
      d2.push_back(c.distance);  // squared, as PCL's search found it
    }
    solve(src, is, tgt, it, &d2, m);
  }

 private:
  // Pairs (src[is[k]], tgt[it[k]]) with squared distances d2 (computed when null).
  void solve(const Cloud& src, const pcl::Indices& is, const Cloud& tgt, const pcl::Indices& it,
             const std::vector<float>* d2, Matrix4& m) const {
    m.setIdentity();
    if (is.empty() || tgt.empty()) return;
    double out[16];
    if constexpr (kPlane) {
      icp_math::PlaneSums sums;
      for (std::size_t k = 0; k < is.size(); ++k) {
        const Point &a = src[std::size_t(is[k])], &b = tgt[std::size_t(it[k])];
        if (!std::isfinite(b.normal_x) || !std::isfinite(b.normal_y) || !std::isfinite(b.normal_z))
          continue;  // as PCL's point-to-plane estimation leaves such pairs out
        const float s[3] = {a.x, a.y, a.z}, t[3] = {b.x, b.y, b.z},
                    n[3] = {b.normal_x, b.normal_y, b.normal_z};
        icp_math::add_plane(sums, s, t, n, pair_d2(a, b, d2, k), kernel_, scale_);
      }
      if (sums.n < 3 || !(sums.w > 0)) return;
      double x[6];
      icp_math::solve_plane(sums, x);
      icp_math::plane_transform(x, out);
    } else {
      // About the target's first point, as the GPU sums: far-off clouds do not cancel.
      const double c[3] = {tgt[0].x, tgt[0].y, tgt[0].z};
      icp_math::Sums sums;
      for (std::size_t k = 0; k < is.size(); ++k) {
        const Point &a = src[std::size_t(is[k])], &b = tgt[std::size_t(it[k])];
        const double s[3] = {a.x - c[0], a.y - c[1], a.z - c[2]};
        const double t[3] = {b.x - c[0], b.y - c[1], b.z - c[2]};
        const double dd = pair_d2(a, b, d2, k);
        icp_math::add(sums, s, t, dd, icp_math::robust_weight(kernel_, scale_, std::sqrt(dd)));
      }
      if (sums.n < 3 || !(sums.w > 0)) return;
      icp_math::estimate_rigid(sums, c, out);
    }
    for (int r = 0; r < 4; ++r)
      for (int col = 0; col < 4; ++col)
        m(r, col) = out[4 * r + col];
  }

  static double pair_d2(const Point& a, const Point& b, const std::vector<float>* d2,
                        std::size_t k) {
    if (d2) return double((*d2)[k]);
    const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
    return double(dx * dx + dy * dy + dz * dz);
  }

  int kernel_;
  double scale_;
};

}  // namespace cumulus
