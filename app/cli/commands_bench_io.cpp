// cumulus-cli bench io: reading and writing a large LAS tile (point format 1, as airborne
// surveys deliver it) against the same points as binary PCD through PCL's io and as KITTI .bin:
// throughput in MB/s of file and millions of points a second, from the page cache.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <random>
#include <sstream>

#include "args.h"
#include "bench.h"
#include "core/error.h"
#include "core/timing.h"
#include "io/io.h"

namespace cumulus::cli {

namespace {

// A 1 km UTM tile of `n` airborne returns with every field of point format 1.
PointCloud survey_tile(std::size_t n) {
  PointCloud c;
  c.origin = {500500, 4200500, 0};
  c.metadata = {{"las.version", "1.2"},
                {"las.point_format", "1"},
                {"las.scale", "0.01 0.01 0.01"},
                {"las.offset", "500000 4200000 0"}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> xy(-500, 500), z(100, 180);
  std::uniform_int_distribution<int> byte(0, 255);
  const char* names[] = {"return_number", "number_of_returns", "classification", "scan_angle",
                         "user_data",     "point_source_id",   "gps_time"};
  for (const char* name : names)
    c.extra.push_back({name, 1, {}});
  for (auto& e : c.extra)
    e.values.reserve(n);
  c.points.reserve(n);
  c.intensity.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    // On the 1 cm grid, so that writing does not round them.
    const auto grid = [](float v) { return std::round(v * 100.0f) / 100.0f; };
    c.points.push_back({grid(xy(rng)), grid(xy(rng)), grid(z(rng))});
    c.intensity.push_back(float(byte(rng) * 40));
    const int returns = 1 + byte(rng) % 4;
    c.extra[0].values.push_back(1 + byte(rng) % returns);
    c.extra[1].values.push_back(returns);
    c.extra[2].values.push_back(byte(rng) % 2 ? 2 : 1 + byte(rng) % 6);
    c.extra[3].values.push_back(byte(rng) % 60 - 30);
    c.extra[4].values.push_back(byte(rng));
    c.extra[5].values.push_back(1 + double(i / 1000000));
    c.extra[6].values.push_back(3.0e8 + double(i) * 1e-5);
  }
  c.width = std::uint32_t(n);
  return c;
}

}  // namespace

int run_bench_io(const Args& a, std::ostream& out, const std::string& command_line) {
  namespace fs = std::filesystem;
  const double points = a.get_double("points", 2e7);
  if (!(points >= 1000 && points <= 5e8)) throw UsageError("--points takes 1000 to 5e8");
  const int repeat = int(a.get_int("repeat", 3));
  if (repeat < 1 || repeat > 100) throw UsageError("--repeat takes 1 to 100");
  const std::string dir = a.get("out", "bench-io");
  const std::string scratch = a.get("scratch", fs::temp_directory_path().string());
  fs::create_directories(dir);
  const std::size_t n = std::size_t(points);
  out << "making a " << n << "-point survey tile...\n" << std::flush;
  const PointCloud tile = survey_tile(n);
  std::vector<BenchRow> rows;
  struct Case {
    const char* format;
    const char* extension;
  };
  for (const Case& c : {Case{"LAS 1.2, point format 1", ".las"}, Case{"PCD binary (PCL)", ".pcd"},
                        Case{"KITTI .bin", ".bin"}}) {
    const std::string file =
        scratch + "/cumulus-bench-io-" + std::to_string(::getpid()) + c.extension;
    struct Remove {
      std::string path;
      ~Remove() {
        std::error_code ec;
        fs::remove(path, ec);
      }
    } remove{file};
    SaveOptions options;
    options.allow_precision_loss = true;  // .bin: float32 world coordinates, by design
    for (const bool write : {true, false}) {
      BenchRow row{write ? "write" : "read", c.format, double(n), n, 0, "cumulus"};
      struct Run {
        double total_ms = 0;
      };
      PointCloud back;
      timed_runs(write ? 0 : 1, repeat, row, [&] {
        WallTimer t;
        if (write)
          save_cloud(file, tile, options);
        else
          back = load_cloud(file);
        return Run{t.ms()};
      });
      const double mb = double(fs::file_size(file)) / 1e6;
      std::ostringstream s;
      s << std::fixed << std::setprecision(0) << mb / (row.median_ms / 1e3) << " MB/s, "
        << std::setprecision(1) << double(n) / 1e3 / row.median_ms << " Mpts/s ("
        << std::setprecision(0) << mb << " MB)";
      if (!write && back.size() != n) s << "; read back " << back.size() << " points";
      row.agreement = s.str();
      out << std::left << std::setw(6) << row.sweep << std::setw(26) << c.format << std::right
          << std::fixed << std::setprecision(1) << std::setw(10) << row.median_ms << " ms  "
          << row.agreement << '\n'
          << std::flush;
      rows.push_back(std::move(row));
    }
  }
  return write_bench_report(
      rows, dir, "io", "Reading and writing clouds",
      "A generated 1 km UTM survey tile (`--points`, default 20 million: every field of LAS point "
      "format 1, coordinates on the file's 1 cm grid) written and read back as LAS, as binary PCD "
      "(PCL's reader and writer, with every field) and as KITTI .bin (x y z intensity only). "
      "Times: median of `--repeat` runs, the file in the page cache (one untimed read first); "
      "throughput is the file's size over the time. Writes are whole-or-nothing (a temporary "
      "file, synced, renamed).\n",
      command_line, out);
}

}  // namespace cumulus::cli
