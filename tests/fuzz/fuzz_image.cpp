// Fuzz target: image decoding (stb_image behind winfer's own header checks) and the
// torchvision-style preprocessing that follows it in `winfer classify`: RGB and gray, resize of
// the shorter side, center crop, mean/std. The input is the file's bytes, unchanged.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "winfer/image.h"

namespace {

constexpr int64_t kMaxPreprocessedPixels = int64_t(1) << 24;

void preprocess(const winfer::Image& image, const winfer::Preprocess& p, int64_t channels, int64_t side) {
  std::vector<float> chw(static_cast<size_t>(channels * side * side));
  winfer::Status s = winfer::image_to_input(image, p, channels, side, side, chw.data());
  if (!s.ok() && s.message().empty()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto image = winfer::decode_image(data, size, "fuzz-input", winfer::ColorMode::kRgb);
  if (!image.ok()) {
    if (image.status().message().empty()) std::abort();
    return 0;
  }
  const winfer::Image& rgb = image.value();
  if (rgb.channels != 3 || rgb.width < 1 || rgb.height < 1 ||
      rgb.pixels.size() != static_cast<size_t>(rgb.width * rgb.height * 3)) {
    std::abort();
  }
  // A 16 KB file can decode to 64 megapixels (a 1-bit PNG compresses 1000:1). Preprocessing is
  // linear in the pixels and its code is the same at every size; a 64-megapixel image takes 4 s
  // under ASan, too close to libFuzzer's 10 s timeout, so images over 16 megapixels stop after
  // decoding, which is what they exercise.
  if (rgb.width * rgb.height > kMaxPreprocessedPixels) return 0;
  // An ImageNet-style block (resize 20, crop 16, normalized) and a Fashion-MNIST-style one
  // (gray, no resize: only a 28x28 image fits, anything else must be refused with a message).
  winfer::Preprocess imagenet;
  imagenet.resize = 20;
  imagenet.crop = 16;
  imagenet.mean = {0.485f, 0.456f, 0.406f};
  imagenet.std = {0.229f, 0.224f, 0.225f};
  preprocess(rgb, imagenet, 3, 16);
  winfer::Preprocess gray;
  gray.channel_order = "GRAY";
  preprocess(rgb, gray, 1, 28);
  gray.resize = 9;
  gray.crop = 12;  // larger than the resized image on one side: zero padding
  preprocess(rgb, gray, 1, 12);
  return 0;
}
