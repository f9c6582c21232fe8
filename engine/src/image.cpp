// Image decoding (stb_image) and torchvision-compatible preprocessing. See winfer/image.h.
#include "winfer/image.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>

#include "core/file_io.h"

#include "engine/src/stb_image_config.h"

namespace winfer {

static_assert(STBI_MAX_DIMENSIONS == kMaxImageSide, "keep stb_image's limit equal to winfer's");

namespace {

// ---- decoding ------------------------------------------------------------------------------

bool starts_with(std::string_view bytes, const char* magic) {
  const size_t n = std::strlen(magic);
  return bytes.size() >= n && bytes.compare(0, n, magic) == 0;
}

// stb_image decodes a JPEG whose data stops early without complaint: it reads zeros past the
// end and returns an image whose lower part is grey. A complete JPEG has an end-of-image marker
// (FF D9) after its last start-of-scan marker (FF DA). Neither byte pair can occur inside
// entropy-coded data (an FF there is followed by 00 or a restart marker), and looking after the
// *last* scan skips an EXIF thumbnail's own markers, which come first.
bool jpeg_has_end_marker(std::string_view bytes) {
  size_t last_scan = std::string::npos;
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    if (static_cast<uint8_t>(bytes[i]) == 0xFF && static_cast<uint8_t>(bytes[i + 1]) == 0xDA) last_scan = i;
  }
  if (last_scan == std::string::npos) return false;
  for (size_t i = last_scan + 2; i + 1 < bytes.size(); ++i) {
    if (static_cast<uint8_t>(bytes[i]) == 0xFF && static_cast<uint8_t>(bytes[i + 1]) == 0xD9) return true;
  }
  return false;
}

// Debian's stb_image (2022-09) builds a JPEG Huffman table without checking that the 16 code
// counts of a DHT segment add up to at most 256, and then writes one byte per code into a
// 257-byte array: a few bytes of a hostile file overwrite the decoder's state (found by
// tests/fuzz/fuzz_image; newer stb_image refuses such tables). So every DHT segment the decoder
// will read is checked first. The walk follows the decoder: marker segments one after another
// from SOI, bytes between segments skipped up to the next FF (as the decoder does before the
// frame header); after a start-of-scan segment the entropy-coded data runs to the first FF
// followed by a byte other than 00 (fill FFs skipped), which is the next marker. Returns "" when
// every table is valid, else the reason.
// Where a JPEG's data starts after its start-of-image marker, or 0 if the bytes are not a JPEG
// as stb_image tests it: FF D8, possibly after more FF fill bytes (which it skips).
size_t jpeg_after_soi(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size() && static_cast<uint8_t>(bytes[i]) == 0xFF) ++i;
  return i >= 1 && i < bytes.size() && static_cast<uint8_t>(bytes[i]) == 0xD8 ? i + 1 : 0;
}

std::string jpeg_huffman_tables_error(std::string_view bytes) {
  const auto byte = [&](size_t i) -> unsigned { return i < bytes.size() ? static_cast<uint8_t>(bytes[i]) : 0u; };
  // Entropy-coded data runs to the next marker: an FF followed by neither 00 (a stuffed FF) nor FF (fill).
  const auto skip_entropy_coded_data = [&](size_t i) {
    while (i + 1 < bytes.size() && !(byte(i) == 0xFF && byte(i + 1) != 0x00 && byte(i + 1) != 0xFF)) ++i;
    return i;
  };
  size_t at = jpeg_after_soi(bytes);
  while (at + 1 < bytes.size()) {
    if (byte(at) != 0xFF) {  // junk where a marker should be: the decoder scans forward for one
      ++at;
      continue;
    }
    while (at < bytes.size() && byte(at) == 0xFF) ++at;  // fill bytes
    const unsigned marker = byte(at++);
    if (marker == 0xD9 || at >= bytes.size()) return "";    // EOI: the decoder stops
    const bool restart = marker >= 0xD0 && marker <= 0xD7;  // inside a scan: more entropy-coded data follows
    if (marker == 0xD8 || marker == 0x01 || restart) {      // markers without a length
      if (restart) at = skip_entropy_coded_data(at);
      continue;
    }
    const size_t length = byte(at) << 8 | byte(at + 1);
    const size_t end = at + std::max<size_t>(length, 2);
    if (marker == 0xC4) {
      // One or more tables: class/id byte, 16 counts, then that many symbols. Bytes past the end
      // of the file read as zeros, as in the decoder.
      size_t t = at + 2;
      while (t < end && t < bytes.size()) {
        unsigned codes = 0;
        for (size_t i = 1; i <= 16; ++i) codes += byte(t + i);
        if (codes > 256) {
          return "a Huffman table (DHT segment at byte " + std::to_string(at - 2) + ") has " + std::to_string(codes) +
                 " codes, more than 256";
        }
        t += 17 + codes;
      }
    }
    at = marker == 0xDA ? skip_entropy_coded_data(end) : end;
  }
  return "";
}

