#pragma once
// `cumulus --bench-view N`: the 3D view with a generated plain x, y, z cloud of N points, dragged
// as a user rotates it, left to rest, then seen from closer; prints the frames/s, the points each
// frame drew, how long the view took at rest to show every point on screen (full detail), the
// longest time the UI thread was held, and the resident memory a point.
#include <cstddef>

namespace cumulus::app {

int run_view_bench(std::size_t points, int width, int height);

}  // namespace cumulus::app
