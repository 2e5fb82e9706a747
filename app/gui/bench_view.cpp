#include "bench_view.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QMouseEvent>
#include <QTimer>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>

#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

double resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  double pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * double(sysconf(_SC_PAGESIZE));
}

// A city block's worth of surfaces at LiDAR-like density: ground, walls and scattered objects,
// from a counter-based hash (no state, any size).
std::shared_ptr<PointCloud> generate(std::size_t n) {
  auto cloud = std::make_shared<PointCloud>();
  cloud->points.resize(n);
  const auto unit = [](std::uint64_t i, std::uint64_t k) {
    std::uint64_t z = i * 0x9E3779B97F4A7C15ull + k * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return float(double(z ^ (z >> 31)) / 18446744073709551616.0);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const float a = unit(i, 1), b = unit(i, 2), c = unit(i, 3);
    auto& p = cloud->points[i];
    switch (i % 4) {
      case 0:
      case 1:  // ground
        p = {200 * a - 100, 200 * b - 100, 0.05f * c};
        break;
      case 2:  // walls along the street
        p = {200 * a - 100, (b < 0.5f ? -12.0f : 12.0f) + 0.1f * c, 15 * unit(i, 4)};
        break;
      default:  // objects: 400 boxes of 2 x 2 x 2 m
      {
        const auto k = std::uint64_t(400 * unit(i, 5));
        p = {180 * unit(k, 6) - 90 + 2 * a, 20 * unit(k, 7) - 10 + 2 * b, 2 * c};
      }
    }
  }
  return cloud;
}

// The longest the UI thread went without returning to its event loop: a 1 ms timer's largest
// gap between two ticks, while the loop runs as it does for a user.
class StallMeter {
 public:
  StallMeter() {
    timer_.setInterval(1);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      const double now = double(clock_.nsecsElapsed()) * 1e-6;
      longest_ = std::max(longest_, now - last_);
      last_ = now;
    });
  }
  void start() {
    longest_ = 0;
    clock_.start();
    last_ = 0;
    timer_.start();
  }
  double stop() {
    timer_.stop();
    return longest_;
  }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  double last_ = 0, longest_ = 0;
};

// Runs the event loop until `done` or `limit_ms`.
template <class Done>
void run_until(Done done, double limit_ms) {
  QElapsedTimer clock;
  clock.start();
  while (!done() && double(clock.elapsed()) < limit_ms)
    QApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
}

}  // namespace

