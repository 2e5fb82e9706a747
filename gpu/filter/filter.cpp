// Filters: argument checks, the voxel lattice every method shares, and dispatch to PCL
// (filter_pcl.cpp) or the GPU (cuda/).
#include "filter/filter.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>

#include "core/error.h"
#include "filter/cuda/filter_gpu.h"
#include "filter/filter_impl.h"

namespace cumulus {

void validate(const CropBoxParams& p) {
  for (int k = 0; k < 3; ++k) {
    if (!std::isfinite(p.min[k]) || !std::isfinite(p.max[k]))
      throw InvalidArgument("crop box corners must be finite numbers");
    if (p.min[k] > p.max[k])
      throw InvalidArgument("crop box minimum is larger than its maximum along " +
                            std::string(1, "xyz"[k]) + " (" + std::to_string(p.min[k]) + " > " +
                            std::to_string(p.max[k]) + ")");
  }
}

void validate(const VoxelGridParams& p) {
  for (const float leaf : p.leaf)
    if (!(leaf > 0) || !std::isfinite(leaf))
      throw InvalidArgument("voxel leaf size must be a positive number of metres, got " +
                            std::to_string(leaf));
}

namespace {

// The lattice's sizes in double, before anything is converted to an integer: with a leaf fine
// enough, the float products below exceed every integer type, and converting them would be
// undefined (it gave a negative voxel count in the message once).
struct LatticeSize {
  double pcl_count = 1;  // PCL's test: the product of the extents
  double voxels = 1;     // the index's range: the product of floor(hi) - floor(lo) + 1
  double farthest = 0;   // the largest |floor(c * inverse)|, a 32-bit voxel coordinate in PCL
  double shown = 1;      // pcl_count in double products, finite where the float ones overflow
};

LatticeSize lattice_size(const float low[3], const float high[3], const float inverse[3]) {
  LatticeSize s;
  for (int k = 0; k < 3; ++k) {
    const float inv = inverse[k];
    // PCL truncates this float product to a 64-bit integer; for the sizes that pass, so does
    // trunc in double. NaN (an infinite inverse times a zero span) stays NaN and fails below.
    s.pcl_count *= std::trunc(double((high[k] - low[k]) * inv)) + 1;
    s.shown *= std::trunc((double(high[k]) - double(low[k])) * double(inv)) + 1;
    const double lo = double(std::floor(low[k] * inv)), hi = double(std::floor(high[k] * inv));
    s.voxels *= hi - lo + 1;
    s.farthest = std::fmax(s.farthest, std::fmax(std::fabs(lo), std::fabs(hi)));
  }
  return s;
}

bool too_many(const LatticeSize& s) {
  return !(s.pcl_count <= double(std::numeric_limits<std::int32_t>::max()) &&
           s.voxels <= double(std::numeric_limits<std::uint32_t>::max()));
}

bool fits(const LatticeSize& s) {
  return !too_many(s) && s.farthest < 2147483648.0;
}

// The smallest cubic leaf that fits, by bisection on the same test (each size only shrinks as
// the leaf grows), for the message: a volume's cube root is wrong for flat clouds.
double smallest_cubic_leaf(const float low[3], const float high[3]) {
  double lo = 1e-30, hi = 1e30;
  for (int i = 0; i < 200 && hi > lo * (1 + 1e-6); ++i) {
    const double mid = std::sqrt(lo * hi);
    const float inv = float(1.0 / mid);
    const float inverse[3] = {inv, inv, inv};
    (fits(lattice_size(low, high, inverse)) ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace

VoxelLattice voxel_lattice(const Point3f& lo, const Point3f& hi, const VoxelGridParams& params) {
  VoxelLattice l;
  const float low[3] = {lo.x, lo.y, lo.z}, high[3] = {hi.x, hi.y, hi.z};
  float inverse[3];
  for (int k = 0; k < 3; ++k)
    inverse[k] = 1.0f / params.leaf[std::size_t(k)];
  // PCL's own test, and one past it: the lattice's index must fit 32 bits for every method, and
  // every voxel coordinate an int (PCL's min_b and max_b).
  const LatticeSize size = lattice_size(low, high, inverse);
  if (!fits(size)) {
    char text[400];
    const double fitting = smallest_cubic_leaf(low, high) * 1.01;
    if (too_many(size)) {
      std::snprintf(text, sizeof text,
                    "voxel leaf %g x %g x %g m is too small for this cloud: %.3g voxels over its "
                    "%.4g x %.4g x %.4g m extent, where voxel indices hold at most 2^31 - 1 "
                    "(PCL would warn and return the cloud unfiltered); a cubic leaf of at least "
                    "%.3g m fits",
                    double(params.leaf[0]), double(params.leaf[1]), double(params.leaf[2]),
                    size.shown, double(high[0] - low[0]), double(high[1] - low[1]),
                    double(high[2] - low[2]), fitting);
    } else {
      double reach = 0;
      for (int k = 0; k < 3; ++k)
        reach = std::fmax(reach, std::fmax(std::fabs(low[k]), std::fabs(high[k])));
      std::snprintf(text, sizeof text,
                    "voxel leaf %g x %g x %g m is too small for this cloud's place: its points "
                    "lie up to %.4g m from the origin, beyond 2^31 leaves, the voxel coordinates "
                    "PCL's lattice holds; a cubic leaf of at least %.3g m fits",
                    double(params.leaf[0]), double(params.leaf[1]), double(params.leaf[2]), reach,
                    fitting);
    }
    throw InvalidArgument(text);
  }
  std::uint64_t voxels = 1;
  for (int k = 0; k < 3; ++k) {
    const float inv = inverse[k];
    l.inverse[std::size_t(k)] = inv;
    l.min_b[std::size_t(k)] = int(std::floor(low[k] * inv));
    const auto div =
        std::uint64_t(std::int64_t(std::floor(high[k] * inv)) - l.min_b[std::size_t(k)] + 1);
    l.mul[std::size_t(k)] = std::uint32_t(voxels);
    voxels *= div;
  }
  l.voxels = voxels;
  return l;
}

void validate(const VoxelGridParams& params, const PointCloud& cloud) {
  validate(params);
  const Bounds b = cloud.local_bounds();
  if (b.valid) voxel_lattice(b.min, b.max, params);
}

LocalBox local_box(const PointCloud& cloud, const CropBoxParams& p) {
  const auto local = [&](const std::array<double, 3>& w) {
    return Point3f{float(w[0] - cloud.origin[0]), float(w[1] - cloud.origin[1]),
                   float(w[2] - cloud.origin[2])};
  };
  return {local(p.min), local(p.max)};
}

PointCloud finite_only(const PointCloud& cloud) {
  std::vector<std::int32_t> kept;
  kept.reserve(cloud.size());
  for (std::size_t i = 0; i < cloud.size(); ++i)
    if (is_finite(cloud.points[i])) kept.push_back(std::int32_t(i));
  return gather_points(cloud, kept);
}

namespace {

// from[kept[j]] as the j-th element of a random-access range, so that a vector is built from it
// in one allocation and one tight loop: push_back's capacity check in the loop took 0.19 ms for
// a KITTI frame's points and intensities on a 2-core EPYC, this 0.12 (resize and assign by
// index, which writes every element twice, 0.20).
template <class T>
class Gathered {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using pointer = const T*;
  using reference = const T&;

  Gathered(const T* from, const std::int32_t* at) : from_(from), at_(at) {}
  reference operator*() const { return from_[std::size_t(*at_)]; }
  reference operator[](difference_type d) const { return from_[std::size_t(at_[d])]; }
  Gathered& operator++() {
    ++at_;
    return *this;
  }
  Gathered operator++(int) {
    Gathered old = *this;
    ++at_;
    return old;
  }
  Gathered& operator--() {
    --at_;
    return *this;
  }
  Gathered operator--(int) {
    Gathered old = *this;
    --at_;
    return old;
  }
  Gathered& operator+=(difference_type d) {
    at_ += d;
    return *this;
  }
  Gathered& operator-=(difference_type d) {
    at_ -= d;
    return *this;
  }
  Gathered operator+(difference_type d) const { return Gathered(from_, at_ + d); }
  Gathered operator-(difference_type d) const { return Gathered(from_, at_ - d); }
  difference_type operator-(const Gathered& o) const { return at_ - o.at_; }
  bool operator==(const Gathered& o) const { return at_ == o.at_; }
  auto operator<=>(const Gathered& o) const { return at_ <=> o.at_; }

 private:
  const T* from_;
  const std::int32_t* at_;
};

}  // namespace

PointCloud gather_points(const PointCloud& cloud, const std::vector<std::int32_t>& kept) {
  PointCloud out;
  out.origin = cloud.origin;
  out.metadata = cloud.metadata;
  const auto gather = [&](const auto& from, auto& to) {
    if (from.empty()) return;
    using T = typename std::decay_t<decltype(from)>::value_type;
    const std::int32_t* at = kept.data();
    to.assign(Gathered<T>(from.data(), at), Gathered<T>(from.data(), at + kept.size()));
  };
  gather(cloud.points, out.points);
  gather(cloud.intensity, out.intensity);
  gather(cloud.rgb, out.rgb);
  gather(cloud.normals, out.normals);
  gather(cloud.labels, out.labels);
  for (const auto& f : cloud.extra) {
    ExtraField g{f.name, f.count, {}};
    g.values.reserve(kept.size() * std::size_t(f.count));
    for (const std::int32_t i : kept)
      for (int k = 0; k < f.count; ++k)
        g.values.push_back(f.values[std::size_t(i) * std::size_t(f.count) + std::size_t(k)]);
    out.extra.push_back(std::move(g));
  }
  out.width = std::uint32_t(out.points.size());
  out.height = 1;
  return out;
}

void finish_kept(const PointCloud& cloud, FilterMethod method, const WallTimer& total,
                 FilterResult& r) {
  WallTimer t;
  r.cloud = gather_points(cloud, r.kept);
  r.stages.emplace_back("gather fields", t.ms());
  r.method = method_name(method);
  r.total_ms = total.ms();
}

FilterResult crop_box(const PointCloud& cloud, const CropBoxParams& params, FilterMethod method) {
  validate(params);
  WallTimer total;
  FilterResult r;
  const LocalBox box = local_box(cloud, params);
  r.kept = method == FilterMethod::Cpu ? crop_box_pcl(cloud, box, params.negative)
                                       : crop_box_gpu(cloud, box, params.negative, r.stages);
  r.non_finite = cloud.count_non_finite();
  finish_kept(cloud, method, total, r);
  return r;
}

FilterResult voxel_grid(const PointCloud& cloud, const VoxelGridParams& params,
                        FilterMethod method) {
  validate(params);
  WallTimer total;
  FilterResult r;
  r.cloud.origin = cloud.origin;
  if (method == FilterMethod::Cpu) {
    WallTimer t;
    voxel_grid_pcl(cloud, params, r.cloud);
    r.stages.emplace_back("PCL VoxelGrid", t.ms());
  } else {
    voxel_grid_gpu(cloud, params, r.cloud, r.stages);
  }
  r.cloud.width = std::uint32_t(r.cloud.size());
  r.cloud.height = 1;
  r.non_finite = cloud.count_non_finite();
  r.method = method_name(method);
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
