// Reader threads for `cumulus-cli sequence` (frame_reader.h).
#include "frame_reader.h"

#include <algorithm>

#include "core/device.h"
#include "core/timing.h"
#include "io/io.h"

namespace cumulus::cli {

std::shared_ptr<PinnedPool::Buffer> PinnedPool::take(std::size_t n) {
  Buffer b;
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      b = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (b.capacity < n) {
    b.capacity = n + n / 8;  // room for the next frames' few more points
    b.points = allocate_pinned_points(b.capacity);
  }
  return std::shared_ptr<Buffer>(new Buffer(std::move(b)), [this](Buffer* q) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(*q));
    delete q;
  });
}

FrameReader::FrameReader(std::vector<std::string> paths, std::size_t capacity, std::size_t threads,
                         double depth_scale, PinnedPool* pinned)
    : paths_(std::move(paths)), capacity_(capacity), depth_scale_(depth_scale), pinned_(pinned) {
  for (std::size_t t = 0; t < threads; ++t)
    threads_.emplace_back([this] { run(); });
}

FrameReader::~FrameReader() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  for (auto& t : threads_)
    t.join();
}

std::optional<Frame> FrameReader::next() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return delivered_ == paths_.size() || ready_.count(delivered_); });
  if (delivered_ == paths_.size()) return std::nullopt;
  const auto it = ready_.find(delivered_);
  Frame f = std::move(it->second);
  ready_.erase(it);
  ++delivered_;
  changed_.notify_all();
  return f;
}

void FrameReader::run() {
  for (;;) {
    std::size_t i = 0;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(
          lock, [&] { return stop_ || next_ >= paths_.size() || next_ < delivered_ + capacity_; });
      if (stop_ || next_ >= paths_.size()) return;
      i = next_++;
    }
    Frame f{i, paths_[i], std::nullopt, std::nullopt, {}, 0, nullptr};
    WallTimer t;
    try {
      if (is_depth_image_path(paths_[i])) {
        f.depth = load_depth_image(paths_[i], depth_scale_);
        if (f.depth->count_valid() == 0) f.error = "no valid pixel";
      } else {
        f.cloud = load_cloud(paths_[i]);
        if (f.cloud->size() == f.cloud->count_non_finite()) f.error = "no finite point";
        if (pinned_ && f.error.empty()) {
          f.pinned = pinned_->take(f.cloud->size());
          std::copy(f.cloud->points.begin(), f.cloud->points.end(), f.pinned->points.get());
        }
      }
    } catch (const std::exception& e) {
      f.error = e.what();
    }
    f.read_ms = t.ms();
    {
      std::lock_guard lock(mutex_);
      ready_.emplace(i, std::move(f));
    }
    changed_.notify_all();
  }
}

}  // namespace cumulus::cli
