// `winfer plan MODEL`: the end-to-end memory of each convolution algorithm, side by side.
//
// Each algorithm is evaluated in its own forked child process: it loads the model, creates a
// session (which plans and allocates the arena), runs once and reports the plan together with
// the growth of its peak resident set (VmHWM) over the baseline it started with. Separate
// processes keep the high-water marks of the algorithms apart, and the parent runs no kernel
// (no OpenMP or BLAS threads exist when it forks).

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>

#include "apps/winfer/commands.h"
#include "apps/winfer/format.h"
#include "apps/winfer/input_size.h"
#include "apps/winfer/plan_report.h"
#include "apps/winfer/process_memory.h"
#include "engine/src/core/file_io.h"
#include "winfer/model.h"
#include "winfer/session.h"

namespace winfer::cli {
namespace {

constexpr uint64_t kDefaultWeightsSeed = 1;

// What the children learn about the model (the parent never loads it).
struct ModelFacts {
  std::string name;
  std::string weights_source;
  bool random_by_default = false;  // the model names no weights: random ones were used
  int64_t batch = 0;
  std::vector<int64_t> input_shape;  // the sessions' (--batch, --size)
  std::string load_error;            // the model could not be loaded: the command fails
};

// ---- which algorithms ---------------------------------------------------------------------

void add_unique(std::vector<std::string>* list, const std::string& name) {
  for (const std::string& n : *list) {
    if (n == name) return;
  }
  list->push_back(name);
}

// The default compares the session's default algorithm with im2col, the GEMM baseline; "all"
// is every registered algorithm. Unknown names stay in the list: their column says so.
Result<std::vector<std::string>> algorithm_list(const std::string& conv) {
  std::vector<std::string> list;
  if (conv.empty()) {
    add_unique(&list, SessionOptions().conv_algorithm);
    add_unique(&list, "im2col");
    return list;
  }
  std::stringstream items(conv);
  for (std::string item; std::getline(items, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) return invalid_argument("--conv '" + conv + "': empty algorithm name");
    if (item == "all") {
      for (const std::string& name : conv_algorithm_names()) add_unique(&list, name);
    } else {
      add_unique(&list, item);
    }
  }
  return list;
}

// --compare-fp32: a column "ALGO/fp32" is the quantized model loaded as FP32 (LoadOptions::Int8Mode::
// kFloat32: its dequantized weights on the FP32 kernels, float32 tensors) with algorithm ALGO.
constexpr const char* kFp32Suffix = "/fp32";

bool is_fp32_column(const std::string& column) {
  const std::string suffix = kFp32Suffix;
  return column.size() > suffix.size() && column.compare(column.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The algorithm of a column.
std::string algorithm_of(const std::string& column) {
  return is_fp32_column(column) ? column.substr(0, column.size() - std::string(kFp32Suffix).size()) : column;
}

// ---- the measurement (in the child) ------------------------------------------------------------

// Packed at load for `conv`, as the sessions of run and bench are.
Result<std::shared_ptr<const Model>> load_model(const PlanArgs& args, const std::string& column, ModelFacts* facts) {
  const std::string conv = algorithm_of(column);
  LoadOptions options;
  options.pack_for = pack_for("cpu", conv);
  if (is_fp32_column(column)) options.int8_mode = LoadOptions::Int8Mode::kFloat32;
  options.weights_path = args.weights;
  options.confine_to = args.confine_to;
  options.random_weights_seed = args.random_weights_seed;
  // Without weights on the command line, a model that names none (the zoo) gets seeded random
  // weights: the plan does not depend on their values, and the measured run needs some.
  options.allow_missing_weights = args.weights.empty() && !args.random_weights_seed;
  auto model = Model::load(args.model, options);
  if (model.ok() && model.value()->structure_only()) {
    options.allow_missing_weights = false;
    options.random_weights_seed = kDefaultWeightsSeed;
    facts->random_by_default = true;
    model = Model::load(args.model, options);
  }
  if (!model.ok()) return model.status();
  if (is_fp32_column(column) && !model.value()->quantized()) {
    return invalid_argument("--compare-fp32: " + args.model + " is not a quantized model (no `quantization:` block)");
  }
  facts->name = model.value()->name();
  facts->weights_source = model.value()->weights_source();
  auto input_shape = input_shape_for(*model.value(), args.batch, args.size);
  if (!input_shape.ok()) return input_shape.status();
  facts->input_shape = input_shape.value().empty() ? model.value()->input_shape().dims() : input_shape.value();
  facts->batch = facts->input_shape[0];
  return model;
}

void count_conv_kernels(const Session& session, const std::string& conv, PlanColumn* column) {
  for (const LayerTiming& original : session.last_timings()) {
    if (original.type != "conv2d") continue;
    LayerTiming layer = original;
    // A quantized model's INT8 convolutions: "int8 ALGO (ISA) ...".
    if (layer.kernel.rfind("int8 ", 0) == 0) layer.kernel.erase(0, 5);
    ++column->conv_layers;
    // A fused pointwise -> depthwise pair is two convolutions, the second depthwise; a fused
    // pair with a grouped second convolution is two of the algorithm's.
    if (layer.kernel.find("then depthwise") != std::string::npos) {
      ++column->conv_layers;
      ++column->depthwise_layers;
    }
    if (layer.kernel.find("then grouped") != std::string::npos) ++column->conv_layers;
    if (layer.kernel.rfind("depthwise", 0) == 0) {
      ++column->depthwise_layers;
    } else if (layer.kernel.rfind(conv, 0) != 0) {
      ++column->fallback_layers;  // the algorithm does not support this shape
    }
  }
}

size_t shapes_bytes(const std::vector<Shape>& shapes) {
  size_t total = 0;
  for (const Shape& s : shapes) total += static_cast<size_t>(s.numel()) * sizeof(float);
  return total;
}

// The session `winfer plan` measures for one algorithm.
SessionOptions plan_session_options(const PlanArgs& args, const std::string& column, const ModelFacts& facts) {
  SessionOptions options;
  options.conv_algorithm = algorithm_of(column);
  if (options.conv_algorithm == "auto") options.autotune_cache = args.autotune_cache;
  options.threads = args.threads;
  options.input_shape = facts.input_shape;
  options.concat_alias = args.concat_alias;
  options.images_per_run = args.images_per_run;
  return options;
}

// The arena of the same session with every concat input in its own storage (planned only,
// after the measured run so that it adds nothing to the peak).
void plan_without_concat_alias(const PlanArgs& args, const std::string& conv, const ModelFacts& facts,
                               const std::shared_ptr<const Model>& model, PlanColumn* column) {
  column->arena_without_concat_alias = column->report.arena_bytes;
  if (column->report.concat_inputs_in_place == 0) return;
  SessionOptions options = plan_session_options(args, conv, facts);
  options.concat_alias = false;
  auto plan = Session::plan(model, options);
  if (plan.ok()) column->arena_without_concat_alias = plan.value().arena_bytes;
}

// Load, session and one run, as evaluate() does them (the warm measurement's work).
bool measure_once(const PlanArgs& args, const std::string& conv) {
  ModelFacts facts;
  auto model = load_model(args, conv, &facts);
  if (!model.ok()) return false;
  auto session = Session::create(model.value(), plan_session_options(args, conv, facts));
  if (!session.ok()) return false;
  std::vector<Tensor> outputs;
  const Result<Tensor> input = random_tensor(session.value()->input_shape(), 0);
  return input.ok() && session.value()->run_into(input.value(), &outputs).ok();
}

// Everything one algorithm costs. `baseline` is the process's VmHWM before loading.
PlanColumn evaluate(const PlanArgs& args, const std::string& conv, std::optional<size_t> baseline, ModelFacts* facts) {
  PlanColumn column;
  column.conv = conv;
  auto model = load_model(args, conv, facts);
  if (!model.ok()) {
    facts->load_error = model.status().message();
    return column;
  }
  auto session = Session::create(model.value(), plan_session_options(args, conv, *facts));
  if (!session.ok()) {
    column.error = session.status().message();
    return column;
  }
  column.available = true;
  column.report = session.value()->memory_report();
  count_conv_kernels(*session.value(), algorithm_of(conv), &column);
  column.input_bytes = shapes_bytes({session.value()->input_shape()});
  column.output_bytes = shapes_bytes(session.value()->output_shapes());
  if (!args.measure) {
    column.measure_note = "not measured (--no-measure)";
    plan_without_concat_alias(args, conv, *facts, model.value(), &column);
    return column;
  }
  Result<Tensor> input = random_tensor(session.value()->input_shape(), 0);
  if (!input.ok()) {
    column.measure_note = "not measured: " + input.status().message();
    plan_without_concat_alias(args, conv, *facts, model.value(), &column);
    return column;
  }
  std::vector<Tensor> outputs;
  const Status run = session.value()->run_into(input.value(), &outputs);
  const std::optional<size_t> peak = peak_resident_bytes();
  plan_without_concat_alias(args, conv, *facts, model.value(), &column);
  if (!run.ok()) {
    column.measure_note = "the run failed: " + run.message();
    return column;
  }
  if (!baseline || !peak) {
    column.measure_note = "not measured (no /proc/self/status)";
    return column;
  }
  column.measured_peak_bytes = *peak - std::min(*peak, *baseline);
  // Everything released, then the same once more, warm.
  outputs.clear();
  input = Tensor();
  session.value().reset();
  model.value().reset();
  column.measured_warm_bytes = warm_peak_growth([&] { return measure_once(args, conv); });
  return column;
}

// ---- child -> parent -------------------------------------------------------------------------

// One "key<TAB>value" line per field; names lose tabs and newlines.
std::string clean(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

std::string serialize(const PlanColumn& c, const ModelFacts& f) {
  std::ostringstream out;
  out << "model\t" << clean(f.name) << "\nweights\t" << clean(f.weights_source) << "\nrandom_default\t"
      << f.random_by_default << "\nbatch\t" << f.batch << "\ninput\t" << Shape(f.input_shape).to_string()
      << "\nload_error\t" << clean(f.load_error) << "\navailable\t" << c.available << "\nerror\t" << clean(c.error)
      << "\n";
  const MemoryReport& r = c.report;
  out << "weights_bytes\t" << r.weights_bytes << "\npacked\t" << r.packed_weights_bytes << "\nsum\t"
      << r.activations_sum_bytes << "\nlower\t" << r.activations_lower_bound_bytes << "\narena\t" << r.arena_bytes
      << "\nsession_weights\t" << r.session_weights_bytes << "\nmax_ws\t" << r.max_workspace_bytes << "\nalignment\t"
      << r.alignment << "\nin_place\t" << r.in_place_layers << "\nconcat_bytes\t" << r.concat_bytes
      << "\nconcat_in_place\t" << r.concat_inputs_in_place << "\nconcat_saved\t" << r.concat_bytes_saved
      << "\narena_without_concat_alias\t" << c.arena_without_concat_alias << "\ninput_bytes\t" << c.input_bytes
      << "\noutput_bytes\t" << c.output_bytes << "\nconv_layers\t" << c.conv_layers << "\ndepthwise_layers\t"
      << c.depthwise_layers << "\nfallback_layers\t" << c.fallback_layers << "\nimages_per_run\t" << r.images_per_run
      << "\nlanes\t" << r.lanes << "\nmeasure_note\t" << clean(c.measure_note) << "\n";
  if (c.measured_peak_bytes) out << "measured\t" << *c.measured_peak_bytes << "\n";
  if (c.measured_warm_bytes) out << "measured_warm\t" << *c.measured_warm_bytes << "\n";
  for (const std::string& s : r.steps) out << "step\t" << clean(s) << "\n";
  for (const MemoryBuffer& b : r.buffers) {
    out << "buffer\t" << clean(b.name) << "\t" << b.workspace << "\t" << b.bytes << "\t" << b.offset << "\t"
        << b.first_step << "\t" << b.last_step << "\t" << clean(b.in_place_of) << "\t" << clean(b.slice_of) << "\t"
        << b.slice_offset << "\n";
  }
  return out.str();
}

// "[2,3,160,224]" -> {2, 3, 160, 224} (ModelFacts::input_shape, written by serialize).
std::vector<int64_t> parse_dims(const std::string& text) {
  std::vector<int64_t> dims;
  std::stringstream in(text.size() >= 2 ? text.substr(1, text.size() - 2) : std::string());
  for (std::string item; std::getline(in, item, ',');) dims.push_back(std::stoll(item));
  return dims;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) fields.push_back(field);
  if (!line.empty() && line.back() == '\t') fields.push_back("");
  return fields;
}

void parse_field(const std::string& key, const std::string& value, PlanColumn* c, ModelFacts* f) {
  MemoryReport& r = c->report;
  const auto number = [&] { return static_cast<size_t>(std::stoull(value)); };
  if (key == "model")
    f->name = value;
  else if (key == "weights")
    f->weights_source = value;
  else if (key == "random_default")
    f->random_by_default = value == "1";
  else if (key == "batch")
    f->batch = std::stoll(value);
  else if (key == "input")
    f->input_shape = parse_dims(value);
  else if (key == "load_error")
    f->load_error = value;
  else if (key == "available")
    c->available = value == "1";
  else if (key == "error")
    c->error = value;
  else if (key == "weights_bytes")
    r.weights_bytes = number();
  else if (key == "packed")
    r.packed_weights_bytes = number();
  else if (key == "sum")
    r.activations_sum_bytes = number();
  else if (key == "lower")
    r.activations_lower_bound_bytes = number();
  else if (key == "arena")
    r.arena_bytes = number();
  else if (key == "session_weights")
    r.session_weights_bytes = number();
  else if (key == "max_ws")
    r.max_workspace_bytes = number();
  else if (key == "alignment")
    r.alignment = number();
  else if (key == "in_place")
    r.in_place_layers = std::stoi(value);
  else if (key == "concat_bytes")
    r.concat_bytes = number();
  else if (key == "concat_in_place")
    r.concat_inputs_in_place = std::stoi(value);
  else if (key == "concat_saved")
    r.concat_bytes_saved = number();
  else if (key == "arena_without_concat_alias")
    c->arena_without_concat_alias = number();
  else if (key == "input_bytes")
    c->input_bytes = number();
  else if (key == "output_bytes")
    c->output_bytes = number();
  else if (key == "conv_layers")
    c->conv_layers = std::stoi(value);
  else if (key == "depthwise_layers")
    c->depthwise_layers = std::stoi(value);
  else if (key == "fallback_layers")
    c->fallback_layers = std::stoi(value);
  else if (key == "images_per_run")
    r.images_per_run = number();
  else if (key == "lanes")
    r.lanes = std::stoi(value);
  else if (key == "measure_note")
    c->measure_note = value;
  else if (key == "measured")
    c->measured_peak_bytes = number();
  else if (key == "measured_warm")
    c->measured_warm_bytes = number();
  else if (key == "step")
    r.steps.push_back(value);
}

void parse(const std::string& text, PlanColumn* c, ModelFacts* f) {
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const std::vector<std::string> fields = split_tabs(line);
    if (fields.size() == 10 && fields[0] == "buffer") {
      MemoryBuffer b;
      b.name = fields[1];
      b.workspace = fields[2] == "1";
      b.bytes = std::stoull(fields[3]);
      b.offset = std::stoull(fields[4]);
      b.first_step = std::stoi(fields[5]);
      b.last_step = std::stoi(fields[6]);
      b.in_place_of = fields[7];
      b.slice_of = fields[8];
      b.slice_offset = std::stoull(fields[9]);
      c->report.buffers.push_back(b);
    } else if (fields.size() == 2) {
      parse_field(fields[0], fields[1], c, f);
    }
  }
}

// Evaluates one algorithm in a forked child (in this process if fork is not possible, then
// without a measurement: the high-water mark would include whatever ran before).
PlanColumn evaluate_in_child(const PlanArgs& args, const std::string& conv, ModelFacts* facts) {
  std::string error;
  const std::string text = run_in_child(
      [&] {
        ModelFacts child_facts;
        return serialize(evaluate(args, conv, peak_resident_bytes(), &child_facts), child_facts);
      },
      &error);
  PlanColumn column;
  column.conv = conv;
  if (error.rfind("cannot ", 0) == 0) {  // no child process: evaluate here, unmeasured
    PlanArgs unmeasured = args;
    unmeasured.measure = false;
    column = evaluate(unmeasured, conv, std::nullopt, facts);
    if (args.measure) column.measure_note = "not measured (" + error + ")";
    return column;
  }
  if (!error.empty()) {
    column.error = error;
    return column;
  }
  parse(text, &column, facts);
  return column;
}

// ---- output ----------------------------------------------------------------------------------

std::string percent_over(size_t value, size_t reference) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", reference == 0 ? 0.0 : 100.0 * (double(value) / double(reference) - 1.0));
  return buf;
}

// The saving of `a` over `b` in total memory, e.g. "im2col uses 31.2% less than direct (12.0 MiB)".
std::string saving_sentence(const PlanColumn& a, const PlanColumn& b) {
  const double ta = double(a.total_bytes()), tb = double(b.total_bytes());
  char buf[256];
  if (ta == tb) {
    std::snprintf(buf, sizeof buf, "%s uses as much total memory as %s", a.conv.c_str(), b.conv.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "%s uses %.1f%% %s total memory than %s (%s %s)", a.conv.c_str(),
                  100.0 * std::abs(tb - ta) / tb, ta < tb ? "less" : "more", b.conv.c_str(),
                  human_bytes(std::abs(tb - ta)).c_str(), ta < tb ? "saved" : "extra");
  }
  return buf;
}

struct Row {
  const char* label;
  std::string (*cell)(const PlanColumn&);
};

// One unit for the whole table (MiB, KiB below 1 MiB) so that columns compare digit by digit.
std::string bytes_cell(size_t bytes) {
  char buf[32];
  if (bytes < (size_t{1} << 20)) return human_bytes(double(bytes));
  std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
  return buf;
}

// measured - expected: what the process holds beyond the model, the session and the I/O.
std::string other_cell(const std::optional<size_t>& measured, const PlanColumn& c) {
  if (!measured) return "-";
  const size_t expected = c.expected_resident_bytes();
  return (*measured >= expected ? "+" : "-") +
         bytes_cell(*measured >= expected ? *measured - expected : expected - *measured);
}

const Row kRows[] = {
    {"images per run x runs side by side",
     [](const PlanColumn& c) {
       return std::to_string(c.report.images_per_run) + " x " + std::to_string(c.report.lanes);
     }},
    {"weights, as loaded", [](const PlanColumn& c) { return bytes_cell(c.report.weights_bytes); }},
    {"weights, packed for the algorithm",
     [](const PlanColumn& c) { return bytes_cell(c.report.packed_weights_bytes); }},
    {"activations, no reuse (sum)", [](const PlanColumn& c) { return bytes_cell(c.report.activations_sum_bytes); }},
    {"activations, lower bound (max live)",
     [](const PlanColumn& c) { return bytes_cell(c.report.activations_lower_bound_bytes); }},
    {"planned arena", [](const PlanColumn& c) { return bytes_cell(c.report.arena_bytes); }},
    {"  arena over lower bound",
     [](const PlanColumn& c) { return percent_over(c.report.arena_bytes, c.report.activations_lower_bound_bytes); }},
    {"  largest conv workspace (in arena)",
     [](const PlanColumn& c) { return bytes_cell(c.report.max_workspace_bytes); }},
    {"  layers run in place", [](const PlanColumn& c) { return std::to_string(c.report.in_place_layers); }},
    {"total = packed weights + arena", [](const PlanColumn& c) { return bytes_cell(c.total_bytes()); }},
    {"measured peak resident (VmHWM)",
     [](const PlanColumn& c) { return c.measured_peak_bytes ? bytes_cell(*c.measured_peak_bytes) : std::string("-"); }},
    {"  expected: loaded + packed here + arena",
     [](const PlanColumn& c) { return bytes_cell(c.expected_resident_bytes()); }},
    {"  other (code, OpenBLAS, allocator)", [](const PlanColumn& c) { return other_cell(c.measured_peak_bytes, c); }},
    {"measured again in the warm process",
     [](const PlanColumn& c) { return c.measured_warm_bytes ? bytes_cell(*c.measured_warm_bytes) : std::string("-"); }},
    {"  other, warm", [](const PlanColumn& c) { return other_cell(c.measured_warm_bytes, c); }},
};

// Printed after "layers run in place" when some column's model has a concat layer.
const Row kConcatRows[] = {
    {"  concat inputs written in place",
     [](const PlanColumn& c) { return std::to_string(c.report.concat_inputs_in_place); }},
    {"  concat copies saved (bytes per run)",
     [](const PlanColumn& c) { return bytes_cell(c.report.concat_bytes_saved); }},
    {"  concat copies left (bytes per run)",
     [](const PlanColumn& c) { return bytes_cell(c.report.concat_bytes - c.report.concat_bytes_saved); }},
    {"  arena without concat aliasing", [](const PlanColumn& c) { return bytes_cell(c.arena_without_concat_alias); }},
};

void print_table(const PlanArgs& args, const ModelFacts& facts, const std::vector<PlanColumn>& columns) {
  std::printf("model %s (%s), batch %lld, input %s, threads %d, weights %s%s\n\n", facts.name.c_str(),
              args.model.c_str(), static_cast<long long>(facts.batch), Shape(facts.input_shape).to_string().c_str(),
              args.threads, facts.weights_source.c_str(),
              facts.random_by_default ? " (the model names no weights: random ones for the measured run)" : "");
  const int label_width = 42, width = 14;
  std::printf("%-*s", label_width, "");
  for (const PlanColumn& c : columns) std::printf("%*s", width, c.conv.c_str());
  std::printf("\n");
  bool has_concat = false;
  for (const PlanColumn& c : columns) has_concat = has_concat || (c.available && c.report.concat_bytes > 0);
  const auto print_row = [&](const Row& row) {
    std::printf("%-*s", label_width, row.label);
    for (const PlanColumn& c : columns) std::printf("%*s", width, c.available ? row.cell(c).c_str() : "n/a");
    std::printf("\n");
  };
  for (const Row& row : kRows) {
    print_row(row);
    if (has_concat && std::strcmp(row.label, "  layers run in place") == 0) {
      for (const Row& concat_row : kConcatRows) print_row(concat_row);
    }
  }
  std::printf("\n");
  for (const PlanColumn& c : columns) {
    if (!c.available) std::printf("%s: not available: %s\n", c.conv.c_str(), c.error.c_str());
    if (c.available && c.fallback_layers > 0) {
      std::printf("%s: %d of %d convolutions use another kernel (shape not supported; see winfer run --profile)\n",
                  c.conv.c_str(), c.fallback_layers, c.conv_layers);
    }
    if (c.available && !c.measured_peak_bytes) std::printf("%s: %s\n", c.conv.c_str(), c.measure_note.c_str());
  }
  for (const PlanColumn& c : columns) {
    if (c.available && c.depthwise_layers > 0) {
      std::printf("%d of %d convolutions are depthwise and use the depthwise kernel under every algorithm\n",
                  c.depthwise_layers, c.conv_layers);
      break;
    }
  }
  std::printf(
      "measured: growth of the peak resident set from before loading the model to after one run, each algorithm in\n"
      "its own process, which loads the model with its weights packed for that algorithm (LoadOptions::pack_for:\n"
      "the session shares them, nothing packed here). 'expected' is weights as loaded + weights the session\n"
      "packed + arena + input + output. 'other' is the rest: code and allocator pages (1-2 MiB), the\n"
      "load's transient buffers (parsing; one layer's packing where it is not in place), OpenBLAS once loaded\n"
      "(about 3 MiB) and its packing buffers. 'warm': everything freed, the heap trimmed and the peak restarted\n"
      "(/proc/self/clear_refs), the same load and run measured again: without what the first run paid once for the\n"
      "process (code pages, OpenBLAS's buffers), with every byte this one allocated.\n");
  const PlanColumn* first = columns.empty() || !columns[0].available ? nullptr : &columns[0];
  for (size_t i = 1; first != nullptr && i < columns.size(); ++i) {
    if (columns[i].available) std::printf("%s\n", saving_sentence(*first, columns[i]).c_str());
  }
  if (columns.size() == 1) std::printf("one algorithm only: --conv all compares every registered one\n");
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void print_json(const PlanArgs& args, const ModelFacts& facts, const std::vector<PlanColumn>& columns) {
  std::ostringstream out;
  out << "{\"model\": " << json_string(facts.name) << ", \"path\": " << json_string(args.model)
      << ", \"batch\": " << facts.batch << ", \"input_shape\": " << Shape(facts.input_shape).to_string()
      << ", \"threads\": " << args.threads << ", \"weights\": " << json_string(facts.weights_source)
      << ", \"random_weights_by_default\": " << (facts.random_by_default ? "true" : "false") << ", \"algorithms\": [";
  for (size_t i = 0; i < columns.size(); ++i) {
    const PlanColumn& c = columns[i];
    out << (i ? ", " : "") << "{\"conv\": " << json_string(c.conv)
        << ", \"available\": " << (c.available ? "true" : "false");
    if (!c.available) {
      out << ", \"error\": " << json_string(c.error) << "}";
      continue;
    }
    const MemoryReport& r = c.report;
    out << ", \"weights_bytes\": " << r.weights_bytes << ", \"packed_weights_bytes\": " << r.packed_weights_bytes
        << ", \"activations_sum_bytes\": " << r.activations_sum_bytes
        << ", \"activations_lower_bound_bytes\": " << r.activations_lower_bound_bytes
        << ", \"arena_bytes\": " << r.arena_bytes << ", \"max_workspace_bytes\": " << r.max_workspace_bytes
        << ", \"total_bytes\": " << c.total_bytes() << ", \"measured_peak_bytes\": ";
    if (c.measured_peak_bytes) {
      out << *c.measured_peak_bytes;
    } else {
      out << "null, \"measure_note\": " << json_string(c.measure_note);
    }
    out << ", \"measured_warm_bytes\": ";
    if (c.measured_warm_bytes)
      out << *c.measured_warm_bytes;
    else
      out << "null";
    out << ", \"expected_resident_bytes\": " << c.expected_resident_bytes()
        << ", \"session_weights_bytes\": " << r.session_weights_bytes << ", \"alignment\": " << r.alignment
        << ", \"in_place_layers\": " << r.in_place_layers << ", \"concat_bytes\": " << r.concat_bytes
        << ", \"concat_inputs_in_place\": " << r.concat_inputs_in_place
        << ", \"concat_bytes_saved\": " << r.concat_bytes_saved
        << ", \"arena_bytes_without_concat_alias\": " << c.arena_without_concat_alias
        << ", \"conv_layers\": " << c.conv_layers << ", \"depthwise_layers\": " << c.depthwise_layers
        << ", \"fallback_layers\": " << c.fallback_layers << ", \"images_per_run\": " << r.images_per_run
        << ", \"lanes\": " << r.lanes << "}";
  }
  out << "]}\n";
  std::fputs(out.str().c_str(), stdout);
}

}  // namespace

// --svg replaces only an SVG (an XML or <svg> start), so that a mistyped path destroys nothing.
const detail::OutputKind kSvgOutput{"SVG file", "an SVG file", [](const std::string& head, uint64_t) {
                                      const size_t start = head.find_first_not_of(" \t\r\n");
                                      return start != std::string::npos && (head.compare(start, 5, "<?xml") == 0 ||
                                                                            head.compare(start, 4, "<svg") == 0);
                                    }};

int run_plan(const PlanArgs& args) {
  if (!args.svg.empty()) {  // refused before the measured runs, not after
    Status writable = detail::check_output_path(args.svg, kSvgOutput);
    if (!writable.ok()) return fail(writable);
  }
  auto algorithms = algorithm_list(args.conv);
  if (!algorithms.ok()) return fail(algorithms.status());
  if (Status s = check_autotune_cache_flag(args.autotune_cache, algorithms.value()); !s.ok()) return fail(s);
  std::vector<std::string> column_names;
  for (const std::string& conv : algorithms.value()) {
    column_names.push_back(conv);
    if (args.compare_fp32) column_names.push_back(conv + kFp32Suffix);
  }
  ModelFacts facts;
  std::vector<PlanColumn> columns;
  for (const std::string& conv : column_names) {
    columns.push_back(evaluate_in_child(args, conv, &facts));
    if (!facts.load_error.empty()) return fail(invalid_argument(facts.load_error));
  }
  if (facts.random_by_default) {
    std::fprintf(stderr, "note: %s names no weights; using random weights (seed %llu) for the measured run\n",
                 args.model.c_str(), static_cast<unsigned long long>(kDefaultWeightsSeed));
  }
  std::fflush(stderr);
  if (args.json) {
    print_json(args, facts, columns);
  } else {
    print_table(args, facts, columns);
  }
  if (!args.svg.empty()) {
    const std::string svg = plan_svg(facts.name, facts.batch, columns);
    Status written = detail::write_output_file(args.svg, kSvgOutput, svg.data(), svg.size());
    if (!written.ok()) return fail(written);
    std::fprintf(stderr, "wrote %s\n", args.svg.c_str());
  }
  return 0;
}

}  // namespace winfer::cli
