// PCD through PCL's io, its header and data size checked first.
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

#include "core/error.h"
#include "io/io.h"
#include "io/io_detail.h"
#include "io/pcl_cloud2.h"

namespace cumulus {

using namespace detail;

namespace {

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
    bool empty = false;
    if (!header_line(in, line, line_no, fail, &empty)) fail("the header ends before its DATA line");
    const auto t = tokens(line);
    // PCL skips only empty lines: one of white space alone (a CRLF file's blank line too) ends
    // its header there, and it then reads the data as a cloud without fields (found by fuzzing:
    // a crash).
    if (t.empty() && !empty)
      fail("line " + std::to_string(line_no) + " holds only white space inside the header");
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
    // Empty lines are skipped there too, so the first line that is not empty is the one.
    std::string next;
    while (std::getline(in, next) && next.empty()) {
    }
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

}  // namespace

PointCloud load_pcd(const std::string& path) {
  validate_pcd(path, require_readable_file(path));
  return read_with_pcl<pcl::PCDReader>(path, "PCD");
}

void save_pcd(const std::string& path, const PointCloud& cloud, PcdEncoding encoding) {
  write_with_pcl(path, cloud, "PCD", encoding == PcdEncoding::Binary,
                 [&](const std::string& scratch, const pcl::PCLPointCloud2& raw) {
                   pcl::PCDWriter writer;
                   switch (encoding) {
                     case PcdEncoding::Ascii:
                       return writer.writeASCII(scratch, raw, Eigen::Vector4f::Zero(),
                                                Eigen::Quaternionf::Identity(), 9);
                     case PcdEncoding::Binary:
                       return writer.writeBinary(scratch, raw);
                     case PcdEncoding::BinaryCompressed:
                       return writer.writeBinaryCompressed(scratch, raw);
                   }
                   return -1;
                 });
}

}  // namespace cumulus
