// info, convert and generate: the data-handling subcommands.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>

#include "args.h"
#include "commands.h"
#include "core/device.h"
#include "core/error.h"
#include "generate/generate.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "io/projection.h"
#include "json.h"
#include "write_cloud.h"

namespace cumulus::cli {

namespace {

const char* format_name(const std::string& path) {
  if (is_depth_image_path(path)) return "depth-image";
  constexpr const char* kNames[] = {"pcd", "ply", "kitti-bin", "xyz",
                                    "las", "laz", "e57"};  // CloudFormat's order
  const auto i = std::size_t(cloud_format_for(path));
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

QJsonArray vec3(double x, double y, double z) {
  return QJsonArray{x, y, z};
}

RangeImageModel range_model_from(const Args& a) {
  RangeImageModel m;
  m.fov_up_deg = a.get_double("fov-up", m.fov_up_deg);
  m.fov_down_deg = a.get_double("fov-down", m.fov_down_deg);
  m.width = std::uint32_t(a.get_int("width", m.width));
  m.height = std::uint32_t(a.get_int("height", m.height));
  return m;
}

PinholeIntrinsics pinhole_from(const Args& a) {
  PinholeIntrinsics k;
  k.fx = a.get_double("fx", k.fx);
  k.fy = a.get_double("fy", k.fy);
  k.cx = a.get_double("cx", k.cx);
  k.cy = a.get_double("cy", k.cy);
  return k;
}

void write_pose(const std::string& path, const std::array<double, 16>& m) {
  AtomicOstream f(path);
  f << std::setprecision(17);
  for (int r = 0; r < 4; ++r)
    f << m[4 * r] << ' ' << m[4 * r + 1] << ' ' << m[4 * r + 2] << ' ' << m[4 * r + 3] << '\n';
  f.commit();
}

}  // namespace

int run_info(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"json"}, {"scale"});
  a.expect_positionals(1, 1, "cumulus-cli info FILE [--scale S] [--json]");
  const std::string path = a.positionals()[0];
  QJsonObject j;
  j["path"] = QString::fromStdString(path);
  j["format"] = format_name(path);
  if (is_depth_image_path(path)) {
    const double scale = parse_depth_scale(a.get("scale", "mm"));
    const DepthImage img = load_depth_image(path, scale);
    const auto [lo, hi] = img.valid_range();
    j["kind"] = "depth-image";
    j["width"] = int(img.width);
    j["height"] = int(img.height);
    j["valid_pixels"] = double(img.count_valid());
    j["metres_per_unit"] = img.source_scale;
    j["depth_min"] = lo;
    j["depth_max"] = hi;
    if (a.flag("json")) {
      print_json(out, j);
    } else {
      out << path << ": depth image " << img.width << " x " << img.height << ", "
          << img.count_valid() << " valid pixels, depth " << lo << " .. " << hi << " m ("
          << img.source_scale << " m per unit)\n";
    }
    return 0;
  }
  const PointCloud c = load_cloud(path);
  const Bounds b = c.local_bounds();
  j["kind"] = "cloud";
  j["points"] = double(c.size());
  QJsonArray fields;
  for (const auto& f : c.field_names())
    fields.append(QString::fromStdString(f));
  j["fields"] = fields;
  j["organized"] = c.organized();
  j["width"] = double(c.width);
  j["height"] = double(c.height);
  j["nan_count"] = double(c.count_non_finite());
  j["origin"] = vec3(c.origin[0], c.origin[1], c.origin[2]);
  if (b.valid) {
    j["bounds_min"] = vec3(c.origin[0] + b.min.x, c.origin[1] + b.min.y, c.origin[2] + b.min.z);
    j["bounds_max"] = vec3(c.origin[0] + b.max.x, c.origin[1] + b.max.y, c.origin[2] + b.max.z);
  }
  QJsonObject las;
  std::string las_text;
  for (const auto& m : c.metadata) {
    if (m.key.rfind("las.vlr.", 0) == 0 || m.key.rfind("las.evlr.", 0) == 0) {
      // user id (16 characters at byte 2) and record id: what a reader needs to see the CRS.
      const std::string user =
          m.value.size() >= 20 ? std::string(m.value.c_str() + 2, strnlen(m.value.c_str() + 2, 16))
                               : "";
      const int id = m.value.size() >= 20
                         ? int(std::uint8_t(m.value[18]) | std::uint8_t(m.value[19]) << 8)
                         : -1;
      QJsonArray records = las["records"].toArray();
      records.append(QString::fromStdString(user + "/" + std::to_string(id)));
      las["records"] = records;
      las_text += " " + user + "/" + std::to_string(id);
    } else if (m.key.rfind("las.", 0) == 0 && m.key != "las.guid") {
      las[QString::fromStdString(m.key.substr(4))] = QString::fromStdString(m.value);
    }
  }
  if (!las.isEmpty()) j["las"] = las;
  if (a.flag("json")) {
    print_json(out, j);
    return 0;
  }
  out << path << ": " << format_name(path) << " cloud, " << c.size() << " points";
  if (c.organized()) out << " (organized " << c.width << " x " << c.height << ")";
  out << "\n  fields:";
  for (const auto& f : c.field_names())
    out << ' ' << f;
  out << "\n  non-finite points: " << c.count_non_finite() << '\n';
  if (b.valid)
    out << std::setprecision(10) << "  bounds: [" << c.origin[0] + b.min.x << ", "
        << c.origin[1] + b.min.y << ", " << c.origin[2] + b.min.z << "] .. ["
        << c.origin[0] + b.max.x << ", " << c.origin[1] + b.max.y << ", " << c.origin[2] + b.max.z
        << "]\n";
  if (c.origin != std::array<double, 3>{0, 0, 0})
    out << "  local origin: [" << c.origin[0] << ", " << c.origin[1] << ", " << c.origin[2]
        << "]\n";
  if (!las.isEmpty()) {
    out << "  LAS " << las["version"].toString().toStdString() << ", point format "
        << las["point_format"].toString().toStdString() << ", scale "
        << las["scale"].toString().toStdString() << ", offset "
        << las["offset"].toString().toStdString() << "\n";
    if (!las_text.empty()) out << "  records (user/id):" << las_text << "\n";
  }
  return 0;
}

