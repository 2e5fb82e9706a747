// 16-bit depth images: PNG through libpng, TIFF through libtiff. Both libraries report errors
// through C callbacks; these are turned into IoError with the library's own words.
#include <png.h>
#include <tiffio.h>

#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <vector>

#include "core/error.h"
#include "io/atomic_file.h"
#include "io/io.h"
#include "io/io_detail.h"

namespace cumulus {

namespace {

// 16384 x 16384: beyond any depth camera or range image.
constexpr std::uint64_t kMaxDepthPixels = std::uint64_t(1) << 28;

struct PngError {
  std::jmp_buf jump;
  char message[256] = "unknown libpng error";
};

void png_error_fn(png_structp png, png_const_charp msg) {
  auto* err = static_cast<PngError*>(png_get_error_ptr(png));
  std::snprintf(err->message, sizeof err->message, "%s", msg);
  std::longjmp(err->jump, 1);
}
void png_warning_fn(png_structp, png_const_charp) {}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Plain-C body: no object with a destructor lives across setjmp/longjmp here.
bool read_png16(std::FILE* fp, PngError* err, std::uint32_t* w, std::uint32_t* h, int* depth,
                int* color, std::vector<std::uint16_t>* pixels) {
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, err, png_error_fn, png_warning_fn);
  if (!png) return false;
  png_infop info = png_create_info_struct(png);
  // volatile: it changes after setjmp, and longjmp would otherwise hand back a stale copy (the
  // sanitized test suite caught the row list leaking on a truncated file).
  std::vector<png_bytep>* volatile rows = nullptr;
  if (setjmp(err->jump)) {
    png_destroy_read_struct(&png, &info, nullptr);
    delete rows;
    return false;
  }
  png_init_io(png, fp);
  png_read_info(png, info);
  *w = png_get_image_width(png, info);
  *h = png_get_image_height(png, info);
  *depth = png_get_bit_depth(png, info);
  *color = png_get_color_type(png, info);
  if (*depth != 16 || *color != PNG_COLOR_TYPE_GRAY) {
    png_destroy_read_struct(&png, &info, nullptr);
    return true;  // the caller explains what is wrong with the format
  }
  png_set_swap(png);  // PNG stores 16-bit samples big-endian
  pixels->resize(std::size_t(*w) * *h);
  rows = new std::vector<png_bytep>(*h);
  for (std::uint32_t r = 0; r < *h; ++r)
    (*rows)[r] = reinterpret_cast<png_bytep>(&(*pixels)[std::size_t(r) * *w]);
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  delete rows;
  return true;
}

DepthImage load_png_depth(const std::string& path, double scale) {
  std::unique_ptr<std::FILE, FileCloser> fp(std::fopen(path.c_str(), "rb"));
  if (!fp) throw IoError(path, "cannot open for reading");
  unsigned char sig[8] = {};
  if (std::fread(sig, 1, 8, fp.get()) != 8 || png_sig_cmp(sig, 0, 8) != 0)
    throw IoError(path, "not a PNG file (bad signature)");
  std::rewind(fp.get());
  PngError err;
  std::uint32_t w = 0, h = 0;
  int depth = 0, color = 0;
  std::vector<std::uint16_t> raw;
  if (!read_png16(fp.get(), &err, &w, &h, &depth, &color, &raw))
    throw IoError(path, std::string("corrupt PNG: ") + err.message);
  if (depth != 16 || color != PNG_COLOR_TYPE_GRAY)
    throw IoError(path,
                  "a depth image must be a 16-bit single-channel PNG; this one is " +
                      std::to_string(depth) + "-bit" +
                      (color == PNG_COLOR_TYPE_GRAY ? std::string("") : std::string(" colour")));
  DepthImage img;
  img.width = w;
  img.height = h;
  img.source_scale = scale;
  img.depth.resize(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i)
    img.depth[i] = depth_from_unit(raw[i], scale);
  return img;
}

thread_local std::string tiff_message;

void tiff_error_handler(const char* module, const char* fmt, va_list ap) {
  char buf[256];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  tiff_message = std::string(module ? module : "libtiff") + ": " + buf;
}

DepthImage load_tiff_depth(const std::string& path, double scale) {
  TIFFSetErrorHandler(tiff_error_handler);
  TIFFSetWarningHandler(nullptr);
  tiff_message = "unknown libtiff error";
  std::unique_ptr<TIFF, void (*)(TIFF*)> tif(TIFFOpen(path.c_str(), "r"), TIFFClose);
  if (!tif) throw IoError(path, "not a readable TIFF file (" + tiff_message + ")");
  std::uint32_t w = 0, h = 0;
  std::uint16_t bits = 0, spp = 1, format = SAMPLEFORMAT_UINT, planar = PLANARCONFIG_CONTIG;
  TIFFGetField(tif.get(), TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tif.get(), TIFFTAG_IMAGELENGTH, &h);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_SAMPLEFORMAT, &format);
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_PLANARCONFIG, &planar);
  if (w == 0 || h == 0) throw IoError(path, "TIFF has no image size");
  if (spp != 1)
    throw IoError(path,
                  "a depth image must have one channel; this TIFF has " + std::to_string(spp));
  const bool u16 = bits == 16 && format == SAMPLEFORMAT_UINT;
  const bool f32 = bits == 32 && format == SAMPLEFORMAT_IEEEFP;
  if (!u16 && !f32)
    throw IoError(path,
                  "a depth TIFF must be 16-bit unsigned (or 32-bit float metres); this one is " +
                      std::to_string(bits) + "-bit");
  if (TIFFIsTiled(tif.get()))
    throw IoError(path, "tiled TIFF files are not supported; save it with strips");
  const tmsize_t line = TIFFScanlineSize(tif.get());
  if (line < tmsize_t(w) * (bits / 8))
    throw IoError(path, "TIFF scanline is shorter than its width");
  // The image is allocated before its rows are read: a header declaring billions of pixels
  // must not get that far (found by fuzzing: a 9 GB allocation).
  if (std::uint64_t(w) * h > kMaxDepthPixels)
    throw IoError(path, "TIFF declares " + std::to_string(w) + " x " + std::to_string(h) +
                            " pixels, more than a depth image holds (at most " +
                            std::to_string(kMaxDepthPixels) + ")");
  std::uint16_t compression = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(tif.get(), TIFFTAG_COMPRESSION, &compression);
  std::error_code size_error;
  const auto file_size = std::filesystem::file_size(path, size_error);
  if (compression == COMPRESSION_NONE && !size_error &&
      std::uint64_t(line) * h > std::uint64_t(file_size))
    throw IoError(path, "TIFF data is truncated: " + std::to_string(h) + " rows of " +
                            std::to_string(line) + " bytes do not fit in its " +
                            std::to_string(file_size) + " bytes");
  DepthImage img;
  img.width = w;
  img.height = h;
  img.source_scale = f32 ? 1.0 : scale;
  img.depth.resize(std::size_t(w) * h);
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(line));
  for (std::uint32_t r = 0; r < h; ++r) {
    if (TIFFReadScanline(tif.get(), buf.data(), r, 0) < 0)
      throw IoError(path,
                    "corrupt TIFF data at row " + std::to_string(r) + " (" + tiff_message + ")");
    float* out = &img.depth[std::size_t(r) * w];
    for (std::uint32_t c = 0; c < w; ++c) {
      if (u16) {
        std::uint16_t v;
        std::memcpy(&v, &buf[2 * std::size_t(c)], 2);
        out[c] = depth_from_unit(v, scale);
      } else {
        std::memcpy(&out[c], &buf[4 * std::size_t(c)], 4);
      }
    }
  }
  return img;
}

}  // namespace

