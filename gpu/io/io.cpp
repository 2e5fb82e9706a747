// Format dispatch and the loaders that need no third-party parser (KITTI bin, XYZ text).
#include "io/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/io_detail.h"

namespace cumulus {

namespace fs = std::filesystem;

static std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

CloudFormat cloud_format_for(const std::string& path) {
  const std::string ext = lower_extension(path);
  if (ext == ".pcd") return CloudFormat::Pcd;
  if (ext == ".ply") return CloudFormat::Ply;
  if (ext == ".bin") return CloudFormat::KittiBin;
  if (ext == ".xyz" || ext == ".txt" || ext == ".csv" || ext == ".pts") return CloudFormat::Xyz;
  if (ext == ".las") return CloudFormat::Las;
  if (ext == ".laz") return CloudFormat::Laz;
  if (ext == ".e57") return CloudFormat::E57;
  throw IoError(path,
                "unsupported file type '" + ext +
                    "' (clouds: .pcd .ply .bin .xyz .txt .csv .las; depth images: .png .tif)");
}

[[noreturn]] static void unreadable(const std::string& path, CloudFormat format) {
  if (format == CloudFormat::Laz)
    throw IoError(path,
                  "LAZ (compressed LAS) cannot be read or written: this build has no LASzip. "
                  "Convert it to plain LAS first, e.g. 'laszip -i in.laz -o out.las' or "
                  "'pdal translate in.laz out.las'");
  throw IoError(path,
                "E57 cannot be read or written: this build has no libE57Format. Convert it first, "
                "e.g. 'pdal translate in.e57 out.las' or with CloudCompare (save as LAS or PLY)");
}

bool is_depth_image_path(const std::string& path) {
  const std::string ext = lower_extension(path);
  return ext == ".png" || ext == ".tif" || ext == ".tiff";
}

bool is_cloud_path(const std::string& path) {
  try {
    cloud_format_for(path);
    return true;
  } catch (const IoError&) {
    return false;
  }
}

namespace detail {

std::uintmax_t require_readable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError(path, path_error(path, errno));
  if (S_ISDIR(st.st_mode)) throw IoError(path, "is a directory, not a file");
  if (!S_ISREG(st.st_mode)) throw IoError(path, "is not a regular file (a device, pipe or socket)");
  const auto size = std::uintmax_t(st.st_size);
  if (size == 0) throw IoError(path, "the file is empty");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path, "cannot open for reading: " + path_error(path, errno));
  ::close(fd);
  return size;
}

void finish_cloud(const std::string& path, PointCloud& cloud) {
  if (cloud.height <= 1) {
    cloud.width = std::uint32_t(cloud.points.size());
    cloud.height = 1;
  }
  try {
    cloud.validate();
  } catch (const InvalidArgument& e) {
    throw IoError(path, e.what());
  }
}

void set_positions_from_world(PointCloud& cloud, const std::vector<double>& xyz) {
  const std::size_t n = xyz.size() / 3;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    const double* p = &xyz[3 * i];
    if (!(std::isfinite(p[0]) && std::isfinite(p[1]) && std::isfinite(p[2]))) continue;
    for (int a = 0; a < 3; ++a) {
      lo[a] = any ? std::min(lo[a], p[a]) : p[a];
      hi[a] = any ? std::max(hi[a], p[a]) : p[a];
    }
    any = true;
  }
  cloud.origin = any ? choose_local_origin(lo, hi) : std::array<double, 3>{0, 0, 0};
  cloud.points.resize(n);
  for (std::size_t i = 0; i < n; ++i)
    cloud.points[i] = {float(xyz[3 * i] - cloud.origin[0]), float(xyz[3 * i + 1] - cloud.origin[1]),
                       float(xyz[3 * i + 2] - cloud.origin[2])};
}

std::vector<double> world_positions(const PointCloud& cloud) {
  std::vector<double> xyz(cloud.size() * 3);
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    xyz[3 * i] = cloud.origin[0] + double(cloud.points[i].x);
    xyz[3 * i + 1] = cloud.origin[1] + double(cloud.points[i].y);
    xyz[3 * i + 2] = cloud.origin[2] + double(cloud.points[i].z);
  }
  return xyz;
}

