#pragma once
// The LAS 1.0-1.4 layout (ASPRS LAS specification 1.4 R15): where the public header keeps each
// value, the point formats 0-10 and their standard fields, variable-length records and
// extra-bytes descriptors. Private to io/ (io_las_read.cpp, io_las_write.cpp).
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace cumulus::las {

constexpr std::size_t kHeader12 = 227, kHeader13 = 235, kHeader14 = 375;
constexpr std::size_t kVlrHeader = 54, kEvlrHeader = 60, kDescriptorSize = 192;
constexpr int kMaxFormat = 10;

// Byte offsets of the public header's values.
namespace at {
constexpr std::size_t file_source_id = 4, global_encoding = 6, guid = 8, version_major = 24,
                      version_minor = 25, system_identifier = 26, generating_software = 58,
                      creation_day = 90, creation_year = 92, header_size = 94,
                      point_data_offset = 96, vlr_count = 100, point_format = 104,
                      record_length = 105, legacy_point_count = 107, legacy_by_return = 111,
                      scale = 131, offset = 155, bounds = 179,  // max x, min x, max y, ...
    waveform_start = 227, evlr_start = 235, evlr_count = 243, point_count = 247, by_return = 255;
}  // namespace at

template <class T>
T get(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
void put(std::uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// A fixed-size text field: up to the first NUL.
inline std::string text(const std::uint8_t* p, std::size_t size) {
  std::size_t n = 0;
  while (n < size && p[n] != 0)
    ++n;
  return {reinterpret_cast<const char*>(p), n};
}

enum class Type : std::uint8_t { U8, I8, U16, I16, U32, I32, U64, I64, F32, F64 };

constexpr std::size_t type_size(Type t) {
  constexpr std::size_t sizes[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
  return sizes[int(t)];
}

// The value of type `t` at `p`, as a double (exact for every type but 64-bit integers beyond
// 2^53, which no LAS field of ours reaches in practice).
inline double read_value(const std::uint8_t* p, Type t) {
  switch (t) {
    case Type::U8:
      return p[0];
    case Type::I8:
      return get<std::int8_t>(p);
    case Type::U16:
      return get<std::uint16_t>(p);
    case Type::I16:
      return get<std::int16_t>(p);
    case Type::U32:
      return get<std::uint32_t>(p);
    case Type::I32:
      return get<std::int32_t>(p);
    case Type::U64:
      return double(get<std::uint64_t>(p));
    case Type::I64:
      return double(get<std::int64_t>(p));
    case Type::F32:
      return get<float>(p);
    case Type::F64:
      return get<double>(p);
  }
  return 0;
}

// Whether integer `v` fits type `t` (floating types hold anything).
inline bool fits(double v, Type t) {
  constexpr double lo[] = {0, -128, 0, -32768, 0, -2147483648.0, 0, -9.2e18};
  constexpr double hi[] = {255, 127, 65535, 32767, 4294967295.0, 2147483647.0, 1.8e19, 9.2e18};
  if (t == Type::F32 || t == Type::F64) return true;
  return v >= lo[int(t)] && v <= hi[int(t)];
}

// Writes integer or real `v` (already checked with fits()) as type `t`.
inline void write_value(std::uint8_t* p, Type t, double v) {
  switch (t) {
    case Type::U8:
      p[0] = std::uint8_t(v);
      return;
    case Type::I8:
      return put(p, std::int8_t(v));
    case Type::U16:
      return put(p, std::uint16_t(v));
    case Type::I16:
      return put(p, std::int16_t(v));
    case Type::U32:
      return put(p, std::uint32_t(v));
    case Type::I32:
      return put(p, std::int32_t(v));
    case Type::U64:
      return put(p, std::uint64_t(v));
    case Type::I64:
      return put(p, std::int64_t(v));
    case Type::F32:
      return put(p, float(v));
    case Type::F64:
      return put(p, v);
  }
}

// One standard field of a point format: `bits` bits from bit `shift` of the value at `offset`
// (bits == 0: the whole value), times `scale` as the cloud holds it.
struct StandardField {
  const char* name;
  std::uint16_t offset;
  Type type;
  std::uint8_t shift = 0, bits = 0;
  double scale = 1;
};

constexpr bool legacy(int format) {
  return format <= 5;
}
constexpr bool has_gps(int f) {
  return f == 1 || f >= 3;
}
constexpr bool has_rgb(int f) {
  return f == 2 || f == 3 || f == 5 || f == 7 || f == 8 || f == 10;
}
constexpr bool has_nir(int f) {
  return f == 8 || f == 10;
}
constexpr bool has_wave(int f) {
  return f == 4 || f == 5 || f == 9 || f == 10;
}

// Bytes of a format's standard fields; 0 for an unknown format.
constexpr std::size_t point_size(int format) {
  constexpr std::size_t sizes[] = {20, 28, 26, 34, 57, 63, 30, 36, 38, 59, 67};
  return format >= 0 && format <= kMaxFormat ? sizes[format] : 0;
}

// Every standard field of `format` but X, Y, Z and intensity, which the cloud keeps in its own
// members.
std::vector<StandardField> standard_fields(int format);

// The oldest LAS 1.x minor version that has `format`.
constexpr int minimum_minor_version(int format) {
  return format <= 1 ? 0 : format <= 3 ? 2 : format <= 5 ? 3 : 4;
}

// An extra-bytes descriptor (the LASF_Spec record 4 holds one per field after the standard ones).
struct ExtraBytes {
  std::string name;
  Type type = Type::U8;
  int count = 1;              // values per point (types 11-30 of LAS 1.4 are arrays of 2 or 3)
  std::size_t size = 0;       // bytes per point
  bool undocumented = false;  // type 0: `size` opaque bytes, kept one byte per value
  bool scaled = false, offset = false;
  double scale[3] = {1, 1, 1}, shift[3] = {0, 0, 0};
  std::string raw;  // the descriptor's 192 bytes as read, written back for a field kept as it was
};

constexpr std::string_view kSpecUser = "LASF_Spec";
constexpr std::uint16_t kExtraBytesRecord = 4;

// The descriptors of an extra-bytes record's `bytes` bytes at `p`; throws IoError naming `path`
// when they are malformed.
std::vector<ExtraBytes> read_descriptors(const std::string& path, const std::uint8_t* p,
                                         std::size_t bytes);

}  // namespace cumulus::las
