// Clouds to and from PCL's PCLPointCloud2 with every field kept.
#include <pcl/PCLPointCloud2.h>
#include <pcl/console/print.h>
#include <pcl/io/pcd_io.h>
#include <pcl/io/ply_io.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "io/io_detail.h"
#include "io/pcl_cloud2.h"

namespace cumulus::detail {

namespace {

using Field = pcl::PCLPointField;

// One value of type T from unaligned bytes.
template <class T>
double unaligned(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return double(v);
}

double read_value(const std::uint8_t* p, std::uint8_t type) {
  struct Kind {
    std::uint8_t type;
    double (*read)(const std::uint8_t*);
  };
  static constexpr Kind kKinds[] = {
      {Field::INT8, unaligned<std::int8_t>},   {Field::UINT8, unaligned<std::uint8_t>},
      {Field::INT16, unaligned<std::int16_t>}, {Field::UINT16, unaligned<std::uint16_t>},
      {Field::INT32, unaligned<std::int32_t>}, {Field::UINT32, unaligned<std::uint32_t>},
      {Field::INT64, unaligned<std::int64_t>}, {Field::UINT64, unaligned<std::uint64_t>},
      {Field::FLOAT32, unaligned<float>},      {Field::FLOAT64, unaligned<double>}};
  for (const Kind& k : kKinds)
    if (k.type == type) return k.read(p);
  return std::nan("");
}

const Field* find_field(const pcl::PCLPointCloud2& c, std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (const auto& f : c.fields)
      if (f.name == n) return &f;
  return nullptr;
}

}  // namespace

void quiet_pcl() {
  // PCL prints its own parse errors to stderr; ours carry the file name and go to the caller.
  static std::once_flag once;
  std::call_once(once, [] { pcl::console::setVerbosityLevel(pcl::console::L_ALWAYS); });
}

PointCloud from_pcl(const std::string& path, const pcl::PCLPointCloud2& in) {
  const std::size_t n = std::size_t(in.width) * in.height;
  if (in.point_step == 0 && n > 0) throw IoError(path, "the file declares points with no fields");
  if (in.data.size() < n * in.point_step)
    throw IoError(path, "the file declares " + std::to_string(n) + " points but holds data for " +
                            std::to_string(in.point_step ? in.data.size() / in.point_step : 0));
  for (const auto& f : in.fields)
    if (std::size_t(f.offset) + std::size_t(pcl::getFieldSize(f.datatype)) * f.count >
        in.point_step)
      throw IoError(path, "field '" + f.name + "' lies outside the point record");
  const Field* fx = find_field(in, {"x"});
  const Field* fy = find_field(in, {"y"});
  const Field* fz = find_field(in, {"z"});
  if (!fx || !fy || !fz) throw IoError(path, "the file has no x, y and z fields");
  auto at = [&](std::size_t i, const Field* f, std::size_t k = 0) {
    return read_value(&in.data[i * in.point_step + f->offset + k * pcl::getFieldSize(f->datatype)],
                      f->datatype);
  };
  PointCloud cloud;
  std::vector<double> xyz(n * 3);
  for (std::size_t i = 0; i < n; ++i) {
    xyz[3 * i] = at(i, fx);
    xyz[3 * i + 1] = at(i, fy);
    xyz[3 * i + 2] = at(i, fz);
  }
  set_positions_from_world(cloud, xyz);
  std::vector<const Field*> used{fx, fy, fz};
  if (const Field* f = find_field(in, {"intensity", "reflectance", "i", "scalar_intensity"})) {
    used.push_back(f);
    cloud.intensity.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      cloud.intensity[i] = float(at(i, f));
  }
  if (const Field* f = find_field(in, {"rgb", "rgba"}); f && pcl::getFieldSize(f->datatype) == 4) {
    used.push_back(f);
    cloud.rgb.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t packed;
      std::memcpy(&packed, &in.data[i * in.point_step + f->offset], 4);
      cloud.rgb[i] = {std::uint8_t(packed >> 16), std::uint8_t(packed >> 8), std::uint8_t(packed)};
    }
  } else if (const Field* r = find_field(in, {"red", "r"}), *g = find_field(in, {"green", "g"}),
             *b = find_field(in, {"blue", "b"});
             r && g && b) {
    used.insert(used.end(), {r, g, b});
    cloud.rgb.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      cloud.rgb[i] = {std::uint8_t(at(i, r)), std::uint8_t(at(i, g)), std::uint8_t(at(i, b))};
  }
  const Field* nx = find_field(in, {"normal_x", "nx"});
  const Field* ny = find_field(in, {"normal_y", "ny"});
  const Field* nz = find_field(in, {"normal_z", "nz"});
  if (nx && ny && nz) {
    used.insert(used.end(), {nx, ny, nz});
    cloud.normals.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      cloud.normals[i] = {float(at(i, nx)), float(at(i, ny)), float(at(i, nz))};
  }
  if (const Field* f = find_field(in, {"label"})) {
    used.push_back(f);
    cloud.labels.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double v = at(i, f);
      // PCL writes "no label" as UINT32 max; keep it as our -1.
      cloud.labels[i] = (f->datatype == Field::UINT32 && v >= 2147483648.0) ? -1 : std::int32_t(v);
    }
  }
  for (const auto& f : in.fields) {
    if (std::find(used.begin(), used.end(), &f) != used.end()) continue;
    if (f.name.empty() || f.name == "_" || f.count == 0) continue;  // padding
    ExtraField e{f.name, int(f.count), std::vector<double>(n * f.count)};
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < f.count; ++k)
        e.values[i * f.count + k] = at(i, &f, k);
    cloud.extra.push_back(std::move(e));
  }
  cloud.width = in.width;
  cloud.height = in.height;
  finish_cloud(path, cloud);
  return cloud;
}

