#include "segment/segment_compare.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace cumulus {

SegmentAgreement compare_segments(const SegmentResult& ref, const SegmentResult& other) {
  if (ref.width != other.width || ref.height != other.height)
    throw InvalidArgument("the two segmentations are for images of different sizes");
  SegmentAgreement a;
  for (std::uint32_t c = 0; c < ref.width; ++c) {
    const bool same =
        ref.levels[c] == other.levels[c] && ref.cuts(c) == other.cuts(c) &&
        std::equal(ref.rows.begin() + ref.offsets[c], ref.rows.begin() + ref.offsets[c + 1],
                   other.rows.begin() + other.offsets[c]);
    if (!same) a.columns.push_back(c);
  }
  a.identical = a.columns.empty();
  std::ostringstream s;
  if (a.identical) {
    s << "identical cut rows in all " << ref.width << " columns";
  } else {
    s << a.columns.size() << " of " << ref.width << " columns differ (first: " << a.columns.front()
      << ")";
  }
  a.summary = s.str();
  return a;
}

}  // namespace cumulus
