#pragma once
// `cumulus --bench-view N`: the 3D view with a generated plain x, y, z cloud of N points, dragged
// as a user rotates it and then left to rest; prints the frames/s, the points each frame drew,
// the longest time the UI thread was held, and the resident memory a point.
#include <cstddef>

namespace cumulus::app {

int run_view_bench(std::size_t points, int width, int height);

}  // namespace cumulus::app
