#include "main_window.h"

#include "features_window.h"
#include "registration_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QCoreApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QListView>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "cluster_panel.h"
#include "colormap.h"
#include "compare_window.h"
#include "cumulus/device.h"
#include "cumulus/error.h"
#include "cumulus/io.h"
#include "cumulus/projection.h"
#include "depth_view.h"
#include "history_window.h"
#include "run_history.h"
#include "segment_compare_window.h"
#include "segment_panel.h"
#include "status_progress.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

constexpr int kMaxRecent = 10;

const char* kOpenFilter =
    "All supported (*.pcd *.ply *.bin *.xyz *.txt *.csv *.png *.tif *.tiff);;"
    "Point clouds (*.pcd *.ply *.bin *.xyz *.txt *.csv);;Depth images (*.png *.tif *.tiff);;All "
    "files (*)";

LoadResult loadInBackground(const QString& path, double scale) {
  LoadResult r;
  r.path = path;
  try {
    r.dataset = loadDataset(path, scale);
  } catch (const std::exception& e) {
    r.error = QString::fromStdString(e.what());
  }
  return r;
}

}  // namespace

QString sampleScenePath() {
  const QString name = QStringLiteral("street_scene.pcd");
  QStringList dirs;
  if (qEnvironmentVariableIsSet("CUMULUS_SAMPLE_DATA"))
    dirs << qEnvironmentVariable("CUMULUS_SAMPLE_DATA");
  const QString exe = QCoreApplication::applicationDirPath();
  dirs << exe + "/../share/cumulus/sample_data" << QStringLiteral(CUMULUS_SOURCE_SAMPLE_DATA);
  for (const auto& d : dirs)
    if (QFileInfo::exists(d + "/" + name)) return QDir(d).absoluteFilePath(name);
  return {};
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("Cumulus"));
  setAcceptDrops(true);
  document_ = new DocumentModel(this);
  cloud_view_ = new ui::VtkCloudView(this);
  depth_view_ = new ui::DepthView(this);
  stack_ = new QStackedWidget(this);
  stack_->addWidget(cloud_view_);
  stack_->addWidget(depth_view_);
  setCentralWidget(stack_);

  device_label_ = new QLabel(this);
  const DeviceInfo dev = query_device();
  device_label_->setText(
      dev.available ? tr("GPU: %1").arg(QString::fromStdString(describe(dev)))
                    : tr("GPU methods unavailable: %1").arg(QString::fromStdString(dev.reason)));
  device_label_->setToolTip(device_label_->text());
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);
  progress_->setMaximumWidth(160);
  progress_->setVisible(false);
  cancel_button_ = new QToolButton(this);
  cancel_button_->setText(tr("Cancel"));
  cancel_button_->setVisible(false);
  connect(cancel_button_, &QToolButton::clicked, this, &MainWindow::cancelLoading);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_button_);
  statusBar()->addPermanentWidget(device_label_);

  buildDocks();
  buildActions();
  restoreSettings();

  connect(cloud_view_, &ui::VtkCloudView::pointPicked, this, &MainWindow::onPointPicked);
  connect(depth_view_, &ui::DepthView::hovered, this, [this](int col, int row, float d) {
    if (col < 0) return statusBar()->clearMessage();
    statusBar()->showMessage(DepthImage::is_valid(d)
                                 ? tr("pixel (%1, %2): %3 m").arg(col).arg(row).arg(d, 0, 'f', 3)
                                 : tr("pixel (%1, %2): invalid").arg(col).arg(row));
  });
}

MainWindow::~MainWindow() {
  cancelLoading();
}

