// Bad image and dataset files: every one gives an error that names the file, nothing crashes,
// and headers that claim huge sizes are refused before anything is allocated.
#include <zlib.h>

#include <random>
#include <string>
#include <tuple>

#include "engine/model_test_util.h"
#include "winfer/idx_dataset.h"
#include "winfer/image.h"

using namespace winfer_test;

namespace {

std::string fixture(const std::string& name) { return repo_path("tests/fixtures/images/" + name); }

// Decoding `bytes` written to `name` in `dir` must fail with a message naming the file and
// containing `fragment`.
void expect_image_error(const TempDir& dir, const std::string& name, const std::string& bytes,
                        const std::string& fragment) {
  const std::string path = dir.file(name);
  write_bytes(path, bytes);
  auto image = winfer::read_image(path, winfer::ColorMode::kRgb);
  INFO(name);
  REQUIRE_FALSE(image.ok());
  INFO("message: " << image.status().message());
  CHECK(contains(image.status().message(), path));
  CHECK(contains(image.status().message(), fragment));
}

std::string big_endian32(uint32_t v) {
  return {char(v >> 24), char((v >> 16) & 0xFF), char((v >> 8) & 0xFF), char(v & 0xFF)};
}

// A PNG signature and IHDR chunk claiming width x height RGB pixels, and nothing else.
std::string png_header(uint32_t width, uint32_t height) {
  std::string ihdr = "IHDR" + big_endian32(width) + big_endian32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  const uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(ihdr.data()), uInt(ihdr.size())));
  return std::string("\x89PNG\r\n\x1a\n", 8) + big_endian32(13) + ihdr + big_endian32(crc);
}

std::string idx_bytes(const std::vector<uint32_t>& dims, size_t data_bytes, uint8_t type = 0x08) {
  std::string out{char(0), char(0), char(type), char(dims.size())};
  for (uint32_t d : dims) out += big_endian32(d);
  for (size_t i = 0; i < data_bytes; ++i) out += char(i % 10);
  return out;
}

void write_gzip(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

}  // namespace

TEST_CASE("image errors: empty, text, missing, directory") {
  TempDir dir;
  expect_image_error(dir, "empty.png", "", "empty");
  expect_image_error(dir, "notes.jpg", "just some text, not a picture\n", "not an image");
  auto missing = winfer::read_image(dir.file("missing.png"), winfer::ColorMode::kRgb);
  REQUIRE_FALSE(missing.ok());
  CHECK(contains(missing.status().message(), "missing.png"));
  CHECK(contains(missing.status().message(), "image '" + dir.file("missing.png") + "' does not exist"));
  auto folder = winfer::read_image(dir.path(), winfer::ColorMode::kRgb);
  REQUIRE_FALSE(folder.ok());
  CHECK(contains(folder.status().message(), "directory"));
}

TEST_CASE("image errors: truncated files of every format") {
  TempDir dir;
  for (const std::string name :
       {"rgb_97x61.png", "photo_64x48.jpg", "rgb_20x14.bmp", "anim_29x23.gif", "gray_17x19.pgm", "rgb_23x21.ppm"}) {
    const std::string whole = read_bytes(fixture(name));
    for (double fraction : {0.1, 0.5, 0.9}) {
      const std::string part = whole.substr(0, static_cast<size_t>(double(whole.size()) * fraction));
      const std::string path = dir.file("cut_" + name);
      write_bytes(path, part);
      auto image = winfer::read_image(path, winfer::ColorMode::kRgb);
      INFO(name << " cut to " << part.size() << " of " << whole.size() << " bytes");
      if (image.ok()) {
        // GIF is the one format whose decoder may stop cleanly at a frame boundary; nothing
        // else may pass as complete.
        CHECK(std::string(name) == "anim_29x23.gif");
        continue;
      }
      INFO("message: " << image.status().message());
      CHECK(contains(image.status().message(), path));
    }
  }
  const std::string jpeg = read_bytes(fixture("photo_64x48.jpg"));
  expect_image_error(dir, "cut.jpg", jpeg.substr(0, jpeg.size() * 3 / 4), "truncated");
  const std::string bmp = read_bytes(fixture("rgb_20x14.bmp"));
  expect_image_error(dir, "cut.bmp", bmp.substr(0, bmp.size() - 100), "truncated");
  const std::string ppm = read_bytes(fixture("rgb_23x21.ppm"));
  expect_image_error(dir, "cut.ppm", ppm.substr(0, ppm.size() - 1), "truncated");
  const std::string png = read_bytes(fixture("rgb_97x61.png"));
  expect_image_error(dir, "cut.png", png.substr(0, png.size() / 2), "truncated");
}

