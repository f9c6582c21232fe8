// Images: decoding (stb_image) and the preprocessing a model's `preprocess:` block declares,
// computed the way torchvision computes it on PIL images, so that a model trained with
//   transforms.Compose([Resize(r), CenterCrop(c), ToTensor(), Normalize(mean, std)])
// on Image.open(f).convert("RGB" or "L") sees the same numbers in winfer.
//
//   auto image = winfer::read_image("cat.jpg", winfer::ColorMode::kRgb);
//   std::vector<float> chw(3 * 224 * 224);
//   winfer::Status s = winfer::image_to_input(image.value(), model->preprocess(), 3, 224, 224, chw.data());
//
// Differences from PIL that remain: JPEG decoding (stb_image's IDCT and chroma upsampling are
// not libjpeg's, typically +-1..3 levels per pixel) and 16-bit PNGs (stb_image keeps the high
// byte, PIL clips). Lossless 8-bit images (PNG, BMP, PGM/PPM, GIF) give identical pixels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "winfer/model.h"
#include "winfer/status.h"

namespace winfer {

// The largest image winfer decodes. The dimensions are read from the file's header before
// anything is decoded, so a small file that claims to be 100000x100000 is refused instead of
// making the decoder allocate tens of gigabytes. 2^26 pixels is 8192x8192, more than a
// 48-megapixel photo (8000x6000); decoded as RGB it needs 192 MiB.
constexpr int64_t kMaxImagePixels = int64_t(1) << 26;
constexpr int64_t kMaxImageSide = 32768;

enum class ColorMode {
  kGray,  // 1 channel: PIL's convert("L") (ITU-R 601-2 luma), alpha dropped
  kRgb,   // 3 channels: PIL's convert("RGB"), gray replicated, alpha dropped (not composited)
};

// An 8-bit image, rows top to bottom, channels interleaved (HWC).
struct Image {
  int64_t width = 0, height = 0;
  int channels = 0;  // 1 or 3
  std::vector<uint8_t> pixels;

  static Image blank(int64_t width, int64_t height, int channels);  // zero-filled
  uint8_t* row(int64_t y) { return pixels.data() + y * width * channels; }
  const uint8_t* row(int64_t y) const { return pixels.data() + y * width * channels; }
};

// The preprocessing of a model's images: its `preprocess:` block, or for a model without one
// none at all (no resize or crop, mean 0, std 1) in GRAY for a 1-channel input, else RGB.
Preprocess model_preprocess(const Model& model);

// The preprocessing of torchvision's ImageNet classifiers (the zoo's `preprocess:` block):
// resize 256, center crop 224, mean [0.485, 0.456, 0.406], std [0.229, 0.224, 0.225], RGB.
// `winfer classify/eval --preprocess imagenet`.
Preprocess imagenet_preprocess();

// Reads a preprocessing file (`winfer classify/eval --preprocess FILE.yaml`): a YAML mapping
// with the keys of a model's `preprocess:` block (resize, crop, mean, std, channel_order) at its
// top level, e.g. "resize: 256\ncrop: 224\nmean: [0.485, 0.456, 0.406]\n...". The same keys
// under a `preprocess:` key are refused with a message saying to unindent them. Errors name the
// file and the line. Whether it fits a model is check_preprocess's question.
Result<Preprocess> read_preprocess_file(const std::string& path);

// Reads a labels file (`winfer classify/eval --labels FILE`; the same rules as a model's
// `labels:` file, Model::labels()): one class name per line (line i names class i), a trailing
// '\r' dropped, at most 16 MiB; a line holding a control byte (other than a tab) is an error
// naming the file and the line: a labels file is text.
Result<std::vector<std::string>> read_labels_file(const std::string& path);

// The color mode of a model's preprocess: GRAY -> kGray, RGB/BGR -> kRgb.
ColorMode color_mode(const Preprocess& preprocess);

// Decodes an image held in memory (JPEG, PNG, BMP, GIF (first frame), PGM/PPM, TGA, PSD, HDR,
// PIC) into `mode`. `name` (usually the file path) starts every error message. Refuses empty
// data, non-images, images over the size limits, and truncated files.
Result<Image> decode_image(const void* data, size_t size, const std::string& name, ColorMode mode);
// Reads and decodes a file; errors name the file ("photo.jpg: ...").
Result<Image> read_image(const std::string& path, ColorMode mode);

// Size after torchvision's Resize(size) with an int: the shorter side becomes `size`, the
// longer one int(size * long / short) (truncated, as Python's int()).
void shorter_side_size(int64_t width, int64_t height, int64_t size, int64_t* new_width, int64_t* new_height);

// Resamples to width x height with PIL's bilinear filter (Image.resize(..., BILINEAR), which is
// what torchvision's Resize does on PIL images): a triangle filter widened by the scale factor
// when shrinking (antialiasing), applied horizontally then vertically in 8-bit fixed point,
// rounding to 8 bits after each pass, exactly as PIL does. Same size: a copy.
Image resize_bilinear(const Image& image, int64_t width, int64_t height);

// torchvision's CenterCrop: the centre width x height window, its offset rounded half to even
// (Python's round); a window larger than the image is padded with zeros.
Image center_crop(const Image& image, int64_t width, int64_t height);

// Checks that a preprocess block fits a model input [N, C, H, W]: the channel order matches C
// (GRAY: 1, RGB/BGR: 3), mean and std have C values (or none), the crop (if any) is H x W.
Status check_preprocess(const Preprocess& preprocess, const Shape& input_shape);

// Applies resize, center crop, scaling to [0, 1], channel order and mean/std to a decoded image
// (any color mode; it is converted to the preprocess's first) and writes channels x height x
// width floats (CHW) to `chw`. Fails when the result is not height x width, naming both sizes.
Status image_to_input(const Image& image, const Preprocess& preprocess, int64_t channels, int64_t height, int64_t width,
                      float* chw);

// Converts between gray and RGB as PIL's convert() does.
Image convert_color(const Image& image, ColorMode mode);

}  // namespace winfer
