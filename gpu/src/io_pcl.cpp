// PCD and PLY through PCL's io, converted from/to PCLPointCloud2 so that every field of the
// file is kept, whatever its type.
#include <pcl/PCLPointCloud2.h>
#include <pcl/console/print.h>
#include <pcl/io/pcd_io.h>
#include <pcl/io/ply_io.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "cumulus/error.h"
#include "cumulus/io.h"
#include "io_detail.h"

namespace cumulus {

using namespace detail;

namespace {

using Field = pcl::PCLPointField;

void quiet_pcl() {
  // PCL prints its own parse errors to stderr; ours carry the file name and go to the caller.
  static std::once_flag once;
  std::call_once(once, [] { pcl::console::setVerbosityLevel(pcl::console::L_ALWAYS); });
}

double read_value(const std::uint8_t* p, std::uint8_t type) {
  switch (type) {
    case Field::INT8: {
      std::int8_t v;
      std::memcpy(&v, p, 1);
      return v;
    }
    case Field::UINT8:
      return *p;
    case Field::INT16: {
      std::int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case Field::UINT16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case Field::INT32: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case Field::UINT32: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case Field::INT64: {
      std::int64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
    case Field::UINT64: {
      std::uint64_t v;
      std::memcpy(&v, p, 8);
      return double(v);
    }
    case Field::FLOAT32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case Field::FLOAT64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    default:
      return std::nan("");
  }
}

const Field* find_field(const pcl::PCLPointCloud2& c, std::initializer_list<const char*> names) {
  for (const char* n : names)
    for (const auto& f : c.fields)
      if (f.name == n) return &f;
  return nullptr;
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
    ExtraField e{f.name, int(f.count), std::vector<float>(n * f.count)};
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t k = 0; k < f.count; ++k)
        e.values[i * f.count + k] = float(at(i, &f, k));
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
  std::vector<std::uint32_t> oe;
  for (const auto& f : cloud.extra)
    oe.push_back(add(f.name, Field::FLOAT32, std::uint32_t(f.count)));
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
      std::memcpy(p + oe[e], &f.values[i * std::size_t(f.count)], 4 * std::size_t(f.count));
    }
  }
  return out;
}

// The words of a header line.
std::vector<std::string> tokens(const std::string& line) {
  std::istringstream ss(line);
  std::vector<std::string> t;
  for (std::string w; ss >> w;)
    t.push_back(w);
  return t;
}

// Reads the next header line of a PCD or PLY file into `line` (without a trailing CR); false at
// the end of the file. Fails on binary bytes and on headers that never end.
template <class Fail>
bool header_line(std::istream& in, std::string& line, std::size_t& line_no, const Fail& fail) {
  if (!std::getline(in, line)) return false;
  ++line_no;
  if (line_no > 1000 || line.size() > 100000)
    fail("the header does not end in its first 1000 lines");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  for (unsigned char c : line)
    if (c < 9 || (c > 13 && c < 32) || c > 126)
      fail("binary bytes in the header (line " + std::to_string(line_no) + ")");
  return true;
}

// A count in a header: digits only (no sign), no overflow.
template <class Fail>
std::size_t header_number(const std::string& w, const char* what, const Fail& fail) {
  std::size_t v = 0;
  auto [ptr, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
  if (ec != std::errc() || ptr != w.data() + w.size())
    fail(std::string("bad ") + what + " '" + w.substr(0, 20) + "'");
  return v;
}

// PCL's PCD reader trusts the header: garbage can crash it and truncated binary data is read
// as if it were complete. So the header and the data size are checked here first.
void validate_pcd(const std::string& path, std::uintmax_t file_size) {
  std::ifstream in(path, std::ios::binary);
  std::string line, data_kind;
  std::size_t fields = 0, points = 0, width = 0, height = 1, point_size = 0, line_no = 0;
  std::vector<std::size_t> sizes, counts;
  std::vector<std::string> types;
  bool have_points = false, have_width = false;
  auto fail = [&](const std::string& why) { throw IoError(path, "not a valid PCD file: " + why); };
  auto number = [&](const std::string& w, const char* what) {
    return header_number(w, what, fail);
  };
  while (data_kind.empty()) {
    if (!header_line(in, line, line_no, fail)) fail("the header ends before its DATA line");
    const auto t = tokens(line);
    if (t.empty() || t[0][0] == '#') continue;
    const std::string& key = t[0];
    if (key == "VERSION" || key == "VIEWPOINT") continue;
    if (key == "FIELDS" || key == "COLUMNS")
      fields = t.size() - 1;
    else if (key == "SIZE")
      for (std::size_t i = 1; i < t.size(); ++i)
        sizes.push_back(number(t[i], "SIZE"));
    else if (key == "TYPE")
      types.assign(t.begin() + 1, t.end());
    else if (key == "COUNT")
      for (std::size_t i = 1; i < t.size(); ++i)
        counts.push_back(number(t[i], "COUNT"));
    else if (key == "WIDTH" && t.size() == 2)
      width = number(t[1], "WIDTH"), have_width = true;
    else if (key == "HEIGHT" && t.size() == 2)
      height = number(t[1], "HEIGHT");
    else if (key == "POINTS" && t.size() == 2)
      points = number(t[1], "POINTS"), have_points = true;
    else if (key == "DATA" && t.size() == 2)
      data_kind = t[1];
    else
      fail("unexpected header line " + std::to_string(line_no) + ": '" + line.substr(0, 40) + "'");
  }
  if (fields == 0) fail("no FIELDS line");
  if (sizes.size() != fields || types.size() != fields)
    fail("FIELDS, SIZE and TYPE list different numbers of fields");
  if (counts.empty()) counts.assign(fields, 1);
  if (counts.size() != fields) fail("COUNT lists a different number of fields");
  for (std::size_t i = 0; i < fields; ++i) {
    if (sizes[i] != 1 && sizes[i] != 2 && sizes[i] != 4 && sizes[i] != 8)
      fail("field size must be 1, 2, 4 or 8");
    if (types[i] != "F" && types[i] != "I" && types[i] != "U") fail("field type must be F, I or U");
    if (types[i] == "F" && sizes[i] < 4) fail("float fields must be 4 or 8 bytes");
    if (counts[i] == 0 || counts[i] > 100000) fail("bad field COUNT");
    point_size += sizes[i] * counts[i];
  }
  if (!have_width) fail("no WIDTH line");
  if (!have_points) points = width * height;
  if (width == 0 || height == 0 || points != width * height)
    fail("POINTS (" + std::to_string(points) + ") is not WIDTH x HEIGHT (" + std::to_string(width) +
         " x " + std::to_string(height) + ")");
  const auto data_start = std::uintmax_t(in.tellg());
  {
    // PCL's header parser reads one line past DATA and takes a header keyword there as part of
    // the header (found by fuzzing: binary data starting "COLUMNS" made it read garbage).
    std::string next;
    std::getline(in, next);
    const auto t = tokens(next);
    static const char* kKeys[] = {"VERSION", "FIELDS", "COLUMNS", "SIZE",      "TYPE", "COUNT",
                                  "WIDTH",   "HEIGHT", "POINTS",  "VIEWPOINT", "DATA"};
    if (!t.empty() &&
        (t[0][0] == '#' || std::any_of(std::begin(kKeys), std::end(kKeys),
                                       [&](const char* k) { return t[0].rfind(k, 0) == 0; }))) {
      std::string shown;
      for (char c : t[0].substr(0, 20))
        shown += (c >= 32 && c < 127) ? c : '?';
      fail("a header line follows DATA ('" + shown + "')");
    }
    in.clear();
    in.seekg(std::streamoff(data_start));
  }
  const std::uintmax_t remaining = file_size >= data_start ? file_size - data_start : 0;
  if (points > (std::uintmax_t(1) << 40) / point_size)
    fail("the header declares an impossible number of points");
  const std::uintmax_t need = std::uintmax_t(points) * point_size;
  if (data_kind == "binary") {
    if (remaining < need)
      fail("data is truncated: " + std::to_string(points) + " points need " + std::to_string(need) +
           " bytes, the file holds " + std::to_string(remaining));
  } else if (data_kind == "binary_compressed") {
    std::uint32_t sz[2] = {0, 0};
    if (remaining < 8 || !in.read(reinterpret_cast<char*>(sz), 8))
      fail("compressed data is missing");
    if (sz[1] != need) fail("compressed data does not unpack to the points its header declares");
    if (std::uintmax_t(sz[0]) + 8 > remaining) fail("compressed data is truncated");
  } else if (data_kind == "ascii") {
    std::size_t rows = 0;
    while (rows < points && std::getline(in, line))
      if (line.find_first_not_of(" \t\r") != std::string::npos) ++rows;
    if (rows < points)
      fail("holds " + std::to_string(rows) + " points of the " + std::to_string(points) +
           " its header declares");
  } else {
    fail("unknown DATA kind '" + data_kind.substr(0, 20) + "'");
  }
}

// PCL's PLY reader trusts the header too: a negative element count becomes a huge allocation
// (found by fuzzing: "element vertex -2" asked for 51 GB) and short data is not noticed. So the
// header is checked, and the file must hold at least the bytes (binary) or values (ASCII) its
// elements declare.
void validate_ply(const std::string& path, std::uintmax_t file_size) {
  std::ifstream in(path, std::ios::binary);
  auto fail = [&](const std::string& why) { throw IoError(path, "not a valid PLY file: " + why); };
  auto type_size = [](const std::string& t) -> std::size_t {
    if (t == "char" || t == "uchar" || t == "int8" || t == "uint8") return 1;
    if (t == "short" || t == "ushort" || t == "int16" || t == "uint16") return 2;
    if (t == "int" || t == "uint" || t == "float" || t == "int32" || t == "uint32" ||
        t == "float32")
      return 4;
    if (t == "double" || t == "float64") return 8;
    return 0;
  };
  std::string line, format;
  std::size_t line_no = 0;
  if (!header_line(in, line, line_no, fail) || line != "ply") fail("it does not start with 'ply'");
  // The least each element needs: bytes in binary, values in ASCII (a list needs its count).
  struct Element {
    std::size_t count = 0, bytes = 0, values = 0;
  };
  std::vector<Element> elements;
  bool ended = false;
  while (!ended) {
    if (!header_line(in, line, line_no, fail)) fail("the header has no end_header line");
    const auto t = tokens(line);
    if (t.empty() || t[0] == "comment" || t[0] == "obj_info") continue;
    if (t[0] == "format" && t.size() == 3) {
      format = t[1];
      if (format != "ascii" && format != "binary_little_endian" && format != "binary_big_endian")
        fail("unknown format '" + format.substr(0, 30) + "'");
    } else if (t[0] == "element" && t.size() == 3) {
      elements.push_back({header_number(t[2], "element count", fail), 0, 0});
    } else if (t[0] == "property" && t.size() == 3) {
      if (elements.empty()) fail("a property before any element");
      const std::size_t size = type_size(t[1]);
      if (size == 0) fail("unknown property type '" + t[1].substr(0, 20) + "'");
      elements.back().bytes += size;
      elements.back().values += 1;
    } else if (t[0] == "property" && t.size() == 5 && t[1] == "list") {
      if (elements.empty()) fail("a property before any element");
      const std::size_t size = type_size(t[2]);
      if (size == 0 || t[2] == "float" || t[2] == "double" || t[2] == "float32" ||
          t[2] == "float64" || type_size(t[3]) == 0)
        fail("bad list property types '" + t[2].substr(0, 20) + " " + t[3].substr(0, 20) + "'");
      elements.back().bytes += size;
      elements.back().values += 1;
    } else if (t[0] == "end_header" && t.size() == 1) {
      ended = true;
    } else {
      fail("unexpected header line " + std::to_string(line_no) + ": '" + line.substr(0, 40) + "'");
    }
  }
  if (format.empty()) fail("no format line");
  const auto data_start = std::uintmax_t(in.tellg());
  const std::uintmax_t remaining = file_size >= data_start ? file_size - data_start : 0;
  // An ASCII value takes at least one character and one separator.
  const bool ascii = format == "ascii";
  std::uintmax_t need = 0;
  for (const Element& e : elements) {
    const std::uintmax_t each = ascii ? 2 * e.values : e.bytes;
    if (each != 0 && e.count > (std::uintmax_t(1) << 40) / each)
      fail("the header declares an impossible number of elements (" + std::to_string(e.count) +
           ")");
    need += e.count * each;
  }
  if (ascii && need > 0) need -= 1;  // the last line needs no newline
  if (need > remaining)
    fail("data is truncated: the header's elements need at least " + std::to_string(need) +
         " bytes, the file holds " + std::to_string(remaining));
}

}  // namespace

PointCloud load_pcd(const std::string& path) {
  validate_pcd(path, require_readable_file(path));
  quiet_pcl();
  pcl::PCLPointCloud2 raw;
  pcl::PCDReader reader;
  int result = -1;
  try {
    result = reader.read(path, raw);
  } catch (const std::exception& e) {
    throw IoError(path, std::string("not a valid PCD file: ") + e.what());
  }
  if (result < 0)
    throw IoError(path,
                  "not a valid PCD file (its header is malformed, or its data is truncated "
                  "or does not match the header)");
  return from_pcl(path, raw);
}

PointCloud load_ply(const std::string& path) {
  validate_ply(path, require_readable_file(path));
  quiet_pcl();
  pcl::PCLPointCloud2 raw;
  pcl::PLYReader reader;
  int result = -1;
  try {
    result = reader.read(path, raw);
  } catch (const std::exception& e) {
    throw IoError(path, std::string("not a valid PLY file: ") + e.what());
  }
  if (result < 0)
    throw IoError(path,
                  "not a valid PLY file (its header is malformed, or its data is truncated "
                  "or does not match the header)");
  return from_pcl(path, raw);
}

void save_pcd(const std::string& path, const PointCloud& cloud, PcdEncoding encoding) {
  cloud.validate();
  if (cloud.empty()) throw IoError(path, "refusing to write an empty cloud (PCD needs points)");
  quiet_pcl();
  const auto raw = to_pcl(cloud);
  pcl::PCDWriter writer;
  int result = -1;
  try {
    switch (encoding) {
      case PcdEncoding::Ascii:
        result = writer.writeASCII(path, raw, Eigen::Vector4f::Zero(),
                                   Eigen::Quaternionf::Identity(), 9);
        break;
      case PcdEncoding::Binary:
        result = writer.writeBinary(path, raw);
        break;
      case PcdEncoding::BinaryCompressed:
        result = writer.writeBinaryCompressed(path, raw);
        break;
    }
  } catch (const std::exception& e) {
    throw IoError(path, std::string("cannot write: ") + e.what());
  }
  if (result < 0) throw IoError(path, "cannot write (folder missing or not writable?)");
}

void save_ply(const std::string& path, const PointCloud& cloud, bool binary) {
  cloud.validate();
  if (cloud.empty()) throw IoError(path, "refusing to write an empty cloud");
  quiet_pcl();
  const auto raw = to_pcl(cloud);
  pcl::PLYWriter writer;
  int result = -1;
  try {
    result = binary ? writer.writeBinary(path, raw)
                    : writer.writeASCII(path, raw, Eigen::Vector4f::Zero(),
                                        Eigen::Quaternionf::Identity(), 9);
  } catch (const std::exception& e) {
    throw IoError(path, std::string("cannot write: ") + e.what());
  }
  if (result < 0) throw IoError(path, "cannot write (folder missing or not writable?)");
}

}  // namespace cumulus
