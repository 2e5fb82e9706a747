// PLY through PCL's io, its header and data size checked first.
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
    // PCL's parser takes a keyword only at the start of a line and splits on spaces alone: a
    // stray carriage return, form feed or leading blank makes it misread the line (found by
    // fuzzing: "\robj_info" failed an assertion inside PCL, which aborts the program).
    if (line.find_first_of("\r\f\v") != std::string::npos ||
        (!line.empty() && (line[0] == ' ' || line[0] == '\t')))
      fail("line " + std::to_string(line_no) + " of the header holds stray white space");
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
    // PCL walks every instance, holding data or not (found by fuzzing: 2^64 - 1 instances of an
    // element without properties never ended).
    if (each == 0 && e.count > 0)
      fail("an element declares " + std::to_string(e.count) + " instances but no properties");
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

PointCloud load_ply(const std::string& path) {
  validate_ply(path, require_readable_file(path));
  return read_with_pcl<pcl::PLYReader>(path, "PLY");
}

void save_ply(const std::string& path, const PointCloud& cloud, bool binary) {
  write_with_pcl(path, cloud, "PLY", false,
                 [&](const std::string& scratch, const pcl::PCLPointCloud2& raw) {
                   pcl::PLYWriter writer;
                   return binary ? writer.writeBinary(scratch, raw)
                                 : writer.writeASCII(scratch, raw, Eigen::Vector4f::Zero(),
                                                     Eigen::Quaternionf::Identity(), 9);
                 });
}

}  // namespace cumulus