uint32_t read_le32(std::string_view bytes, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
  return v;
}

// stb_image also fills the missing rows of a truncated BMP with zeros. An uncompressed BMP
// (BI_RGB or BI_BITFIELDS) states where its pixels start, and the row size follows from width
// and depth, so the file must hold at least offset + rows * stride bytes.
bool bmp_is_complete(std::string_view bytes, int64_t width, int64_t height) {
  if (bytes.size() < 34) return false;
  const uint32_t data_offset = read_le32(bytes, 10);
  const uint32_t header_size = read_le32(bytes, 14);
  if (header_size < 40) return true;  // old OS/2 headers: nothing more to check cheaply
  const uint16_t bits = static_cast<uint16_t>(static_cast<uint8_t>(bytes[28]) | (static_cast<uint8_t>(bytes[29]) << 8));
  const uint32_t compression = read_le32(bytes, 30);
  if (compression != 0 && compression != 3) return true;  // RLE: size not known up front
  const int64_t stride = ((width * bits + 31) / 32) * 4;
  return static_cast<int64_t>(bytes.size()) >= int64_t(data_offset) + stride * height;
}

// The header of a binary PGM/PPM (P5/P6): four whitespace-separated fields (magic, width,
// height, maximum value; comments start with #), then one whitespace byte, then the pixels.
struct PnmHeader {
  bool present = false;
  int64_t max_value = 0;
  size_t end = 0;             // the byte after the last field
  size_t longest_number = 0;  // digits of the longest field
  size_t longest_at = 0;      // where it starts
};

PnmHeader read_pnm_header(std::string_view bytes) {
  PnmHeader h;
  if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != '5' && bytes[1] != '6')) return h;
  h.present = true;
  size_t at = 2;
  for (int field = 0; field < 3; ++field) {
    while (at < bytes.size() && (std::isspace(static_cast<unsigned char>(bytes[at])) || bytes[at] == '#')) {
      if (bytes[at] == '#') {
        while (at < bytes.size() && bytes[at] != '\n') ++at;
      } else {
        ++at;
      }
    }
    const size_t start = at;
    int64_t value = 0;
    for (; at < bytes.size() && std::isdigit(static_cast<unsigned char>(bytes[at])); ++at) {
      if (value < (int64_t(1) << 32)) value = value * 10 + (bytes[at] - '0');
    }
    if (at - start > h.longest_number) {
      h.longest_number = at - start;
      h.longest_at = start;
    }
    h.max_value = value;
  }
  h.end = at;
  return h;
}

// Debian's stb_image (2022-09) reads the header's numbers into an int without checking for
// overflow (undefined behaviour, found by the image fuzzer): a number of more than 9 digits is
// refused before stb sees it. Empty when the header is fine (or not a PGM/PPM).
std::string pnm_header_error(std::string_view bytes) {
  const PnmHeader h = read_pnm_header(bytes);
  if (!h.present || h.longest_number <= 9) return std::string();
  return "a header number of " + std::to_string(h.longest_number) + " digits at byte " + std::to_string(h.longest_at) +
         " (at most 9)";
}

// The same for a truncated binary PGM/PPM: 1 or 3 samples per pixel, of 1 byte, or 2 when the
// maximum value exceeds 255.
bool pnm_is_complete(std::string_view bytes, int64_t width, int64_t height) {
  const PnmHeader h = read_pnm_header(bytes);
  if (!h.present) return true;
  const int64_t samples = bytes[1] == '6' ? 3 : 1;
  const int64_t sample_bytes = h.max_value > 255 ? 2 : 1;
  return static_cast<int64_t>(bytes.size()) >=
         static_cast<int64_t>(h.end) + 1 + width * height * samples * sample_bytes;
}

