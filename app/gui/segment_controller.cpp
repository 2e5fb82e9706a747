#include "segment_controller.h"

#include <QDateTime>
#include <QTimer>

#include "depth_view.h"
#include "run_history.h"
#include "segment/segment.h"
#include "segment_panel.h"

namespace cumulus::app {

namespace {

using MethodTimes = std::vector<ui::SegmentPanel::MethodTime>;

// Every method on one image, each after a warm-up run (thread start, GPU context, buffers), each
// judged against the first (the reference).
MethodTimes time_every_method(const DepthImage& image, const SegmentParams& params, bool gpu) {
  MethodTimes out;
  SegmentResult ref;
  for (const auto& row : method_table(SegmentMethod{}).rows()) {
    const QString name = QString::fromUtf8(row.name);
    if (row.device == MethodDevice::Gpu && !gpu) {
      out.push_back({name, -1, QObject::tr("no GPU")});
      continue;
    }
    try {
      segment_columns(image, params, row.method);
      const SegmentResult r = segment_columns(image, params, row.method);
      const bool is_ref = row.origin == MethodOrigin::Reference && out.empty();
      const bool same =
          is_ref || (r.rows == ref.rows && r.offsets == ref.offsets && r.levels == ref.levels);
      out.push_back({name, r.total_ms,
                     is_ref ? QObject::tr("reference")
                     : same ? QObject::tr("identical cut rows")
                            : QObject::tr("DIFFERENT cut rows")});
      if (is_ref) ref = r;
    } catch (const std::exception& e) {
      out.push_back({name, -1, QString::fromStdString(e.what())});
    }
  }
  return out;
}

}  // namespace

SegmentController::SegmentController(const Workbench& bench, ui::SegmentPanel* panel,
                                     QObject* parent)
    : QObject(parent),
      bench_(bench),
      panel_(panel),
      runner_(new JobRunner(this)),
      timing_(new JobRunner(this)) {
  jobs_ = new PanelJobs(
      panel_, runner_, 120, [this] { run(); }, this);
  connect(jobs_, &PanelJobs::dropped, this, [this] { emit finished(false); });
  connect(panel_, &ui::SegmentPanel::exportCsvRequested, this, [this] { exportSegments(false); });
  connect(panel_, &ui::SegmentPanel::exportJsonRequested, this, [this] { exportSegments(true); });
  connect(panel_, &ui::SegmentPanel::timeAllRequested, this, &SegmentController::timeAllMethods);
  connect(bench_.depth_view, &ui::DepthView::columnClicked, this, [this](int c) {
    panel_->inspectColumn(c);
    bench_.depth_view->setInspectedColumn(c);
  });
}

void SegmentController::run() {
  jobs_->started();
  const int row = bench_.current_row();
  if (row < 0 || bench_.document->at(row).isCloud()) {
    panel_->setError(tr("Select a depth image to segment."));
    return;
  }
  panel_->setBusy(true);
  const auto image = bench_.document->at(row).depth;
  const SegmentParams params = panel_->params();
  runner_->start(
      [image, params, method = panel_->method()](const JobControl&) {
        return std::make_shared<const SegmentResult>(segment_columns(*image, params, method));
      },
      [this, image, params](std::shared_ptr<const SegmentResult> result) {
        const int r = bench_.document->findDepth(image.get());
        if (r >= 0) {
          bench_.document->setSegments(r, result);
          RunHistory::instance().add(
              {QDateTime::currentDateTime(), "segment", QString::fromStdString(result->method),
               QString("epsilon %1 m").arg(params.epsilon), bench_.document->at(r).name,
               image->size(), result->total_ms, result->stages, QString()});
          if (r == bench_.current_row()) {
            bench_.depth_view->setSegments(result);
            panel_->setResult(image, result);
          }
        }
        emit finished(true);
      },
      [this](const QString& error) {
        panel_->setError(error);
        emit finished(false);
      });
}

void SegmentController::timeAllMethods() {
  const int row = bench_.current_row();
  if (row < 0 || bench_.document->at(row).isCloud()) {
    panel_->setError(tr("Select a depth image to segment."));
    return;
  }
  timing_->start([image = bench_.document->at(row).depth, params = panel_->params(),
                  gpu = query_device().available](
                     const JobControl&) { return time_every_method(*image, params, gpu); },
                 [this](MethodTimes times) {
                   panel_->setMethodTimes(times);
                   emit timingFinished();
                 });
}

void SegmentController::exportSegments(bool json) {
  const int row = bench_.current_row();
  if (row < 0 || !bench_.document->at(row).segments) return;
  const auto depth = bench_.document->at(row).depth;
  const auto segments = bench_.document->at(row).segments;
  bench_.save(
      {tr("Export segments"), bench_.last_dir() + (json ? "/segments.json" : "/segments.csv"),
       json ? tr("JSON (*.json)") : tr("CSV (*.csv)")},
      [&](const QString& path) {
        save_segments(path.toStdString(), *depth, *segments,
                      json ? SegmentFormat::Json : SegmentFormat::Csv);
        return true;
      });
}

}  // namespace cumulus::app
