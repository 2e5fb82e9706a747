#include "vtk_cloud_view.h"

#include "object_boxes.h"

#include <QElapsedTimer>
#include <QException>
#include <QFutureWatcher>
#include <QMouseEvent>
#include <QOpenGLContext>
#include <QOpenGLFunctions>
#include <QTimer>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrentRun>

#include <vtkActor.h>
#include <vtkAxesActor.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkGenericRenderWindowInteractor.h>
#include <vtkIdTypeArray.h>
#include <vtkInteractorStyleTrackballCamera.h>
#include <vtkMatrix4x4.h>
#include <vtkOutlineSource.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderWindow.h>
#include <vtkRenderer.h>

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

  points_->setPointSize(float(point_size_));
  points_->setChunkReady([this] { update(); });
  points_->VisibilityOff();
  renderer_->AddViewProp(points_);
  wheel_rest_ = new QTimer(this);
  wheel_rest_->setSingleShot(true);
  wheel_rest_->setInterval(250);
  connect(wheel_rest_, &QTimer::timeout, this, [this] { setInteracting(false); });

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
  ++generation_;
  picked_ = -1;
  pick_actor_->VisibilityOff();
  box_actor_->VisibilityOff();
  boxes_actor_->VisibilityOff();
  segments_actor_->VisibilityOff();
  pending_colours_.clear();
  if (!cloud_ || cloud_->empty()) {
    clearCloud();
    return;
  }
  const Preparer prepare_data = preparer_ ? preparer_ : &VtkCloudView::prepare;
  if (cloud_->size() <= kPreparedInline) {
    preparing_ = false;  // a large cloud still being prepared is superseded
    std::shared_ptr<CloudDrawData> data;
    try {
      data = prepare_data(cloud_, mode_);
    } catch (const std::exception& e) {
      return failed(e.what());
    }
    install(std::move(data), reset_camera);
    return;
  }
  // A large cloud's bounds and colours take a while: worked out off the UI thread, the view
  // empty meanwhile (a later setCloud supersedes this one).
  draw_.reset();
  points_->setData(nullptr);
  points_->VisibilityOff();
  preparing_ = true;
  const std::uint64_t generation = generation_;
  auto* watcher = new QFutureWatcher<std::shared_ptr<CloudDrawData>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation, reset_camera] {
    watcher->deleteLater();
    if (generation != generation_) return;
    preparing_ = false;
    std::shared_ptr<CloudDrawData> data;
    try {
      try {
        data = watcher->result();
      } catch (const QUnhandledException& wrapped) {  // how Qt passes on a std::exception
        if (wrapped.exception()) std::rethrow_exception(wrapped.exception());
        throw;
      }
    } catch (const std::exception& e) {
      return failed(e.what());
    }
    install(std::move(data), reset_camera);
  });
  watcher->setFuture(QtConcurrent::run(prepare_data, cloud_, mode_));
  update();
}

namespace {

// Height and intensity as a rule (no colour a point held), RGB and labels one a point.
std::shared_ptr<const CloudColouring> colouring_for(const PointCloud& cloud, ColorMode mode) {
  auto c = std::make_shared<CloudColouring>();
  c->mode = mode;
  c->rule = scalar_colouring(cloud, mode);
  if (!c->rule) c->colours = cloud_colors(cloud, mode);
  return c;
}

}  // namespace

std::shared_ptr<CloudDrawData> VtkCloudView::prepare(std::shared_ptr<const PointCloud> cloud,
                                                     ColorMode mode) {
  auto data = make_draw_data(cloud);
  data->colouring = colouring_for(*cloud, mode);
  return data;
}

void VtkCloudView::install(std::shared_ptr<CloudDrawData> data, bool reset_camera) {
  draw_ = std::move(data);
  arrived_ = 0;
  if (!pending_colours_.empty()) {
    auto given = std::make_shared<CloudColouring>();
    given->colours = std::move(pending_colours_);
    pending_colours_.clear();
    draw_->colouring = std::move(given);
    ++draw_->colours_version;
  } else if (draw_->colouring->mode != mode_) {
    applyMode();  // the mode changed while the cloud was being prepared
  }
  points_->setData(draw_);
  points_->VisibilityOn();
  updateAxesScale();
  if (reset_camera) resetCamera();
  emit cloudShown();
  update();
}

void VtkCloudView::failed(const char* reason) {
  draw_.reset();
  points_->setData(nullptr);
  points_->VisibilityOff();
  update();
  emit cloudFailed(QString::fromUtf8(reason));
}

void VtkCloudView::setPreparer(Preparer preparer) {
  preparer_ = std::move(preparer);
}

void VtkCloudView::clearCloud() {
  cloud_.reset();
  ++generation_;
  preparing_ = false;
  draw_.reset();
  pending_colours_.clear();
  points_->setData(nullptr);
  picked_ = -1;
  box_actor_->VisibilityOff();
  boxes_actor_->VisibilityOff();
  segments_actor_->VisibilityOff();
  points_->VisibilityOff();
  pick_actor_->VisibilityOff();
  update();
}

