#include "interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>

#include "io/atomic_file.h"

namespace cumulus::cli {

namespace {

std::atomic<int> g_runs_with_progress{0};
volatile std::sig_atomic_t g_interrupted = 0;

void on_interrupt(int signal) {
  if (g_runs_with_progress.load() > 0 && !g_interrupted) {
    g_interrupted = 1;  // the run stops at its next progress report
    return;
  }
  remove_unfinished_writes();
  static const char message[] = "\ncumulus-cli: interrupted; no file was left half written\n";
  [[maybe_unused]] const auto ignored = ::write(STDERR_FILENO, message, sizeof message - 1);
  ::_exit(128 + signal);
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

RunProgress::RunProgress(std::string what)
    : what_(std::move(what)), terminal_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {
  ++g_runs_with_progress;
}

RunProgress::~RunProgress() {
  --g_runs_with_progress;
  if (shown_) std::fprintf(stderr, "\r\033[K");
}

bool RunProgress::operator()(std::size_t done, std::size_t total) {
  if (g_interrupted) return false;
  if (!terminal_) return true;
  const auto now = Clock::now();
  if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(200))
    return true;
  last_ = now;
  shown_ = true;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  std::fprintf(stderr, "\r%s: %.0f %%, %.0f s (Ctrl-C stops)\033[K", what_.c_str(),
               total ? 100.0 * double(done) / double(total) : 0.0, seconds);
  return true;
}

}  // namespace cumulus::cli
