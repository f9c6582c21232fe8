// Where a model's weights live in memory: freed heap pages handed back while a load packs
// (FreeHeapPages), and the final weights gathered into one block of 2 MiB pages
// (gather_weights_in_huge_pages), by the loader for the weights it packed (LoadOptions::pack_for)
// and by a session for the weights its kernels packed for themselves.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "winfer/tensor.h"

namespace winfer {

// A layer packed beside its OIHW weights (GHWIO for direct and im2col, winograd's transform;
// im2win's panels before they lost their padding) frees them: a hole in the heap that later,
// larger packed layers do not fit, and whose pages would stay resident. Handing the free pages
// back to the system keeps the load's peak at the weights it holds (ShuffleNet with padded
// panels: about 1 MiB of such holes). malloc_trim walks every free chunk and gives back its pages
// again each time (a system call per chunk), 5% of RegNet-Y-400MF's load when called after every
// layer; so it runs only once the heap's free bytes grew by kTrimAfterFreeBytes since the last
// trim. glibc only; elsewhere the allocator decides.
class FreeHeapPages {
 public:
  FreeHeapPages();
  // After a layer's weights were packed or moved (their old storage freed).
  void layer_packed();
  // Once the loader is gone: its YAML tree, the ONNX import's text and graph and the weights
  // file's header freed last, in holes between the weights (RegNet-Y-400MF's YAML: 1.2 MiB still
  // resident, a quarter of a 2-image arena), before a session's arena comes on top of them.
  static void loader_gone();

 private:
  static constexpr size_t kTrimAfterFreeBytes = size_t(256) << 10;
  size_t trimmed_at_;
};

// The block a load reads its parameters into (ModelLoader::load_params, with LoadOptions::pack_for
// and a weights file whose size it knows): the tensors of kOwnPagesAtMostBytes or less one after
// the other as they are read, aligned to 2 MiB, its pages committed in one call, and moved into
// 2 MiB pages once the load is done (promote). No copy, where gathering them afterwards costs one
// (RegNetY-400MF: 7 ms of a 19 ms load, making its start-up 1.02x ncnn's). Tensors freed later (a batch norm's folded
// parameters, a layer packed beside its OIHW weights) leave their bytes unused in it.
class WeightBlock {
 public:
  explicit WeightBlock(size_t capacity);
  // A tensor of `shape` in the block, or an empty tensor when it is larger than
  // kOwnPagesAtMostBytes or no longer fits.
  Tensor take(const Shape& shape);
  // Whether `p` lies in the block.
  bool holds(const void* p) const;
  // Hands back the pages past the last tensor taken (the rest of a 2 MiB page it began).
  void release_unused();
  // Hands back the whole 4 KiB pages between the tensors still in the block (`live`, any order):
  // those of tensors freed since they were read (a batch norm's folded parameters, OIHW weights a
  // layer packed beside them: RegNetY-400MF's grouped layers, 1.4 MiB), which would stay resident.
  void release_holes(std::vector<const Tensor*> live);
  // Once its tensors are final (after release_holes): the block moved into 2 MiB pages in the
  // background (promote_to_huge_pages), its ranges with holes left in 4 KiB pages.
  void promote() const;

 private:
  std::shared_ptr<void> block_;
  size_t capacity_, used_ = 0;
};

// While one lives, allocate_weight() on the calling thread takes its tensors from `block`
// (null: none).
class ReadWeightsInto {
 public:
  explicit ReadWeightsInto(WeightBlock* block);
  ~ReadWeightsInto();
  ReadWeightsInto(const ReadWeightsInto&) = delete;
  ReadWeightsInto& operator=(const ReadWeightsInto&) = delete;

 private:
  WeightBlock* previous_;
};

// Moves the tensors under kOwnPagesWeightBytes (engine/src/op.h; larger ones would be held twice
// at the load's peak while copied) into one block for 2 MiB pages
// (Tensor::allocate_block), in order, each copied and its old storage freed before the next
// (the freed heap pages handed back as FreeHeapPages does), so memory grows by one tensor at
// most, then moved into 2 MiB pages in the background (promote_to_huge_pages). Why: a network's
// weights in 4 KiB pages cost a TLB walk per page per run, two-level in a VM, and another
// engine's or layer's memory between runs evicts the walks' entries. Batch 1, 1 thread, called in
// turn with other sessions (model_ab.py): ResNet-18 0.89x the time, EfficientNet-B0 0.91x,
// MobileNetV2 0.91x, RegNetY-400MF 0.92x (docs/PERFORMANCE.md, session 42); ResNet-50 0.95x,
// VGG-16 1.00x (session 43). The price is at load: while a 2 MiB page fills, the tensors still to
// come into it are held twice, up to 2 MiB more than the weights at the peak. Hence nothing is
// done for weights under kGatherFromWeightBytes in all (ShuffleNetV2's 8.7 MiB: 0.98x the time
// for 2.3 MiB more peak, a quarter of its weights), for small tensors that fill less than one 2
// MiB page, when huge pages are off (WINFER_HUGE_PAGES=0), and for a tensor whose storage another
// shares (Tensor::move_into).
constexpr size_t kGatherFromWeightBytes = size_t(12) << 20;
// Tensors in `read_into` (the load's WeightBlock, if any) are in their block already and stay.
// `also_read_bytes`: the weights the same network reads besides `weights` (a session gathering
// the copies its kernels packed passes the model's, which it reads too): the bound is on the
// network's weights, not on the share that happens to be packed where the gather runs ("auto" on
// MobileNetV2 packs about 8.4 of its 13.3 MiB itself and kept them in 4 KiB pages: 1.08x im2win's time).
void gather_weights_in_huge_pages(const std::vector<Tensor*>& weights, const WeightBlock* read_into = nullptr,
                                  size_t also_read_bytes = 0);

}  // namespace winfer