DepthImage load_depth_image(const std::string& path, double metres_per_unit) {
  detail::require_readable_file(path);
  if (!(metres_per_unit > 0) || !std::isfinite(metres_per_unit))
    throw IoError(path, "depth scale must be a positive number of metres per unit");
  if (!is_depth_image_path(path))
    throw IoError(path, "unsupported depth image type (use .png or .tif)");
  const std::string ext = path.substr(path.find_last_of('.'));
  if (ext == ".png" || ext == ".PNG") return load_png_depth(path, metres_per_unit);
  return load_tiff_depth(path, metres_per_unit);
}

void save_depth_png(const std::string& path, const DepthImage& image, double metres_per_unit) {
  if (image.width == 0 || image.height == 0 ||
      image.depth.size() != std::size_t(image.width) * image.height)
    throw IoError(path, "refusing to write an empty or inconsistent depth image");
  if (!(metres_per_unit > 0)) throw IoError(path, "depth scale must be positive");
  std::vector<std::uint16_t> raw(image.depth.size());
  for (std::size_t i = 0; i < raw.size(); ++i)
    raw[i] = depth_to_unit(image.depth[i], metres_per_unit);
  // libpng encodes into memory (its write callback cannot report a failed write without a
  // longjmp past our objects); AtomicFile then puts the bytes on disk, checked.
  std::vector<unsigned char> encoded;
  PngError err;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, png_error_fn, png_warning_fn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) throw IoError(path, "libpng could not start");
  if (setjmp(err.jump)) {
    png_destroy_write_struct(&png, &info);
    throw IoError(path, std::string("cannot write PNG: ") + err.message);
  }
  png_set_write_fn(
      png, &encoded,
      [](png_structp p, png_bytep data, png_size_t n) {
        auto* out = static_cast<std::vector<unsigned char>*>(png_get_io_ptr(p));
        try {
          out->insert(out->end(), data, data + n);
        } catch (const std::bad_alloc&) {
          png_error(p, "out of memory");  // no exception may cross libpng's C frames
        }
      },
      [](png_structp) {});
  png_set_IHDR(png, info, image.width, image.height, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_set_swap(png);
  for (std::uint32_t r = 0; r < image.height; ++r)
    png_write_row(png, reinterpret_cast<png_const_bytep>(&raw[std::size_t(r) * image.width]));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  AtomicFile out(path);
  out.write(encoded.data(), encoded.size());
  out.commit();
}

}  // namespace cumulus
