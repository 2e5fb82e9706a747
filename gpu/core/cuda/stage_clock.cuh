#pragma once
// Records CUDA events between stages on one stream; times are read after the final sync.
#include <memory>
#include <string>
#include <vector>

#include "core/cuda/buffer.cuh"
#include "core/timing.h"

namespace cumulus::cuda {

class StageClock {
 public:
  // Unstarted, the clock records nothing until a mark: a chain whose first kernel stamps its
  // start (mark_stamped) needs no event ahead of its first launch, whose recording took 1.4-2.5 us
  // of the host's time before that launch (KITTI frame 0's clustering on an H200's host).
  explicit StageClock(cudaStream_t s, bool started = true) : stream_(s) {
    if (started) mark("");
  }
  bool started() const { return !marks_.empty(); }
  void mark(const std::string& stage_that_ended) {
    marks_.push_back({std::make_unique<Event>(), stage_that_ended, {}, nullptr, false});
    marks_.back().event->record(stream_);
  }
  // mark() for a chain of kernels that an event between two of them would break (it makes the
  // second wait for the first to end and be launched after it): the interval ends here and is
  // split among `stages`, stage k >= 1 running from stamps[k - 1] to stamps[k] (nanoseconds the
  // kernels took themselves, device_clock.cuh, in host memory by the time collect() runs) and
  // stages[0] taking the rest of the interval.
  void mark_split(std::vector<std::string> stages, const unsigned long long* stamps) {
    mark(stages[0]);
    marks_.back().stages = std::move(stages);
    marks_.back().stamps = stamps;
  }
  // A chain timed by its kernels alone, stage k from stamps[k] to stamps[k + 1]: collect() reads
  // no event for it, so the host may stop waiting for the stream once the stamps are in host
  // memory. Its event starts the next mark's interval.
  void mark_stamped(std::vector<std::string> stages, const unsigned long long* stamps) {
    mark_split(std::move(stages), stamps);
    marks_.back().stamped = true;
  }
  void collect(StageTimes& out) const {
    // An interval between two events is read once both have completed; a stamped chain's host
    // caller returned before its event had.
    for (std::size_t i = marks_.size(); i-- > 1;)
      if (!marks_[i].stamped) {
        marks_[i].event->wait();
        break;
      }
    for (std::size_t i = 0; i < marks_.size(); ++i) {
      const Mark& m = marks_[i];
      if (m.stamped) {
        for (std::size_t j = 0; j < m.stages.size(); ++j)
          out.emplace_back(m.stages[j], between(m.stamps[j], m.stamps[j + 1]));
        continue;
      }
      if (i == 0) continue;  // the clock's start
      const double interval = m.event->since(*marks_[i - 1].event);
      if (!m.stamps) {
        out.emplace_back(m.name, interval);
        continue;
      }
      const std::size_t first = out.size();
      out.emplace_back(m.name, 0.0);
      double rest = interval;
      for (std::size_t j = 1; j < m.stages.size(); ++j) {
        const double ms = between(m.stamps[j - 1], m.stamps[j]);
        out.emplace_back(m.stages[j], ms);
        rest -= ms;
      }
      out[first].second = rest > 0 ? rest : 0.0;
    }
  }

 private:
  static double between(unsigned long long a, unsigned long long b) {
    return b > a ? double(b - a) * 1e-6 : 0.0;
  }
  struct Mark {
    std::unique_ptr<Event> event;
    std::string name;
    std::vector<std::string> stages;   // split among these (mark_split, mark_stamped)
    const unsigned long long* stamps;  // the kernels' stamps, for the split
    bool stamped;                      // timed by the stamps alone
  };
  cudaStream_t stream_;
  std::vector<Mark> marks_;
};

}  // namespace cumulus::cuda