void MainWindow::buildDocks() {
  list_ = new QListView(this);
  list_->setModel(document_);
  list_->setSelectionMode(QAbstractItemView::SingleSelection);
  list_->setContextMenuPolicy(Qt::ActionsContextMenu);
  connect(list_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& cur) { showDataset(cur.isValid() ? cur.row() : -1); });
  auto* dock = new QDockWidget(tr("Datasets"), this);
  dock->setObjectName("datasets");
  dock->setWidget(list_);
  addDockWidget(Qt::LeftDockWidgetArea, dock);

  auto* panel = new QWidget(this);
  auto* lay = new QVBoxLayout(panel);
  info_label_ = new QLabel(
      tr("Open a point cloud or a depth image (File ▸ Open, or drop files here)."), panel);
  info_label_->setWordWrap(true);
  info_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  pick_label_ = new QLabel(panel);
  pick_label_->setWordWrap(true);
  pick_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  lay->addWidget(info_label_);
  lay->addWidget(pick_label_);
  lay->addStretch();
  auto* info_dock = new QDockWidget(tr("Properties"), this);
  info_dock->setObjectName("properties");
  info_dock->setWidget(panel);
  addDockWidget(Qt::LeftDockWidgetArea, info_dock);

  cluster_panel_ = new ui::ClusterPanel(this);
  const DeviceInfo dev = query_device();
  cluster_panel_->setGpuAvailable(dev.available, QString::fromStdString(dev.reason));
  cluster_panel_->setMethod(default_cluster_method());
  auto* cluster_dock = new QDockWidget(tr("Euclidean Clustering"), this);
  cluster_dock->setObjectName("clustering");
  cluster_dock->setWidget(cluster_panel_);
  addDockWidget(Qt::RightDockWidgetArea, cluster_dock);
  // Parameter edits re-run after a short pause, so dragging a spin box does not queue a job
  // per step.
  cluster_debounce_ = new QTimer(this);
  cluster_debounce_->setSingleShot(true);
  cluster_debounce_->setInterval(250);
  connect(cluster_debounce_, &QTimer::timeout, this, &MainWindow::runClustering);
  connect(cluster_panel_, &ui::ClusterPanel::parametersChanged, this, [this] {
    if (cluster_panel_->live()) cluster_debounce_->start();
  });
  connect(cluster_panel_, &ui::ClusterPanel::runRequested, this, &MainWindow::runClustering);
  connect(cluster_panel_, &ui::ClusterPanel::cancelRequested, this, &MainWindow::cancelClustering);
  connect(cluster_panel_, &ui::ClusterPanel::clusterSelected, this, &MainWindow::selectCluster);
  connect(cluster_panel_, &ui::ClusterPanel::exportLabelsRequested, this,
          &MainWindow::exportClusterLabels);
  connect(cluster_panel_, &ui::ClusterPanel::exportFilesRequested, this,
          &MainWindow::exportClusterFiles);
  connect(cluster_panel_, &ui::ClusterPanel::exportCsvRequested, this,
          &MainWindow::exportClusterCsv);
  segment_panel_ = new ui::SegmentPanel(this);
  segment_panel_->setGpuAvailable(dev.available, QString::fromStdString(dev.reason));
  segment_panel_->setMethod(dev.available ? SegmentMethod::Gpu : SegmentMethod::CpuMt);
  auto* segment_dock = new QDockWidget(tr("RDP Segmentation"), this);
  segment_dock->setObjectName("segmentation");
  segment_dock->setWidget(segment_panel_);
  addDockWidget(Qt::RightDockWidgetArea, segment_dock);
  tabifyDockWidget(cluster_dock, segment_dock);
  cluster_dock->raise();
  segment_debounce_ = new QTimer(this);
  segment_debounce_->setSingleShot(true);
  segment_debounce_->setInterval(120);
  connect(segment_debounce_, &QTimer::timeout, this, &MainWindow::runSegmentation);
  connect(segment_panel_, &ui::SegmentPanel::parametersChanged, this, [this] {
    if (segment_panel_->live()) segment_debounce_->start();
  });
  connect(segment_panel_, &ui::SegmentPanel::runRequested, this, &MainWindow::runSegmentation);
  connect(segment_panel_, &ui::SegmentPanel::cancelRequested, this, [this] {
    ++segment_generation_;
    segment_rerun_ = false;
    segment_panel_->setError(tr("Cancelled."));
  });
  connect(segment_panel_, &ui::SegmentPanel::exportCsvRequested, this,
          [this] { exportSegments(false); });
  connect(segment_panel_, &ui::SegmentPanel::exportJsonRequested, this,
          [this] { exportSegments(true); });
  connect(segment_panel_, &ui::SegmentPanel::timeAllRequested, this,
          &MainWindow::timeAllSegmentMethods);
  connect(depth_view_, &ui::DepthView::columnClicked, this, [this](int c) {
    segment_panel_->inspectColumn(c);
    depth_view_->setInspectedColumn(c);
  });
}

void MainWindow::runSegmentation() {
  segment_debounce_->stop();
  const int row = currentRow();
  if (row < 0 || document_->at(row).isCloud()) {
    segment_panel_->setError(tr("Select a depth image to segment."));
    return;
  }
  if (segment_watcher_) {
    ++segment_generation_;
    segment_rerun_ = true;
    return;
  }
  segment_rerun_ = false;
  segment_watcher_ = new QFutureWatcher<SegmentJob>(this);
  connect(segment_watcher_, &QFutureWatcher<SegmentJob>::finished, this,
          &MainWindow::onSegmentFinished);
  segment_panel_->setBusy(true);
  const auto image = document_->at(row).depth;
  segment_watcher_->setFuture(
      QtConcurrent::run([image, params = segment_panel_->params(),
                         method = segment_panel_->method(), gen = ++segment_generation_] {
        SegmentJob job{image, nullptr, {}, gen};
        try {
          job.result = std::make_shared<SegmentResult>(segment_columns(*image, params, method));
        } catch (const std::exception& e) {
          job.error = QString::fromStdString(e.what());
        }
        return job;
      }));
}

void MainWindow::timeAllSegmentMethods() {
  const int row = currentRow();
  if (row < 0 || document_->at(row).isCloud()) {
    segment_panel_->setError(tr("Select a depth image to segment."));
    return;
  }
  auto* watcher = new QFutureWatcher<std::vector<ui::SegmentPanel::MethodTime>>(this);
  connect(watcher, &QFutureWatcher<std::vector<ui::SegmentPanel::MethodTime>>::finished, this,
          [this, watcher] {
            segment_panel_->setMethodTimes(watcher->result());
            watcher->deleteLater();
            emit segmentTimingFinished();
          });
  const bool gpu = query_device().available;
  watcher->setFuture(
      QtConcurrent::run([image = document_->at(row).depth, params = segment_panel_->params(), gpu] {
        std::vector<ui::SegmentPanel::MethodTime> out;
        SegmentResult ref;
        for (auto m : {SegmentMethod::Cpu, SegmentMethod::CpuMt, SegmentMethod::Gpu}) {
          const QString name = QString::fromUtf8(method_name(m));
          if (m == SegmentMethod::Gpu && !gpu) {
            out.push_back({name, -1, QObject::tr("no GPU")});
            continue;
          }
          try {
            segment_columns(*image, params, m);  // warm-up: thread start, GPU context, buffers
            const SegmentResult r = segment_columns(*image, params, m);
            const bool same =
                m == SegmentMethod::Cpu ||
                (r.rows == ref.rows && r.offsets == ref.offsets && r.levels == ref.levels);
            out.push_back({name, r.total_ms,
                           m == SegmentMethod::Cpu ? QObject::tr("reference")
                           : same                  ? QObject::tr("identical cut rows")
                                                   : QObject::tr("DIFFERENT cut rows")});
            if (m == SegmentMethod::Cpu) ref = r;
          } catch (const std::exception& e) {
            out.push_back({name, -1, QString::fromStdString(e.what())});
          }
        }
        return out;
      }));
}

