#include "size_histogram.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <cmath>

#include "colormap.h"

namespace cumulus::ui {

void SizeHistogram::setSizes(const std::vector<std::size_t>& sizes) {
  bins_.clear();
  for (auto s : sizes) {
    const auto b = std::size_t(std::floor(std::log2(double(std::max<std::size_t>(s, 1)))));
    if (bins_.size() <= b) bins_.resize(b + 1, 0);
    ++bins_[b];
  }
  QString tip = tr("Number of clusters by size (powers of two)");
  for (std::size_t b = 0; b < bins_.size(); ++b)
    if (bins_[b])
      tip += tr("\n%L1 to %L2 points: %L3").arg(1ull << b).arg((2ull << b) - 1).arg(bins_[b]);
  setToolTip(tip);
  update();
}

SizeHistogram::Layout SizeHistogram::layout() const {
  Layout out;
  if (bins_.empty()) return out;
  const QFontMetricsF fm(font());
  const double text_h = fm.height(), pad = 2;
  // Counts sit above the bars, so the tallest bar stops one text line below the top.
  const QRectF plot(pad, text_h + pad, width() - 2 * pad, height() - 2 * text_h - 3 * pad);
  const int n = int(bins_.size());
  const double w = plot.width() / n;
  const double top = double(*std::max_element(bins_.begin(), bins_.end()));
  // Each count centred over its bar, left to right, where it does not touch the one before
  // (wider than a narrow bar, it may reach over an empty neighbour).
  double last_right = -1e9;
  for (int i = 0; i < n; ++i) {
    const int count = bins_[std::size_t(i)];
    const double bh =
        count ? std::max(2.0, plot.height() * std::log1p(count) / std::log1p(top)) : 0;
    out.bars.emplace_back(plot.left() + i * w + 1, plot.bottom() - bh, std::max(1.0, w - 2), bh);
    if (!count) continue;
    const QString text = QString::number(count);
    const double tw = fm.horizontalAdvance(text) + 2;
    const double left = std::clamp(plot.left() + (i + 0.5) * w - tw / 2, 0.0, double(width()) - tw);
    if (left < last_right + 2) continue;
    out.labels.push_back({QRectF(left, plot.bottom() - bh - text_h, tw, text_h), text});
    last_right = left + tw;
  }
  // Axis labels every k-th bin, k from the widest label, each centred under its bar and kept
  // inside the widget.
  const double widest = fm.horizontalAdvance(QString::number(1ull << (n - 1))) + 6;
  const int k = std::max(1, int(std::ceil(widest / w)));
  for (int i = 0; i < n; i += k) {
    const QString text = QString::number(1ull << i);
    const double tw = fm.horizontalAdvance(text) + 2;
    const double centre = plot.left() + (i + 0.5) * w;
    const double left = std::clamp(centre - tw / 2, 0.0, double(width()) - tw);
    out.labels.push_back({QRectF(left, plot.bottom() + pad, tw, text_h), text});
  }
  return out;
}

void SizeHistogram::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (bins_.empty()) {
    p.drawText(rect(), Qt::AlignCenter, tr("no clusters"));
    return;
  }
  const Layout l = layout();
  const int n = int(l.bars.size());
  for (int i = 0; i < n; ++i) {
    const Rgb8 c = turbo(0.15 + 0.8 * i / std::max(1, n - 1));
    p.fillRect(l.bars[std::size_t(i)], QColor(c.r, c.g, c.b));
  }
  p.setPen(palette().text().color());
  for (const auto& label : l.labels)
    p.drawText(label.box, Qt::AlignCenter, label.text);
}

}  // namespace cumulus::ui
