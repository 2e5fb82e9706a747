// The 3D view's camera: the first view of a cloud, and the camera as sessions save it.
#include <vtkCamera.h>
#include <vtkMatrix4x4.h>
#include <vtkRenderer.h>

#include <algorithm>
#include <cmath>

#include "vtk_cloud_view.h"

namespace cumulus::ui {

void VtkCloudView::resetCamera() {
  emit cameraMoved();
  auto* cam = renderer_->GetActiveCamera();
  if (const double* b = cloudBounds()) {
    // Look from behind and above the cloud's centre, z up: natural for LiDAR and scans alike.
    const double cx = 0.5 * (b[0] + b[1]), cy = 0.5 * (b[2] + b[3]), cz = 0.5 * (b[4] + b[5]);
    cam->SetFocalPoint(cx, cy, cz);
    cam->SetPosition(cx - 1.0, cy - 0.6, cz + 0.8);
    cam->SetViewUp(0, 0, 1);
    renderer_->ResetCamera(b);
    // The bounding sphere leaves a cloud small in the frame, and a fixed zoom cut off the top
    // and bottom of tall ones: zoom until the box's corners fill 92 % of the view's narrower
    // extent (twice, as perspective makes one step approximate).
    for (int pass = 0; pass < 2; ++pass)
      if (const double extent = boundsExtentInView(); extent > 0) cam->Zoom(0.92 / extent);
  } else {
    renderer_->ResetCamera();
  }
  renderer_->ResetCameraClippingRange();
  update();
}

VtkCloudView::CameraState VtkCloudView::cameraState() const {
  auto* cam = renderer_->GetActiveCamera();
  CameraState s;
  cam->GetPosition(s.position.data());
  cam->GetFocalPoint(s.focal_point.data());
  cam->GetViewUp(s.view_up.data());
  s.view_angle = cam->GetViewAngle();
  s.parallel_scale = cam->GetParallelScale();
  s.parallel = cam->GetParallelProjection() != 0;
  return s;
}

void VtkCloudView::setCameraState(const CameraState& s) {
  auto* cam = renderer_->GetActiveCamera();
  cam->SetPosition(s.position.data());
  cam->SetFocalPoint(s.focal_point.data());
  cam->SetViewUp(s.view_up.data());
  cam->SetViewAngle(s.view_angle);
  cam->SetParallelScale(s.parallel_scale);
  cam->SetParallelProjection(s.parallel ? 1 : 0);
  renderer_->ResetCameraClippingRange();
  emit cameraMoved();
  update();
}

double VtkCloudView::boundsExtentInView() const {
  const double* b = cloudBounds();
  if (!b) return 0;
  const double aspect = width() > 0 && height() > 0 ? double(width()) / height() : 1.0;
  vtkMatrix4x4* m =
      renderer_->GetActiveCamera()->GetCompositeProjectionTransformMatrix(aspect, -1, 1);
  double extent = 0;
  for (int corner = 0; corner < 8; ++corner) {
    const double p[4] = {b[corner & 1], b[2 + ((corner >> 1) & 1)], b[4 + ((corner >> 2) & 1)], 1};
    double q[4];
    m->MultiplyPoint(p, q);
    if (q[3] <= 0) return 0;  // behind the camera: no meaningful extent
    extent = std::max({extent, std::abs(q[0] / q[3]), std::abs(q[1] / q[3])});
  }
  return extent;
}

}  // namespace cumulus::ui