void MainWindow::onSegmentFinished() {
  const SegmentJob job = segment_watcher_->result();
  segment_watcher_->deleteLater();
  segment_watcher_ = nullptr;
  const bool current = job.generation == segment_generation_;
  if (current && !job.error.isEmpty()) {
    segment_panel_->setError(job.error);
  } else if (current) {
    const int row = document_->findDepth(job.image.get());
    if (row >= 0) {
      document_->setSegments(row, job.result);
      RunHistory::instance().add(
          {QDateTime::currentDateTime(), "segment", QString::fromStdString(job.result->method),
           QString("epsilon %1 m").arg(segment_panel_->params().epsilon), document_->at(row).name,
           job.image->size(), job.result->total_ms, job.result->stages, QString()});
      if (row == currentRow()) {
        depth_view_->setSegments(job.result);
        segment_panel_->setResult(job.image, job.result);
      }
    }
  }
  if (segment_rerun_) runSegmentation();
  emit segmentationFinished(current && job.error.isEmpty());
}

void MainWindow::exportSegments(bool json) {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).segments) return;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export segments"), last_dir_ + (json ? "/segments.json" : "/segments.csv"),
      json ? tr("JSON (*.json)") : tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  try {
    save_segments(path.toStdString(), *document_->at(row).depth, *document_->at(row).segments,
                  json ? SegmentFormat::Json : SegmentFormat::Csv);
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
  } catch (const std::exception& e) {
    reportError(QString::fromStdString(e.what()));
  }
}

namespace {

// A cloud beyond one GPU call is clustered in slabs, which can report progress and stop
// between slabs when `progress` says so.
ClusterJob run_cluster_job(std::shared_ptr<const PointCloud> cloud, ClusterParams params,
                           ClusterMethod method, quint64 generation,
                           std::function<bool(std::size_t, std::size_t)> progress) {
  ClusterJob job;
  job.cloud = cloud;
  job.generation = generation;
  try {
    const std::size_t n = cloud->size();
    const bool slabs = is_gpu_method(method) && n > cluster_call_capacity(method, n);
    auto result = std::make_shared<ClusterResult>(
        slabs ? euclidean_cluster_tiled(cloud->points.data(), n, params, method, 0, progress)
              : euclidean_cluster(*cloud, params, method));
    job.summary = summarize_clusters(*cloud, *result);
    job.result = std::move(result);
  } catch (const std::exception& e) {
    job.error = QString::fromStdString(e.what());
  }
  return job;
}

constexpr int kClusterColourMode = 100;  // colour-combo entry handled here, not by the view

}  // namespace

SegmentCompareWindow* MainWindow::openSegmentCompare() {
  const int row = currentRow();
  if (row < 0 || document_->at(row).isCloud()) {
    reportError(tr("Select a depth image to compare segmentation methods on."));
    return nullptr;
  }
  auto* w = new SegmentCompareWindow(document_->at(row).depth, document_->at(row).name,
                                     segment_panel_->params(), this);
  w->setAttribute(Qt::WA_DeleteOnClose);
  return w;
}

RegistrationWindow* MainWindow::openRegistration() {
  if (!registration_) registration_ = new RegistrationWindow(document_, this);
  // The current cloud is the likely target; the next one the source.
  const int row = currentRow();
  int other = -1;
  for (int r = 0; r < document_->count(); ++r)
    if (r != row && document_->at(r).isCloud()) other = r;
  if (row >= 0 && other >= 0 && document_->at(row).isCloud()) registration_->setPair(other, row);
  registration_->raise();
  return registration_;
}

FeaturesWindow* MainWindow::openFeatures() {
  if (!features_) features_ = new FeaturesWindow(document_, this);
  const int row = currentRow();
  if (row >= 0 && document_->at(row).isCloud()) features_->setCloudRow(row);
  features_->raise();
  return features_;
}

CompareWindow* MainWindow::openCompare() {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).isCloud()) {
    reportError(tr("Select a point cloud to compare methods on."));
    return nullptr;
  }
  auto* w = new CompareWindow(document_->at(row).cloud, document_->at(row).name,
                              cluster_panel_->params(), this);
  w->setAttribute(Qt::WA_DeleteOnClose);
  return w;
}

void MainWindow::runClustering() {
  cluster_debounce_->stop();
  const int row = currentRow();
  if (row < 0 || !document_->at(row).isCloud()) {
    cluster_panel_->setError(tr("Select a point cloud to cluster."));
    return;
  }
  if (cluster_watcher_) {
    // A job stops between slabs at most; let it end unseen and start again with the new values.
    ++cluster_generation_;
    *cluster_stop_ = true;
    cluster_rerun_ = true;
    return;
  }
  cluster_rerun_ = false;
  cluster_watcher_ = new QFutureWatcher<ClusterJob>(this);
  connect(cluster_watcher_, &QFutureWatcher<ClusterJob>::finished, this,
          &MainWindow::onClusterFinished);
  cluster_panel_->setBusy(true);
  cluster_stop_ = std::make_shared<std::atomic<bool>>(false);
  auto progress = status_progress(statusBar(), cluster_stop_, tr("Clustering in slabs"));
  cluster_watcher_->setFuture(QtConcurrent::run(run_cluster_job, document_->at(row).cloud,
                                                cluster_panel_->params(), cluster_panel_->method(),
                                                ++cluster_generation_, progress));
}

void MainWindow::releaseGpuMemory() {
  auto* watcher = new QFutureWatcher<QString>(this);
  connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher] {
    const QString message = watcher->result();
    watcher->deleteLater();
    statusBar()->showMessage(message, 8000);
    emit gpuMemoryReleased(message);
  });
  watcher->setFuture(QtConcurrent::run([] {
    const DeviceInfo before = query_device();
    if (!before.available)
      return tr("No GPU memory to release: %1").arg(QString::fromStdString(before.reason));
    release_gpu_workspaces();
    const DeviceInfo after = query_device();
    return tr("Released GPU buffers: free device memory %1 MiB -> %2 MiB")
        .arg(before.free_memory >> 20)
        .arg(after.free_memory >> 20);
  }));
}

