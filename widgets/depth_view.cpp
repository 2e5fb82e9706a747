#include "depth_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>

#include <algorithm>
#include <cmath>

#include "colormap.h"
#include "segment_lines.h"

namespace cumulus::ui {

DepthView::DepthView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setAutoFillBackground(false);
  setMinimumSize(200, 100);
}

void DepthView::setImage(std::shared_ptr<const DepthImage> image) {
  image_ = std::move(image);
  if (image_) {
    std::tie(lo_, hi_) = image_->valid_range();
    rendered_ = depth_to_image(*image_, lo_, hi_);
  } else {
    rendered_ = {};
  }
  fitToWindow();
}

void DepthView::setSegments(std::shared_ptr<const SegmentResult> segments) {
  segments_ = std::move(segments);
  update();
}

void DepthView::setMarkedColumns(std::vector<std::uint32_t> columns) {
  marked_ = std::move(columns);
  update();
}

void DepthView::setInspectedColumn(int column) {
  inspected_ = column;
  update();
}

void DepthView::fitToWindow() {
  fitted_ = true;
  if (rendered_.isNull()) return update();
  const double sx = double(width() - 70) / rendered_.width(),
               sy = double(height()) / rendered_.height();
  zoom_ = std::clamp(std::min(sx, sy), 0.05, 64.0);
  offset_ = {(width() - 70 - rendered_.width() * zoom_) / 2,
             (height() - rendered_.height() * zoom_) / 2};
  update();
}

void DepthView::setZoom(double zoom, QPointF anchor) {
  zoom = std::clamp(zoom, 0.05, 64.0);
  // Keep the image point under the anchor fixed.
  const QPointF img = (anchor - offset_) / zoom_;
  zoom_ = zoom;
  offset_ = anchor - img * zoom_;
  fitted_ = false;
  update();
}

bool DepthView::imagePixelAt(QPointF pos, int* col, int* row) const {
  if (!image_) return false;
  const QPointF p = (pos - offset_) / zoom_;
  const int c = int(std::floor(p.x())), r = int(std::floor(p.y()));
  if (c < 0 || r < 0 || c >= int(image_->width) || r >= int(image_->height)) return false;
  *col = c;
  *row = r;
  return true;
}

void DepthView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(24, 26, 30));
  if (rendered_.isNull()) {
    p.setPen(Qt::lightGray);
    p.drawText(rect(), Qt::AlignCenter, tr("No depth image"));
    return;
  }
  p.setRenderHint(QPainter::SmoothPixmapTransform, zoom_ < 1.0);
  p.drawImage(QRectF(offset_, QSizeF(rendered_.width() * zoom_, rendered_.height() * zoom_)),
              rendered_);
  // Segment polylines: x is the column centre plus the depth's offset within the column's
  // width, so each column's piecewise-linear fit is visible; every n-th column when zoomed out.
  if (segments_ && image_ && segments_->width == image_->width &&
      segments_->height == image_->height) {
    const int step = std::max(1, int(std::ceil(4.0 / zoom_)));
    const auto [lo, hi] = image_->valid_range();
    const float span = hi > lo ? hi - lo : 1.0f;
    p.setRenderHint(QPainter::Antialiasing, zoom_ >= 2);
    for (std::uint32_t c = 0; c < segments_->width; ++c) {
      if (int(c) % step != 0 && int(c) != inspected_) continue;
      const double x0 = offset_.x() + (c + 0.5) * zoom_;
      const double wide = step * zoom_ * 0.8;
      const auto at = [&](std::uint32_t row) {
        return QPointF(x0 + ((image_->at(row, c) - lo) / span - 0.5) * wide,
                       offset_.y() + (row + 0.5) * zoom_);
      };
      for_each_drawn_segment(
          *image_, *segments_, c, [&](std::uint32_t a, std::uint32_t b, Rgb8 col) {
            p.setPen(
                QPen(int(c) == inspected_ ? QColor(255, 255, 255) : QColor(col.r, col.g, col.b),
                     int(c) == inspected_ ? 2 : 1));
            p.drawLine(at(a), at(b));
          });
    }
    p.setRenderHint(QPainter::Antialiasing, false);
  }
  if (image_)
    for (auto c : marked_)
      p.fillRect(QRectF(offset_.x() + c * zoom_, offset_.y(), std::max(1.0, zoom_),
                        image_->height * zoom_),
                 QColor(255, 0, 0, 110));
  // Colour bar with its depth range, on the right.
  const int bar_x = width() - 60, bar_top = 20, bar_h = std::max(40, height() - 40);
  for (int y = 0; y < bar_h; ++y) {
    const Rgb8 c = turbo(1.0 - double(y) / (bar_h - 1));
    p.setPen(QColor(c.r, c.g, c.b));
    p.drawLine(bar_x, bar_top + y, bar_x + 14, bar_top + y);
  }
  p.setPen(Qt::white);
  p.drawText(QPoint(bar_x - 2, bar_top - 6), QString::number(hi_, 'f', 2) + " m");
  p.drawText(QPoint(bar_x - 2, bar_top + bar_h + 14), QString::number(lo_, 'f', 2) + " m");
}

void DepthView::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  setZoom(zoom_ * std::pow(1.25, steps), e->position());
}

void DepthView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton && e->button() != Qt::MiddleButton) return;
  dragging_ = true;
  press_at_ = e->position();
  drag_start_ = e->position();
  offset_at_drag_ = offset_;
  setCursor(Qt::ClosedHandCursor);
}

void DepthView::mouseMoveEvent(QMouseEvent* e) {
  if (dragging_) {
    offset_ = offset_at_drag_ + (e->position() - drag_start_);
    fitted_ = false;
    update();
  }
  int c = -1, r = -1;
  if (imagePixelAt(e->position(), &c, &r))
    emit hovered(c, r, image_->at(std::uint32_t(r), std::uint32_t(c)));
  else
    emit hovered(-1, -1, 0);
}

void DepthView::mouseReleaseEvent(QMouseEvent* e) {
  dragging_ = false;
  unsetCursor();
  // A click without a drag picks the column for the inspector.
  int col = -1, row = -1;
  if ((e->position() - press_at_).manhattanLength() <= 3 &&
      imagePixelAt(e->position(), &col, &row)) {
    emit columnClicked(col);
  }
}

void DepthView::mouseDoubleClickEvent(QMouseEvent*) {
  fitToWindow();
}

void DepthView::resizeEvent(QResizeEvent*) {
  if (fitted_) fitToWindow();
}

}  // namespace cumulus::ui
