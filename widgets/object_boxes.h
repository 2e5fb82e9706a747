#pragma once
// Wireframe boxes as VTK lines (twelve edges a box, coloured per box), and paths.
#include <array>
#include <vector>

class vtkPolyData;

namespace cumulus::ui {

// Replaces `poly`'s points and lines with the boxes' edges (corners bottom face first, then
// the top, both in the same turning order); box `highlighted` yellow, the others green.
void fill_box_lines(vtkPolyData* poly,
                    const std::vector<std::array<std::array<double, 3>, 8>>& boxes,
                    int highlighted);

}  // namespace cumulus::ui

namespace cumulus::ui {

// Replaces `poly`'s points and lines with a polyline through `points` (cyan), the point
// `marked` (an index, or -1) drawn as the start of a yellow last segment.
void fill_path_lines(vtkPolyData* poly, const std::vector<std::array<double, 3>>& points,
                     int marked);

// Replaces `poly`'s points and lines with separate segments, from[i] to to[i] in colours[i]
// (r, g, b).
void fill_segment_lines(vtkPolyData* poly, const std::vector<std::array<double, 3>>& from,
                        const std::vector<std::array<double, 3>>& to,
                        const std::vector<std::array<unsigned char, 3>>& colours);

}  // namespace cumulus::ui