void MainWindow::cancelClustering() {
  ++cluster_generation_;  // the running job's result will be dropped
  *cluster_stop_ = true;  // and a job in slabs stops after the current one
  cluster_rerun_ = false;
  cluster_panel_->setBusy(false);
  cluster_panel_->setError(tr("Cancelled."));
}

void MainWindow::onClusterFinished() {
  const ClusterJob job = cluster_watcher_->result();
  cluster_watcher_->deleteLater();
  cluster_watcher_ = nullptr;
  const bool current = job.generation == cluster_generation_;
  if (current && !job.error.isEmpty()) {
    cluster_panel_->setError(job.error);
    statusBar()->showMessage(job.error, 8000);
  } else if (current) {
    RunHistory::instance().add(
        {QDateTime::currentDateTime(), "cluster", QString::fromStdString(job.result->method),
         QString("tolerance %1 m, size %2..%3")
             .arg(cluster_panel_->params().tolerance)
             .arg(qulonglong(cluster_panel_->params().min_size))
             .arg(qulonglong(cluster_panel_->params().max_size)),
         document_->findCloud(job.cloud.get()) >= 0
             ? document_->at(document_->findCloud(job.cloud.get())).name
             : QString(),
         job.cloud->size(), job.result->total_ms, job.result->stages, QString()});
    const int row = document_->findCloud(job.cloud.get());
    if (row >= 0) {
      document_->setClusters(row, job.result);
      if (row == currentRow()) {
        selected_cluster_ = -1;
        cloud_view_->setBox(nullptr);
        cluster_panel_->setResult(job.result, job.summary);
        color_combo_->setCurrentIndex(color_combo_->findData(kClusterColourMode));
        applyClusterColours();
      }
    }
  }
  if (cluster_rerun_) runClustering();
  emit clusteringFinished(current && job.error.isEmpty());
}

void MainWindow::applyClusterColours() {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).isCloud() || !document_->at(row).clusters) return;
  if (color_combo_->currentData().toInt() != kClusterColourMode) return;
  const auto& labels = document_->at(row).clusters->labels;
  std::vector<Rgb8> colours(labels.size());
  for (std::size_t i = 0; i < labels.size(); ++i) {
    Rgb8 c = ui::label_color(labels[i]);
    if (selected_cluster_ >= 0 && labels[i] != selected_cluster_)  // dim the others
      c = {std::uint8_t(40 + c.r / 5), std::uint8_t(40 + c.g / 5), std::uint8_t(40 + c.b / 5)};
    colours[i] = c;
  }
  cloud_view_->setColors(colours);
}

void MainWindow::selectCluster(int id) {
  const int row = currentRow();
  selected_cluster_ = id;
  if (row < 0 || !document_->at(row).isCloud() || !document_->at(row).clusters) return;
  const auto& d = document_->at(row);
  if (color_combo_->currentData().toInt() != kClusterColourMode)
    color_combo_->setCurrentIndex(color_combo_->findData(kClusterColourMode));
  applyClusterColours();
  if (id < 0 || std::size_t(id) >= d.clusters->sizes.size()) {
    cloud_view_->setBox(nullptr);
    return;
  }
  double b[6] = {1e300, -1e300, 1e300, -1e300, 1e300, -1e300};
  for (std::size_t i = 0; i < d.cloud->size(); ++i) {
    if (d.clusters->labels[i] != id) continue;
    const auto& p = d.cloud->points[i];
    b[0] = std::min(b[0], double(p.x)), b[1] = std::max(b[1], double(p.x));
    b[2] = std::min(b[2], double(p.y)), b[3] = std::max(b[3], double(p.y));
    b[4] = std::min(b[4], double(p.z)), b[5] = std::max(b[5], double(p.z));
  }
  cloud_view_->setBox(b);
  statusBar()->showMessage(tr("Cluster %1: %L2 points, %3 x %4 x %5 m")
                               .arg(id)
                               .arg(qulonglong(d.clusters->sizes[std::size_t(id)]))
                               .arg(b[1] - b[0], 0, 'f', 2)
                               .arg(b[3] - b[2], 0, 'f', 2)
                               .arg(b[5] - b[4], 0, 'f', 2));
}

void MainWindow::exportClusterLabels() {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).clusters) return;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save cloud with cluster labels"), last_dir_ + "/clusters.pcd",
      tr("PCD (*.pcd);;PLY (*.ply);;Text (*.xyz *.csv)"));
  if (path.isEmpty()) return;
  try {
    save_cloud(path.toStdString(),
               with_labels(*document_->at(row).cloud, *document_->at(row).clusters));
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
  } catch (const std::exception& e) {
    reportError(QString::fromStdString(e.what()));
  }
}

void MainWindow::exportClusterFiles() {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).clusters) return;
  const QString dir =
      QFileDialog::getExistingDirectory(this, tr("Folder for one file per cluster"), last_dir_);
  if (dir.isEmpty()) return;
  try {
    save_cluster_files(dir.toStdString(), *document_->at(row).cloud, *document_->at(row).clusters,
                       "pcd");
    statusBar()->showMessage(tr("Wrote %L1 cluster files to %2")
                                 .arg(qulonglong(document_->at(row).clusters->sizes.size()))
                                 .arg(dir),
                             5000);
  } catch (const std::exception& e) {
    reportError(QString::fromStdString(e.what()));
  }
}

void MainWindow::exportClusterCsv() {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).clusters) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Save cluster summary"),
                                                    last_dir_ + "/clusters.csv", tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  try {
    save_cluster_csv(path.toStdString(), *document_->at(row).cloud, *document_->at(row).clusters);
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
  } catch (const std::exception& e) {
    reportError(QString::fromStdString(e.what()));
  }
}

