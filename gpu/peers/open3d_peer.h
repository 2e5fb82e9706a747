#pragma once
// Open3D (Debian's libopen3d-dev, a CPU build) as a peer: the benchmarks run it beside PCL on
// the same inputs and report how far it agrees with PCL, and a test pins that agreement. The
// CLI and the tests link this peer, which loads the Open3D module (open3d_module.h) on first use;
// no program links Open3D itself, and the package ships no module. Every call takes and gives
// our types, so nothing outside the module sees Open3D.
#include <string>

#include "cluster/cluster.h"
#include "features/features.h"
#include "filter/filter.h"
#include "ground/ground.h"
#include "nns/nns.h"
#include "objects/pipeline.h"
#include "registration/global.h"
#include "registration/icp.h"

namespace cumulus::open3d_peer {

// False when no Open3D module loads (this build has none, or it does not load); every other
// call then throws Error saying why.
bool available();
std::string version();  // "Open3D 0.16.1", or why there is none

// Euclidean clustering as Open3D's DBSCAN with min_points 1 (every point a core point, so its
// clusters are the connected components at `tolerance`), then PCL's size limits. Its radius
// search keeps pairs with d^2 < tolerance^2 in double, as our clustering does in float.
ClusterResult cluster(const PointCloud& cloud, const ClusterParams& params);

// VoxelDownSample: a cubic leaf only; Open3D's grid starts half a leaf below the cloud's least
// corner, so its voxels are not PCL's.
FilterResult voxel_grid(const PointCloud& cloud, const VoxelGridParams& params);
// RemoveStatisticalOutliers(mean_k, stddev_mul): `kept` holds the input indices.
FilterResult remove_statistical_outliers(const PointCloud& cloud,
                                         const StatisticalOutlierParams& params);
// RemoveRadiusOutliers: Open3D counts the point itself, so it gets min_neighbors + 1.
FilterResult remove_radius_outliers(const PointCloud& cloud, const RadiusOutlierParams& params);

// SegmentPlane(threshold, 3, max_iterations), seeded with params.seed; no axis constraint (Open3D
// has none). The plane is turned to face params.axis (or up) as ours are.
GroundResult ground_plane(const PointCloud& cloud, const GroundPlaneParams& params);

// RegistrationICP with TransformationEstimationPointToPoint / PointToPlane, stopping after
// max_iterations or when fitness and RMSE change by less than the fitness epsilon (Open3D's
// criteria, not PCL's: iterations are not reported, only the transform and fitness).
// Point to plane needs target_normals (one per target point).
IcpResult icp(const PointCloud& source, const PointCloud& target,
              const std::vector<Point3f>* target_normals, const IcpParams& params);

// ComputeFPFHFeature with params.neighbourhood (k nearest or a radius) from the given normals
// (one per point), or from Open3D's own: EstimateNormals with params.normals.neighbourhood,
// turned towards the viewpoint as PCL turns its own. Open3D has no PFH.
FeatureResult fpfh(const PointCloud& cloud, const FeatureParams& params,
                   const std::vector<Point3f>* normals = nullptr);

// PCL's FPFH leaves the point's own SPFH out (it skips the neighbour at distance 0); Open3D's adds
// it, so each of its three parts sums to 200 where PCL's sums to 100. The rows (finite in both)
// where Open3D's minus PCL's is itself a histogram (no bin below -tol, each part summing to 100
// within 100 * tol): agreement up to that definition.
std::size_t fpfh_rows_pcl_plus_own_spfh(const FeatureResult& pcl, const FeatureResult& open3d,
                                        double tol = 1e-3);

// KDTreeFlann::SearchKNN of every query (distances in double, rounded to float); non-finite
// targets are left out, non-finite queries get no neighbours.
KnnResult knn(std::span<const Point3f> targets, std::span<const Point3f> queries, int k);

// RegistrationRANSACBasedOnFeatureMatching (mutual filter, edge-length and distance checkers,
// seeded) on keypoints in one frame and their FPFH rows (finite): the transform, and Open3D's
// fitness (share of source keypoints with a target keypoint within the distance) and RMSE.
struct RansacFit {
  Eigen::Matrix4d transform = Eigen::Matrix4d::Identity();
  double fitness = 0, inlier_rmse = 0;
};
RansacFit ransac(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
                 const FeatureResult& source_features, const FeatureResult& target_features,
                 double max_distance, double similarity, int iterations, int seed);

// Global registration in Open3D's calls, with our parameters (open3d_global.cpp): its voxel
// down-sampling, normals turned towards each cloud's keypoint centroid, FPFH, the RANSAC above
// (found when its fitness reaches min_overlap) and its ICP.
GlobalResult global_registration(const PointCloud& source, const PointCloud& target,
                                 const GlobalParams& params);

// PCL's tutorial chain in Open3D's calls: VoxelDownSample, SegmentPlane, SelectByIndex (the
// rest), ClusterDBSCAN (min_points 1) and an axis-aligned box per cluster within the size
// limits. Crop box and the outlier filters when asked; no range-image ground. The result's
// objects are described by our describe_objects after the timed chain, so they compare.
PipelineResult chain(const PointCloud& cloud, const PipelineParams& params);

}  // namespace cumulus::open3d_peer
