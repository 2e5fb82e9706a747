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
  explicit StageClock(cudaStream_t s) : stream_(s) { mark(""); }
  void mark(const std::string& stage_that_ended) {
    events_.push_back(std::make_unique<Event>());
    events_.back()->record(stream_);
    names_.push_back(stage_that_ended);
  }
  // mark() for a chain of kernels that an event between two of them would break (it makes the
  // second wait for the first to end and be launched after it): the interval ends here and is
  // split among `stages`, stage k >= 1 running from stamps[k - 1] to stamps[k] (nanoseconds the
  // kernels took themselves, device_clock.cuh, in host memory by the time collect() runs) and
  // stages[0] taking the rest of the interval.
  void mark_split(std::vector<std::string> stages, const unsigned long long* stamps) {
    mark(stages[0]);
    splits_.push_back({events_.size() - 1, std::move(stages), stamps});
  }
  void collect(StageTimes& out) const {
    std::size_t k = 0;
    for (std::size_t i = 1; i < events_.size(); ++i) {
      const double interval = events_[i]->since(*events_[i - 1]);
      if (k == splits_.size() || splits_[k].interval != i) {
        out.emplace_back(names_[i], interval);
        continue;
      }
      const Split& s = splits_[k++];
      const std::size_t first = out.size();
      out.emplace_back(names_[i], 0.0);
      double rest = interval;
      for (std::size_t j = 1; j < s.stages.size(); ++j) {
        const unsigned long long a = s.stamps[j - 1], b = s.stamps[j];
        const double ms = b > a ? double(b - a) * 1e-6 : 0.0;
        out.emplace_back(s.stages[j], ms);
        rest -= ms;
      }
      out[first].second = rest > 0 ? rest : 0.0;
    }
  }

 private:
  struct Split {
    std::size_t interval;  // the index of the event that closes it
    std::vector<std::string> stages;
    const unsigned long long* stamps;
  };
  cudaStream_t stream_;
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<std::string> names_;
  std::vector<Split> splits_;
};

}  // namespace cumulus::cuda
