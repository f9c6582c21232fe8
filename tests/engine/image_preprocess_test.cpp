// winfer's image preprocessing against torchvision's on PIL images (the fixtures and their
// references come from tests/fixtures/images/make_fixtures.py), plus the pieces one by one.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model_test_util.h"
#include "winfer/image.h"

// Only to measure how far stb_image_resize's filters are from PIL's (the last test case): this
// is the one translation unit that compiles its implementation.
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <stb/stb_image_resize.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

using namespace winfer_test;

namespace {

// The configurations of make_fixtures.py (keep the two lists equal).
struct Config {
  const char* name;
  winfer::Preprocess preprocess;
  int64_t channels;
};

winfer::Preprocess make_preprocess(int64_t resize, int64_t crop, const char* order, std::vector<float> mean,
                                   std::vector<float> std) {
  winfer::Preprocess p;
  p.resize = resize;
  p.crop = crop;
  p.channel_order = order;
  p.mean = std::move(mean);
  p.std = std::move(std);
  p.present = true;
  return p;
}

const std::vector<Config>& configs() {
  static const std::vector<Config> all = {
      {"rgb", make_preprocess(24, 21, "RGB", {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}), 3},
      {"gray", make_preprocess(28, 28, "GRAY", {0.2860f}, {0.3530f}), 1},
      {"bgr_pad", make_preprocess(20, 24, "BGR", {0.5f, 0.4f, 0.3f}, {0.2f, 0.25f, 0.3f}), 3},
  };
  return all;
}

const std::vector<std::string> kLosslessImages = {"rgb_97x61.png",  "rgb_240x160.png", "gray_40x50.png",
                                                  "rgba_33x45.png", "anim_29x23.gif",  "rgb_20x14.bmp",
                                                  "gray_17x19.pgm", "rgb_23x21.ppm",   "one_pixel.png"};

std::string fixture(const std::string& name) { return repo_path("tests/fixtures/images/" + name); }

std::string stem(const std::string& name) { return name.substr(0, name.rfind('.')); }

// winfer's preprocessing of a fixture image for a configuration, as a [C, crop, crop] tensor.
winfer::Tensor preprocess(const std::string& name, const Config& config) {
  auto image = winfer::read_image(fixture(name), winfer::color_mode(config.preprocess));
  REQUIRE_MESSAGE(image.ok(), image.status().message());
  const int64_t crop = config.preprocess.crop;
  winfer::Tensor out = winfer::Tensor::allocate(winfer::Shape({config.channels, crop, crop}));
  winfer::Status s = winfer::image_to_input(image.value(), config.preprocess, config.channels, crop, crop, out.data());
  REQUIRE_MESSAGE(s.ok(), s.message());
  return out;
}

winfer::Tensor reference(const std::string& name, const Config& config) {
  auto ref = winfer::read_npy(fixture(stem(name) + "." + config.name + ".npy"));
  REQUIRE_MESSAGE(ref.ok(), ref.status().message());
  return std::move(ref).value();
}

// Max |a - b| over two tensors with the same element count (npy is [C,H,W], ours too).
float max_diff(const winfer::Tensor& a, const winfer::Tensor& b) {
  REQUIRE(a.numel() == b.numel());
  float worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::fabs(a.data()[i] - b.data()[i]));
  return worst;
}

winfer::Image gradient(int64_t width, int64_t height, int channels) {
  winfer::Image image = winfer::Image::blank(width, height, channels);
  for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>((i * 37 + i / 7) % 256);
  return image;
}

}  // namespace

TEST_CASE("image preprocessing: lossless images equal torchvision's Resize/CenterCrop/ToTensor/Normalize") {
  float worst = 0;
  for (const std::string& name : kLosslessImages) {
    for (const Config& config : configs()) {
      INFO(name << " config " << std::string(config.name));
      const float diff = max_diff(preprocess(name, config), reference(name, config));
      CHECK(diff <= 1e-3f);
      worst = std::max(worst, diff);
    }
  }
  MESSAGE("max |winfer - torchvision| after normalization over " << kLosslessImages.size() * configs().size()
                                                                 << " image/config pairs: " << worst);
}

