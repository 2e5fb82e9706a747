#include "main_window.h"

#include "features_window.h"
#include "registration_window.h"

#include <QCloseEvent>
#include <QComboBox>
#include <QCoreApplication>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QListView>
#include <QMessageBox>
#include <QProgressBar>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QToolButton>
#include <QVBoxLayout>

#include "cluster_controller.h"
#include "cluster_panel.h"
#include "colormap.h"
#include "compare_window.h"
#include "core/device.h"
#include "core/error.h"
#include "dataset_loader.h"
#include "depth_view.h"
#include "dialogs.h"
#include "filter_controller.h"
#include "filter_panel.h"
#include "io/io.h"
#include "job_runner.h"
#include "odometry_controller.h"
#include "pipeline_controller.h"
#include "pipeline_panel.h"
#include "run_history.h"
#include "segment_controller.h"
#include "segment_panel.h"
#include "sequence_player.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

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

  // A short, framed label: the status bar's messages end where it begins, and a long reason
  // beside them read as one sentence ("...is truncated: GPU methods unavailable..."). The whole
  // story is its tooltip and in Help > About.
  device_label_ = new QLabel(this);
  device_label_->setFrameStyle(QFrame::Panel | QFrame::Sunken);
  const DeviceInfo dev = query_device();
  device_label_->setText(dev.available ? tr("GPU: %1").arg(QString::fromStdString(dev.name))
                                       : tr("No GPU: CPU methods only"));
  device_label_->setToolTip(
      dev.available ? tr("GPU: %1").arg(QString::fromStdString(describe(dev)))
                    : tr("GPU methods unavailable: %1").arg(QString::fromStdString(dev.reason)));
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

  loader_ = new DatasetLoader(document_, this);
  connect(loader_, &DatasetLoader::opened, this, [this](int row) {
    const QString path = document_->at(row).path;
    addRecent(path);
    if (!path.isEmpty()) last_dir_ = QFileInfo(path).absolutePath();
    setCurrentRow(row);
    statusBar()->showMessage(tr("Opened %1").arg(document_->at(row).name), 5000);
    emit datasetOpened(row);
  });
  connect(loader_, &DatasetLoader::failed, this, &MainWindow::reportError);
  connect(loader_, &DatasetLoader::loadingChanged, this, &MainWindow::updateLoadingUi);
  connect(loader_, &DatasetLoader::loadingFinished, this, &MainWindow::loadingFinished);
  connect(loader_, &DatasetLoader::cancelled, this,
          [this] { statusBar()->showMessage(tr("Loading cancelled"), 4000); });
  release_runner_ = new JobRunner(this, JobRunner::Policy::Each);

  buildDocks();
  buildActions();
  buildTimeline();
  restoreSettings();

  connect(cloud_view_, &ui::VtkCloudView::pointPicked, this, &MainWindow::onPointPicked);
  // A large cloud reaches the view a page at a time: the status bar says how far it has got.
  connect(cloud_view_, &ui::VtkCloudView::pointsArriving, this,
          [this](qulonglong got, qulonglong n) {
            if (n >= 2 * ui::CloudProp::kPage)
              statusBar()->showMessage(tr("%L1 of %L2 points in the view").arg(got).arg(n),
                                       got < n ? 0 : 4000);
          });
  // The dataset stays open and its algorithms keep working on it; only the view cannot show it.
  // Queued: a small cloud fails while it is being opened, before the "Opened" message.
  connect(
      cloud_view_, &ui::VtkCloudView::cloudFailed, this,
      [this](const QString& reason) {
        statusBar()->showMessage(tr("The 3D view cannot show this cloud: %1").arg(reason), 0);
      },
      Qt::QueuedConnection);
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

  const Workbench bench{document_,
                        cloud_view_,
                        depth_view_,
                        this,
                        statusBar(),
                        [this] { return currentRow(); },
                        [this](const QString& m) { reportError(m); },
                        [this] { return last_dir_; },
                        [this] { return exportDirectory(); },
                        [this](const QString& written) { noteExport(written); }};
  // The algorithm panels share the right dock area as tabs, clustering in front.
  const auto panel_dock = [this](ui::AlgorithmPanel* panel, const QString& title,
                                 const char* name) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(name);
    dock->setWidget(panel);
    addDockWidget(Qt::RightDockWidgetArea, dock);
    panel->setInFront(false);  // until its tab is the one shown
    connect(dock, &QDockWidget::visibilityChanged, panel, &ui::AlgorithmPanel::setInFront);
    return dock;
  };
  cluster_panel_ = new ui::ClusterPanel(this);
  auto* cluster_dock = panel_dock(cluster_panel_, tr("Euclidean Clustering"), "clustering");
  clustering_ = new ClusterController(bench, cluster_panel_, this);
  connect(clustering_, &ClusterController::finished, this, &MainWindow::clusteringFinished);
  connect(clustering_, &ClusterController::clusterColoursWanted, this,
          &MainWindow::showClusterColours);

  segment_panel_ = new ui::SegmentPanel(this);
  tabifyDockWidget(cluster_dock,
                   panel_dock(segment_panel_, tr("RDP Segmentation"), "segmentation"));
  filter_panel_ = new ui::FilterPanel(this);
  tabifyDockWidget(cluster_dock, panel_dock(filter_panel_, tr("Filters"), "filters"));
  pipeline_panel_ = new ui::PipelinePanel(this);
  auto* objects_dock = panel_dock(pipeline_panel_, tr("Objects"), "objects");
  tabifyDockWidget(cluster_dock, objects_dock);
  cluster_dock->raise();
  cluster_panel_->setInFront(true);
  filters_ = new FilterController(bench, filter_panel_, this);
  pipeline_ = new PipelineController(bench, pipeline_panel_, this);
  connect(objects_dock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
    if (visible) pipeline_->panelShown();
  });
  segmentation_ = new SegmentController(bench, segment_panel_, this);
  connect(segmentation_, &SegmentController::finished, this, &MainWindow::segmentationFinished);
  connect(segmentation_, &SegmentController::timingFinished, this,
          &MainWindow::segmentTimingFinished);
}

