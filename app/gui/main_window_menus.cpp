// The main window's menus and its View toolbar, whose colour box switches the view between the
// cloud's own colourings and the clusters'.
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QListView>
#include <QMenuBar>
#include <QMessageBox>
#include <QToolBar>

#include "cluster_controller.h"
#include "compare_window.h"
#include "depth_view.h"
#include "features_window.h"
#include "history_window.h"
#include "main_window.h"
#include "registration_window.h"
#include "vtk_cloud_view.h"

namespace cumulus::app {

namespace {

// The colour box's cluster entry, handled by the clustering controller rather than the view.
constexpr int kClusterColourMode = 100;

}  // namespace

void MainWindow::buildActions() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(QIcon::fromTheme("document-open"), tr("&Open…"), this,
                               &MainWindow::openDialog);
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  file->addAction(tr("Open Se&quence…"), this, &MainWindow::openSequenceDialog);
  buildSessionActions(file);
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
  tools->addAction(tr("Compare Re&gistration Methods…"), this, [this] {
    if (auto* w = openIcpCompare()) w->show();
  });
  tools->addAction(tr("Compare Feat&ure Methods…"), this, [this] {
    if (auto* w = openFeaturesCompare()) w->show();
  });
  tools->addAction(tr("Compare &Pipeline Methods…"), this, [this] {
    if (auto* w = openPipelineCompare()) w->show();
  });
  tools->addAction(tr("&Registration…"), this, [this] { openRegistration()->show(); })
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
            .arg(QCoreApplication::applicationVersion(), device_label_->toolTip().toHtmlEscaped()));
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
      clustering_->applyColours();
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

void MainWindow::showClusterColours() {
  if (color_combo_->currentData().toInt() != kClusterColourMode)
    color_combo_->setCurrentIndex(color_combo_->findData(kClusterColourMode));  // colours too
  else
    clustering_->applyColours();
}

}  // namespace cumulus::app
