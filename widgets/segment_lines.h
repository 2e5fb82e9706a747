#pragma once
// The segments of one depth column that are drawn: those whose rows are all valid depths (a
// segment across a hole in the column would draw a line through nothing).
#include <cstdint>

#include "colormap.h"
#include "core/depth_image.h"
#include "segment/segment.h"

namespace cumulus::ui {

// Calls f(first row, last row, colour) for each drawn segment of column c, in order; the colour
// is the segment's label colour by its index in the column.
template <class F>
void for_each_drawn_segment(const DepthImage& image, const SegmentResult& segments, std::uint32_t c,
                            F f) {
  for (std::uint32_t k = segments.offsets[c]; k + 1 < segments.offsets[c + 1]; ++k) {
    const std::uint32_t a = segments.rows[k], b = segments.rows[k + 1];
    bool joined = true;
    for (std::uint32_t y = a; y <= b && joined; ++y)
      joined = DepthImage::is_valid(image.at(y, c));
    if (joined) f(a, b, label_color(int(k - segments.offsets[c])));
  }
}

}  // namespace cumulus::ui
