#include "line_chart.h"

#include <QHelpEvent>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace cumulus::ui {

void LineChart::setSeries(std::vector<double> x, std::vector<double> y) {
  x_ = std::move(x);
  y_ = std::move(y);
  y_.resize(x_.size());
  update();
}

void LineChart::setLabels(const QString& x_label, const QString& y_label) {
  x_label_ = x_label;
  y_label_ = y_label;
  update();
}

void LineChart::setReference(std::optional<double> y, const QString& label) {
  reference_ = y;
  reference_label_ = label;
  update();
}

void LineChart::setEmptyText(const QString& text) {
  empty_text_ = text;
  update();
}

std::vector<double> LineChart::niceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(target, 1);
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) {
      step = m * power;
      break;
    }
  std::vector<double> ticks;
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  return ticks;
}

void LineChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  p.setRenderHint(QPainter::Antialiasing);
  if (x_.size() < 2) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, empty_text_);
    x_ticks_.clear();
    y_ticks_.clear();
    return;
  }
  const QFontMetrics fm = p.fontMetrics();
  double y_hi = *std::max_element(y_.begin(), y_.end());
  if (reference_) y_hi = std::max(y_hi, *reference_ * 1.2);
  y_ticks_ = niceTicks(0, std::max(y_hi, 1e-9), std::max(2, height() / (3 * fm.height())));
  const double y_top = std::max(y_ticks_.back(), y_hi);
  int label_w = 0;
  for (const double v : y_ticks_)
    label_w = std::max(label_w, fm.horizontalAdvance(QString::number(v, 'g', 4)));
  area_ = QRectF(label_w + fm.height() + 10, fm.height(), width() - label_w - fm.height() - 24,
                 height() - 3.5 * fm.height());
  const double x_lo = x_.front(), x_hi = std::max(x_.back(), x_lo + 1e-9);
  // As many x ticks as their widest label leaves room for.
  const int x_label_w = fm.horizontalAdvance(QString::number(x_hi, 'g', 4)) + fm.height();
  x_ticks_ = niceTicks(x_lo, x_hi, std::max(2, int(area_.width()) / std::max(x_label_w, 1)));
  const auto X = [&](double v) {
    return area_.left() + (v - x_lo) / (x_hi - x_lo) * area_.width();
  };
  const auto Y = [&](double v) { return area_.bottom() - v / y_top * area_.height(); };
  p.setPen(QColor(225, 225, 225));
  for (const double v : y_ticks_)
    p.drawLine(QPointF(area_.left(), Y(v)), QPointF(area_.right(), Y(v)));
  for (const double v : x_ticks_)
    p.drawLine(QPointF(X(v), area_.top()), QPointF(X(v), area_.bottom()));
  p.setPen(Qt::darkGray);
  p.drawRect(area_);
  for (const double v : y_ticks_)
    p.drawText(QRectF(fm.height(), Y(v) - fm.height() / 2.0, label_w + 4, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, QString::number(v, 'g', 4));
  for (const double v : x_ticks_)
    p.drawText(QRectF(X(v) - x_label_w / 2.0, area_.bottom() + 2, x_label_w, fm.height()),
               Qt::AlignHCenter, QString::number(v, 'g', 4));
  p.drawText(QRectF(area_.left(), height() - 1.3 * fm.height(), area_.width(), fm.height()),
             Qt::AlignHCenter, x_label_);
  p.save();
  p.translate(fm.height() * 0.9, area_.center().y());
  p.rotate(-90);
  p.drawText(QRectF(-area_.height() / 2, -fm.height(), area_.height(), fm.height()),
             Qt::AlignHCenter, y_label_);
  p.restore();
  if (reference_) {
    p.setPen(QPen(QColor(192, 0, 0), 1, Qt::DashLine));
    p.drawLine(QPointF(area_.left(), Y(*reference_)), QPointF(area_.right(), Y(*reference_)));
    p.drawText(
        QRectF(area_.left() + 4, Y(*reference_) - fm.height(), area_.width() - 8, fm.height()),
        Qt::AlignRight | Qt::AlignBottom, reference_label_);
  }
  QPolygonF line;
  for (std::size_t i = 0; i < x_.size(); ++i)
    line << QPointF(X(x_[i]), Y(y_[i]));
  p.setPen(QPen(QColor(68, 114, 196), 1.6));
  p.drawPolyline(line);
}

bool LineChart::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip && x_.size() >= 2 && area_.width() > 0) {
    const auto* help = static_cast<QHelpEvent*>(e);
    const double x =
        x_.front() + (help->pos().x() - area_.left()) / area_.width() * (x_.back() - x_.front());
    const auto it = std::lower_bound(x_.begin(), x_.end(), x);
    std::size_t i = std::size_t(it - x_.begin());
    if (i == x_.size() || (i > 0 && x - x_[i - 1] < x_[i] - x)) i = i > 0 ? i - 1 : 0;
    QToolTip::showText(help->globalPos(),
                       QString("%1 %2\n%3 %4")
                           .arg(x_label_)
                           .arg(x_[i], 0, 'f', 1)
                           .arg(y_label_)
                           .arg(y_[i], 0, 'f', 3),
                       this);
    return true;
  }
  return QWidget::event(e);
}

}  // namespace cumulus::ui
