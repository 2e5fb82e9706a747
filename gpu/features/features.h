#pragma once
// Surface normals and point feature histograms with PCL's semantics (NormalEstimation,
// PFHEstimation with 5 bins per feature = 125 bins, FPFHEstimation with 11 per feature = 33).
// Non-finite points are left out before anything is searched, so they are never anyone's
// neighbour; their normal and histogram are NaN. Given the same normals and neighbourhoods,
// every method bins every pair as PCL does.
#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/point_cloud.h"
#include "core/timing.h"
#include "core/zeroed_vector.h"

#define CUMULUS_METHOD_ENUM FeatureMethod
#define CUMULUS_METHOD_ROWS "features/features_methods.def"
#include "core/method_enum.h"

namespace cumulus {

enum class Descriptor { Pfh, Fpfh };
const char* descriptor_name(Descriptor d);
std::optional<Descriptor> parse_descriptor(const std::string& name);
int descriptor_bins(Descriptor d);  // 125 or 33
// Floats from one point's SPFH to the next in the GPU's table (FPFH's first half): its 33 bins
// and 7 never read (histogram_kernels.cuh says why).
inline constexpr int kGpuSpfhStride = 40;

// A point's neighbourhood, itself included, as PCL's Feature::setKSearch / setRadiusSearch:
// the k nearest (k > 0) or every point closer than radius (strict), nearest first.
struct Neighbourhood {
  int k = 0;
  float radius = 0;
  static Neighbourhood nearest(int k) { return {k, 0}; }
  static Neighbourhood within(float r) { return {0, r}; }
  std::string describe() const;  // "k=16" or "r=0.005"
};

struct NormalParams {
  Neighbourhood neighbourhood = Neighbourhood::nearest(16);
  // Normals are flipped to face this point, in world coordinates (PCL's default: the origin).
  std::array<double, 3> viewpoint{0, 0, 0};
  // The `gpu` method's normals are exact (double sums, Jacobi). On noisy analytic surfaces they
  // are as near the true normal as PCL's float ones (the noise sets the error: test_features),
  // but differ from PCL's in the last bits, which moves a share of the histogram bins. With
  // this they are PCL's bit for bit instead: the covariances summed on the GPU in PCL's float
  // order, PCL's float eigen solver on the host; so are the descriptors built on them, wherever
  // the GPU's search lists the neighbours in PCL's order (ties in distance may come otherwise).
  bool pcl_compatible = false;
};

struct FeatureParams {
  Descriptor descriptor = Descriptor::Fpfh;
  Neighbourhood neighbourhood = Neighbourhood::nearest(32);
  NormalParams normals;
};

struct NormalsResult {
  std::vector<Point3f> normals;  // one per input point; NaN where fewer than 3 neighbours
  std::vector<float> curvature;  // lambda_min / (lambda_0 + lambda_1 + lambda_2), as PCL
  std::size_t non_finite_points = 0;
  std::size_t nan_normals = 0;  // finite points without a normal
  std::string method;
  StageTimes stages;
  double total_ms = 0;
};

struct FeatureResult {
  Descriptor descriptor = Descriptor::Fpfh;
  int bins = 0;
  // points * bins, row per input point. Sized without being zero-filled (core/zeroed_vector.h):
  // every method writes every row.
  ZeroedVector<float> histograms;
  std::vector<Point3f> normals;  // the normals the histograms were computed from
  std::vector<float> curvature;  // empty when the normals were given
  std::size_t non_finite_points = 0;
  std::size_t nan_histograms = 0;  // rows of NaN (non-finite points)
  std::string method;
  StageTimes stages;  // neighbours, normals, descriptors, transfers
  double total_ms = 0;

