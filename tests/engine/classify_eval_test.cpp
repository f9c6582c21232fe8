// `winfer eval` on Fashion-MNIST: for every shipped model, the whole test split gives PyTorch's
// predictions (recorded by models/fashion/train.py), prediction by prediction. Skipped (with a
// message) where Debian's dataset-fashion-mnist package is not installed.
#include <filesystem>
#include <regex>

#include "engine/classify_test_util.h"
#include "winfer/idx_dataset.h"

using namespace winfer_test;

namespace {

// Float rounding may flip an argmax whose two largest logits are nearly equal; no more than this
// many of the 10,000 test predictions may differ from PyTorch's.
constexpr int kMaxDifferingPredictions = 3;

// Under a sanitizer (8-10x slower) the first 1,000 images are enough to exercise eval's code under
// instrumentation; the uninstrumented build checks all 10,000 and the accuracy.
#if defined(WINFER_TEST_SANITIZED)
constexpr int kImages = 1000;
#else
constexpr int kImages = 10000;
#endif

bool dataset_installed() {
  std::error_code ec;
  return std::filesystem::exists(std::string(winfer::kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz", ec);
}

// "accuracy 92.53% (9253/10000)" -> 9253, or -1.
int64_t correct_count(const std::string& stdout_text) {
  std::smatch m;
  static const std::regex pattern(R"(accuracy [0-9.]+% \(([0-9]+)/([0-9]+)\))");
  return std::regex_search(stdout_text, m, pattern) ? std::stoll(m[1]) : -1;
}

}  // namespace

TEST_CASE("eval: every shipped model reproduces PyTorch's test predictions and accuracy") {
  if (!dataset_installed()) {
    MESSAGE(kSkipMarker << ": Fashion-MNIST is not installed (" << winfer::kFashionMnistDir
                        << "); scripts/setup.sh installs dataset-fashion-mnist");
    return;
  }
  auto test = winfer::load_mnist_split(winfer::kFashionMnistDir, "test");
  REQUIRE_MESSAGE(test.ok(), test.status().message());
  REQUIRE(test.value().count == 10000);
  for (const std::string& model : kFashionModels) {
    TempDir dir;
    const std::string predictions = dir.file("predictions.bin");
    const CommandResult r = run_cli("eval " + repo_path("models/fashion/" + model + ".yaml") +
                                    " --dataset fashion-mnist --threads 1 --limit " + std::to_string(kImages) +
                                    " --predictions " + predictions);
    INFO(model << "\n" << r.stdout_text << r.stderr_text);
    REQUIRE(r.exit_code == 0);
    const std::string ours = read_bytes(predictions);
    const std::string torch = read_bytes(repo_path("models/fashion/" + model + ".test_predictions"));
    REQUIRE(ours.size() == static_cast<size_t>(kImages));
    REQUIRE(torch.size() == 10000);
    int differing = 0;
    int64_t torch_correct = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
      differing += ours[i] != torch[i];
      torch_correct += static_cast<uint8_t>(torch[i]) == test.value().labels[i];
    }
    const int64_t engine_correct = correct_count(r.stdout_text);
    const size_t timing = r.stderr_text.rfind(std::to_string(kImages) + " images");
    MESSAGE(model << ": accuracy winfer " << engine_correct * 100.0 / kImages << "%, PyTorch "
                  << torch_correct * 100.0 / kImages << "%, " << differing << " of " << kImages
                  << " predictions differ; "
                  << (timing == std::string::npos ? std::string() : r.stderr_text.substr(timing)));
    CHECK(differing <= kMaxDifferingPredictions);
    CHECK(std::abs(engine_correct - torch_correct) <= differing);
    CHECK(engine_correct >= kImages * 9 / 10);  // the models are shipped because they reach 90%
    CHECK(contains(r.stdout_text, "per class:"));
    CHECK(contains(r.stdout_text, "most confused (true -> predicted):"));
  }
}

TEST_CASE("eval: --limit, --split train and the confusion summary") {
  if (!dataset_installed()) {
    MESSAGE(kSkipMarker << ": Fashion-MNIST is not installed (" << winfer::kFashionMnistDir << ")");
    return;
  }
  const CommandResult r =
      run_cli("eval " + repo_path("models/fashion/fashion_resnet.yaml") + " --split train --limit 300 --batch 64");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "fashion-mnist train: 300 images"));
  CHECK(contains(r.stdout_text, "/300)"));
  CHECK(contains(r.stdout_text, "Ankle boot"));
  CHECK(contains(r.stderr_text, "images/s"));
}

