// The main window's Tools menu: the compare, registration and features windows, and releasing
// the GPU buffers that methods keep between runs.
#include <QStatusBar>

#include "cluster_panel.h"
#include "compare_subject.h"
#include "compare_window.h"
#include "core/device.h"
#include "feature_panel.h"
#include "features_window.h"
#include "icp_panel.h"
#include "job_runner.h"
#include "main_window.h"
#include "pipeline_panel.h"
#include "registration_window.h"
#include "segment_panel.h"

namespace cumulus::app {

CompareWindow* MainWindow::openSegmentCompare() {
  const int row = currentRow();
  if (row < 0 || document_->at(row).isCloud()) {
    reportError(tr("Select a depth image to compare segmentation methods on."));
    return nullptr;
  }
  auto* w = new CompareWindow(
      segment_compare(document_->at(row).depth, document_->at(row).name, segment_panel_->params()),
      this);
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

CompareWindow* MainWindow::openIcpCompare() {
  RegistrationWindow* reg = openRegistration();
  const auto source = reg->sourceCloud(), target = reg->targetCloud();
  if (!source || !target) {
    reportError(tr("Open two point clouds and choose a source and a target to compare ICP on."));
    return nullptr;
  }
  const QString name = tr("%1 onto %2")
                           .arg(document_->at(document_->findCloud(source.get())).name,
                                document_->at(document_->findCloud(target.get())).name);
  auto* w = new CompareWindow(
      icp_compare(source, target, name, reg->panel()->params(), reg->panel()->perturbation()),
      this);
  w->setAttribute(Qt::WA_DeleteOnClose);
  return w;
}

CompareWindow* MainWindow::openFeaturesCompare() {
  FeaturesWindow* f = openFeatures();
  const auto cloud = f->cloud();
  if (!cloud) {
    reportError(tr("Open a point cloud to compare feature methods on."));
    return nullptr;
  }
  auto* w = new CompareWindow(
      features_compare(cloud, document_->at(document_->findCloud(cloud.get())).name,
                       f->panel()->params()),
      this);
  w->setAttribute(Qt::WA_DeleteOnClose);
  return w;
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
  auto* w = new CompareWindow(
      cluster_compare(document_->at(row).cloud, document_->at(row).name, cluster_panel_->params()),
      this);
  w->setAttribute(Qt::WA_DeleteOnClose);
  return w;
}

CompareWindow* MainWindow::openPipelineCompare() {
  const int row = currentRow();
  if (row < 0 || !document_->at(row).isCloud()) {
    reportError(tr("Select a point cloud to compare pipeline methods on."));
    return nullptr;
  }
  auto* w = new CompareWindow(pipeline_compare(document_->at(row).cloud, document_->at(row).name,
                                               pipeline_panel_->params()),
                              this);
  w->setAttribute(Qt::WA_DeleteOnClose);
  return w;
}

void MainWindow::releaseGpuMemory() {
  release_runner_->start(
      [](const JobControl&) {
        const DeviceInfo before = query_device();
        if (!before.available)
          return tr("No GPU memory to release: %1").arg(QString::fromStdString(before.reason));
        release_gpu_workspaces();
        const DeviceInfo after = query_device();
        return tr("Released GPU buffers: free device memory %1 MiB -> %2 MiB")
            .arg(before.free_memory >> 20)
            .arg(after.free_memory >> 20);
      },
      [this](const QString& message) {
        statusBar()->showMessage(message, 8000);
        emit gpuMemoryReleased(message);
      });
}

}  // namespace cumulus::app
