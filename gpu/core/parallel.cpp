// The host threads of core/parallel.h.
#include "core/parallel.h"

#include <condition_variable>
#include <cstdint>

namespace cumulus {

namespace {

// Workers that wait for a job and take its parts one at a time with the caller; one job at a
// time (a second caller meanwhile gets false and uses threads of its own).
class HostPool {
 public:
  explicit HostPool(std::size_t workers) {
    for (std::size_t i = 0; i < workers; ++i)
      threads_.emplace_back([this] { wait_for_jobs(); });
  }
  ~HostPool() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_)
      t.join();
  }
  HostPool(const HostPool&) = delete;
  HostPool& operator=(const HostPool&) = delete;

  bool try_run(std::size_t parts, const std::function<void(std::size_t)>& part) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    {
      std::lock_guard<std::mutex> lock(m_);
      job_ = &part;
      parts_ = parts;
      next_ = 0;
      pending_ = parts;
      ++generation_;
    }
    wake_.notify_all();
    take_parts();
    std::unique_lock<std::mutex> lock(m_);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    return true;
  }

 private:
  void take_parts() {
    while (true) {
      const std::function<void(std::size_t)>* job;
      std::size_t p;
      {
        std::lock_guard<std::mutex> lock(m_);
        if (!job_ || next_ >= parts_) return;
        job = job_;
        p = next_++;
      }
      (*job)(p);
      std::lock_guard<std::mutex> lock(m_);
      if (--pending_ == 0) done_.notify_all();
    }
  }

  void wait_for_jobs() {
    std::uint64_t seen = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(m_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
      }
      take_parts();
    }
  }

  std::mutex busy_, m_;
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t)>* job_ = nullptr;
  std::size_t parts_ = 0, next_ = 0, pending_ = 0;
  std::uint64_t generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

HostPool& host_pool() {
  static HostPool pool(host_threads() - 1);
  return pool;
}

}  // namespace

void run_parts(std::size_t parts, const std::function<void(std::size_t)>& part) {
  if (parts <= 1) {
    if (parts == 1) part(0);
    return;
  }
  if (host_pool().try_run(parts, part)) return;
  std::vector<std::thread> threads;
  threads.reserve(parts - 1);
  try {
    for (std::size_t p = 1; p < parts; ++p)
      threads.emplace_back(part, p);
  } catch (...) {  // no more threads to be had: the calling thread does the rest
    for (std::size_t p = threads.size() + 1; p < parts; ++p)
      part(p);
  }
  part(0);
  for (auto& t : threads)
    t.join();
}

}  // namespace cumulus
