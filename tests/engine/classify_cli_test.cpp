// `winfer classify` end to end: the shipped Fashion-MNIST models on their example images, the
// output formats, batches, and what happens with bad files and unsupported requests.
#include <fstream>
#include <map>
#include <sstream>

#include "engine/classify_test_util.h"
#include "engine/src/device_backend.h"
#include "engine/src/session_impl.h"

using namespace winfer_test;

namespace {

struct Example {
  std::string file;
  int64_t test_index = 0;
  std::string label;
};

// models/fashion/examples/examples.tsv: file, index in the test split, true label.
std::vector<Example> examples() {
  std::ifstream in(repo_path("models/fashion/examples/examples.tsv"));
  std::vector<Example> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Example e;
    std::string index;
    std::getline(fields, e.file, '\t');
    std::getline(fields, index, '\t');
    std::getline(fields, e.label);
    e.test_index = std::stoll(index);
    out.push_back(e);
  }
  return out;
}

// "path\n 1  0.9942  Ankle boot\n" blocks of `classify --top 1` -> path: top-1 label.
std::map<std::string, std::string> top1_labels(const std::string& stdout_text) {
  std::map<std::string, std::string> result;
  std::istringstream in(stdout_text);
  std::string path, line;
  while (std::getline(in, path) && std::getline(in, line)) {
    const size_t label_at = line.find("  ", line.find('.'));  // after the probability
    result[path] = label_at == std::string::npos ? "" : line.substr(label_at + 2);
  }
  return result;
}

std::string copy_into(const TempDir& dir, const std::string& from, const std::string& name) {
  const std::string path = dir.file(name);
  write_bytes(path, read_bytes(from));
  return path;
}

}  // namespace

TEST_CASE("classify: the shipped models give PyTorch's prediction for every example image") {
  const std::vector<Example> all = examples();
  REQUIRE(all.size() == 10);
  const std::vector<std::string> labels = fashion_labels();
  for (const std::string& model : kFashionModels) {
    const std::string predictions = read_bytes(repo_path("models/fashion/" + model + ".test_predictions"));
    REQUIRE(predictions.size() == 10000);
    const CommandResult r = run_cli("classify " + repo_path("models/fashion/" + model + ".yaml") + " " +
                                    repo_path("models/fashion/examples") + " --top 1");
    INFO(model << "\n" << r.stderr_text);
    REQUIRE(r.exit_code == 0);
    const auto got = top1_labels(r.stdout_text);
    int correct = 0;
    for (const Example& e : all) {
      const std::string path = repo_path("models/fashion/examples/" + e.file);
      INFO(e.file);
      REQUIRE(got.count(path) == 1);
      CHECK(got.at(path) == labels.at(static_cast<uint8_t>(predictions[static_cast<size_t>(e.test_index)])));
      correct += got.at(path) == e.label;
    }
    MESSAGE(model << ": " << correct << " of 10 example images classified correctly");
  }
}

TEST_CASE("classify: top-5 text, JSON, and the same results for any batch size") {
  const std::string model = repo_path("models/fashion/fashion_resnet.yaml");
  const std::string examples_dir = repo_path("models/fashion/examples");
  const CommandResult text = run_cli("classify " + model + " " + examples_dir + "/sneaker.png");
  INFO(text.stderr_text);
  REQUIRE(text.exit_code == 0);
  CHECK(contains(text.stdout_text, "sneaker.png\n 1  "));
  CHECK(contains(text.stdout_text, "\n 5  0."));
  CHECK(contains(text.stderr_text, "images/s"));

  const CommandResult json = run_cli("classify " + model + " " + examples_dir + "/bag.png --top 2 --json");
  REQUIRE(json.exit_code == 0);
  CHECK(contains(json.stdout_text, "\"rank\": 1, \"class\": 8, \"label\": \"Bag\", \"probability\": 0."));
  CHECK(contains(json.stdout_text, "\"rank\": 2"));
  CHECK(contains(json.stdout_text, "\"failed\": 0}"));

  const CommandResult one = run_cli("classify " + model + " " + examples_dir + " --batch 1 --top 3");
  const CommandResult three = run_cli("classify " + model + " " + examples_dir + " --batch 3 --top 3 --threads 2");
  const CommandResult all = run_cli("classify " + model + " " + examples_dir + " --batch 10 --top 3 --conv direct");
  // Batch 4 on 2 threads: the engine's default runs of 2 images side by side, said in the summary.
  const CommandResult runs = run_cli("classify " + model + " " + examples_dir + " --batch 4 --top 3 --threads 2");
  REQUIRE(one.exit_code == 0);
  CHECK(one.stdout_text == three.stdout_text);
  CHECK(one.stdout_text == all.stdout_text);
  CHECK(one.stdout_text == runs.stdout_text);
  CHECK(contains(runs.stderr_text, "threads 2, batch 4 (runs of 2, 2 side by side); load"));
  CHECK(contains(three.stderr_text, "threads 2, batch 3; load"));
}

