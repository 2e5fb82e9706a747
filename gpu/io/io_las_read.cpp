// LAS 1.0-1.4 reader: the file is memory-mapped, checked against its header, and converted in
// chunks of points on every core (each chunk's records stay in cache while all its fields are
// taken out of them).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <thread>
#include <type_traits>

#include "core/error.h"
#include "io/io.h"
#include "io/io_detail.h"
#include "io/las_format.h"

namespace cumulus {

namespace {

using namespace las;

class MappedFile {
 public:
  MappedFile(const std::string& path, std::size_t size) : size_(size) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError(path, "cannot open for reading: " + path_error(path, errno));
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int error = errno;
    ::close(fd);
    if (p == MAP_FAILED)
      throw IoError(path, std::string("cannot map the file: ") + std::strerror(error));
    data_ = static_cast<const std::uint8_t*>(p);
    ::madvise(p, size, MADV_SEQUENTIAL);
  }
  ~MappedFile() { ::munmap(const_cast<std::uint8_t*>(data_), size_); }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const std::uint8_t* data() const { return data_; }

 private:
  const std::uint8_t* data_ = nullptr;
  std::size_t size_;
};

struct Header {
  int minor = 0, format = 0;
  std::size_t header_size = 0, point_offset = 0, record_length = 0, vlr_count = 0;
  std::uint64_t count = 0, evlr_start = 0, evlr_count = 0;
  double scale[3]{}, offset[3]{};
};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

Header read_header(const std::string& path, const std::uint8_t* d, std::size_t size) {
  const auto fail = [&](const std::string& why) { throw IoError(path, why); };
  if (size < 4 || std::memcmp(d, "LASF", 4) != 0) fail("not a LAS file (no LASF signature)");
  if (size < kHeader12) fail("truncated LAS header (" + std::to_string(size) + " bytes)");
  Header h;
  const int major = d[at::version_major];
  h.minor = d[at::version_minor];
  if (major != 1 || h.minor > 4)
    fail("LAS version " + std::to_string(major) + "." + std::to_string(h.minor) +
         " is not supported (1.0 to 1.4 are)");
  h.header_size = get<std::uint16_t>(d + at::header_size);
  const std::size_t needed = h.minor >= 4 ? kHeader14 : h.minor == 3 ? kHeader13 : kHeader12;
  if (h.header_size < needed || h.header_size > size)
    fail("header size " + std::to_string(h.header_size) + " is wrong for LAS 1." +
         std::to_string(h.minor) + " (at least " + std::to_string(needed) + " bytes)");
  const int id = d[at::point_format];
  if (id & 0xC0)
    fail("the points are compressed (LAZ, point format " + std::to_string(id) +
         "): this build has no LASzip; convert the file to plain LAS first, e.g. with "
         "'laszip -i in.laz -o out.las' or 'pdal translate in.laz out.las'");
  h.format = id;
  if (h.format > kMaxFormat)
    fail("unknown point format " + std::to_string(id) + " (LAS has formats 0 to 10)");
  if (h.format > 5 && h.minor < 4)
    fail("point format " + std::to_string(id) + " needs LAS 1.4, the header says 1." +
         std::to_string(h.minor));
  h.record_length = get<std::uint16_t>(d + at::record_length);
  if (h.record_length < point_size(h.format))
    fail("point records of " + std::to_string(h.record_length) +
         " bytes are shorter than point format " + std::to_string(id) + "'s " +
         std::to_string(point_size(h.format)));
  h.point_offset = get<std::uint32_t>(d + at::point_data_offset);
  if (h.point_offset < h.header_size || h.point_offset > size)
    fail("the offset to the point data (" + std::to_string(h.point_offset) +
         ") lies outside the file (" + std::to_string(size) + " bytes, header " +
         std::to_string(h.header_size) + ")");
  h.vlr_count = get<std::uint32_t>(d + at::vlr_count);
  h.count = get<std::uint32_t>(d + at::legacy_point_count);
  if (h.minor >= 4) {
    const auto wide = get<std::uint64_t>(d + at::point_count);
    if (wide != 0 || h.count == 0) h.count = wide;
    h.evlr_start = get<std::uint64_t>(d + at::evlr_start);
    h.evlr_count = get<std::uint32_t>(d + at::evlr_count);
  }
  if (h.count == 0) fail("the file holds no points");
  const std::uint64_t room = (size - h.point_offset) / h.record_length;
  if (h.count > room)
    fail("the header says " + std::to_string(h.count) + " points of " +
         std::to_string(h.record_length) + " bytes, but the file has room for " +
         std::to_string(room) + ": it is truncated or its header is wrong");
  for (int a = 0; a < 3; ++a) {
    h.scale[a] = get<double>(d + at::scale + 8 * a);
    h.offset[a] = get<double>(d + at::offset + 8 * a);
    const char* axis[] = {"x", "y", "z"};
    if (!std::isfinite(h.scale[a]) || h.scale[a] == 0)
      fail(std::string("the ") + axis[a] + " scale factor is " + number(h.scale[a]) +
           " (it must be a finite non-zero number)");
    if (!std::isfinite(h.offset[a]) || std::abs(h.offset[a]) > 1e15)
      fail(std::string("the ") + axis[a] + " offset " + number(h.offset[a]) + " is out of range");
  }
  return h;
}

void read_records(const std::string& path, const std::uint8_t* d, std::size_t size, const Header& h,
                  PointCloud& cloud, std::vector<ExtraBytes>& extra_bytes) {
  std::size_t at = h.header_size;
  for (std::size_t i = 0; i < h.vlr_count; ++i) {
    if (at + kVlrHeader > h.point_offset)
      throw IoError(path, "malformed variable-length record " + std::to_string(i) +
                              ": its header runs past the start of the point data");
    const std::size_t length = get<std::uint16_t>(d + at + 20);
    if (at + kVlrHeader + length > h.point_offset)
      throw IoError(path, "malformed variable-length record " + std::to_string(i) + " ('" +
                              text(d + at + 2, 16) + "'): its " + std::to_string(length) +
                              " bytes run past the start of the point data");
    if (text(d + at + 2, 16) == kSpecUser && get<std::uint16_t>(d + at + 18) == kExtraBytesRecord)
      extra_bytes = read_descriptors(path, d + at + kVlrHeader, length);
    cloud.metadata.push_back(
        {"las.vlr." + std::to_string(i),
         std::string(reinterpret_cast<const char*>(d + at), kVlrHeader + length)});
    at += kVlrHeader + length;
  }
  const std::uint64_t points_end = h.point_offset + h.count * h.record_length;
  std::uint64_t e = h.evlr_start;
  for (std::size_t i = 0; i < h.evlr_count; ++i) {
    if (e < points_end || e > size || size - e < kEvlrHeader)
      throw IoError(path, "malformed extended variable-length record " + std::to_string(i) +
                              ": it lies " +
                              (e < points_end ? "inside the points" : "past the end of the file"));
    const auto length = get<std::uint64_t>(d + e + 20);
    if (length > size - e - kEvlrHeader)
      throw IoError(path, "malformed extended variable-length record " + std::to_string(i) +
                              ": its " + std::to_string(length) +
                              " bytes run past the end of the file");
    if (text(d + e + 2, 16) == kSpecUser && get<std::uint16_t>(d + e + 18) == kExtraBytesRecord)
      extra_bytes = read_descriptors(path, d + e + kEvlrHeader, std::size_t(length));
    cloud.metadata.push_back(
        {"las.evlr." + std::to_string(i),
         std::string(reinterpret_cast<const char*>(d + e), kEvlrHeader + length)});
    e += kEvlrHeader + length;
  }
  std::size_t described = 0;
  for (const auto& x : extra_bytes)
    described += x.size;
  if (point_size(h.format) + described > h.record_length)
    throw IoError(path, "malformed extra-bytes record: its fields need " +
                            std::to_string(described) + " bytes per point, the records have " +
                            std::to_string(h.record_length - point_size(h.format)));
  if (point_size(h.format) + described < h.record_length) {
    ExtraBytes rest;
    rest.name = "extra_bytes";
    rest.undocumented = true;
    rest.count = int(h.record_length - point_size(h.format) - described);
    rest.size = std::size_t(rest.count);
    extra_bytes.push_back(std::move(rest));
  }
}

// Runs `work(begin, end)` over [0, n) in chunks on every core.
template <class Work>
void in_chunks(std::size_t n, const Work& work) {
  constexpr std::size_t kChunk = 1 << 16;
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  const std::size_t threads =
      std::min<std::size_t>(chunks, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<std::size_t> next{0};
  const auto run = [&] {
    for (std::size_t c; (c = next++) < chunks;)
      work(c * kChunk, std::min(n, (c + 1) * kChunk));
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t)
    pool.emplace_back(run);
  run();
  for (auto& t : pool)
    t.join();
}

// `n` values in `v`, on transparent huge pages where the system gives them on request: a tile's
// fields are gigabytes of fresh memory, and faulting them in 4 KiB pages took half the read
// time (20M points of format 1 on the 2-core CI machine: 854 ms, 494 ms with huge pages).
template <class T>
void allocate(std::vector<T>& v, std::size_t n) {
  v.reserve(n);
  constexpr std::uintptr_t kHuge = std::uintptr_t(2) << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(v.data()) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(v.data() + n)) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  v.resize(n);
}

// One value per point (or `count`) taken from each record into an array of doubles (or floats).
struct Column {
  std::size_t offset;
  Type type;
  std::uint32_t shift = 0, mask = 0;  // mask 0: the whole value
  double scale = 1, add = 0;
  double* out;
  std::size_t out_stride = 1;
  float* out_float = nullptr;  // instead of `out`
};

template <class T>
void convert(const std::uint8_t* records, std::size_t stride, std::size_t begin, std::size_t end,
             const Column& c) {
  if (c.out_float) {
    for (std::size_t i = begin; i < end; ++i)
      c.out_float[i] = float(double(get<T>(records + i * stride + c.offset)) * c.scale + c.add);
    return;
  }
  for (std::size_t i = begin; i < end; ++i) {
    const std::uint8_t* p = records + i * stride + c.offset;
    double v;
    if constexpr (std::is_integral_v<T>) {
      if (c.mask) {
        v = double((std::uint32_t(p[0]) >> c.shift) & c.mask);
      } else {
        v = double(get<T>(p));
      }
    } else {
      v = double(get<T>(p));
    }
    c.out[i * c.out_stride] = v * c.scale + c.add;
  }
}

void convert_column(const std::uint8_t* r, std::size_t stride, std::size_t b, std::size_t e,
                    const Column& c) {
  switch (c.type) {
    case Type::U8:
      return convert<std::uint8_t>(r, stride, b, e, c);
    case Type::I8:
      return convert<std::int8_t>(r, stride, b, e, c);
    case Type::U16:
      return convert<std::uint16_t>(r, stride, b, e, c);
    case Type::I16:
      return convert<std::int16_t>(r, stride, b, e, c);
    case Type::U32:
      return convert<std::uint32_t>(r, stride, b, e, c);
    case Type::I32:
      return convert<std::int32_t>(r, stride, b, e, c);
    case Type::U64:
      return convert<std::uint64_t>(r, stride, b, e, c);
    case Type::I64:
      return convert<std::int64_t>(r, stride, b, e, c);
    case Type::F32:
      return convert<float>(r, stride, b, e, c);
    case Type::F64:
      return convert<double>(r, stride, b, e, c);
  }
}

// 16-bit colours as 8-bit ones: the factor every value is a multiple of (1 for 8-bit values
// stored as they are, 256 or 257 for scaled ones), or 0 when none is (the 16-bit values are kept).
int colour_factor(const std::vector<double>* channels) {
  for (const int f : {1, 257, 256}) {
    bool all = true;
    for (int c = 0; c < 3 && all; ++c)
      for (const double v : channels[c])
        if (std::fmod(v, f) != 0 || v / f > 255) {
          all = false;
          break;
        }
    if (all) return f;
  }
  return 0;
}

}  // namespace

