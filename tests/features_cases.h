#pragma once
// The features tests' references: a host replica of the GPU histogram loop, an exact PCA of
// each neighbourhood, and the real-data normals cases. Included by test_features.cpp only.
#include <pcl/features/pfh_tools.h>
#include <pcl/io/pcd_io.h>
#include <pcl/point_types.h>

#include <Eigen/Eigenvalues>

#include <cmath>
#include <fstream>
#include <random>

#include "core/device.h"
#include "core/error.h"
#include "features/features.h"
#include "features/pair_math.h"
#include "io/io.h"
#include "nns/nns.h"
#include "test_support.h"

using namespace cumulus;
namespace fm = cumulus::features_math;

namespace {

PointCloud cloud_of(std::vector<Point3f> pts) {
  PointCloud c;
  c.points = std::move(pts);
  c.width = std::uint32_t(c.points.size());
  return c;
}

bool load(const QString& rel, std::size_t step, PointCloud& out) {
  return test::loadSharedEveryNth(rel, step, out);
}

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

// Largest bin difference and the number of rows that differ by more than tol.
// PCL's loop over a neighbourhood with the shared pair arithmetic: what the GPU kernels compute.
std::vector<float> replica_pfh(const std::vector<Point3f>& pts, const std::vector<Point3f>& nrm,
                               int k) {
  const KnnResult nb = knn_search(pts, pts, k, NnsMethod::Cpu);
  std::vector<float> out(pts.size() * 125, 0.0f);
  for (std::size_t q = 0; q < pts.size(); ++q) {
    std::vector<int> idx;
    for (int j = 0; j < k && nb.indices[q * std::size_t(k) + std::size_t(j)] >= 0; ++j)
      idx.push_back(nb.indices[q * std::size_t(k) + std::size_t(j)]);
    std::vector<std::uint32_t> count(125, 0);
    for (std::size_t i = 0; i < idx.size(); ++i)
      for (std::size_t j = 0; j < i; ++j) {
        const auto& a = pts[std::size_t(idx[i])];
        const auto& b = pts[std::size_t(idx[j])];
        const auto& na = nrm[std::size_t(idx[i])];
        const auto& nb2 = nrm[std::size_t(idx[j])];
        ++count[std::size_t(fm::pfh_bin({a.x, a.y, a.z}, {na.x, na.y, na.z}, {b.x, b.y, b.z},
                                        {nb2.x, nb2.y, nb2.z}))];
      }
    const float incr = fm::pfh_increment(idx.size());
    for (int h = 0; h < 125; ++h)
      out[q * 125 + std::size_t(h)] = fm::repeated_sum(incr, count[std::size_t(h)]);
  }
  return out;
}

// Double-precision PCA of each point's neighbourhood (FLANN's neighbours), for checking.
struct ExactPca {
  RadiusResult rows;                    // the neighbourhoods
  std::vector<Point3f> normals;         // NaN below 3 neighbours
  std::vector<Eigen::Vector3d> lambda;  // eigenvalues, ascending
};

RadiusResult neighbour_rows(const std::vector<Point3f>& pts, const Neighbourhood& nb,
                            NnsMethod method) {
  if (nb.k <= 0) return radius_search(pts, pts, nb.radius, method);
  const KnnResult r = knn_search(pts, pts, nb.k, method);
  RadiusResult rows;
  rows.offsets.push_back(0);
  for (std::size_t q = 0; q < pts.size(); ++q) {
    for (int j = 0; j < nb.k; ++j)
      if (r.indices[q * std::size_t(nb.k) + std::size_t(j)] >= 0)
        rows.indices.push_back(r.indices[q * std::size_t(nb.k) + std::size_t(j)]);
    rows.offsets.push_back(std::uint32_t(rows.indices.size()));
  }
  return rows;
}

ExactPca exact_pca(const std::vector<Point3f>& pts, const Neighbourhood& nb) {
  ExactPca out;
  out.rows = neighbour_rows(pts, nb, NnsMethod::Cpu);
  const RadiusResult& rows = out.rows;
  out.normals.assign(pts.size(), Point3f{NAN, NAN, NAN});
  out.lambda.assign(pts.size(), Eigen::Vector3d::Zero());
  for (std::size_t q = 0; q < pts.size(); ++q) {
    const std::size_t b = rows.offsets[q], e = rows.offsets[q + 1];
    if (e - b < 3) continue;
    Eigen::Vector3d mean = Eigen::Vector3d::Zero();
    for (std::size_t j = b; j < e; ++j) {
      const Point3f& o = pts[std::size_t(rows.indices[j])];
      mean += Eigen::Vector3d(o.x, o.y, o.z);
    }
    mean /= double(e - b);
    Eigen::Matrix3d cov = Eigen::Matrix3d::Zero();
    for (std::size_t j = b; j < e; ++j) {
      const Point3f& o = pts[std::size_t(rows.indices[j])];
      const Eigen::Vector3d d = Eigen::Vector3d(o.x, o.y, o.z) - mean;
      cov += d * d.transpose();
    }
    const Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> es(cov);
    const Eigen::Vector3d n = es.eigenvectors().col(0);
    out.normals[q] = {float(n.x()), float(n.y()), float(n.z())};
    out.lambda[q] = es.eigenvalues();
  }
  return out;
}

// Angle between two axes in degrees, sign ignored. From the cross product: acos of a dot
// product near 1 cannot resolve less than about 0.03 degree between float unit vectors.
double axis_angle_deg(Point3f a, Point3f b) {
  const double ax = a.x, ay = a.y, az = a.z, bx = b.x, by = b.y, bz = b.z;
  const double cx = ay * bz - az * by, cy = az * bx - ax * bz, cz = ax * by - ay * bx;
  return std::atan2(std::sqrt(cx * cx + cy * cy + cz * cz),
                    std::fabs(ax * bx + ay * by + az * bz)) *
         180.0 / M_PI;
}

// A neighbourhood whose normal is well defined: a surface patch (lambda0 at most 5 % of the
// variance, PCL's curvature < 0.05) that is not a line (lambda1 at least 5 % of lambda2, which
// LiDAR scan lines are not), seen not edge-on (the normal's orientation is then a coin toss).
bool well_conditioned(const Eigen::Vector3d& l, Point3f normal, Point3f p) {
  const double sum = l.sum();
  if (!(sum > 0) || !(l[0] < 0.05 * sum) || !(l[1] >= 0.05 * l[2])) return false;
  const double vlen = std::sqrt(double(p.x) * p.x + double(p.y) * p.y + double(p.z) * p.z);
  return std::fabs(double(normal.x) * p.x + double(normal.y) * p.y + double(normal.z) * p.z) >=
         0.05 * vlen;
}

bool same_row(const RadiusResult& a, const RadiusResult& b, std::size_t q) {
  std::vector<std::int32_t> x(a.indices.begin() + a.offsets[q],
                              a.indices.begin() + a.offsets[q + 1]),
      y(b.indices.begin() + b.offsets[q], b.indices.begin() + b.offsets[q + 1]);
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

void normals_cases() {
  test::add_columns<QString, int, float>({"file", "k", "radius"});
  QTest::addRow("bunny k=16") << "bunny/bun_zipper.ply" << 16 << 0.0f;
  QTest::addRow("bunny k=64") << "bunny/bun_zipper.ply" << 64 << 0.0f;
  // The GPU's normals take 1, 2, 4 or 8 lanes a point by the rows' mean length: k = 16 and r =
  // 5 mm one, k = 64 two, KITTI's r = 0.5 m four, k = 256 eight.
  QTest::addRow("bunny k=256") << "bunny/bun_zipper.ply" << 256 << 0.0f;
  QTest::addRow("bunny r=5mm") << "bunny/bun_zipper.ply" << 0 << 0.005f;
  QTest::addRow("kitti k=16") << "kitti/000000.bin" << 16 << 0.0f;
  QTest::addRow("kitti r=0.5m") << "kitti/000000.bin" << 0 << 0.5f;
  QTest::addRow("lidar pair k=16") << "lidar-pair/251370668.pcd" << 16 << 0.0f;
}

// The current row of normals_cases(): its cloud and neighbourhood; false without the data.
bool normals_case(PointCloud& c, NormalParams& p) {
  QFETCH(QString, file);
  QFETCH(int, k);
  QFETCH(float, radius);
  p.neighbourhood = {k, radius};
  return load(file, 1, c);
}

bool gpu_usable() {
  return query_device().available;
}

}  // namespace