TEST_CASE("classify: a color photo of another size is converted to the model's 28x28 gray input") {
  const CommandResult r = run_cli("classify " + repo_path("models/fashion/fashion_vgg.yaml") + " " +
                                  repo_path("tests/fixtures/images/rgb_240x160.png") + " " +
                                  repo_path("tests/fixtures/images/photo_64x48.jpg") + " " +
                                  repo_path("tests/fixtures/images/one_pixel.png"));
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "photo_64x48.jpg\n 1  "));
  CHECK(contains(r.stdout_text, "one_pixel.png\n 1  "));
}

TEST_CASE("classify: broken files are reported by name and skipped, and the others still run") {
  TempDir dir;
  copy_into(dir, repo_path("models/fashion/examples/bag.png"), "a_bag.png");
  copy_into(dir, repo_path("models/fashion/examples/coat.png"), "e_coat.png");
  write_bytes(dir.file("b_empty.png"), "");
  const std::string png = read_bytes(repo_path("tests/fixtures/images/rgb_97x61.png"));
  write_bytes(dir.file("c_truncated.png"), png.substr(0, png.size() / 2));
  write_bytes(dir.file("d_text.jpg"), "this is not a JPEG\n");
  write_bytes(dir.file("notes.txt"), "not an image extension: skipped quietly\n");
  const std::string huge = dir.file("f_huge.pgm");
  write_bytes(huge, "P5\n10000 10000\n255\n");

  const CommandResult r = run_cli("classify " + repo_path("models/fashion/fashion_shufflenet.yaml") + " " + dir.path() +
                                  " " + dir.file("missing.png") + " --top 1 --batch 2");
  INFO(r.stdout_text << "\n" << r.stderr_text);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stdout_text, "a_bag.png\n 1  "));
  CHECK(contains(r.stdout_text, "e_coat.png\n 1  "));
  CHECK(contains(r.stderr_text, "b_empty.png: the file is empty"));
  CHECK(contains(r.stderr_text, "c_truncated.png: corrupt PNG"));
  CHECK(contains(r.stderr_text, "d_text.jpg: not an image"));
  CHECK(contains(r.stderr_text, "f_huge.pgm: the image is 10000x10000 pixels"));
  CHECK(contains(r.stderr_text, "missing.png' does not exist"));
  CHECK(contains(r.stderr_text, "skipped 1 file(s) without an image extension"));
  CHECK(contains(r.stderr_text, "classified 2 of 7 image(s)"));
  CHECK(contains(r.stderr_text, "5 image(s) could not be classified"));

  const CommandResult json = run_cli("classify " + repo_path("models/fashion/fashion_resnet.yaml") + " " +
                                     dir.file("b_empty.png") + " " + dir.file("a_bag.png") + " --json");
  CHECK(json.exit_code == 1);
  CHECK(contains(json.stdout_text, "b_empty.png\", \"error\": "));
  CHECK(contains(json.stdout_text, "\"failed\": 1}"));
}

TEST_CASE("classify: requests it cannot serve fail with a clear message") {
  const std::string model = repo_path("models/fashion/fashion_resnet.yaml");
  const std::string image = repo_path("models/fashion/examples/bag.png");
  CommandResult r;
  if (winfer::cuda_backend().availability().count == 0) {
    r = run_cli("classify " + model + " " + image + " --device cuda");
    CHECK(r.exit_code == 1);
    CHECK(contains(r.stderr_text, "no CUDA device"));
    CHECK(r.stdout_text.empty());
  }

  r = run_cli("classify " + model + " " + image + " --device tpu");
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "unknown device"));

  // tiny_inline has no preprocess block: its input is 1x6x6 gray, so a 28x28 image does not fit.
  r = run_cli("classify " + repo_path("models/examples/tiny_inline.yaml") + " " + image);
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "bag.png: after preprocessing"));
  CHECK(contains(r.stderr_text, "expects 6x6"));

  TempDir empty;
  r = run_cli("classify " + model + " " + empty.path());
  CHECK(r.exit_code == 1);
  CHECK(contains(r.stderr_text, "no image files"));
}

TEST_CASE("classify: --batch larger than the images sizes the session for the images there are") {
  // Once: a session (and an input) of 65536 slots for one image, gigabytes for nothing.
  const CommandResult r = run_cli("classify " + repo_path("models/fashion/fashion_resnet.yaml") + " " +
                                  repo_path("models/fashion/examples/sneaker.png") + " --batch 65536 --top 1");
  INFO(r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.stdout_text, "Sneaker"));
  CHECK(contains(r.stderr_text, "batch 1;"));
}
