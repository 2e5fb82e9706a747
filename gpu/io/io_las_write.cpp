// LAS writer. A cloud read from LAS goes back with its version, point format, scale and offset,
// variable-length records (the coordinate reference system among them) and extra-bytes fields;
// any other cloud becomes LAS 1.4 with point format 6, 7 (colour) or 8 (near infrared) at a
// millimetre scale. Fields the standard ones cannot hold become extra bytes; a value a standard
// field cannot hold exactly is refused, never rounded away.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>
#include <type_traits>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "io/io_detail.h"
#include "io/las_format.h"

namespace cumulus {

namespace {

using namespace las;

struct Source {
  int minor = -1, format = -1, rgb_scale = 257;
  double scale[3] = {0.001, 0.001, 0.001}, offset[3] = {0, 0, 0};
  bool has_scale = false;
  std::uint16_t global_encoding = 0, file_source_id = 0;
  std::string guid, system;
  std::vector<std::string> vlrs, evlrs;
  std::vector<ExtraBytes> descriptors;  // of the source's extra-bytes record, by name
};

Source read_source(const std::string& path, const PointCloud& cloud) {
  Source s;
  const auto get_number = [&](const char* key, auto& into) {
    if (const std::string* v = cloud.find_metadata(key))
      into = static_cast<std::remove_reference_t<decltype(into)>>(std::atof(v->c_str()));
  };
  if (const std::string* v = cloud.find_metadata("las.version");
      v && v->size() == 3 && (*v)[0] == '1' && (*v)[2] >= '0' && (*v)[2] <= '4')
    s.minor = (*v)[2] - '0';
  if (const std::string* v = cloud.find_metadata("las.point_format"))
    s.format = std::atoi(v->c_str());
  if (s.format < 0 || s.format > kMaxFormat) s.format = -1;
  get_number("las.rgb_scale", s.rgb_scale);
  get_number("las.global_encoding", s.global_encoding);
  get_number("las.file_source_id", s.file_source_id);
  for (const auto& [key, into] :
       {std::pair{"las.scale", s.scale}, std::pair{"las.offset", s.offset}}) {
    const std::string* v = cloud.find_metadata(key);
    if (!v) continue;
    std::istringstream in(*v);
    double t[3];
    if (in >> t[0] >> t[1] >> t[2] && std::isfinite(t[0] + t[1] + t[2])) {
      std::copy(t, t + 3, into);
      if (into == s.scale) s.has_scale = t[0] != 0 && t[1] != 0 && t[2] != 0;
    }
  }
  if (const std::string* v = cloud.find_metadata("las.guid"); v && v->size() == 16) s.guid = *v;
  if (const std::string* v = cloud.find_metadata("las.system_identifier")) s.system = *v;
  for (const auto& m : cloud.metadata) {
    const bool vlr = m.key.rfind("las.vlr.", 0) == 0, evlr = m.key.rfind("las.evlr.", 0) == 0;
    const std::size_t head = vlr ? kVlrHeader : kEvlrHeader;
    if (!(vlr || evlr) || m.value.size() < head) continue;
    const auto* p = reinterpret_cast<const std::uint8_t*>(m.value.data());
    if (text(p + 2, 16) == kSpecUser && get<std::uint16_t>(p + 18) == kExtraBytesRecord) {
      // Kept for the fields written back as they were; the record itself is rebuilt.
      for (auto& e : read_descriptors(path, p + head, m.value.size() - head))
        if (!e.undocumented && e.count == 1) s.descriptors.push_back(std::move(e));
      continue;
    }
    (vlr ? s.vlrs : s.evlrs).push_back(m.value);
  }
  return s;
}

// The grid points are written on: the source's scale and offset while they reach every point,
// else a millimetre grid about the cloud's origin.
struct Grid {
  double scale[3], offset[3];
  std::int32_t lo[3], hi[3];
  bool ok = false;
};

Grid grid_for(const PointCloud& cloud, const Source& src) {
  Grid g;
  const auto quantise = [&](bool source) {
    for (int a = 0; a < 3; ++a) {
      g.scale[a] = source ? src.scale[a] : 0.001;
      g.offset[a] = source ? src.offset[a] : cloud.origin[a];
      g.lo[a] = INT32_MAX;
      g.hi[a] = INT32_MIN;
    }
    for (std::size_t i = 0; i < cloud.size(); ++i)
      for (int a = 0; a < 3; ++a) {
        const double q = std::round(
            (cloud.origin[a] + double((&cloud.points[i].x)[a]) - g.offset[a]) / g.scale[a]);
        if (!(q >= INT32_MIN && q <= INT32_MAX)) return false;
        g.lo[a] = std::min(g.lo[a], std::int32_t(q));
        g.hi[a] = std::max(g.hi[a], std::int32_t(q));
      }
    return true;
  };
  g.ok = (src.has_scale && quantise(true)) || quantise(false);
  return g;
}

bool exact_float(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(),
                     [](double x) { return std::isnan(x) || double(float(x)) == x; });
}

// A field written after the standard ones.
struct Extra {
  std::string name;
  const std::vector<double>* values;
  int component = 0, count = 1;
  ExtraBytes how;
};

std::string descriptor(const Extra& e) {
  if (!e.how.raw.empty()) return e.how.raw;
  std::string d(kDescriptorSize, '\0');
  auto* q = reinterpret_cast<std::uint8_t*>(d.data());
  q[2] = e.how.undocumented ? 0 : std::uint8_t(int(e.how.type) + 1);
  q[3] = e.how.undocumented ? std::uint8_t(e.how.size) : 0;
  std::memcpy(q + 4, e.name.data(), std::min<std::size_t>(e.name.size(), 32));
  std::memcpy(q + 160, "written by Cumulus", 18);
  return d;
}

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw IoError(path, "not written: " + why + "; the file that was there, if any, is unchanged");
}

