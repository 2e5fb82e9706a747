#pragma once
// Playing a sequence in the main window: the current frame is the sequence dataset's cloud;
// play, pause, step, seek, loop and a rate in frames per second. Frames are read ahead off the
// UI thread within a memory budget. While the live panel is still busy with the last frame,
// the frames falling due are skipped (and counted), never queued: playback keeps real time.
#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <functional>
#include <map>
#include <memory>
#include <set>

#include "document.h"

namespace cumulus::app {

class SequencePlayer : public QObject {
  Q_OBJECT

 public:
  // `busy` tells whether the panel that re-runs on every frame is still at work.
  SequencePlayer(DocumentModel* document, std::function<bool()> busy, QObject* parent);

  // Opens a folder, pattern or list of frames as a dataset showing its first frame (read on
  // this thread); returns its row. Throws cumulus::Error (IoError for what cannot be read).
  int open(const QString& spec);

  // The sequence being played: a dataset row, or -1.
  void setRow(int row);
  int row() const { return row_; }
  std::size_t frameCount() const;
  std::size_t frame() const;
  bool playing() const { return timer_.isActive(); }
  std::size_t skipped() const { return skipped_; }
  double rate() const { return rate_; }
  bool loop() const { return loop_; }
  // Frames read ahead and kept, and their bytes.
  std::size_t cachedFrames() const { return cache_.size(); }
  std::size_t cachedBytes() const;
  void setBudget(std::size_t bytes) { budget_ = bytes; }

 public slots:
  void play();
  void pause();
  void step(int delta);  // pauses, then one frame on or back (wrapping when looping)
  void seek(int frame);  // shows it as soon as it is read; the latest request wins
  void setRate(double frames_per_second);
  void setLoop(bool on) { loop_ = on; }

 signals:
  // A frame is in the dataset (the view and the live panel follow the document).
  void frameShown(int row, int frame);
  void stateChanged();
  void failed(const QString& message);

 private:
  void tick();
  void show(std::size_t frame);
  void request(std::size_t frame);
  void prefetch(std::size_t from);
  void evict(std::size_t around);
  const SequenceInfo* info() const;
  void reportBroken(std::size_t frame);

  DocumentModel* document_;
  std::function<bool()> busy_;
  int row_ = -1;
  QTimer timer_;
  QElapsedTimer clock_;
  std::size_t start_frame_ = 0, skipped_ = 0;
  double rate_ = 10;
  bool loop_ = false;
  std::size_t budget_ = std::size_t(512) << 20;
  std::map<std::size_t, std::shared_ptr<const PointCloud>> cache_;
  std::set<std::size_t> loading_;
  std::map<std::size_t, QString> broken_;  // frames that could not be read, and why
  long long wanted_ = -1;                  // a seek waiting for its frame
  unsigned generation_ = 0;                // another sequence: reads of the old one are dropped
};

}  // namespace cumulus::app
