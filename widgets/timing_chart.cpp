#include "timing_chart.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

#include "colormap.h"

namespace cumulus::ui {

namespace {

QColor method_color(const QString& m) {
  if (m == "cpu") return QColor(60, 60, 60);
  const Rgb8 c = label_color(int(qHash(m) % 97));
  return QColor(c.r, c.g, c.b);
}

// Log axis covering [lo, hi] with whole decades.
struct LogAxis {
  double lo, hi;
  double at(double v, double x0, double width) const {
    return x0 + (std::log10(std::max(v, 1e-6)) - lo) / (hi - lo) * width;
  }
};

LogAxis axis_for(double min_v, double max_v) {
  double lo = std::floor(std::log10(std::max(min_v, 1e-4))),
         hi = std::ceil(std::log10(std::max(max_v, 1e-4)));
  if (hi <= lo) hi = lo + 1;
  return {lo, hi};
}

void draw_decades(QPainter& p, const LogAxis& ax, const QRectF& area, bool vertical) {
  p.setPen(QColor(200, 200, 200));
  for (double e = ax.lo; e <= ax.hi; e += 1) {
    const double v = std::pow(10.0, e);
    if (!vertical) {
      const double x = ax.at(v, area.left(), area.width());
      p.drawLine(QPointF(x, area.top()), QPointF(x, area.bottom()));
      p.setPen(Qt::darkGray);
      p.drawText(QRectF(x - 40, area.bottom() + 2, 80, 14), Qt::AlignHCenter,
                 QString::number(v, 'g', 6) + " ms");
    } else {
      const double y = area.bottom() - (e - ax.lo) / (ax.hi - ax.lo) * area.height();
      p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y));
      p.setPen(Qt::darkGray);
      p.drawText(QRectF(0, y - 7, area.left() - 4, 14), Qt::AlignRight | Qt::AlignVCenter,
                 QString::number(v, 'g', 6));
    }
    p.setPen(QColor(200, 200, 200));
  }
}

// A white chart area; with `empty_text`, that text centred in it instead of a chart (false: draw
// nothing more).
bool begin_chart(QPainter& p, const QRect& area, const QString& empty_text) {
  p.fillRect(area, Qt::white);
  p.setRenderHint(QPainter::Antialiasing);
  if (empty_text.isEmpty()) return true;
  p.setPen(Qt::darkGray);
  p.drawText(area, Qt::AlignCenter, empty_text);
  return false;
}

}  // namespace

QColor TimingChart::stage_color(const QString& stage) {
  static const std::pair<const char*, QColor> known[] = {
      {"upload", QColor(91, 155, 213)},    {"download", QColor(68, 114, 196)},
      {"grid", QColor(112, 173, 71)},      {"graph", QColor(255, 192, 0)},
      {"labelling", QColor(237, 125, 49)}, {"canonicalize", QColor(165, 165, 165)},
      {"initial-ec", QColor(158, 72, 14)}, {"build-matrix", QColor(255, 230, 153)},
      {"merge", QColor(153, 115, 0)},      {"kd-tree", QColor(112, 48, 160)},
      {"extract", QColor(192, 0, 0)},      {"convert", QColor(191, 191, 191)}};
  for (const auto& [name, c] : known)
    if (stage == name) return c;
  const Rgb8 c = label_color(int(qHash(stage) % 89));
  return QColor(c.r, c.g, c.b);
}

void TimingChart::setBars(std::vector<TimingBar> bars) {
  bars_ = std::move(bars);
  updateGeometry();
  update();
}

void TimingChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  if (!begin_chart(p, rect(),
                   bars_.empty() ? tr("Run a comparison to see the timings") : QString()))
    return;
  double lo = 1e300, hi = 0;
  for (const auto& b : bars_)
    lo = std::min(lo, b.total.min > 0 ? b.total.min : b.total.median),
    hi = std::max(hi, b.total.max);
  const LogAxis ax = axis_for(lo, hi);
  const QRectF area(130, 10, width() - 260, height() - 58);
  draw_decades(p, ax, area, false);
  // Legend of the stages that appear, under the axis.
  std::vector<QString> names;
  for (const auto& b : bars_)
    for (const auto& [name, ms] : b.stages)
      if (std::find(names.begin(), names.end(), QString::fromStdString(name)) == names.end())
        names.push_back(QString::fromStdString(name));
  double lx = area.left();
  for (const auto& name : names) {
    p.fillRect(QRectF(lx, height() - 16, 10, 10), stage_color(name));
    p.setPen(Qt::black);
    p.drawText(QPointF(lx + 14, height() - 7), name);
    lx += 24 + p.fontMetrics().horizontalAdvance(name);
  }
  const double row = area.height() / double(bars_.size());
  for (std::size_t i = 0; i < bars_.size(); ++i) {
    const auto& b = bars_[i];
    const double y = area.top() + row * double(i) + row * 0.2, h = row * 0.6;
    p.setPen(Qt::black);
    p.drawText(QRectF(0, y, area.left() - 6, h), Qt::AlignRight | Qt::AlignVCenter, b.method);
    const double x0 = area.left(), x1 = ax.at(b.total.median, area.left(), area.width());
    // Stage split of the bar, in proportion to the stage medians.
    double sum = 0;
    for (const auto& [name, ms] : b.stages)
      sum += ms;
    double x = x0;
    for (const auto& [name, ms] : b.stages) {
      const double w = sum > 0 ? (x1 - x0) * ms / sum : 0;
      p.fillRect(QRectF(x, y, w, h), stage_color(QString::fromStdString(name)));
      x += w;
    }
    if (b.stages.empty()) p.fillRect(QRectF(x0, y, x1 - x0, h), method_color(b.method));
    p.setPen(QPen(Qt::black, 1.5));
    const double wmin = ax.at(b.total.min, area.left(), area.width()),
                 wmax = ax.at(b.total.max, area.left(), area.width());
    p.drawLine(QPointF(wmin, y + h / 2), QPointF(wmax, y + h / 2));
    p.drawLine(QPointF(wmin, y + h * 0.25), QPointF(wmin, y + h * 0.75));
    p.drawLine(QPointF(wmax, y + h * 0.25), QPointF(wmax, y + h * 0.75));
    QString label = QString::number(b.total.median, 'f', b.total.median < 10 ? 3 : 1) + " ms";
    if (b.speedup > 0) label += QString("  %1x").arg(b.speedup, 0, 'f', b.speedup < 10 ? 1 : 0);
    if (!b.agrees) label += tr("  differs");
    p.setPen(b.agrees ? Qt::black : QColor(192, 0, 0));
    p.drawText(QRectF(area.right() + 6, y, 124, h), Qt::AlignLeft | Qt::AlignVCenter, label);
  }
}

void HistoryChart::setPoints(std::vector<HistoryPoint> points) {
  points_ = std::move(points);
  update();
}

void HistoryChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  if (!begin_chart(p, rect(), points_.empty() ? tr("No runs yet") : QString())) return;
  double lo = 1e300, hi = 0;
  int last = 0;
  std::vector<QString> methods;
  for (const auto& q : points_) {
    lo = std::min(lo, q.ms), hi = std::max(hi, q.ms), last = std::max(last, q.run);
    if (std::find(methods.begin(), methods.end(), q.method) == methods.end())
      methods.push_back(q.method);
  }
  const LogAxis ax = axis_for(lo, hi);
  const QRectF area(70, 10, width() - 200, height() - 40);
  draw_decades(p, ax, area, true);
  p.setPen(Qt::darkGray);
  p.drawText(QRectF(area.left(), area.bottom() + 4, area.width(), 16), Qt::AlignHCenter,
             tr("run (ms per method, log scale)"));
  auto X = [&](int run) {
    return area.left() + (last > 1 ? double(run - 1) / double(last - 1) : 0.5) * area.width();
  };
  auto Y = [&](double ms) {
    return area.bottom() -
           (std::log10(std::max(ms, 1e-6)) - ax.lo) / (ax.hi - ax.lo) * area.height();
  };
  for (std::size_t m = 0; m < methods.size(); ++m) {
    const QColor c = method_color(methods[m]);
    p.setPen(Qt::NoPen);
    p.setBrush(c);
    for (const auto& q : points_)
      if (q.method == methods[m]) p.drawEllipse(QPointF(X(q.run), Y(q.ms)), 3.5, 3.5);
    p.drawRect(QRectF(area.right() + 12, area.top() + 18 * double(m) + 4, 10, 10));
    p.setPen(Qt::black);
    p.drawText(QPointF(area.right() + 28, area.top() + 18 * double(m) + 13), methods[m]);
  }
}

}  // namespace cumulus::ui