bool has_origin(const PointCloud& cloud) {
  return cloud.origin[0] != 0 || cloud.origin[1] != 0 || cloud.origin[2] != 0;
}

}  // namespace detail

using namespace detail;

PointCloud load_cloud(const std::string& path) {
  switch (cloud_format_for(path)) {
    case CloudFormat::Pcd:
      return load_pcd(path);
    case CloudFormat::Ply:
      return load_ply(path);
    case CloudFormat::KittiBin:
      return load_kitti_bin(path);
    case CloudFormat::Xyz:
      return load_xyz(path);
    case CloudFormat::Las:
      return load_las(path);
    case CloudFormat::Laz:
    case CloudFormat::E57:
      unreadable(path, cloud_format_for(path));
  }
  throw IoError(path, "unsupported format");
}

void save_cloud(const std::string& path, const PointCloud& cloud, const SaveOptions& options) {
  cloud.validate();
  if (const auto f = cloud_format_for(path); f == CloudFormat::Laz || f == CloudFormat::E57)
    unreadable(path, f);
  if (!options.allow_precision_loss) {
    const double moved = save_loss(path, cloud).max_rounding_m;
    if (moved > kMaxSilentRoundingM) throw PrecisionLossError(path, moved);
  }
  switch (cloud_format_for(path)) {
    case CloudFormat::Pcd:
      return save_pcd(path, cloud, options.pcd);
    case CloudFormat::Ply:
      return save_ply(path, cloud, options.ply_binary);
    case CloudFormat::KittiBin:
      return save_kitti_bin(path, cloud);
    case CloudFormat::Xyz:
      return save_xyz(path, cloud);
    case CloudFormat::Las:
      return save_las(path, cloud, options.las_labels);
    case CloudFormat::Laz:
    case CloudFormat::E57:
      unreadable(path, cloud_format_for(path));
  }
}

// ---- KITTI Velodyne .bin: float32 x, y, z, reflectance per point, no header -----------------

PointCloud load_kitti_bin(const std::string& path) {
  const auto size = require_readable_file(path);
  if (size % 16 != 0)
    throw IoError(path, "size " + std::to_string(size) +
                            " bytes is not a multiple of 16 (KITTI .bin holds float32 x, y, z, "
                            "reflectance per point); the file is truncated or not a KITTI scan");
  std::ifstream in(path, std::ios::binary);
  const std::size_t n = size / 16;
  std::vector<float> raw(n * 4);
  if (!in.read(reinterpret_cast<char*>(raw.data()), std::streamsize(size)))
    throw IoError(path, "read failed after " + std::to_string(in.gcount()) + " bytes");
  PointCloud cloud;
  std::vector<double> xyz(n * 3);
  cloud.intensity.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    xyz[3 * i] = raw[4 * i];
    xyz[3 * i + 1] = raw[4 * i + 1];
    xyz[3 * i + 2] = raw[4 * i + 2];
    cloud.intensity[i] = raw[4 * i + 3];
  }
  set_positions_from_world(cloud, xyz);
  finish_cloud(path, cloud);
  return cloud;
}

void save_kitti_bin(const std::string& path, const PointCloud& cloud) {
  AtomicFile out(path);
  std::vector<float> raw(cloud.size() * 4);
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    raw[4 * i] = float(cloud.origin[0] + cloud.points[i].x);
    raw[4 * i + 1] = float(cloud.origin[1] + cloud.points[i].y);
    raw[4 * i + 2] = float(cloud.origin[2] + cloud.points[i].z);
    raw[4 * i + 3] = cloud.has_intensity() ? cloud.intensity[i] : 0.0f;
  }
  out.write(raw.data(), raw.size() * sizeof(float));
  out.commit();
}

// ---- XYZ / TXT / CSV ------------------------------------------------------------------------
// Columns are separated by white space or commas. An optional first line names the columns
// (x y z intensity r g b nx ny nz label ...); without it: 3 = xyz, 4 = + intensity,
// 6 = + rgb (when all are 0..255 integers) or + normals, 7 = + intensity + rgb.