void MainWindow::buildActions() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(QIcon::fromTheme("document-open"), tr("&Open…"), this,
                               &MainWindow::openDialog);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  file->addAction(tr("&Save Dataset As…"), this, &MainWindow::saveAsDialog)
      ->setShortcut(QKeySequence::SaveAs);
  file->addSeparator();
  file->addAction(tr("&Export View Image…"), this, &MainWindow::exportViewDialog)
      ->setShortcut(tr("Ctrl+E"));
  file->addAction(tr("Save &Window Screenshot…"), this, &MainWindow::screenshotDialog);
  file->addSeparator();
  auto* close = file->addAction(tr("&Close Dataset"), this, &MainWindow::closeCurrent);
  close->setShortcut(QKeySequence::Close);
  list_->addAction(close);
  file->addSeparator();
  file->addAction(tr("&Quit"), qApp, &QApplication::closeAllWindows)
      ->setShortcut(QKeySequence::Quit);

  auto* view = menuBar()->addMenu(tr("&View"));
  auto* fit = view->addAction(tr("&Fit Camera"), this, [this] {
    cloud_view_->resetCamera();
    depth_view_->fitToWindow();
  });
  fit->setShortcut(tr("F"));
  ortho_action_ = view->addAction(tr("&Orthographic Projection"));
  ortho_action_->setCheckable(true);
  ortho_action_->setShortcut(tr("O"));
  connect(ortho_action_, &QAction::toggled, cloud_view_, &ui::VtkCloudView::setOrthographic);
  axes_action_ = view->addAction(tr("Show &Axes"));
  axes_action_->setCheckable(true);
  axes_action_->setChecked(true);
  connect(axes_action_, &QAction::toggled, cloud_view_, &ui::VtkCloudView::setAxesVisible);

  auto* data = menuBar()->addMenu(tr("&Data"));
  data->addAction(tr("Depth Image → Cloud (&Pinhole)…"), this,
                  [this] { depthToCloudDialog(false); });
  data->addAction(tr("Range Image → Cloud (&LiDAR)…"), this, [this] { depthToCloudDialog(true); });
  data->addAction(tr("Cloud → &Range Image…"), this, &MainWindow::cloudToRangeImageDialog);

  auto* tools = menuBar()->addMenu(tr("&Tools"));
  tools
      ->addAction(tr("&Compare CPU and GPU…"), this,
                  [this] {
                    // The algorithm follows the selected dataset: clouds cluster, images segment.
                    const int row = currentRow();
                    if (row >= 0 && !document_->at(row).isCloud()) {
                      if (auto* w = openSegmentCompare()) w->show();
                    } else if (auto* w = openCompare()) {
                      w->show();
                    }
                  })
      ->setShortcut(tr("Ctrl+K"));
  tools->addAction(tr("&Registration (ICP)…"), this, [this] { openRegistration()->show(); })
      ->setShortcut(tr("Ctrl+R"));
  tools->addAction(tr("&Features (normals, PFH, FPFH)…"), this, [this] { openFeatures()->show(); })
      ->setShortcut(tr("Ctrl+Shift+F"));
  tools->addAction(tr("Release &GPU Memory"), this, &MainWindow::releaseGpuMemory)
      ->setStatusTip(tr("Free the GPU buffers that methods keep between runs"));
  tools->addAction(tr("Timing &History…"), this, [this] {
    if (!history_) history_ = new HistoryWindow(this);
    history_->show();
    history_->raise();
  });

  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&About Cumulus"), this, [this] {
    QMessageBox::about(
        this, tr("About Cumulus"),
        tr("<b>Cumulus %1</b><br>A workbench for point clouds and depth images with GPU "
           "algorithms beside their CPU references.<br><br>%2")
            .arg(QCoreApplication::applicationVersion(), device_label_->text().toHtmlEscaped()));
  });

  auto* bar = addToolBar(tr("View"));
  bar->setObjectName("viewToolbar");
  bar->addAction(open);
  bar->addSeparator();
  bar->addWidget(new QLabel(tr(" Colour: "), bar));
  color_combo_ = new QComboBox(bar);
  color_combo_->addItem(tr("Height"), int(ui::ColorMode::Height));
  color_combo_->addItem(tr("Intensity"), int(ui::ColorMode::Intensity));
  color_combo_->addItem(tr("RGB"), int(ui::ColorMode::Rgb));
  color_combo_->addItem(tr("Label"), int(ui::ColorMode::Label));
  color_combo_->addItem(tr("Clusters"), kClusterColourMode);
  connect(color_combo_, &QComboBox::currentIndexChanged, this, [this](int i) {
    const int mode = color_combo_->itemData(i).toInt();
    if (mode == kClusterColourMode)
      applyClusterColours();
    else
      cloud_view_->setColorMode(ui::ColorMode(mode));
  });
  bar->addWidget(color_combo_);
  bar->addWidget(new QLabel(tr("  Point size: "), bar));
  point_size_ = new QDoubleSpinBox(bar);
  point_size_->setRange(1, 20);
  point_size_->setSingleStep(1);
  point_size_->setValue(2);
  connect(point_size_, &QDoubleSpinBox::valueChanged, cloud_view_, &ui::VtkCloudView::setPointSize);
  bar->addWidget(point_size_);
  bar->addSeparator();
  bar->addAction(fit);
  bar->addAction(ortho_action_);
  bar->addAction(axes_action_);
}

int MainWindow::currentRow() const {
  return list_->currentIndex().isValid() ? list_->currentIndex().row() : -1;
}

void MainWindow::setCurrentRow(int row) {
  list_->setCurrentIndex(document_->index(row));
}

