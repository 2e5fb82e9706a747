#include "sequence/sequence.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/io.h"

namespace cumulus {

namespace fs = std::filesystem;

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && digit(a[ei]))
        ++ei;
      while (ej < b.size() && digit(b[ej]))
        ++ej;
      // Leading zeros aside, the longer run is the larger number.
      std::size_t zi = i, zj = j;
      while (zi + 1 < ei && a[zi] == '0')
        ++zi;
      while (zj + 1 < ej && b[zj] == '0')
        ++zj;
      if (ei - zi != ej - zj) return ei - zi < ej - zj;
      const int c = a.compare(zi, ei - zi, b, zj, ej - zj);
      if (c != 0) return c < 0;
      if (ei - i != ej - j) return ei - i < ej - j;  // 01 before 001: a fixed order
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

bool wildcard_match(const std::string& pattern, const std::string& name) {
  std::size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

std::vector<std::string> sequence_frames(const std::string& spec) {
  std::vector<std::string> frames;
  std::error_code ec;
  const fs::path path(spec);
  const auto sorted = [&](std::vector<std::string> v) {
    std::sort(v.begin(), v.end(), natural_less);
    return v;
  };
  if (fs::is_directory(path, ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      // A sequence's folder often holds calib.txt or times.txt: .txt is not taken for XYZ here.
      if (e.is_regular_file() && e.path().extension() != ".txt" &&
          (is_cloud_path(e.path().string()) || is_depth_image_path(e.path().string())))
        frames.push_back(e.path().string());
    if (ec) throw IoError(spec, "cannot list the folder: " + ec.message());
    frames = sorted(std::move(frames));
  } else if (spec.find_first_of("*?") != std::string::npos) {
    const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    const std::string pattern = path.filename().string();
    if (folder.string().find_first_of("*?") != std::string::npos)
      throw IoError(spec, "wildcards are allowed in the file name only");
    for (const auto& e : fs::directory_iterator(folder, ec))
      if (e.is_regular_file() && wildcard_match(pattern, e.path().filename().string()))
        frames.push_back(e.path().string());
    if (ec) throw IoError(folder.string(), "cannot list the folder: " + ec.message());
    frames = sorted(std::move(frames));
  } else if (path.extension() == ".txt") {
    std::ifstream list(spec);
    if (!list) throw IoError(spec, "cannot read the list of frames");
    for (std::string line; std::getline(list, line);) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.pop_back();
      if (line.empty() || line[0] == '#') continue;
      const fs::path frame(line);
      frames.push_back(frame.is_absolute() ? line : (path.parent_path() / frame).string());
    }
  } else {
    throw IoError(spec, "not a folder, a pattern with * or ?, or a .txt list of frames");
  }
  if (frames.empty()) throw IoError(spec, "no frames found (clouds or depth images)");
  return frames;
}

}  // namespace cumulus
