// The 3D view's off-screen export: the scene at any resolution.
#include <QImage>

#include <vtkActor.h>
#include <vtkAxesActor.h>
#include <vtkCamera.h>
#include <vtkImageData.h>
#include <vtkOutlineSource.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>
#include <vtkWindowToImageFilter.h>

#include <cstring>

#include "vtk_cloud_view.h"

namespace cumulus::ui {

QImage VtkCloudView::renderImage(int width, int height) {
  if (width <= 0 || height <= 0 || width > 16384 || height > 16384) return {};
  // A separate off-screen window with its own renderer shares our actors and camera, so the
  // export needs no resize of the on-screen widget and can have any size.
  // Actors of its own (sharing our poly data): GL resources belong to one context, so the
  // on-screen actors are not reused in the off-screen window.
  vtkNew<vtkRenderer> ren;
  ren->SetBackground(renderer_->GetBackground());
  ren->SetBackground2(renderer_->GetBackground2());
  ren->SetGradientBackground(renderer_->GetGradientBackground());
  // A copy of an on-screen actor drawing `poly` (its colours as they are).
  const auto copy_of = [&ren](vtkPolyData* poly, vtkActor* shown) {
    vtkNew<vtkPolyDataMapper> mapper;
    vtkNew<vtkActor> actor;
    mapper->SetInputData(poly);
    mapper->SetColorModeToDirectScalars();
    actor->SetMapper(mapper);
    actor->GetProperty()->DeepCopy(shown->GetProperty());
    actor->SetVisibility(shown->GetVisibility());
    ren->AddActor(actor);
  };
  // The points through a prop of their own (GL buffers belong to one context), every point
  // drawn and uploaded at once: an export shows the whole cloud.
  vtkNew<CloudProp> points;
  points->setData(points_->data());
  points->setPointSize(float(point_size_));
  points->setUploadAll(true);
  points->SetVisibility(points_->GetVisibility());
  ren->AddViewProp(points);
  copy_of(pick_poly_, pick_actor_);
  copy_of(boxes_poly_, boxes_actor_);
  copy_of(path_poly_, path_actor_);
  copy_of(segments_poly_, segments_actor_);
  vtkNew<vtkAxesActor> axes;
  double len[3];
  axes_->GetTotalLength(len);
  axes->SetTotalLength(len);
  axes->SetAxisLabels(false);
  axes->SetVisibility(axes_->GetVisibility());
  ren->AddActor(axes);
  vtkNew<vtkPolyDataMapper> box_mapper;
  vtkNew<vtkActor> box;
  box_mapper->SetInputConnection(box_source_->GetOutputPort());
  box->SetMapper(box_mapper);
  box->GetProperty()->DeepCopy(box_actor_->GetProperty());
  box->SetVisibility(box_actor_->GetVisibility());
  ren->AddActor(box);
  vtkNew<vtkCamera> cam;
  cam->DeepCopy(renderer_->GetActiveCamera());
  ren->SetActiveCamera(cam);
  vtkNew<vtkRenderWindow> off;
  off->SetOffScreenRendering(1);
  off->SetMultiSamples(0);
  off->AddRenderer(ren);
  off->SetSize(width, height);
  ren->ResetCameraClippingRange();
  off->Render();
  vtkNew<vtkWindowToImageFilter> grab;
  grab->SetInput(off);
  grab->SetInputBufferTypeToRGB();
  grab->ReadFrontBufferOff();
  grab->Update();
  vtkImageData* img = grab->GetOutput();
  int dims[3];
  img->GetDimensions(dims);
  QImage out(dims[0], dims[1], QImage::Format_RGB888);
  const auto* src = static_cast<const unsigned char*>(img->GetScalarPointer());
  for (int y = 0; y < dims[1]; ++y)  // VTK's rows go bottom-up
    std::memcpy(out.scanLine(dims[1] - 1 - y), src + std::size_t(y) * dims[0] * 3,
                std::size_t(dims[0]) * 3);
  off->Finalize();
  return out;
}

}  // namespace cumulus::ui