  std::size_t size() const { return bins ? histograms.size() / std::size_t(bins) : 0; }
  const float* row(std::size_t i) const { return histograms.data() + i * std::size_t(bins); }
};

// The checks of estimate_normals and compute_features (InvalidArgument as below).
void validate(const NormalParams& params, FeatureMethod method);
void validate(const FeatureParams& params, FeatureMethod method, bool normals_given);

// GPU methods whose cloud exceeds one call (normals_call_capacity, features_call_capacity in
// tiles/tiles.h) work in slabs with the same results.
//
// Throws InvalidArgument for an unusable neighbourhood (neither or both of k and radius, k < 1,
// k above the GPU limit on a GPU method, a non-positive or non-finite radius, a non-finite
// viewpoint); GpuError when a GPU method cannot run.
NormalsResult estimate_normals(const PointCloud& cloud, const NormalParams& params,
                               FeatureMethod method);

// Histograms from the cloud's points; normals estimated with params.normals unless `normals` is
// given (one per point, NaN allowed), which lets every method start from the same normals.
FeatureResult compute_features(const PointCloud& cloud, const FeatureParams& params,
                               FeatureMethod method, const std::vector<Point3f>* normals = nullptr);

// As above, into `into`, whose vectors' memory is kept: a caller that computes features again on
// a cloud of the same size (frame after frame, or again with new parameters) keeps the result's
// pages mapped instead of having tens of MB of histograms zero-filled and mapped anew each time.
// After an exception `into` holds no usable result (its fields may be partly overwritten).
void compute_features(const PointCloud& cloud, const FeatureParams& params, FeatureMethod method,
                      const std::vector<Point3f>* normals, FeatureResult& into);

// Progress within one call: (searches done, searches in all). The methods that search with
// PCL's kd-tree (PCL's normals, descriptors and the paper's neighbour lists) report about every
// 64 searches or 50 ms, and stop between two searches with Cancelled once it returns false; the
// GPU's own stages are not interrupted. A search comes once per point per stage, so a stop
// waits at most for one point's work (nns/reporting_kdtree.h).
using FeatureProgress = std::function<bool(std::size_t done, std::size_t total)>;

// The two above as one call of the method, never tiled: what the tiling layer (tiles/tiles.h)
// runs on each tile.
NormalsResult estimate_normals_call(const PointCloud& cloud, const NormalParams& params,
                                    FeatureMethod method, const FeatureProgress& progress = {});
FeatureResult compute_features_call(const PointCloud& cloud, const FeatureParams& params,
                                    FeatureMethod method,
                                    const std::vector<Point3f>* normals = nullptr,
                                    const FeatureProgress& progress = {});
void compute_features_call(const PointCloud& cloud, const FeatureParams& params,
                           FeatureMethod method, const std::vector<Point3f>* normals,
                           FeatureResult& into, const FeatureProgress& progress = {});

// Rows of `a` and `b` (same size) with a bin more than `tol` apart; a NaN facing a number counts
// (max becomes infinite), NaN facing NaN agrees. The tolerance is 1e-3 percent units.
struct HistogramDiff {
  std::size_t rows = 0;
  double max = 0;
  std::size_t first = std::size_t(-1);  // first differing row
};
HistogramDiff compare_histograms(const FeatureResult& a, const FeatureResult& b, double tol = 1e-3);

// Distance between two histograms for "similar surfaces" colouring.
enum class HistogramDistance { L2, ChiSquared };
std::optional<HistogramDistance> parse_histogram_distance(const std::string& name);
// Distance of every row to `reference` (bins values); NaN rows give NaN.
std::vector<float> histogram_distances(const FeatureResult& features, const float* reference,
                                       HistogramDistance metric);

// PCD with one PFHSignature125 ("pfh") or FPFHSignature33 ("fpfh") field per point, as PCL
// writes it (binary), and CSV: index,x,y,z,b0..bN. Throw IoError on failure.
void write_features_pcd(const std::string& path, const FeatureResult& features);
void write_features_csv(const std::string& path, const PointCloud& cloud,
                        const FeatureResult& features);

}  // namespace cumulus
