#pragma once
// Ctrl-C and progress for long runs of cumulus-cli. Ctrl-C (or SIGTERM) ends the program at
// once, removing the temporary files of writes under way, so no file is ever left half
// written; during a run that reports progress (RunProgress) it instead stops the run between
// two steps, and the command ends with status 130 and a message.
#include <chrono>
#include <cstddef>
#include <string>

namespace cumulus::cli {

void install_interrupt_handler();

// The progress of one run on standard error when that is a terminal ("cluster (cpu): 41 %,
// 12 s"), shown after the first second, refreshed five times a second and cleared at the end.
// Pass it to the backend as std::ref(progress): it returns false once Ctrl-C was pressed.
class RunProgress {
 public:
  explicit RunProgress(std::string what);
  ~RunProgress();
  bool operator()(std::size_t done, std::size_t total);

 private:
  RunProgress(const RunProgress&) = delete;  // one per run: it counts runs with progress
  RunProgress& operator=(const RunProgress&) = delete;
  using Clock = std::chrono::steady_clock;
  std::string what_;
  bool terminal_ = false, shown_ = false;
  Clock::time_point start_, last_;
};

}  // namespace cumulus::cli
