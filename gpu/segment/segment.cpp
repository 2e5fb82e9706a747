// RDP segmentation: the recursive reference (Algorithm 1), its multi-threaded form, the median
// pre-filter and dispatch to the GPU kernel.
#include "segment/segment.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <thread>

#include "core/error.h"
#include "io/atomic_file.h"
#include "segment/cuda/segment_gpu.h"
#include "segment/segment_math.h"

namespace cumulus {

void validate(const SegmentParams& p) {
  if (!(p.epsilon > 0) || !std::isfinite(p.epsilon))
    throw InvalidArgument("epsilon must be a positive number of metres, got " +
                          std::to_string(p.epsilon));
  if (p.distance == SegmentDistance::Perpendicular &&
      (!(p.row_pitch > 0) || !std::isfinite(p.row_pitch)))
    throw InvalidArgument("the perpendicular distance needs a positive row pitch");
  if (p.median != 0 && p.median != 3 && p.median != 5)
    throw InvalidArgument("the median filter size must be 0, 3 or 5");
}

float segment_distance(float d_first, float d_last, float d_i, int first, int last, int i,
                       const SegmentParams& p) {
  return segment_math::distance(d_first, d_last, d_i, first, last, i,
                                p.distance == SegmentDistance::Perpendicular, p.row_pitch);
}

std::size_t SegmentResult::segment_count() const {
  // Between two consecutive cut rows of a column lies one segment unless the rows are the two
  // ends of different pieces; the caller rarely needs that distinction, so count cut pairs.
  std::size_t n = 0;
  for (std::uint32_t c = 0; c + 1 < offsets.size(); ++c)
    n += cuts(c) > 0 ? cuts(c) - 1 : 0;
  return n;
}

DepthImage median_filter_columns(const DepthImage& image, int size) {
  DepthImage out = image;
  if (size <= 1) return out;
  const int h = int(image.height), w = int(image.width), r = size / 2;
  float window[5];
  for (int c = 0; c < w; ++c)
    for (int y = 0; y < h; ++y) {
      if (!DepthImage::is_valid(image.depth[std::size_t(y) * w + c])) continue;
      // The median of the valid pixels in the window (the lower middle for an even count).
      int k = 0;
      for (int dy = -r; dy <= r; ++dy) {
        const int yy = y + dy;
        if (yy < 0 || yy >= h) continue;
        const float v = image.depth[std::size_t(yy) * w + c];
        if (DepthImage::is_valid(v)) window[k++] = v;
      }
      for (int a = 1; a < k; ++a)  // insertion sort of at most 5 values, as on the GPU
        for (int b = a; b > 0 && window[b - 1] > window[b]; --b)
          std::swap(window[b], window[b - 1]);
      out.depth[std::size_t(y) * w + c] = window[(k - 1) / 2];
    }
  return out;
}

namespace {

// Algorithm 1 on the valid rows first..last of one piece; only interior rows can be cut (the
// ends are at distance zero, and allowing them would let rounding re-cut an end forever).
void rdp(const std::vector<float>& s, int first, int last, int depth, const SegmentParams& p,
         std::vector<std::uint8_t>& cut, int& levels) {
  levels = std::max(levels, depth);
  float best = 0;
  int best_i = first;
  for (int i = first + 1; i < last; ++i) {
    const float d = segment_distance(s[std::size_t(first)], s[std::size_t(last)], s[std::size_t(i)],
                                     first, last, i, p);
    if (d > best) best = d, best_i = i;  // strict: ties keep the lowest row
  }
  if (best > p.epsilon) {
    cut[std::size_t(best_i)] = 1;
    rdp(s, first, best_i, depth + 1, p, cut, levels);
    rdp(s, best_i, last, depth + 1, p, cut, levels);
  }
}

void segment_column(const DepthImage& img, std::uint32_t c, const SegmentParams& p,
                    std::vector<std::uint32_t>& rows, std::uint8_t& levels_out) {
  const int h = int(img.height);
  std::vector<float> s(static_cast<std::size_t>(h));
  for (int y = 0; y < h; ++y)
    s[std::size_t(y)] = img.at(std::uint32_t(y), c);
  std::vector<std::uint8_t> cut(static_cast<std::size_t>(h), 0);
  int levels = 0;
  for (int y = 0; y < h;) {
    if (!DepthImage::is_valid(s[std::size_t(y)])) {
      ++y;
      continue;
    }
    int end = y;
    while (end + 1 < h && DepthImage::is_valid(s[std::size_t(end) + 1]))
      ++end;
    cut[std::size_t(y)] = cut[std::size_t(end)] = 1;
    rdp(s, y, end, 1, p, cut, levels);
    y = end + 1;
  }
  rows.clear();
  for (int y = 0; y < h; ++y)
    if (cut[std::size_t(y)]) rows.push_back(std::uint32_t(y));
  levels_out = std::uint8_t(std::min(levels, 255));
}

SegmentResult segment_cpu(const DepthImage& img, const SegmentParams& p, int threads) {
  SegmentResult r;
  r.width = img.width;
  r.height = img.height;
  std::vector<std::vector<std::uint32_t>> per(img.width);
  r.levels.assign(img.width, 0);
  auto work = [&](std::uint32_t begin, std::uint32_t end) {
    for (std::uint32_t c = begin; c < end; ++c)
      segment_column(img, c, p, per[c], r.levels[c]);
  };
  if (threads <= 1) {
    work(0, img.width);
  } else {
    std::vector<std::thread> pool;
    const std::uint32_t chunk = (img.width + std::uint32_t(threads) - 1) / std::uint32_t(threads);
    for (std::uint32_t b = 0; b < img.width; b += chunk)
      pool.emplace_back(work, b, std::min(img.width, b + chunk));
    for (auto& t : pool)
      t.join();
  }
  r.offsets.assign(std::size_t(img.width) + 1, 0);
  for (std::uint32_t c = 0; c < img.width; ++c)
    r.offsets[c + 1] = r.offsets[c] + std::uint32_t(per[c].size());
  r.rows.reserve(r.offsets.back());
  for (auto& v : per)
    r.rows.insert(r.rows.end(), v.begin(), v.end());
  return r;
}

}  // namespace

namespace {

// A batch's method name and its wall time shared out over its images.
void per_image(std::vector<SegmentResult>& out, const char* method, const WallTimer& total) {
  const double ms = total.ms() / double(std::max<std::size_t>(out.size(), 1));
  for (auto& r : out)
    r.method = method, r.total_ms = ms;
}

void check_scale(double metres_per_unit) {
  if (!(std::isfinite(metres_per_unit) && metres_per_unit > 0))
    throw InvalidArgument("the depth scale must be a positive number of metres a unit");
}

}  // namespace

void segment_buffers_gpu(const std::vector<const float*>& images, std::uint32_t width,
                         std::uint32_t height, const SegmentParams& params,
                         std::vector<SegmentResult>& results) {
  validate(params);
  WallTimer total;
  segment_gpu_buffers(images, width, height, params, results);
  per_image(results, "gpu", total);
}

void segment_raw_buffers_gpu(const std::vector<const std::uint16_t*>& images, std::uint32_t width,
                             std::uint32_t height, double metres_per_unit,
                             const SegmentParams& params, std::vector<SegmentResult>& results) {
  validate(params);
  check_scale(metres_per_unit);
  WallTimer total;
  segment_gpu_raw_buffers(images, width, height, metres_per_unit, params, results);
  per_image(results, "gpu", total);
}

std::vector<SegmentResult> segment_buffers_gpu(const std::vector<const float*>& images,
                                               std::uint32_t width, std::uint32_t height,
                                               const SegmentParams& params) {
  std::vector<SegmentResult> out;
  segment_buffers_gpu(images, width, height, params, out);
  return out;
}

std::vector<SegmentResult> segment_raw_buffers_gpu(const std::vector<const std::uint16_t*>& images,
                                                   std::uint32_t width, std::uint32_t height,
                                                   double metres_per_unit,
                                                   const SegmentParams& params) {
  std::vector<SegmentResult> out;
  segment_raw_buffers_gpu(images, width, height, metres_per_unit, params, out);
  return out;
}

std::vector<SegmentResult> segment_columns_batch(const std::vector<const DepthImage*>& images,
                                                 const SegmentParams& params) {
  validate(params);
  WallTimer total;
  auto out = segment_gpu(images, params);
  per_image(out, "gpu-batch", total);
  return out;
}

std::vector<Segment> list_segments(const DepthImage& img, const SegmentResult& r) {
  if (r.width != img.width || r.height != img.height)
    throw InvalidArgument("the result does not belong to this image");
  std::vector<Segment> out;
  for (std::uint32_t c = 0; c < r.width; ++c)
    for (std::uint32_t k = r.offsets[c]; k + 1 < r.offsets[c + 1]; ++k) {
      const std::uint32_t a = r.rows[k], b = r.rows[k + 1];
      bool joined = true;
      for (std::uint32_t y = a; y <= b && joined; ++y)
        joined = DepthImage::is_valid(img.at(y, c));
      if (joined) out.push_back({c, a, b, img.at(a, c), img.at(b, c)});
    }
  return out;
}

void save_segments(const std::string& path, const DepthImage& img, const SegmentResult& r,
                   SegmentFormat format) {
  const auto segments = list_segments(img, r);
  AtomicOstream f(path);
  f << std::setprecision(9);
  if (format == SegmentFormat::Csv) {
    f << "column,start_row,end_row,start_depth,end_depth\n";
    for (const auto& s : segments)
      f << s.column << ',' << s.start_row << ',' << s.end_row << ',' << s.start_depth << ','
        << s.end_depth << '\n';
  } else {
    f << "{\"width\": " << r.width << ", \"height\": " << r.height << ", \"method\": \"" << r.method
      << "\", \"segments\": [";
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const auto& s = segments[i];
      f << (i ? ",\n  " : "\n  ") << "{\"column\": " << s.column
        << ", \"start_row\": " << s.start_row << ", \"end_row\": " << s.end_row
        << ", \"start_depth\": " << s.start_depth << ", \"end_depth\": " << s.end_depth << "}";
    }
    f << "\n]}\n";
  }
  f.commit();
}

SegmentResult segment_columns(const DepthImage& image, const SegmentParams& params,
                              SegmentMethod method) {
  validate(params);
  if (image.depth.size() != std::size_t(image.width) * image.height)
    throw InvalidArgument("depth image size does not match its pixel count");
  WallTimer total;
  SegmentResult r;
  if (method == SegmentMethod::Gpu) {
    r = segment_gpu({&image}, params).front();
  } else {
    WallTimer t;
    const DepthImage filtered =
        params.median ? median_filter_columns(image, params.median) : DepthImage();
    const DepthImage& src = params.median ? filtered : image;
    const double filter_ms = t.ms();
    t.reset();
    const int threads =
        method == SegmentMethod::CpuMt ? int(std::max(1u, std::thread::hardware_concurrency())) : 1;
    r = segment_cpu(src, params, threads);
    if (params.median) r.stages.emplace_back("median", filter_ms);
    r.stages.emplace_back("segment", t.ms());
  }
  r.method = method_name(method);
  r.total_ms = total.ms();
  return r;
}

}  // namespace cumulus