TEST_CASE("image errors: a header claiming 10000x10000 pixels is refused before decoding") {
  TempDir dir;
  expect_image_error(dir, "huge.png", png_header(10000, 10000), "limit");
  expect_image_error(dir, "huge.pgm", "P5\n10000 10000\n255\n", "10000x10000");
  expect_image_error(dir, "wide.pgm", "P5\n40000 1\n255\n", "limit");
  // Under the limit per side but over it in pixels.
  expect_image_error(dir, "long.png", png_header(20000, 5000), "refused before decoding");
}

TEST_CASE("image errors: an image of 0 pixels says so, not that it is over the limit") {
  TempDir dir;
  for (const auto& [name, header, size] :
       {std::make_tuple("empty.pgm", "P5\n0 0\n255\n", "0x0"), std::make_tuple("flat.ppm", "P6\n0 7\n255\n", "0x7")}) {
    const std::string path = dir.file(name);
    write_bytes(path, header);
    auto image = winfer::read_image(path, winfer::ColorMode::kRgb);
    REQUIRE_FALSE(image.ok());
    const std::string& message = image.status().message();
    INFO("message: " << message);
    CHECK(contains(message, path + ": the image is " + size + " pixels: it has no pixels to classify"));
    CHECK_FALSE(contains(message, "limit"));  // once: "0x0 pixels, more than winfer's limit"
  }
}

TEST_CASE("image: a 1x1 image is preprocessed like any other") {
  auto image = winfer::read_image(fixture("one_pixel.png"), winfer::ColorMode::kRgb);
  REQUIRE(image.ok());
  winfer::Preprocess p;
  p.resize = 28;
  p.crop = 28;
  std::vector<float> out(3 * 28 * 28);
  REQUIRE(winfer::image_to_input(image.value(), p, 3, 28, 28, out.data()).ok());
  CHECK(out[0] == doctest::Approx(200.0 / 255.0));
  CHECK(out[28 * 28 - 1] == doctest::Approx(200.0 / 255.0));
  CHECK(out[2 * 28 * 28] == doctest::Approx(50.0 / 255.0));
}

TEST_CASE("image preprocessing: an extreme aspect ratio is refused instead of allocating the resize") {
  winfer::Image strip = winfer::Image::blank(32768, 1, 3);
  winfer::Preprocess p;
  p.resize = 4096;  // would be 134217728 x 4096
  std::vector<float> out(3);
  winfer::Status s = winfer::image_to_input(strip, p, 3, 1, 1, out.data());
  REQUIRE_FALSE(s.ok());
  CHECK(contains(s.message(), "aspect ratio"));
}

TEST_CASE("image errors: damaged copies of every fixture never crash the decoder") {
  TempDir dir;
  std::mt19937 rng(7);
  int decoded = 0, refused = 0;
  for (const std::string name : {"rgb_97x61.png", "photo_64x48.jpg", "rgb_20x14.bmp", "anim_29x23.gif",
                                 "gray_17x19.pgm", "rgb_23x21.ppm", "gray_40x50.png", "rgba_33x45.png"}) {
    const std::string whole = read_bytes(fixture(name));
    for (int trial = 0; trial < 40; ++trial) {
      std::string bytes = whole;
      if (trial % 2 == 0) {
        bytes.resize(rng() % bytes.size());  // cut anywhere
      } else {
        for (int k = 0; k < 4; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());  // flip bytes
      }
      auto image = winfer::decode_image(bytes.data(), bytes.size(), name, winfer::ColorMode::kRgb);
      if (image.ok()) {
        ++decoded;  // a flipped byte inside pixel data is still a valid image
        CHECK(image.value().pixels.size() == size_t(image.value().width * image.value().height * 3));
      } else {
        ++refused;
        CHECK(contains(image.status().message(), name));
      }
    }
  }
  MESSAGE(decoded << " damaged files still decoded, " << refused << " refused with an error");
}

