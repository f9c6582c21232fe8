#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/test_files.h"
#include "winfer/shape.h"
#include "winfer/tensor.h"

using namespace winfer;
using winfer_test::contains;
using winfer_test::random_tensor;

TEST_CASE("Shape::make accepts valid dims and counts elements") {
  Result<Shape> s = Shape::make({2, 3, 4, 5});
  REQUIRE(s.ok());
  CHECK(s->numel() == 120);
  CHECK(s->to_string() == "[2,3,4,5]");
  CHECK(Shape::make({}).value().numel() == 1);  // rank 0: a scalar
  CHECK(Shape::make({4, 0, 7}).value().numel() == 0);
}

TEST_CASE("Shape::make rejects negative dims") {
  Result<Shape> s = Shape::make({2, -3, 4});
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == ErrorCode::kInvalidArgument);
  CHECK(contains(s.status().message(), "negative"));
}

TEST_CASE("Shape::make rejects element counts that would overflow") {
  const int64_t big = int64_t(1) << 31;
  for (auto dims : {std::vector<int64_t>{big, big, big}, std::vector<int64_t>{INT64_MAX, 2},
                    std::vector<int64_t>{1 << 20, 1 << 20, 2}}) {
    Result<Shape> s = Shape::make(dims);
    REQUIRE_FALSE(s.ok());
    CHECK(contains(s.status().message(), "2^40"));
  }
  CHECK(Shape::make({1 << 20, 1 << 20}).ok());         // exactly 2^40 is the limit, still allowed
  CHECK(Shape::make({0, INT64_MAX, INT64_MAX}).ok());  // zero elements whatever the other dims
}

TEST_CASE("Tensor::allocate is 64-byte aligned and zero-filled") {
  for (int64_t n : {0, 1, 3, 15, 16, 17, 1000}) {
    Tensor t = Tensor::allocate(Shape{n});
    REQUIRE(t.data() != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(t.data()) % Tensor::kAlignment == 0);
    for (int64_t i = 0; i < n; ++i) REQUIRE(t.data()[i] == 0.0f);
  }
}

TEST_CASE("Tensor::allocate with huge pages: blocks of 2 MiB and more 2 MiB aligned, zero-filled, the rest as usual") {
  const char* env = std::getenv("WINFER_HUGE_PAGES");
  const bool off = env != nullptr && std::string(env) == "0";
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{(1 << 19) - 1}, int64_t{1} << 19, (int64_t{1} << 20) + 17}) {
    CAPTURE(n);
    Tensor t = Tensor::allocate(Shape{n}, Layout::kPlain, DType::kFloat32, /*huge_pages=*/true);
    REQUIRE(t.data() != nullptr);
    const uintptr_t address = reinterpret_cast<uintptr_t>(t.data());
    CHECK(address % Tensor::kAlignment == 0);
    if (n * int64_t{sizeof(float)} >= int64_t{kHuge} && !off) CHECK(address % kHuge == 0);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; ++i) nonzero += t.data()[i] != 0.0f;
    CHECK(nonzero == 0);
    t.data()[n - 1] = 1.0f;  // writable to its last element
    CHECK(t.data()[n - 1] == 1.0f);
  }
}

TEST_CASE("Tensor::move_into: the elements copied into a block the tensor then keeps alive, its own storage released") {
  const std::shared_ptr<void> block = Tensor::allocate_block(4096);
  CHECK(reinterpret_cast<uintptr_t>(block.get()) % (uintptr_t{2} << 20) == 0);
  char* at = static_cast<char*>(block.get());
  std::memset(at, 0x7f, 4096);               // what the rounding must not keep
  Tensor a = random_tensor(Shape{3, 5}, 4);  // 60 bytes: 64 in a block, the last 4 zeroed
  const std::vector<float> values(a.data(), a.data() + a.numel());
  CHECK(a.block_bytes() == 64);
  REQUIRE(a.move_into(block, at));
  CHECK(a.data() == reinterpret_cast<float*>(at));
  CHECK(std::vector<float>(a.data(), a.data() + a.numel()) == values);
  CHECK(a.data()[15] == 0.0f);
  CHECK(a.shape() == Shape{3, 5});

  // Storage another tensor shares, or a view: refused, nothing changed.
  Tensor b = random_tensor(Shape{7}, 5);
  const Tensor sharer = b;
  const float* before = b.data();
  CHECK_FALSE(b.move_into(block, at + 64));
  CHECK(b.data() == before);
  Tensor view = Tensor::view(b.data(), Shape{7});
  CHECK_FALSE(view.move_into(block, at + 64));
  CHECK(view.data() == before);

  // The block lives on in the tensors moved into it, and goes with the last of them.
  std::weak_ptr<void> watch;
  Tensor kept;
  {
    const std::shared_ptr<void> other = Tensor::allocate_block(128);
    watch = other;
    Tensor c = random_tensor(Shape{4}, 6);
    REQUIRE(c.move_into(other, other.get()));
    kept = c;
  }
  CHECK_FALSE(watch.expired());
  CHECK(kept.data()[3] == random_tensor(Shape{4}, 6).data()[3]);
  kept = Tensor();
  CHECK(watch.expired());
}

TEST_CASE("to_layout NCHW -> NHWC -> NCHW round trips odd sizes") {
  const int64_t N = 2, C = 3, H = 5, W = 7;
  Tensor nchw = random_tensor(Shape{N, C, H, W}, 11, Layout::kNCHW);
  Tensor nhwc = nchw.to_layout(Layout::kNHWC);
  CHECK(nhwc.layout() == Layout::kNHWC);
  CHECK(nhwc.shape() == nchw.shape());  // the shape stays logical NCHW
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          REQUIRE(nhwc.data()[((n * H + h) * W + w) * C + c] == nchw.data()[((n * C + c) * H + h) * W + w]);
  Tensor back = nhwc.to_layout(Layout::kNCHW);
  CHECK(back.layout() == Layout::kNCHW);
  CHECK(winfer_test::same_bits(back, nchw));
}

TEST_CASE("reshaped shares storage with the original") {
  Tensor t = random_tensor(Shape{2, 6}, 3);
  Tensor r = t.reshaped(Shape{3, 4}, Layout::kPlain);
  CHECK(r.data() == t.data());
  CHECK(r.shape() == Shape{3, 4});
  r.data()[5] = 42.0f;
  CHECK(t.data()[5] == 42.0f);
  // The storage outlives the original handle.
  float* p = t.data();
  t = Tensor();
  CHECK(r.data() == p);
  CHECK(r.data()[5] == 42.0f);
}
