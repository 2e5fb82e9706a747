#include "histogram_chart.h"

#include <QPainter>

#include <algorithm>
#include <cmath>

namespace cumulus::ui {

void HistogramChart::setHistograms(std::vector<float> a, std::vector<float> b) {
  a_ = std::move(a);
  b_ = b.size() == a_.size() ? std::move(b) : std::vector<float>{};
  update();
}

std::vector<std::pair<int, QString>> HistogramChart::groups(int bins) {
  std::vector<std::pair<int, QString>> g;
  if (bins == 33) {
    g = {{0, tr("f1 (α)")}, {11, tr("f2 (φ)")}, {22, tr("f3 (θ)")}};
  } else if (bins == 125) {
    for (int i = 0; i < 5; ++i)
      g.push_back({25 * i, tr("f3 bin %1").arg(i)});
  } else if (bins > 0) {
    g = {{0, QString()}};
  }
  return g;
}

void HistogramChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRectF plot = QRectF(rect()).adjusted(40, 8, -8, -22);
  p.setPen(palette().text().color());
  p.drawRect(plot);
  const int n = int(a_.size());
  bool any = false;
  float top = 0;
  for (const auto* h : {&a_, &b_})
    for (float v : *h)
      if (std::isfinite(v)) {
        top = std::max(top, v);
        any = true;
      }
  if (!n || !any) {
    p.drawText(plot, Qt::AlignCenter,
               n ? tr("no histogram (too few neighbours or not a finite point)")
                 : tr("pick a point in the view"));
    return;
  }
  top = top > 0 ? top * 1.05f : 1.0f;
  p.drawText(QRectF(0, plot.top() - 2, plot.left() - 4, 16), Qt::AlignRight,
             QString::number(double(top), 'f', 0));
  p.drawText(QRectF(0, plot.bottom() - 14, plot.left() - 4, 16), Qt::AlignRight, "0");
  const double w = plot.width() / n;
  auto bar = [&](int i, float v) {
    const double h = std::isfinite(v) ? plot.height() * double(v) / double(top) : 0.0;
    return QRectF(plot.left() + i * w, plot.bottom() - h, w, h);
  };
  // Alternate group shading, then the group titles under the axis.
  const auto g = groups(n);
  for (std::size_t i = 0; i < g.size(); ++i) {
    const int b = g[i].first, e = i + 1 < g.size() ? g[i + 1].first : n;
    const QRectF band(plot.left() + b * w, plot.top(), (e - b) * w, plot.height());
    if (i % 2) p.fillRect(band, palette().alternateBase());
    p.drawText(QRectF(band.left(), plot.bottom() + 3, band.width(), 18), Qt::AlignCenter,
               g[i].second);
  }
  const QColor first(40, 110, 200), second(230, 120, 20);
  for (int i = 0; i < n; ++i)
    p.fillRect(bar(i, a_[std::size_t(i)]).adjusted(w > 3 ? 0.5 : 0, 0, 0, 0), first);
  if (!b_.empty()) {
    p.setPen(QPen(second, 1.5));
    p.setBrush(QColor(second.red(), second.green(), second.blue(), 70));
    for (int i = 0; i < n; ++i)
      p.drawRect(bar(i, b_[std::size_t(i)]));
  }
}

}  // namespace cumulus::ui