// Debian's stb_image (2022-09) grows its buffer for a PNG's compressed data (the IDAT chunks)
// to each chunk's declared length before reading the chunk: a 1 KiB file declaring a 1.48 GB
// IDAT made it allocate 2 GiB (found by tests/fuzz/fuzz_image). So the chunks are walked
// first, as stb_image reads them (from the 8-byte signature, each a 4-byte big-endian length, a
// 4-byte type, the data and a 4-byte CRC, up to IEND), and a chunk whose data runs past the end
// of the file is refused. Empty when every chunk fits (or the bytes are not a PNG).
std::string png_chunks_error(std::string_view bytes) {
  if (!starts_with(bytes, "\x89PNG\r\n\x1a\n")) return std::string();
  const auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
    return v;
  };
  for (size_t at = 8; at + 8 <= bytes.size();) {
    const uint64_t length = be32(at);
    const std::string_view type = bytes.substr(at + 4, 4);
    const uint64_t follow = bytes.size() - (at + 8);
    if (length > follow) {
      std::string name;
      for (char c : type) name += std::isalpha(static_cast<unsigned char>(c)) ? std::string(1, c) : "?";
      return "chunk '" + name + "' at byte " + std::to_string(at) + " declares " + std::to_string(length) +
             " bytes of data, but only " + std::to_string(follow) + " bytes follow (truncated or corrupt file)";
    }
    if (type == "IEND") break;
    at += 12 + length;
  }
  return std::string();
}

// Luma of PIL's convert("L"): ITU-R 601-2 weights in 16-bit fixed point, rounded.
uint8_t luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
}

// stb's interleaved 1..4-channel pixels (gray, gray+alpha, RGB, RGBA) to `mode`, dropping
// alpha as PIL's convert() does (no compositing onto a background).
// Pixel loops: no data-dependent branches, so SanitizerCoverage's per-iteration callbacks add
// nothing to fuzzing but time (they made a 64-megapixel decode take seconds under libFuzzer).
#if defined(__clang__)
#define WINFER_PIXEL_LOOP __attribute__((no_sanitize("coverage")))
#else
#define WINFER_PIXEL_LOOP
#endif

WINFER_PIXEL_LOOP Image from_decoded(const uint8_t* data, int64_t width, int64_t height, int components,
                                     ColorMode mode) {
  const int channels = mode == ColorMode::kGray ? 1 : 3;
  Image image = Image::blank(width, height, channels);
  const int64_t count = width * height;
  uint8_t* out = image.pixels.data();
  const bool color_source = components >= 3;
  // One loop per case, so that the per-pixel body has no branch.
  if (channels == 1 && color_source) {
    for (int64_t i = 0; i < count; ++i)
      out[i] = luma(data[i * components], data[i * components + 1], data[i * components + 2]);
  } else if (channels == 1) {
    for (int64_t i = 0; i < count; ++i) out[i] = data[i * components];
  } else if (color_source) {
    for (int64_t i = 0; i < count; ++i) {
      const uint8_t* p = data + i * components;
      out[3 * i + 0] = p[0];
      out[3 * i + 1] = p[1];
      out[3 * i + 2] = p[2];
    }
  } else {
    for (int64_t i = 0; i < count; ++i) out[3 * i + 0] = out[3 * i + 1] = out[3 * i + 2] = data[i * components];
  }
  return image;
}

std::string dimensions(int64_t width, int64_t height) { return std::to_string(width) + "x" + std::to_string(height); }

// ---- resampling (PIL's algorithm for 8-bit images) ----------------------------------------

// PIL computes filter weights in double, then uses them as integers with 22 fractional bits
// (32 bits minus 8 for the pixel value and 2 of headroom) and rounds the sum to 8 bits.
constexpr int kPrecisionBits = 32 - 8 - 2;

