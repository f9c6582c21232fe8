// `winfer run MODEL`: one input tensor through the model; top classes to stdout, time to stderr.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "apps/winfer/commands.h"
#include "apps/winfer/format.h"
#include "apps/winfer/input_size.h"
#include "bench/stats.h"
#include "kernels/cpu/gemm.h"
#include "winfer/model.h"
#include "winfer/npy.h"
#include "winfer/session.h"

namespace winfer::cli {
namespace {

// "(any batch, height and width)": the dims of the model's input a session may change.
std::string free_dims(const Model& model) {
  const std::vector<bool> fixed = model.input_dim_fixed();
  const int rank = model.input_shape().rank();
  std::vector<std::string> names;
  for (int d = 0; d < rank; ++d) {
    if (static_cast<size_t>(d) < fixed.size() && fixed[static_cast<size_t>(d)]) continue;
    names.push_back(d == 0                ? "batch"
                    : rank == 4 && d == 2 ? "height"
                    : rank == 4 && d == 3 ? "width"
                                          : "dim " + std::to_string(d));
  }
  if (names.empty()) return "(every dim fixed)";
  std::string text = "(any " + names[0];
  for (size_t i = 1; i < names.size(); ++i) text += (i + 1 == names.size() ? " and " : ", ") + names[i];
  return text + ")";
}

// The --input file, checked against the model (Model::check_input_shape: the rank and the
// fixed dims; any batch but 0 and any free size) and against --batch and --size: its shape is
// the session's. Its tensor is at most the file's size, which is checked against the memory
// available first.
Result<Tensor> read_input(const RunArgs& args, const Model& model) {
  std::error_code ec;
  const uintmax_t file_bytes = std::filesystem::file_size(args.input, ec);
  if (!ec) WINFER_RETURN_IF_ERROR(check_host_memory_for("the input " + args.input, static_cast<size_t>(file_bytes)));
  auto input = read_npy(args.input);
  if (!input.ok()) return input.status();
  const Shape& s = input.value().shape();
  if (s.rank() == model.input_shape().rank() && s.rank() > 0 && s[0] == 0) {
    return invalid_argument(args.input + ": the input has shape " + s.to_string() +
                            ", a batch of 0 images: nothing to run");
  }
  Status fits = model.check_input_shape(s);
  if (!fits.ok()) {
    return Status(fits.code(), args.input + ": input has shape " + s.to_string() + ", the model expects " +
                                   model.input_shape().to_string() + " " + free_dims(model) + ": " + fits.message());
  }
  if (args.batch > 0 && args.batch != s[0]) {
    return invalid_argument(args.input + ": --batch " + std::to_string(args.batch) +
                            " disagrees with the input's batch " + std::to_string(s[0]));
  }
  if (!args.size.empty()) {
    WINFER_ASSIGN_OR_RETURN(std::vector<int64_t> hw, parse_image_size(args.size));
    if (s.rank() != 4 || s[2] != hw[0] || s[3] != hw[1]) {
      return invalid_argument(args.input + ": --size " + args.size + " disagrees with the input's shape " +
                              s.to_string() + " (leave --size out: the file's shape is the session's)");
    }
  }
  return input;
}

// Prints the top-k classes of every row of a [N, classes] output; nothing for --top 0.
void print_top_classes(const Model& model, const Tensor& output, int top) {
  if (top == 0) return;
  if (output.shape().rank() != 2) {
    std::printf("output %s (not [N, classes]: no classes to rank)\n", output.shape().to_string().c_str());
    return;
  }
  const int64_t rows = output.shape()[0], classes = output.shape()[1];
  const std::vector<std::string> labels = model_labels(model, classes);
  for (int64_t r = 0; r < rows; ++r) {
    if (rows > 1) std::printf("image %lld\n", static_cast<long long>(r));
    print_class_scores(top_classes(class_probabilities(model, output.data() + r * classes, classes), top), labels);
  }
}

// max |got - want| / max |want| (the parity tests' measure); an error when the shapes differ.
Result<double> relative_error_vs(const std::string& path, const Tensor& got) {
  auto want = read_npy(path);
  if (!want.ok()) return want.status();
  if (want.value().shape() != got.shape()) {
    return shape_mismatch("--expect " + path + ": has shape " + want.value().shape().to_string() + ", the output is " +
                          got.shape().to_string());
  }
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.data()[i], w = want.value().data()[i];
    diff = std::isnan(g) != std::isnan(w) ? INFINITY : std::max(diff, std::fabs(g - w));
    if (std::isinf(diff)) break;
    scale = std::max(scale, std::fabs(w));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace

int run_run(const RunArgs& args) {
  if (Status s = check_autotune_cache_flag(args.autotune_cache, {args.conv}); !s.ok()) return fail(s);
  if (args.tf32 && args.device == "cpu") {
    return fail(invalid_argument(
        "--tf32 applies to CUDA sessions (--device cuda, cuda:N or auto); the CPU computes in float32"));
  }
  LoadOptions load_options;
  load_options.weights_path = args.weights;
  load_options.confine_to = args.confine_to;
  load_options.random_weights_seed = args.random_weights_seed;
  load_options.fuse = args.fuse;
  load_options.pack_for = pack_for(args.device, args.conv);
  const auto load_start = std::chrono::steady_clock::now();
  if (!args.output.empty()) {  // a path that cannot be written is refused before the runs
    Status writable = check_npy_output(args.output);
    if (!writable.ok()) return fail(writable);
  }
  auto model = Model::load(args.model, load_options);
  if (!model.ok()) return fail(model.status());
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start).count();

  // The session is made (and its memory checked) before a random input of its batch is
  // allocated; a file's input is read first, since its batch is the session's.
  Result<Tensor> input = Tensor();
  if (!args.input.empty()) {
    input = read_input(args, *model.value());
    if (!input.ok()) return fail(input.status());
  }
  std::vector<int64_t> input_shape;  // the file's, or --batch and --size (empty: the model's)
  if (!args.input.empty()) {
    input_shape = input.value().shape().dims();
  } else {
    auto shape = input_shape_for(*model.value(), args.batch, args.size);
    if (!shape.ok()) return fail(shape.status());
    input_shape = std::move(shape).value();
  }

  SessionOptions options;
  options.conv_algorithm = args.conv;
  options.autotune_cache = args.autotune_cache;
  options.device = args.device;
  options.allow_tf32 = args.tf32;
  options.check_numerics = args.check_numerics;
  options.concat_alias = args.concat_alias;
  options.images_per_run = args.images_per_run;
  options.threads = args.threads;
  options.input_shape = input_shape;
  auto session = Session::create(model.value(), options);
  if (!session.ok()) return fail(session.status());
  if (args.input.empty()) {
    input = random_tensor(session.value()->input_shape(), args.input_seed);
    if (!input.ok()) return fail(input.status());
  }

  std::vector<double> times;
  Tensor output;
  for (int i = 0; i <= args.repeat; ++i) {  // run 0 is the warm-up
    const auto start = std::chrono::steady_clock::now();
    auto result = session.value()->run(input.value());
    if (!result.ok()) return fail(result.status());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i > 0 || args.repeat == 0) times.push_back(ms);
    output = std::move(result).value();
  }

