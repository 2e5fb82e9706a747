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
  void collect(StageTimes& out) const {
    for (std::size_t i = 1; i < events_.size(); ++i)
      out.emplace_back(names_[i], events_[i]->since(*events_[i - 1]));
  }

 private:
  cudaStream_t stream_;
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<std::string> names_;
};

}  // namespace cumulus::cuda
