// register_global: alignment from any start (registration/global.h).
#include <pybind11/eigen.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "convert.h"
#include "registration/global.h"

namespace cumulus::py_support {

namespace {

GlobalResult register_global_clouds(py::handle source, py::handle target, double voxel,
                                    int hypotheses, double confidence, int pcl_iterations,
                                    double similarity, double min_overlap, std::uint64_t seed,
                                    bool refine, const std::string& metric,
                                    double max_correspondence_distance,
                                    const std::optional<std::string>& method) {
  PointsArg t(target, "target");
  PointsArg s(source, "source", t.origin());
  GlobalParams params;
  params.voxel = voxel;
  params.hypotheses = hypotheses;
  params.confidence = confidence;
  params.pcl_iterations = pcl_iterations;
  params.similarity = similarity;
  params.min_overlap = min_overlap;
  params.seed = seed;
  params.refine = refine;
  const auto chosen = parse_metric(metric);
  if (!chosen)
    throw InvalidArgument("unknown metric '" + metric +
                          "'; valid: point-to-point, point-to-plane, gicp");
  params.refinement.metric = *chosen;
  params.refinement.max_correspondence_distance = max_correspondence_distance;
  const auto m = method_arg<GlobalMethod>(method, "global registration");
  validate(params);
  const PointCloud& tc = t.cloud();
  const PointCloud& sc = s.cloud();
  GlobalResult r;
  WallTimer call;
  {
    py::gil_scoped_release release;
    r = register_global(sc, tc, params, m);
  }
  record_timings(r.method, r.stages, r.total_ms, call.ms());
  return r;
}

py::array_t<std::int32_t> pairs_array(const GlobalResult& r) {
  std::vector<std::int32_t> v;
  v.reserve(2 * r.matches.size());
  for (std::size_t k = 0; k < r.matches.size(); ++k) {
    v.push_back(r.matches.source[k]);
    v.push_back(r.matches.target[k]);
  }
  return to_array(std::move(v), {py::ssize_t(r.matches.size()), 2});
}

}  // namespace

void bind_registration(py::module_& m) {
  py::class_<GlobalResult>(m, "GlobalRegistrationResult", "What register_global() found.")
      .def_readonly("found", &GlobalResult::found,
                    "False when no alignment was found (see reason); never a wrong transform "
                    "reported as found")
      .def_readonly("reason", &GlobalResult::reason, "why none was found ('' when found)")
      .def_readonly("coarse", &GlobalResult::coarse, "4 x 4 float64, the RANSAC alignment")
      .def_readonly("transform", &GlobalResult::transform,
                    "4 x 4 float64, source to target after the ICP (the coarse one unrefined)")
      .def_readonly("voxel", &GlobalResult::voxel, "the keypoints' voxel size used")
      .def_readonly("inliers", &GlobalResult::inliers)
      .def_readonly("inlier_rmse", &GlobalResult::inlier_rmse)
      .def_readonly("overlap", &GlobalResult::overlap,
                    "share of source keypoints within the inlier distance of a target keypoint "
                    "after the coarse alignment")
      .def_readonly("hypotheses", &GlobalResult::hypotheses)
      .def_readonly("valid_hypotheses", &GlobalResult::valid_hypotheses)
      .def_property_readonly("pairs", &pairs_array,
                             "int32 (M, 2): source and target keypoint indices paired by their "
                             "descriptors (cpu: PCL's inliers with their nearest target keypoint)")
      .def_property_readonly(
          "inlier",
          [](const GlobalResult& r) { return to_array(std::vector<std::uint8_t>(r.inlier)); },
          "uint8 (M,): 1 where the pair is an inlier of the coarse alignment")
      .def_property_readonly(
          "source_keypoints",
          [](const GlobalResult& r) { return cloud_result(PointCloud(r.source_keypoints)); })
      .def_property_readonly(
          "target_keypoints",
          [](const GlobalResult& r) { return cloud_result(PointCloud(r.target_keypoints)); })
      .def_property_readonly("refinement",
                             [](const GlobalResult& r) -> py::object {
                               if (!r.refined) return py::none();
                               return py::cast(r.refinement);
                             })
      .def_readonly("method", &GlobalResult::method)
      .def_readonly("total_ms", &GlobalResult::total_ms)
      .def_property_readonly("timings", [](const GlobalResult& r) { return stage_dict(r.stages); })
      .def("__repr__", [](const GlobalResult& r) {
        return "<cumulus.GlobalRegistrationResult " +
               std::string(r.found ? "found" : "not found: " + r.reason) + ", " +
               std::to_string(r.inliers) + " inliers>";
      });
  m.def("register_global", &register_global_clouds, py::arg("source"), py::arg("target"),
        py::arg("voxel") = 0.0, py::arg("hypotheses") = 1000000, py::arg("confidence") = 0.999,
        py::arg("pcl_iterations") = 50000, py::arg("similarity") = 0.9,
        py::arg("min_overlap") = 0.25, py::arg("seed") = 1, py::arg("refine") = true,
        py::arg("metric") = "point-to-point", py::arg("max_correspondence_distance") = 0.0,
        py::arg("method") = py::none(),
        "Aligns source onto target from any start: voxel keypoints (voxel 0: the target's\n"
        "bounding-box diagonal / 100), FPFH, mutual nearest descriptors, RANSAC over three-pair\n"
        "hypotheses (at most `hypotheses`, until RANSAC's bound at `confidence`), then ICP\n"
        "(metric; max_correspondence_distance 0: 1.5 voxels). method: cpu (PCL's\n"
        "SampleConsensusPrerejective, pcl_iterations), cpu-mutual or gpu. Returns a\n"
        "GlobalRegistrationResult; found is False, with a reason, when no alignment is found.");
}

}  // namespace cumulus::py_support
