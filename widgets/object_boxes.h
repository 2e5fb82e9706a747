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

}  // namespace cumulus::ui
