// Every zoo network at batch 3 gives the same bits on 2 and 3 cores (SessionOptions::threads) as
// on one, planned and poisoned. The parity tests run one core, so a kernel's split of the work
// between cores is checked here on every layer shape of the zoo: im2win once looped forever on
// squeeze-excite's 1x1 convolutions (a 1x1 map: fewer output rows than cores) at batch 8 on two
// cores, which no test had run. Small inputs (64x64; Inception v3 needs 75 at least: 96): the
// split depends on the shapes, and a 1x1 map still appears at the end of every network.
// (The case names say "cores", not the word that selects the TSan stage's tests: 34 whole
// networks under TSan would be most of that stage.)
#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include "engine/cli_test_util.h"  // WINFER_TEST_SANITIZED
#include "engine/model_test_util.h"

using namespace winfer_test;

namespace {

// The zoo YAML with the declared input shape replaced by 1x3xSIDExSIDE.
std::string zoo_yaml_with_side(const std::string& name, int64_t side) {
  const std::string yaml = read_bytes(repo_path("models/zoo/" + name + ".yaml"));
  static const std::regex declared(R"(shape: \[1, 3, [0-9]+, [0-9]+\])");
  REQUIRE(std::regex_search(yaml, declared));
  return std::regex_replace(yaml, declared, "shape: [1, 3, " + std::to_string(side) + ", " + std::to_string(side) + "]",
                            std::regex_constants::format_first_only);
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(repo_path("models/zoo"))) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void check_cores(const std::string& name) {
#if defined(WINFER_TEST_SANITIZED)
  // Under a sanitizer (5-8x slower) only networks with the layers the others lack: squeeze-excite
  // (MobileNetV3, EfficientNet, RegNetY), concats, grouped and depthwise convolutions.
  const std::set<std::string> sanitizer_set = {"mobilenet_v3_small", "efficientnet_b0",    "regnet_y_400mf",
                                               "squeezenet1_1",      "shufflenet_v2_x0_5", "googlenet"};
  if (sanitizer_set.count(name) == 0) return;
#endif
  const int64_t side = name == "inception_v3" ? 96 : 64;
  TempDir dir;
  winfer::LoadOptions load;
  load.random_weights_seed = 1;
  auto model = load_text(dir, zoo_yaml_with_side(name, side), load);
  REQUIRE_MESSAGE(model.ok(), model.status().message());
  const winfer::Tensor input = random_tensor(winfer::Shape{3, 3, side, side}, 23, winfer::Layout::kNCHW);
  std::vector<winfer::Tensor> outputs;
  for (int cores : {1, 2, 3}) {
    INFO(name << " at 3x3x" << side << "x" << side << " on " << cores << " cores");
    winfer::SessionOptions options;
    options.batch = 3;
    options.threads = cores;
    options.poison_unused_memory = true;
    auto session = winfer::Session::create(model.value(), options);
    REQUIRE_MESSAGE(session.ok(), session.status().message());
    auto out = session.value()->run(input);
    REQUIRE_MESSAGE(out.ok(), out.status().message());
    outputs.push_back(std::move(out.value()));
    if (cores > 1) CHECK(same_bits(outputs.back(), outputs.front()));
  }
}

}  // namespace

TEST_CASE("slow: zoo on 1, 2 and 3 cores: every network at batch 3 gives the same bits") {
  const std::vector<std::string> names = zoo_names();
  CHECK(names.size() >= 34);
  for (const std::string& name : names) {
    if (name.rfind("vgg", 0) == 0 || name.rfind("resnet1", 0) == 0 || name == "wide_resnet50_2") continue;
    check_cores(name);
  }
}

// The heavy ones (weights of 100-550 MB, made at random for each) in a case of their own, which
// ctest runs beside the other; VGG-11-BN and VGG-19-BN stand for the VGG family.
TEST_CASE("slow: zoo on 1, 2 and 3 cores: VGG, ResNet-101/152 and Wide ResNet at batch 3 give the same bits") {
#if !defined(WINFER_TEST_SANITIZED)
  for (const char* name : {"vgg11_bn", "vgg19_bn", "resnet101", "resnet152", "wide_resnet50_2"}) check_cores(name);
#endif
}
