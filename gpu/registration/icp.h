#pragma once
// ICP with PCL's semantics: each iteration pairs every source point with its nearest target
// point, keeps pairs with squared distance <= max correspondence distance^2, estimates the
// rigid transform of the pairs, applies it to the source and tests PCL's
// DefaultConvergenceCriteria. Point to point is IterativeClosestPoint (Umeyama, no scale); point
// to plane is IterativeClosestPointWithNormals (PCL's linear least squares on the target's
// normals). Every method gives the same iterations, stop reason and (within floating-point
// summation order) transform.
#include <Eigen/Core>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/point_cloud.h"
#include "core/timing.h"

#define CUMULUS_METHOD_ENUM IcpMethod
#define CUMULUS_METHOD_ROWS "registration/icp_methods.def"
#include "core/method_enum.h"

namespace cumulus {

// Termination criteria, as PCL names and uses them.
struct IcpCriteria {
  int max_iterations = 50;
  // PCL's transformation epsilon: the loop stops when the last incremental transform has
  // translation^2 <= epsilon (compared squared, as PCL does) and rotation cos(angle) >=
  // 1 - epsilon (or >= rotation_epsilon when that is set > 0).
  double transformation_epsilon = 1e-10;
  double rotation_epsilon = 0;  // PCL's transformation rotation epsilon (a cosine), 0 = derived
  // PCL's Euclidean fitness epsilon: stop when the mean squared correspondence distance changes
  // by less than this fraction of its previous value. Negative disables it (PCL's default).
  double fitness_epsilon = 1e-8;
  // PCL also stops when the MSE changes by less than this absolute amount.
  double absolute_mse = 1e-12;
  // PCL reports reaching max_iterations as converged; true makes it a failure instead.
  bool failure_after_max_iterations = false;
};

// How the `gpu` method searches; the defaults measured best on the H200 (docs/benchmarks.md), the
// rest is for benchmark sweeps (`bench icp --icp-lanes ...`). Results do not depend on them.
struct IcpGpuTuning {
  // Lanes that search for one source point together: 1, 2, 4, 8, 16 or 32. 8 halved the LiDAR
  // pair's and KITTI's time against 4 and was within 6 % of 4, the best, for the bunny.
  int lanes = 8;
  float grid_points_per_cell = 2.0f;  // target points a grid cell, by volume
  float grid_within_reach = 0.5f;     // the same where cells come out wider than the distance
  float fine_points_per_cell = 6.0f;  // the finer second grid, where the first is crowded
};

enum class IcpMetric { PointToPoint, PointToPlane, Gicp };
const char* metric_name(IcpMetric m);  // "point-to-point", "point-to-plane", "gicp"
std::optional<IcpMetric> parse_metric(std::string_view name);

// Robust kernels (iteratively reweighted least squares; not PCL's): each iteration weighs a pair
// by its residual r (the pair's distance; point to plane, its distance along the normal; GICP,
// the pair's distance, its weight scaling the pair's Mahalanobis matrix) at the
// kernel's scale k. Huber: 1 within k, k / r beyond. Tukey: (1 - (r/k)^2)^2 within k, 0 beyond.
// The `cpu` method runs PCL's loop and criteria with a weighted estimation in place of PCL's;
// every method weighs and solves with the same arithmetic (icp_math.h).
enum class RobustKernel { None = 0, Huber = 1, Tukey = 2 };
const char* kernel_name(RobustKernel k);  // "none", "huber", "tukey"
std::optional<RobustKernel> parse_kernel(std::string_view name);

// Generalized ICP as PCL's GeneralizedIterativeClosestPoint: each point's covariance from its k
// nearest neighbours (singular values set to 1, 1, epsilon: a disc along the surface), pairs as
// ICP's, and per iteration PCL's BFGS minimising the pairs' Mahalanobis distances (at most
// max_inner_iterations steps, until the gradient is under the tolerances). GICP stops on its own
// test, not IcpCriteria's epsilons: when no rotation entry of the transform changed by
// rotation_epsilon or more and no translation entry by translation_epsilon or more, or after
// criteria.max_iterations. Defaults are PCL's.
struct GicpParams {
  int k = 20;
  double epsilon = 0.001;
  int max_inner_iterations = 20;
  double translation_gradient_tolerance = 1e-2;
  double rotation_gradient_tolerance = 1e-2;
  double translation_epsilon = 5e-4;  // world units
  double rotation_epsilon = 2e-3;     // rotation matrix entries
};

struct IcpParams {
  double max_correspondence_distance = 0.05;  // metres; pairs farther apart are ignored
  IcpMetric metric = IcpMetric::PointToPoint;
  RobustKernel kernel = RobustKernel::None;
  double kernel_scale = 0;  // world units; must be positive with a kernel
  // Point to plane: the target cloud's own normals where it has them, else normals of its
  // `normals_k` nearest neighbours (PCL's NormalEstimation for `cpu`, ours on the GPU for the
  // GPU methods). Pairs whose target normal is not finite are left out, as PCL does.
  int normals_k = 20;
  GicpParams gicp;
  IcpCriteria criteria;
  IcpGpuTuning gpu;
  Eigen::Matrix4d initial = Eigen::Matrix4d::Identity();  // guess applied to the source first
};

// Why the loop ended (PCL's ConvergenceState names).
enum class IcpStop {
  NotConverged,       // (never in a result)
  Iterations,         // reached max_iterations (PCL calls this converged)
  Transform,          // incremental transform below the transformation epsilon
  AbsoluteMse,        // MSE change below the absolute threshold
  RelativeMse,        // MSE change below the fitness epsilon
  NoCorrespondences,  // fewer than 3 pairs within the maximum distance (GICP: 4)
  FailureAfterMaxIterations,
  SolverFailure,  // GICP: PCL's BFGS ended without a usable step
};
const char* stop_name(IcpStop s);
std::string stop_description(IcpStop s);

struct IcpIteration {
  std::size_t correspondences = 0;
  double mse = 0;              // mean squared distance of this iteration's pairs (before it moved)
  double rotation_cosine = 1;  // of the incremental transform
  double translation_sq = 0;   // squared length of its translation
};

struct IcpResult {
  Eigen::Matrix4d transform = Eigen::Matrix4d::Identity();  // source -> target, guess included
  bool converged = false;                                   // PCL's hasConverged()
  IcpStop stop = IcpStop::NotConverged;
  int iterations = 0;
  // PCL's getFitnessScore(): mean squared distance from each transformed source point to its
  // nearest target point, over all finite source points.
  double fitness = 0;
  std::vector<IcpIteration> history;                   // one entry per completed iteration
  std::size_t source_points = 0, target_points = 0;    // finite points used
  std::size_t source_dropped = 0, target_dropped = 0;  // non-finite points left out
  std::string method;
  IcpMetric metric = IcpMetric::PointToPoint;
  RobustKernel kernel = RobustKernel::None;
  int cost_evaluations = 0;  // GICP: evaluations of the cost by our BFGS (0 for PCL's)
  StageTimes stages;
  double total_ms = 0;
};

// Throws InvalidArgument for a non-positive or non-finite max distance, max_iterations < 1,
// negative or NaN epsilons, a kernel without a positive finite scale, or a non-rigid initial
// guess.
void validate(const IcpParams& params);

// Progress of a run: (iterations done, max_iterations). The `cpu` method (PCL's ICP and GICP,
// whose iterations each search every source point) reports after each iteration and stops with
// Cancelled once it returns false; while it estimates a point-to-plane target's normals it
// reports 0 done and may stop between two searches. The GPU methods run their loop on the
// device, in milliseconds, and report nothing.
using IcpProgress = std::function<bool(int done, int max_iterations)>;

// Aligns source to target. Clouds with a local origin are aligned in the target's local frame
// and the transform is reported in world coordinates. Non-finite points are left out (counted);
// fewer than 3 finite points on either side is an InvalidArgument. GPU methods throw GpuError
// without a GPU.
IcpResult icp(const PointCloud& source, const PointCloud& target, const IcpParams& params,
              IcpMethod method, const IcpProgress& progress = {});
IcpResult icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
              const IcpParams& params, IcpMethod method);
