#include "core/error.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

namespace cumulus {

namespace {

// Length of the valid UTF-8 sequence at `s[i]`, or 0 where it is not one.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  std::size_t n = 0;
  char32_t code = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0)
    n = 2, code = c & 0x1F;
  else if ((c & 0xF0) == 0xE0)
    n = 3, code = c & 0x0F;
  else if ((c & 0xF8) == 0xF0)
    n = 4, code = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past Unicode are not UTF-8 either.
  static constexpr char32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kLeast[n] || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return n;
}

}  // namespace

std::string printable_path(const std::string& path) {
  std::string out;
  bool escaped = false;
  for (std::size_t i = 0; i < path.size();) {
    if (const std::size_t n = utf8_sequence(path, i)) {
      out.append(path, i, n);
      i += n;
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(path[i]));
    out += hex;
    escaped = true;
    ++i;
  }
  if (escaped) out += " (this name is not valid UTF-8; its other bytes are shown as \\xNN)";
  return out;
}

std::string path_error(const std::string& path, int error) {
  switch (error) {
    case ENOENT:
      return "no such file or folder";
    case ELOOP:
      return "a symbolic link loop: following the links of this path leads back to a link "
             "already followed (or past the system's limit of links in one path)";
    case ENAMETOOLONG: {
      std::size_t longest = 0;
      for (std::size_t at = 0; at <= path.size();) {
        std::size_t end = path.find('/', at);
        if (end == std::string::npos) end = path.size();
        longest = std::max(longest, end - at);
        at = end + 1;
      }
      return "the path is too long for the system (" + std::to_string(path.size()) +
             " bytes, at most " + std::to_string(PATH_MAX - 1) + "; its longest name " +
             std::to_string(longest) + " bytes, at most " + std::to_string(NAME_MAX) + ")";
    }
    case ENOTDIR:
      return "a part of the path that should be a folder is a file";
    case EACCES:
    case EPERM:
      return "permission denied";
    case EROFS:
      return "the file system is read-only";
    case ENOSPC:
      return "no space left on the device";
    case EDQUOT:
      return "the disk quota is exhausted";
    case EFBIG:
      return "the file is larger than the system allows (file size limit)";
    default:
      return std::strerror(error);
  }
}

}  // namespace cumulus