namespace {

std::vector<std::string_view> split_columns(std::string_view line) {
  std::vector<std::string_view> cols;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == ',' ||
                               line[i] == ';' || line[i] == '\r'))
      ++i;
    const std::size_t start = i;
    while (i < line.size() && !(line[i] == ' ' || line[i] == '\t' || line[i] == ',' ||
                                line[i] == ';' || line[i] == '\r'))
      ++i;
    if (i > start) cols.push_back(line.substr(start, i - start));
  }
  return cols;
}

bool parse_double(std::string_view s, double& v) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc() && p == s.data() + s.size()) return true;
  // from_chars rejects "nan"/"inf" spellings some tools write; accept them explicitly.
  std::string low(s);
  std::transform(low.begin(), low.end(), low.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (low == "nan" || low == "-nan") return v = std::nan(""), true;
  if (low == "inf" || low == "+inf") return v = INFINITY, true;
  if (low == "-inf") return v = -INFINITY, true;
  return false;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

PointCloud load_xyz(const std::string& path) {
  require_readable_file(path);
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> names;
  std::vector<double> values;  // row-major, ncols per row
  std::size_t ncols = 0, line_no = 0, rows = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find('\0') != std::string::npos)
      throw IoError(path,
                    "line " + std::to_string(line_no) + " holds binary data; not a text cloud");
    const auto hash = line.find('#');
    std::string_view body(line.data(), hash == std::string::npos ? line.size() : hash);
    const auto cols = split_columns(body);
    if (cols.empty()) continue;
    double v = 0;
    if (rows == 0 && names.empty() && !parse_double(cols[0], v)) {
      for (auto c : cols)
        names.push_back(lower(c));
      ncols = names.size();
      if (ncols < 3) throw IoError(path, "header line names fewer than 3 columns");
      continue;
    }
    if (ncols == 0) ncols = cols.size();
    if (cols.size() < 3)
      throw IoError(path, "line " + std::to_string(line_no) +
                              ": expected at least 3 numbers (x y z), found " +
                              std::to_string(cols.size()));
    if (cols.size() != ncols)
      throw IoError(path, "line " + std::to_string(line_no) + ": " + std::to_string(cols.size()) +
                              " columns where earlier lines have " + std::to_string(ncols));
    for (auto c : cols) {
      if (!parse_double(c, v))
        throw IoError(path, "line " + std::to_string(line_no) + ": '" +
                                std::string(c.substr(0, 40)) + "' is not a number");
      values.push_back(v);
    }
    ++rows;
  }
  if (rows == 0) throw IoError(path, "no points: the file holds no line of numbers");
  if (names.empty()) {
    names = {"x", "y", "z"};
    if (ncols == 4) names.push_back("intensity");
    bool rgb_like = ncols == 6 || ncols == 7;
    for (std::size_t r = 0; rgb_like && r < rows; ++r)
      for (std::size_t c = ncols - 3; c < ncols; ++c) {
        const double x = values[r * ncols + c];
        if (!(x >= 0 && x <= 255 && x == std::floor(x))) rgb_like = false;
      }
    if (ncols == 6) {
      if (rgb_like)
        names.insert(names.end(), {"r", "g", "b"});
      else
        names.insert(names.end(), {"nx", "ny", "nz"});
    } else if (ncols == 7 && rgb_like) {
      names.insert(names.end(), {"intensity", "r", "g", "b"});
    }
    for (std::size_t c = names.size(); c < ncols; ++c)
      names.push_back(std::string("c").append(std::to_string(c)));
  }
  auto col = [&](std::initializer_list<const char*> aliases) -> int {
    for (std::size_t c = 0; c < names.size(); ++c)
      for (const char* a : aliases)
        if (names[c] == a) return int(c);
    return -1;
  };
  const int cx = col({"x", "//x"}), cy = col({"y"}), cz = col({"z"});
  if (cx < 0 || cy < 0 || cz < 0)
    throw IoError(path, "header line does not name x, y and z columns");
  const int ci = col({"intensity", "i", "reflectance", "scalar_intensity"});
  const int cr = col({"r", "red"}), cg = col({"g", "green"}), cb = col({"b", "blue"});
  const int nx = col({"nx", "normal_x"}), ny = col({"ny", "normal_y"}),
            nz = col({"nz", "normal_z"});
  const int cl = col({"label", "cluster"});
  PointCloud cloud;
  std::vector<double> xyz(rows * 3);
  std::vector<bool> used(ncols, false);
  for (int c : {cx, cy, cz})
    used[c] = true;
  for (std::size_t r = 0; r < rows; ++r) {
    xyz[3 * r] = values[r * ncols + cx];
    xyz[3 * r + 1] = values[r * ncols + cy];
    xyz[3 * r + 2] = values[r * ncols + cz];
  }
  set_positions_from_world(cloud, xyz);
  if (ci >= 0) {
    used[ci] = true;
    cloud.intensity.resize(rows);
    for (std::size_t r = 0; r < rows; ++r)
      cloud.intensity[r] = float(values[r * ncols + ci]);
  }
  if (cr >= 0 && cg >= 0 && cb >= 0) {
    used[cr] = used[cg] = used[cb] = true;
    cloud.rgb.resize(rows);
    auto u8 = [](double v) { return std::uint8_t(std::clamp(std::lround(v), 0L, 255L)); };
    for (std::size_t r = 0; r < rows; ++r)
      cloud.rgb[r] = {u8(values[r * ncols + cr]), u8(values[r * ncols + cg]),
                      u8(values[r * ncols + cb])};
  }
  if (nx >= 0 && ny >= 0 && nz >= 0) {
    used[nx] = used[ny] = used[nz] = true;
    cloud.normals.resize(rows);
    for (std::size_t r = 0; r < rows; ++r)
      cloud.normals[r] = {float(values[r * ncols + nx]), float(values[r * ncols + ny]),
                          float(values[r * ncols + nz])};
  }
  if (cl >= 0) {
    used[cl] = true;
    cloud.labels.resize(rows);
    for (std::size_t r = 0; r < rows; ++r)
      cloud.labels[r] = std::int32_t(values[r * ncols + cl]);
  }
  for (std::size_t c = 0; c < ncols; ++c) {
    if (used[c]) continue;
    ExtraField f{names[c], 1, std::vector<double>(rows)};
    for (std::size_t r = 0; r < rows; ++r)
      f.values[r] = values[r * ncols + c];
    cloud.extra.push_back(std::move(f));
  }
  finish_cloud(path, cloud);
  return cloud;
}

