// `winfer bench MODEL...|--zoo`: whole networks, each (model, conv) measured in a forked child
// process of its own: load with random weights (a quantized model with its own), create the session (init), one first
// run, then at least --runs timed runs (more until --min-time seconds are covered), the per-layer times, and the growth
// of the process's peak resident set over what it was before loading, next to what the memory plan predicts. Table on
// stdout (or one JSON object per line with --json), progress on stderr. The parent process runs no kernel: it forks,
// collects and prints.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/winfer/bench_model.h"
#include "apps/winfer/format.h"
#include "apps/winfer/input_size.h"
#include "apps/winfer/process_memory.h"
#include "bench/bench.h"  // engine_isa()
#include "bench/stats.h"
#include "kernels/cpu/fma_probe.h"
#include "kernels/cpu/gemm.h"
#include "winfer/model.h"

#ifndef WINFER_SOURCE_DIR
#define WINFER_SOURCE_DIR ""
#endif
#ifndef WINFER_BUILD_TYPE
#define WINFER_BUILD_TYPE "unknown"
#endif

namespace winfer::cli {

using Json = nlohmann::ordered_json;

const std::vector<std::string>& bench_zoo_models() {
  static const std::vector<std::string> zoo = {"resnet18", "resnet50", "vgg16", "shufflenet_v2_x1_0"};
  return zoo;
}

Result<std::string> resolve_model_path(const std::string& name) {
  auto exists = [](const std::string& p) { return !p.empty() && ::access(p.c_str(), R_OK) == 0; };
  // A path that is there in any form (a FIFO, a folder, a symlink loop) is the user's: loading
  // it says what is wrong with it, rather than "no such file".
  struct stat st {};
  if (!name.empty() && ::lstat(name.c_str(), &st) == 0) return name;
  const bool has_ext = name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0;
  const std::string file = has_ext ? name : name + ".yaml";
  if (name.find('/') == std::string::npos) {
    for (const std::string& dir : {std::string("models/zoo/"), std::string(WINFER_SOURCE_DIR) + "/models/zoo/"}) {
      if (exists(dir + file)) return dir + file;
    }
  }
  return not_found("model '" + name + "': no such file, and no models/zoo/" + file +
                   " (zoo: resnet18, resnet50, vgg16, shufflenet_v2_x1_0, ...)");
}

// ---- the device ------------------------------------------------------------------------------

Status apply_device(const std::string& device, SessionOptions* options) {
  const bool cuda_n = device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
                      device.find_first_not_of("0123456789", 5) == std::string::npos;
  if (device != "cpu" && device != "cuda" && device != "auto" && !cuda_n) {
    return invalid_argument("--device '" + device + "': expected cpu, cuda, cuda:N or auto");
  }
  // The session itself accepts or refuses the device (e.g. no CUDA backend in this build, no
  // GPU): its error reaches the user unchanged.
  options->device = device;
  return Status::Ok();
}

namespace {

// ---- configuration ---------------------------------------------------------------------------

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// The commit the source tree is at, read from .git without running git ("unknown" without it).
std::string git_commit() {
  const std::string git = std::string(WINFER_SOURCE_DIR) + "/.git";
  std::string head = read_first_line(git + "/HEAD");
  if (head.rfind("ref: ", 0) == 0) {
    const std::string ref = head.substr(5);
    std::string hash = read_first_line(git + "/" + ref);
    if (hash.empty()) {  // packed refs: "<hash> <ref>" lines
      std::ifstream packed(git + "/packed-refs");
      for (std::string line; std::getline(packed, line);) {
        if (line.size() > 41 && line.compare(41, std::string::npos, ref) == 0) hash = line.substr(0, 40);
      }
    }
    head = hash;
  }
  return head.size() >= 12 ? head.substr(0, 12) : "unknown";
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

std::string now_utc() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double load_average() {
  double load[1];
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

// What describes the machine and build, measured by a child (the GEMM library is loaded there).
Json config_json(const BenchArgs& args) {
  const std::string gemm = gemm_backend_description();
  Json c;
  c["threads"] = args.threads;
  c["isa"] = bench::engine_isa();
  c["build_type"] = WINFER_BUILD_TYPE;
  c["git_commit"] = git_commit();
  c["gemm"] = gemm;
  c["openblas_coretype"] = env_or("OPENBLAS_CORETYPE", "");
  c["omp_wait_policy"] = env_or("OMP_WAIT_POLICY", "");
  c["started_at"] = now_utc();
  c["load_average"] = load_average();
  return c;
}

// ---- one measurement (in the child) ------------------------------------------------------------

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// What the timed runs gave: the first (cold) run, every later one, and each layer's times.
struct RunTimes {
  double first_ms = 0;
  std::vector<double> times;
  std::vector<std::vector<double>> layer_times;  // per layer, per run
};

// One cold run, then at least args.runs runs and args.min_time seconds of them (1000 at most).
Status time_runs(const BenchArgs& args, Session& session, const Tensor& input, std::vector<Tensor>* outputs,
                 RunTimes* t) {
  t->layer_times.resize(session.last_timings().size());
  auto t0 = Clock::now();
  WINFER_RETURN_IF_ERROR(session.run_into(input, outputs));
  t->first_ms = ms_since(t0);
  const auto start = Clock::now();
  while (bench::more_runs(t->times.size(), args.runs, ms_since(start), args.min_time)) {
    t0 = Clock::now();
    const Status run = session.run_into(input, outputs);
    const double ms = ms_since(t0);
    if (!run.ok()) return run;
    t->times.push_back(ms);
    const auto& lt = session.last_timings();
    for (size_t i = 0; i < lt.size() && i < t->layer_times.size(); ++i) t->layer_times[i].push_back(lt[i].milliseconds);
  }
  return Status::Ok();
}

// The time and throughput fields: setup, first run, the distribution of the timed runs.
void add_times(const RunTimes& t, double load_ms, double create_ms, double flops, Json* r) {
  const bench::Timing s = bench::summarize(t.times);
  (*r)["init_ms"] = load_ms + create_ms;
  (*r)["load_ms"] = load_ms;
  (*r)["session_create_ms"] = create_ms;
  (*r)["first_ms"] = t.first_ms;
  (*r)["median_ms"] = s.median_ms;
  (*r)["min_ms"] = s.min_ms;
  (*r)["p95_ms"] = bench::percentile(t.times, 95);
  (*r)["max_ms"] = s.max_ms;
  (*r)["runs"] = t.times.size();
  (*r)["gflop"] = flops / 1e9;
  (*r)["gflops"] = flops / (s.median_ms * 1e6);
}

// The memory fields: what the session planned, what was expected resident, and (where the
// process can tell) the peak it measured above the baseline taken before loading.
void add_memory(const MemoryReport& mem, size_t io_bytes, size_t expected, const std::optional<size_t>& baseline,
                const std::optional<size_t>& peak, Json* r) {
  (*r)["planned_bytes"] = mem.packed_weights_bytes + mem.arena_bytes;
  (*r)["weights_bytes"] = mem.weights_bytes;
  (*r)["packed_weights_bytes"] = mem.packed_weights_bytes;
  (*r)["session_weights_bytes"] = mem.session_weights_bytes;
  (*r)["arena_bytes"] = mem.arena_bytes;
  (*r)["activations_lower_bound_bytes"] = mem.activations_lower_bound_bytes;
  (*r)["max_workspace_bytes"] = mem.max_workspace_bytes;
  (*r)["io_bytes"] = io_bytes;
  (*r)["expected_resident_bytes"] = expected;
  if (baseline && peak) {
    const size_t measured = *peak - std::min(*peak, *baseline);
    (*r)["measured_peak_bytes"] = measured;
    (*r)["beyond_weights_bytes"] = static_cast<int64_t>(measured) - static_cast<int64_t>(mem.weights_bytes);
    (*r)["measured_over_expected"] = double(measured) / double(expected);
  } else {
    (*r)["measured_peak_bytes"] = nullptr;
  }
}

// Per-layer medians (with --per-layer) and the count of convolutions that ran another kernel than
// the requested one (fallbacks; depthwise layers are not counted): each shows in `kernel`.
// `scale`: the session's input elements over the model's declared input's (batch and image size).
void add_layers(const BenchArgs& args, const Model& m, const Session& session, const RunTimes& t, double scale,
                const std::string& conv, Json* r) {
  std::map<std::string, int64_t> layer_flops;
  for (const LayerInfo& l : m.layers()) layer_flops[l.name] = l.flops;
  int fallbacks = 0;
  Json layers = Json::array();
  const auto& lt = session.last_timings();
  for (size_t i = 0; i < lt.size(); ++i) {
    const double lm = bench::median(t.layer_times[i]);
    const double lf = double(layer_flops.count(lt[i].name) ? layer_flops[lt[i].name] : 0) * scale;
    if (lt[i].type == "conv2d" && lt[i].kernel.rfind("depthwise", 0) != 0 && lt[i].kernel.rfind(conv, 0) != 0)
      ++fallbacks;
    if (!args.per_layer) continue;
    layers.push_back(Json{{"name", lt[i].name},
                          {"type", lt[i].type},
                          {"kernel", lt[i].kernel},
                          {"median_ms", lm},
                          {"flops", lf},
                          {"gflops", lm > 0 ? lf / (lm * 1e6) : 0.0}});
  }
  (*r)["fallback_layers"] = fallbacks;
  if (args.per_layer) {
    (*r)["peak_gflops"] = fma_peak_gflops(args.threads);
    (*r)["layers"] = layers;
  }
}

// The same load, session and one run measured again in this process, warm (what the first run
// paid once for the process is then in the baseline: process_memory.h). The caller has freed
// its model and session first.
void add_warm_memory(const std::string& path, const LoadOptions& load, const SessionOptions& options, size_t expected,
                     Json* r) {
  const std::optional<size_t> warm = warm_peak_growth([&] {
    auto again = Model::load(path, load);
    if (!again.ok()) return false;
    auto session_again = Session::create(again.value(), options);
    if (!session_again.ok()) return false;
    std::vector<Tensor> out;  // a new input too: `expected` counts one
    const Result<Tensor> input_again = random_tensor(session_again.value()->input_shape(), 0);
    return input_again.ok() && session_again.value()->run_into(input_again.value(), &out).ok();
  });
  if (warm) {
    (*r)["measured_warm_bytes"] = *warm;
    (*r)["warm_over_expected"] = double(*warm) / double(expected);
  } else {
    (*r)["measured_warm_bytes"] = nullptr;
  }
}

// One (model, conv) measurement: load and session creation timed, then the runs, memory and
// layers; any failure becomes the result's "error", after the fields known by then.
Json measure(const BenchArgs& args, const std::string& model_arg, const std::string& conv) {
  Json r;
  const std::optional<size_t> baseline = peak_resident_bytes();
  r["model"] = model_arg;
  r["device"] = args.device;
  r["conv"] = conv;
  r["threads"] = args.threads;
  r["batch"] = args.batch;
  auto fail_with = [&](const std::string& message) {
    r["error"] = message;
    return r;
  };
  auto path = resolve_model_path(model_arg);
  if (!path.ok()) return fail_with(path.status().message());
  r["path"] = path.value();

  LoadOptions load;
  load.random_weights_seed = args.seed;
  load.pack_for = pack_for(args.device, conv);
  auto t0 = Clock::now();
  auto model = Model::load(path.value(), load);
  if (model.ok() && model.value()->quantized()) {
    // A quantized model's INT8 layers run on the INT8 kernels only with the file's s8 weights
    // (random ones run them simulated): load it again with them, and time that load.
    load.random_weights_seed.reset();
    t0 = Clock::now();
    model = Model::load(path.value(), load);
  }
  if (!model.ok()) return fail_with(model.status().message());
  const double load_ms = ms_since(t0);
  const Model& m = *model.value();
  r["model"] = m.name();
  auto input_shape = input_shape_for(m, args.batch, args.size);
  if (!input_shape.ok()) return fail_with(input_shape.status().message());
  r["batch"] = input_shape.value().empty() ? m.input_shape().n() : input_shape.value()[0];

  SessionOptions options;
  options.conv_algorithm = conv;
  if (conv == "auto") options.autotune_cache = args.autotune_cache;
  options.threads = args.threads;
  options.concat_alias = args.concat_alias;
  options.images_per_run = args.images_per_run;
  options.input_shape = input_shape.value();
  const Status device = apply_device(args.device, &options);
  if (!device.ok()) return fail_with(device.message());
  t0 = Clock::now();
  auto created = Session::create(model.value(), options);
  if (!created.ok()) return fail_with(created.status().message());
  Session& session = *created.value();
  const double create_ms = ms_since(t0);
  r["device"] = session.device();  // where it runs ("auto" resolved)
  r["device_requested"] = args.device;
  r["input_shape"] = session.input_shape().dims();

  const Result<Tensor> random_input = random_tensor(session.input_shape(), 0);
  if (!random_input.ok()) return fail_with(random_input.status().message());
  const Tensor& input = random_input.value();
  std::vector<Tensor> outputs;
  RunTimes times;
  const Status run = time_runs(args, session, input, &outputs, &times);
  if (!run.ok()) return fail_with(run.message());
  const std::optional<size_t> peak = peak_resident_bytes();

  const MemoryReport& mem = session.memory_report();
  const double flops = flops_at(m, session.input_shape());
  size_t io_bytes = size_t(input.numel()) * sizeof(float);
  for (const Tensor& t : outputs) io_bytes += size_t(t.numel()) * sizeof(float);
  const size_t expected = mem.weights_bytes + mem.session_weights_bytes + mem.arena_bytes + io_bytes;
  add_times(times, load_ms, create_ms, flops, &r);
  add_memory(mem, io_bytes, expected, baseline, peak, &r);
  r["config"] = config_json(args);  // its load_average: at the end of the timed runs
  add_layers(args, m, session, times, flops_at(m, session.input_shape()) / std::max(1.0, double(m.total_flops())), conv,
             &r);

  if (baseline && peak) {
    outputs.clear();
    created.value().reset();
    model.value().reset();
    add_warm_memory(path.value(), load, options, expected, &r);
  }
  return r;
}

// ---- output ----------------------------------------------------------------------------------

std::string mib(const Json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v.get<double>() / double(1 << 20));
  return buf;
}

void print_config(const Json& c) {
  std::printf(
      "threads %d, isa %s, build %s, commit %s\ngemm: %s\nOPENBLAS_CORETYPE=%s, OMP_WAIT_POLICY=%s, started %s, load "
      "average %.2f\n",
      c.value("threads", 0), c.value("isa", "").c_str(), c.value("build_type", "").c_str(),
      c.value("git_commit", "").c_str(), c.value("gemm", "").c_str(), c.value("openblas_coretype", "").c_str(),
      c.value("omp_wait_policy", "(unset)").empty() ? "(unset)" : c.value("omp_wait_policy", "").c_str(),
      c.value("started_at", "").c_str(), c.value("load_average", -1.0));
}

void print_table(const std::vector<Json>& results) {
  for (const Json& r : results) {
    if (r.contains("config")) {
      print_config(r["config"]);
      break;
    }
  }
  std::printf("\n%-20s %-9s %5s %9s %9s %9s %9s %9s %9s %5s %8s %10s %10s %10s %8s %10s %8s\n", "model", "conv",
              "batch", "init ms", "first ms", "median", "min", "p95", "max", "runs", "GFLOP/s", "planned", "expected",
              "measured", "meas/exp", "warm", "warm/exp");
  std::printf("%-20s %-9s %5s %9s %9s %9s %9s %9s %9s %5s %8s %10s %10s %10s %8s %10s %8s\n", "", "", "", "", "", "ms",
              "ms", "ms", "ms", "", "", "MiB", "MiB", "MiB", "", "MiB", "");
  for (const Json& r : results) {
    if (r.contains("error")) {
      std::printf("%-20s %-9s error: %s\n", r.value("model", "").c_str(), r.value("conv", "").c_str(),
                  r["error"].get<std::string>().c_str());
      continue;
    }
    char ratio[16] = "-", warm_ratio[16] = "-";
    if (r.contains("measured_over_expected"))
      std::snprintf(ratio, sizeof ratio, "%.3f", r["measured_over_expected"].get<double>());
    if (r.contains("warm_over_expected"))
      std::snprintf(warm_ratio, sizeof warm_ratio, "%.3f", r["warm_over_expected"].get<double>());
    std::printf("%-20s %-9s %5lld %9.1f %9.2f %9.2f %9.2f %9.2f %9.2f %5d %8.1f %10s %10s %10s %8s %10s %8s\n",
                r["model"].get<std::string>().c_str(), r["conv"].get<std::string>().c_str(),
                static_cast<long long>(r["batch"].get<int64_t>()), r["init_ms"].get<double>(),
                r["first_ms"].get<double>(), r["median_ms"].get<double>(), r["min_ms"].get<double>(),
                r["p95_ms"].get<double>(), r["max_ms"].get<double>(), r["runs"].get<int>(), r["gflops"].get<double>(),
                mib(r["planned_bytes"]).c_str(), mib(r["expected_resident_bytes"]).c_str(),
                mib(r["measured_peak_bytes"]).c_str(), ratio, mib(r.value("measured_warm_bytes", Json())).c_str(),
                warm_ratio);
  }
  std::printf(
      "\ninit = load (random weights; a quantized model's own) + Session::create; first = the first run; "
      "median/min/p95/max over the timed "
      "runs.\n"
      "planned = packed weights + arena (winfer plan's total); expected = weights as loaded + weights the session\n"
      "packed + arena + input + output; measured = growth of the peak resident set (VmHWM) of a process of its own;\n"
      "warm = the same load and one run again in that process after freeing everything, with the peak restarted\n"
      "(code pages and library buffers the first run brought in are then in the baseline).\n");
  for (const Json& r : results) {
    if (!r.contains("layers")) continue;
    const double total = r["median_ms"].get<double>();
    std::printf("\n%s, conv %s, batch %lld: per-layer medians (peak %.1f GFLOP/s at %d thread(s))\n",
                r["model"].get<std::string>().c_str(), r["conv"].get<std::string>().c_str(),
                static_cast<long long>(r["batch"].get<int64_t>()), r.value("peak_gflops", 0.0), r.value("threads", 1));
    std::printf("  %-36s %-18s %-26s %9s %6s %8s %7s\n", "layer", "op", "kernel", "ms", "%", "GFLOP/s", "% peak");
    const double peak = r.value("peak_gflops", 0.0);
    for (const Json& l : r["layers"]) {
      const double ms = l["median_ms"].get<double>(), gf = l["gflops"].get<double>();
      char gfs[16] = "", pk[16] = "";
      if (gf > 0) std::snprintf(gfs, sizeof gfs, "%.1f", gf);
      if (gf > 0 && peak > 0) std::snprintf(pk, sizeof pk, "%.0f%%", 100.0 * gf / peak);
      std::printf("  %-36s %-18s %-26s %9.3f %5.1f%% %8s %7s\n", l["name"].get<std::string>().c_str(),
                  l["type"].get<std::string>().c_str(), l["kernel"].get<std::string>().c_str(), ms,
                  total > 0 ? 100.0 * ms / total : 0.0, gfs, pk);
    }
  }
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

}  // namespace

int run_bench_models(const BenchArgs& args) {
  std::vector<std::string> models = args.models;
  if (args.zoo) models.insert(models.end(), bench_zoo_models().begin(), bench_zoo_models().end());
  for (const std::string& m : models) {  // fail early on a wrong name, before any measurement
    auto path = resolve_model_path(m);
    if (!path.ok()) return fail(path.status());
  }
  {
    SessionOptions probe;
    const Status device = apply_device(args.device, &probe);
    if (!device.ok() && device.code() == ErrorCode::kInvalidArgument) return fail(device);
  }
  std::vector<std::string> convs = split_commas(args.conv);
  if (convs.empty()) convs.push_back(SessionOptions().conv_algorithm);
  if (convs.size() == 1 && convs[0] == "all")
    convs = conv_algorithm_names(args.device.rfind("cuda", 0) == 0 ? "cuda" : "cpu");
  // The algorithms of the device's backend, and on the CPU "auto" (per layer); where the list is
  // empty (device auto, or a build without CUDA) the session says what is wrong.
  std::vector<std::string> known = conv_algorithm_names(args.device.rfind("cuda", 0) == 0 ? "cuda" : args.device);
  if (args.device == "cpu") known.push_back("auto");
  if (Status s = check_autotune_cache_flag(args.autotune_cache, convs); !s.ok()) return fail(s);
  for (const std::string& c : convs) {
    if (!known.empty() && std::find(known.begin(), known.end(), c) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return fail(invalid_argument("--conv '" + c + "': not an engine algorithm (" + list +
                                   "); the peer libraries run in the layer mode (--layers)"));
    }
  }

  std::vector<Json> results;
  int errors = 0;
  for (const std::string& model : models) {
    for (const std::string& conv : convs) {
      std::cerr << "bench: " << model << ", conv " << conv << ", threads " << args.threads << ", device " << args.device
                << (args.batch > 0 ? ", batch " + std::to_string(args.batch) : std::string())
                << (!args.size.empty() ? ", size " + args.size : std::string()) << "\n";
      std::string error;
      const std::string text = run_in_child([&] { return measure(args, model, conv).dump(); }, &error);
      Json r;
      if (text.empty()) {
        r = Json{{"model", model},          {"device", args.device}, {"conv", conv},
                 {"threads", args.threads}, {"batch", args.batch},   {"error", error}};
      } else {
        r = Json::parse(text, nullptr, false);
        if (r.is_discarded()) r = Json{{"model", model}, {"conv", conv}, {"error", "unreadable result"}};
      }
      if (r.contains("error")) {
        ++errors;
        std::cerr << "bench: " << model << ", conv " << conv << ": error: " << r["error"].get<std::string>() << "\n";
      } else {
        std::cerr << "bench: " << model << ", conv " << conv << ": median " << r["median_ms"].get<double>()
                  << " ms over " << r["runs"].get<int>() << " runs\n";
      }
      if (args.json) {
        std::printf("%s\n", r.dump().c_str());
        std::fflush(stdout);
      }
      results.push_back(std::move(r));
    }
  }
  if (!args.json) print_table(results);
  if (errors > 0) {
    if (results.size() == 1) return fail(unsupported(results[0]["error"].get<std::string>()));
    return fail(internal_error(std::to_string(errors) + " of " + std::to_string(results.size()) +
                               " measurement(s) failed (see above)"));
  }
  return 0;
}

}  // namespace winfer::cli