// For each output pixel along one axis: the first input pixel it reads, how many, and their
// fixed-point weights (`taps` per output pixel, unused ones zero).
struct AxisWeights {
  std::vector<int64_t> first;
  std::vector<int64_t> count;
  std::vector<int32_t> weights;
  int64_t taps = 0;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// The bilinear filter has support 1; when shrinking it is stretched by the scale factor, so
// every input pixel contributes (antialiasing). The arithmetic follows PIL step by step
// (reciprocal multiply, +0.5 and truncation of the bounds) so that rounding agrees bit for bit.
AxisWeights bilinear_weights(int64_t in_size, int64_t out_size) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;
  const double inverse_filter_scale = 1.0 / filter_scale;
  AxisWeights axis;
  axis.taps = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  axis.first.resize(out_size);
  axis.count.resize(out_size);
  axis.weights.assign(static_cast<size_t>(out_size * axis.taps), 0);
  std::vector<double> w(static_cast<size_t>(axis.taps));
  for (int64_t o = 0; o < out_size; ++o) {
    const double center = (static_cast<double>(o) + 0.5) * scale;
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in_size);
    const int64_t n = std::min(hi - lo, axis.taps);
    double sum = 0;
    for (int64_t k = 0; k < n; ++k)
      sum += (w[k] = triangle((static_cast<double>(k + lo) - center + 0.5) * inverse_filter_scale));
    int32_t* fixed = axis.weights.data() + o * axis.taps;
    for (int64_t k = 0; k < n; ++k) {
      const double v = (sum != 0.0 ? w[k] / sum : w[k]) * (1 << kPrecisionBits);
      fixed[k] = static_cast<int32_t>(v < 0 ? v - 0.5 : v + 0.5);
    }
    axis.first[o] = lo;
    axis.count[o] = n;
  }
  return axis;
}

uint8_t clip_to_8bit(int64_t accumulated) {
  if (accumulated <= 0) return 0;
  if (accumulated >= (int64_t(256) << kPrecisionBits)) return 255;
  return static_cast<uint8_t>(accumulated >> kPrecisionBits);
}

// Horizontal pass: each output pixel is a weighted sum of a run of input pixels in its row.
WINFER_PIXEL_LOOP Image resample_horizontal(const Image& in, int64_t out_width) {
  const AxisWeights axis = bilinear_weights(in.width, out_width);
  const int c = in.channels;
  Image out = Image::blank(out_width, in.height, c);
  const int64_t half = int64_t(1) << (kPrecisionBits - 1);  // rounds the fixed-point sum
  for (int64_t y = 0; y < in.height; ++y) {
    const uint8_t* src = in.row(y);
    uint8_t* dst = out.row(y);
    for (int64_t x = 0; x < out_width; ++x) {
      const int32_t* w = axis.weights.data() + x * axis.taps;
      const uint8_t* run = src + axis.first[x] * c;
      for (int ch = 0; ch < c; ++ch) {
        int64_t sum = half;
        for (int64_t k = 0; k < axis.count[x]; ++k) sum += int64_t(run[k * c + ch]) * w[k];
        dst[x * c + ch] = clip_to_8bit(sum);
      }
    }
  }
  return out;
}

// Vertical pass: each output row is a weighted sum of whole input rows, accumulated row by row
// so that every read is contiguous (a 64-megapixel photo must not take seconds). Integer sums do
// not depend on their order, so the result is the same bit for bit as PIL's.
WINFER_PIXEL_LOOP Image resample_vertical(const Image& in, int64_t out_height) {
  const AxisWeights axis = bilinear_weights(in.height, out_height);
  Image out = Image::blank(in.width, out_height, in.channels);
  const int64_t row_values = in.width * in.channels;
  const int64_t half = int64_t(1) << (kPrecisionBits - 1);
  std::vector<int64_t> sums(static_cast<size_t>(row_values));
  for (int64_t y = 0; y < out_height; ++y) {
    std::fill(sums.begin(), sums.end(), half);
    const int32_t* w = axis.weights.data() + y * axis.taps;
    for (int64_t k = 0; k < axis.count[y]; ++k) {
      const uint8_t* src = in.row(axis.first[y] + k);
      const int64_t weight = w[k];
      for (int64_t i = 0; i < row_values; ++i) sums[i] += int64_t(src[i]) * weight;
    }
    uint8_t* dst = out.row(y);
    for (int64_t i = 0; i < row_values; ++i) dst[i] = clip_to_8bit(sums[i]);
  }
  return out;
}

// Python's round(diff / 2) for an integer diff: halves go to the even neighbour.
int64_t half_rounded_to_even(int64_t diff) {
  const int64_t half = diff / 2;
  if (diff % 2 == 0) return half;
  return half % 2 == 0 ? half : half + 1;
}

// Where the crop window starts along one axis, in image coordinates (negative: padding).
int64_t crop_offset(int64_t size, int64_t crop) {
  if (crop > size) return -((crop - size) / 2);  // torchvision pads (crop - size) // 2 in front
  return half_rounded_to_even(size - crop);
}

}  // namespace

