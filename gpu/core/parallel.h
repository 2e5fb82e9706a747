#pragma once
// Host passes over whole clouds cut into contiguous parts, one thread a part: the work between
// GPU calls (clustering in slabs) must not leave fifteen of sixteen cores idle.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cumulus {

// Threads a host pass may use: the machine's hardware threads, 1 when unknown.
inline std::size_t host_threads() {
  static const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  return threads;
}

// Parts for `n` items when a part should have at least `grain` of them: 1 for small passes,
// host_threads() for large ones.
inline std::size_t parts_for(std::size_t n, std::size_t grain = std::size_t(1) << 16) {
  return std::clamp<std::size_t>(n / std::max<std::size_t>(grain, 1), 1, host_threads());
}

// First item of part `p` of `parts` over [0, n): the same cut for every pass that uses the same
// n and parts, so a counting pass and the filling pass after it agree.
inline std::size_t part_begin(std::size_t n, std::size_t parts, std::size_t p) {
  return n / parts * p + std::min(p, n % parts);
}

// Runs part(p) for every p in [0, parts) on the process's host threads, started once and kept
// (a pass over a 2M-point chunk takes a few milliseconds, about what starting sixteen threads
// costs on a virtual machine), the calling thread included; returns when all have ended.
// `part` must not throw. While another caller has the threads, this one starts its own.
void run_parts(std::size_t parts, const std::function<void(std::size_t)>& part);

// Host threads kept ready for a short pass that follows a wait for the GPU. Waking a sleeping
// thread took 24 us (median; 40 at the 90th percentile) on an H200's 16-core host, longer than
// the pass it was to share (widening a KITTI frame's 124,668 labels: 20-24 us on one core, 9 us
// on four already running). wake() goes before the wait: the helpers then spin until run() hands
// them parts, or for about two milliseconds, and sleep again. run() never waits for a helper to
// come: the calling thread takes every part no helper has taken.
class ReadyThreads {
 public:
  explicit ReadyThreads(std::size_t helpers);
  ~ReadyThreads();
  ReadyThreads(const ReadyThreads&) = delete;
  ReadyThreads& operator=(const ReadyThreads&) = delete;

  void wake();
  // part(p) for every p in [0, parts), on the calling thread and the helpers that are spinning;
  // returns when all have run, then rethrows the first exception a part threw. While another
  // caller runs, this one runs its parts alone.
  void run(std::size_t parts, const std::function<void(std::size_t)>& part);
  std::size_t helpers() const { return threads_.size(); }

 private:
  struct Job;
  void spin_after_wakes();
  static void take_parts(Job& job);

  std::mutex m_, busy_;
  std::condition_variable wake_;
  std::uint64_t wakes_ = 0;
  std::atomic<bool> stopping_{false};  // set under m_: sleepers test it in their wait
  std::atomic<Job*> job_{nullptr};
  std::atomic<int> inside_{0};  // helpers that may be reading job_'s job
  std::vector<std::thread> threads_;
};

// The process's ready threads: up to seven helpers (fewer on smaller hosts): an RDP batch's
// chunk of eight images copies its results an image a thread.
ReadyThreads& ready_threads();

// fn(begin, end, part) for each of `parts` parts of [0, n). Every part runs to its end; the
// first exception thrown by any is rethrown here afterwards.
template <class Fn>
void parallel_parts(std::size_t n, std::size_t parts, Fn&& fn) {
  parts = std::max<std::size_t>(parts, 1);
  if (parts == 1) {
    fn(std::size_t(0), n, std::size_t(0));
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  run_parts(parts, [&](std::size_t p) {
    try {
      fn(part_begin(n, parts, p), part_begin(n, parts, p + 1), p);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace cumulus
