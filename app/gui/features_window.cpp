#include "features_window.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QMessageBox>
#include <QStatusBar>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "colormap.h"
#include "core/device.h"
#include "document.h"
#include "feature_panel.h"
#include "job_runner.h"
#include "panel_jobs.h"
#include "save_file.h"
#include "tiles/tiles.h"
#include "tool_layout.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

// A cloud beyond one GPU call is worked in tiles, which report progress and stop between tiles
// when `progress` says so; a run in one call (PCL's always is) reports and stops between two of
// its searches, so that a slow CPU run gives way at once to the next parameters.
FeatureJob run_feature_job(FeatureJob job, const std::vector<FeatureMethod>& methods,
                           const JobControl& control) {
  TileOptions tiles;
  tiles.progress = control.callback();
  for (auto m : methods)
    job.results.push_back(compute_features_tiled(*job.cloud, job.params, m, nullptr, tiles));
  return job;
}

// The neighbourhood of one point as the features define it (finite points only, itself
// included, nearest first; radius strict). Brute force: one query does not pay for a tree.
std::vector<std::int32_t> neighbours_of(const std::vector<Point3f>& pts, std::size_t q,
                                        const Neighbourhood& nb) {
  const Point3f p = pts[q];
  std::vector<std::pair<float, std::int32_t>> d;
  d.reserve(pts.size());
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const Point3f o = pts[i];
    if (!std::isfinite(o.x) || !std::isfinite(o.y) || !std::isfinite(o.z)) continue;
    const float dx = o.x - p.x, dy = o.y - p.y, dz = o.z - p.z;
    const float s = dx * dx + dy * dy + dz * dz;
    if (nb.k > 0 || s < nb.radius * nb.radius) d.push_back({s, std::int32_t(i)});
  }
  const std::size_t keep = nb.k > 0 ? std::min(d.size(), std::size_t(nb.k)) : d.size();
  std::partial_sort(d.begin(), d.begin() + std::ptrdiff_t(keep), d.end());
  std::vector<std::int32_t> out(keep);
  for (std::size_t i = 0; i < keep; ++i)
    out[i] = d[i].second;
  return out;
}

std::vector<float> row_of(const FeatureResult& r, qint64 i) {
  if (i < 0 || std::size_t(i) >= r.size()) return {};
  return {r.row(std::size_t(i)), r.row(std::size_t(i)) + r.bins};
}

}  // namespace

FeaturesWindow::FeaturesWindow(DocumentModel* document, QWidget* parent)
    : QMainWindow(parent), document_(document) {
  setWindowTitle(tr("Features (normals, PFH, FPFH) — Cumulus"));
  auto* inputs = new QFormLayout;
  cloud_ = new QComboBox(this);
  inputs->addRow(tr("Cloud"), cloud_);
  panel_ = new ui::FeaturePanel(this);
  view_ = lay_out_tool(this, inputs, panel_, 2);
  statusBar()->showMessage(
      tr("Click a point: A (yellow, its neighbourhood magenta) colours the cloud by histogram "
         "distance, blue = similar; B (cyan) is overlaid in the chart."));
  resize(1400, 860);

  runner_ = new JobRunner(this);
  jobs_ = new PanelJobs(
      panel_, runner_, 250, [this] { run(); }, this);
  connect(jobs_, &PanelJobs::dropped, this, [this] { emit finished(false); });
  connect(panel_, &ui::FeaturePanel::distanceChanged, this, &FeaturesWindow::updatePicks);
  connect(panel_, &ui::FeaturePanel::timeAllRequested, this, &FeaturesWindow::timeAll);
  connect(runner_, &JobRunner::progress, this, [this](qint64 done, qint64 total) {
    // Calls of a tiled run, or searches within one call: only the share means the same.
    if (total > 0)
      statusBar()->showMessage(
          tr("Features: %1% done").arg(std::min<qint64>(100, done * 100 / total)), 3000);
  });
  connect(panel_, &ui::FeaturePanel::clearPicksRequested, this, [this] {
    pick_a_ = pick_b_ = -1;
    panel_->setPickSlot(0);
    updatePicks();
  });
  auto export_as = [this](const QString& title, const QString& name, const QString& filter) {
    if (!last_) {
      QMessageBox::information(this, title, tr("Compute the features first."));
      return;
    }
    save_with_dialog(this, {title, name, filter}, [this](const QString& path) {
      QString error;
      if (!exportFeatures(path, &error)) throw Error(error.toStdString());
      return true;
    });
  };
  connect(panel_, &ui::FeaturePanel::exportPcdRequested, this,
          [export_as] { export_as(tr("Export descriptors"), "features.pcd", tr("PCD (*.pcd)")); });
  connect(panel_, &ui::FeaturePanel::exportCsvRequested, this,
          [export_as] { export_as(tr("Export descriptors"), "features.csv", tr("CSV (*.csv)")); });
  connect(view_, &ui::VtkCloudView::pointPicked, this,
          [this](qint64 index) { pickPoint(index, panel_->pickSlot()); });
  auto refill = [this] { refillCombo(); };
  connect(document_, &QAbstractItemModel::rowsInserted, this, refill);
  connect(document_, &QAbstractItemModel::rowsRemoved, this, refill);
  connect(cloud_, &QComboBox::currentIndexChanged, this, &FeaturesWindow::cloudChanged);
  refillCombo();
}

