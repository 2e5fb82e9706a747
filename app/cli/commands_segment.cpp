// cumulus-cli segment: RDP segmentation of depth-image columns.
#include <fstream>
#include <iomanip>

#include "args.h"
#include "commands.h"
#include "core/error.h"
#include "io/io.h"
#include "io/projection.h"
#include "json.h"
#include "segment/segment.h"

namespace cumulus::cli {

namespace {

SegmentParams segment_params_from(const Args& a) {
  SegmentParams p;
  p.epsilon = a.required_float("epsilon", "segment", "metres");
  const std::string d = a.get("distance", "vertical");
  if (d == "vertical")
    p.distance = SegmentDistance::Vertical;
  else if (d == "perpendicular")
    p.distance = SegmentDistance::Perpendicular;
  else
    throw UsageError("--distance must be vertical or perpendicular");
  p.row_pitch = a.get_float("row-pitch", p.row_pitch);
  p.median = int(a.get_int("median", 0));
  return p;
}

}  // namespace

int run_segment(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"json", "lidar"},
               {"scale", "epsilon", "method", "distance", "row-pitch", "median", "out", "width",
                "height", "fov-up", "fov-down"});
  a.expect_positionals(1, 1,
                       "cumulus-cli segment DEPTH_IMAGE --epsilon E [--method NAME] [--json]");
  const std::string path = a.positionals()[0];
  const SegmentParams params = segment_params_from(a);
  // cpu-mt unless named: the CLI reports comparable CPU timings whether or not a GPU is there.
  const SegmentMethod method = method_arg(a, SegmentMethod::CpuMt);
  DepthImage img;
  if (is_depth_image_path(path)) {
    img = load_depth_image(path, parse_depth_scale(a.get("scale", "mm")));
  } else {
    // A point cloud becomes a spinning-LiDAR range image first.
    RangeImageModel m;
    m.width = std::uint32_t(a.get_int("width", m.width));
    m.height = std::uint32_t(a.get_int("height", m.height));
    m.fov_up_deg = a.get_double("fov-up", m.fov_up_deg);
    m.fov_down_deg = a.get_double("fov-down", m.fov_down_deg);
    img = cloud_to_range_image(load_cloud(path), m);
  }
  const SegmentResult r = segment_columns(img, params, method);
  if (a.has("out"))
    save_segments(a.get("out"), img, r,
                  a.get("out").size() > 5 && a.get("out").substr(a.get("out").size() - 5) == ".json"
                      ? SegmentFormat::Json
                      : SegmentFormat::Csv);
  std::size_t max_levels = 0, total_levels = 0, columns_with_data = 0;
  for (auto l : r.levels) {
    max_levels = std::max<std::size_t>(max_levels, l);
    if (l) total_levels += l, ++columns_with_data;
  }
  if (a.flag("json")) {
    print_json(out,
               QJsonObject{{"path", QString::fromStdString(path)},
                           {"method", QString::fromStdString(r.method)},
                           {"width", int(r.width)},
                           {"height", int(r.height)},
                           {"epsilon", params.epsilon},
                           {"cut_points", double(r.rows.size())},
                           {"max_levels", double(max_levels)},
                           {"mean_levels",
                            columns_with_data ? double(total_levels) / columns_with_data : 0.0},
                           {"stages_ms", stages_json(r.stages)},
                           {"total_ms", r.total_ms}});
    return 0;
  }
  out << path << ": " << r.width << " x " << r.height << ", " << r.rows.size()
      << " cut points with " << r.method << " (epsilon " << params.epsilon
      << " m), recursion levels up to " << max_levels << ", " << std::fixed << std::setprecision(3)
      << r.total_ms << " ms\n";
  return 0;
}

}  // namespace cumulus::cli