TEST_CASE("image preprocessing: JPEG differs from PIL only by the decoder (reported)") {
  // stb_image and libjpeg use different IDCTs and chroma upsampling, so the decoded pixels of
  // a JPEG differ by a few levels before any preprocessing; the bound is loose on purpose.
  for (const Config& config : configs()) {
    INFO("config " << std::string(config.name));
    const float diff = max_diff(preprocess("photo_64x48.jpg", config), reference("photo_64x48.jpg", config));
    MESSAGE("photo_64x48.jpg, config " << std::string(config.name) << ": max |winfer - torchvision| " << diff);
    CHECK(diff <= 0.25f);
  }
}

TEST_CASE("image: decoding gives PIL's convert() results") {
  auto rgba_as_rgb = winfer::read_image(fixture("rgba_33x45.png"), winfer::ColorMode::kRgb);
  REQUIRE(rgba_as_rgb.ok());
  CHECK(rgba_as_rgb.value().channels == 3);
  CHECK(rgba_as_rgb.value().width == 33);
  CHECK(rgba_as_rgb.value().height == 45);
  auto gray_as_rgb = winfer::read_image(fixture("gray_40x50.png"), winfer::ColorMode::kRgb);
  REQUIRE(gray_as_rgb.ok());
  const winfer::Image& g = gray_as_rgb.value();
  CHECK(g.pixels[0] == g.pixels[1]);  // gray replicated into R, G and B
  CHECK(g.pixels[1] == g.pixels[2]);
  auto pixel = winfer::read_image(fixture("one_pixel.png"), winfer::ColorMode::kGray);
  REQUIRE(pixel.ok());
  // (200 * 19595 + 100 * 38470 + 50 * 7471 + 32768) >> 16 = 124: ITU-R 601-2 luma, as PIL
  CHECK(int(pixel.value().pixels[0]) == 124);
}

TEST_CASE("image: shorter side resize sizes follow torchvision") {
  int64_t w = 0, h = 0;
  winfer::shorter_side_size(97, 61, 24, &w, &h);
  CHECK(w == 38);  // int(24 * 97 / 61) = int(38.16)
  CHECK(h == 24);
  winfer::shorter_side_size(61, 97, 24, &w, &h);
  CHECK(w == 24);
  CHECK(h == 38);
  winfer::shorter_side_size(640, 480, 256, &w, &h);
  CHECK(w == 341);
  CHECK(h == 256);
  winfer::shorter_side_size(1, 1, 28, &w, &h);
  CHECK(w == 28);
  CHECK(h == 28);
}

TEST_CASE("image: resize to the same size is the identity, and a constant image stays constant") {
  const winfer::Image image = gradient(13, 9, 3);
  CHECK(winfer::resize_bilinear(image, 13, 9).pixels == image.pixels);
  winfer::Image flat = winfer::Image::blank(50, 30, 1);
  std::fill(flat.pixels.begin(), flat.pixels.end(), 77);
  for (auto [w, h] : {std::pair<int64_t, int64_t>{7, 5}, {50, 1}, {123, 61}, {1, 1}}) {
    const winfer::Image r = winfer::resize_bilinear(flat, w, h);
    CHECK(r.width == w);
    CHECK(r.height == h);
    CHECK(std::all_of(r.pixels.begin(), r.pixels.end(), [](uint8_t v) { return v == 77; }));
  }
}

TEST_CASE("image: center crop rounds the offset half to even and pads with zeros") {
  winfer::Image image = winfer::Image::blank(7, 4, 1);
  for (int64_t i = 0; i < 28; ++i) image.pixels[i] = static_cast<uint8_t>(i + 1);
  // width 7 -> 4: offset round(1.5) = 2; height 4 -> 1: offset round(1.5) = 2
  winfer::Image c = winfer::center_crop(image, 4, 1);
  CHECK(std::vector<uint8_t>(c.pixels) == std::vector<uint8_t>{17, 18, 19, 20});
  // width 7 -> 2: offset round(2.5) = 2 (not 3)
  c = winfer::center_crop(image, 2, 4);
  CHECK(c.pixels[0] == 3);
  // larger than the image: (9 - 7) // 2 = 1 column of zeros in front, 1 behind
  c = winfer::center_crop(image, 9, 4);
  CHECK(c.pixels[0] == 0);
  CHECK(c.pixels[1] == 1);
  CHECK(c.pixels[8] == 0);
}