void FeaturesWindow::refillCombo() {
  list_clouds(cloud_, *document_);
  if (cloud() != last_cloud_ || !view_->cloud()) cloudChanged();
}

void FeaturesWindow::setCloudRow(int row) {
  const int at = cloud_->findData(row);
  if (at >= 0 && at != cloud_->currentIndex())
    cloud_->setCurrentIndex(at);
  else if (cloud() != view_->cloud())
    cloudChanged();
}

std::shared_ptr<const PointCloud> FeaturesWindow::cloud() const {
  const QVariant row = cloud_->currentData();
  if (!row.isValid() || row.toInt() >= document_->count()) return nullptr;
  return document_->at(row.toInt()).cloud;
}

void FeaturesWindow::cloudChanged() {
  // Results belong to the cloud they were computed for (onResult drops the others); another
  // cloud starts afresh.
  last_.reset();
  last_cloud_ = cloud();
  pick_a_ = pick_b_ = -1;
  panel_->setPickSlot(0);
  if (last_cloud_)
    view_->setCloud(last_cloud_, true);
  else
    view_->clearCloud();
  panel_->setStatus(last_cloud_ ? tr("Compute the features of this cloud.")
                                : tr("Open a point cloud first."));
  updatePicks();
  if (last_cloud_) jobs_->rerunSoon();
}

void FeaturesWindow::start(bool all_methods) {
  jobs_->started();
  const auto c = cloud();
  if (!c) {
    panel_->setError(tr("Open a point cloud first."));
    return;
  }
  FeatureJob job;
  job.cloud = c;
  job.params = panel_->params();
  job.all_methods = all_methods;
  std::vector<FeatureMethod> methods{panel_->method()};
  if (all_methods) {
    methods.clear();
    for (auto m : cumulus::all_methods<FeatureMethod>())
      if (m == FeatureMethod::Cpu || query_device().available) methods.push_back(m);
  }
  panel_->setBusy(true);
  // One job at a time; the newest request runs when the one before it ends.
  runner_->start(
      [job, methods](const JobControl& control) { return run_feature_job(job, methods, control); },
      [this](FeatureJob done) { onResult(std::move(done)); },
      [this](const QString& error) {
        panel_->setError(error);  // the previous result, if any, stays
        emit finished(false);
      });
}

bool FeaturesWindow::busy() const {
  return runner_->busy();
}

void FeaturesWindow::onResult(FeatureJob job) {
  if (job.cloud != cloud() || job.results.empty()) {
    emit finished(false);
    return;
  }
  if (job.all_methods) panel_->setTimings(job.results);
  FeatureResult* chosen = &job.results.front();
  for (auto& r : job.results)
    if (r.method == method_name(panel_->method())) chosen = &r;
  last_ = std::make_shared<const FeatureResult>(std::move(*chosen));
  last_cloud_ = job.cloud;
  last_params_ = job.params;
  panel_->setResult(*last_, job.cloud->size());
  updatePicks();
  emit finished(true);
}

