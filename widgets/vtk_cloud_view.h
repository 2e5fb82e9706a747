#pragma once
// The 3D view: the cloud, its picks, boxes, paths and segments, drawn by VTK in a VtkGlWidget.
#include <QElapsedTimer>
#include <QPoint>

#include <array>
#include <functional>

#include <memory>
#include <optional>
#include <vector>

#include <vtkNew.h>
#include <vtkSmartPointer.h>

#include "cloud_prop.h"
#include "colormap.h"
#include "core/point_cloud.h"
#include "vtk_gl_widget.h"

class vtkActor;
class vtkAxesActor;
class vtkOutlineSource;
class vtkPolyData;
class vtkPolyDataMapper;
class QTimer;
class vtkRenderer;

namespace cumulus::ui {

using BoxCorners = std::array<std::array<double, 3>, 8>;
struct LineSegment {
  std::array<double, 3> from, to;
  Rgb8 colour;
};

class VtkCloudView : public VtkGlWidget {
  Q_OBJECT

 public:
  explicit VtkCloudView(QWidget* parent = nullptr);
  ~VtkCloudView() override;

  // Shows `cloud`. Up to half a million points at once; a larger cloud's bounds, colours and
  // spatial index are prepared off the UI thread and it appears when they are ready
  // (cloudShown(), preparing()). A cloud that cannot be prepared (too large for the index, out
  // of memory) is not shown and cloudFailed() says why; the cloud itself is left as it was.
  void setCloud(std::shared_ptr<const PointCloud> cloud, bool reset_camera = true);
  bool preparing() const { return preparing_; }
  void clearCloud();
  std::shared_ptr<const PointCloud> cloud() const { return cloud_; }

  void setColorMode(ColorMode mode);
  ColorMode colorMode() const { return mode_; }
  // Replaces the colours of the current cloud (one per point), e.g. for highlights.
  void setColors(const std::vector<Rgb8>& colors);
  void setPointSize(double size);
  double pointSize() const { return point_size_; }
  void setOrthographic(bool on);
  bool orthographic() const;
  void setAxesVisible(bool on);
  bool axesVisible() const;
  // Looks at the whole cloud from behind and above, z up, as large as the view allows.
  void resetCamera();
  // Where the camera is, for sessions: restoring it gives the same view.
  struct CameraState {
    std::array<double, 3> position{}, focal_point{}, view_up{};
    double view_angle = 30, parallel_scale = 1;
    bool parallel = false;
  };
  CameraState cameraState() const;
  void setCameraState(const CameraState& state);
  // How far the cloud's bounding box reaches in the view: the largest |x| or |y| of its eight
  // corners in normalised view coordinates (1 is the view's edge); 0 without a cloud.
  double boundsExtentInView() const;

  // Point under a widget position (device-independent pixels), if any.
  std::optional<qint64> pickAt(QPoint pos);
  // Marks a point with a larger yellow dot; -1 clears the mark.
  void setPickedPoint(qint64 index);
  qint64 pickedPoint() const { return picked_; }

  // A wireframe box (local coordinates, xmin xmax ymin ymax zmin zmax), e.g. around a selected
  // cluster; nullptr hides it.
  void setBox(const double* bounds);
  bool boxVisible() const;

  // Wireframe boxes, e.g. around detected objects (local coordinates, eight corners each,
  // bottom face first); `highlighted` (an index, or -1) is drawn yellow, the others green.
  // An empty list hides them; a new cloud clears them.
  void setObjectBoxes(const std::vector<BoxCorners>& boxes, int highlighted = -1);
  std::size_t objectBoxCount() const;
  // A path (local coordinates), e.g. a sensor's trajectory; empty hides it. It stays when the
  // cloud changes (a sequence's frames), unlike the boxes.
  void setPath(const std::vector<std::array<double, 3>>& points, int marked = -1);
  std::size_t pathPointCount() const;
  // Separate line segments (local coordinates), each its own colour, e.g. the pairs of a
  // registration; empty hides them; a new cloud clears them.
  void setSegments(const std::vector<LineSegment>& segments);
  std::size_t segmentCount() const;

  // Both views look through one camera from now on (split views); each repaints when the
  // other moves it.
  void shareCameraWith(VtkCloudView* other);

  // Renders the current scene with the current camera at any resolution, off screen, every
  // point drawn.
  QImage renderImage(int width, int height);