TEST_CASE("image: check_preprocess names what does not fit the model input") {
  winfer::Preprocess p = make_preprocess(32, 28, "GRAY", {0.5f}, {0.5f});
  CHECK(winfer::check_preprocess(p, winfer::Shape({1, 1, 28, 28})).ok());
  winfer::Status s = winfer::check_preprocess(p, winfer::Shape({1, 3, 28, 28}));
  CHECK(contains(s.message(), "GRAY"));
  s = winfer::check_preprocess(p, winfer::Shape({1, 1, 32, 32}));
  CHECK(contains(s.message(), "crop 28"));
  p.mean = {0.1f, 0.2f};
  s = winfer::check_preprocess(p, winfer::Shape({1, 1, 28, 28}));
  CHECK(contains(s.message(), "mean has 2 values"));
  winfer::Preprocess no_crop = make_preprocess(28, 0, "RGB", {}, {});
  winfer::Image wide = gradient(60, 30, 3);
  std::vector<float> out(3 * 28 * 28);
  s = winfer::image_to_input(wide, no_crop, 3, 28, 28, out.data());
  CHECK(contains(s.message(), "is 56x28"));
  CHECK(contains(s.message(), "expects 28x28"));
}

TEST_CASE("image preprocessing: stb_image_resize's filters do not match PIL (why winfer resamples itself)") {
  // Same crop and normalization, but the resize done by stb_image_resize with its triangle
  // (bilinear) and default filters. The differences are reported, not asserted: they are why
  // image.cpp implements PIL's resampling instead.
  const Config& config = configs()[0];
  for (stbir_filter filter : {STBIR_FILTER_TRIANGLE, STBIR_FILTER_DEFAULT}) {
    float worst = 0;
    int64_t differing = 0, total = 0;
    for (const std::string& name : {std::string("rgb_97x61.png"), std::string("rgb_240x160.png")}) {
      auto image = winfer::read_image(fixture(name), winfer::ColorMode::kRgb);
      REQUIRE(image.ok());
      const winfer::Image& in = image.value();
      int64_t w = 0, h = 0;
      winfer::shorter_side_size(in.width, in.height, config.preprocess.resize, &w, &h);
      winfer::Image resized = winfer::Image::blank(w, h, 3);
      REQUIRE(stbir_resize_uint8_generic(in.pixels.data(), int(in.width), int(in.height), 0, resized.pixels.data(),
                                         int(w), int(h), 0, 3, STBIR_ALPHA_CHANNEL_NONE, 0, STBIR_EDGE_CLAMP, filter,
                                         STBIR_COLORSPACE_LINEAR, nullptr) == 1);
      winfer::Preprocess no_resize = config.preprocess;
      no_resize.resize = 0;
      winfer::Tensor out = winfer::Tensor::allocate(winfer::Shape({3, 21, 21}));
      REQUIRE(winfer::image_to_input(resized, no_resize, 3, 21, 21, out.data()).ok());
      const winfer::Tensor ref = reference(name, config);
      worst = std::max(worst, max_diff(out, ref));
      for (int64_t i = 0; i < out.numel(); ++i) differing += std::fabs(out.data()[i] - ref.data()[i]) > 1e-3f;
      total += out.numel();
    }
    MESSAGE("stb_image_resize " << std::string(filter == STBIR_FILTER_TRIANGLE ? "triangle" : "default (Mitchell)")
                                << " filter: max |diff| vs torchvision " << worst << ", " << differing << " of "
                                << total << " values differ by more than 1e-3");
    CHECK(worst > 1e-3f);  // if this ever fails, stb would do and image.cpp could use it
  }
}
