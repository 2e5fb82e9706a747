// Sequences: their frames in order, generated drives with ground truth, and LiDAR odometry.
#include <pybind11/eigen.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "generate/generate.h"
#include "sequence/odometry.h"
#include "sequence/sequence.h"

namespace cumulus::py_support {

namespace {

py::tuple street_frame(int frame, int frames, std::uint64_t seed, const std::string& terrain,
                       double speed, double speed_variation, double start_x, double weave,
                       double dropout, bool vegetation) {
  StreetDriveParams p;
  p.scene.seed = seed;
  p.scene.vegetation = vegetation;
  if (terrain == "hilly")
    p.scene.terrain = StreetTerrain::Hilly;
  else if (terrain != "level")
    throw InvalidArgument("unknown terrain '" + terrain + "'; valid: level, hilly");
  p.frames = frames;
  p.speed = finite_arg(speed, "speed");
  p.speed_variation = finite_arg(speed_variation, "speed_variation");
  p.start_x = finite_arg(start_x, "start_x");
  p.weave = finite_arg(weave, "weave");
  p.dropout = finite_arg(dropout, "dropout");
  if (frames < 1 || frame < 0 || frame >= frames)
    throw InvalidArgument("frame must be in 0 .. frames - 1 (frames " + std::to_string(frames) +
                          ", frame " + std::to_string(frame) + ")");
  std::array<double, 16> pose{};
  PointCloud cloud;
  {
    py::gil_scoped_release release;
    cloud = generate_street_frame(p, frame, &pose);
  }
  const Eigen::Matrix4d m =
      Eigen::Map<const Eigen::Matrix<double, 4, 4, Eigen::RowMajor>>(pose.data());
  return py::make_tuple(cloud_result(std::move(cloud)), m);
}

// Odometry and the arguments it was made with, as the CLI's sequence --task odometry takes them.
class PyOdometry {
 public:
  PyOdometry(const std::optional<std::string>& method, const std::optional<std::string>& filter,
             const std::string& target, double voxel, double max_correspondence_distance,
             int max_iterations, int map_scans, double map_voxel, bool motion_prior,
             const std::string& ground, const std::string& metric) {
    OdometryParams p;
    const auto chosen = parse_metric(metric);
    if (!chosen)
      throw InvalidArgument("metric is point-to-plane, point-to-point or gicp, not '" + metric +
                            "'");
    p.metric = *chosen;
    p.voxel = float_arg(voxel, "voxel", true);
    p.max_correspondence_distance =
        finite_arg(max_correspondence_distance, "max_correspondence_distance", true);
    p.max_iterations = max_iterations;
    const auto parsed = parse_odometry_target(target);
    if (!parsed)
      throw InvalidArgument("target is scan-to-map or scan-to-scan, not '" + target + "'");
    p.target = *parsed;
    p.map_scans = map_scans;
    p.map_voxel = float_arg(map_voxel, "map_voxel", true);
    p.motion_prior = motion_prior;
    const auto scan_ground = parse_scan_ground(ground);
    if (!scan_ground) throw InvalidArgument("ground is auto, keep or remove, not '" + ground + "'");
    p.scan_ground = *scan_ground;
    validate(p);
    odometry_.emplace(p, method_arg<IcpMethod>(method, "registration"),
                      method_arg<FilterMethod>(filter, "filter"));
  }

  py::dict add(py::handle points) {
    PointsArg p(points, "points");
    const PointCloud& c = p.cloud();
    OdometryStep s;
    {
      py::gil_scoped_release release;
      s = odometry_->add(c);
    }
    py::dict d;
    d["pose"] = s.pose;
    d["points"] = s.points;
    d["correspondences"] = s.correspondences;
    d["iterations"] = s.iterations;
    d["fitness"] = s.fitness;
    d["converged"] = s.converged;
    d["ground_points"] = s.ground_points;
    d["total_ms"] = s.total_ms;
    return d;
  }

  Eigen::Matrix4d skip() { return odometry_->skip(); }

  py::array_t<double> poses() const {
    const auto& t = odometry_->poses();
    std::vector<double> v;
    v.reserve(16 * t.size());
    for (const auto& m : t)
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c)
          v.push_back(m(r, c));
    return to_array(std::move(v), {py::ssize_t(t.size()), 4, 4});
  }

 private:
  std::optional<Odometry> odometry_;
};

}  // namespace

void bind_sequence(py::module_& m) {
  m.def("sequence_frames", &sequence_frames, py::arg("spec"),
        "The frames of a sequence, in natural numeric order: a folder, a glob or a list file, "
        "as `cumulus-cli sequence` reads them.");
  m.def("generate_street_frame", &street_frame, py::arg("frame"), py::arg("frames") = 100,
        py::arg("seed") = 1, py::arg("terrain") = "level", py::arg("speed") = 1.0,
        py::arg("speed_variation") = 0.3, py::arg("start_x") = -45.0, py::arg("weave") = 1.0,
        py::arg("dropout") = 0.01, py::arg("vegetation") = true,
        "Frame `frame` of a generated drive down a street, as `cumulus-cli generate sequence`\n"
        "writes it: (Cloud in the sensor's frame, its ground-truth pose 4 x 4 in the first\n"
        "frame's). Its `semantic` field says what each point hit (1 ground, 2 building,\n"
        "3 vehicle, 4 pole, 5 pedestrian, 6 vegetation; vegetation=False leaves the trees\n"
        "and bushes out). The same arguments give the same points on every machine.");
  py::class_<PyOdometry>(m, "Odometry",
                         "LiDAR odometry as `cumulus-cli sequence --task odometry`: add() each "
                         "scan in turn; poses holds the trajectory. ground: 'auto' leaves each "
                         "scan's ground out for point to point only, 'keep' or 'remove'.")
      .def(py::init<const std::optional<std::string>&, const std::optional<std::string>&,
                    const std::string&, double, double, int, int, double, bool, const std::string&,
                    const std::string&>(),
           py::arg("method") = py::none(), py::arg("filter_method") = py::none(),
           py::arg("target") = "scan-to-map", py::arg("voxel") = 0.25,
           py::arg("max_correspondence_distance") = 1.0, py::arg("max_iterations") = 30,
           py::arg("map_scans") = 10, py::arg("map_voxel") = 0.5, py::arg("motion_prior") = true,
           py::arg("ground") = "auto", py::arg("metric") = "point-to-plane")
      .def("add", &PyOdometry::add, py::arg("points"),
           "Registers the next scan: a dict with pose (4 x 4), points, correspondences,\n"
           "iterations, fitness, converged, ground_points and total_ms.")
      .def("skip", &PyOdometry::skip, "A frame that could not be read: its predicted pose.")
      .def_property_readonly("poses", &PyOdometry::poses, "float64 (frames, 4, 4)");
}

}  // namespace cumulus::py_support
