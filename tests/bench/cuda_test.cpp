// winfer bench --layers SET --device cuda (bench/cuda/): without a CUDA device (or without the
// CUDA backend) a clear "no CUDA device: <reason>" and exit status 1; with one, the side-by-side
// table. Whichever this machine is, the test checks that branch: it skips nothing.

#include <string>

#include "bench/cuda/cuda_bench.h"
#include "bench/layer_set.h"
#include "engine/cli_test_util.h"
#include "engine/model_test_util.h"

using namespace winfer_test;

TEST_CASE("bench cuda: the layer bench runs on the device or says there is no CUDA device") {
  auto set = winfer::bench::load_layer_set("paper12");
  REQUIRE(set.ok());
  REQUIRE(set.value().layers.size() == 12);
  // conv12 (C512 7x7 -> Co512 5x5, k3) at batch 2: small enough for a CPU reference in a test.
  auto& layers = set.value().layers;
  layers.erase(layers.begin(), layers.end() - 1);
  REQUIRE(layers.front().name == "conv12");
  winfer::bench::set_batch(&set.value(), 2);
  winfer::bench::CudaBenchOptions options;
  options.convs = {"im2win", "direct"};
  options.runs = 3;
  options.min_seconds = 0;
  options.warmup_seconds = 0;
  auto report = winfer::bench::run_cuda_bench(set.value(), options);
  if (!report.ok()) {
    INFO(report.status().message());
    CHECK(report.status().message().rfind("no CUDA device: ", 0) == 0);
    CHECK(report.status().message().size() > std::string("no CUDA device: ").size());  // a reason follows
  } else {
    const winfer::bench::CudaBenchReport& r = report.value();
    CHECK(r.peak_tflops > 0);
    REQUIRE(r.rows.size() == 2);
    for (const auto& row : r.rows) {
      INFO(row.conv);
      CHECK(row.timing.runs >= 3);
      CHECK(row.timing.median_ms > 0);
      CHECK(row.max_rel_error.has_value());
      CHECK_FALSE(row.mismatch);
      CHECK(row.device_bytes >= row.workspace_bytes + row.packed_weight_bytes);
    }
    const std::string table = winfer::bench::cuda_report_table(r);
    CHECK(table.find("conv12") != std::string::npos);
    CHECK(table.find("im2win vs direct") != std::string::npos);
  }
}

TEST_CASE("bench cuda: winfer bench --device cuda --layers paper12 exits 1 with the reason when there is no device") {
  const CommandResult r =
      run_cli("bench --device cuda --layers paper12 --filter conv12 --batch 1 --runs 2 --conv im2win");
  INFO("stdout: ", r.stdout_text, "\nstderr: ", r.stderr_text);
  // The CLI opens the bench's CUDA module (libwinfer_bench_cuda.so) for this: it must load.
  CHECK(r.stderr_text.find("could not be loaded") == std::string::npos);
  if (r.stderr_text.find("no CUDA device: ") != std::string::npos) {
    CHECK(r.exit_code == 1);
    CHECK(r.stdout_text.empty());
  } else {
    CHECK(r.exit_code == 0);  // a GPU machine: the table
    CHECK(r.stdout_text.find("conv12") != std::string::npos);
    CHECK(r.stdout_text.find("im2win") != std::string::npos);
  }
  // A layer-mode device that is not cpu or cuda[:N] is an error on every machine.
  const CommandResult bad = run_cli("bench --device tpu --layers paper12 --filter conv12 --batch 1");
  CHECK(bad.exit_code == 1);
}

TEST_CASE("bench cuda: the report's table, summary and JSON from known rows") {
  winfer::bench::CudaBenchReport r;
  r.layer_set = "paper12";
  r.batch = 128;
  r.device_name = "Test GPU";
  r.sms = 132;
  r.cc_major = 9;
  r.fp32_lanes_per_sm = 128;
  r.clock_mhz = 1980;
  r.peak_tflops = 66.9;
  r.cpu_reference = "im2win";
  auto row = [](const std::string& layer, const std::string& conv, double ms, size_t ws, size_t total) {
    winfer::bench::CudaBenchRow x;
    x.layer = layer;
    x.conv = conv;
    x.params.batch = 128;
    x.params.in_channels = 64;
    x.params.in_h = x.params.in_w = 56;
    x.params.out_channels = 64;
    x.params.kernel_h = x.params.kernel_w = 3;
    x.flops = x.params.flops();
    x.timing.median_ms = x.timing.min_ms = x.timing.max_ms = ms;
    x.timing.runs = 20;
    x.tflops = static_cast<double>(x.flops) / (ms * 1e-3) / 1e12;
    x.percent_peak = 100 * x.tflops / 66.9;
    x.workspace_bytes = ws;
    x.device_bytes = total;
    x.max_rel_error = 1e-6;
    return x;
  };
  // im2win: 2x faster than cudnn on layer a, 0.5x on layer b (geomean 1.0x, 1 win of 2);
  // workspace 0.25x and 0.4x im2col's; total memory below cudnn's on a only.
  r.rows = {row("a", "im2win", 1.0, 100, 1000), row("a", "im2col", 4.0, 400, 1300), row("a", "cudnn", 2.0, 0, 1100),
            row("b", "im2win", 2.0, 40, 900),   row("b", "im2col", 8.0, 100, 960),  row("b", "cudnn", 1.0, 0, 800)};
  const std::string table = winfer::bench::cuda_report_table(r);
  INFO(table);
  CHECK(table.find("Test GPU") != std::string::npos);
  CHECK(table.find("im2win vs cudnn: faster on 1 of 2 layers, geometric mean speed-up 1.00x") != std::string::npos);
  CHECK(table.find("im2win vs im2col: faster on 2 of 2 layers, geometric mean speed-up 4.00x") != std::string::npos);
  CHECK(table.find("im2win workspace / im2col's: at most 0.40 over 2 layers") != std::string::npos);
  CHECK(table.find("im2win total layer memory below cudnn's on 1 of 2 layers") != std::string::npos);
  const std::string json = winfer::bench::cuda_report_json(r);
  CHECK(json.find("\"geomean_speedup\": 4.0") != std::string::npos);
  CHECK(json.find("\"wins\": 1") != std::string::npos);
  CHECK(json.find("\"median_ms\": 2.0") != std::string::npos);
}