void MainWindow::showDataset(int row) {
  pick_label_->clear();
  if (row < 0 || row >= document_->count()) {
    cloud_view_->clearCloud();
    depth_view_->setImage(nullptr);
    info_label_->setText(tr("No dataset open."));
    setWindowTitle(tr("Cumulus"));
    return;
  }
  const Dataset& d = document_->at(row);
  info_label_->setText(d.summaryHtml());
  setWindowTitle(tr("%1 — Cumulus").arg(d.name));
  if (d.isCloud()) {
    // Offer only the colourings this cloud supports.
    for (int i = 0; i < color_combo_->count(); ++i) {
      const auto mode = ui::ColorMode(color_combo_->itemData(i).toInt());
      color_combo_->setItemData(i, ui::supports(*d.cloud, mode) ? QVariant() : QVariant(0),
                                Qt::UserRole - 1);
    }
    auto mode = ui::ColorMode(color_combo_->currentData().toInt());
    if (!ui::supports(*d.cloud, mode)) {
      mode = d.cloud->has_labels() ? ui::ColorMode::Label
             : d.cloud->has_rgb()  ? ui::ColorMode::Rgb
                                   : ui::ColorMode::Height;
      color_combo_->setCurrentIndex(color_combo_->findData(int(mode)));
    }
    cloud_view_->setColorMode(mode);
    cloud_view_->setCloud(d.cloud);
    if (auto* dock = findChild<QDockWidget*>("clustering")) dock->raise();
    stack_->setCurrentWidget(cloud_view_);
  } else {
    depth_view_->setImage(d.depth);
    if (auto* dock = findChild<QDockWidget*>("segmentation")) dock->raise();
    depth_view_->setSegments(d.segments);
    if (d.segments)
      segment_panel_->setResult(d.depth, d.segments);
    else
      segment_panel_->clearResult();
    stack_->setCurrentWidget(depth_view_);
  }
}

void MainWindow::reportError(const QString& message) {
  statusBar()->showMessage(message, 10000);
  emit errorReported(message);
  if (!isVisible() || property("scripted").toBool()) return;
  // Non-blocking: the message must never hold up loads or renders still under way.
  auto* box = new QMessageBox(QMessageBox::Warning, tr("Cumulus"), message, QMessageBox::Ok, this);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

double MainWindow::askDepthScale(bool* ok) {
  QDialog dlg(this);
  dlg.setWindowTitle(tr("Depth scale"));
  auto* form = new QFormLayout(&dlg);
  auto* preset = new QComboBox(&dlg);
  for (const auto& p : depth_scale_presets())
    preset->addItem(QString::fromUtf8(p.label), QString::fromUtf8(p.name));
  preset->addItem(tr("Custom"), QStringLiteral("custom"));
  auto* custom = new QDoubleSpinBox(&dlg);
  custom->setDecimals(8);
  custom->setRange(1e-8, 1000);
  custom->setValue(0.001);
  custom->setSuffix(tr(" m per unit"));
  const int idx = preset->findData(depth_scale_text_);
  if (idx >= 0) {
    preset->setCurrentIndex(idx);
  } else {
    preset->setCurrentIndex(preset->count() - 1);
    custom->setValue(depth_scale_text_.toDouble());
  }
  custom->setEnabled(preset->currentData().toString() == "custom");
  connect(preset, &QComboBox::currentIndexChanged, custom,
          [=] { custom->setEnabled(preset->currentData().toString() == "custom"); });
  form->addRow(tr("16-bit values are"), preset);
  form->addRow(tr("Custom scale"), custom);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
  connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(buttons);
  *ok = dlg.exec() == QDialog::Accepted;
  if (!*ok) return 0;
  depth_scale_text_ = preset->currentData().toString() == "custom"
                          ? QString::number(custom->value(), 'g', 10)
                          : preset->currentData().toString();
  return parse_depth_scale(depth_scale_text_.toStdString());
}

void MainWindow::openDialog() {
  const QStringList paths =
      QFileDialog::getOpenFileNames(this, tr("Open"), last_dir_, tr(kOpenFilter));
  if (!paths.isEmpty()) openFiles(paths);
}

void MainWindow::openFiles(const QStringList& paths, double depth_scale) {
  bool any_depth = false;
  for (const auto& p : paths)
    any_depth = any_depth || is_depth_image_path(p.toStdString());
  if (any_depth && depth_scale <= 0) {
    bool ok = false;
    if (isVisible() && !property("scripted").toBool()) {
      depth_scale = askDepthScale(&ok);
      if (!ok) return;
    } else {
      depth_scale = parse_depth_scale(depth_scale_text_.toStdString());
    }
  }
  for (const auto& path : paths) {
    if (const int row = document_->findPath(path); row >= 0) {
      setCurrentRow(row);
      continue;
    }
    auto* watcher = new QFutureWatcher<LoadResult>(this);
    connect(watcher, &QFutureWatcher<LoadResult>::finished, this,
            [this, watcher] { onLoadFinished(watcher); });
    pending_.append(watcher);
    watcher->setFuture(QtConcurrent::run(loadInBackground, path, depth_scale));
    statusBar()->showMessage(tr("Loading %1…").arg(QFileInfo(path).fileName()));
  }
  updateLoadingUi();
}

QStringList MainWindow::openFilesNow(const QStringList& paths, double depth_scale) {
  QStringList errors;
  if (depth_scale <= 0) depth_scale = parse_depth_scale(depth_scale_text_.toStdString());
  for (const auto& path : paths) {
    const LoadResult r = loadInBackground(path, depth_scale);
    if (!r.error.isEmpty()) {
      errors << r.error;
      reportError(r.error);
      continue;
    }
    const int row = document_->add(r.dataset);
    addRecent(r.dataset.path);
    setCurrentRow(row);
    emit datasetOpened(row);
  }
  return errors;
}

void MainWindow::onLoadFinished(QFutureWatcher<LoadResult>* watcher) {
  pending_.removeAll(watcher);
  watcher->deleteLater();
  const LoadResult r = watcher->result();
  updateLoadingUi();
  if (!r.error.isEmpty()) {
    reportError(r.error);
  } else {
    const int row = document_->add(r.dataset);
    addRecent(r.dataset.path);
    last_dir_ = QFileInfo(r.dataset.path).absolutePath();
    setCurrentRow(row);
    statusBar()->showMessage(tr("Opened %1").arg(r.dataset.name), 5000);
    emit datasetOpened(row);
  }
  if (pending_.isEmpty()) emit loadingFinished();
}

void MainWindow::cancelLoading() {
  // A file read cannot be interrupted half-way; its result is dropped when it arrives.
  for (auto* w : pending_) {
    disconnect(w, nullptr, this, nullptr);
    connect(w, &QFutureWatcher<LoadResult>::finished, w, &QObject::deleteLater);
  }
  const bool had = !pending_.isEmpty();
  pending_.clear();
  updateLoadingUi();
  if (had) {
    statusBar()->showMessage(tr("Loading cancelled"), 4000);
    emit loadingFinished();
  }
}

void MainWindow::updateLoadingUi() {
  progress_->setVisible(!pending_.isEmpty());
  cancel_button_->setVisible(!pending_.isEmpty());
}

void MainWindow::onPointPicked(qint64 index) {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).isCloud()) return;
  const auto& c = *document_->at(row).cloud;
  if (index < 0 || std::size_t(index) >= c.size()) return;
  const auto& p = c.points[std::size_t(index)];
  QString text = tr("<b>Point #%L1</b><br>x %2<br>y %3<br>z %4")
                     .arg(index)
                     .arg(c.origin[0] + p.x, 0, 'f', 4)
                     .arg(c.origin[1] + p.y, 0, 'f', 4)
                     .arg(c.origin[2] + p.z, 0, 'f', 4);
  if (c.has_intensity()) text += tr("<br>intensity %1").arg(c.intensity[std::size_t(index)]);
  if (c.has_labels()) text += tr("<br>label %1").arg(c.labels[std::size_t(index)]);
  if (c.has_rgb()) {
    const auto col = c.rgb[std::size_t(index)];
    text += tr("<br>rgb %1 %2 %3").arg(col.r).arg(col.g).arg(col.b);
  }
  if (const auto& r = document_->at(row).clusters; r && std::size_t(index) < r->labels.size()) {
    const int id = r->labels[std::size_t(index)];
    text += tr("<br>cluster %1").arg(id);
    if (id >= 0) {
      cluster_panel_->selectCluster(id);
      selectCluster(id);
    }
  }
  pick_label_->setText(text);
  statusBar()->showMessage(tr("Picked point #%L1 (%2, %3, %4)")
                               .arg(index)
                               .arg(c.origin[0] + p.x, 0, 'f', 3)
                               .arg(c.origin[1] + p.y, 0, 'f', 3)
                               .arg(c.origin[2] + p.z, 0, 'f', 3));
}