pcl::PCLPointCloud2 to_pcl(const PointCloud& cloud) {
  pcl::PCLPointCloud2 out;
  const bool world_doubles = has_origin(cloud);
  std::uint32_t offset = 0;
  auto add = [&](const std::string& name, std::uint8_t type, std::uint32_t count = 1) {
    Field f;
    f.name = name;
    f.offset = offset;
    f.datatype = type;
    f.count = count;
    out.fields.push_back(f);
    offset += std::uint32_t(pcl::getFieldSize(type)) * count;
    return f.offset;
  };
  const std::uint8_t pos_type = world_doubles ? Field::FLOAT64 : Field::FLOAT32;
  const auto ox = add("x", pos_type), oy = add("y", pos_type), oz = add("z", pos_type);
  const auto oi = cloud.has_intensity() ? add("intensity", Field::FLOAT32) : 0;
  const auto orgb = cloud.has_rgb() ? add("rgb", Field::FLOAT32) : 0;
  std::uint32_t on = 0;
  if (cloud.has_normals()) {
    on = add("normal_x", Field::FLOAT32);
    add("normal_y", Field::FLOAT32);
    add("normal_z", Field::FLOAT32);
  }
  const auto ol = cloud.has_labels() ? add("label", Field::INT32) : 0;
  // A field goes out as float32 when every value survives it (as they all do when it came from a
  // float32 field), else as float64.
  std::vector<std::uint32_t> oe;
  std::vector<bool> wide;
  for (const auto& f : cloud.extra) {
    wide.push_back(std::any_of(f.values.begin(), f.values.end(),
                               [](double v) { return !std::isnan(v) && double(float(v)) != v; }));
    oe.push_back(
        add(f.name, wide.back() ? Field::FLOAT64 : Field::FLOAT32, std::uint32_t(f.count)));
  }
  out.point_step = offset;
  out.width = cloud.organized() ? cloud.width : std::uint32_t(cloud.size());
  out.height = cloud.organized() ? cloud.height : 1;
  out.row_step = out.point_step * out.width;
  out.is_dense = cloud.count_non_finite() == 0;
  out.data.resize(std::size_t(out.point_step) * cloud.size());
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    std::uint8_t* p = &out.data[i * out.point_step];
    const auto& q = cloud.points[i];
    if (world_doubles) {
      const double w[3] = {cloud.origin[0] + q.x, cloud.origin[1] + q.y, cloud.origin[2] + q.z};
      std::memcpy(p + ox, &w[0], 8);
      std::memcpy(p + oy, &w[1], 8);
      std::memcpy(p + oz, &w[2], 8);
    } else {
      std::memcpy(p + ox, &q.x, 4);
      std::memcpy(p + oy, &q.y, 4);
      std::memcpy(p + oz, &q.z, 4);
    }
    if (cloud.has_intensity()) std::memcpy(p + oi, &cloud.intensity[i], 4);
    if (cloud.has_rgb()) {
      const auto c = cloud.rgb[i];
      const std::uint32_t packed =
          0xff000000u | (std::uint32_t(c.r) << 16) | (std::uint32_t(c.g) << 8) | c.b;
      std::memcpy(p + orgb, &packed, 4);
    }
    if (cloud.has_normals()) std::memcpy(p + on, &cloud.normals[i], 12);
    if (cloud.has_labels()) std::memcpy(p + ol, &cloud.labels[i], 4);
    for (std::size_t e = 0; e < cloud.extra.size(); ++e) {
      const auto& f = cloud.extra[e];
      const double* v = &f.values[i * std::size_t(f.count)];
      for (std::size_t k = 0; k < std::size_t(f.count); ++k) {
        if (wide[e]) {
          std::memcpy(p + oe[e] + 8 * k, &v[k], 8);
        } else {
          const float narrow = float(v[k]);
          std::memcpy(p + oe[e] + 4 * k, &narrow, 4);
        }
      }
    }
  }
  return out;
}

