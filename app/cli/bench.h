#pragma once
// Benchmark records shared by the bench subcommands and the plotter.
#include <algorithm>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "core/limits.h"
#include "core/timing.h"
#include "core/timing_stats.h"

namespace cumulus::cli {

struct BenchRow {
  std::string sweep;  // "size", "clusters", "degree", "distance", "real"
  std::string label;  // case name: "262144" or "kitti/000000.bin"
  double x = 0;       // sweep value (for plots)
  std::size_t points = 0;
  double tolerance = 0;
  std::string method;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  std::size_t clusters = 0;
  std::string agreement;  // "identical", "DIFFERENT: ...", "reference" or "error: ..."
  StageTimes stages;      // median per stage
  double floor_ms = 0;    // GPU rows: the floor on this host (core/limits.h), 0 = none
};

// The limits of this host's GPU, measured once per process (null without a usable GPU), and
// a row's floor from the bytes it moves up and down (for one item of a streamed batch: see
// floor_ms).
const DeviceLimits* bench_limits();
void set_floor(BenchRow& row, double bytes_up, double bytes_down, std::size_t batch = 1,
               int grid_steps = 0);
// The limits as a Markdown table (a heading, then one row a quantity).
std::string limits_markdown(const DeviceLimits& l);

// `v` with `digits` digits after the point, as the reports write times.
std::string fixed_text(double v, int digits = 3);

// The median of `v` as everywhere else (timing_stats: the mean of the middle two of an even
// count); 0 for none.
inline double median(std::vector<double> v) {
  return timing_stats(std::move(v)).median;
}

// The median, least and most of a row's timed runs (milliseconds).
inline void set_times(BenchRow& row, std::vector<double> ms) {
  const TimingStats t = timing_stats(std::move(ms));
  row.median_ms = t.median;
  row.min_ms = t.min;
  row.max_ms = t.max;
}

// Runs `run` warmup + reps times, puts the median, least and most of the timed runs' total_ms
// into `row`, and returns the last result.
template <class Run>
auto timed_runs(int warmup, int reps, BenchRow& row, Run&& run) {
  std::vector<double> t;
  decltype(run()) last;
  for (int i = 0; i < warmup + reps; ++i) {
    last = run();
    if (i >= warmup) t.push_back(last.total_ms);
  }
  set_times(row, std::move(t));
  return last;
}

// The values of one field over the rows, in order of first appearance.
inline std::vector<std::string> distinct(const std::vector<BenchRow>& rows,
                                         std::string BenchRow::*field) {
  std::vector<std::string> out;
  for (const auto& r : rows)
    if (std::find(out.begin(), out.end(), r.*field) == out.end()) out.push_back(r.*field);
  return out;
}

void write_bench_csv(const std::string& path, const std::vector<BenchRow>& rows);
std::vector<BenchRow> read_bench_csv(const std::string& path);
// Markdown tables, one per sweep: median ms per method, speed-up over cpu, agreement.
std::string bench_markdown(const std::vector<BenchRow>& rows, const std::string& title,
                           const std::string& host, const std::string& command);
// One PNG per sweep (time against the sweep value, log-log). Returns the files written; empty
// with `why` set when this build cannot draw (headless builds have no Qt Gui).
class Args;
// bench segment (commands_bench_segment.cpp).
int run_bench_segment(const Args& a, std::ostream& out, const std::string& command_line);
// bench icp (commands_bench_icp.cpp).
int run_bench_icp(const Args& a, std::ostream& out, const std::string& command_line);
// bench filter (commands_bench_filter.cpp).
int run_bench_filter(const Args& a, std::ostream& out, const std::string& command_line);
int run_bench_ground(const Args& a, std::ostream& out, const std::string& command_line);
int run_bench_pipeline(const Args& a, std::ostream& out, const std::string& command_line);
int run_bench_sequence(const Args& a, std::ostream& out, const std::string& command_line);
// bench register (commands_bench_register.cpp): global registration from random starts.
int run_bench_register(const Args& a, std::ostream& out, const std::string& command_line);
// bench limits (bench_report.cpp): this host's transfer bandwidths and launch latencies.
int run_bench_limits(const Args& a, std::ostream& out, const std::string& command_line);
// bench io (commands_bench_io.cpp): LAS, PCD and KITTI .bin read and write throughput.
int run_bench_io(const Args& a, std::ostream& out, const std::string& command_line);
// bench features (commands_features.cpp).
int run_bench_features(const Args& a, std::ostream& out, const std::string& command_line);

// Writes DIR/NAME.csv, DIR/NAME.md (bench_markdown's tables under `title`, then `notes`) and
// the plots, and says on `out` what it wrote. Returns 0, a bench's exit status.
int write_bench_report(const std::vector<BenchRow>& rows, const std::string& dir,
                       const std::string& name, const std::string& title, const std::string& notes,
                       const std::string& command_line, std::ostream& out);

// Draws DIR/PREFIX_SWEEP.png for every sweep of a benchmark CSV with Debian's python3-matplotlib
// (app/cli/plot/bench_plot.py, installed beside the program's data) and returns their paths;
// none, with the reason in `why`, where Python, matplotlib or the script is missing.
std::vector<std::string> plot_bench(const std::string& csv, const std::string& dir,
                                    const std::string& prefix, std::string* why);

}  // namespace cumulus::cli