// ---- public functions ------------------------------------------------------------------------

Image Image::blank(int64_t width, int64_t height, int channels) {
  Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.assign(static_cast<size_t>(width * height * channels), 0);
  return image;
}

Preprocess model_preprocess(const Model& model) {
  Preprocess p = model.preprocess();
  if (!p.present && model.input_shape().rank() == 4 && model.input_shape()[1] == 1) p.channel_order = "GRAY";
  return p;
}

ColorMode color_mode(const Preprocess& preprocess) {
  return preprocess.channel_order == "GRAY" ? ColorMode::kGray : ColorMode::kRgb;
}

Result<Image> decode_image(const void* bytes, size_t size, const std::string& name, ColorMode mode) {
  if (size == 0) return parse_error(name + ": the file is empty");
  if (size > static_cast<size_t>(INT_MAX)) {
    return invalid_argument(name + ": the file is larger than 2 GiB, too large for an image");
  }
  const auto* data = static_cast<const stbi_uc*>(bytes);
  const int length = static_cast<int>(size);
  int width = 0, height = 0, components = 0;
  // Before stbi_info: reading a JPEG's header already builds the Huffman tables defined before the frame.
  const std::string_view view(static_cast<const char*>(bytes), size);
  if (jpeg_after_soi(view) > 0) {
    const std::string reason = jpeg_huffman_tables_error(view);
    if (!reason.empty()) return parse_error(name + ": corrupt JPEG: " + reason);
  }
  if (const std::string reason = pnm_header_error(view); !reason.empty()) {
    return parse_error(name + ": corrupt PGM/PPM: " + reason);
  }
  if (const std::string reason = png_chunks_error(view); !reason.empty()) {
    return parse_error(name + ": corrupt PNG: " + reason);
  }
  if (!stbi_info_from_memory(data, length, &width, &height, &components)) {
    return parse_error(name + ": not an image winfer can read (JPEG, PNG, BMP, GIF, PGM/PPM, TGA, PSD, HDR, PIC): " +
                       stbi_failure_reason());
  }
  if (width <= 0 || height <= 0) {
    return invalid_argument(name + ": the image is " + dimensions(width, height) +
                            " pixels: it has no pixels to classify");
  }
  if (width > kMaxImageSide || height > kMaxImageSide || int64_t(width) * height > kMaxImagePixels) {
    return invalid_argument(name + ": the image is " + dimensions(width, height) +
                            " pixels, more than winfer's limit of " + std::to_string(kMaxImagePixels) + " pixels (" +
                            std::to_string(kMaxImageSide) + " per side); refused before decoding");
  }
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load_from_memory(data, length, &width, &height, &components, 0),
                                                   stbi_image_free);
  if (!pixels) return parse_error(name + ": cannot decode the image (corrupt or truncated?): " + stbi_failure_reason());
  if (jpeg_after_soi(view) > 0 && !jpeg_has_end_marker(view)) {
    return parse_error(name + ": the JPEG data ends before its end-of-image marker (truncated file)");
  }
  if (starts_with(view, "BM") && !bmp_is_complete(view, width, height)) {
    return parse_error(name + ": the BMP file is shorter than its pixel data (truncated file)");
  }
  if (!pnm_is_complete(view, width, height)) {
    return parse_error(name + ": the PGM/PPM file is shorter than its pixel data (truncated file)");
  }
  return from_decoded(pixels.get(), width, height, components, mode);
}

Result<Image> read_image(const std::string& path, ColorMode mode) {
  // Mapped, not copied: the decoder reads the file once. Missing files, directories, FIFOs,
  // devices and files of 2 GiB or more (stb_image takes an int length) are refused here.
  static constexpr detail::InputKind kImageFile{"image", uint64_t(INT_MAX)};
  auto file = detail::MappedFile::map(path, kImageFile);
  if (!file.ok()) return file.status();
  return decode_image(file.value().data(), file.value().size(), path, mode);
}

Image convert_color(const Image& image, ColorMode mode) {
  const int channels = mode == ColorMode::kGray ? 1 : 3;
  if (image.channels == channels) return image;
  return from_decoded(image.pixels.data(), image.width, image.height, image.channels, mode);
}

