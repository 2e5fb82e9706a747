#include "vtk_cloud_view.h"

#include "object_boxes.h"

#include <QMouseEvent>

#include <vtkActor.h>
#include <vtkAxesActor.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkIdTypeArray.h>
#include <vtkInteractorStyleTrackballCamera.h>
#include <vtkOutlineSource.h>
#include <vtkPointData.h>
#include <vtkPointPicker.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>
#include <vtkUnsignedCharArray.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cumulus::ui {

namespace {

// One vertex cell per point, built directly as offsets + connectivity (fast for 10^5..10^6).
vtkSmartPointer<vtkCellArray> vertex_cells(vtkIdType n) {
  vtkNew<vtkIdTypeArray> offsets, conn;
  offsets->SetNumberOfValues(n + 1);
  conn->SetNumberOfValues(n);
  for (vtkIdType i = 0; i < n; ++i) {
    offsets->SetValue(i, i);
    conn->SetValue(i, i);
  }
  offsets->SetValue(n, n);
  auto cells = vtkSmartPointer<vtkCellArray>::New();
  cells->SetData(offsets, conn);
  return cells;
}

}  // namespace

VtkCloudView::VtkCloudView(QWidget* parent) : VtkGlWidget(parent) {
  setFocusPolicy(Qt::StrongFocus);
  setMinimumSize(200, 150);
  renderWindow()->AddRenderer(renderer_);
  vtkNew<vtkInteractorStyleTrackballCamera> style;
  interactor()->SetInteractorStyle(style);

  renderer_->SetBackground(0.09, 0.10, 0.12);
  renderer_->SetBackground2(0.20, 0.22, 0.26);
  renderer_->GradientBackgroundOn();

  colors_->SetNumberOfComponents(3);
  colors_->SetName("colors");
  mapper_->SetInputData(poly_);
  mapper_->SetColorModeToDirectScalars();
  mapper_->ScalarVisibilityOn();
  actor_->SetMapper(mapper_);
  actor_->GetProperty()->SetPointSize(float(point_size_));
  actor_->VisibilityOff();
  renderer_->AddActor(actor_);

  vtkNew<vtkPolyDataMapper> pick_mapper;
  pick_mapper->SetInputData(pick_poly_);
  pick_actor_->SetMapper(pick_mapper);
  pick_actor_->GetProperty()->SetColor(1.0, 0.95, 0.1);
  pick_actor_->GetProperty()->SetPointSize(12);
  pick_actor_->GetProperty()->SetRenderPointsAsSpheres(true);
  pick_actor_->VisibilityOff();
  renderer_->AddActor(pick_actor_);

  vtkNew<vtkPolyDataMapper> box_mapper;
  box_mapper->SetInputConnection(box_source_->GetOutputPort());
  box_actor_->SetMapper(box_mapper);
  box_actor_->GetProperty()->SetColor(1.0, 0.85, 0.2);
  box_actor_->GetProperty()->SetLineWidth(2);
  box_actor_->VisibilityOff();
  renderer_->AddActor(box_actor_);

  vtkNew<vtkPolyDataMapper> boxes_mapper;
  boxes_mapper->SetInputData(boxes_poly_);
  boxes_mapper->SetColorModeToDirectScalars();
  boxes_actor_->SetMapper(boxes_mapper);
  boxes_actor_->GetProperty()->SetLineWidth(1.5);
  boxes_actor_->VisibilityOff();
  renderer_->AddActor(boxes_actor_);

  vtkNew<vtkPolyDataMapper> path_mapper;
  path_mapper->SetInputData(path_poly_);
  path_mapper->SetColorModeToDirectScalars();
  path_actor_->SetMapper(path_mapper);
  path_actor_->GetProperty()->SetLineWidth(3);
  path_actor_->VisibilityOff();
  renderer_->AddActor(path_actor_);

  vtkNew<vtkPolyDataMapper> segments_mapper;
  segments_mapper->SetInputData(segments_poly_);
  segments_mapper->SetColorModeToDirectScalars();
  segments_actor_->SetMapper(segments_mapper);
  segments_actor_->GetProperty()->SetLineWidth(1);
  segments_actor_->VisibilityOff();
  renderer_->AddActor(segments_actor_);

  axes_->SetVisibility(true);
  axes_->SetAxisLabels(false);  // captions scale with the scene and swamp small clouds
  renderer_->AddActor(axes_);
}

VtkCloudView::~VtkCloudView() = default;

void VtkCloudView::interactorRendered() {
  update();
  emit cameraMoved();
}

void VtkCloudView::shareCameraWith(VtkCloudView* other) {
  if (!other || other == this) return;
  other->renderer_->SetActiveCamera(renderer_->GetActiveCamera());
  connect(this, &VtkCloudView::cameraMoved, other, qOverload<>(&QWidget::update));
  connect(other, &VtkCloudView::cameraMoved, this, qOverload<>(&QWidget::update));
}

