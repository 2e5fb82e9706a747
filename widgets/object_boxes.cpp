#include "object_boxes.h"

#include <vtkCellArray.h>
#include <vtkCellData.h>
#include <vtkNew.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkUnsignedCharArray.h>

namespace cumulus::ui {

void fill_box_lines(vtkPolyData* poly,
                    const std::vector<std::array<std::array<double, 3>, 8>>& boxes,
                    int highlighted) {
  static constexpr int kEdges[12][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {4, 5}, {5, 6},
                                        {6, 7}, {7, 4}, {0, 4}, {1, 5}, {2, 6}, {3, 7}};
  vtkNew<vtkPoints> points;
  vtkNew<vtkCellArray> lines;
  vtkNew<vtkUnsignedCharArray> colours;
  colours->SetNumberOfComponents(3);
  colours->SetName("colours");
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    const vtkIdType first = points->GetNumberOfPoints();
    for (const auto& c : boxes[b])
      points->InsertNextPoint(c[0], c[1], c[2]);
    const bool lit = int(b) == highlighted;
    const unsigned char rgb[3] = {static_cast<unsigned char>(lit ? 255 : 60),
                                  static_cast<unsigned char>(lit ? 220 : 230),
                                  static_cast<unsigned char>(lit ? 40 : 90)};
    for (const auto& e : kEdges) {
      const vtkIdType ids[2] = {first + e[0], first + e[1]};
      lines->InsertNextCell(2, ids);
      colours->InsertNextTypedTuple(rgb);
    }
  }
  poly->Initialize();
  poly->SetPoints(points);
  poly->SetLines(lines);
  poly->GetCellData()->SetScalars(colours);
}

void fill_path_lines(vtkPolyData* poly, const std::vector<std::array<double, 3>>& points,
                     int marked) {
  vtkNew<vtkPoints> pts;
  vtkNew<vtkCellArray> lines;
  vtkNew<vtkUnsignedCharArray> colours;
  colours->SetNumberOfComponents(3);
  for (const auto& p : points)
    pts->InsertNextPoint(p[0], p[1], p[2]);
  for (vtkIdType i = 1; i < vtkIdType(points.size()); ++i) {
    const vtkIdType ids[2] = {i - 1, i};
    lines->InsertNextCell(2, ids);
    const bool here = i - 1 == marked;
    const unsigned char rgb[3] = {static_cast<unsigned char>(here ? 255 : 40),
                                  static_cast<unsigned char>(here ? 220 : 200),
                                  static_cast<unsigned char>(here ? 40 : 255)};
    colours->InsertNextTypedTuple(rgb);
  }
  poly->Initialize();
  poly->SetPoints(pts);
  poly->SetLines(lines);
  poly->GetCellData()->SetScalars(colours);
}

void fill_segment_lines(vtkPolyData* poly, const std::vector<std::array<double, 3>>& from,
                        const std::vector<std::array<double, 3>>& to,
                        const std::vector<std::array<unsigned char, 3>>& colours) {
  vtkNew<vtkPoints> pts;
  vtkNew<vtkCellArray> lines;
  vtkNew<vtkUnsignedCharArray> rgb;
  rgb->SetNumberOfComponents(3);
  for (std::size_t i = 0; i < from.size(); ++i) {
    const vtkIdType ids[2] = {pts->InsertNextPoint(from[i].data()),
                              pts->InsertNextPoint(to[i].data())};
    lines->InsertNextCell(2, ids);
    rgb->InsertNextTypedTuple(colours[i].data());
  }
  poly->Initialize();
  poly->SetPoints(pts);
  poly->SetLines(lines);
  poly->GetCellData()->SetScalars(rgb);
}

}  // namespace cumulus::ui
