#pragma once
// Opening files into the document: each file read off the UI thread (several at once), added
// when it arrives; a failure reported without touching what is already open.
#include <QObject>
#include <QStringList>

#include "document.h"
#include "job_runner.h"

namespace cumulus::app {

class DatasetLoader : public QObject {
  Q_OBJECT

 public:
  DatasetLoader(DocumentModel* document, QObject* parent);

  // Reads in the background; depth images take `depth_scale` metres per unit.
  void open(const QStringList& paths, double depth_scale);
  // Reads on the calling thread (scripted runs, tests); returns the error messages.
  QStringList openNow(const QStringList& paths, double depth_scale);
  bool loading() const { return pending_ > 0; }
  // A file read cannot be interrupted half-way; what is still being read is dropped on arrival.
  void cancel();

 signals:
  void opened(int row);
  void failed(const QString& message);
  void loadingChanged(bool loading);
  void loadingFinished();
  void cancelled();

 private:
  void settle();

  DocumentModel* document_;
  JobRunner* runner_;
  int pending_ = 0;  // reads started and not yet delivered
};

}  // namespace cumulus::app
