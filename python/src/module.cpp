// cumulus._core: the backend for Python. cumulus/__init__.py re-exports it; the API mirrors
// cumulus-cli and reads the same method tables.
#include <pybind11/stl.h>

#include "bindings.h"
#include "cluster/cluster.h"
#include "convert.h"
#include "core/device.h"
#include "features/features.h"
#include "filter/filter.h"
#include "ground/ground.h"
#include "ground/range_ground.h"
#include "nns/nns.h"
#include "objects/pipeline.h"
#include "registration/global.h"
#include "registration/icp.h"
#include "segment/segment.h"

namespace cumulus::py_support {

namespace {

template <class Method>
py::list method_rows(Method any) {
  py::list rows;
  for (const auto& r : method_table(any).rows()) {
    py::dict d;
    d["name"] = r.name;
    d["label"] = r.label;
    d["device"] = r.device == MethodDevice::Gpu ? "gpu" : "cpu";
    d["origin"] = origin_name(r.origin);
    d["default"] = r.use == MethodDefault::WithGpu      ? "with a GPU"
                   : r.use == MethodDefault::WithoutGpu ? "without a GPU"
                                                        : "";
    d["description"] = r.description;
    rows.append(d);
  }
  return rows;
}

// The algorithms by the names of the CLI's commands.
py::list methods(const std::string& algorithm) {
  if (algorithm == "cluster") return method_rows(ClusterMethod{});
  if (algorithm == "segment") return method_rows(SegmentMethod{});
  if (algorithm == "knn" || algorithm == "radius_search" || algorithm == "nns")
    return method_rows(NnsMethod{});
  if (algorithm == "register" || algorithm == "icp") return method_rows(IcpMethod{});
  if (algorithm == "register_global" || algorithm == "global") return method_rows(GlobalMethod{});
  if (algorithm == "features" || algorithm == "normals" || algorithm == "pfh" ||
      algorithm == "fpfh")
    return method_rows(FeatureMethod{});
  if (algorithm == "filter") return method_rows(FilterMethod{});
  if (algorithm == "ground") return method_rows(GroundMethod{});
  if (algorithm == "range-ground") return method_rows(RangeGroundMethod{});
  if (algorithm == "pipeline") return method_rows(PipelineMethod{});
  throw InvalidArgument(
      "unknown algorithm '" + algorithm +
      "'; valid: cluster, segment, knn, radius_search, register, register_global, "
      "features, "
      "normals, pfh, fpfh, filter, ground, range-ground, pipeline");
}

py::list devices() {
  py::list out;
  int index = 0;
  for (const DeviceInfo& d : query_devices()) {
    py::dict e;
    e["available"] = d.available;
    if (d.available) {
      e["index"] = index++;
      e["name"] = d.name;
      e["total_memory"] = d.total_memory;
      e["free_memory"] = d.free_memory;
      e["compute_capability"] = py::make_tuple(d.compute_major, d.compute_minor);
      e["multiprocessors"] = d.multiprocessors;
    } else {
      e["reason"] = d.reason;
    }
    e["built_with_cuda"] = d.built_with_cuda;
    e["driver_version"] = d.driver_version;
    e["runtime_version"] = d.runtime_version;
    out.append(e);
  }
  return out;
}

}  // namespace

}  // namespace cumulus::py_support

PYBIND11_MODULE(_core, m) {
  namespace ps = cumulus::py_support;
  m.doc() = "Cumulus's backend: GPU-accelerated point-cloud and depth-image algorithms";
  ps::register_exceptions(m);
  ps::bind_io(m);
  ps::bind_algorithms(m);
  ps::bind_scan(m);
  ps::bind_tiles(m);
  ps::bind_sequence(m);
  ps::bind_registration(m);
  m.def("methods", &ps::methods, pybind11::arg("algorithm"),
        "The method table of an algorithm (cluster, segment, knn, register, features, filter,\n"
        "ground, range-ground, pipeline): a dict per method with name, label, device, origin,\n"
        "default and description, as `cumulus-cli methods` lists them.");
  m.def("devices", &ps::devices,
        "The GPUs this process can see (CUDA_VISIBLE_DEVICES narrows them; the first is used),\n"
        "or one entry with available False and the reason.");
  m.def("last_timings", &ps::last_timings,
        "The last call's method, total_ms (the backend's whole call, transfers included) and\n"
        "per-stage times, on this thread.");
  m.def(
      "set_gpu_memory_limit", [](std::size_t mb) { cumulus::set_gpu_memory_limit(mb << 20); },
      pybind11::arg("megabytes"),
      "Caps the GPU memory that methods plan to use (0: no cap); larger inputs are tiled.");
}