int run_convert(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(
      argv, {"pinhole", "lidar", "ascii", "allow-precision-loss"},
      {"scale", "fx", "fy", "cx", "cy", "fov-up", "fov-down", "width", "height", "pcd-encoding"});
  a.expect_positionals(2, 2, "cumulus-cli convert IN OUT [options]");
  const std::string in = a.positionals()[0], dst = a.positionals()[1];
  const double scale = parse_depth_scale(a.get("scale", "mm"));
  SaveOptions opts;
  const std::string enc = a.get("pcd-encoding", a.flag("ascii") ? "ascii" : "binary");
  if (enc == "ascii")
    opts.pcd = PcdEncoding::Ascii;
  else if (enc == "binary")
    opts.pcd = PcdEncoding::Binary;
  else if (enc == "compressed" || enc == "binary_compressed")
    opts.pcd = PcdEncoding::BinaryCompressed;
  else
    throw UsageError("--pcd-encoding must be ascii, binary or compressed");
  opts.ply_binary = !a.flag("ascii");
  if (is_depth_image_path(in)) {
    const DepthImage img = load_depth_image(in, scale);
    if (is_depth_image_path(dst)) {
      save_depth_png(dst, img, scale);
      out << "wrote " << dst << '\n';
      return 0;
    }
    if (a.flag("lidar") == a.flag("pinhole"))
      throw UsageError(
          "a depth image becomes a cloud with either --pinhole [--fx --fy --cx --cy] or "
          "--lidar [--fov-up --fov-down]");
    const PointCloud c = a.flag("lidar") ? range_image_to_cloud(img, range_model_from(a))
                                         : depth_to_cloud(img, pinhole_from(a));
    write_cloud(a, dst, c, opts);
    out << "wrote " << dst << ": " << c.size() - c.count_non_finite() << " valid points of "
        << c.size() << '\n';
    return 0;
  }
  const PointCloud c = load_cloud(in);
  if (is_depth_image_path(dst)) {
    const DepthImage img = cloud_to_range_image(c, range_model_from(a));
    save_depth_png(dst, img, scale);
    out << "wrote " << dst << ": range image " << img.width << " x " << img.height << ", "
        << img.count_valid() << " valid pixels\n";
    return 0;
  }
  write_cloud(a, dst, c, opts);
  out << "wrote " << dst << ": " << c.size() << " points\n";
  return 0;
}

