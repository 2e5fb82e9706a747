// The LAS layout's tables and the extra-bytes descriptors' parser, shared by the reader and
// the writer.
#include <algorithm>

#include "core/error.h"
#include "io/las_format.h"

namespace cumulus::las {

std::vector<StandardField> standard_fields(int format) {
  std::vector<StandardField> f;
  if (legacy(format)) {
    f = {{"return_number", 14, Type::U8, 0, 3},  {"number_of_returns", 14, Type::U8, 3, 3},
         {"scan_direction", 14, Type::U8, 6, 1}, {"edge_of_flight_line", 14, Type::U8, 7, 1},
         {"classification", 15, Type::U8, 0, 5}, {"synthetic", 15, Type::U8, 5, 1},
         {"key_point", 15, Type::U8, 6, 1},      {"withheld", 15, Type::U8, 7, 1},
         {"scan_angle", 16, Type::I8},           {"user_data", 17, Type::U8},
         {"point_source_id", 18, Type::U16}};
    if (has_gps(format)) f.push_back({"gps_time", 20, Type::F64});
  } else {
    f = {{"return_number", 14, Type::U8, 0, 4},
         {"number_of_returns", 14, Type::U8, 4, 4},
         {"synthetic", 15, Type::U8, 0, 1},
         {"key_point", 15, Type::U8, 1, 1},
         {"withheld", 15, Type::U8, 2, 1},
         {"overlap", 15, Type::U8, 3, 1},
         {"scanner_channel", 15, Type::U8, 4, 2},
         {"scan_direction", 15, Type::U8, 6, 1},
         {"edge_of_flight_line", 15, Type::U8, 7, 1},
         {"classification", 16, Type::U8},
         {"user_data", 17, Type::U8},
         {"scan_angle", 18, Type::I16, 0, 0, 0.006},
         {"point_source_id", 20, Type::U16},
         {"gps_time", 22, Type::F64}};
  }
  const std::uint16_t colour = legacy(format) ? (has_gps(format) ? 28 : 20) : 30;
  if (has_rgb(format))
    f.insert(f.end(), {{"red", colour, Type::U16},
                       {"green", std::uint16_t(colour + 2), Type::U16},
                       {"blue", std::uint16_t(colour + 4), Type::U16}});
  if (has_nir(format)) f.push_back({"nir", 36, Type::U16});
  if (has_wave(format)) {
    const std::uint16_t w = format == 4 ? 28 : format == 5 ? 34 : format == 9 ? 30 : 38;
    f.insert(f.end(), {{"wave_descriptor", w, Type::U8},
                       {"wave_offset", std::uint16_t(w + 1), Type::U64},
                       {"wave_size", std::uint16_t(w + 9), Type::U32},
                       {"wave_location", std::uint16_t(w + 13), Type::F32},
                       {"wave_xt", std::uint16_t(w + 17), Type::F32},
                       {"wave_yt", std::uint16_t(w + 21), Type::F32},
                       {"wave_zt", std::uint16_t(w + 25), Type::F32}});
  }
  return f;
}

// Parses the extra-bytes descriptors of a LASF_Spec record 4.
std::vector<ExtraBytes> read_descriptors(const std::string& path, const std::uint8_t* p,
                                         std::size_t bytes) {
  if (bytes % kDescriptorSize != 0)
    throw IoError(path, "malformed extra-bytes record: " + std::to_string(bytes) +
                            " bytes is not a whole number of 192-byte descriptors");
  std::vector<ExtraBytes> out;
  for (std::size_t at = 0; at < bytes; at += kDescriptorSize) {
    const std::uint8_t* q = p + at;
    ExtraBytes e;
    e.raw.assign(reinterpret_cast<const char*>(q), kDescriptorSize);
    const int type = q[2], options = q[3];
    e.name = text(q + 4, 32);
    if (type > 30)
      throw IoError(path, "malformed extra-bytes record: field '" + e.name + "' has data type " +
                              std::to_string(type) + " (LAS knows 0 to 30)");
    if (type == 0) {
      e.undocumented = true;
      e.count = std::max(options, 1);
      e.size = std::size_t(e.count);
    } else {
      e.type = Type((type - 1) % 10);
      e.count = type <= 10 ? 1 : (type - 11) / 10 + 2;
      e.size = type_size(e.type) * std::size_t(e.count);
      e.scaled = options & 8;
      e.offset = options & 16;
      for (int k = 0; k < 3; ++k) {
        if (e.scaled) e.scale[k] = get<double>(q + 112 + 8 * k);
        if (e.offset) e.shift[k] = get<double>(q + 136 + 8 * k);
      }
    }
    if (e.name.empty()) e.name = "extra_" + std::to_string(out.size());
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace cumulus::las
