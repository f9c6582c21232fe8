// winfer bench on the CUDA device (cuda_bench.h): native build only.
//
// Per layer: random NHWC input, OIHW weights and bias on the host (seeded), the CPU engine's
// result as the reference, the input uploaded once; then per algorithm: tune (cudnn picks its
// fastest algorithm here), pack and upload the weights, allocate the workspace, warm up, and time
// each call between two CUDA events on the bench's stream (the median is reported, so one slow
// call does not move it). TFLOPS use the nominal 2*N*Co*(C/g)*Kh*Kw*Ho*Wo, also for cudnn's
// FFT/Winograd algorithms, which do fewer.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/conv_provider.h"
#include "bench/cuda/cuda_bench.h"
#include "bench/stats.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/conv_algorithm.h"
#include "kernels/cuda/im2win_tiles.cuh"
#include "kernels/cuda/memory.h"

namespace winfer::bench {
namespace {

std::string cuda_message(cudaError_t e, const std::string& what) {
  return what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

Status from_cuda(const cuda::Status& s) {
  if (s.ok()) return Status();
  if (s.code() == cuda::StatusCode::kOutOfMemory) return out_of_memory(s.message());
  if (s.code() == cuda::StatusCode::kInvalidArgument) return invalid_argument(s.message());
  if (s.code() == cuda::StatusCode::kUnsupported) return unsupported(s.message());
  return device_error(s.message());
}

// FP32 lanes per SM: 64 on sm_60 and sm_80 (A100), 128 on the others of sm_60 and later
// (sm_86/89 consumer Ampere and Ada, sm_90 Hopper: 128).
int fp32_lanes_per_sm(int major, int minor) { return (major == 6 || major == 8) && minor == 0 ? 64 : 128; }

std::vector<float> random_floats(size_t count, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(gen);
  return v;
}

struct Events {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Events() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

struct Stream {
  cudaStream_t stream = nullptr;
  ~Stream() {
    if (stream) cudaStreamDestroy(stream);
  }
};

std::vector<std::string> default_convs(const ConvParams& p) {
  std::vector<std::string> names = {"im2win", "im2col", "direct", "cudnn"};
  if (p.is_depthwise()) names.insert(names.begin(), "depthwise");
  return names;
}

// The CPU reference: the engine's im2win, else its first algorithm that supports the layer.
Result<std::vector<float>> cpu_reference(const ConvProblem& problem, int threads, std::string* used) {
  const ConvProvider* chosen = nullptr;
  for (const ConvProvider* p : engine_providers()) {
    if (!p->supports(problem.params)) continue;
    if (!chosen || p->name() == "im2win") chosen = p;
    if (p->name() == "im2win") break;
  }
  if (!chosen) return unsupported("no CPU algorithm supports " + problem.params.to_string());
  auto prepared = chosen->prepare(problem, threads);
  if (!prepared.ok()) return prepared.status();
  prepared.value()->run();
  const ConvParams& p = problem.params;
  const size_t count = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
  *used = chosen->name();
  return std::vector<float>(prepared.value()->output(), prepared.value()->output() + count);
}

// Times one algorithm on one layer; fills `row` or returns why it could not run.
Status time_algorithm(const cuda::ConvAlgorithm& algo, const cuda::Context& ctx, const BenchLayer& layer,
                      const std::vector<float>& weight, const float* d_input, const float* d_bias, float* d_output,
                      const std::vector<float>* reference, const CudaBenchOptions& o, double peak_tflops,
                      CudaBenchRow* row) {
  const ConvParams& p = layer.params;
  const Activation act = layer.activation;
  WINFER_RETURN_IF_ERROR(from_cuda(algo.tune(ctx, p)));
  row->workspace_bytes = algo.workspace_bytes(p);
  row->packed_weight_bytes = algo.packed_weight_bytes(p);
  std::vector<float> packed_host(row->packed_weight_bytes / sizeof(float));
  algo.pack_weights(p, weight.data(), packed_host.data());
  cuda::DeviceBuffer packed, workspace;
  WINFER_RETURN_IF_ERROR(from_cuda(cuda::DeviceBuffer::allocate(row->packed_weight_bytes, &packed)));
  WINFER_RETURN_IF_ERROR(
      from_cuda(cuda::copy_to_device(packed.data(), packed_host.data(), row->packed_weight_bytes, ctx.stream)));
  WINFER_RETURN_IF_ERROR(from_cuda(cuda::DeviceBuffer::allocate(row->workspace_bytes, &workspace)));
  const size_t out_count = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
  WINFER_RETURN_IF_ERROR(from_cuda(cuda::fill_bytes(d_output, 0xFF, out_count * sizeof(float), ctx.stream)));  // NaN
  auto call = [&]() {
    return from_cuda(
        algo.run(ctx, p, d_input, packed.floats(), layer.bias ? d_bias : nullptr, d_output, workspace.data(), act));
  };

  // Warm-up: at least 3 calls and warmup_seconds; the first call's result is the one checked.
  WINFER_RETURN_IF_ERROR(call());
  WINFER_RETURN_IF_ERROR(from_cuda(cuda::synchronize(ctx.stream)));
  if (reference) {
    std::vector<float> got(out_count);
    WINFER_RETURN_IF_ERROR(from_cuda(cuda::copy_to_host(got.data(), d_output, out_count * sizeof(float), ctx.stream)));
    double max_ref = 0, max_err = 0;
    for (size_t i = 0; i < out_count; ++i) {
      max_ref = std::max(max_ref, std::abs(static_cast<double>((*reference)[i])));
      const double err = std::abs(static_cast<double>(got[i]) - (*reference)[i]);
      max_err = std::isnan(err) ? INFINITY : std::max(max_err, err);
    }
    row->max_rel_error = max_err / std::max(max_ref, 1e-30);
    row->mismatch = !(*row->max_rel_error <= o.tolerance);
  }
  const auto warm_start = std::chrono::steady_clock::now();
  for (int i = 1;
       i < 3 || std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count() < o.warmup_seconds;
       ++i) {
    WINFER_RETURN_IF_ERROR(call());
    WINFER_RETURN_IF_ERROR(from_cuda(cuda::synchronize(ctx.stream)));
  }

  Events ev;
  if (cudaEventCreate(&ev.start) != cudaSuccess || cudaEventCreate(&ev.stop) != cudaSuccess)
    return device_error(cuda_message(cudaGetLastError(), "cudaEventCreate"));
  std::vector<double> times;
  double total_ms = 0;
  while (more_runs(times.size(), o.runs, total_ms, o.min_seconds)) {
    cudaEventRecord(ev.start, ctx.stream);
    WINFER_RETURN_IF_ERROR(call());
    cudaEventRecord(ev.stop, ctx.stream);
    const cudaError_t e = cudaEventSynchronize(ev.stop);
    if (e != cudaSuccess) return device_error(cuda_message(e, algo.name()));
    float ms = 0;
    cudaEventElapsedTime(&ms, ev.start, ev.stop);
    times.push_back(ms);
    total_ms += ms;
  }
  row->timing = summarize(std::move(times));
  row->tflops = static_cast<double>(row->flops) / (row->timing.median_ms * 1e-3) / 1e12;
  row->percent_peak = peak_tflops > 0 ? 100.0 * row->tflops / peak_tflops : 0;
  const size_t in_bytes = static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels) * sizeof(float);
  row->device_bytes = in_bytes + out_count * sizeof(float) + row->packed_weight_bytes +
                      (layer.bias ? static_cast<size_t>(p.out_channels) * sizeof(float) : 0) + row->workspace_bytes;
  if (std::string(algo.name()) == "im2win") {
    const cuda::Im2winPlan plan = cuda::im2win_plan(p);
    row->note = std::string("tile ") + cuda::im2win_tile_name(plan.tile) + (plan.vector_a ? " vecA" : " scalarA") +
                (plan.vector_b ? " vecB" : " scalarB") + ", " +
                std::to_string((p.batch + plan.chunk_images - 1) / plan.chunk_images) + " chunk(s) of " +
                std::to_string(plan.chunk_images);
  }
  return Status();
}

}  // namespace

Result<CudaBenchReport> run_cuda_bench_on_device(const LayerSet& set, const CudaBenchOptions& o) {
  int device = 0;
  if (o.device.rfind("cuda:", 0) == 0) {
    try {
      device = std::stoi(o.device.substr(5));
    } catch (...) {
      return invalid_argument("--device " + o.device + ": expected cuda or cuda:N");
    }
  } else if (o.device != "cuda") {
    return invalid_argument("--device " + o.device + ": the layer bench runs on cpu, cuda or cuda:N");
  }
  const cuda::DeviceProbe probe = cuda::probe_devices();
  if (probe.count == 0) return device_error("no CUDA device: " + probe.reason);
  if (device < 0 || device >= probe.count)
    return invalid_argument("--device " + o.device + ": " + std::to_string(probe.count) + " CUDA device(s)");
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return device_error(cuda_message(e, "cudaSetDevice"));

  CudaBenchReport report;
  report.layer_set = set.name;
  report.layer_set_path = set.path;
  report.batch = set.layers.empty() ? set.batch : set.layers.front().params.batch;
  report.device = device;
  report.tf32 = o.allow_tf32;
  cudaDeviceProp prop{};
  if ((e = cudaGetDeviceProperties(&prop, device)) != cudaSuccess)
    return device_error(cuda_message(e, "cudaGetDeviceProperties"));
  int clock_khz = 0;
  if ((e = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device)) != cudaSuccess)
    return device_error(cuda_message(e, "cudaDeviceGetAttribute(clock rate)"));
  report.device_name = prop.name;
  report.sms = prop.multiProcessorCount;
  report.cc_major = prop.major;
  report.cc_minor = prop.minor;
  report.clock_mhz = clock_khz / 1e3;
  report.fp32_lanes_per_sm = fp32_lanes_per_sm(prop.major, prop.minor);
  report.peak_tflops = report.sms * (clock_khz * 1e3) * report.fp32_lanes_per_sm * 2.0 / 1e12;

