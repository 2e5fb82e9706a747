#pragma once
// PCD and PLY go through PCL's io as PCLPointCloud2, so that every field of a file is kept,
// whatever its type; these convert both ways and read the headers PCL's readers trust blindly
// (io_pcd.cpp and io_ply.cpp check them first). Private to io/.
#include <pcl/PCLPointCloud2.h>

#include <charconv>
#include <cstddef>
#include <functional>
#include <istream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/point_cloud.h"

namespace cumulus::detail {

void quiet_pcl();  // PCL's console messages off, once
PointCloud from_pcl(const std::string& path, const pcl::PCLPointCloud2& in);
pcl::PCLPointCloud2 to_pcl(const PointCloud& cloud);

// Reads `path` with one of PCL's readers (PCDReader, PLYReader), after our own checks of its
// header; `format` names the format in the errors.
template <class Reader>
PointCloud read_with_pcl(const std::string& path, const std::string& format) {
  quiet_pcl();
  pcl::PCLPointCloud2 raw;
  Reader reader;
  int result = -1;
  try {
    result = reader.read(path, raw);
  } catch (const std::exception& e) {
    throw IoError(path, "not a valid " + format + " file: " + e.what());
  }
  if (result < 0)
    throw IoError(path, "not a valid " + format +
                            " file (its header is malformed, or its data is truncated or does "
                            "not match the header)");
  return from_pcl(path, raw);
}

// Lets `write(scratch)` (a call of one of PCL's writers, returning its status) write a file in
// memory, then puts its bytes in `path` with AtomicFile. PCL's writers check little (the binary
// PCD writer maps the file, which on a full disk is a bus error; the text writers never look at
// their stream, so a failed write leaves a cut file and reports success), so none of them ever
// writes to the disk itself. The memory file obeys the process's file size limit as a disk
// file does, and PCL would cut the file there without a word: a file that reaches the limit,
// or whose size known in advance (`at_least` bytes, 0 if unknown) would, is refused with that
// reason before anything reaches the disk.
void write_through_scratch(const std::string& path, const std::string& format, std::size_t at_least,
                           const std::function<int(const std::string& scratch)>& write);

// `cloud` to `path` by `write(scratch, raw)`; refuses an empty cloud, which `format` cannot hold.
// `raw_bytes_written`: the format writes at least the raw point bytes (binary PCD).
template <class Write>
void write_with_pcl(const std::string& path, const PointCloud& cloud, const std::string& format,
                    bool raw_bytes_written, Write write) {
  cloud.validate();
  if (cloud.empty())
    throw IoError(path, "refusing to write an empty cloud (" + format + " needs points)");
  quiet_pcl();
  const pcl::PCLPointCloud2 raw = to_pcl(cloud);
  write_through_scratch(path, format, raw_bytes_written ? raw.data.size() : 0,
                        [&](const std::string& scratch) { return write(scratch, raw); });
}

// The words of a header line.
inline std::vector<std::string> tokens(const std::string& line) {
  std::istringstream ss(line);
  std::vector<std::string> t;
  for (std::string w; ss >> w;)
    t.push_back(w);
  return t;
}

// Reads the next header line of a PCD or PLY file into `line` (without a trailing CR); false at
// the end of the file. Fails on binary bytes and on headers that never end.
template <class Fail>
bool header_line(std::istream& in, std::string& line, std::size_t& line_no, const Fail& fail,
                 bool* was_empty = nullptr) {
  if (!std::getline(in, line)) return false;
  ++line_no;
  if (line_no > 1000 || line.size() > 100000)
    fail("the header does not end in its first 1000 lines");
  if (was_empty) *was_empty = line.empty();  // before the '\r' of a CRLF line goes
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

}  // namespace cumulus::detail
