// What cumulus.dask needs of the backend: square tiles with halos over a cloud, and the exact
// merge of the tiles' clusterings (ClusterTileMerge).
#include <pybind11/stl.h>

#include <cmath>
#include <map>

#include "bindings.h"
#include "cluster/cluster.h"
#include "convert.h"

namespace cumulus::py_support {

namespace {

// Tiles of `size` metres in x and y over the finite points, each with the points within `halo`
// of it (so a point may be in up to four); empty tiles left out. Returns (ix, iy, members)
// per tile, members ascending.
py::list plan_tiles(py::handle points, double size, double halo) {
  PointsArg p(points, "points");
  finite_arg(size, "tile_size", true);
  finite_arg(halo, "halo");
  if (halo < 0 || halo >= size / 2)
    throw InvalidArgument("the halo (" + std::to_string(halo) +
                          " m) must be under half the tile size (" + std::to_string(size) + " m)");
  std::map<std::pair<long, long>, std::vector<std::uint32_t>> tiles;
  {
    py::gil_scoped_release release;
    const Point3f* pts = p.data();
    double x0 = INFINITY, y0 = INFINITY;
    for (std::size_t i = 0; i < p.size(); ++i)
      if (is_finite(pts[i])) {
        x0 = std::min(x0, double(pts[i].x));
        y0 = std::min(y0, double(pts[i].y));
      }
    for (std::size_t i = 0; i < p.size(); ++i) {
      if (!is_finite(pts[i])) continue;
      const double x = double(pts[i].x) - x0, y = double(pts[i].y) - y0;
      const long ix = long(std::floor(x / size)), iy = long(std::floor(y / size));
      // The core tile, and each neighbour whose box widened by the halo holds the point.
      for (long dx = -1; dx <= 1; ++dx)
        for (long dy = -1; dy <= 1; ++dy) {
          const long tx = ix + dx, ty = iy + dy;
          if (tx < 0 || ty < 0) continue;
          if (x < double(tx) * size - halo || x >= double(tx + 1) * size + halo) continue;
          if (y < double(ty) * size - halo || y >= double(ty + 1) * size + halo) continue;
          tiles[{tx, ty}].push_back(std::uint32_t(i));
        }
    }
  }
  py::list out;
  for (auto& [key, members] : tiles)
    out.append(py::make_tuple(key.first, key.second, to_array(std::move(members))));
  return out;
}

}  // namespace

void bind_tiles(py::module_& m) {
  m.def("_plan_tiles", &plan_tiles, py::arg("points"), py::arg("tile_size"), py::arg("halo"));
  py::class_<ClusterTileMerge>(m, "_ClusterTileMerge")
      .def(py::init<std::size_t>(), py::arg("points"))
      .def(
          "add",
          [](ClusterTileMerge& self, py::array_t<std::uint32_t, py::array::c_style> members,
             py::array_t<std::int32_t, py::array::c_style> labels) {
            if (members.ndim() != 1 || labels.ndim() != 1 || members.size() != labels.size())
              throw py::value_error("a tile's members and labels must be 1-D, of one length");
            py::gil_scoped_release release;
            self.add(members.data(), labels.data(), std::size_t(members.size()));
          },
          py::arg("members"), py::arg("labels"))
      .def(
          "finish",
          [](ClusterTileMerge& self, double tolerance, std::size_t min_size,
             std::optional<std::size_t> max_size) {
            ClusterParams params;
            params.tolerance = float_arg(tolerance, "tolerance", true);
            params.min_size = min_size;
            if (max_size) params.max_size = *max_size;
            ClusterResult r;
            {
              py::gil_scoped_release release;
              r = self.finish(params);
            }
            return to_array(std::move(r.labels));
          },
          py::arg("tolerance"), py::arg("min_size"), py::arg("max_size"));
}

}  // namespace cumulus::py_support