void FeaturesWindow::pickPoint(qint64 index, int slot) {
  const auto c = cloud();
  if (!c || index >= qint64(c->size())) return;
  if (slot == 1) {
    pick_b_ = index;
  } else {
    pick_a_ = index;
    if (index >= 0) panel_->setPickSlot(1);  // the natural next click is the comparison
  }
  updatePicks();
}

void FeaturesWindow::updatePicks() {
  const auto c = cloud();
  neighbourhood_.clear();
  distances_.clear();
  if (c && pick_a_ >= 0) {
    const Point3f p = c->points[std::size_t(pick_a_)];
    if (std::isfinite(p.x) && std::isfinite(p.y) && std::isfinite(p.z))
      neighbourhood_ =
          neighbours_of(c->points, std::size_t(pick_a_),
                        last_ ? last_params_.neighbourhood : panel_->params().neighbourhood);
  }
  if (last_ && pick_a_ >= 0)
    distances_ = histogram_distances(*last_, last_->row(std::size_t(pick_a_)), panel_->distance());

  QString text;
  if (!c) {
    text = tr("No cloud.");
  } else if (pick_a_ < 0) {
    text = tr("Click a point in the view to see its histogram.");
  } else {
    const Point3f p = c->points[std::size_t(pick_a_)];
    text = tr("A: point %1 (%2, %3, %4), %5 neighbours")
               .arg(pick_a_)
               .arg(double(p.x), 0, 'g', 5)
               .arg(double(p.y), 0, 'g', 5)
               .arg(double(p.z), 0, 'g', 5)
               .arg(neighbourhood_.size());
    if (pick_b_ >= 0) {
      text += tr("; B: point %1").arg(pick_b_);
      if (last_) {
        const float d = distances_.empty() ? NAN : distances_[std::size_t(pick_b_)];
        text += tr(", %1 distance to A %2")
                    .arg(panel_->distance() == HistogramDistance::L2 ? "L2" : "chi-squared")
                    .arg(double(d), 0, 'g', 4);
      }
    }
    if (!last_) text += tr(". Compute the features to see histograms.");
  }
  if (last_)
    panel_->setPicks(row_of(*last_, pick_a_), row_of(*last_, pick_b_), text);
  else
    panel_->setPicks({}, {}, text);
  recolor();
}

void FeaturesWindow::recolor() {
  const auto c = cloud();
  if (!c || !view_->cloud()) return;
  view_->setPickedPoint(pick_a_);
  if (pick_a_ < 0 && pick_b_ < 0) {
    view_->setColorMode(view_->colorMode());  // back to the ordinary colouring
    return;
  }
  std::vector<Rgb8> colors;
  if (!distances_.empty()) {
    // Turbo from 0 (similar, blue) to the 95th percentile of the finite distances; the scale
    // ignores the few most different points so that it shows structure, not outliers.
    std::vector<float> finite;
    finite.reserve(distances_.size());
    for (float d : distances_)
      if (std::isfinite(d)) finite.push_back(d);
    float hi = 1.0f;
    if (!finite.empty()) {
      auto at = finite.begin() + std::ptrdiff_t(finite.size() * 95 / 100);
      std::nth_element(finite.begin(), at, finite.end());
      hi = *at > 0 ? *at : 1.0f;
    }
    colors.resize(distances_.size());
    for (std::size_t i = 0; i < distances_.size(); ++i)
      colors[i] = std::isfinite(distances_[i])
                      ? ui::turbo(std::min(1.0, double(distances_[i]) / double(hi)))
                      : Rgb8{90, 90, 90};
  } else {
    colors.assign(c->size(), Rgb8{150, 150, 150});
  }
  for (std::int32_t i : neighbourhood_)
    colors[std::size_t(i)] = {230, 40, 230};
  if (pick_b_ >= 0) colors[std::size_t(pick_b_)] = {0, 230, 230};
  view_->setColors(colors);
}

bool FeaturesWindow::exportFeatures(const QString& path, QString* error) const {
  if (!last_ || !last_cloud_) {
    if (error) *error = tr("Nothing computed yet.");
    return false;
  }
  try {
    if (path.endsWith(".pcd", Qt::CaseInsensitive))
      write_features_pcd(path.toStdString(), *last_);
    else
      write_features_csv(path.toStdString(), *last_cloud_, *last_);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return false;
  }
  return true;
}

}  // namespace cumulus::app