  // Level of detail: the points the view shows (drawn by the last frame and, at rest, by the
  // frames before it that it adds to), whether they are every point on screen (full detail), the
  // last frame's time, and whether the camera is being moved.
  std::size_t drawnPoints() const;
  bool fullDetail() const { return points_->GetVisibility() && points_->complete(); }
  double lastFrameMs() const { return last_frame_ms_; }
  // Milliseconds since the frame being drawn began (read from a `rendered` handler: that frame's
  // own time up to the point VTK finished it).
  double currentFrameMs() const { return double(frame_clock_.nsecsElapsed()) * 1e-6; }
  bool interacting() const { return interacting_; }
  // Points are still being moved into the GPU's buffers (a share each frame).
  bool uploading() const { return points_->GetVisibility() && points_->uploading(); }
  // The pages were gathered beside the frames at idle priority until every core was found busy
  // with other work; then at normal priority.
  bool uploadStarved() const { return points_->gathersStarved(); }
  // Frame-time targets the point budgets follow: moving and at rest (default 30 ms each: resting
  // frames follow each other until full detail, a software renderer's frame times vary by half,
  // and composing the window adds 17-25 ms; at 40 ms the longest stalls at rest reached 102-112
  // ms with 100M points on two cores, at 30 ms 74-89).
  void setFrameTargets(double moving_ms, double resting_ms);
  // What prepares a cloud's draw data (default: the spatial index and colours); tests give one
  // that fails.
  using Preparer =
      std::function<std::shared_ptr<CloudDrawData>(std::shared_ptr<const PointCloud>, ColorMode)>;
  void setPreparer(Preparer preparer);

 signals:
  void pointPicked(qint64 index);
  void cameraMoved();
  void cloudShown();
  void cloudFailed(const QString& reason);
  // While a cloud's points move into the GPU's buffers: how many are there, of how many.
  void pointsArriving(qulonglong arrived, qulonglong total);

 protected:
  void interactorRendered() override;
  void paintGL() override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void wheelEvent(QWheelEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;

 private:
  void updateAxesScale();
  // The cloud's bounds (finite points), or null without a cloud.
  const double* cloudBounds() const;
  void setInteracting(bool on);
  // The draw data of `cloud` coloured by `mode` (any thread).
  static std::shared_ptr<CloudDrawData> prepare(std::shared_ptr<const PointCloud> cloud,
                                                ColorMode mode);
  void failed(const char* reason);
  void install(std::shared_ptr<CloudDrawData> data, bool reset_camera);
  void applyMode();
  static constexpr std::size_t kPreparedInline = 500'000;

  vtkNew<vtkRenderer> renderer_;
  vtkNew<CloudProp> points_;
  std::shared_ptr<CloudDrawData> draw_;
  std::vector<Rgb8> pending_colours_;  // colours given while a large cloud is being prepared
  Preparer preparer_;
  std::uint64_t generation_ = 0;  // which setCloud a preparation belongs to
  bool preparing_ = false;
  std::size_t arrived_ = 0;  // points in the GPU's buffers at the last pointsArriving
  // Points a frame, adapted to the frame times; small to start with, as a frame over its time
  // holds the UI thread (a GPU reaches all points within a few dozen frames).
  double move_budget_ = 5e4, rest_budget_ = 5e4;
  double move_target_ms_ = 30, rest_target_ms_ = 30, last_frame_ms_ = 0;
  QElapsedTimer frame_clock_;
  bool interacting_ = false;
  QTimer* wheel_rest_ = nullptr;  // the camera rests a moment after the last wheel step
  vtkNew<vtkAxesActor> axes_;
  vtkNew<vtkOutlineSource> box_source_;
  vtkNew<vtkActor> box_actor_;
  vtkNew<vtkPolyData> path_poly_;
  vtkNew<vtkActor> path_actor_;
  vtkNew<vtkPolyData> segments_poly_;
  vtkNew<vtkActor> segments_actor_;
  vtkNew<vtkPolyData> boxes_poly_;
  vtkNew<vtkActor> boxes_actor_;
  vtkNew<vtkPolyData> pick_poly_;
  vtkNew<vtkActor> pick_actor_;
  std::shared_ptr<const PointCloud> cloud_;
  ColorMode mode_ = ColorMode::Height;
  double point_size_ = 2.0;
  qint64 picked_ = -1;
  QPoint press_pos_;
};

}  // namespace cumulus::ui
