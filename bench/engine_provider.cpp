// The engine's convolution algorithms as bench providers: pack once, then time ConvAlgorithm::run.
#include <memory>
#include <new>

#include "bench/conv_provider.h"
#include "kernels/cpu/conv_algorithm.h"
#include "winfer/session.h"
#include "winfer/tensor.h"

namespace winfer::bench {
namespace {

class EngineConv : public PreparedConv {
 public:
  EngineConv(const ConvAlgorithm& algorithm, const ConvProblem& problem, int threads)
      : algorithm_(algorithm),
        problem_(problem),
        threads_(threads),
        packed_bytes_(algorithm.packed_weight_bytes(problem.params)),
        workspace_(algorithm.workspace_bytes(problem.params)),
        output_(nan_output_buffer(problem.params)) {}

  Status init() {
    try {  // as a session holds them (layers/conv2d.cpp): in 2 MiB pages where the algorithm asks
      packed_ = Tensor::allocate(Shape{static_cast<int64_t>((packed_bytes_ + sizeof(float) - 1) / sizeof(float))},
                                 Layout::kPlain, DType::kFloat32, algorithm_.packed_weights_in_huge_pages());
    } catch (const std::bad_alloc&) {
      packed_ = Tensor();
    }
    if (packed_.empty() || !workspace_.allocated() || !output_.allocated()) {
      return internal_error(std::string(algorithm_.name()) + ": out of memory");
    }
    algorithm_.pack_weights(problem_.params, problem_.weight_oihw, packed_.data());
    packed_.promote_to_huge_pages();
    return Status::Ok();
  }

  void run() override {
    algorithm_.run(problem_.params, problem_.input_nhwc, packed_.data(), problem_.bias, output_.floats(),
                   workspace_.data(), problem_.activation, threads_);
  }
  const float* output() const override { return output_.floats(); }
  std::optional<size_t> workspace_bytes() const override { return workspace_.bytes(); }
  std::optional<size_t> packed_weight_bytes() const override { return packed_bytes_; }

 private:
  const ConvAlgorithm& algorithm_;
  ConvProblem problem_;
  int threads_;
  size_t packed_bytes_;
  Tensor packed_;
  AlignedBuffer workspace_, output_;
};

class EngineProvider : public ConvProvider {
 public:
  explicit EngineProvider(const ConvAlgorithm& algorithm) : algorithm_(algorithm) {}
  std::string name() const override { return algorithm_.name(); }
  bool is_peer() const override { return false; }
  bool supports(const ConvParams& p) const override { return algorithm_.supports(p); }
  Result<std::unique_ptr<PreparedConv>> prepare(const ConvProblem& problem, int threads) const override {
    // The workspace is not touched until the first run: an allocation past the memory there is
    // would succeed (overcommit) and the run be killed. Refused here with the numbers instead.
    const ConvParams& p = problem.params;
    const size_t output_bytes = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels) * sizeof(float);
    WINFER_RETURN_IF_ERROR(check_host_memory_for(
        std::string(algorithm_.name()) + "'s packed weights, workspace and output for " + p.to_string(),
        algorithm_.packed_weight_bytes(p) + algorithm_.workspace_bytes(p) + output_bytes));
    auto conv = std::make_unique<EngineConv>(algorithm_, problem, threads);
    WINFER_RETURN_IF_ERROR(conv->init());
    return std::unique_ptr<PreparedConv>(std::move(conv));
  }

 private:
  const ConvAlgorithm& algorithm_;
};

}  // namespace

std::vector<const ConvProvider*> engine_providers() {
  // One wrapper per registered algorithm, built once: the registry is fixed at start-up.
  static const std::vector<std::unique_ptr<EngineProvider>> wrappers = [] {
    std::vector<std::unique_ptr<EngineProvider>> w;
    for (const ConvAlgorithm* a : conv_algorithms()) w.push_back(std::make_unique<EngineProvider>(*a));
    return w;
  }();
  std::vector<const ConvProvider*> out;
  for (const auto& w : wrappers) out.push_back(w.get());
  return out;
}

}  // namespace winfer::bench
