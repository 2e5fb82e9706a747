// cluster, knn, radius_search, register, normals, pfh, fpfh and segment.
#include <pybind11/eigen.h>
#include <pybind11/stl.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "bindings.h"
#include "cluster/cluster.h"
#include "convert.h"
#include "features/features.h"
#include "nns/nns.h"
#include "registration/icp.h"
#include "segment/segment.h"

namespace cumulus::py_support {

namespace {

py::array_t<std::int32_t> cluster(py::handle points, double tolerance, std::size_t min_size,
                                  std::optional<std::size_t> max_size,
                                  const std::optional<std::string>& method) {
  PointsArg p(points, "points");
  ClusterParams params;
  params.tolerance = float_arg(tolerance, "tolerance", true);
  params.min_size = min_size;
  if (max_size) params.max_size = *max_size;
  const auto m = method_arg<ClusterMethod>(method, "clustering");
  validate(params);
  ClusterResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = euclidean_cluster(p.data(), p.size(), params, m);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  return to_array(std::move(r.labels));
}

// A search's targets and queries (the targets when None), the queries in the targets' frame:
// float32 arrays and Clouds in place, float64 arrays converted once.
class SearchInput {
 public:
  SearchInput(py::handle t, const py::object& q) : targets_arg_(t, "targets") {
    if (!q.is_none()) queries_arg_.emplace(q, "queries", targets_arg_.origin());
  }
  std::span<const Point3f> targets() const { return {targets_arg_.data(), targets_arg_.size()}; }
  std::span<const Point3f> queries() {
    if (!queries_arg_) return targets();
    if (queries_arg_->origin() == targets_arg_.origin())
      return {queries_arg_->data(), queries_arg_->size()};
    moved_ = queries_arg_->in_frame(targets_arg_.origin());
    return moved_;
  }

