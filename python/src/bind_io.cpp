// cumulus.Cloud, cumulus.DepthImage, read() and write().
#include <pybind11/stl.h>

#include <cstring>

#include "bindings.h"
#include "convert.h"
#include "io/io.h"

namespace cumulus::py_support {

namespace {

// An optional per-point field from an array: `count` values per point of type T.
template <class T>
std::vector<T> field_arg(py::handle object, const char* name, std::size_t points, int count) {
  auto a = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(object);
  if (!a) throw py::type_error(std::string(name) + " must be a numeric numpy array");
  if (std::size_t(a.size()) != points * std::size_t(count) || a.shape(0) != py::ssize_t(points))
    throw py::value_error(std::string(name) + " must have one " +
                          (count == 1 ? "value" : std::to_string(count) + " values") +
                          " per point (" + std::to_string(points) + " points)");
  return {a.data(), a.data() + a.size()};
}

std::shared_ptr<PointCloud> make_cloud(py::handle points, const py::object& intensity,
                                       const py::object& rgb, const py::object& normals,
                                       const py::object& labels) {
  PointsArg p(points, "points", true);
  auto cloud = std::make_shared<PointCloud>(p.cloud());
  const std::size_t n = cloud->size();
  if (!intensity.is_none()) cloud->intensity = field_arg<float>(intensity, "intensity", n, 1);
  if (!rgb.is_none()) {
    const auto v = field_arg<std::uint8_t>(rgb, "rgb", n, 3);
    cloud->rgb.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      cloud->rgb[i] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
  }
  if (!normals.is_none()) {
    const auto v = field_arg<float>(normals, "normals", n, 3);
    cloud->normals.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      cloud->normals[i] = {v[3 * i], v[3 * i + 1], v[3 * i + 2]};
  }
  if (!labels.is_none()) cloud->labels = field_arg<std::int32_t>(labels, "labels", n, 1);
  return cloud;
}

py::array_t<double> world_points(const PointCloud& c) {
  std::vector<double> v(3 * c.size());
  for (std::size_t i = 0; i < c.size(); ++i) {
    v[3 * i] = c.origin[0] + double(c.points[i].x);
    v[3 * i + 1] = c.origin[1] + double(c.points[i].y);
    v[3 * i + 2] = c.origin[2] + double(c.points[i].z);
  }
  return to_array(std::move(v), {py::ssize_t(c.size()), 3});
}

py::dict fields(const py::object& self) {
  const auto& c = self.cast<const PointCloud&>();
  const auto n = py::ssize_t(c.size());
  py::dict d;
  if (c.has_intensity()) d["intensity"] = view(c.intensity.data(), {n}, self);
  if (c.has_rgb()) d["rgb"] = view(&c.rgb.data()->r, {n, 3}, self);
  if (c.has_normals()) d["normals"] = view(&c.normals.data()->x, {n, 3}, self);
  if (c.has_labels()) d["labels"] = view(c.labels.data(), {n}, self);
  for (const auto& e : c.extra) {
    if (e.count == 1)
      d[py::str(e.name)] = view(e.values.data(), {n}, self);
    else
      d[py::str(e.name)] = view(e.values.data(), {n, py::ssize_t(e.count)}, self);
  }
  return d;
}

double depth_scale_arg(const py::object& scale) {
  if (py::isinstance<py::str>(scale)) return parse_depth_scale(scale.cast<std::string>());
  return finite_arg(scale.cast<double>(), "depth_scale", true);
}

DepthImage depth_arg(py::handle object) {
  if (py::isinstance<DepthImage>(object)) return object.cast<DepthImage>();
  auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(object);
  if (!a || a.ndim() != 2)
    throw py::type_error(
        "a depth image must be a cumulus.DepthImage or a 2-D numpy array of "
        "depths in metres (rows, columns)");
  DepthImage d;
  d.height = std::uint32_t(a.shape(0));
  d.width = std::uint32_t(a.shape(1));
  d.depth.assign(a.data(), a.data() + a.size());
  return d;
}

// Pickling (Dask moves clouds between processes): every member as bytes or numbers.
template <class T>
py::bytes raw(const std::vector<T>& v) {
  return {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)};
}
template <class T>
std::vector<T> unraw(const py::handle& b) {
  const std::string s = b.cast<std::string>();
  std::vector<T> v(s.size() / sizeof(T));
  std::memcpy(v.data(), s.data(), v.size() * sizeof(T));
  return v;
}

py::tuple cloud_state(const PointCloud& c) {
  py::list extra;
  for (const auto& e : c.extra)
    extra.append(py::make_tuple(e.name, e.count, raw(e.values)));
  py::list metadata;
  for (const auto& m : c.metadata)
    metadata.append(py::make_tuple(m.key, py::bytes(m.value)));
  return py::make_tuple(raw(c.points), py::make_tuple(c.origin[0], c.origin[1], c.origin[2]),
                        raw(c.intensity), raw(c.rgb), raw(c.normals), raw(c.labels), extra, c.width,
                        c.height, metadata);
}

std::shared_ptr<PointCloud> cloud_from_state(const py::tuple& t) {
  if (t.size() != 10) throw py::value_error("not a pickled cumulus.Cloud");
  auto c = std::make_shared<PointCloud>();
  c->points = unraw<Point3f>(t[0]);
  c->origin = t[1].cast<std::array<double, 3>>();
  c->intensity = unraw<float>(t[2]);
  c->rgb = unraw<Rgb8>(t[3]);
  c->normals = unraw<Point3f>(t[4]);
  c->labels = unraw<std::int32_t>(t[5]);
  for (const auto& e : t[6].cast<py::list>()) {
    const auto f = e.cast<py::tuple>();
    c->extra.push_back({f[0].cast<std::string>(), f[1].cast<int>(), unraw<double>(f[2])});
  }
  c->width = t[7].cast<std::uint32_t>();
  c->height = t[8].cast<std::uint32_t>();
  for (const auto& e : t[9].cast<py::list>()) {
    const auto m = e.cast<py::tuple>();
    c->metadata.push_back({m[0].cast<std::string>(), m[1].cast<std::string>()});
  }
  c->validate();
  return c;
}

}  // namespace

