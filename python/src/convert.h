#pragma once
// Between numpy and the backend: points in (float32 without a copy where the layout allows,
// float64 world coordinates with a local origin), results out (vectors moved into arrays), the
// method tables' names, and the timings of the last call.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/method_table.h"
#include "core/point_cloud.h"
#include "core/timing.h"

namespace cumulus::py_support {

namespace py = pybind11;

// Points handed to a call: a numpy array of shape (N, 3), float32 (local coordinates, used in
// place when C-contiguous) or float64 (world coordinates, moved to a local origin when they are
// large, as the file readers do), or a cumulus.Cloud.
class PointsArg {
 public:
  // TypeError for another type or dtype, ValueError for another shape or (unless allow_empty)
  // no rows. `name` is the argument's name in messages.
  PointsArg(py::handle object, const char* name, bool allow_empty = false);
  // The same, with float64 input expressed relative to `origin` (a second cloud in the first's
  // frame); float32 and Cloud input keep their own frame, see in_frame().
  PointsArg(py::handle object, const char* name, const std::array<double, 3>& origin);

  const Point3f* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::array<double, 3>& origin() const { return origin_; }
  // The points relative to `origin` (a copy unless it is theirs already).
  std::vector<Point3f> in_frame(const std::array<double, 3>& origin) const;
  std::vector<Point3f> vector() const { return {data_, data_ + size_}; }
  // As a PointCloud: the Cloud itself, or one made of the points (a copy).
  const PointCloud& cloud();

 private:
  void from_array(py::handle object, const char* name, bool allow_empty,
                  const std::array<double, 3>* origin);
  py::object hold_;
  const PointCloud* cloud_ = nullptr;
  PointCloud built_;
  bool built_ready_ = false;
  std::vector<Point3f> owned_;
  const Point3f* data_ = nullptr;
  std::size_t size_ = 0;
  std::array<double, 3> origin_{0, 0, 0};
};

// A vector's storage handed to numpy without a copy (the array owns it).
template <class T, class A>
py::array_t<T> to_array(std::vector<T, A>&& v, std::vector<py::ssize_t> shape) {
  using Owned = std::vector<T, A>;
  auto* owned = new Owned(std::move(v));
  py::capsule owner(owned, [](void* p) { delete static_cast<Owned*>(p); });
  return py::array_t<T>(shape, owned->data(), owner);
}
template <class T, class A>
py::array_t<T> to_array(std::vector<T, A>&& v) {
  const auto n = py::ssize_t(v.size());
  return to_array(std::move(v), {n});
}
// Points or normals as an (N, 3) float32 array, without a copy.
py::array_t<float> points_array(std::vector<Point3f>&& v);

// A read-only view of memory that `owner` keeps alive.
template <class T>
py::array_t<T> view(const T* data, std::vector<py::ssize_t> shape, py::handle owner) {
  py::array_t<T> a(shape, data, owner);
  a.attr("flags").attr("writeable") = false;
  return a;
}

// Whether a GPU can be used, asked once per process (the default methods depend on it).
bool gpu_usable();

// The method named `name` of an algorithm's table, or its default method when None;
// InvalidArgument listing the valid names otherwise.
template <HasMethodTable Method>
Method method_arg(const std::optional<std::string>& name, const char* algorithm) {
  const auto& table = method_table(Method{});
  if (!name) return table.default_method(gpu_usable());
  if (auto m = table.parse(*name)) return *m;
  throw InvalidArgument("unknown " + std::string(algorithm) + " method '" + *name +
                        "'; valid methods: " + table.names());
}

// A parameter that must be a finite number (and positive, when asked): InvalidArgument naming it.
double finite_arg(double value, const char* name, bool positive = false);
// finite_arg for a parameter held as float: a number beyond a float's range is InvalidArgument,
// not a narrowing that C++ leaves undefined.
float float_arg(double value, const char* name, bool positive = false);

// What the last call on this thread took, for last_timings(): method, stage times, the
// backend's own total, and `call_ms`, the wall time of the C++ call as the binding made it
// (what the Python layer's overhead is measured against).
void record_timings(const std::string& method, const StageTimes& stages, double total_ms,
                    double call_ms);
py::dict last_timings();
py::dict stage_dict(const StageTimes& stages);

// The Python exception types (cumulus.Error and its subclasses) and the translation of the
// backend's exceptions to them.
void register_exceptions(py::module_& m);

}  // namespace cumulus::py_support