TEST_CASE("eval: the batch in runs side by side by default, --images-per-run 0 at once, the same predictions") {
  if (!dataset_installed()) {
    MESSAGE(kSkipMarker << ": Fashion-MNIST is not installed (" << winfer::kFashionMnistDir << ")");
    return;
  }
  TempDir dir;
  const auto eval = [&](const std::string& flags, const std::string& predictions) {
    const CommandResult r =
        run_cli("eval " + repo_path("models/fashion/fashion_resnet.yaml") +
                " --limit 128 --batch 64 --threads 2 --predictions " + dir.file(predictions) + flags);
    INFO(r.stderr_text);
    REQUIRE(r.exit_code == 0);
    return r.stderr_text;
  };
  CHECK(contains(eval("", "runs.bin"), "threads 2, batch 64 (runs of 2, 2 side by side)"));
  const std::string at_once = eval(" --images-per-run 0", "whole.bin");
  CHECK(contains(at_once, "threads 2, batch 64\n"));
  CHECK(read_bytes(dir.file("runs.bin")) == read_bytes(dir.file("whole.bin")));
}

TEST_CASE("eval: missing or broken dataset folders and unknown datasets are clear errors") {
  TempDir dir;
  const std::string model = repo_path("models/fashion/fashion_resnet.yaml");
  CommandResult r = run_cli("eval " + model + " --data " + dir.path());
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "t10k-images-idx3-ubyte"));
  CHECK(contains(r.stderr_text, "no such file"));

  write_bytes(dir.file("t10k-images-idx3-ubyte.gz"), "not gzip and not idx");
  r = run_cli("eval " + model + " --data " + dir.path());
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "t10k-images-idx3-ubyte.gz: not an IDX file"));

  r = run_cli("eval " + model + " --dataset cifar-10");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "unknown dataset"));
}

TEST_CASE("eval: a model of many classes costs memory by the images, not by the classes squared") {
  // The confusion matrix was classes x classes of int64: 2^16 classes (a flattened 256x256
  // input) made it 32 GiB. Now it holds the classes the images were predicted as.
  TempDir dir;
  const auto be32 = [](uint32_t v) {
    return std::string{char(v >> 24), char((v >> 16) & 0xFF), char((v >> 8) & 0xFF), char(v & 0xFF)};
  };
  std::string pixels(2 * 28 * 28, '\0');
  pixels[5] = char(200);  // image 0 (label 3): brightest near pixel 5; image 1 (label 9) all zero: argmax 0
  write_bytes(dir.file("t10k-images-idx3-ubyte"), be32(0x803) + be32(2) + be32(28) + be32(28) + pixels);
  write_bytes(dir.file("t10k-labels-idx1-ubyte"), be32(0x801) + be32(2) + std::string("\x03\x09", 2));
  write_bytes(dir.file("flat.yaml"),
              "format: winfer/1\ninput: {name: input, shape: [1, 1, 256, 256]}\n"
              "preprocess: {resize: 256, channel_order: GRAY}\nlayers:\n  - {name: flat, op: flatten}\n");
  const CommandResult r = run_cli("eval " + dir.file("flat.yaml") + " --data " + dir.path() + " --batch 2");
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.stdout_text, ": 2 images"));
  CHECK(contains(r.stdout_text, "accuracy 0.00% (0/2)"));
  CHECK(contains(r.stdout_text, "most confused (true -> predicted):"));
}
