// The op checker on the CPU (op_check.h, cases in op_cases.h): every registered op type against
// its float64 reference through the public API, convolutions with every selectable algorithm.
// The same cases run on CUDA in tests/engine_cuda/op_check_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "engine/cli_test_util.h"
#include "engine/op_cases.h"
#include "engine/op_check.h"

namespace winfer {
namespace op_check {
namespace {

// The built-in op types: those a fresh process knows, as `winfer info` lists them for a model
// with an unknown op. Not this process's list, which custom ops registered by other tests of
// this binary would lengthen (winfer/custom_op.h: registration is process-wide).
std::vector<std::string> builtin_op_types() {
  winfer_test::TempDir dir;
  const std::string path = dir.file("unknown_op.yaml");
  winfer_test::write_bytes(path, kUnknownOpModel);
  const winfer_test::CommandResult r = winfer_test::run_cli("info " + path);
  CHECK(r.exit_code == 1);
  INFO("winfer info: ", r.stderr_text);
  const std::vector<std::string> types = known_ops_in(r.stderr_text);
  REQUIRE(types.size() >= 16);  // the list was read at all (16 ops when this test was written)
  return types;
}

TEST_CASE("op check: every registered op type has a case and a reference") {
  const std::vector<std::string> types = builtin_op_types();
  std::set<std::string> with_cases;
  for (const OpCheck& c : all_op_cases()) with_cases.insert(c.type());
  for (const std::string& type : types) {
    CHECK_MESSAGE(with_cases.count(type) == 1, "op type '", type, "' has no case in tests/engine/op_cases.h");
    CHECK_MESSAGE(op_specs().count(type) == 1, "op type '", type, "' has no reference in tests/engine/op_check.h");
  }
  // And nothing is checked that the loader does not know (a renamed op would leave a stale case).
  for (const std::string& type : with_cases) CHECK_MESSAGE(std::count(types.begin(), types.end(), type) == 1, type);
}

TEST_CASE("op check: every case matches float64 on the CPU, convolutions with every algorithm") {
  const std::vector<std::string> algorithms = conv_algorithm_names("cpu");
  REQUIRE_FALSE(algorithms.empty());
  Sweep sweep;
  for (const OpCheck& c : all_op_cases()) {
    const PreparedCheck check(c);
    SessionOptions options;
    options.threads = 2;
    options.poison_unused_memory = true;
    for (const std::string& algorithm : Sweep::algorithms_for(check, algorithms)) {
      options.conv_algorithm = algorithm;
      sweep.check(check, check.run(options), algorithm, "on the CPU");
    }
    // Unplanned memory: every tensor its own allocation, no layer in place of its input.
    SessionOptions unplanned;
    unplanned.plan_memory = false;
    check.check(check.run(unplanned), "on the CPU, unplanned");
    sweep.count_run();
  }
  sweep.report("of " + std::to_string(all_op_cases().size()) + " cases on the CPU");
}

}  // namespace
}  // namespace op_check
}  // namespace winfer
