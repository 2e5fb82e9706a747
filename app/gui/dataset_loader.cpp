#include "dataset_loader.h"

namespace cumulus::app {

DatasetLoader::DatasetLoader(DocumentModel* document, QObject* parent)
    : QObject(parent), document_(document), runner_(new JobRunner(this, JobRunner::Policy::Each)) {}

void DatasetLoader::open(const QStringList& paths, double depth_scale) {
  for (const auto& path : paths) {
    ++pending_;
    runner_->start(
        [path, depth_scale](const JobControl&) { return loadDataset(path, depth_scale); },
        [this](Dataset d) {
          const int row = document_->add(std::move(d));
          --pending_;
          emit opened(row);
          settle();
        },
        [this](const QString& message) {
          --pending_;
          emit failed(message);
          settle();
        });
  }
  emit loadingChanged(loading());
}

QStringList DatasetLoader::openNow(const QStringList& paths, double depth_scale) {
  QStringList errors;
  for (const auto& path : paths) {
    try {
      const int row = document_->add(loadDataset(path, depth_scale));
      emit opened(row);
    } catch (const std::exception& e) {
      errors << QString::fromStdString(e.what());
      emit failed(errors.back());
    }
  }
  return errors;
}

void DatasetLoader::cancel() {
  const bool had = pending_ > 0;
  runner_->cancel();
  pending_ = 0;
  if (!had) return;
  emit loadingChanged(false);
  emit cancelled();
  emit loadingFinished();
}

void DatasetLoader::settle() {
  if (pending_ > 0) return;
  emit loadingChanged(false);
  emit loadingFinished();
}

}  // namespace cumulus::app
