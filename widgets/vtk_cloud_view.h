#pragma once
// The 3D view: the cloud, its picks, boxes, paths and segments, drawn by VTK in a VtkGlWidget.
#include <QPoint>

#include <array>

#include <memory>
#include <optional>
#include <vector>

#include <vtkNew.h>
#include <vtkSmartPointer.h>

#include "colormap.h"
#include "core/point_cloud.h"
#include "vtk_gl_widget.h"

class vtkActor;
class vtkAxesActor;
class vtkOutlineSource;
class vtkPolyData;
class vtkPolyDataMapper;
class vtkRenderer;
class vtkUnsignedCharArray;

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

  void setCloud(std::shared_ptr<const PointCloud> cloud, bool reset_camera = true);
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

  // Renders the current scene with the current camera at any resolution, off screen.
  QImage renderImage(int width, int height);

 signals:
  void pointPicked(qint64 index);
  void cameraMoved();

 protected:
  void interactorRendered() override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;

 private:
  void updateAxesScale();

  vtkNew<vtkRenderer> renderer_;
  vtkNew<vtkPolyData> poly_;
  vtkNew<vtkUnsignedCharArray> colors_;
  vtkNew<vtkPolyDataMapper> mapper_;
  vtkNew<vtkActor> actor_;
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
