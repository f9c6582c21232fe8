// Tensor: float32 (or, inside a quantized model's sessions, u8) data with a logical shape and a
// storage layout.
//
// The graph's semantics (and everything a user passes in or gets out) are NCHW as in PyTorch.
// The CPU backend stores 4-D activations channels-last (NHWC) because its fast convolutions
// (im2win's window tensor, the indirection buffer, im2row GEMM) read whole pixel rows of C
// channels; conversion happens only at the graph's input and output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "winfer/shape.h"

namespace winfer {

enum class Layout {
  kNCHW,   // rank 4, PyTorch order
  kNHWC,   // rank 4, channels-last
  kPlain,  // any rank, row-major in logical order (rank-2 features, weights, ...)
};
const char* layout_name(Layout layout);

// Element types. Everything a user passes in or gets out is float32; u8 tensors exist only
// between the INT8 layers of a quantized model (docs/MODEL_FORMAT.md, "Quantized models"),
// a quarter of the bytes, their real values scale * (q - zero_point) per tensor.
enum class DType { kFloat32, kUInt8 };
const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

class Tensor {
 public:
  static constexpr size_t kAlignment = 64;

  Tensor() = default;

  // Owning, 64-byte aligned, zero-filled storage. huge_pages: a block of 2 MiB or more is aligned
  // to 2 MiB (on Linux in a mapping of its own), for data a kernel sweeps whole on every run
  // (winograd's transformed weights), to be moved into 2 MiB pages once written
  // (promote_to_huge_pages): with 4 KiB pages its place in the physically indexed L2 and its TLB
  // misses change from one process to the next.
  static Tensor allocate(const Shape& shape, Layout layout = Layout::kPlain, DType dtype = DType::kFloat32,
                         bool huge_pages = false);
  // The same storage without the zero fill: its elements are unspecified until written, for a
  // caller that writes every one before anything reads them (weights copied from a file: the
  // fill was 3-7% of a small model's load).
  static Tensor allocate_for_overwrite(const Shape& shape, Layout layout = Layout::kPlain,
                                       DType dtype = DType::kFloat32, bool huge_pages = false);
  // Owning, zero-filled storage whose pages are committed only when first written (an anonymous
  // mapping on Linux): for weights that may never be needed (a quantized model's INT8 layers keep
  // their s8 copy; the float32 one is filled only if the layer falls back to FP32 kernels).
  static Tensor allocate_untouched(const Shape& shape);
  // Whether 2 MiB pages are asked for at all (WINFER_HUGE_PAGES=0 turns them off; read once).
  static bool huge_pages_enabled();
  // A block for tensors moved into it (move_into), freed when the last of them goes: aligned to
  // 2 MiB, in 4 KiB pages until its owner, once it has filled it, has it moved into 2 MiB pages
  // (promote_to_huge_pages, engine/src/core/huge_page_promotion.h). Nothing committed until
  // written, or, with commit_now, all of it in one call (for a caller about to write all of it at
  // once; not for tensors moved in one by one as their old storage is freed, whose peak would
  // then hold them twice).
  // For weights that every run reads: a network's layers held in 4 KiB pages each (a few to
  // hundreds of pages per layer) cost a TLB walk per page per run, and in a VM each walk is a
  // two-level one.
  static std::shared_ptr<void> allocate_block(size_t bytes, bool commit_now = false);
  // Once nothing writes its elements any more: its whole 2 MiB ranges moved into transparent
  // huge pages by a background thread (engine/src/core/huge_page_promotion.h), same addresses and
  // contents; nothing where huge pages are off (WINFER_HUGE_PAGES=0) or the storage is not aligned
  // to 2 MiB. Not faulted in as 2 MiB pages from the start: on the VMs this project is measured
  // on, a fresh huge page costs ~20 ms to fault in (ResNet-18's load 37 -> 400-700 ms with its
  // weights in them).
  void promote_to_huge_pages() const;
  // A tensor of `shape` at `at` inside `block` (kAlignment-aligned, room for its bytes rounded up
  // to kAlignment), holding the block alive; its elements unspecified, the rounding zeroed.
  static Tensor in_block(const std::shared_ptr<void>& block, void* at, const Shape& shape);
  // The bytes this tensor takes in a block: its bytes rounded up to kAlignment.
  size_t block_bytes() const;
  // Copies this tensor's elements to `at` (kAlignment-aligned, block_bytes() free, inside
  // `block`), zeroes the rounding, and makes the tensor use that memory, releasing its own. False,
  // and nothing changed, for a view or for storage another tensor shares (which would keep the
  // old copy alive beside the new one).
  bool move_into(const std::shared_ptr<void>& block, void* at);
  // Non-owning view of memory the caller keeps alive.
  static Tensor view(float* data, const Shape& shape, Layout layout = Layout::kPlain);
  static Tensor view(void* data, const Shape& shape, Layout layout, DType dtype);
  // Points a view at other memory of its shape, layout and type, allocating nothing (a view kept
  // across calls: a split batch's runs). False, and nothing changed, for a tensor that owns its
  // storage.
  bool repoint_view(float* data);

  const Shape& shape() const { return shape_; }
  Layout layout() const { return layout_; }
  DType dtype() const { return dtype_; }
  // The float32 elements (dtype() == kFloat32; for a u8 tensor the address of its bytes).
  float* data() { return data_; }
  const float* data() const { return data_; }
  // The u8 elements (dtype() == kUInt8).
  uint8_t* u8() { return reinterpret_cast<uint8_t*>(data_); }
  const uint8_t* u8() const { return reinterpret_cast<const uint8_t*>(data_); }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return data_ == nullptr; }

  // Same storage, new logical shape with the same element count (no data movement).
  Tensor reshaped(const Shape& shape, Layout layout) const;
  // A copy in another layout (NCHW <-> NHWC for rank 4; a plain copy otherwise).
  Tensor to_layout(Layout layout) const;

 private:
  Shape shape_;
  Layout layout_ = Layout::kPlain;
  DType dtype_ = DType::kFloat32;
  std::shared_ptr<float> storage_;  // null for views
  float* data_ = nullptr;
};

}  // namespace winfer