void write_through_scratch(const std::string& path, const std::string& format, std::size_t at_least,
                           const std::function<int(const std::string& scratch)>& write) {
  struct Scratch {
    int fd = ::memfd_create("cumulus-pcl-writer", MFD_CLOEXEC);
    ~Scratch() {
      if (fd >= 0) ::close(fd);
    }
  } scratch;
  if (scratch.fd < 0)
    throw IoError(path, std::string("not written: no memory file for the ") + format +
                            " writer: " + std::strerror(errno));
  const std::string unchanged = "; the file that was there, if any, is unchanged";
  rlimit limit{};
  const bool limited = ::getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY;
  const auto beyond_limit = [&](std::size_t bytes) { return limited && bytes >= limit.rlim_cur; };
  if (beyond_limit(at_least + 1))
    throw IoError(path, "not written: " + std::string(std::strerror(EFBIG)) + " (" +
                            path_error(path, EFBIG) + ")" + unchanged);
  int result = -1;
  std::string why;
  errno = 0;
  try {
    result = write("/proc/self/fd/" + std::to_string(scratch.fd));
  } catch (const std::exception& e) {
    why = std::string(": ") + e.what();
  }
  // PCL's messages leave out the system's reason; errno, right after, is the best guess of it.
  if (errno == ENOSPC || errno == EFBIG || errno == ENOMEM || errno == EDQUOT || errno == EIO)
    why += std::string(" (") + std::strerror(errno) + ")";
  struct stat st {};
  if (::fstat(scratch.fd, &st) != 0) st.st_size = 0;
  const auto bytes = std::size_t(std::max<off_t>(st.st_size, 0));
  if (beyond_limit(bytes))
    throw IoError(path, "not written: " + std::string(std::strerror(EFBIG)) + " (" +
                            path_error(path, EFBIG) + ")" + unchanged);
  if (result < 0 || !why.empty() || bytes == 0 || bytes < at_least)
    throw IoError(path, "not written: PCL's " + format + " writer failed" + why + unchanged);
  AtomicFile out(path);
  std::vector<char> chunk(std::size_t(1) << 20);
  for (off_t at = 0; at < st.st_size;) {
    const ssize_t n = ::pread(scratch.fd, chunk.data(), chunk.size(), at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw IoError(path, std::string("not written: reading PCL's output back failed: ") +
                              std::strerror(n < 0 ? errno : EIO));
    out.write(chunk.data(), std::size_t(n));
    at += n;
  }
  out.commit();
}

}  // namespace cumulus::detail
