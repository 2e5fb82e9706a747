#pragma once
// A colour-mapped depth image with zoom (wheel, about the cursor) and pan (drag). Reports the
// pixel and its depth in metres under the cursor.
#include <QImage>
#include <QPointF>
#include <QWidget>

#include <memory>

#include "core/depth_image.h"
#include "segment/segment.h"

namespace cumulus::ui {

class DepthView : public QWidget {
  Q_OBJECT

 public:
  explicit DepthView(QWidget* parent = nullptr);
  void setImage(std::shared_ptr<const DepthImage> image);
  // Polylines of an RDP segmentation over the image (nullptr removes them).
  void setSegments(std::shared_ptr<const SegmentResult> segments);
  // The column drawn highlighted (the one in the inspector), -1 for none.
  void setInspectedColumn(int column);
  // Columns drawn with a red band (e.g. where two methods disagree).
  void setMarkedColumns(std::vector<std::uint32_t> columns);
  std::shared_ptr<const DepthImage> image() const { return image_; }
  double zoom() const { return zoom_; }
  void setZoom(double zoom, QPointF anchor);
  void fitToWindow();
  // Widget position -> image (col, row); false outside the image.
  bool imagePixelAt(QPointF pos, int* col, int* row) const;
  QSize sizeHint() const override { return {800, 400}; }

 signals:
  // col/row = -1 when the cursor leaves the image; depth 0 for invalid pixels.
  void hovered(int col, int row, float depth_m);
  void columnClicked(int col);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  std::shared_ptr<const DepthImage> image_;
  std::shared_ptr<const SegmentResult> segments_;
  int inspected_ = -1;
  std::vector<std::uint32_t> marked_;
  QPointF press_at_;
  QImage rendered_;
  float lo_ = 0, hi_ = 1;
  double zoom_ = 1.0;
  QPointF offset_{0, 0};  // widget position of the image's top-left corner
  QPointF drag_start_;
  QPointF offset_at_drag_;
  bool dragging_ = false;
  bool fitted_ = true;
};

}  // namespace cumulus::ui