  print_top_classes(*model.value(), output, args.top);
  if (!args.output.empty()) {
    Status s = write_npy(args.output, output);
    if (!s.ok()) return fail(s);
  }
  const Model& m = *model.value();
  std::fprintf(stderr, "model %s, weights %s, input %s%s\n", m.name().c_str(), m.weights_source().c_str(),
               input.value().shape().to_string().c_str(), args.input.empty() ? " (random)" : "");
  if (session.value()->device() == "cpu") {
    const int64_t batch = session.value()->input_shape()[0];
    std::fprintf(stderr, "device cpu, conv %s, threads %d, batch %lld%s, gemm: %s\n", args.conv.c_str(), args.threads,
                 static_cast<long long>(batch), batch_runs_note(session.value()->memory_report(), batch).c_str(),
                 gemm_backend_description().c_str());
  } else {
    std::fprintf(stderr, "device %s, conv %s%s; times include the input upload and output download\n",
                 session.value()->device().c_str(), args.conv.c_str(), args.tf32 ? ", TF32 allowed" : "");
  }
  const bench::Timing t = bench::summarize(times);
  std::fprintf(stderr, "load %.1f ms; run: median %.2f ms over %zu run(s)%s (min %.2f, max %.2f), %.1f GFLOP/s\n",
               load_ms, t.median_ms, times.size(), args.repeat == 0 ? " (cold)" : "", t.min_ms, t.max_ms,
               flops_at(m, session.value()->input_shape()) / (t.median_ms * 1e6));
  const MemoryReport& memory = session.value()->memory_report();
  std::fprintf(stderr, "memory (%s): activation arena %s, largest workspace %s, weights as run %s\n",
               session.value()->device().c_str(), human_bytes(double(memory.arena_bytes)).c_str(),
               human_bytes(double(memory.max_workspace_bytes)).c_str(),
               human_bytes(double(memory.packed_weights_bytes)).c_str());
  if (!args.expect.empty()) {
    auto error = relative_error_vs(args.expect, output);
    if (!error.ok()) return fail(error.status());
    const bool pass = error.value() <= args.tolerance;
    std::fprintf(stderr, "max relative error vs %s: %.3g (tolerance %.3g): %s\n", args.expect.c_str(), error.value(),
                 args.tolerance, pass ? "ok" : "FAILED");
    if (!pass) return 1;
  }
  if (args.profile) {
    std::fprintf(stderr, "\n%-32s %-18s %-28s %10s\n", "layer", "op", "kernel", "ms");
    for (const LayerTiming& t : session.value()->last_timings()) {
      std::fprintf(stderr, "%-32s %-18s %-28s %10.3f\n", t.name.c_str(), t.type.c_str(), t.kernel.c_str(),
                   t.milliseconds);
    }
  }
  return 0;
}

}  // namespace winfer::cli
