#include "convert.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/device.h"
#include "io/io.h"

namespace cumulus::py_support {

namespace {

std::string type_name(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__name__"));
}

[[noreturn]] void wrong_type(const char* name, const std::string& what) {
  throw py::type_error(std::string(name) +
                       " must be a numpy array of shape (N, 3) and dtype float32 or float64, "
                       "or a cumulus.Cloud; got " +
                       what);
}

}  // namespace

PointsArg::PointsArg(py::handle object, const char* name, bool allow_empty) {
  if (py::isinstance<PointCloud>(object)) {
    hold_ = py::reinterpret_borrow<py::object>(object);
    cloud_ = &object.cast<const PointCloud&>();
    data_ = cloud_->points.data();
    size_ = cloud_->size();
    origin_ = cloud_->origin;
    if (size_ == 0 && !allow_empty) throw py::value_error(std::string(name) + " has no points");
    return;
  }
  from_array(object, name, allow_empty, nullptr);
}

PointsArg::PointsArg(py::handle object, const char* name, const std::array<double, 3>& origin) {
  if (py::isinstance<PointCloud>(object)) {
    *this = PointsArg(object, name);
    return;
  }
  from_array(object, name, false, &origin);
}

void PointsArg::from_array(py::handle object, const char* name, bool allow_empty,
                           const std::array<double, 3>* origin) {
  if (!py::isinstance<py::array>(object)) wrong_type(name, "a " + type_name(object));
  auto array = py::reinterpret_borrow<py::array>(object);
  const auto kind = array.dtype().kind();
  const auto item = array.itemsize();
  if (kind != 'f' || (item != 4 && item != 8))
    wrong_type(name, "dtype " + std::string(py::str(array.dtype())));
  if (array.ndim() != 2 || array.shape(1) != 3) {
    std::string shape = "(";
    for (py::ssize_t d = 0; d < array.ndim(); ++d)
      shape += (d ? ", " : "") + std::to_string(array.shape(d));
    throw py::value_error(std::string(name) + " must have shape (N, 3); got " + shape +
                          (array.ndim() == 1 ? ",)" : ")"));
  }
  size_ = std::size_t(array.shape(0));
  if (size_ == 0 && !allow_empty) throw py::value_error(std::string(name) + " has no points");
  if (item == 4) {
    // Local coordinates as they are; in place when the rows are packed floats.
    constexpr auto packed = py::array::c_style | py::array::forcecast;
    auto f = py::array_t<float, packed>::ensure(array);
    if (!f) throw py::error_already_set();
    hold_ = f;
    data_ = reinterpret_cast<const Point3f*>(f.data());
    return;  // float32 has no origin of its own: in_frame() moves it where a caller needs
  }
  auto d = py::array_t<double, py::array::forcecast>::ensure(array);
  if (!d) throw py::error_already_set();
  const auto r = d.unchecked<2>();
  if (origin) {
    origin_ = *origin;
  } else {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (py::ssize_t i = 0; i < r.shape(0); ++i) {
      if (!std::isfinite(r(i, 0)) || !std::isfinite(r(i, 1)) || !std::isfinite(r(i, 2))) continue;
      for (int a = 0; a < 3; ++a) {
        lo[a] = std::min(lo[a], r(i, a));
        hi[a] = std::max(hi[a], r(i, a));
      }
    }
    if (lo[0] <= hi[0] &&
        (needs_local_origin(lo[0], lo[1], lo[2]) || needs_local_origin(hi[0], hi[1], hi[2])))
      origin_ = choose_local_origin(lo, hi);
  }
  owned_.resize(size_);
  double worst = 0;  // how far float32 moves a point: refused beyond what a file write allows
  for (py::ssize_t i = 0; i < r.shape(0); ++i) {
    float local[3];
    for (int a = 0; a < 3; ++a) {
      const double v = r(i, a) - origin_[a];
      // A finite coordinate that float32 cannot hold would become infinite, and so be left out
      // like a NaN, without a word: refused by name instead.
      if (std::isfinite(v) && std::abs(v) > double(std::numeric_limits<float>::max())) {
        std::ostringstream text;
        text << name << " spans too far for float32 coordinates: point " << i << " lies "
             << std::abs(v) << " m from the origin chosen for the cloud, beyond what float32 "
             << "holds (about 3.4e38)";
        throw InvalidArgument(text.str());
      }
      local[a] = float(v);
      if (std::isfinite(v))
        worst = std::max(worst, std::abs(double(local[a]) + origin_[a] - r(i, a)));
    }
    owned_[std::size_t(i)] = {local[0], local[1], local[2]};
  }
  if (worst > kMaxSilentRoundingM)
    throw InvalidArgument(std::string(name) +
                          " spans too far for float32 coordinates around one "
                          "origin: they would move points by up to " +
                          std::to_string(worst) +
                          " m; split the cloud or subtract an origin first");
  data_ = owned_.data();
}

std::vector<Point3f> PointsArg::in_frame(const std::array<double, 3>& origin) const {
  std::vector<Point3f> v(data_, data_ + size_);
  if (origin == origin_) return v;
  const double dx = origin_[0] - origin[0], dy = origin_[1] - origin[1],
               dz = origin_[2] - origin[2];
  for (auto& p : v)
    p = {float(p.x + dx), float(p.y + dy), float(p.z + dz)};
  return v;
}

const PointCloud& PointsArg::cloud() {
  if (cloud_) return *cloud_;
  if (!built_ready_) {
    built_.points.assign(data_, data_ + size_);
    built_.origin = origin_;
    built_.width = std::uint32_t(size_);
    built_.height = 1;
    built_ready_ = true;
  }
  return built_;
}

py::array_t<float> points_array(std::vector<Point3f>&& v) {
  auto* owned = new std::vector<Point3f>(std::move(v));
  py::capsule owner(owned, [](void* p) { delete static_cast<std::vector<Point3f>*>(p); });
  return py::array_t<float>({py::ssize_t(owned->size()), py::ssize_t(3)},
                            reinterpret_cast<const float*>(owned->data()), owner);
}

bool gpu_usable() {
  static const bool usable = query_device().available;
  return usable;
}

double finite_arg(double value, const char* name, bool positive) {
  if (!std::isfinite(value) || (positive && value <= 0))
    throw InvalidArgument(std::string(name) + " must be a " + (positive ? "positive " : "") +
                          "finite number; got " + std::to_string(value));
  return value;
}

float float_arg(double value, const char* name, bool positive) {
  finite_arg(value, name, positive);
  if (std::abs(value) > double(std::numeric_limits<float>::max())) {
    std::ostringstream text;
    text << name << " must be at most about 3.4e38 in size (it is held as a 32-bit float); got "
         << value;
    throw InvalidArgument(text.str());
  }
  return float(value);
}

namespace {

struct Timings {
  std::string method;
  StageTimes stages;
  double total_ms = 0;
  double call_ms = 0;
  bool set = false;
};
thread_local Timings last;

}  // namespace

void record_timings(const std::string& method, const StageTimes& stages, double total_ms,
                    double call_ms) {
  last = {method, stages, total_ms, call_ms, true};
}

py::dict stage_dict(const StageTimes& stages) {
  py::dict d;
  for (const auto& [name, ms] : stages)
    d[py::str(name)] = ms;
  return d;
}

py::dict last_timings() {
  py::dict d;
  if (!last.set) return d;
  d["method"] = last.method;
  d["total_ms"] = last.total_ms;
  d["call_ms"] = last.call_ms;
  d["stages"] = stage_dict(last.stages);
  return d;
}

namespace {

PyObject* error_type = nullptr;
PyObject* io_error_type = nullptr;
PyObject* invalid_argument_type = nullptr;
PyObject* gpu_error_type = nullptr;
PyObject* cancelled_type = nullptr;

PyObject* new_exception(py::module_& m, const char* name, const char* doc, py::tuple bases) {
  const std::string qualified = std::string("cumulus.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (!type) throw py::error_already_set();
  m.attr(name) = py::handle(type);
  return type;
}

}  // namespace

void register_exceptions(py::module_& m) {
  error_type = new_exception(m, "Error", "Every error Cumulus reports.",
                             py::make_tuple(py::handle(PyExc_RuntimeError)));
  const py::handle base(error_type);
  io_error_type = new_exception(m, "IoError", "A file could not be read or written.",
                                py::make_tuple(base, py::handle(PyExc_OSError)));
  invalid_argument_type =
      new_exception(m, "InvalidArgument", "A parameter outside what the algorithm accepts.",
                    py::make_tuple(base, py::handle(PyExc_ValueError)));
  gpu_error_type = new_exception(
      m, "GpuError", "The GPU could not be used (no device, driver error, out of memory).",
      py::make_tuple(base));
  cancelled_type =
      new_exception(m, "Cancelled", "A long run was stopped by its caller.", py::make_tuple(base));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const IoError& e) {
      PyErr_SetString(io_error_type, e.what());
    } catch (const InvalidArgument& e) {
      PyErr_SetString(invalid_argument_type, e.what());
    } catch (const GpuError& e) {
      PyErr_SetString(gpu_error_type, e.what());
    } catch (const Cancelled& e) {
      PyErr_SetString(cancelled_type, e.what());
    } catch (const Error& e) {
      PyErr_SetString(error_type, e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of host memory");
    }
  });
}

}  // namespace cumulus::py_support
