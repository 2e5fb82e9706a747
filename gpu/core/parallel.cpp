// The host threads of core/parallel.h.
#include "core/parallel.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

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

namespace {

void pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// How long helpers spin after a wake: a GPU clustering of a LiDAR frame waits 0.1 ms for its
// labels, one of a million points about a millisecond.
constexpr auto kSpin = std::chrono::milliseconds(2);

}  // namespace

struct ReadyThreads::Job {
  const std::function<void(std::size_t)>* part;
  std::size_t parts;
  std::atomic<std::size_t> next{0}, done{0};
};

ReadyThreads::ReadyThreads(std::size_t helpers) {
  for (std::size_t i = 0; i < helpers; ++i)
    threads_.emplace_back([this] { spin_after_wakes(); });
}

ReadyThreads::~ReadyThreads() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_)
    t.join();
}

void ReadyThreads::wake() {
  {
    std::lock_guard<std::mutex> lock(m_);
    ++wakes_;
  }
  wake_.notify_all();
}

void ReadyThreads::take_parts(Job& job) {
  for (std::size_t p; (p = job.next.fetch_add(1)) < job.parts;) {
    (*job.part)(p);
    job.done.fetch_add(1);
  }
}

void ReadyThreads::spin_after_wakes() {
  std::uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(m_);
      wake_.wait(lock, [&] { return stopping_ || wakes_ != seen; });
      if (stopping_) return;
      seen = wakes_;
    }
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (unsigned k = 1;; ++k) {
      if (job_.load(std::memory_order_relaxed)) {
        // Counted inside before looking again (both sequentially consistent): run() clears
        // job_ and then waits for inside_ to reach zero, so no helper keeps a job past its run.
        inside_.fetch_add(1);
        Job* job = job_.load();
        if (job) take_parts(*job);
        inside_.fetch_sub(1);
        if (job) break;
      }
      if (k % 256 == 0 &&
          (stopping_.load(std::memory_order_relaxed) || std::chrono::steady_clock::now() > until))
        break;
      pause();
    }
  }
}

void ReadyThreads::run(std::size_t parts, const std::function<void(std::size_t)>& part) {
  std::exception_ptr error;
  std::mutex error_mutex;
  const std::function<void(std::size_t)> guarded = [&](std::size_t p) {
    try {
      part(p);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::unique_lock<std::mutex> busy(busy_, std::defer_lock);
  if (parts <= 1 || threads_.empty() || !busy.try_lock()) {
    for (std::size_t p = 0; p < parts; ++p)
      guarded(p);
  } else {
    Job job{&guarded, parts};
    job_.store(&job);
    take_parts(job);
    while (job.done.load() < parts)
      pause();
    job_.store(nullptr);
    while (inside_.load() != 0)
      pause();
  }
  if (error) std::rethrow_exception(error);
}

ReadyThreads& ready_threads() {
  static ReadyThreads threads(std::min<std::size_t>(7, host_threads() - 1));
  return threads;
}

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
