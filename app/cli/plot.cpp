#include <algorithm>
// PNG plots of benchmark results with QPainter on a QImage (needs Qt Gui, so only in the
// desktop build; plot_none.cpp stands in for headless builds).
#include <QBuffer>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>

#include <cmath>
#include <map>
#include <memory>

#include "bench.h"
#include "io/atomic_file.h"

namespace cumulus::cli {

namespace {

// QPainter's text needs a QGuiApplication; the CLI has none, so make an off-screen one.
void ensure_gui_app() {
  if (QCoreApplication::instance()) return;
  static int argc = 1;
  static char name[] = "cumulus-cli";
  static char* argv[] = {name, nullptr};
  qputenv("QT_QPA_PLATFORM", "offscreen");
  static auto* app = new QGuiApplication(argc, argv);
  (void)app;
}

QColor method_color(std::size_t i) {
  static const QColor palette[] = {
      QColor(0, 0, 0),     QColor(214, 39, 40),   QColor(31, 119, 180),
      QColor(44, 160, 44), QColor(255, 127, 14),  QColor(148, 103, 189),
      QColor(140, 86, 75), QColor(227, 119, 194), QColor(23, 190, 207)};
  return palette[i % (sizeof palette / sizeof palette[0])];
}

}  // namespace

std::vector<std::string> plot_bench(const std::vector<BenchRow>& rows, const std::string& dir,
                                    std::string* why, const std::string& prefix) {
  ensure_gui_app();
  if (!qobject_cast<QGuiApplication*>(QCoreApplication::instance())) {
    // Text needs fonts, and fonts need a QGuiApplication; a host program's QCoreApplication
    // cannot be replaced.
    if (why)
      *why =
          "this process runs a QCoreApplication, not a QGuiApplication; use cumulus-cli bench plot";
    return {};
  }
  std::vector<std::string> written;
  const std::vector<std::string> sweeps = distinct(rows, &BenchRow::sweep),
                                 methods = distinct(rows, &BenchRow::method);
  for (const auto& sweep : sweeps) {
    double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
    for (const auto& r : rows) {
      if (r.sweep != sweep || r.median_ms <= 0 || r.x <= 0) continue;
      x0 = std::min(x0, r.x), x1 = std::max(x1, r.x), y0 = std::min(y0, r.median_ms),
      y1 = std::max(y1, r.median_ms);
    }
    if (x0 > x1) continue;
    const double lx0 = std::log10(x0) - 0.05, lx1 = std::log10(x1) + 0.05;
    const double ly0 = std::floor(std::log10(y0)),
                 ly1 = std::ceil(std::log10(y1)) + (y1 == y0 ? 1 : 0);
    QImage img(1000, 640, QImage::Format_RGB32);
    img.fill(Qt::white);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    const QRectF area(90, 50, 660, 520);
    auto X = [&](double x) {
      return area.left() + (std::log10(x) - lx0) / (lx1 - lx0) * area.width();
    };
    auto Y = [&](double y) {
      return area.bottom() - (std::log10(y) - ly0) / (ly1 - ly0) * area.height();
    };
    p.setPen(QColor(220, 220, 220));
    for (double e = ly0; e <= ly1; e += 1) {
      p.drawLine(QPointF(area.left(), Y(std::pow(10, e))),
                 QPointF(area.right(), Y(std::pow(10, e))));
      p.setPen(Qt::black);
      p.drawText(QRectF(0, Y(std::pow(10, e)) - 10, 84, 20), Qt::AlignRight | Qt::AlignVCenter,
                 QString::number(std::pow(10, e), 'g', 6));
      p.setPen(QColor(220, 220, 220));
    }
    p.setPen(Qt::black);
    p.drawRect(area);
    std::vector<double> xs;
    for (const auto& r : rows)
      if (r.sweep == sweep && std::find(xs.begin(), xs.end(), r.x) == xs.end()) xs.push_back(r.x);
    for (double x : xs)
      p.drawText(QRectF(X(x) - 40, area.bottom() + 4, 80, 18), Qt::AlignHCenter,
                 QString::number(x, 'g', 7));
    QFont bold = p.font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRectF(0, 8, 1000, 30), Qt::AlignHCenter,
               QString("%1: %2 sweep (median ms, log-log)")
                   .arg(prefix == "segment"    ? "RDP segmentation"
                        : prefix == "features" ? "Normals and feature histograms"
                        : prefix == "icp"      ? "ICP registration"
                                               : "Euclidean clustering")
                   .arg(QString::fromStdString(sweep)));
    p.setFont(QFont());
    p.drawText(QRectF(area.left(), area.bottom() + 24, area.width(), 20), Qt::AlignHCenter,
               sweep == "real" ? "points" : QString::fromStdString(sweep));
    for (std::size_t m = 0; m < methods.size(); ++m) {
      std::vector<QPointF> pts;
      for (const auto& r : rows)
        if (r.sweep == sweep && r.method == methods[m] && r.median_ms > 0)
          pts.emplace_back(X(r.x), Y(r.median_ms));
      std::sort(pts.begin(), pts.end(),
                [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); });
      p.setPen(QPen(method_color(m), 2));
      p.setBrush(method_color(m));
      for (std::size_t i = 0; i + 1 < pts.size(); ++i)
        p.drawLine(pts[i], pts[i + 1]);
      for (const auto& q : pts)
        p.drawEllipse(q, 3, 3);
      p.drawLine(QPointF(770, 70 + 22 * m), QPointF(800, 70 + 22 * m));
      p.setPen(Qt::black);
      p.drawText(QPointF(808, 75 + 22 * m), QString::fromStdString(methods[m]));
    }
    p.end();
    const std::string path = dir + "/" + prefix + "_" + sweep + ".png";
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    if (!img.save(&buffer, "PNG")) continue;
    AtomicFile file(path);  // a failed write throws, naming the file and the reason
    file.write(png.constData(), std::size_t(png.size()));
    file.commit();
    written.push_back(path);
  }
  if (written.empty() && why) *why = "no rows with times to plot";
  return written;
}

}  // namespace cumulus::cli