int run_view_bench(std::size_t points, int width, int height) {
  // How long the view may take to show every point on screen at rest (-1 in the output if more).
  constexpr double rest_limit_ms = 300000;
  const double rss0 = resident_bytes();
  QElapsedTimer clock;
  clock.start();
  auto cloud = generate(points);
  const double generate_ms = double(clock.nsecsElapsed()) * 1e-6;
  const double rss_cloud = resident_bytes();

  ui::VtkCloudView view;
  view.resize(width, height);
  view.show();
  run_until([] { return false; }, 200);
  int frames = 0;
  QObject::connect(&view, &ui::VtkGlWidget::rendered, [&frames] { ++frames; });
  StallMeter stall;

  // Open: bounds and colours prepared off the UI thread, then the points uploaded a page a
  // frame while the view draws what has arrived.
  stall.start();
  clock.restart();
  view.setCloud(cloud);
  run_until([&] { return !view.preparing(); }, 600000);
  const double prepare_ms = double(clock.nsecsElapsed()) * 1e-6;
  clock.restart();
  frames = 0;
  run_until([&] { return !view.uploading(); }, 3600000);
  const double upload_ms = double(clock.nsecsElapsed()) * 1e-6;
  const int upload_frames = frames;
  const double open_stall = stall.stop();
  const bool upload_starved = view.uploadStarved();

  // A drag across the view: a mouse move every 16 ms (a 60 Hz pointer) for three seconds, the
  // view drawing as fast as it can in between.
  const QPointF centre(width / 2.0, height / 2.0);
  const auto send = [&view](QEvent::Type type, QPointF at, Qt::MouseButtons buttons) {
    QMouseEvent e(type, at, view.mapToGlobal(at),
                  type == QEvent::MouseMove ? Qt::NoButton : Qt::LeftButton, buttons,
                  Qt::NoModifier);
    QApplication::sendEvent(&view, &e);
  };
  send(QEvent::MouseButtonPress, centre, Qt::LeftButton);
  std::size_t drawn_min = points, drawn_max = 0;
  int step = 0;
  QTimer mover;
  mover.setInterval(16);
  QObject::connect(&mover, &QTimer::timeout, [&] {
    ++step;
    send(QEvent::MouseMove, centre + QPointF(2.0 * (step % 200), 0.5 * (step % 200)),
         Qt::LeftButton);
  });
  QObject::connect(&view, &ui::VtkGlWidget::rendered, [&] {
    if (!view.interacting()) return;
    drawn_min = std::min(drawn_min, view.drawnPoints());
    drawn_max = std::max(drawn_max, view.drawnPoints());
  });
  frames = 0;
  stall.start();
  mover.start();
  clock.restart();
  run_until([] { return false; }, 3000);
  mover.stop();
  const double moving_fps = frames / (double(clock.nsecsElapsed()) * 1e-9);
  const double moving_stall = stall.stop();
  send(QEvent::MouseButtonRelease, centre, Qt::NoButton);

  // At rest: each frame adds points to the image until it shows every point on screen (full
  // detail), for at most `rest_limit_ms`.
  stall.start();
  clock.restart();
  run_until([] { return false; }, 3000);
  const std::size_t resting_drawn_3s = view.drawnPoints();
  run_until([&] { return view.fullDetail(); }, rest_limit_ms);
  const double full_detail_ms = view.fullDetail() ? double(clock.nsecsElapsed()) * 1e-6 : -1;
  const double resting_ms = view.lastFrameMs();
  const std::size_t resting_drawn = view.drawnPoints();
  const double resting_stall = stall.stop();

  // Closer, a tenth of the distance to the focal point: what is off screen is not drawn, and
  // what is on screen comes to full detail in turn.
  ui::VtkCloudView::CameraState camera = view.cameraState();
  for (int a = 0; a < 3; ++a)
    camera.position[a] = camera.focal_point[a] + 0.1 * (camera.position[a] - camera.focal_point[a]);
  stall.start();
  clock.restart();
  view.setCameraState(camera);
  run_until([] { return false; }, 100);
  run_until([&] { return view.fullDetail(); }, rest_limit_ms);
  const double near_full_detail_ms = view.fullDetail() ? double(clock.nsecsElapsed()) * 1e-6 : -1;
  const std::size_t near_drawn = view.drawnPoints();
  const double near_stall = stall.stop();
  const double rss_view = resident_bytes();
  std::printf(
      "{\"points\": %zu, \"generate_ms\": %.1f, \"prepare_ms\": %.1f, \"upload_ms\": %.1f, "
      "\"upload_frames\": %d, \"upload_starved\": %s, \"open_ui_stall_max_ms\": %.1f, "
      "\"moving_fps\": %.1f, "
      "\"moving_points_min\": %zu, \"moving_points_max\": %zu, \"moving_ui_stall_max_ms\": %.1f, "
      "\"resting_frame_ms\": %.1f, \"resting_points_3s\": %zu, \"resting_points\": %zu, "
      "\"full_detail_ms\": %.1f, \"resting_ui_stall_max_ms\": %.1f, \"near_points\": %zu, "
      "\"near_full_detail_ms\": %.1f, \"near_ui_stall_max_ms\": %.1f, "
      "\"cloud_bytes_per_point\": %.1f, \"bytes_per_point\": %.1f}\n",
      points, generate_ms, prepare_ms, upload_ms, upload_frames, upload_starved ? "true" : "false",
      open_stall, moving_fps, drawn_min, drawn_max, moving_stall, resting_ms, resting_drawn_3s,
      resting_drawn, full_detail_ms, resting_stall, near_drawn, near_full_detail_ms, near_stall,
      (rss_cloud - rss0) / double(points), (rss_view - rss0) / double(points));
  return 0;
}

}  // namespace cumulus::app
