// XNNPACK as a bench peer: its f32 NHWC convolution operator, the production implementation of
// indirect convolution (Dukhan 2019; see REFERENCES.md).
//
// The API is the operator API of the Debian package (git 2022-02): create (packs the weights),
// setup (binds batch size, input size and the input/output pointers and builds the indirection
// buffer), run. Newer XNNPACK splits setup into reshape + setup and takes the workspace from the
// caller; this file follows the installed header. create and setup happen once; run is timed.
//
// Threads: a pthreadpool of `threads` workers, or none (the caller's thread) for one thread.
// Note that XNNPACK builds the indirection buffer at setup for a fixed input pointer, so its
// run() does less per call than the engine's algorithms, which lower their input every run.
#include <pthreadpool.h>
#include <xnnpack.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/peers/peers.h"

namespace winfer::bench {
namespace {

const char* status_name(xnn_status s) {
  switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
  }
  return "unknown status";
}

Status check(xnn_status s, const char* call) {
  if (s == xnn_status_success) return Status::Ok();
  return unsupported(std::string("xnnpack: ") + call + " failed: " + status_name(s));
}

Status initialize_once() {
  static const xnn_status status = xnn_initialize(nullptr);
  return check(status, "xnn_initialize");
}

// OIHW [Co][Cg][Kh][Kw] -> XNNPACK's [g][Co/g][Kh][Kw][Cg], i.e. OHWI (groups are consecutive
// blocks of output channels in both).
std::vector<float> to_ohwi(const ConvParams& p, const float* oihw) {
  const int64_t cg = p.in_channels_per_group(), taps = p.kernel_h * p.kernel_w;
  std::vector<float> ohwi(static_cast<size_t>(p.out_channels * cg * taps));
  for (int64_t o = 0; o < p.out_channels; ++o)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t t = 0; t < taps; ++t)
        ohwi[static_cast<size_t>((o * taps + t) * cg + c)] = oihw[(o * cg + c) * taps + t];
  return ohwi;
}

void clamp_bounds(Activation act, float* lo, float* hi) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  *lo = act == Activation::kNone ? -kInf : 0.f;
  *hi = act == Activation::kRelu6 ? 6.f : kInf;
}

struct OperatorDeleter {
  void operator()(xnn_operator* op) const { xnn_delete_operator(op); }
};
struct PoolDeleter {
  void operator()(pthreadpool* pool) const { pthreadpool_destroy(pool); }
};

class XnnpackConv : public PreparedConv {
 public:
  XnnpackConv(const ConvProblem& problem, int threads)
      : problem_(problem),
        output_(nan_output_buffer(problem.params)),
        pool_(threads > 1 ? pthreadpool_create(static_cast<size_t>(threads)) : nullptr) {}

  Status init() {
    const ConvParams& p = problem_.params;
    const std::vector<float> weights = to_ohwi(p, problem_.weight_oihw);
    float lo = 0, hi = 0;
    clamp_bounds(problem_.activation, &lo, &hi);
    xnn_operator_t op = nullptr;
    const auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
    WINFER_RETURN_IF_ERROR(
        check(xnn_create_convolution2d_nhwc_f32(
                  u32(p.pad_top), u32(p.pad_right), u32(p.pad_bottom), u32(p.pad_left), u32(p.kernel_h),
                  u32(p.kernel_w), u32(p.stride_h), u32(p.stride_w), u32(p.dilation_h), u32(p.dilation_w),
                  u32(p.groups), static_cast<size_t>(p.in_channels_per_group()),
                  static_cast<size_t>(p.out_channels_per_group()), static_cast<size_t>(p.in_channels),
                  static_cast<size_t>(p.out_channels), weights.data(), problem_.bias, lo, hi, /*flags=*/0, &op),
              "xnn_create_convolution2d_nhwc_f32"));
    op_.reset(op);
    return check(xnn_setup_convolution2d_nhwc_f32(op_.get(), static_cast<size_t>(p.batch), static_cast<size_t>(p.in_h),
                                                  static_cast<size_t>(p.in_w), problem_.input_nhwc, output_.floats(),
                                                  pool_.get()),
                 "xnn_setup_convolution2d_nhwc_f32");
  }

  void run() override { xnn_run_operator(op_.get(), pool_.get()); }
  const float* output() const override { return output_.floats(); }
  // The operator owns its packed weights and indirection buffer; this API version has no query.
  std::optional<size_t> workspace_bytes() const override { return std::nullopt; }
  std::optional<size_t> packed_weight_bytes() const override { return std::nullopt; }

 private:
  ConvProblem problem_;
  AlignedBuffer output_;
  std::unique_ptr<pthreadpool, PoolDeleter> pool_;
  std::unique_ptr<xnn_operator, OperatorDeleter> op_;
};

class XnnpackProvider : public ConvProvider {
 public:
  std::string name() const override { return "xnnpack"; }
  bool is_peer() const override { return true; }
  bool supports(const ConvParams& p) const override { return p.is_valid(); }
  Result<std::unique_ptr<PreparedConv>> prepare(const ConvProblem& problem, int threads) const override {
    WINFER_RETURN_IF_ERROR(initialize_once());
    auto conv = std::make_unique<XnnpackConv>(problem, threads);
    WINFER_RETURN_IF_ERROR(conv->init());
    return std::unique_ptr<PreparedConv>(std::move(conv));
  }
  std::string description() const override { return "XNNPACK (operator API, pthreadpool)"; }
};

}  // namespace
}  // namespace winfer::bench

// The module's entry point (peers.h).
extern "C" const winfer::bench::ConvProvider* winfer_bench_peer() {
  static const winfer::bench::XnnpackProvider provider;
  return &provider;
}
