#pragma once
// Named stage timings, in milliseconds, in the order the stages ran.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace cumulus {

using StageTimes = std::vector<std::pair<std::string, double>>;

class WallTimer {
 public:
  WallTimer() : start_(std::chrono::steady_clock::now()) {}
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }
  void reset() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace cumulus
