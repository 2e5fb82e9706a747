// The view's picking and what it draws over the cloud: the box, the object boxes, the path and
// the segments.
#include <vtkActor.h>
#include <vtkCamera.h>
#include <vtkMatrix4x4.h>
#include <vtkOutlineSource.h>
#include <vtkPolyData.h>
#include <vtkRenderer.h>

#include <algorithm>
#include <cmath>

#include "object_boxes.h"
#include "vtk_cloud_view.h"

namespace cumulus::ui {

std::optional<qint64> VtkCloudView::pickAt(QPoint pos) {
  if (!cloud_ || !draw_ || !points_->GetVisibility() || width() <= 0 || height() <= 0)
    return std::nullopt;
  // The points on screen (those the view's image shows; every point before the first frame)
  // projected to the view: the nearest to the camera among those within a few pixels of the
  // click. What is picked is what the user sees.
  const double aspect = double(width()) / height();
  vtkMatrix4x4* m =
      renderer_->GetActiveCamera()->GetCompositeProjectionTransformMatrix(aspect, -1, 1);
  double e[16];
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c)
      e[4 * r + c] = m->GetElement(r, c);
  const double tol = std::max(4.0, 0.005 * std::hypot(width(), height()));
  const double px = pos.x(), py = pos.y(), w = width(), h = height();
  std::optional<qint64> best;
  double best_depth = 2;
  const auto& pts = cloud_->points;
  std::vector<DrawRange> shown = points_->shownRanges();
  if (points_->shownPoints() == 0) shown = {{0, draw_->index.drawable()}};
  const auto consider = [&](std::size_t i) {
    const double x = pts[i].x, y = pts[i].y, z = pts[i].z;
    const double cw = e[12] * x + e[13] * y + e[14] * z + e[15];
    if (!(cw > 0)) return;  // behind the camera, or not finite
    const double sx = (e[0] * x + e[1] * y + e[2] * z + e[3]) / cw,
                 sy = (e[4] * x + e[5] * y + e[6] * z + e[7]) / cw,
                 sz = (e[8] * x + e[9] * y + e[10] * z + e[11]) / cw;
    if (sz < -1 || sz > 1) return;  // clipped
    const double dx = (sx + 1) * 0.5 * w - px, dy = (1 - sy) * 0.5 * h - py;
    if (dx * dx + dy * dy <= tol * tol && sz < best_depth) {
      best_depth = sz;
      best = qint64(i);
    }
  };
  for (const DrawRange& r : shown)
    for (std::size_t j = r.first; j < r.first + r.count; ++j)
      consider(draw_->pointAt(j));
  return best;
}

void VtkCloudView::setBox(const double* bounds) {
  if (!bounds) {
    box_actor_->VisibilityOff();
  } else {
    box_source_->SetBounds(bounds[0], bounds[1], bounds[2], bounds[3], bounds[4], bounds[5]);
    box_actor_->VisibilityOn();
  }
  update();
}

bool VtkCloudView::boxVisible() const {
  return box_actor_->GetVisibility() != 0;
}

void VtkCloudView::setObjectBoxes(const std::vector<BoxCorners>& boxes, int highlighted) {
  fill_box_lines(boxes_poly_, boxes, highlighted);
  boxes_actor_->SetVisibility(!boxes.empty());
  update();
}

void VtkCloudView::setPath(const std::vector<std::array<double, 3>>& points, int marked) {
  fill_path_lines(path_poly_, points, marked);
  path_actor_->SetVisibility(points.size() >= 2);
  update();
}

void VtkCloudView::setSegments(const std::vector<LineSegment>& segments) {
  std::vector<std::array<double, 3>> from, to;
  std::vector<std::array<unsigned char, 3>> colours;
  for (const auto& s : segments) {
    from.push_back(s.from);
    to.push_back(s.to);
    colours.push_back({s.colour.r, s.colour.g, s.colour.b});
  }
  fill_segment_lines(segments_poly_, from, to, colours);
  segments_actor_->SetVisibility(!segments.empty());
  update();
}

std::size_t VtkCloudView::segmentCount() const {
  return segments_actor_->GetVisibility() ? std::size_t(segments_poly_->GetNumberOfLines()) : 0;
}

std::size_t VtkCloudView::pathPointCount() const {
  return path_actor_->GetVisibility() ? std::size_t(path_poly_->GetNumberOfPoints()) : 0;
}

std::size_t VtkCloudView::objectBoxCount() const {
  return boxes_actor_->GetVisibility() ? std::size_t(boxes_poly_->GetNumberOfLines() / 12) : 0;
}

}  // namespace cumulus::ui