void VtkCloudView::setCloud(std::shared_ptr<const PointCloud> cloud, bool reset_camera) {
  cloud_ = std::move(cloud);
  picked_ = -1;
  pick_actor_->VisibilityOff();
  box_actor_->VisibilityOff();
  boxes_actor_->VisibilityOff();
  segments_actor_->VisibilityOff();
  if (!cloud_ || cloud_->empty()) {
    clearCloud();
    return;
  }
  const vtkIdType n = vtkIdType(cloud_->size());
  vtkNew<vtkPoints> pts;
  pts->SetDataTypeToFloat();
  pts->SetNumberOfPoints(n);
  // Non-finite points (holes of organized clouds) go to the first finite point so VTK's bounds
  // stay finite; their colour is irrelevant because they coincide with a real point.
  cumulus::Point3f fallback{0, 0, 0};
  for (const auto& p : cloud_->points)
    if (std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z)) {
      fallback = p;
      break;
    }
  for (vtkIdType i = 0; i < n; ++i) {
    auto p = cloud_->points[std::size_t(i)];
    if (!(std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z))) p = fallback;
    pts->SetPoint(i, p.x, p.y, p.z);
  }
  poly_->Initialize();
  poly_->SetPoints(pts);
  poly_->SetVerts(vertex_cells(n));
  poly_->GetPointData()->SetScalars(colors_);
  setColorMode(mode_);
  actor_->VisibilityOn();
  updateAxesScale();
  if (reset_camera) resetCamera();
  update();
}

void VtkCloudView::clearCloud() {
  cloud_.reset();
  picked_ = -1;
  box_actor_->VisibilityOff();
  boxes_actor_->VisibilityOff();
  segments_actor_->VisibilityOff();
  actor_->VisibilityOff();
  pick_actor_->VisibilityOff();
  update();
}

void VtkCloudView::setColorMode(ColorMode mode) {
  mode_ = mode;
  if (!cloud_) return;
  setColors(cloud_colors(*cloud_, mode));
}

void VtkCloudView::setColors(const std::vector<Rgb8>& colors) {
  if (!cloud_ || colors.size() != cloud_->size()) return;
  colors_->SetNumberOfTuples(vtkIdType(colors.size()));
  auto* dst = colors_->GetPointer(0);
  for (std::size_t i = 0; i < colors.size(); ++i) {
    dst[3 * i] = colors[i].r;
    dst[3 * i + 1] = colors[i].g;
    dst[3 * i + 2] = colors[i].b;
  }
  colors_->Modified();
  poly_->Modified();
  update();
}

void VtkCloudView::setPointSize(double size) {
  point_size_ = std::clamp(size, 1.0, 20.0);
  actor_->GetProperty()->SetPointSize(float(point_size_));
  update();
}

void VtkCloudView::setOrthographic(bool on) {
  renderer_->GetActiveCamera()->SetParallelProjection(on);
  if (on) resetCamera();
  update();
}

bool VtkCloudView::orthographic() const {
  return renderer_->GetActiveCamera()->GetParallelProjection() != 0;
}

void VtkCloudView::setAxesVisible(bool on) {
  axes_->SetVisibility(on);
  update();
}

bool VtkCloudView::axesVisible() const {
  return axes_->GetVisibility() != 0;
}

void VtkCloudView::updateAxesScale() {
  double b[6];
  poly_->GetBounds(b);
  const double diag = std::sqrt((b[1] - b[0]) * (b[1] - b[0]) + (b[3] - b[2]) * (b[3] - b[2]) +
                                (b[5] - b[4]) * (b[5] - b[4]));
  const double len = diag > 0 ? diag * 0.08 : 1.0;
  axes_->SetTotalLength(len, len, len);
}

std::optional<qint64> VtkCloudView::pickAt(QPoint pos) {
  if (!cloud_ || !actor_->GetVisibility() || !vtkReady()) return std::nullopt;
  const double dpr = devicePixelRatioF();
  vtkNew<vtkPointPicker> picker;
  picker->SetTolerance(0.005);
  picker->PickFromListOn();
  picker->AddPickList(actor_);
  const int y = renderWindow()->GetSize()[1] - 1 - int(pos.y() * dpr);
  std::optional<qint64> result;
  if (picker->Pick(pos.x() * dpr, y, 0, renderer_) && picker->GetPointId() >= 0)
    result = qint64(picker->GetPointId());
  return result;
}

void VtkCloudView::setPickedPoint(qint64 index) {
  picked_ = index;
  if (!cloud_ || index < 0 || index >= qint64(cloud_->size())) {
    picked_ = -1;
    pick_actor_->VisibilityOff();
    update();
    return;
  }
  const auto& p = cloud_->points[std::size_t(index)];
  vtkNew<vtkPoints> pts;
  pts->InsertNextPoint(p.x, p.y, p.z);
  pick_poly_->Initialize();
  pick_poly_->SetPoints(pts);
  pick_poly_->SetVerts(vertex_cells(1));
  pick_actor_->VisibilityOn();
  update();
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

void VtkCloudView::mousePressEvent(QMouseEvent* e) {
  press_pos_ = e->position().toPoint();
  VtkGlWidget::mousePressEvent(e);
}

void VtkCloudView::mouseReleaseEvent(QMouseEvent* e) {
  VtkGlWidget::mouseReleaseEvent(e);
  // A left click without a drag picks; a drag rotated the camera.
  if (e->button() == Qt::LeftButton &&
      (e->position().toPoint() - press_pos_).manhattanLength() <= 3) {
    if (auto index = pickAt(e->position().toPoint())) {
      setPickedPoint(*index);
      emit pointPicked(*index);
    }
  }
}

void VtkCloudView::mouseDoubleClickEvent(QMouseEvent*) {
  resetCamera();
}

}  // namespace cumulus::ui