bool MainWindow::exportViewImage(const QString& path, int width, int height, QString* error) {
  QImage img;
  const int row = currentRow();
  if (row >= 0 && !document_->at(row).isCloud()) {
    img = depth_view_->grab().toImage().scaled(width, height, Qt::KeepAspectRatio,
                                               Qt::SmoothTransformation);
  } else {
    img = cloud_view_->renderImage(width, height);
  }
  if (img.isNull() || !img.save(path, "PNG")) {
    if (error)
      *error = tr("%1: cannot write the image (bad size or folder not writable)").arg(path);
    return false;
  }
  return true;
}

bool MainWindow::saveWindowScreenshot(const QString& path, QString* error) {
  if (!grab().toImage().save(path, "PNG")) {
    if (error) *error = tr("%1: cannot write the screenshot").arg(path);
    return false;
  }
  return true;
}

bool MainWindow::saveCurrentDataset(const QString& path, QString* error) {
  const int row = currentRow();
  if (row < 0) {
    if (error) *error = tr("No dataset is selected");
    return false;
  }
  try {
    const Dataset& d = document_->at(row);
    if (d.isCloud())
      save_cloud(path.toStdString(), *d.cloud);
    else
      save_depth_png(path.toStdString(), *d.depth, d.depth->source_scale);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

void MainWindow::exportViewDialog() {
  QDialog dlg(this);
  dlg.setWindowTitle(tr("Export view image"));
  auto* form = new QFormLayout(&dlg);
  auto* w = new QSpinBox(&dlg);
  auto* h = new QSpinBox(&dlg);
  w->setRange(16, 16384);
  h->setRange(16, 16384);
  w->setValue(std::max(16, stack_->width() * 2));
  h->setValue(std::max(16, stack_->height() * 2));
  form->addRow(tr("Width (px)"), w);
  form->addRow(tr("Height (px)"), h);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
  connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(buttons);
  if (dlg.exec() != QDialog::Accepted) return;
  const QString path = QFileDialog::getSaveFileName(this, tr("Export view image"),
                                                    last_dir_ + "/view.png", tr("PNG (*.png)"));
  if (path.isEmpty()) return;
  QString err;
  if (!exportViewImage(path, w->value(), h->value(), &err))
    reportError(err);
  else
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

void MainWindow::screenshotDialog() {
  const QString path = QFileDialog::getSaveFileName(this, tr("Save window screenshot"),
                                                    last_dir_ + "/cumulus.png", tr("PNG (*.png)"));
  if (path.isEmpty()) return;
  QString err;
  if (!saveWindowScreenshot(path, &err))
    reportError(err);
  else
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

void MainWindow::saveAsDialog() {
  const int row = currentRow();
  if (row < 0) return reportError(tr("No dataset is selected"));
  const bool cloud = document_->at(row).isCloud();
  const QString filter =
      cloud ? tr("PCD (*.pcd);;PLY (*.ply);;KITTI bin (*.bin);;Text (*.xyz *.txt *.csv)")
            : tr("16-bit PNG (*.png)");
  const QString path = QFileDialog::getSaveFileName(this, tr("Save dataset as"), last_dir_, filter);
  if (path.isEmpty()) return;
  QString err;
  if (!saveCurrentDataset(path, &err))
    reportError(err);
  else
    statusBar()->showMessage(tr("Wrote %1").arg(path), 5000);
}

void MainWindow::closeCurrent() {
  const int row = currentRow();
  if (row >= 0) document_->remove(row);
  if (document_->count() > 0)
    setCurrentRow(std::min(row, document_->count() - 1));
  else
    showDataset(-1);
}

void MainWindow::depthToCloudDialog(bool lidar) {
  const int row = currentRow();
  if (row < 0 || document_->at(row).isCloud()) return reportError(tr("Select a depth image first"));
  const Dataset src = document_->at(row);
  QDialog dlg(this);
  dlg.setWindowTitle(lidar ? tr("Range image to cloud") : tr("Depth image to cloud"));
  auto* form = new QFormLayout(&dlg);
  auto spin = [&](const QString& label, double lo, double hi, double v) {
    auto* s = new QDoubleSpinBox(&dlg);
    s->setRange(lo, hi);
    s->setDecimals(3);
    s->setValue(v);
    form->addRow(label, s);
    return s;
  };
  QDoubleSpinBox *a = nullptr, *b = nullptr, *c = nullptr, *d = nullptr;
  if (lidar) {
    a = spin(tr("Upper field of view (deg)"), -90, 90, 2.0);
    b = spin(tr("Lower field of view (deg)"), -90, 90, -24.9);
  } else {
    a = spin(tr("fx (px)"), 0.001, 1e5, 525);
    b = spin(tr("fy (px)"), 0.001, 1e5, 525);
    c = spin(tr("cx (px)"), -1e5, 1e5, (src.depth->width - 1) / 2.0);
    d = spin(tr("cy (px)"), -1e5, 1e5, (src.depth->height - 1) / 2.0);
  }
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
  connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(buttons);
  if (dlg.exec() != QDialog::Accepted) return;
  try {
    Dataset out;
    out.name = src.name + (lidar ? " (LiDAR cloud)" : " (cloud)");
    if (lidar) {
      RangeImageModel m;
      m.fov_up_deg = a->value();
      m.fov_down_deg = b->value();
      out.cloud = std::make_shared<PointCloud>(range_image_to_cloud(*src.depth, m));
    } else {
      out.cloud = std::make_shared<PointCloud>(
          depth_to_cloud(*src.depth, {a->value(), b->value(), c->value(), d->value()}));
    }
    setCurrentRow(document_->add(std::move(out)));
  } catch (const std::exception& e) {
    reportError(QString::fromStdString(e.what()));
  }
}

void MainWindow::cloudToRangeImageDialog() {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).isCloud())
    return reportError(tr("Select a point cloud first"));
  const Dataset src = document_->at(row);
  QDialog dlg(this);
  dlg.setWindowTitle(tr("Cloud to range image"));
  auto* form = new QFormLayout(&dlg);
  auto* w = new QSpinBox(&dlg);
  auto* h = new QSpinBox(&dlg);
  w->setRange(8, 100000);
  w->setValue(1800);
  h->setRange(1, 4096);
  h->setValue(64);
  auto* up = new QDoubleSpinBox(&dlg);
  auto* down = new QDoubleSpinBox(&dlg);
  up->setRange(-90, 90);
  down->setRange(-90, 90);
  up->setValue(2.0);
  down->setValue(-24.9);
  form->addRow(tr("Width (columns per turn)"), w);
  form->addRow(tr("Height (beams)"), h);
  form->addRow(tr("Upper field of view (deg)"), up);
  form->addRow(tr("Lower field of view (deg)"), down);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dlg);
  connect(buttons, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
  form->addRow(buttons);
  if (dlg.exec() != QDialog::Accepted) return;
  try {
    RangeImageModel m{up->value(), down->value(), std::uint32_t(w->value()),
                      std::uint32_t(h->value())};
    Dataset out;
    out.name = src.name + " (range image)";
    auto img = std::make_shared<DepthImage>(cloud_to_range_image(*src.cloud, m));
    img->source_scale = 1.0 / 500.0;
    out.depth = img;
    setCurrentRow(document_->add(std::move(out)));
  } catch (const std::exception& e) {
    reportError(QString::fromStdString(e.what()));
  }
}

void MainWindow::addRecent(const QString& path) {
  if (path.isEmpty()) return;
  QSettings s;
  QStringList list = s.value("recentFiles").toStringList();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent)
    list.removeLast();
  s.setValue("recentFiles", list);
  rebuildRecentMenu();
}

QStringList MainWindow::recentFiles() const {
  return QSettings().value("recentFiles").toStringList();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  for (const auto& path : recentFiles())
    recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { openFiles({path}); })
        ->setToolTip(path);
  recent_menu_->setEnabled(!recent_menu_->isEmpty());
}

