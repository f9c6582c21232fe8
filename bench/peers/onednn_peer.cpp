// oneDNN 2.x as a bench peer: convolution forward inference, f32, with the engine's activations
// as they are (NHWC), weights in whatever blocked layout the primitive prefers (format_tag::any,
// reordered once before timing), bias and the activation as a post-op.
//
// Threads: Debian's oneDNN uses the OpenMP runtime (DNNL_CPU_THREADING_RUNTIME = OMP), so its
// thread count is the calling thread's omp_set_num_threads(). It is set before the primitive is
// created (some implementations partition the work for the thread count they see then) and
// again before each run. The engine's kernels give num_threads explicitly and are unaffected.
#include <omp.h>

#include <dnnl.hpp>
#include <memory>
#include <string>
#include <unordered_map>

#include "bench/peers/peers.h"

namespace winfer::bench {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

memory::dims weight_dims(const ConvParams& p) {
  if (p.groups == 1) return {p.out_channels, p.in_channels, p.kernel_h, p.kernel_w};
  return {p.groups, p.out_channels_per_group(), p.in_channels_per_group(), p.kernel_h, p.kernel_w};
}

dnnl::primitive_attr make_attr(Activation act) {
  dnnl::post_ops ops;
  if (act == Activation::kRelu) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  if (act == Activation::kRelu6) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, 0.f, 6.f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  // The scratchpad is ours to allocate, so its size is known and reported as the workspace.
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::convolution_forward::primitive_desc make_primitive_desc(const ConvProblem& problem, const dnnl::engine& engine) {
  const ConvParams& p = problem.params;
  const memory::desc src({p.batch, p.in_channels, p.in_h, p.in_w}, dt::f32, tag::nhwc);
  const memory::desc dst({p.batch, p.out_channels, p.out_h(), p.out_w()}, dt::f32, tag::nhwc);
  const memory::desc weights(weight_dims(p), dt::f32, tag::any);
  const memory::dims strides = {p.stride_h, p.stride_w};
  const memory::dims dilates = {p.dilation_h - 1, p.dilation_w - 1};  // oneDNN counts the gaps
  const memory::dims pad_l = {p.pad_top, p.pad_left}, pad_r = {p.pad_bottom, p.pad_right};
  const auto kind = dnnl::prop_kind::forward_inference;
  // convolution_direct: no Winograd, so the nominal FLOPs are the FLOPs done, as for the engine.
  const auto algo = dnnl::algorithm::convolution_direct;
  if (problem.bias != nullptr) {
    const memory::desc bias({p.out_channels}, dt::f32, tag::x);
    return {
        {kind, algo, src, weights, bias, dst, strides, dilates, pad_l, pad_r}, make_attr(problem.activation), engine};
  }
  return {{kind, algo, src, weights, dst, strides, dilates, pad_l, pad_r}, make_attr(problem.activation), engine};
}

class OnednnConv : public PreparedConv {
 public:
  OnednnConv(const ConvProblem& problem, int threads)
      : params_(problem.params),
        threads_(threads),
        engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        output_(nan_output_buffer(params_)) {
    omp_set_num_threads(threads_);
    const auto pd = make_primitive_desc(problem, engine_);
    primitive_ = dnnl::convolution_forward(pd);
    impl_ = pd.impl_info_str();
    auto* input = const_cast<float*>(problem.input_nhwc);  // oneDNN's API is not const-correct
    args_[DNNL_ARG_SRC] = memory(pd.src_desc(), engine_, input);
    args_[DNNL_ARG_DST] = memory(pd.dst_desc(), engine_, output_.data());
    args_[DNNL_ARG_WEIGHTS] = reorder_weights(problem, pd);
    if (problem.bias != nullptr)
      args_[DNNL_ARG_BIAS] = memory(pd.bias_desc(), engine_, const_cast<float*>(problem.bias));
    scratchpad_bytes_ = pd.scratchpad_desc().get_size();
    args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), engine_);
    weight_bytes_ = pd.weights_desc().get_size();
  }

  void run() override {
    omp_set_num_threads(threads_);
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  const float* output() const override { return output_.floats(); }
  std::optional<size_t> workspace_bytes() const override { return scratchpad_bytes_; }
  std::optional<size_t> packed_weight_bytes() const override { return weight_bytes_; }
  std::string note() const override { return impl_; }

 private:
  // OIHW (goihw with groups) into the primitive's preferred layout, once.
  memory reorder_weights(const ConvProblem& problem, const dnnl::convolution_forward::primitive_desc& pd) {
    const memory::desc user_desc(weight_dims(params_), dt::f32, params_.groups == 1 ? tag::oihw : tag::goihw);
    memory user(user_desc, engine_, const_cast<float*>(problem.weight_oihw));
    if (pd.weights_desc() == user_desc) return user;
    memory packed(pd.weights_desc(), engine_);
    dnnl::reorder(user, packed).execute(stream_, user, packed);
    stream_.wait();
    return packed;
  }

  ConvParams params_;
  int threads_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  AlignedBuffer output_;
  dnnl::primitive primitive_;
  std::unordered_map<int, memory> args_;
  std::string impl_;
  size_t scratchpad_bytes_ = 0, weight_bytes_ = 0;
};

const char* isa_name(dnnl::cpu_isa isa) {
  switch (static_cast<dnnl_cpu_isa_t>(isa)) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

class OnednnProvider : public ConvProvider {
 public:
  std::string name() const override { return "onednn"; }
  bool is_peer() const override { return true; }
  bool supports(const ConvParams& p) const override { return p.is_valid(); }
  Result<std::unique_ptr<PreparedConv>> prepare(const ConvProblem& problem, int threads) const override {
    try {
      return std::unique_ptr<PreparedConv>(std::make_unique<OnednnConv>(problem, threads));
    } catch (const dnnl::error& e) {
      return unsupported("onednn: " + std::string(e.what()));
    }
  }
  std::string description() const override {
    const dnnl::version_t* v = dnnl::version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " (OpenMP, isa " + isa_name(dnnl::get_effective_cpu_isa()) + ", convolution_direct, NHWC)";
  }
};

}  // namespace
}  // namespace winfer::bench

// The module's entry point (peers.h).
extern "C" const winfer::bench::ConvProvider* winfer_bench_peer() {
  static const winfer::bench::OnednnProvider provider;
  return &provider;
}