std::string value_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

void save_las(const std::string& path, const PointCloud& cloud, LasLabels labels_as) {
  cloud.validate();
  if (cloud.empty()) refuse(path, "an empty cloud (LAS needs points)");
  if (const auto bad = cloud.count_non_finite())
    refuse(path, "LAS cannot store points without finite coordinates, and " + std::to_string(bad) +
                     " points have none (the holes of an organized cloud); remove them first");
  const std::size_t n = cloud.size();
  const Source src = read_source(path, cloud);

  // The fields by name, with the cloud's own members in LAS terms.
  std::map<std::string, const std::vector<double>*> fields;
  for (const auto& f : cloud.extra)
    if (f.count == 1) fields[f.name] = &f.values;
  std::vector<double> red, green, blue, intensity, classes, user_data, labels, normals[3];
  if (cloud.has_rgb() && !(fields.count("red") && fields.count("green") && fields.count("blue"))) {
    const double k = src.rgb_scale == 1 || src.rgb_scale == 256 ? src.rgb_scale : 257;
    for (const auto& c : cloud.rgb) {
      red.push_back(c.r * k);
      green.push_back(c.g * k);
      blue.push_back(c.b * k);
    }
    fields["red"] = &red;
    fields["green"] = &green;
    fields["blue"] = &blue;
  }
  bool intensity_exact = true;
  if (cloud.has_intensity()) {
    bool unit = true;
    for (const float v : cloud.intensity) {
      intensity_exact = intensity_exact && v >= 0 && v <= 65535 && v == std::floor(v);
      unit = unit && v >= 0 && v <= 1;
    }
    // Reflectances in [0, 1] (KITTI) fill the 16-bit range for other programs; the exact values
    // follow as an extra "intensity" field, which our reader puts back in their place.
    for (const float v : cloud.intensity)
      intensity.push_back(intensity_exact ? v
                          : unit          ? std::round(v * 65535.0)
                                          : std::clamp(std::round(double(v)), 0.0, 65535.0));
  }
  if (cloud.has_labels()) {
    for (const auto l : cloud.labels) {
      if (labels_as == LasLabels::Classification) {
        if (l > 191)
          refuse(path, "cluster " + std::to_string(l) +
                           " does not fit a LAS class (clusters become " +
                           "classes 64 to 255, so at most 192 of them); write the labels as an "
                           "extra-bytes field");
        classes.push_back(l < 0 ? 1 : 64 + l);
      } else if (labels_as == LasLabels::UserData) {
        if (l > 254)
          refuse(path,
                 "cluster " + std::to_string(l) + " does not fit the user data byte (clusters " +
                     "become 1 to 255, 0 is unlabelled); write the labels as an extra-bytes field");
        user_data.push_back(l + 1);
      } else {
        labels.push_back(l);
      }
    }
    if (!classes.empty()) fields["classification"] = &classes;
    if (!user_data.empty()) fields["user_data"] = &user_data;
  }

  // The point format: the source's family and fields, widened to hold what the cloud has.
  const auto has = [&](const char* name) { return fields.count(name) != 0; };
  const bool gps = has("gps_time") || (src.format >= 0 && has_gps(src.format));
  const bool rgb = has("red") || (src.format >= 0 && has_rgb(src.format));
  const bool nir = has("nir") || (src.format >= 0 && has_nir(src.format));
  bool wave = src.format >= 0 && has_wave(src.format);
  for (const char* w : {"wave_descriptor", "wave_offset", "wave_size", "wave_location", "wave_xt",
                        "wave_yt", "wave_zt"})
    wave = wave || has(w);
  const auto any_value = [&](const char* name, auto beyond_legacy) {
    const auto it = fields.find(name);
    return it != fields.end() && std::any_of(it->second->begin(), it->second->end(), beyond_legacy);
  };
  const auto above = [](double limit) { return [limit](double v) { return v > limit; }; };
  const bool extended =
      src.format < 0 || !legacy(src.format) || nir || has("overlap") || has("scanner_channel") ||
      n >= (std::size_t(1) << 32) || any_value("classification", above(31)) ||
      any_value("return_number", above(7)) || any_value("number_of_returns", above(7)) ||
      any_value("scan_angle", [](double v) { return v != std::floor(v) || v < -128 || v > 127; });
  int format;
  if (!extended)
    format = wave ? (rgb ? 5 : 4) : gps ? (rgb ? 3 : 1) : (rgb ? 2 : 0);
  else
    format = wave ? (rgb || nir ? 10 : 9) : nir ? 8 : rgb ? 7 : 6;
  int minor = src.minor >= 0 ? src.minor : 4;
  minor = std::max(minor, minimum_minor_version(format));
  if (n >= (std::size_t(1) << 32) || !src.evlrs.empty()) minor = 4;

  const Grid grid = grid_for(cloud, src);
  if (!grid.ok)
    refuse(path,
           "the points span more than LAS's 32-bit integer coordinates can hold at a 1 mm scale");
  const double *scale = grid.scale, *offset = grid.offset;
  const std::int32_t *lo = grid.lo, *hi = grid.hi;

  // Standard fields, each value checked against its bits.
  const auto standard = standard_fields(format);
  std::vector<std::pair<StandardField, const std::vector<double>*>> out_fields;
  for (const auto& f : standard) {
    const auto it = fields.find(f.name);
    if (it == fields.end()) continue;
    const auto& v = *it->second;
    for (std::size_t i = 0; i < n; ++i) {
      // Scaled fields (the scan angle in 0.006 degree steps) round to their step: a legacy
      // file's whole degrees land within 0.003 degrees in formats 6-10.
      const double raw = f.scale == 1 ? v[i] : std::round(v[i] / f.scale);
      const bool ok = f.bits ? raw >= 0 && raw < double(1u << f.bits) && raw == std::floor(raw)
                      : (f.type == Type::F32 || f.type == Type::F64)
                          ? (f.type == Type::F64 || double(float(raw)) == raw || std::isnan(raw))
                          : fits(raw, f.type) && raw == std::floor(raw);
      if (!ok)
        refuse(path, "field '" + std::string(f.name) + "' holds " + value_text(v[i]) +
                         " at point " + std::to_string(i) + ", which LAS point format " +
                         std::to_string(format) + " cannot store");
    }
    out_fields.push_back({f, &v});
  }
  const std::size_t core = point_size(format);

  // Extra bytes: everything else, each with the source's descriptor where it still fits.
  std::vector<Extra> extras;
  const auto add_extra = [&](const std::string& name, const std::vector<double>* values,
                             int component, int count) {
    if (name.size() > 32)
      refuse(path, "field name '" + name + "' is longer than LAS's 32 characters");
    Extra e{name, values, component, count, {}};
    for (const auto& d : src.descriptors) {
      if (d.name != name || count != 1) continue;
      bool ok = true;
      for (std::size_t i = 0; ok && i < n; ++i) {
        const double raw = (d.type == Type::F32 || d.type == Type::F64)
                               ? (*values)[i] - d.shift[0]
                               : std::round(((*values)[i] - d.shift[0]) / d.scale[0]);
        ok = fits(raw, d.type) && raw * d.scale[0] + d.shift[0] == (*values)[i];
      }
      if (ok) e.how = d;
    }
    if (e.how.raw.empty()) {
      e.how.type = count == 1 && exact_float(*values) ? Type::F32 : Type::F64;
      if (count != 1) {
        bool narrow = true;
        for (std::size_t i = std::size_t(component); narrow && i < values->size();
             i += std::size_t(count))
          narrow = std::isnan((*values)[i]) || double(float((*values)[i])) == (*values)[i];
        e.how.type = narrow ? Type::F32 : Type::F64;
      }
      e.how.size = type_size(e.how.type);
    }
    extras.push_back(std::move(e));
  };
  for (const auto& f : cloud.extra) {
    const bool is_standard = std::any_of(standard.begin(), standard.end(),
                                         [&](const StandardField& s) { return f.name == s.name; });
    if (is_standard && f.count == 1) continue;
    if (f.name == "extra_bytes") {
      for (int k = 0; k < f.count; ++k) {
        Extra e{"", &f.values, k, f.count, {}};
        e.how.undocumented = true;
        e.how.size = 1;
        extras.push_back(e);
      }
      continue;
    }
    for (int k = 0; k < f.count; ++k)
      add_extra(f.count == 1 ? f.name : f.name + "_" + std::to_string(k), &f.values, k, f.count);
  }
  std::vector<double> exact_intensity;
  if (!intensity_exact) {
    exact_intensity.assign(cloud.intensity.begin(), cloud.intensity.end());
    add_extra("intensity", &exact_intensity, 0, 1);
  }
  if (!labels.empty()) {
    Extra e{"label", &labels, 0, 1, {}};
    e.how.type = Type::I32;
    e.how.size = 4;
    extras.push_back(e);
  }
  if (cloud.has_normals()) {
    for (int a = 0; a < 3; ++a) {
      for (const auto& p : cloud.normals)
        normals[a].push_back((&p.x)[a]);
      Extra e{std::string("normal_") + "xyz" [a], &normals[a], 0, 1, {}};
      e.how.type = Type::F32;
      e.how.size = 4;
      extras.push_back(e);
    }
  }
  std::size_t record = core;
  for (const auto& e : extras)
    record += e.how.size;
  if (record > 65535)
    refuse(path,
           "the fields need " + std::to_string(record) + " bytes per point (LAS allows 65,535)");

  // Variable-length records: the source's, and the extra-bytes descriptors.
  std::string vlrs;
  std::uint32_t vlr_count = 0;
  for (const auto& v : src.vlrs) {
    vlrs += v;
    ++vlr_count;
  }
  bool has_descriptors = false;
  std::string descriptors;
  for (const auto& e : extras) {
    if (e.name.empty() && e.how.undocumented) {
      Extra named = e;
      named.name = "extra_bytes_" + std::to_string(e.component);
      descriptors += descriptor(named);
    } else {
      descriptors += descriptor(e);
    }
    has_descriptors = true;
  }
  if (has_descriptors) {
    if (descriptors.size() > 65535) refuse(path, "too many extra fields for one LAS record");
    std::string head(kVlrHeader, '\0');
    auto* q = reinterpret_cast<std::uint8_t*>(head.data());
    std::memcpy(q + 2, kSpecUser.data(), kSpecUser.size());
    put(q + 18, kExtraBytesRecord);
    put(q + 20, std::uint16_t(descriptors.size()));
    std::memcpy(q + 22, "Extra bytes", 11);
    vlrs += head + descriptors;
    ++vlr_count;
  }

  // The header.
  const std::size_t header_size = minor >= 4 ? kHeader14 : minor == 3 ? kHeader13 : kHeader12;
  std::vector<std::uint8_t> h(header_size, 0);
  std::memcpy(h.data(), "LASF", 4);
  put(&h[at::file_source_id], src.file_source_id);
  std::uint16_t encoding = src.global_encoding;
  if (format >= 6) encoding |= 16;  // WKT, as LAS 1.4 requires for these formats
  if (minor < 3) encoding &= 1;
  put(&h[at::global_encoding], encoding);
  if (src.guid.size() == 16) std::memcpy(&h[at::guid], src.guid.data(), 16);
  h[at::version_major] = 1;
  h[at::version_minor] = std::uint8_t(minor);
  std::memcpy(&h[at::system_identifier], src.system.data(),
              std::min<std::size_t>(src.system.size(), 31));
  std::memcpy(&h[at::generating_software], "Cumulus", 7);
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  put(&h[at::creation_day], std::uint16_t(utc.tm_yday + 1));
  put(&h[at::creation_year], std::uint16_t(utc.tm_year + 1900));
  put(&h[at::header_size], std::uint16_t(header_size));
  put(&h[at::point_data_offset], std::uint32_t(header_size + vlrs.size()));
  put(&h[at::vlr_count], vlr_count);
  h[at::point_format] = std::uint8_t(format);
  put(&h[at::record_length], std::uint16_t(record));
  std::uint64_t by_return[15] = {};
  if (const auto it = fields.find("return_number"); it != fields.end())
    for (const double r : *it->second)
      if (r >= 1 && r <= 15) ++by_return[int(r) - 1];
  const bool legacy_counts = format <= 5 && n < (std::size_t(1) << 32);
  put(&h[at::legacy_point_count], std::uint32_t(legacy_counts ? n : 0));
  for (int r = 0; r < 5; ++r)
    put(&h[at::legacy_by_return + 4 * r], std::uint32_t(legacy_counts ? by_return[r] : 0));
  for (int a = 0; a < 3; ++a) {
    put(&h[at::scale + 8 * a], scale[a]);
    put(&h[at::offset + 8 * a], offset[a]);
    const double x0 = lo[a] * scale[a] + offset[a], x1 = hi[a] * scale[a] + offset[a];
    put(&h[at::bounds + 16 * a], std::max(x0, x1));
    put(&h[at::bounds + 16 * a + 8], std::min(x0, x1));
  }
  const std::uint64_t points_end = header_size + vlrs.size() + std::uint64_t(n) * record;
  if (minor >= 4) {
    put(&h[at::evlr_start], std::uint64_t(src.evlrs.empty() ? 0 : points_end));
    put(&h[at::evlr_count], std::uint32_t(src.evlrs.size()));
    put(&h[at::point_count], std::uint64_t(n));
    for (int r = 0; r < 15; ++r)
      put(&h[at::by_return + 8 * r], by_return[r]);
    for (const auto& e : src.evlrs)  // the waveform packets, if any, follow the points
      if (e.size() >= kEvlrHeader &&
          text(reinterpret_cast<const std::uint8_t*>(e.data()) + 2, 16) == kSpecUser &&
          get<std::uint16_t>(reinterpret_cast<const std::uint8_t*>(e.data()) + 18) == 65535)
        put(&h[at::waveform_start], points_end);
  }

  AtomicFile out(path);
  out.write(h.data(), h.size());
  out.write(vlrs);
  constexpr std::size_t kChunk = 1 << 15;
  std::vector<std::uint8_t> buffer(kChunk * record);
  for (std::size_t b = 0; b < n; b += kChunk) {
    const std::size_t e = std::min(n, b + kChunk);
    std::fill(buffer.begin(), buffer.end(), 0);
    for (std::size_t i = b; i < e; ++i) {
      std::uint8_t* p = &buffer[(i - b) * record];
      for (int a = 0; a < 3; ++a)
        put(p + 4 * a,
            std::int32_t(std::round(
                (cloud.origin[a] + double((&cloud.points[i].x)[a]) - offset[a]) / scale[a])));
      if (!intensity.empty()) put(p + 12, std::uint16_t(intensity[i]));
      for (const auto& [f, v] : out_fields) {
        const double raw = f.scale == 1 ? (*v)[i] : std::round((*v)[i] / f.scale);
        if (f.bits)
          p[f.offset] |= std::uint8_t(std::uint32_t(raw) << f.shift);
        else
          write_value(p + f.offset, f.type, raw);
      }
      std::size_t at = core;
      for (const auto& x : extras) {
        const double v = (*x.values)[i * std::size_t(x.count) + std::size_t(x.component)];
        if (x.how.undocumented)
          p[at] = std::uint8_t(v);
        else if (x.how.type == Type::F32 || x.how.type == Type::F64)
          write_value(p + at, x.how.type, v - x.how.shift[0]);
        else
          write_value(p + at, x.how.type, std::round((v - x.how.shift[0]) / x.how.scale[0]));
        at += x.how.size;
      }
    }
    out.write(buffer.data(), (e - b) * record);
  }
  for (const auto& e : src.evlrs)
    out.write(e);
  out.commit();
}

namespace detail {

double las_rounding(const std::string& path, const PointCloud& cloud, double& scale) {
  const Grid g = grid_for(cloud, read_source(path, cloud));
  scale = g.scale[0];
  if (!g.ok) return 0;  // the writer refuses the cloud with its own reason
  double moved = 0;
  for (std::size_t i = 0; i < cloud.size(); ++i)
    for (int a = 0; a < 3; ++a) {
      const double w = cloud.origin[a] + double((&cloud.points[i].x)[a]);
      if (std::isfinite(w))
        moved = std::max(moved, std::abs(std::round((w - g.offset[a]) / g.scale[a]) * g.scale[a] +
                                         g.offset[a] - w));
    }
  return moved;
}

}  // namespace detail

}  // namespace cumulus
