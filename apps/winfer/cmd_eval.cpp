// `winfer eval MODEL --dataset fashion-mnist`: runs a labelled split through the model in
// batches and prints accuracy, per-class accuracy, the most confused class pairs (stdout) and
// the throughput (stderr). The IDX images get the model's own preprocessing (or --preprocess's),
// so a 28x28 gray model sees exactly what PyTorch saw in training (pixel / 255, then mean/std);
// classes are named by the model's labels (or --labels').
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "apps/winfer/classifier_flags.h"
#include "apps/winfer/commands.h"
#include "apps/winfer/format.h"
#include "engine/src/core/file_io.h"
#include "winfer/idx_dataset.h"
#include "winfer/image.h"
#include "winfer/model.h"
#include "winfer/session.h"

namespace winfer::cli {
namespace {

using Clock = std::chrono::steady_clock;

// confusion[true][predicted] counts. The true classes are the dataset's labels (bytes: at most
// 256 rows) and a row holds only the classes predicted, so that a model of many classes costs
// memory by the images evaluated, not by the classes squared.
using Confusion = std::vector<std::map<int64_t, int64_t>>;

int64_t count_of(const Confusion& confusion, int64_t truth, int64_t predicted) {
  const auto it = confusion[static_cast<size_t>(truth)].find(predicted);
  return it == confusion[static_cast<size_t>(truth)].end() ? 0 : it->second;
}

Result<ImageDataset> load_dataset(const EvalArgs& args) {
  if (args.dataset != "fashion-mnist") {
    return invalid_argument("--dataset " + args.dataset + ": unknown dataset (known: fashion-mnist)");
  }
  const std::string dir = args.data.empty() ? kFashionMnistDir : args.data;
  auto dataset = load_mnist_split(dir, args.split);
  if (!dataset.ok() && dataset.status().code() == ErrorCode::kNotFound && args.data.empty()) {
    Status s = dataset.status();
    return s.with_context(
        "Fashion-MNIST not found (install Debian's dataset-fashion-mnist, e.g. scripts/setup.sh, "
        "or give --data DIR)");
  }
  return dataset;
}

// Fills `input` with images [begin, begin + n) of the dataset, preprocessed; the rest is zero.
Status fill_batch(const ImageDataset& data, int64_t begin, int64_t n, const Preprocess& p, Tensor* input) {
  const Shape& s = input->shape();
  const int64_t per_image = s[1] * s[2] * s[3];
  std::fill(input->data(), input->data() + input->numel(), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    Status st = image_to_input(data.image(begin + i), p, s[1], s[2], s[3], input->data() + i * per_image);
    if (!st.ok()) return st.with_context("image " + std::to_string(begin + i));
  }
  return Status::Ok();
}

void print_summary(const Confusion& confusion, const std::vector<std::string>& labels, int64_t total) {
  const int64_t rows = static_cast<int64_t>(confusion.size());
  int64_t correct = 0;
  for (int64_t c = 0; c < rows; ++c) correct += count_of(confusion, c, c);
  std::printf("accuracy %.2f%% (%lld/%lld)\n\nper class:\n", 100.0 * double(correct) / double(total),
              static_cast<long long>(correct), static_cast<long long>(total));
  for (int64_t c = 0; c < rows; ++c) {
    int64_t row = 0;
    for (const auto& predicted : confusion[c]) row += predicted.second;
    if (row == 0) continue;
    const int64_t right = count_of(confusion, c, c);
    std::printf("  %-20s %6.2f%%  (%lld/%lld)\n", class_label(labels, c).c_str(), 100.0 * double(right) / double(row),
                static_cast<long long>(right), static_cast<long long>(row));
  }
  struct Pair {
    int64_t truth, predicted, count;
  };
  std::vector<Pair> pairs;
  for (int64_t t = 0; t < rows; ++t) {
    for (const auto& [p, count] : confusion[t]) {
      if (t != p) pairs.push_back({t, p, count});
    }
  }
  std::stable_sort(pairs.begin(), pairs.end(), [](const Pair& a, const Pair& b) { return a.count > b.count; });
  if (pairs.empty()) return;
  std::printf("\nmost confused (true -> predicted):\n");
  for (size_t i = 0; i < std::min<size_t>(5, pairs.size()); ++i) {
    const std::string text = class_label(labels, pairs[i].truth) + " -> " + class_label(labels, pairs[i].predicted);
    std::printf("  %-36s %5lld\n", text.c_str(), static_cast<long long>(pairs[i].count));
  }
}

// A predictions file replaces only a predictions file: bytes that are all class indices of this
// model (or an empty file), so that a mistyped --predictions never destroys another file.
detail::OutputKind predictions_kind(int64_t classes) {
  return {"predictions file", "a predictions file (one class index per byte)",
          [classes](const std::string& head, uint64_t) {
            return std::all_of(head.begin(), head.end(), [&](char c) { return int64_t(uint8_t(c)) < classes; });
          }};
}

}  // namespace

int run_eval(const EvalArgs& args) {
  if (Status s = check_autotune_cache_flag(args.autotune_cache, {args.conv}); !s.ok()) return fail(s);
  LoadOptions load_options;
  load_options.weights_path = args.weights;
  load_options.confine_to = args.confine_to;
  load_options.pack_for = pack_for(args.device, args.conv.empty() ? SessionOptions().conv_algorithm : args.conv);
  auto loaded = Model::load(args.model, load_options);
  if (!loaded.ok()) return fail(loaded.status());
  const std::shared_ptr<const Model>& model = loaded.value();
  auto chosen = chosen_preprocess(*model, args.preprocess);
  if (!chosen.ok()) return fail(chosen.status());
  const Preprocess& preprocess = chosen.value();
  auto flag_labels = read_labels_flag(args.labels);
  if (!flag_labels.ok()) return fail(flag_labels.status());

  auto dataset = load_dataset(args);
  if (!dataset.ok()) return fail(dataset.status());
  const ImageDataset& data = dataset.value();
  const int64_t total = args.limit > 0 ? std::min(args.limit, data.count) : data.count;
  if (total == 0) return fail(invalid_argument("the " + args.split + " split has no images"));

  SessionOptions options;
  if (!args.conv.empty()) options.conv_algorithm = args.conv;
  options.autotune_cache = args.autotune_cache;
  options.device = args.device;
  options.threads = args.threads;
  options.batch = std::min(args.batch > 0 ? args.batch : 100, total);
  options.images_per_run = args.images_per_run;
  auto session = Session::create(model, options);
  if (!session.ok()) return fail(session.status());
  const std::vector<Shape>& outputs = session.value()->output_shapes();
  if (outputs.empty() || outputs[0].rank() != 2) {
    return fail(invalid_argument(args.model + ": the output is not [N, classes]; cannot evaluate a classifier"));
  }
  const int64_t classes = outputs[0][1];
  const uint8_t max_label = *std::max_element(data.labels.begin(), data.labels.begin() + total);
  if (max_label >= classes) {
    return fail(invalid_argument(args.model + ": the dataset has label " + std::to_string(max_label) +
                                 ", the model only " + std::to_string(classes) + " classes"));
  }

  if (!args.predictions.empty() && classes > 256) {
    return fail(invalid_argument("--predictions writes one byte per image: at most 256 classes, the model has " +
                                 std::to_string(classes)));
  }
  // A path that cannot be written is refused now, not after the whole split has run.
  if (!args.predictions.empty()) {
    Status writable = detail::check_output_path(args.predictions, predictions_kind(classes));
    if (!writable.ok()) return fail(writable);
  }

  Confusion confusion(static_cast<size_t>(max_label) + 1);
  std::vector<uint8_t> predictions;
  predictions.reserve(static_cast<size_t>(total));
  auto batch_input = allocate_checked(session.value()->input_shape(), "a batch of images");
  if (!batch_input.ok()) return fail(batch_input.status());
  Tensor& input = batch_input.value();
  ProgressBar progress(total, "images");
  double preprocess_seconds = 0, inference_seconds = 0;
  for (int64_t begin = 0; begin < total; begin += options.batch) {
    const int64_t n = std::min(options.batch, total - begin);
    auto t0 = Clock::now();
    Status filled = fill_batch(data, begin, n, preprocess, &input);
    if (!filled.ok()) return fail(filled);
    auto t1 = Clock::now();
    auto output = session.value()->run(input);
    if (!output.ok()) return fail(output.status());
    auto t2 = Clock::now();
    preprocess_seconds += std::chrono::duration<double>(t1 - t0).count();
    inference_seconds += std::chrono::duration<double>(t2 - t1).count();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t predicted = argmax(output.value().data() + i * classes, classes);
      predictions.push_back(static_cast<uint8_t>(std::min<int64_t>(predicted, 255)));
      ++confusion[data.labels[begin + i]][predicted];
    }
    progress.update(begin + n);
  }
  progress.finish();

  std::printf("%s on %s %s: %lld images\n", model->name().c_str(), args.dataset.c_str(), args.split.c_str(),
              static_cast<long long>(total));
  print_summary(confusion, chosen_labels(*model, args.labels, flag_labels.value(), classes), total);
  if (!args.predictions.empty()) {
    Status written =
        detail::write_output_file(args.predictions, predictions_kind(classes), predictions.data(), predictions.size());
    if (!written.ok()) return fail(written);
  }
  const double seconds = preprocess_seconds + inference_seconds;
  const std::string split = batch_runs_note(session.value()->memory_report(), options.batch);
  std::fprintf(stderr, "model %s (%s), device %s, conv %s, threads %d, batch %lld%s\n", model->name().c_str(),
               model->weights_source().c_str(), session.value()->device().c_str(), options.conv_algorithm.c_str(),
               args.threads, static_cast<long long>(options.batch), split.c_str());
  std::fprintf(stderr, "%lld images in %.3f s: %.0f images/s (preprocess %.3f s, inference %.3f s: %.0f images/s)\n",
               static_cast<long long>(total), seconds, double(total) / seconds, preprocess_seconds, inference_seconds,
               double(total) / inference_seconds);
  return 0;
}

}  // namespace winfer::cli
