#pragma once
// Wireframe boxes as VTK lines: twelve edges a box, coloured per box.
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
