#include "sequence_player.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "io/io.h"
#include "sequence/sequence.h"
#include "sequence/trajectory.h"

namespace cumulus::app {

namespace {

constexpr std::size_t kAhead = 8;  // frames read ahead, within the budget

std::size_t bytes_of(const PointCloud& c) {
  std::size_t b = c.points.size() * sizeof(Point3f) + c.intensity.size() * sizeof(float) +
                  c.rgb.size() * sizeof(Rgb8) + c.normals.size() * sizeof(Point3f) +
                  c.labels.size() * sizeof(std::int32_t);
  for (const auto& e : c.extra)
    b += e.values.size() * sizeof(double);
  return b;
}

}  // namespace

SequencePlayer::SequencePlayer(DocumentModel* document, std::function<bool()> busy, QObject* parent)
    : QObject(parent), document_(document), busy_(std::move(busy)) {
  timer_.setTimerType(Qt::PreciseTimer);
  connect(&timer_, &QTimer::timeout, this, &SequencePlayer::tick);
}

int SequencePlayer::open(const QString& spec) {
  auto seq = std::make_shared<SequenceInfo>();
  seq->spec = spec;
  seq->frames = sequence_frames(spec.toStdString());
  // KITTI keeps times.txt beside (or above) the frames' folder.
  const std::filesystem::path first(seq->frames.front());
  for (const auto& dir : {first.parent_path(), first.parent_path().parent_path()}) {
    const auto times = dir / "times.txt";
    if (!std::filesystem::exists(times)) continue;
    std::vector<double> t = read_times(times.string());
    if (t.size() == seq->frames.size()) seq->times = std::move(t);
    break;
  }
  Dataset d;
  d.name = QFileInfo(spec).fileName().isEmpty() ? spec : QFileInfo(spec).fileName();
  d.cloud = std::make_shared<const PointCloud>(load_cloud(seq->frames.front()));
  d.sequence = std::move(seq);
  const int row = document_->add(std::move(d));
  setRow(row);
  return row;
}

const SequenceInfo* SequencePlayer::info() const {
  if (row_ < 0 || row_ >= document_->count()) return nullptr;
  return document_->at(row_).sequence.get();
}

void SequencePlayer::setRow(int row) {
  if (row == row_) return;
  pause();
  row_ = row >= 0 && row < document_->count() && document_->at(row).sequence ? row : -1;
  cache_.clear();
  loading_.clear();
  broken_.clear();
  wanted_ = -1;
  skipped_ = 0;
  ++generation_;
  if (row_ >= 0) {
    cache_[frame()] = document_->at(row_).cloud;
    prefetch(frame() + 1);
  }
  emit stateChanged();
}

std::size_t SequencePlayer::frameCount() const {
  const SequenceInfo* s = info();
  return s ? s->frames.size() : 0;
}

std::size_t SequencePlayer::frame() const {
  return row_ >= 0 && row_ < document_->count() ? document_->at(row_).frame : 0;
}

std::size_t SequencePlayer::cachedBytes() const {
  std::size_t b = 0;
  for (const auto& [k, c] : cache_)
    b += bytes_of(*c);
  return b;
}

void SequencePlayer::play() {
  if (row_ < 0 || frameCount() < 2) return;
  if (frame() + 1 >= frameCount() && !loop_) show(0);
  start_frame_ = frame();
  skipped_ = 0;
  clock_.start();
  timer_.start(std::max(1, int(1000 / rate_ / 4)));  // a few ticks a frame
  emit stateChanged();
}

void SequencePlayer::pause() {
  timer_.stop();
  emit stateChanged();
}

void SequencePlayer::step(int delta) {
  pause();
  const long long n = (long long)frameCount();
  if (n == 0) return;
  long long f = (long long)frame() + delta;
  if (loop_)
    f = ((f % n) + n) % n;
  else
    f = std::clamp(f, 0LL, n - 1);
  seek(int(f));
}

void SequencePlayer::reportBroken(std::size_t f) {
  const SequenceInfo* s = info();
  emit failed(tr("Frame %1 (%2): %3")
                  .arg(f)
                  .arg(s ? QString::fromStdString(s->frames[f]) : QString())
                  .arg(broken_[f]));
}

void SequencePlayer::seek(int f) {
  if (row_ < 0 || f < 0 || std::size_t(f) >= frameCount()) return;
  if (broken_.count(std::size_t(f))) return reportBroken(std::size_t(f));  // asked for again
  if (const auto it = cache_.find(std::size_t(f)); it != cache_.end()) {
    wanted_ = -1;
    show(std::size_t(f));
  } else {
    wanted_ = f;
    request(std::size_t(f));
  }
}

void SequencePlayer::setRate(double fps) {
  if (!(fps > 0) || !std::isfinite(fps)) return;
  const bool was = playing();
  if (was) pause();
  rate_ = std::clamp(fps, 0.1, 1000.0);
  if (was) play();
  emit stateChanged();
}

void SequencePlayer::tick() {
  const std::size_t n = frameCount();
  if (n == 0) return pause();
  // The frame due now, in real time from where playback started.
  std::size_t due = start_frame_ + std::size_t(double(clock_.elapsed()) * rate_ / 1000.0);
  if (due >= n) {
    if (!loop_) {
      if (frame() + 1 >= n) return pause();
      due = n - 1;
    } else {
      start_frame_ = 0;
      clock_.restart();
      due = 0;
    }
  }
  if (due == frame()) return;
  prefetch(due);
  // A panel still busy with the last frame, or a frame not read yet: this one passes unseen.
  if ((busy_ && busy_()) || !cache_.count(due)) return;
  const std::size_t from = frame();
  if (due > from) skipped_ += due - from - 1;
  show(due);
}

void SequencePlayer::show(std::size_t f) {
  const auto it = cache_.find(f);
  if (it == cache_.end() || row_ < 0) return;
  document_->setFrame(row_, f, it->second);
  evict(f);
  prefetch(f + 1);
  emit frameShown(row_, int(f));
  emit stateChanged();
}

void SequencePlayer::request(std::size_t f) {
  const SequenceInfo* s = info();
  if (!s || f >= s->frames.size() || cache_.count(f) || loading_.count(f) || broken_.count(f))
    return;
  loading_.insert(f);
  auto* watcher = new QFutureWatcher<std::shared_ptr<const PointCloud>>(this);
  const unsigned generation = generation_;
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, f, generation] {
    watcher->deleteLater();
    if (generation != generation_) return;
    loading_.erase(f);
    try {
      cache_[f] = watcher->result();
    } catch (const std::exception& e) {
      // Said once; playback passes over it (read-ahead does not try it again).
      broken_[f] = QString::fromUtf8(e.what());
      reportBroken(f);
      if (wanted_ == (long long)f) wanted_ = -1;
      return;
    }
    if (wanted_ == (long long)f) {
      wanted_ = -1;
      show(f);
    }
  });
  watcher->setFuture(QtConcurrent::run([path = s->frames[f]] {
    return std::shared_ptr<const PointCloud>(std::make_shared<PointCloud>(load_cloud(path)));
  }));
}

void SequencePlayer::prefetch(std::size_t from) {
  const std::size_t n = frameCount();
  // Within the budget at the current frame's size.
  const std::size_t each =
      cache_.count(frame()) ? std::max<std::size_t>(bytes_of(*cache_[frame()]), 1) : 1;
  const std::size_t room = std::max<std::size_t>(1, budget_ / each);
  for (std::size_t k = 0; k < std::min(kAhead, room) && from + k < n; ++k)
    request(from + k);
}

void SequencePlayer::evict(std::size_t around) {
  for (auto it = cache_.begin(); it != cache_.end();) {
    const bool keep = it->first == around || (it->first > around && it->first <= around + kAhead);
    it = keep ? std::next(it) : cache_.erase(it);
  }
  while (cache_.size() > 1 && cachedBytes() > budget_)
    cache_.erase(std::prev(cache_.end()));
}

}  // namespace cumulus::app