void MainWindow::restoreSettings() {
  QSettings s;
  restoreGeometry(s.value("geometry").toByteArray());
  restoreState(s.value("windowState").toByteArray());
  last_dir_ = s.value("lastDir", QDir::homePath()).toString();
  depth_scale_text_ = s.value("depthScale", "mm").toString();
  point_size_->setValue(s.value("pointSize", 2.0).toDouble());
  const int mode = s.value("colorMode", int(ui::ColorMode::Height)).toInt();
  if (const int i = color_combo_->findData(mode); i >= 0) color_combo_->setCurrentIndex(i);
  axes_action_->setChecked(s.value("axes", true).toBool());
  rebuildRecentMenu();
  if (!s.contains("geometry")) resize(1280, 800);
}

void MainWindow::saveSettings() const {
  QSettings s;
  s.setValue("geometry", saveGeometry());
  s.setValue("windowState", saveState());
  s.setValue("lastDir", last_dir_);
  s.setValue("depthScale", depth_scale_text_);
  s.setValue("pointSize", point_size_->value());
  s.setValue("colorMode", color_combo_->currentData());
  s.setValue("axes", axes_action_->isChecked());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  cancelLoading();
  saveSettings();
  e->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  QStringList paths;
  for (const auto& url : e->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (!paths.isEmpty()) openFiles(paths);
  e->acceptProposedAction();
}

}  // namespace cumulus::app
