// Host-side weight packing for the CUDA convolution algorithms, and shared size checks.
#include <climits>

#include "kernels/cuda/conv_internal.h"

namespace winfer {
namespace cuda {

int64_t packed_weight_floats(const ConvParams& p) {
  return p.out_channels * p.in_channels_per_group() * p.kernel_h * p.kernel_w;
}

// Index of weight (g, o, c, kh, kw) in `layout` (o and c within group g).
static int64_t packed_index(const ConvParams& p, WeightLayout layout, int64_t g, int64_t o, int64_t c, int64_t kh,
                            int64_t kw) {
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const int64_t kh_n = p.kernel_h, kw_n = p.kernel_w;
  switch (layout) {
    case WeightLayout::kGHWIO: return (((g * kh_n + kh) * kw_n + kw) * cg + c) * cog + o;
    case WeightLayout::kGWHIO: return (((g * kw_n + kw) * kh_n + kh) * cg + c) * cog + o;
    case WeightLayout::kHWC: return (kh * kw_n + kw) * p.out_channels + g * cog + o;
    case WeightLayout::kOHWI: return (((g * cog + o) * kh_n + kh) * kw_n + kw) * cg + c;
  }
  return 0;
}

void pack_weights(const ConvParams& p, const float* weight_oihw, float* packed, WeightLayout layout) {
  const int64_t cg = p.in_channels_per_group(), cog = p.out_channels_per_group();
  const float* w = weight_oihw;  // walked in OIHW order
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t o = 0; o < cog; ++o)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t kh = 0; kh < p.kernel_h; ++kh)
          for (int64_t kw = 0; kw < p.kernel_w; ++kw) packed[packed_index(p, layout, g, o, c, kh, kw)] = *w++;
}

bool fits_launch_limits(const ConvParams& p) {
  if (!p.is_valid()) return false;
  // cuBLAS/cuDNN take int sizes; our tiled kernels put groups on gridDim.z (<= 65535).
  const int64_t pixels = p.batch * p.out_h() * p.out_w();
  const int64_t k = p.kernel_h * p.kernel_w * p.in_channels_per_group();
  return p.groups <= 65535 && pixels <= INT_MAX && k <= INT_MAX && p.out_channels <= INT_MAX &&
         p.in_channels <= INT_MAX;
}

}  // namespace cuda
}  // namespace winfer