 private:
  PointsArg targets_arg_;
  std::optional<PointsArg> queries_arg_;
  std::vector<Point3f> moved_;
};

py::tuple knn(py::handle targets, const py::object& queries, int k, double max_distance,
              const std::optional<std::string>& method) {
  const auto m = method_arg<NnsMethod>(method, "neighbour search");
  // Any distance beyond a float's range limits nothing: it is the default's "no limit".
  const double limit = std::numeric_limits<float>::max();
  const float max_d = std::abs(max_distance) > limit ? (max_distance > 0 ? INFINITY : -INFINITY)
                                                     : float(max_distance);
  validate_knn(k, m, max_d);
  SearchInput in(targets, queries);
  const auto tv = in.targets();
  const auto qv = in.queries();
  KnnResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = knn_search(tv, qv, k, m, max_d);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  const auto rows = py::ssize_t(qv.size());
  return py::make_tuple(to_array(std::move(r.indices), {rows, k}),
                        to_array(std::move(r.sq_distances), {rows, k}));
}

py::tuple radius(py::handle targets, const py::object& queries, double radius,
                 std::size_t max_neighbours, const std::optional<std::string>& method) {
  const auto m = method_arg<NnsMethod>(method, "neighbour search");
  const float within = float_arg(radius, "radius", true);
  validate_radius(within);
  SearchInput in(targets, queries);
  const auto tv = in.targets();
  const auto qv = in.queries();
  RadiusResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = radius_search(tv, qv, within, m, max_neighbours);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  return py::make_tuple(to_array(std::move(r.offsets)), to_array(std::move(r.indices)),
                        to_array(std::move(r.sq_distances)));
}

IcpResult register_clouds(py::handle source, py::handle target, double max_correspondence_distance,
                          int max_iterations, double transformation_epsilon, double fitness_epsilon,
                          const std::optional<Eigen::Matrix4d>& initial,
                          const std::optional<std::string>& method, const std::string& metric,
                          int normals_k, const std::string& kernel, double kernel_scale, int gicp_k,
                          double absolute_mse) {
  PointsArg t(target, "target");
  PointsArg s(source, "source", t.origin());
  IcpParams params;
  params.max_correspondence_distance = max_correspondence_distance;
  params.criteria.max_iterations = max_iterations;
  params.criteria.transformation_epsilon = transformation_epsilon;
  params.criteria.fitness_epsilon = fitness_epsilon;
  params.criteria.absolute_mse = absolute_mse;
  if (initial) params.initial = *initial;
  const auto chosen = parse_metric(metric);
  if (!chosen)
    throw InvalidArgument("unknown metric '" + metric +
                          "'; valid: point-to-point, point-to-plane, gicp");
  params.metric = *chosen;
  params.gicp.k = gicp_k;
  const auto robust = parse_kernel(kernel);
  if (!robust) throw InvalidArgument("unknown kernel '" + kernel + "'; valid: none, huber, tukey");
  params.kernel = *robust;
  params.kernel_scale = kernel_scale;
  if (normals_k < 3 || normals_k > 1000) throw InvalidArgument("normals_k takes 3 to 1000");
  params.normals_k = normals_k;
  const auto m = method_arg<IcpMethod>(method, "registration");
  validate(params);
  const PointCloud& tc = t.cloud();
  const PointCloud& sc = s.cloud();
  IcpResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = icp(sc, tc, params, m);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  return r;
}

Neighbourhood neighbourhood_arg(std::optional<int> k, std::optional<double> radius, int default_k,
                                const char* what) {
  if (k && radius) throw InvalidArgument(std::string(what) + ": give k or radius, not both");
  if (radius) return Neighbourhood::within(float_arg(*radius, "radius", true));
  const int kk = k.value_or(default_k);
  if (kk < 1) throw InvalidArgument(std::string(what) + ": k must be at least 1");
  return Neighbourhood::nearest(kk);
}

py::tuple normals(py::handle points, std::optional<int> k, std::optional<double> radius,
                  std::array<double, 3> viewpoint, const std::optional<std::string>& method,
                  bool pcl_compatible) {
  PointsArg p(points, "points");
  NormalParams params;
  params.neighbourhood = neighbourhood_arg(k, radius, 16, "normals");
  params.viewpoint = viewpoint;
  params.pcl_compatible = pcl_compatible;
  const auto m = method_arg<FeatureMethod>(method, "features");
  validate(params, m);
  const PointCloud& c = p.cloud();
  NormalsResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = estimate_normals(c, params, m);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  return py::make_tuple(points_array(std::move(r.normals)), to_array(std::move(r.curvature)));
}

py::array_t<float> histograms(Descriptor descriptor, py::handle points, std::optional<int> k,
                              std::optional<double> radius, const py::object& given_normals,
                              std::optional<int> normal_k, std::optional<double> normal_radius,
                              std::array<double, 3> viewpoint,
                              const std::optional<std::string>& method) {
  PointsArg p(points, "points");
  FeatureParams params;
  params.descriptor = descriptor;
  params.neighbourhood = neighbourhood_arg(k, radius, 32, descriptor_name(descriptor));
  params.normals.neighbourhood = neighbourhood_arg(normal_k, normal_radius, 16, "normals");
  params.normals.viewpoint = viewpoint;
  const auto m = method_arg<FeatureMethod>(method, "features");
  std::optional<std::vector<Point3f>> n;
  if (!given_normals.is_none()) {
    PointsArg na(given_normals, "normals");
    if (na.size() != p.size())
      throw py::value_error("normals must have one row per point (" + std::to_string(p.size()) +
                            ")");
    n = na.vector();
  }
  validate(params, m, n.has_value());
  const PointCloud& c = p.cloud();
  FeatureResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = compute_features(c, params, m, n ? &*n : nullptr);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  const auto rows = py::ssize_t(r.size());
  return to_array(std::move(r.histograms), {rows, r.bins});
}

SegmentParams segment_params(double epsilon, const std::string& distance, double row_pitch,
                             int median) {
  SegmentParams params;
  params.epsilon = float_arg(epsilon, "epsilon", true);
  if (distance == "perpendicular")
    params.distance = SegmentDistance::Perpendicular;
  else if (distance != "vertical")
    throw InvalidArgument("unknown distance '" + distance + "'; valid: vertical, perpendicular");
  params.row_pitch = float_arg(row_pitch, "row_pitch");
  params.median = median;
  validate(params);
  return params;
}

SegmentResult segment(py::handle depth, double epsilon, const std::string& distance,
                      double row_pitch, int median, const std::optional<std::string>& method) {
  const DepthImage image = depth_image_arg(depth);
  const SegmentParams params = segment_params(epsilon, distance, row_pitch, median);
  const auto m = method_arg<SegmentMethod>(method, "segmentation");
  SegmentResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = segment_columns(image, params, m);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  return r;
}

// A stack of images in one GPU batch: raw 16-bit units go up as they are (half the bytes of
// floats) and are scaled on the device; without a GPU each image is segmented on the CPU.
template <class Pixel>
std::vector<SegmentResult> segment_stack(
    const py::array_t<Pixel, py::array::c_style | py::array::forcecast>& a,
    std::optional<double> scale, const SegmentParams& params) {
  const auto n = std::size_t(a.shape(0));
  const auto h = std::uint32_t(a.shape(1)), w = std::uint32_t(a.shape(2));
  const std::size_t px = std::size_t(w) * h;
  std::vector<const Pixel*> images;
  for (std::size_t k = 0; k < n; ++k)
    images.push_back(a.data() + k * px);
  py::gil_scoped_release release;
  if (query_device().available) {
    if constexpr (std::is_same_v<Pixel, float>)
      return segment_buffers_gpu(images, w, h, params);
    else
      return segment_raw_buffers_gpu(images, w, h, *scale, params);
  }
  std::vector<SegmentResult> out;
  DepthImage img;
  img.width = w, img.height = h, img.depth.resize(px);
  for (const Pixel* src : images) {
    for (std::size_t i = 0; i < px; ++i)
      if constexpr (std::is_same_v<Pixel, float>)
        img.depth[i] = src[i];
      else
        img.depth[i] = depth_from_unit(src[i], *scale);
    out.push_back(segment_columns(img, params, SegmentMethod::CpuMt));
  }
  return out;
}

std::vector<SegmentResult> segment_batch(py::handle depths, std::optional<double> scale,
                                         double epsilon, const std::string& distance,
                                         double row_pitch, int median) {
  const SegmentParams params = segment_params(epsilon, distance, row_pitch, median);
  const auto shape_error = [] {
    return py::value_error(
        "segment_batch takes a 3-D numpy array (images, rows, columns): uint16 depth units "
        "with scale= their metres a unit, or depths in metres");
  };
  const py::array any = py::array::ensure(depths);
  if (!any || any.ndim() != 3) throw shape_error();
  WallTimer call;
  std::vector<SegmentResult> out;
  if (any.dtype().is(py::dtype::of<std::uint16_t>())) {
    if (!scale) throw InvalidArgument("uint16 depth units need scale=, the metres a unit");
    if (!(std::isfinite(*scale) && *scale > 0))
      throw InvalidArgument("scale must be a positive number of metres a unit");
    out = segment_stack(
        py::array_t<std::uint16_t, py::array::c_style | py::array::forcecast>::ensure(any), scale,
        params);
  } else {
    if (scale) throw InvalidArgument("scale= is for uint16 depth units; these are metres");
    out = segment_stack(py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(any),
                        scale, params);
  }
  if (!out.empty())
    record_timings(out[0].method, out[0].stages, out[0].total_ms * double(out.size()), call.ms());
  return out;
}

}  // namespace

void bind_algorithms(py::module_& m) {
  const char* method_doc = "None: the default method (gpu where a GPU can be used, else cpu)";
  m.def("cluster", &cluster, py::arg("points"), py::arg("tolerance"), py::arg("min_size") = 1,
        py::arg("max_size") = py::none(), py::arg("method") = py::none(),
        (std::string("Euclidean clustering with PCL's semantics. Returns int32 labels, one per\n"
                     "point: the cluster's rank by size (largest first), -1 for points in\n"
                     "clusters outside [min_size, max_size] and for non-finite points.\nmethod: ") +
         method_doc)
            .c_str());
  m.def("knn", &knn, py::arg("targets"), py::arg("queries") = py::none(), py::arg("k") = 1,
        py::arg("max_distance") = std::numeric_limits<double>::infinity(),
        py::arg("method") = py::none(),
        "The k nearest targets of every query (queries None: the targets themselves). Returns\n"
        "(indices int32 (Q, k), squared distances float32 (Q, k)), nearest first, ties by index;\n"
        "-1 and inf where fewer than k targets lie within max_distance.");
  m.def("radius_search", &radius, py::arg("targets"), py::arg("queries") = py::none(),
        py::arg("radius") = 1.0, py::arg("max_neighbours") = 0, py::arg("method") = py::none(),
        "Every target closer than radius to each query, as CSR: (offsets uint32 (Q + 1),\n"
        "indices int32, squared distances float32); query q's are offsets[q]:offsets[q + 1].");

  py::class_<IcpResult>(m, "RegistrationResult", "What register() found.")
      .def_readonly("transform", &IcpResult::transform,
                    "4 x 4 float64, source to target in world coordinates")
      .def_readonly("fitness", &IcpResult::fitness, "PCL's getFitnessScore()")
      .def_readonly("iterations", &IcpResult::iterations)
      .def_readonly("cost_evaluations", &IcpResult::cost_evaluations)
      .def_readonly("converged", &IcpResult::converged, "PCL's hasConverged()")
      .def_property_readonly("stop", [](const IcpResult& r) { return stop_name(r.stop); })
      .def_property_readonly("stop_reason",
                             [](const IcpResult& r) { return stop_description(r.stop); })
      .def_readonly("method", &IcpResult::method)
      .def_property_readonly("metric", [](const IcpResult& r) { return metric_name(r.metric); })
      .def_property_readonly("kernel", [](const IcpResult& r) { return kernel_name(r.kernel); })
      .def_readonly("total_ms", &IcpResult::total_ms)
      .def_property_readonly("timings", [](const IcpResult& r) { return stage_dict(r.stages); })
      .def_property_readonly("history",
                             [](const IcpResult& r) {
                               py::list l;
                               for (const auto& h : r.history)
                                 l.append(py::dict(py::arg("correspondences") = h.correspondences,
                                                   py::arg("mse") = h.mse));
                               return l;
                             })
      .def("__repr__", [](const IcpResult& r) {
        return "<cumulus.RegistrationResult " + std::string(stop_name(r.stop)) + " after " +
               std::to_string(r.iterations) + " iterations, fitness " + std::to_string(r.fitness) +
               ">";
      });
  m.def("register", &register_clouds, py::arg("source"), py::arg("target"),
        py::arg("max_correspondence_distance") = 0.05, py::arg("max_iterations") = 50,
        py::arg("transformation_epsilon") = 1e-10, py::arg("fitness_epsilon") = 1e-8,
        py::arg("initial") = py::none(), py::arg("method") = py::none(),
        py::arg("metric") = "point-to-point", py::arg("normals_k") = 20, py::arg("kernel") = "none",
        py::arg("kernel_scale") = 0.0, py::arg("gicp_k") = 20,
        py::arg("absolute_mse") = IcpCriteria{}.absolute_mse,
        "ICP with PCL's semantics, source onto target. initial: a 4 x 4 guess. metric:\n"
        "point-to-point (IterativeClosestPoint), point-to-plane (IterativeClosestPointWithNormals\n"
        "on the target's normals: a Cloud's own, else from its normals_k nearest neighbours) or\n"
        "gicp (GeneralizedIterativeClosestPoint, covariances from gicp_k neighbours).\n"
        "kernel: none, huber or tukey (robust reweighting at kernel_scale, a distance).\n"
        "Stops on the transformation epsilon, the relative fitness epsilon (negative: off) or\n"
        "an MSE change below absolute_mse (0: off), else after max_iterations.\n"
        "Returns a RegistrationResult (transform, fitness, iterations, converged, stop, timings).");
  m.def("normals", &normals, py::arg("points"), py::arg("k") = py::none(),
        py::arg("radius") = py::none(), py::arg("viewpoint") = std::array<double, 3>{0, 0, 0},
        py::arg("method") = py::none(), py::arg("pcl_compatible") = false,
        "Surface normals as PCL's NormalEstimation (k nearest, default 16, or radius). Returns\n"
        "(normals float32 (N, 3), curvature float32 (N,)); NaN with fewer than 3 neighbours.\n"
        "The gpu method's are exact unless pcl_compatible, which gives PCL's bit for bit.");
  const auto bind_descriptor = [&](const char* name, Descriptor d, const char* doc) {
    m.def(
        name,
        [d](py::handle points, std::optional<int> k, std::optional<double> radius,
            const py::object& normals, std::optional<int> normal_k,
            std::optional<double> normal_radius, std::array<double, 3> viewpoint,
            const std::optional<std::string>& method) {
          return histograms(d, points, k, radius, normals, normal_k, normal_radius, viewpoint,
                            method);
        },
        py::arg("points"), py::arg("k") = py::none(), py::arg("radius") = py::none(),
        py::arg("normals") = py::none(), py::arg("normal_k") = py::none(),
        py::arg("normal_radius") = py::none(),
        py::arg("viewpoint") = std::array<double, 3>{0, 0, 0}, py::arg("method") = py::none(), doc);
  };
  bind_descriptor(
      "pfh", Descriptor::Pfh,
      "PFH histograms (125 bins) as PCL's PFHEstimation: float32 (N, 125). Neighbours:\n"
      "k (default 32) or radius; normals given, or estimated with normal_k/radius.");
  bind_descriptor(
      "fpfh", Descriptor::Fpfh,
      "FPFH histograms (33 bins) as PCL's FPFHEstimation: float32 (N, 33). Neighbours:\n"
      "k (default 32) or radius; normals given, or estimated with normal_k/radius.");

  PYBIND11_NUMPY_DTYPE(Segment, column, start_row, end_row, start_depth, end_depth);
  py::class_<SegmentResult>(m, "SegmentResult", "The cut rows of every column.")
      .def_readonly("width", &SegmentResult::width)
      .def_readonly("height", &SegmentResult::height)
      .def_property_readonly(
          "offsets",
          [](const py::object& self) {
            const auto& r = self.cast<const SegmentResult&>();
            return view(r.offsets.data(), {py::ssize_t(r.offsets.size())}, self);
          },
          "column c's cut rows are rows[offsets[c]:offsets[c + 1]]")
      .def_property_readonly("rows",
                             [](const py::object& self) {
                               const auto& r = self.cast<const SegmentResult&>();
                               return view(r.rows.data(), {py::ssize_t(r.rows.size())}, self);
                             })
      .def_property_readonly("levels",
                             [](const py::object& self) {
                               const auto& r = self.cast<const SegmentResult&>();
                               return view(r.levels.data(), {py::ssize_t(r.levels.size())}, self);
                             })
      .def_property_readonly("segment_count", &SegmentResult::segment_count)
      .def_readonly("method", &SegmentResult::method)
      .def_readonly("total_ms", &SegmentResult::total_ms)
      .def(
          "segments",
          [](const SegmentResult& r, py::handle depth) {
            auto s = list_segments(depth_image_arg(depth), r);
            return py::array_t<Segment>(py::ssize_t(s.size()), s.data());
          },
          py::arg("depth"),
          "The segments as a structured array (column, start_row, end_row, start_depth,\n"
          "end_depth), given the image that was segmented.");
  m.def("segment", &segment, py::arg("depth"), py::arg("epsilon") = 0.1,
        py::arg("distance") = "vertical", py::arg("row_pitch") = 0.01, py::arg("median") = 0,
        py::arg("method") = py::none(),
        "RDP segmentation of every column of a depth image (a DepthImage or a 2-D array of\n"
        "metres). Returns a SegmentResult.");
  m.def("segment_batch", &segment_batch, py::arg("depths"), py::arg("scale") = py::none(),
        py::arg("epsilon") = 0.1, py::arg("distance") = "vertical", py::arg("row_pitch") = 0.01,
        py::arg("median") = 0,
        "RDP segmentation of a stack of same-size depth images in one GPU batch: a 3-D array\n"
        "(images, rows, columns) of uint16 depth units with scale= their metres a unit (as\n"
        "depth PNGs hold them: half the bytes of floats to upload, scaled on the device\n"
        "exactly as read() scales them), or of depths in metres. Returns a SegmentResult an\n"
        "image, equal to segment()'s; without a GPU each image runs on the CPU (cpu-mt).");
}

}  // namespace cumulus::py_support