DepthImage depth_image_arg(py::handle object) {
  return depth_arg(object);
}

std::shared_ptr<PointCloud> cloud_result(PointCloud&& cloud) {
  return std::make_shared<PointCloud>(std::move(cloud));
}

void bind_io(py::module_& m) {
  py::class_<PointCloud, std::shared_ptr<PointCloud>>(
      m, "Cloud",
      "A point cloud: float32 points relative to a float64 local origin, with its fields.\n\n"
      "Cloud(points, intensity=None, rgb=None, normals=None, labels=None): points as an (N, 3)\n"
      "float64 array of world coordinates (a local origin is chosen when they are large) or\n"
      "float32 local coordinates; every function taking points takes a Cloud too.")
      .def(py::init(&make_cloud), py::arg("points"), py::arg("intensity") = py::none(),
           py::arg("rgb") = py::none(), py::arg("normals") = py::none(),
           py::arg("labels") = py::none())
      .def_property_readonly("points", &world_points,
                             "World coordinates, float64 (N, 3): the local points plus the origin.")
      .def_property_readonly(
          "local_points",
          [](const py::object& self) {
            const auto& c = self.cast<const PointCloud&>();
            return view(&c.points.data()->x, {py::ssize_t(c.size()), 3}, self);
          },
          "The float32 (N, 3) points relative to the origin, as the algorithms see them "
          "(a read-only view).")
      .def_property_readonly(
          "origin",
          [](const PointCloud& c) { return py::make_tuple(c.origin[0], c.origin[1], c.origin[2]); },
          "The local origin in world coordinates.")
      .def_property_readonly("fields", &fields,
                             "Every field but the points, name -> read-only array (intensity, "
                             "rgb (N, 3) uint8, normals (N, 3), labels, and the file's others "
                             "as float64, e.g. LAS classification or gps_time).")
      .def_property_readonly(
          "metadata",
          [](const PointCloud& c) {
            py::dict d;
            for (const auto& m : c.metadata)
              d[py::str(m.key)] = py::bytes(m.value);
            return d;
          },
          "What the file said beyond its points, key -> bytes (LAS: las.scale, las.offset, "
          "las.version, las.point_format, las.vlr.N with each variable-length record); written "
          "back when the cloud is saved to the same format.")
      .def_readonly("width", &PointCloud::width)
      .def_readonly("height", &PointCloud::height, "Rows of an organized cloud; 1 otherwise.")
      .def(py::pickle(&cloud_state, &cloud_from_state))
      .def("__len__", &PointCloud::size)
      .def("__repr__", [](const PointCloud& c) {
        std::string f;
        for (const auto& n : c.field_names())
          f += (f.empty() ? "" : " ") + n;
        return "<cumulus.Cloud " + std::to_string(c.size()) + " points (" + f + ")>";
      });

  py::class_<DepthImage>(m, "DepthImage",
                         "A depth image in metres; invalid pixels are 0 or NaN.\n\n"
                         "DepthImage(depth): from a 2-D array of metres (rows, columns).")
      .def(py::init([](py::handle a) { return depth_arg(a); }), py::arg("depth"))
      .def_property_readonly(
          "depth",
          [](const py::object& self) {
            const auto& d = self.cast<const DepthImage&>();
            return view(d.depth.data(), {py::ssize_t(d.height), py::ssize_t(d.width)}, self);
          },
          "Depths in metres, float32 (height, width), read-only.")
      .def_readonly("width", &DepthImage::width)
      .def_readonly("height", &DepthImage::height)
      .def_readonly("source_scale", &DepthImage::source_scale,
                    "Metres per raw unit of the file it came from.")
      .def("__repr__", [](const DepthImage& d) {
        return "<cumulus.DepthImage " + std::to_string(d.width) + " x " + std::to_string(d.height) +
               ", " + std::to_string(d.count_valid()) + " valid pixels>";
      });

  m.def(
      "read",
      [](const std::string& path, const py::object& depth_scale) -> py::object {
        if (is_depth_image_path(path)) {
          if (depth_scale.is_none())
            throw InvalidArgument(
                printable_path(path) +
                ": a depth image needs depth_scale: metres per unit (0.001) or a preset "
                "(kitti, tum, mm, velodyne)");
          const double scale = depth_scale_arg(depth_scale);
          DepthImage image;
          {
            py::gil_scoped_release release;
            image = load_depth_image(path, scale);
          }
          return py::cast(std::move(image));
        }
        PointCloud cloud;
        {
          py::gil_scoped_release release;
          cloud = load_cloud(path);
        }
        return py::cast(cloud_result(std::move(cloud)));
      },
      py::arg("path"), py::arg("depth_scale") = py::none(),
      "Reads a cloud (.pcd, .ply, .bin, .xyz/.txt/.csv) as a Cloud, or a 16-bit depth image\n"
      "(.png, .tif) as a DepthImage (depth_scale: metres per unit or a preset name).\n"
      "Raises IoError naming the file and the problem.");

  m.def(
      "write",
      [](const std::string& path, py::handle data, const std::string& encoding,
         bool allow_precision_loss, const py::object& depth_scale, const std::string& las_labels) {
        if (is_depth_image_path(path)) {
          if (depth_scale.is_none())
            throw InvalidArgument("writing a depth image needs depth_scale (metres per unit)");
          const DepthImage image = depth_arg(data);
          const double scale = depth_scale_arg(depth_scale);
          py::gil_scoped_release release;
          save_depth_png(path, image, scale);
          return;
        }
        SaveOptions options;
        if (encoding == "ascii") {
          options.pcd = PcdEncoding::Ascii;
          options.ply_binary = false;
        } else if (encoding == "binary-compressed") {
          options.pcd = PcdEncoding::BinaryCompressed;
        } else if (encoding != "binary") {
          throw InvalidArgument("unknown encoding '" + encoding +
                                "'; valid: binary, ascii, binary-compressed");
        }
        options.allow_precision_loss = allow_precision_loss;
        if (las_labels == "classification")
          options.las_labels = LasLabels::Classification;
        else if (las_labels == "user-data")
          options.las_labels = LasLabels::UserData;
        else if (las_labels != "extra-bytes")
          throw InvalidArgument("unknown las_labels '" + las_labels +
                                "'; valid: extra-bytes, classification, user-data");
        PointsArg points(data, "data", true);
        const PointCloud& cloud = points.cloud();
        py::gil_scoped_release release;
        save_cloud(path, cloud, options);
      },
      py::arg("path"), py::arg("data"), py::arg("encoding") = "binary",
      py::arg("allow_precision_loss") = false, py::arg("depth_scale") = py::none(),
      py::arg("las_labels") = "extra-bytes",
      "Writes a Cloud or an (N, 3) array by extension (.pcd, .ply, .bin, .xyz/.txt/.csv, .las),\n"
      "or a DepthImage or 2-D array as a 16-bit PNG (depth_scale: metres per unit). The file is\n"
      "replaced only once the new one is complete. A Cloud read from LAS goes back to LAS with\n"
      "its version, point format, scale, offset and records; las_labels says where labels go\n"
      "(extra-bytes: an int32 field; classification: class 64 + k; user-data: k + 1). Raises\n"
      "IoError (PrecisionLossError's message when float32 or LAS's grid would move points by\n"
      "more than 1 mm, unless allow_precision_loss).");
}

}  // namespace cumulus::py_support
