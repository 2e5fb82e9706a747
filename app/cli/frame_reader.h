#pragma once
// The frames of `cumulus-cli sequence`: read by a few threads at most `capacity` ahead of the
// consumer and handed out in order, optionally with their points page-locked.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/depth_image.h"
#include "core/point_cloud.h"

namespace cumulus::cli {

// Page-locked point buffers the reader threads copy frames into, so that a GPU method uploads
// them by DMA (about 4x faster than from pageable memory). Buffers go back to the pool when the
// frame is done and are reused, grown only when a frame is larger than any before. The pool
// outlives every buffer it hands out.
class PinnedPool {
 public:
  struct Buffer {
    std::shared_ptr<Point3f[]> points;
    std::size_t capacity = 0;
  };
  // A buffer for n points; the handle gives it back when it goes.
  std::shared_ptr<Buffer> take(std::size_t n);

 private:
  std::mutex mutex_;
  std::vector<Buffer> free_;
};

struct Frame {
  std::size_t index = 0;
  std::string path;
  std::optional<PointCloud> cloud;
  std::optional<DepthImage> depth;  // a depth image frame (--task segment)
  std::string error;                // why it could not be read
  double read_ms = 0;
  std::shared_ptr<PinnedPool::Buffer> pinned;  // the cloud's points page-locked, when asked
};

class FrameReader {
 public:
  // With `pinned`, each cloud's points are also copied into a page-locked buffer from it.
  FrameReader(std::vector<std::string> paths, std::size_t capacity, std::size_t threads,
              double depth_scale, PinnedPool* pinned = nullptr);
  ~FrameReader();
  // The next frame in order, or nothing after the last.
  std::optional<Frame> next();

 private:
  void run();

  std::vector<std::string> paths_;
  std::size_t capacity_;
  double depth_scale_;
  PinnedPool* pinned_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::size_t, Frame> ready_;
  std::size_t next_ = 0, delivered_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace cumulus::cli