  Stream stream;
  if ((e = cudaStreamCreate(&stream.stream)) != cudaSuccess) return device_error(cuda_message(e, "cudaStreamCreate"));
  cuda::LibrariesPtr libraries;
  const cuda::Status lib_status = cuda::create_libraries(stream.stream, o.allow_tf32, &libraries);
  if (!lib_status.ok() && o.log) o.log("cuBLAS/cuDNN unavailable (im2col and cudnn skipped): " + lib_status.message());
  cuda::Context ctx;
  ctx.stream = stream.stream;
  ctx.libraries = libraries.get();
  const int threads = o.cpu_threads > 0 ? o.cpu_threads : std::max(1u, std::thread::hardware_concurrency());

  uint64_t seed = o.seed;
  for (const BenchLayer& layer : set.layers) {
    const ConvParams& p = layer.params;
    seed += 3;
    const std::vector<float> input =
        random_floats(static_cast<size_t>(p.batch * p.in_h * p.in_w * p.in_channels), seed);
    const std::vector<float> weight = random_floats(
        static_cast<size_t>(p.out_channels * p.in_channels_per_group() * p.kernel_h * p.kernel_w), seed + 1);
    const std::vector<float> bias = random_floats(static_cast<size_t>(p.out_channels), seed + 2);
    std::vector<float> reference;
    if (o.verify) {
      ConvProblem problem;
      problem.params = p;
      problem.activation = layer.activation;
      problem.input_nhwc = input.data();
      problem.weight_oihw = weight.data();
      problem.bias = layer.bias ? bias.data() : nullptr;
      auto ref = cpu_reference(problem, threads, &report.cpu_reference);
      if (!ref.ok()) return ref.status();
      reference = std::move(ref).value();
    }
    cuda::DeviceBuffer d_input, d_bias, d_output;
    const size_t out_count = static_cast<size_t>(p.batch * p.out_h() * p.out_w() * p.out_channels);
    WINFER_RETURN_IF_ERROR(from_cuda(cuda::DeviceBuffer::allocate(input.size() * sizeof(float), &d_input)));
    WINFER_RETURN_IF_ERROR(from_cuda(cuda::DeviceBuffer::allocate(bias.size() * sizeof(float), &d_bias)));
    WINFER_RETURN_IF_ERROR(from_cuda(cuda::DeviceBuffer::allocate(out_count * sizeof(float), &d_output)));
    WINFER_RETURN_IF_ERROR(
        from_cuda(cuda::copy_to_device(d_input.data(), input.data(), input.size() * sizeof(float), ctx.stream)));
    WINFER_RETURN_IF_ERROR(
        from_cuda(cuda::copy_to_device(d_bias.data(), bias.data(), bias.size() * sizeof(float), ctx.stream)));

    const bool all = o.convs.empty() || (o.convs.size() == 1 && o.convs[0] == "all");
    for (const std::string& name : all ? default_convs(p) : o.convs) {
      const cuda::ConvAlgorithm* algo = cuda::find_conv_algorithm(name);
      if (!algo) {
        report.skipped.push_back(layer.name + ": " + name + ": not a CUDA algorithm of this build");
        continue;
      }
      if (!algo->supports(p)) {
        if (!all) report.skipped.push_back(layer.name + ": " + name + ": does not support " + p.to_string());
        continue;
      }
      CudaBenchRow row;
      row.layer = layer.name;
      row.conv = name;
      row.params = p;
      row.flops = p.flops();
      const Status s = time_algorithm(*algo, ctx, layer, weight, d_input.floats(), d_bias.floats(), d_output.floats(),
                                      o.verify ? &reference : nullptr, o, report.peak_tflops, &row);
      if (!s.ok()) {
        report.skipped.push_back(layer.name + ": " + name + ": " + s.message());
        (void)cudaGetLastError();
        continue;
      }
      if (row.mismatch) ++report.mismatches;
      if (o.log) {
        char line[256];
        std::snprintf(line, sizeof line, "%s %s: %.4f ms, %.2f TFLOPS%s", layer.name.c_str(), name.c_str(),
                      row.timing.median_ms, row.tflops, row.mismatch ? "  MISMATCH" : "");
        o.log(line);
      }
      report.rows.push_back(std::move(row));
    }
  }
  return report;
}

}  // namespace winfer::bench
