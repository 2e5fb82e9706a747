#pragma once
// Whether two segmentations of one image cut the same rows, and which columns differ.
#include <cstdint>
#include <string>
#include <vector>

#include "segment/segment.h"

namespace cumulus {

// Verdict on two segmentations of the same image: the columns whose cut rows or levels differ.
struct SegmentAgreement {
  bool identical = false;
  std::vector<std::uint32_t> columns;  // differing columns, ascending
  std::string summary;
};
SegmentAgreement compare_segments(const SegmentResult& reference, const SegmentResult& other);

}  // namespace cumulus
