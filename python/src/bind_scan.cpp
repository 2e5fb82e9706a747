// From a raw scan to objects: the filters, ground segmentation, objects and the whole pipeline.
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "filter/filter.h"
#include "ground/ground.h"
#include "ground/range_ground.h"
#include "objects/objects.h"
#include "objects/pipeline.h"

namespace cumulus::py_support {

namespace {

// A filter's output cloud; the timings of the call are kept for last_timings().
template <class Params>
std::shared_ptr<PointCloud> filter(py::handle points, const Params& params,
                                   const std::optional<std::string>& method,
                                   FilterResult (*run)(const PointCloud&, const Params&,
                                                       FilterMethod)) {
  PointsArg p(points, "points");
  const auto m = method_arg<FilterMethod>(method, "filter");
  validate(params);
  const PointCloud& c = p.cloud();
  FilterResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = run(c, params, m);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  return cloud_result(std::move(r.cloud));
}

std::array<float, 3> leaf_arg(const py::object& leaf) {
  if (py::isinstance<py::float_>(leaf) || py::isinstance<py::int_>(leaf)) {
    const auto v = float_arg(leaf.cast<double>(), "leaf");
    return {v, v, v};
  }
  const auto v = leaf.cast<std::array<double, 3>>();
  return {float_arg(v[0], "leaf"), float_arg(v[1], "leaf"), float_arg(v[2], "leaf")};
}

py::dict object_dict(const DetectedObject& o) {
  py::dict d;
  d["id"] = o.id;
  d["points"] = o.points;
  d["centroid"] = o.centroid;
  d["min"] = o.min;
  d["max"] = o.max;
  d["box_centre"] = o.box.centre;
  d["box_size"] = o.box.size;
  d["box_heading"] = o.box.heading;
  d["box_up"] = o.box.up;
  d["corners"] = o.box.corners();
  d["above_ground"] = o.above_ground;
  return d;
}

py::list object_list(const std::vector<DetectedObject>& objects) {
  py::list l;
  for (const auto& o : objects)
    l.append(object_dict(o));
  return l;
}

py::tuple ground(py::handle points, const std::string& algorithm, double threshold,
                 int max_iterations, const std::optional<std::array<double, 3>>& axis,
                 double max_angle_deg, std::uint64_t seed, double sensor_height,
                 const std::optional<std::string>& method) {
  PointsArg p(points, "points");
  const PointCloud& c = p.cloud();
  GroundResult r;
  WallTimer call;
  if (algorithm == "ransac-plane") {
    GroundPlaneParams params;
    params.threshold = threshold;
    params.max_iterations = max_iterations;
    params.axis = axis;
    params.max_angle_deg = max_angle_deg;
    params.seed = seed;
    validate(params);
    const auto m = method_arg<GroundMethod>(method, "ground");
    py::gil_scoped_release release;
    r = segment_ground_plane(c, params, m);
  } else if (algorithm == "range-rdp") {
    RangeGroundParams params;
    params.threshold = threshold;
    params.sensor_height = sensor_height;
    validate(params);
    const auto m = method_arg<RangeGroundMethod>(method, "range-ground");
    py::gil_scoped_release release;
    r = segment_ground_range(c, params, m);
  } else {
    throw InvalidArgument("unknown ground algorithm '" + algorithm +
                          "'; valid: ransac-plane, range-rdp");
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  return py::make_tuple(to_array(std::move(r.ground)),
                        py::make_tuple(r.plane[0], r.plane[1], r.plane[2], r.plane[3]));
}

struct PipelineOutput {
  std::shared_ptr<PointCloud> cloud;
  py::array_t<std::int32_t> labels;
  py::list objects;
  py::list stages;
  py::object ground_plane;
  std::size_t ground_points = 0;
  double total_ms = 0;
};

PipelineOutput pipeline(py::handle points, const std::string& method,
                        const std::optional<std::array<double, 6>>& crop, bool crop_negative,
                        const py::object& voxel, std::size_t min_points,
                        const std::optional<std::pair<int, double>>& sor,
                        const std::optional<std::pair<double, int>>& ror, const std::string& ground,
                        double ground_threshold, const std::optional<double>& tolerance,
                        std::size_t min_size, std::size_t max_size) {
  PointsArg p(points, "points");
  PipelineParams params;
  if (crop)
    params.crop = CropBoxParams{
        {(*crop)[0], (*crop)[1], (*crop)[2]}, {(*crop)[3], (*crop)[4], (*crop)[5]}, crop_negative};
  if (!voxel.is_none()) params.voxel = VoxelGridParams{leaf_arg(voxel), min_points};
  if (sor) params.statistical = StatisticalOutlierParams{sor->first, sor->second, false};
  if (ror) params.radius = RadiusOutlierParams{ror->first, ror->second, false};
  if (ground == "ransac-plane") {
    GroundPlaneParams g;
    g.threshold = ground_threshold;
    g.axis = {0, 0, 1};
    params.ground = g;
  } else if (ground == "range-rdp") {
    RangeGroundParams g;
    g.threshold = ground_threshold;
    params.range_ground = g;
  } else if (ground != "none") {
    throw InvalidArgument("unknown ground stage '" + ground +
                          "'; valid: none, ransac-plane, range-rdp");
  }
  if (tolerance)
    params.cluster = ClusterParams{float_arg(*tolerance, "tolerance", true), min_size, max_size};
  const PointCloud& c = p.cloud();
  PipelineResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = run_pipeline(c, params, method);
  }
  PipelineOutput out;
  StageTimes times;
  for (const auto& s : r.stages) {
    out.stages.append(py::dict(py::arg("name") = s.name, py::arg("method") = s.method,
                               py::arg("points_in") = s.points_in,
                               py::arg("points_out") = s.points_out, py::arg("ms") = s.ms));
    times.emplace_back(s.name, s.ms);
  }
  record_timings(method, times, r.total_ms, call.ms());
  out.objects = object_list(r.objects);
  out.labels = to_array(std::move(r.labels));
  out.cloud = cloud_result(std::move(r.cloud));
  out.ground_points = r.ground_points;
  if (r.ground_plane) {
    const auto& g = *r.ground_plane;
    out.ground_plane = py::make_tuple(g[0], g[1], g[2], g[3]);
  }
  out.total_ms = r.total_ms;
  return out;
}

}  // namespace

void bind_scan(py::module_& m) {
  m.def(
      "crop_box",
      [](py::handle points, std::array<double, 3> min, std::array<double, 3> max, bool negative,
         const std::optional<std::string>& method) {
        return filter(points, CropBoxParams{min, max, negative}, method, &crop_box);
      },
      py::arg("points"), py::arg("min"), py::arg("max"), py::arg("negative") = false,
      py::arg("method") = py::none(),
      "The points inside the world box [min, max] (outside, negative), as PCL's CropBox: a Cloud.");
  m.def(
      "voxel_grid",
      [](py::handle points, const py::object& leaf, std::size_t min_points,
         const std::optional<std::string>& method) {
        return filter(points, VoxelGridParams{leaf_arg(leaf), min_points}, method, &voxel_grid);
      },
      py::arg("points"), py::arg("leaf"), py::arg("min_points") = 0, py::arg("method") = py::none(),
      "One centroid per occupied voxel (leaf: a size or (x, y, z)), as PCL's VoxelGrid: a Cloud.");
  m.def(
      "remove_statistical_outliers",
      [](py::handle points, int mean_k, double stddev_mul,
         const std::optional<std::string>& method) {
        return filter(points, StatisticalOutlierParams{mean_k, stddev_mul, false}, method,
                      &remove_statistical_outliers);
      },
      py::arg("points"), py::arg("mean_k") = 50, py::arg("stddev_mul") = 1.0,
      py::arg("method") = py::none(), "PCL's StatisticalOutlierRemoval: the inliers, a Cloud.");
  m.def(
      "remove_radius_outliers",
      [](py::handle points, double radius, int min_neighbors,
         const std::optional<std::string>& method) {
        return filter(points, RadiusOutlierParams{radius, min_neighbors, false}, method,
                      &remove_radius_outliers);
      },
      py::arg("points"), py::arg("radius"), py::arg("min_neighbors") = 2,
      py::arg("method") = py::none(), "PCL's RadiusOutlierRemoval: the inliers, a Cloud.");
  m.def("ground", &ground, py::arg("points"), py::arg("algorithm") = "ransac-plane",
        py::arg("threshold") = 0.2, py::arg("max_iterations") = 1000,
        py::arg("axis") = std::optional<std::array<double, 3>>(std::array<double, 3>{0, 0, 1}),
        py::arg("max_angle_deg") = 15.0, py::arg("seed") = 1, py::arg("sensor_height") = 1.73,
        py::arg("method") = py::none(),
        "Ground segmentation: ransac-plane (PCL's SACSegmentation; axis None for any plane) or\n"
        "range-rdp (the range image's columns by RDP; the cloud in the sensor's frame).\n"
        "Returns (ground indices int32 ascending, plane (a, b, c, d) in world coordinates).");
  m.def(
      "objects",
      [](py::handle points, py::handle labels, const std::optional<std::array<double, 4>>& plane) {
        PointsArg p(points, "points");
        auto l =
            py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>::ensure(labels);
        if (!l || l.ndim() != 1 || std::size_t(l.shape(0)) != p.size())
          throw py::value_error("labels must be a 1-D array with one label per point");
        const std::vector<std::int32_t> lv(l.data(), l.data() + l.size());
        return object_list(describe_objects(p.cloud(), lv, plane));
      },
      py::arg("points"), py::arg("labels"), py::arg("ground_plane") = py::none(),
      "Per cluster label: points, centroid, axis-aligned box, oriented box standing on the\n"
      "ground plane, its corners and the height above the ground. A list of dicts.");

  py::class_<PipelineOutput>(m, "PipelineResult", "What pipeline() found.")
      .def_readonly("cloud", &PipelineOutput::cloud, "the clustered points: filtered, off ground")
      .def_readonly("labels", &PipelineOutput::labels, "per point of cloud, -1 for none")
      .def_readonly("objects", &PipelineOutput::objects)
      .def_readonly("stages", &PipelineOutput::stages,
                    "per stage: name, method, points_in, points_out, ms")
      .def_readonly("ground_plane", &PipelineOutput::ground_plane)
      .def_readonly("ground_points", &PipelineOutput::ground_points)
      .def_readonly("total_ms", &PipelineOutput::total_ms);
  m.def("_pipeline", &pipeline, py::arg("points"), py::arg("method"), py::arg("crop"),
        py::arg("crop_negative"), py::arg("voxel"), py::arg("min_points"), py::arg("sor"),
        py::arg("ror"), py::arg("ground"), py::arg("ground_threshold"), py::arg("tolerance"),
        py::arg("min_size"), py::arg("max_size"));
}

}  // namespace cumulus::py_support