int run_generate(const std::vector<std::string>& argv, std::ostream& out) {
  const Args a(argv, {"no-vegetation"},
               {"out", "seed", "beams", "azimuth-steps", "samples", "yaw", "size", "clusters",
                "degree", "distance", "tolerance", "terrain", "frames", "speed"});
  a.expect_positionals(
      1, 1, "cumulus-cli generate sample|street|sequence|pair|clusters --out PATH [--seed N]");
  const std::string what = a.positionals()[0];
  if (!a.has("out")) throw UsageError("generate needs --out");
  const std::string dst = a.get("out");
  const auto seed = std::uint64_t(a.get_int("seed", 1));
  namespace fs = std::filesystem;
  const auto street_params = [&] {
    StreetSceneParams p;
    p.seed = seed;
    p.beams = int(a.get_int("beams", p.beams));
    p.azimuth_steps = int(a.get_int("azimuth-steps", p.azimuth_steps));
    const std::string terrain = a.get("terrain", "level");
    if (terrain != "level" && terrain != "hilly")
      throw UsageError("--terrain is level or hilly, not '" + terrain + "'");
    p.terrain = terrain == "hilly" ? StreetTerrain::Hilly : StreetTerrain::Level;
    p.vegetation = !a.flag("no-vegetation");
    return p;
  };
  auto street = [&](const std::string& cloud_path, const std::string& range_path) {
    const StreetSceneParams p = street_params();
    const PointCloud c = generate_street_scene(p);
    save_pcd(cloud_path, c, PcdEncoding::BinaryCompressed);
    out << "wrote " << cloud_path << ": " << c.size() << " points\n";
    if (range_path.empty()) return;
    RangeImageModel m{p.fov_up_deg, p.fov_down_deg, std::uint32_t(p.azimuth_steps),
                      std::uint32_t(p.beams)};
    const DepthImage img = cloud_to_range_image(c, m);
    save_depth_png(range_path, img, 1.0 / 500.0);
    out << "wrote " << range_path << ": " << img.width << " x " << img.height
        << " range image, 1/500 m per unit\n";
  };
  auto pair = [&](const std::string& dir) {
    ScanPairParams p;
    p.seed = seed;
    p.samples = int(a.get_int("samples", p.samples));
    p.yaw_deg = a.get_double("yaw", p.yaw_deg);
    const ScanPair sp = generate_scan_pair(p);
    save_ply(dir + "/object_target.ply", sp.target, true);
    save_ply(dir + "/object_source.ply", sp.source, true);
    write_pose(dir + "/object_pose.txt", sp.source_to_target);
    out << "wrote " << dir << "/object_{target,source}.ply (" << sp.target.size() << ", "
        << sp.source.size() << " points) and object_pose.txt (source -> target)\n";
  };
  if (what == "street") {
    street(dst, "");
  } else if (what == "sequence") {
    // A drive as KITTI lays one out: frames as .bin, ground truth in poses.txt, times.txt.
    StreetDriveParams d;
    d.scene = street_params();
    d.frames = int(a.get_int("frames", d.frames));
    d.speed = a.get_double("speed", d.speed);
    fs::create_directories(dst + "/velodyne");
    AtomicOstream poses(dst + "/poses.txt"), times(dst + "/times.txt");
    poses << std::setprecision(12);
    std::size_t points = 0;
    for (int k = 0; k < d.frames; ++k) {
      std::array<double, 16> pose{};
      const PointCloud c = generate_street_frame(d, k, &pose);
      char name[32];
      std::snprintf(name, sizeof name, "/velodyne/%06d.bin", k);
      save_kitti_bin(dst + name, c);
      points += c.size();
      for (int i = 0; i < 12; ++i)
        poses << pose[std::size_t(i)] << (i == 11 ? '\n' : ' ');
      times << k * 0.1 << '\n';
    }
    poses.commit();
    times.commit();
    out << "wrote " << d.frames << " frames (" << points << " points) to " << dst
        << "/velodyne, with poses.txt (ground truth, KITTI format) and times.txt\n";
  } else if (what == "pair") {
    fs::create_directories(dst);
    pair(dst);
  } else if (what == "clusters") {
    ClusterCloudParams p;
    p.seed = seed;
    p.size = std::size_t(a.get_int("size", (long long)(p.size)));
    p.clusters = std::size_t(a.get_int("clusters", (long long)(p.clusters)));
    p.degree = std::size_t(a.get_int("degree", (long long)(p.degree)));
    p.point_distance = std::size_t(a.get_int("distance", (long long)(p.point_distance)));
    p.tolerance = a.get_float("tolerance", p.tolerance);
    const PointCloud c = generate_cluster_cloud(p);
    save_cloud(dst, c);
    out << "wrote " << dst << ": " << c.size() << " points in " << p.clusters << " clusters\n";
  } else if (what == "sample") {
    fs::create_directories(dst);
    street(dst + "/street_scene.pcd", dst + "/street_range.png");
    pair(dst);
  } else {
    throw UsageError("generate: unknown kind '" + what +
                     "' (sample, street, sequence, pair or clusters)");
  }
  return 0;
}

}  // namespace cumulus::cli