int MainWindow::currentRow() const {
  return list_->currentIndex().isValid() ? list_->currentIndex().row() : -1;
}

void MainWindow::setCurrentRow(int row) {
  list_->setCurrentIndex(document_->index(row));
}

void MainWindow::showDataset(int row) {
  pick_label_->clear();
  if (!keep_camera_ && player_) player_->setRow(row);
  if (player_) updateTimeline();
  if (odometry_ && !keep_camera_) odometry_->frameShown(row);
  if (row < 0 || row >= document_->count()) {
    cloud_view_->clearCloud();
    depth_view_->setImage(nullptr);
    info_label_->setText(tr("No dataset open."));
    setWindowTitle(tr("Cumulus"));
    return;
  }
  // A sequence's next frame is the same dataset moving on: panels follow it (frameChanged).
  if (!keep_camera_) {
    filters_->datasetShown(row);
    pipeline_->datasetShown(row);
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
    cloud_view_->setCloud(d.cloud, !keep_camera_);
    // A LiDAR scan clustered raw is one ground cluster: its objects come first, ground removed.
    const bool scan = d.sequence || PipelineController::looksLikeLidarScan(*d.cloud, d.path);
    if (keep_camera_) {
    } else if (auto* dock = findChild<QDockWidget*>(scan ? "objects" : "clustering")) {
      dock->raise();
      clustering_->datasetShown(row);
    }
    stack_->setCurrentWidget(cloud_view_);
  } else {
    if (!keep_camera_) clustering_->datasetShown(row);
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

bool MainWindow::clusteringBusy() const {
  return clustering_->busy();
}

bool MainWindow::segmentationBusy() const {
  return segmentation_->busy();
}

void MainWindow::runClustering() {
  clustering_->run();
}

void MainWindow::cancelClustering() {
  clustering_->cancel();
}

void MainWindow::runSegmentation() {
  segmentation_->run();
}

void MainWindow::timeAllSegmentMethods() {
  segmentation_->timeAllMethods();
}

void MainWindow::updateLoadingUi() {
  progress_->setVisible(loader_->loading());
  cancel_button_->setVisible(loader_->loading());
}

void MainWindow::onPointPicked(qint64 index) {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).isCloud()) return;
  const auto& c = *document_->at(row).cloud;
  if (index < 0 || std::size_t(index) >= c.size()) return;
  const auto& p = c.points[std::size_t(index)];
  QString text = document_->at(row).pointHtml(std::size_t(index));
  if (const auto& r = document_->at(row).clusters; r && std::size_t(index) < r->labels.size()) {
    const int id = r->labels[std::size_t(index)];
    text += tr("<br>cluster %1").arg(id);
    if (id >= 0) {
      cluster_panel_->selectCluster(id);
      clustering_->selectCluster(id);
    }
  }
  pick_label_->setText(text);
  statusBar()->showMessage(tr("Picked point #%L1 (%2, %3, %4)")
                               .arg(index)
                               .arg(c.origin[0] + p.x, 0, 'f', 3)
                               .arg(c.origin[1] + p.y, 0, 'f', 3)
                               .arg(c.origin[2] + p.z, 0, 'f', 3));
}

bool MainWindow::event(QEvent* e) {
  // Before the window is painted, the layouts that changed texts and rows invalidated are
  // settled, up to the window. Qt settles nested layouts one level a turn of the event loop
  // (a panel, then its dock, then the window), after this paint, and each level then repaints
  // the window again: a live result (the panel's status and lists) cost two more frames, which
  // held up the next parameter change's re-run (5-10 ms each with the GPU's OpenGL under Xvfb).
  if (e->type() == QEvent::UpdateRequest)
    for (int level = 0; level < 6; ++level)
      QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
  return QMainWindow::event(e);
}

void MainWindow::closeEvent(QCloseEvent* e) {
  cancelLoading();
  saveSettings();
  e->accept();
}

}  // namespace cumulus::app