void save_xyz(const std::string& path, const PointCloud& cloud) {
  AtomicFile out(path);
  std::string line = "x y z";
  if (cloud.has_intensity()) line += " intensity";
  if (cloud.has_rgb()) line += " r g b";
  if (cloud.has_normals()) line += " nx ny nz";
  if (cloud.has_labels()) line += " label";
  for (const auto& f : cloud.extra)
    for (int k = 0; k < f.count; ++k) {
      line += ' ';
      line += f.name;
      if (f.count > 1) line.append("_").append(std::to_string(k));
    }
  line += '\n';
  out.write(line);
  // Numbers separated by spaces; reals as the shortest text that reads back as the same double.
  const auto append = [&line](auto v) {
    char buf[64];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    if (!line.empty()) line += ' ';
    line.append(buf, std::size_t(end - buf));
  };
  const auto put = [&](double v) { append(v); };
  const auto put_int = [&](long long v) { append(v); };
  for (std::size_t i = 0; i < cloud.size(); ++i) {
    line.clear();
    put(cloud.origin[0] + double(cloud.points[i].x));
    put(cloud.origin[1] + double(cloud.points[i].y));
    put(cloud.origin[2] + double(cloud.points[i].z));
    if (cloud.has_intensity()) put(cloud.intensity[i]);
    if (cloud.has_rgb()) {
      put_int(cloud.rgb[i].r);
      put_int(cloud.rgb[i].g);
      put_int(cloud.rgb[i].b);
    }
    if (cloud.has_normals()) {
      put(cloud.normals[i].x);
      put(cloud.normals[i].y);
      put(cloud.normals[i].z);
    }
    if (cloud.has_labels()) put_int(cloud.labels[i]);
    for (const auto& f : cloud.extra)
      for (int k = 0; k < f.count; ++k)
        put(f.values[i * std::size_t(f.count) + std::size_t(k)]);
    line += '\n';
    out.write(line);
  }
  out.commit();
}

}  // namespace cumulus
