#pragma once
// The parts of the _core module, one per file.
#include <pybind11/pybind11.h>

#include <memory>

#include "core/depth_image.h"
#include "core/point_cloud.h"

namespace cumulus::py_support {

void bind_io(pybind11::module_& m);            // Cloud, DepthImage, read, write
void bind_algorithms(pybind11::module_& m);    // cluster, knn, register, features, segment
void bind_scan(pybind11::module_& m);          // filters, ground, objects, pipeline
void bind_tiles(pybind11::module_& m);         // tile plans and the exact merge, for cumulus.dask
void bind_sequence(pybind11::module_& m);      // sequence frames, generated drives, odometry
void bind_registration(pybind11::module_& m);  // register_global

// A cumulus.DepthImage or a 2-D array of metres as a DepthImage (TypeError otherwise).
DepthImage depth_image_arg(pybind11::handle object);
// A result cloud handed to Python as a cumulus.Cloud.
std::shared_ptr<PointCloud> cloud_result(PointCloud&& cloud);

}  // namespace cumulus::py_support
