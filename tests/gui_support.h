#pragma once
// What the GUI test programs share: waiting with events, counting colours in a grab, a labelled
// test cloud, the sample data, and a main() with the OpenGL format the 3D view needs.
#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QSettings>
#include <QSurfaceFormat>

#include <memory>

#include "colormap.h"
#include "core/point_cloud.h"
#include "gl_format.h"
#include "test_support.h"

namespace cumulus::test {

inline void wait_ms(int ms) {
  QElapsedTimer t;
  t.start();
  while (t.elapsed() < ms)
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
}

inline int count_near(const QImage& img, Rgb8 c, int tol = 40) {
  int n = 0;
  const QImage rgb = img.convertToFormat(QImage::Format_RGB32);
  for (int y = 0; y < rgb.height(); ++y)
    for (int x = 0; x < rgb.width(); ++x) {
      const QRgb p = rgb.pixel(x, y);
      if (std::abs(qRed(p) - c.r) <= tol && std::abs(qGreen(p) - c.g) <= tol &&
          std::abs(qBlue(p) - c.b) <= tol)
        ++n;
    }
  return n;
}

inline std::shared_ptr<PointCloud> labelled_plane(int label) {
  auto c = std::make_shared<PointCloud>();
  for (int i = 0; i < 100; ++i)
    for (int j = 0; j < 100; ++j) {
      c->points.push_back({i * 0.01f, j * 0.01f, 0.0f});
      c->labels.push_back(label);
    }
  c->width = std::uint32_t(c->points.size());
  return c;
}

inline QString sample(const char* name) {
  return sampleDir() + "/" + name;
}

// Runs a Qt Test object in a QApplication set up as the GUI's main() sets it up.
template <class Tests>
int run_gui_tests(int argc, char** argv) {
  ui::set_default_gl_format();
  QApplication app(argc, argv);
  QApplication::setOrganizationName("CumulusTest");
  QApplication::setApplicationName("CumulusTest");
  Tests t;
  return QTest::qExec(&t, argc, argv);
}

}  // namespace cumulus::test