// With the target's normals (one per target point; needed for point to plane).
IcpResult icp(const std::vector<Point3f>& source, const std::vector<Point3f>& target,
              const std::vector<Point3f>* target_normals, const IcpParams& params, IcpMethod method,
              const IcpProgress& progress = {});

// A rigid transform from Euler angles in degrees (applied x, then y, then z) and a translation.
Eigen::Matrix4d rigid_transform(double rx_deg, double ry_deg, double rz_deg, double tx, double ty,
                                double tz);
// Rotation angle in degrees and translation length of a rigid transform, for reporting errors.
double rotation_angle_deg(const Eigen::Matrix4d& t);
double translation_norm(const Eigen::Matrix4d& t);

// The cloud moved by the world transform t (points and normals; other fields kept).
PointCloud transformed(const PointCloud& cloud, const Eigen::Matrix4d& t);

// Applies t to every finite point (non-finite points are kept as they are).
std::vector<Point3f> transform_points(const std::vector<Point3f>& points, const Eigen::Matrix4d& t);

// Reads a 4x4 matrix: 16 numbers (row-major) in a file or a string, separated by spaces, commas
// or newlines. Throws InvalidArgument (or IoError for an unreadable file).
Eigen::Matrix4d parse_matrix(const std::string& text);
Eigen::Matrix4d read_matrix_file(const std::string& path);
std::string format_matrix(const Eigen::Matrix4d& t);

}  // namespace cumulus
