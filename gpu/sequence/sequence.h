#pragma once
// The frames of a sequence of clouds or depth images: a folder (its cloud files and depth
// images, .txt aside: calibration and times live there), a pattern with * and ? in
// its file name (velodyne/*.bin), or a list file (.txt: one path a line, relative to the list's
// folder; blank lines and lines starting with # skipped). Folders and patterns come in natural
// order (frame 2 before frame 10); a list keeps its own order.
#include <string>
#include <vector>

namespace cumulus {

// IoError when the folder, pattern's folder or list cannot be read, or nothing matches.
std::vector<std::string> sequence_frames(const std::string& spec);

// Digit runs compare as numbers ("f2" < "f10"), the rest byte by byte.
bool natural_less(const std::string& a, const std::string& b);

// Whether `name` matches `pattern` (* any run, ? one character).
bool wildcard_match(const std::string& pattern, const std::string& name);

}  // namespace cumulus