PointCloud load_las(const std::string& path) {
  const auto size = std::size_t(detail::require_readable_file(path));
  MappedFile file(path, size);
  const std::uint8_t* d = file.data();
  const Header h = read_header(path, d, size);
  PointCloud cloud;
  std::vector<ExtraBytes> extra_bytes;
  read_records(path, d, size, h, cloud, extra_bytes);
  const std::uint8_t* records = d + h.point_offset;
  const std::size_t n = std::size_t(h.count), stride = h.record_length;

  // First pass: bounds of the integer coordinates (for the local origin) and the OR of every
  // byte after them (a standard field that is zero at every point is not kept: LAS writes zero).
  const std::size_t core = point_size(h.format);
  std::int32_t lo[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, hi[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
  std::vector<std::uint8_t> any(core, 0);
  std::mutex merge;
  in_chunks(n, [&](std::size_t b, std::size_t e) {
    std::int32_t l[3] = {INT32_MAX, INT32_MAX, INT32_MAX}, u[3] = {INT32_MIN, INT32_MIN, INT32_MIN};
    std::uint8_t bits[80] = {};
    for (std::size_t i = b; i < e; ++i) {
      const std::uint8_t* p = records + i * stride;
      for (int a = 0; a < 3; ++a) {
        const auto v = get<std::int32_t>(p + 4 * a);
        l[a] = std::min(l[a], v);
        u[a] = std::max(u[a], v);
      }
      for (std::size_t k = 12; k < core; ++k)
        bits[k] |= p[k];
    }
    std::lock_guard lock(merge);
    for (int a = 0; a < 3; ++a) {
      lo[a] = std::min(lo[a], l[a]);
      hi[a] = std::max(hi[a], u[a]);
    }
    for (std::size_t k = 12; k < core; ++k)
      any[k] |= bits[k];
  });
  double wlo[3], whi[3];
  for (int a = 0; a < 3; ++a) {
    wlo[a] = std::min(lo[a] * h.scale[a], hi[a] * h.scale[a]) + h.offset[a];
    whi[a] = std::max(lo[a] * h.scale[a], hi[a] * h.scale[a]) + h.offset[a];
    // A scale that puts points beyond the planet's scale is a damaged header, and would not fit
    // float32 offsets from any origin.
    if (!(std::abs(wlo[a]) <= 1e12 && std::abs(whi[a]) <= 1e12 && whi[a] - wlo[a] <= 1e9))
      throw IoError(path, std::string("the ") + "xyz"[a] + " scale and offset put points at " +
                              number(std::abs(wlo[a]) > std::abs(whi[a]) ? wlo[a] : whi[a]) +
                              " m: the header is damaged");
  }
  cloud.origin = choose_local_origin(wlo, whi);

  const auto nonzero = [&](const StandardField& f) {
    std::uint64_t acc = 0;
    std::memcpy(&acc, any.data() + f.offset, type_size(f.type));
    return (f.bits ? (acc >> f.shift) & ((1u << f.bits) - 1) : acc) != 0;
  };
  std::vector<Column> columns;
  std::vector<std::vector<double>> colour(3);
  if (any[12] | any[13]) {
    allocate(cloud.intensity, n);
    columns.push_back({12, Type::U16, 0, 0, 1, 0, nullptr, 1, cloud.intensity.data()});
  }
  for (const auto& f : standard_fields(h.format)) {
    if (!nonzero(f)) continue;
    const std::string name = f.name;
    std::vector<double>* out;
    if (name == "red" || name == "green" || name == "blue") {
      out = &colour[name == "red" ? 0 : name == "green" ? 1 : 2];
    } else {
      cloud.extra.push_back({name, 1, {}});
      out = &cloud.extra.back().values;
    }
    allocate(*out, n);
    columns.push_back(
        {f.offset, f.type, f.shift, f.bits ? (1u << f.bits) - 1 : 0, f.scale, 0, out->data()});
  }
  std::size_t eoff = core;
  for (const auto& x : extra_bytes) {
    cloud.extra.push_back({x.name, x.count, {}});
    auto& values = cloud.extra.back().values;
    allocate(values, n * std::size_t(x.count));
    const std::size_t each = x.undocumented ? 1 : type_size(x.type);
    for (int k = 0; k < x.count; ++k)
      columns.push_back({eoff + each * std::size_t(k), x.undocumented ? Type::U8 : x.type, 0, 0,
                         x.scaled ? x.scale[std::min(k, 2)] : 1,
                         x.offset ? x.shift[std::min(k, 2)] : 0, values.data() + k,
                         std::size_t(x.count)});
    eoff += x.size;
  }
  allocate(cloud.points, n);
  in_chunks(n, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const std::uint8_t* p = records + i * stride;
      for (int a = 0; a < 3; ++a)
        (&cloud.points[i].x)[a] =
            float(get<std::int32_t>(p + 4 * a) * h.scale[a] + h.offset[a] - cloud.origin[a]);
    }
    for (const auto& c : columns)
      convert_column(records, stride, b, e, c);
  });

  if (!colour[0].empty() || !colour[1].empty() || !colour[2].empty()) {
    for (auto& c : colour)
      c.resize(n);
    const int factor = colour_factor(colour.data());
    cloud.rgb.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto to8 = [&](double v) {
        return std::uint8_t(factor ? v / factor : double(int(v) >> 8));
      };
      cloud.rgb[i] = {to8(colour[0][i]), to8(colour[1][i]), to8(colour[2][i])};
    }
    if (factor)
      cloud.metadata.push_back({"las.rgb_scale", std::to_string(factor)});
    else
      for (int c = 0; c < 3; ++c)
        cloud.extra.push_back({c == 0   ? "red"
                               : c == 1 ? "green"
                                        : "blue",
                               1, std::move(colour[c])});
  }
  // Members our writer stores as extra bytes (LAS has no place for them, or not exactly), taken
  // back where every value fits the member; another file's field of that name stays a field.
  const auto as_label = [](double v) {
    return v == std::floor(v) && v >= INT32_MIN && v <= INT32_MAX;
  };
  const auto as_float = [](double v) { return std::isnan(v) || std::abs(v) <= 3.4e38; };
  const auto take = [&](const char* name, auto fits_member) -> std::vector<double> {
    for (auto it = cloud.extra.begin(); it != cloud.extra.end(); ++it)
      if (it->name == name && it->count == 1 &&
          std::all_of(it->values.begin(), it->values.end(), fits_member)) {
        std::vector<double> v = std::move(it->values);
        cloud.extra.erase(it);
        return v;
      }
    return {};
  };
  if (auto v = take("label", as_label); !v.empty()) cloud.labels.assign(v.begin(), v.end());
  if (auto v = take("intensity", as_float); !v.empty()) cloud.intensity.assign(v.begin(), v.end());
  const auto normal = [&](const char* name) {
    const ExtraField* f = cloud.find_extra(name);
    return f && f->count == 1 && std::all_of(f->values.begin(), f->values.end(), as_float);
  };
  if (normal("normal_x") && normal("normal_y") && normal("normal_z")) {
    const auto x = take("normal_x", as_float), y = take("normal_y", as_float),
               z = take("normal_z", as_float);
    cloud.normals.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      cloud.normals[i] = {float(x[i]), float(y[i]), float(z[i])};
  }
  cloud.metadata.insert(
      cloud.metadata.begin(),
      {{"las.version", "1." + std::to_string(h.minor)},
       {"las.point_format", std::to_string(h.format)},
       {"las.scale", number(h.scale[0]) + " " + number(h.scale[1]) + " " + number(h.scale[2])},
       {"las.offset", number(h.offset[0]) + " " + number(h.offset[1]) + " " + number(h.offset[2])},
       {"las.global_encoding", std::to_string(get<std::uint16_t>(d + at::global_encoding))},
       {"las.file_source_id", std::to_string(get<std::uint16_t>(d + at::file_source_id))},
       {"las.guid", std::string(reinterpret_cast<const char*>(d + at::guid), 16)},
       {"las.system_identifier", text(d + at::system_identifier, 32)},
       {"las.generating_software", text(d + at::generating_software, 32)}});
  cloud.width = std::uint32_t(n);
  detail::finish_cloud(path, cloud);
  return cloud;
}

}  // namespace cumulus