TEST_CASE("idx: plain and gzip files, and what is wrong with bad ones") {
  TempDir dir;
  write_bytes(dir.file("ok.idx"), idx_bytes({2, 3}, 6));
  write_gzip(dir.file("ok.idx.gz"), idx_bytes({2, 3}, 6));
  for (const std::string name : {"ok.idx", "ok.idx.gz"}) {
    auto array = winfer::read_idx(dir.file(name));
    REQUIRE_MESSAGE(array.ok(), array.status().message());
    CHECK(array.value().dims == std::vector<int64_t>{2, 3});
    CHECK(array.value().data.size() == 6);
    CHECK(int(array.value().data[5]) == 5);
  }
  struct Bad {
    const char* name;
    std::string bytes;
    const char* fragment;
  };
  const std::vector<Bad> bad = {
      {"short.idx", idx_bytes({2, 3}, 5), "truncated"},
      {"magic.idx", "\x01\x02\x08\x01xxxx", "not an IDX file"},
      {"float.idx", idx_bytes({4}, 16, 0x0D), "element type 0x0d"},
      {"header.idx", std::string("\0\0\x08\x03\0\0", 6), "truncated IDX header"},
      {"huge.idx", idx_bytes({60000, 60000, 60000}, 0), "refused"},
  };
  for (const Bad& b : bad) {
    write_bytes(dir.file(b.name), b.bytes);
    auto array = winfer::read_idx(dir.file(b.name));
    INFO(b.name);
    REQUIRE_FALSE(array.ok());
    INFO("message: " << array.status().message());
    CHECK(contains(array.status().message(), b.name));
    CHECK(contains(array.status().message(), b.fragment));
  }
  // A gzip stream cut in the middle.
  write_gzip(dir.file("full.gz"), idx_bytes({100, 28, 28}, 100 * 28 * 28));
  const std::string gz = read_bytes(dir.file("full.gz"));
  write_bytes(dir.file("cut.gz"), gz.substr(0, gz.size() / 2));
  auto cut = winfer::read_idx(dir.file("cut.gz"));
  REQUIRE_FALSE(cut.ok());
  CHECK(contains(cut.status().message(), "cut.gz"));
  auto missing = winfer::read_idx(dir.file("nothing.gz"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == winfer::ErrorCode::kNotFound);
}

TEST_CASE("idx: a split needs one label per image") {
  TempDir dir;
  write_gzip(dir.file("t10k-images-idx3-ubyte.gz"), idx_bytes({3, 2, 2}, 12));
  write_gzip(dir.file("t10k-labels-idx1-ubyte.gz"), idx_bytes({3}, 3));
  auto split = winfer::load_mnist_split(dir.path(), "test");
  REQUIRE_MESSAGE(split.ok(), split.status().message());
  CHECK(split.value().count == 3);
  CHECK(split.value().image(2).pixels == std::vector<uint8_t>{8, 9, 0, 1});
  write_gzip(dir.file("t10k-labels-idx1-ubyte.gz"), idx_bytes({4}, 4));
  auto mismatch = winfer::load_mnist_split(dir.path(), "test");
  REQUIRE_FALSE(mismatch.ok());
  CHECK(contains(mismatch.status().message(), "one label per image"));
  auto train = winfer::load_mnist_split(dir.path(), "train");
  REQUIRE_FALSE(train.ok());
  CHECK(contains(train.status().message(), "train-images-idx3-ubyte"));
}