void VtkCloudView::setColorMode(ColorMode mode) {
  mode_ = mode;
  pending_colours_.clear();
  if (!cloud_ || preparing_) return;  // a cloud being prepared is coloured in the new mode
  applyMode();
}

void VtkCloudView::applyMode() {
  if (!draw_) return;
  draw_->colouring = colouring_for(*cloud_, mode_);
  ++draw_->colours_version;
  update();
}

void VtkCloudView::setColors(const std::vector<Rgb8>& colors) {
  if (!cloud_ || colors.size() != cloud_->size()) return;
  if (preparing_) {
    pending_colours_ = colors;
    return;
  }
  if (!draw_) return;
  auto given = std::make_shared<CloudColouring>();
  given->colours = colors;
  given->mode = mode_;
  draw_->colouring = std::move(given);
  ++draw_->colours_version;
  update();
}

const double* VtkCloudView::cloudBounds() const {
  if (!draw_ || !points_->GetVisibility() || draw_->bounds[0] > draw_->bounds[1]) return nullptr;
  return draw_->bounds.data();
}

std::size_t VtkCloudView::drawnPoints() const {
  return points_->GetVisibility() ? points_->shownPoints() : 0;
}

void VtkCloudView::setFrameTargets(double moving_ms, double resting_ms) {
  move_target_ms_ = std::max(moving_ms, 1.0);
  rest_target_ms_ = std::max(resting_ms, 1.0);
}

void VtkCloudView::setInteracting(bool on) {
  if (interacting_ == on) return;
  interacting_ = on;
  if (!on) update();  // the resting frame, at its larger budget
}

void VtkCloudView::paintGL() {
  // A small cloud's new colours go up before the frame decides what it is: it is then a frame
  // at rest showing them, not a moving frame that shows none.
  if (vtkReady() && points_->GetVisibility()) points_->recolourNow();
  // While points are still arriving, frames keep to the moving budget: each also copies a page.
  const bool moving = interacting_ || points_->uploading();
  double& budget = moving ? move_budget_ : rest_budget_;
  const double target = moving ? move_target_ms_ : rest_target_ms_;
  const std::size_t limit = std::size_t(budget);
  points_->setDrawLimit(limit);
  // The budget comes from the frames before; a frame whose points suddenly cost several times as
  // much (a software renderer whose cores something else took) stops at about twice its target.
  points_->setDrawTimeLimit(2 * target);
  // At rest each frame adds its budget to the image of the frames before it.
  points_->setAccumulate(!moving);
  frame_clock_.start();
  VtkGlWidget::paintGL();
  // The frame's real cost: a software renderer (and a GPU's queue) may still be drawing.
  context()->functions()->glFinish();
  last_frame_ms_ = currentFrameMs();
  // The next frame's budget: the points this frame's time allowed at its target.
  // A frame costs a fixed part (clearing, the blit) and a part a point, so the budget moves by
  // a bounded factor a frame towards where the time would meet the target (growing slowly: a
  // frame over its target holds the UI thread longer than one under it saves); a frame
  // limited by the uploads or by what is left on screen says nothing about a larger budget.
  const std::size_t drawn = points_->drawnLastFrame(), n = draw_ ? draw_->size() : 0;
  if (drawn > 0 && last_frame_ms_ > 0 && (drawn >= limit || last_frame_ms_ > target)) {
    budget = std::clamp(budget * std::clamp(target / last_frame_ms_, 0.5, 1.25), 5e4, 1e12);
  }
  if (draw_ && points_->uploaded() != arrived_) {
    arrived_ = points_->uploaded();
    emit pointsArriving(arrived_, n);
  }
  // Draw again when the last page just arrived (a resting frame at the resting budget), or at
  // rest until the image shows every point on screen; arriving pages ask for frames themselves.
  // A frame a turn of the event loop: input between them is handled as it comes.
  const bool upload_done = moving && !interacting_ && !points_->uploading();
  if (upload_done || (!moving && points_->GetVisibility() && !points_->complete()))
    QTimer::singleShot(0, this, qOverload<>(&QWidget::update));
}

void VtkCloudView::setPointSize(double size) {
  point_size_ = std::clamp(size, 1.0, 20.0);
  points_->setPointSize(float(point_size_));
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
  const double* b = cloudBounds();
  if (!b) return;
  const double diag = std::sqrt((b[1] - b[0]) * (b[1] - b[0]) + (b[3] - b[2]) * (b[3] - b[2]) +
                                (b[5] - b[4]) * (b[5] - b[4]));
  const double len = diag > 0 ? diag * 0.08 : 1.0;
  axes_->SetTotalLength(len, len, len);
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

void VtkCloudView::mousePressEvent(QMouseEvent* e) {
  press_pos_ = e->position().toPoint();
  setInteracting(true);
  VtkGlWidget::mousePressEvent(e);
}

void VtkCloudView::wheelEvent(QWheelEvent* e) {
  setInteracting(true);
  wheel_rest_->start();
  VtkGlWidget::wheelEvent(e);
}

void VtkCloudView::mouseReleaseEvent(QMouseEvent* e) {
  VtkGlWidget::mouseReleaseEvent(e);
  if (e->buttons() == Qt::NoButton) setInteracting(false);
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