void shorter_side_size(int64_t width, int64_t height, int64_t size, int64_t* new_width, int64_t* new_height) {
  const bool portrait = width <= height;
  const int64_t shorter = portrait ? width : height, longer = portrait ? height : width;
  // Python: int(size * long / short), a correctly rounded double division, then truncated.
  const auto new_long = static_cast<int64_t>(static_cast<double>(size * longer) / static_cast<double>(shorter));
  *new_width = portrait ? size : new_long;
  *new_height = portrait ? new_long : size;
}

Image resize_bilinear(const Image& image, int64_t width, int64_t height) {
  // As PIL: horizontal pass first, each pass only when that size changes.
  Image out = image.width != width ? resample_horizontal(image, width) : image;
  if (out.height != height) out = resample_vertical(out, height);
  return out;
}

Image center_crop(const Image& image, int64_t width, int64_t height) {
  const int64_t left = crop_offset(image.width, width), top = crop_offset(image.height, height);
  const int c = image.channels;
  Image out = Image::blank(width, height, c);  // zeros where the window leaves the image
  for (int64_t y = 0; y < height; ++y) {
    const int64_t sy = top + y;
    if (sy < 0 || sy >= image.height) continue;
    const int64_t x0 = std::max<int64_t>(0, -left), x1 = std::min<int64_t>(width, image.width - left);
    if (x1 > x0) std::memcpy(out.row(y) + x0 * c, image.row(sy) + (left + x0) * c, static_cast<size_t>((x1 - x0) * c));
  }
  return out;
}

Status check_preprocess(const Preprocess& p, const Shape& input) {
  if (input.rank() != 4) {
    return invalid_argument("the model's input " + input.to_string() + " is not an image [N, C, H, W]");
  }
  const int64_t c = input[1];
  const int64_t expected = p.channel_order == "GRAY" ? 1 : 3;
  if (c != expected) {
    return invalid_argument("preprocess.channel_order " + p.channel_order + " gives " + std::to_string(expected) +
                            " channel(s), but the model's input " + input.to_string() + " has " + std::to_string(c));
  }
  for (const auto* values : {&p.mean, &p.std}) {
    if (!values->empty() && static_cast<int64_t>(values->size()) != c) {
      return invalid_argument(std::string("preprocess.") + (values == &p.mean ? "mean" : "std") + " has " +
                              std::to_string(values->size()) + " values for " + std::to_string(c) + " channel(s)");
    }
  }
  if (p.crop > 0 && (p.crop != input[2] || p.crop != input[3])) {
    return invalid_argument("preprocess.crop " + std::to_string(p.crop) + " does not give the model's input size " +
                            std::to_string(input[3]) + "x" + std::to_string(input[2]));
  }
  return Status::Ok();
}

Status image_to_input(const Image& image, const Preprocess& p, int64_t channels, int64_t height, int64_t width,
                      float* chw) {
  Image x = convert_color(image, color_mode(p));
  if (p.resize > 0) {
    int64_t w = 0, h = 0;
    shorter_side_size(x.width, x.height, p.resize, &w, &h);
    if (w * h > kMaxImagePixels) {
      return invalid_argument("resizing " + dimensions(x.width, x.height) + " so that the shorter side is " +
                              std::to_string(p.resize) + " gives " + dimensions(w, h) +
                              ", more pixels than winfer's limit (aspect ratio too extreme)");
    }
    x = resize_bilinear(x, w, h);
  }
  if (p.crop > 0) x = center_crop(x, p.crop, p.crop);
  if (x.width != width || x.height != height || x.channels != channels) {
    return shape_mismatch("after preprocessing (resize " + std::to_string(p.resize) + ", crop " +
                          std::to_string(p.crop) + ") the image is " + dimensions(x.width, x.height) + " with " +
                          std::to_string(x.channels) + " channel(s); the model expects " + dimensions(width, height) +
                          " with " + std::to_string(channels));
  }
  // ToTensor then Normalize, in float32 like torchvision: p / 255, then (x - mean) / std.
  const bool bgr = p.channel_order == "BGR";
  const int64_t plane = width * height;
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t source = bgr ? channels - 1 - c : c;
    const float mean = p.mean.empty() ? 0.0f : p.mean[c];
    const float std = p.std.empty() ? 1.0f : p.std[c];
    float* out = chw + c * plane;
    const uint8_t* in = x.pixels.data() + source;
    for (int64_t i = 0; i < plane; ++i) out[i] = (static_cast<float>(in[i * channels]) / 255.0f - mean) / std;
  }
  return Status::Ok();
}

}  // namespace winfer
