// cumulus-cli bench segment: RDP segmentation of 1242-column images over a row sweep, an
// epsilon sweep and the real depth and range images, every method against the reference.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "args.h"
#include "bench.h"
#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "io/io.h"
#include "segment/segment.h"

namespace cumulus::cli {

namespace {

namespace fs = std::filesystem;

std::string levels_text(const SegmentResult& r) {
  double sum = 0, sq = 0;
  int n = 0, top = 0;
  for (auto l : r.levels)
    if (l) sum += l, sq += double(l) * l, ++n, top = std::max(top, int(l));
  const double mean = n ? sum / n : 0, sd = n ? std::sqrt(std::max(0.0, sq / n - mean * mean)) : 0;
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << "reference; levels mean " << mean << " sd " << sd
    << " max " << top;
  return s.str();
}

}  // namespace

int run_bench_segment(const Args& a, std::ostream& out, const std::string& command_line) {
  const std::string dir = a.get("out", "bench-segment");
  fs::create_directories(dir);
  const int repeat = int(a.get_int("repeat", 20)), warmup = int(a.get_int("warmup", 2));
  const int batch = int(a.get_int("batch", 64));
  const bool gpu = query_device().available;
  struct SegCase {
    std::string sweep, label;
    double x;
    DepthImage img;
    float epsilon;
  };
  std::vector<SegCase> cases;
  const std::string data = a.get("data", ""), sample = a.get("sample", "");
  auto add_real = [&](const std::string& path, double scale, float eps) {
    if (path.empty() || !fs::exists(path)) return;
    DepthImage img = load_depth_image(path, scale);
    cases.push_back(
        {"real", fs::path(path).filename().string(), double(img.size()), std::move(img), eps});
  };
  if (!data.empty()) {
    add_real(data + "/depth/scan00197.png", 1.0 / 500, 0.1f);
    add_real(data + "/depth/scan10159.png", 1.0 / 500, 0.1f);
    add_real(data + "/depth/kinect_depth_mm.tiff", 0.001, 0.01f);
  }
  if (!sample.empty()) add_real(sample + "/street_range.png", 1.0 / 500, 0.1f);
  for (std::uint32_t h : {256u, 375u, 512u, 1024u, 2048u})
    cases.push_back(
        {"rows", std::to_string(h), double(h), generate_depth_columns(1242, h, h), 0.1f});
  const DepthImage kitti_like = generate_depth_columns(1242, 375, 375);
  for (float e : {0.02f, 0.05f, 0.1f, 0.2f, 0.5f})
    cases.push_back({"epsilon", std::to_string(e).substr(0, 4), double(e), kitti_like, e});
  std::vector<BenchRow> rows;
  auto record = [&](const SegCase& c, const std::string& method, const std::vector<double>& t,
                    const SegmentResult& r, const SegmentResult* ref, std::size_t images = 1) {
    BenchRow row{c.sweep, c.label, c.x, c.img.size(), c.epsilon, method};
    set_times(row, t);
    row.clusters = r.rows.size();
    row.stages = r.stages;
    // The depth image up (4 bytes a pixel, 2 as raw units); the cut rows, their offsets and
    // levels down; a batch's images streamed through.
    if (method.rfind("gpu", 0) == 0)
      set_floor(row,
                (method.find("16-bit") != std::string::npos ? 2.0 : 4.0) * double(c.img.size()),
                4.0 * double(r.rows.size() + r.offsets.size()) + double(r.levels.size()), images);
    row.agreement = !ref ? levels_text(r)
                    : (r.rows == ref->rows && r.offsets == ref->offsets && r.levels == ref->levels)
                        ? "identical"
                        : "DIFFERENT";
    rows.push_back(row);
    out << std::left << std::setw(8) << c.sweep << std::setw(24) << c.label << std::setw(10)
        << method << std::right << std::fixed << std::setprecision(4) << std::setw(10)
        << row.median_ms << " ms  " << row.agreement << '\n'
        << std::flush;
  };
  for (const auto& c : cases) {
    const SegmentParams p{c.epsilon};
    SegmentResult ref;
    for (auto m : {SegmentMethod::Cpu, SegmentMethod::CpuMt, SegmentMethod::Gpu}) {
      if (m == SegmentMethod::Gpu && !gpu) continue;
      std::vector<double> t;
      SegmentResult last;
      const int reps = m == SegmentMethod::Cpu ? std::max(1, repeat / 4) : repeat;
      for (int i = 0; i < warmup + reps; ++i) {
        last = segment_columns(c.img, p, m);
        if (i >= warmup) t.push_back(last.total_ms);
      }
      record(c, method_name(m), t, last, m == SegmentMethod::Cpu ? nullptr : &ref);
      if (m == SegmentMethod::Cpu) ref = last;
    }
    if (gpu) {
      // A sequence of `batch` frames in one launch; the time is per image.
      std::vector<const DepthImage*> seq(std::size_t(batch), &c.img);
      std::vector<double> t;
      std::vector<SegmentResult> last;
      for (int i = 0; i < warmup + std::max(1, repeat / 4); ++i) {
        WallTimer w;
        last = segment_columns_batch(seq, p);
        if (i >= warmup) t.push_back(w.ms() / batch);
      }
      record(c, "gpu-batch", t, last.back(), &ref, seq.size());
      // The same with the frames already in page-locked memory (as a camera driver delivers
      // them): one frame, then a batch (at most 256 MB of frames), each call's results into the
      // last call's vectors, as a sequence reuses them.
      const std::size_t px = c.img.size();
      const std::size_t frames = std::max<std::size_t>(
          1, std::min<std::size_t>(std::size_t(batch), (256u << 20) / (px * 4)));
      auto pinned = allocate_pinned_floats(px * frames);
      std::vector<const float*> ptrs;
      for (std::size_t k = 0; k < frames; ++k) {
        std::copy(c.img.depth.begin(), c.img.depth.end(), pinned.get() + k * px);
        ptrs.push_back(pinned.get() + k * px);
      }
      for (int pass = 0; pass < 2; ++pass) {
        const std::vector<const float*> use = pass == 0 ? std::vector<const float*>{ptrs[0]} : ptrs;
        t.clear();
        for (int i = 0; i < warmup + std::max(1, repeat / (pass ? 4 : 1)); ++i) {
          WallTimer w;
          segment_buffers_gpu(use, c.img.width, c.img.height, p, last);
          if (i >= warmup) t.push_back(w.ms() / double(use.size()));
        }
        record(c, pass == 0 ? "gpu[pinned]" : "gpu-batch[pinned]", t, last.back(), &ref,
               use.size());
      }
      // The batch as the raw 16-bit units a depth PNG holds (the case's own scale when it came
      // from one, else KITTI's 1/256 m), scaled on the device: half the bytes to upload. Its
      // reference is the CPU on the image those units load as.
      const double scale = c.img.source_scale != 1.0 ? c.img.source_scale : 1.0 / 256;
      auto units = allocate_pinned_u16(px * frames);
      DepthImage loaded = c.img;
      for (std::size_t i = 0; i < px; ++i) {
        units[i] = depth_to_unit(c.img.depth[i], scale);
        loaded.depth[i] = depth_from_unit(units[i], scale);
      }
      std::vector<const std::uint16_t*> unit_ptrs{units.get()};
      for (std::size_t k = 1; k < frames; ++k) {
        std::copy(units.get(), units.get() + px, units.get() + k * px);
        unit_ptrs.push_back(units.get() + k * px);
      }
      const SegmentResult ref16 = segment_columns(loaded, p, SegmentMethod::Cpu);
      t.clear();
      for (int i = 0; i < warmup + std::max(1, repeat / 4); ++i) {
        WallTimer w;
        segment_raw_buffers_gpu(unit_ptrs, c.img.width, c.img.height, scale, p, last);
        if (i >= warmup) t.push_back(w.ms() / double(frames));
      }
      record(c, "gpu-batch[pinned,16-bit]", t, last.back(), &ref16, frames);
    }
  }
  // Recursion levels per case, from the reference run (the paper's Fig. 5).
  std::ostringstream md;
  md << "\n## Recursion levels\n\n| sweep | case | epsilon (m) | levels |\n|---|---|---:|---|\n";
  for (const auto& r : rows)
    if (r.method == "cpu")
      md << "| " << r.sweep << " | " << r.label << " | " << r.tolerance << " | "
         << r.agreement.substr(11) << " |\n";
  return write_bench_report(rows, dir, "segment", "RDP segmentation benchmark", md.str(),
                            command_line, out);
}

}  // namespace cumulus::cli
