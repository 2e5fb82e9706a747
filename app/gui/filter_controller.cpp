#include "filter_controller.h"

#include <QDateTime>

#include "filter_panel.h"
#include "run_history.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

struct FilterOutcome {
  std::shared_ptr<const PointCloud> cloud;
  ui::StageCounts counts;
  double total_ms = 0;
  StageTimes stages;
  std::string method;
};

// The stages a filter job names with its progress (JobControl's stage).
enum class FilterStage { Crop, Voxel, Statistical, Radius, Ground };

QString stage_name(FilterStage stage) {
  switch (stage) {
    case FilterStage::Crop:
      return FilterController::tr("crop box");
    case FilterStage::Voxel:
      return FilterController::tr("voxel grid");
    case FilterStage::Statistical:
      return FilterController::tr("statistical outliers");
    case FilterStage::Radius:
      return FilterController::tr("radius outliers");
    case FilterStage::Ground:
      break;
  }
  return FilterController::tr("ground plane");
}

// The crop box, the voxel grid, the outlier filters, then the ground plane's removal, each
// where it is switched on; a stage that keeps nothing ends the chain. Told to stop, the job ends
// before its next stage (PCL's filters have no progress of their own to stop within).
FilterOutcome filter_job(const PointCloud& in, const ui::FilterSettings& s, FilterMethod method,
                         const JobControl& control) {
  FilterOutcome out;
  PointCloud cloud = in;
  out.method = method_name(method);
  // The status bar counts the stages switched on, not the chain's five places.
  const std::size_t chain = std::size_t(s.crop.has_value()) + s.voxel.has_value() +
                            s.statistical.has_value() + s.radius.has_value() + s.ground.has_value();
  std::size_t begun = 0;
  const auto starting = [&](FilterStage stage) {
    if (!control.progress(++begun, chain, int(stage))) throw Cancelled("filtering cancelled");
  };
  // One filter stage: announced (where a stop is heard), run, and its times and count kept.
  const auto filter = [&](FilterStage stage, const char* key, auto&& run) {
    starting(stage);
    FilterResult r = run();
    out.total_ms += r.total_ms;
    for (auto& [name, ms] : r.stages)
      out.stages.emplace_back(std::string(key) + ": " + name, ms);
    cloud = std::move(r.cloud);
    out.counts.emplace_back(stage_name(stage), cloud.size());
  };
  if (s.crop) filter(FilterStage::Crop, "crop", [&] { return crop_box(cloud, *s.crop, method); });
  if (s.voxel && !cloud.empty())
    filter(FilterStage::Voxel, "voxel", [&] { return voxel_grid(cloud, *s.voxel, method); });
  if (s.statistical && !cloud.empty())
    filter(FilterStage::Statistical, "statistical outliers",
           [&] { return remove_statistical_outliers(cloud, *s.statistical, method); });
  if (s.radius && !cloud.empty())
    filter(FilterStage::Radius, "radius outliers",
           [&] { return remove_radius_outliers(cloud, *s.radius, method); });
  if (s.ground && !cloud.empty()) {
    starting(FilterStage::Ground);
    // The ground methods carry the filters' names (cpu: PCL, gpu: ours).
    const GroundMethod ground_method =
        parse_method<GroundMethod>(method_name(method)).value_or(GroundMethod::Cpu);
    const GroundResult g = segment_ground_plane(cloud, *s.ground, ground_method);
    out.total_ms += g.total_ms;
    for (const auto& [name, ms] : g.stages)
      out.stages.emplace_back("ground: " + name, ms);
    cloud = gather_points(cloud, off_ground(cloud, g.ground));
    out.counts.emplace_back(FilterController::tr("off the ground plane"), cloud.size());
  }
  out.cloud = std::make_shared<const PointCloud>(std::move(cloud));
  return out;
}

}  // namespace

FilterController::FilterController(const Workbench& bench, ui::FilterPanel* panel, QObject* parent)
    : QObject(parent), bench_(bench), panel_(panel), runner_(new JobRunner(this)) {
  jobs_ = new PanelJobs(
      panel_, runner_, 150, [this] { run(); }, this);
  connect(jobs_, &PanelJobs::dropped, this, [this] { emit finished(false); });
  connect(panel_, &ui::FilterPanel::addAsDatasetRequested, this, &FilterController::addAsDataset);
  connect(runner_, &JobRunner::progress, this, [this](qint64 begun, qint64 chain, int stage) {
    bench_.status->showMessage(tr("Filtering: %1 (stage %2 of %3)")
                                   .arg(stage_name(FilterStage(stage)))
                                   .arg(begun)
                                   .arg(chain),
                               3000);
  });
}

void FilterController::datasetShown(int row) {
  filtered_.reset();
  panel_->clearResult();
  if (row < 0 || !bench_.document->at(row).isCloud()) return;
  const PointCloud& c = *bench_.document->at(row).cloud;
  const Bounds b = c.local_bounds();
  if (!b.valid) return;
  panel_->setCloudBounds({c.origin[0] + b.min.x, c.origin[1] + b.min.y, c.origin[2] + b.min.z},
                         {c.origin[0] + b.max.x, c.origin[1] + b.max.y, c.origin[2] + b.max.z});
}

void FilterController::run() {
  jobs_->started();
  const ui::FilterSettings settings = panel_->settings();
  const int row = bench_.current_row();
  const auto cloud = row >= 0 ? bench_.document->at(row).cloud : nullptr;
  if (!cloud) return panel_->setError(tr("Select a point cloud to filter."));
  if (!settings.crop && !settings.voxel && !settings.statistical && !settings.radius &&
      !settings.ground)
    return panel_->setError(tr("Switch on at least one filter."));
  panel_->setBusy(true);
  runner_->start(
      [cloud, settings, method = panel_->method()](const JobControl& control) {
        return filter_job(*cloud, settings, method, control);
      },
      [this, cloud](FilterOutcome r) {
        const int at = bench_.document->findCloud(cloud.get());
        if (at >= 0) {
          RunHistory::instance().add({QDateTime::currentDateTime(),
                                      "filter",
                                      QString::fromStdString(r.method),
                                      {},
                                      bench_.document->at(at).name,
                                      cloud->size(),
                                      r.total_ms,
                                      r.stages,
                                      QString()});
        }
        if (at >= 0 && at == bench_.current_row()) {
          source_ = cloud;
          filtered_ = r.cloud;
          bench_.cloud_view->setCloud(r.cloud, false);
          panel_->setResult(cloud->size(), r.counts, r.total_ms, QString::fromStdString(r.method));
        }
        emit finished(true);
      },
      [this](const QString& error) {
        panel_->setError(error);
        emit finished(false);
      });
}

void FilterController::addAsDataset() {
  if (!filtered_ || filtered_->empty()) return;
  const int from = bench_.document->findCloud(source_.get());
  Dataset d;
  d.name = (from >= 0 ? bench_.document->at(from).name : tr("cloud")) + tr(" (filtered)");
  d.cloud = filtered_;
  bench_.document->add(std::move(d));
  bench_.status->showMessage(tr("Added the filtered cloud, %L1 points, to the datasets")
                                 .arg(qulonglong(filtered_->size())),
                             5000);
}

}  // namespace cumulus::app
