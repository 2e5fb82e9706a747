#pragma once
// What the GUI test programs share: waiting with events, counting colours in a grab, a labelled
// test cloud, the sample data, and a main() with the OpenGL format the 3D view needs.
#include <sys/resource.h>

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QImage>
#include <QLineEdit>
#include <QMessageBox>
#include <QSettings>
#include <QSurfaceFormat>
#include <QTimer>
#include <QtTest>

#include <csignal>
#include <functional>
#include <memory>
#include <vector>

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

// Grabs `view` until at least `least` pixels lie near colour `c` or `timeout_ms` have passed, and
// returns the last count. A view's first frames may stop at their time budget or while its
// points still arrive, and a software renderer under the sanitizers beside another GUI test
// took more than 300 ms to show a 10,000-point plane once (0 pixels: CI, 2026-12-01).
template <class View>
int wait_for_pixels(View& view, Rgb8 c, int least, int timeout_ms = 5000) {
  QElapsedTimer t;
  t.start();
  int hits = count_near(view.grabFramebuffer(), c);
  while (hits < least && t.elapsed() < timeout_ms) {
    wait_ms(50);
    hits = count_near(view.grabFramebuffer(), c);
  }
  return hits;
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

// Turns a panel's Live box on or off. Tests that open a small cloud for another window turn the
// clustering panel's off first, so that no clustering runs beside what they count.
inline void setLive(QWidget* panel, bool on) {
  for (auto* box : panel->findChildren<QCheckBox*>())
    if (box->text() == QStringLiteral("Live")) box->setChecked(on);
}

// Answers, in order, the modal dialogs that the code under test opens (the file dialog, message
// boxes): each step gets the dialog that is on top and acts on it. Polls the event loop that the
// dialog runs, so the code under test can be called as a user's click would call it.
class ModalScript : public QObject {
 public:
  using Step = std::function<void(QWidget* dialog)>;
  explicit ModalScript(std::vector<Step> steps) : steps_(std::move(steps)) {
    timer_.setInterval(20);
    idle_.start();
    connect(&timer_, &QTimer::timeout, this, [this] {
      QWidget* top = QApplication::activeModalWidget();
      // A dialog the script did not expect (or one that never closes) is rejected after 20 s,
      // so that the test fails on its counts instead of hanging.
      if (top && idle_.elapsed() > 20000) {
        if (auto* dialog = qobject_cast<QDialog*>(top))
          QMetaObject::invokeMethod(dialog, "reject", Qt::QueuedConnection);
        idle_.restart();
        return;
      }
      // A dialog answered once may still be on top until its event loop returns.
      if (!top || top->property("cumulus_answered").toBool() || answered_ >= steps_.size()) return;
      top->setProperty("cumulus_answered", true);
      idle_.restart();
      steps_[answered_++](top);
    });
    timer_.start();
  }
  std::size_t answered() const { return answered_; }

 private:
  std::vector<Step> steps_;
  std::size_t answered_ = 0;
  QTimer timer_;
  QElapsedTimer idle_;
};

// Steps: pick `path` in a file dialog (or cancel it with an empty path); click the button whose
// text (without mnemonics) is `text` in a message box.
inline ModalScript::Step choose_file(const QString& path) {
  return [path](QWidget* dialog) {
    auto* files = qobject_cast<QFileDialog*>(dialog);
    QVERIFY2(files, qPrintable(dialog->metaObject()->className()));
    if (path.isEmpty()) return files->reject();
    files->selectFile(path);
    // selectFile can lose the name while the dialog's directory model is still loading (the
    // name then stays empty and accept() does nothing): set the name field as a user types it.
    if (auto* name = files->findChild<QLineEdit*>("fileNameEdit"))
      name->setText(QFileInfo(path).fileName());
    // Queued: accepting may open a question (replace the file?) with its own event loop, and
    // the script's timer does not fire again until this step returns.
    QMetaObject::invokeMethod(files, "accept", Qt::QueuedConnection);
  };
}
inline void press(QWidget* dialog, const QString& text) {
  auto* box = qobject_cast<QMessageBox*>(dialog);
  QVERIFY2(box, qPrintable(dialog->metaObject()->className()));
  for (QAbstractButton* b : box->buttons())
    if (b->text().remove('&') == text)
      return void(QMetaObject::invokeMethod(b, "click", Qt::QueuedConnection));
  QFAIL(qPrintable("no button '" + text + "' in: " + box->text()));
}
inline ModalScript::Step press(const QString& text) {
  return [text](QWidget* dialog) { press(dialog, text); };
}

// The action of `window`'s menus whose text (without mnemonics and dots) starts with `text`.
inline QAction* menu_action(QWidget& window, const QString& text) {
  for (QAction* a : window.findChildren<QAction*>())
    if (a->text().remove('&').startsWith(text)) return a;
  return nullptr;
}

// Files may not grow past `bytes` while it lives (SIGXFSZ ignored: a write past it fails with
// EFBIG, as on a full disk, without killing the test).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit r{bytes, saved_.rlim_max};
    ::setrlimit(RLIMIT_FSIZE, &r);
  }
  ~FileSizeLimit() { lift(); }
  void lift() { ::setrlimit(RLIMIT_FSIZE, &saved_); }

 private:
  rlimit saved_{};
};

// Runs a Qt Test object in a QApplication set up as the GUI's main() sets it up.
template <class Tests>
int run_gui_tests(int argc, char** argv) {
  ui::set_default_gl_format();
  QApplication app(argc, argv);
  // Qt's own dialogs, which the tests can answer (ModalScript), whatever the desktop offers.
  QApplication::setAttribute(Qt::AA_DontUseNativeDialogs);
  QApplication::setOrganizationName("CumulusTest");
  QApplication::setApplicationName("CumulusTest");
  Tests t;
  return QTest::qExec(&t, argc, argv);
}

}  // namespace cumulus::test
