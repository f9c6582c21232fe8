// Model.plan(): the dict `winfer plan --json --no-measure` prints, built the way
// apps/winfer/cmd_plan.cpp builds it (that command measures in forked children, which a Python
// process should not do): per algorithm the model is loaded again packed for that algorithm
// (pack_for, as the CLI's children load it), a session is created and its MemoryReport read.
// tests/python/test_plan.py checks the keys and the planned numbers against the CLI's.
#include "plan.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <sstream>

#include "apps/winfer/format.h"

using namespace nb::literals;

namespace winfer::python {
namespace {

// `winfer plan` gives a model that names no weights random ones with this seed.
constexpr uint64_t kDefaultWeightsSeed = 1;

void add_unique(std::vector<std::string>* list, const std::string& name) {
  for (const std::string& n : *list) {
    if (n == name) return;
  }
  list->push_back(name);
}

// cmd_plan.cpp's algorithm_list: None -> the default algorithm and im2col; "a,b" or a list;
// "all" -> every registered one; unknown names stay (their entry says "not available").
std::vector<std::string> algorithm_list(nb::handle conv) {
  std::vector<std::string> items, list;
  if (conv.is_none()) {
    add_unique(&list, SessionOptions().conv_algorithm);
    add_unique(&list, "im2col");
    return list;
  }
  if (nb::isinstance<nb::str>(conv)) {
    std::stringstream in(nb::cast<std::string>(conv));
    for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  } else {
    items = nb::cast<std::vector<std::string>>(conv);
  }
  for (std::string item : items) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (item.empty()) raise_error(ErrorCode::kInvalidArgument, "Model.plan: conv: empty algorithm name");
    if (item == "all") {
      for (const std::string& name : conv_algorithm_names()) add_unique(&list, name);
    } else {
      add_unique(&list, item);
    }
  }
  return list;
}

size_t shapes_bytes(const std::vector<Shape>& shapes) {
  size_t total = 0;
  for (const Shape& s : shapes) total += static_cast<size_t>(s.numel()) * sizeof(float);
  return total;
}

// cmd_plan.cpp's count_conv_kernels: the convolutions, how many ran depthwise, and how many
// fell back to another algorithm than `conv` (which does not support their shape).
struct KernelCounts {
  int conv = 0, depthwise = 0, fallback = 0;
};
KernelCounts count_conv_kernels(const Session& session, const std::string& conv) {
  KernelCounts c;
  for (const LayerTiming& layer : session.last_timings()) {
    if (layer.type != "conv2d") continue;
    ++c.conv;
    if (layer.kernel.find("then depthwise") != std::string::npos) {  // a fused pointwise -> depthwise pair
      ++c.conv;
      ++c.depthwise;
    }
    if (layer.kernel.find("then grouped") != std::string::npos) ++c.conv;  // a fused 1x1 -> grouped pair
    if (layer.kernel.rfind("depthwise", 0) == 0) {
      ++c.depthwise;
    } else if (layer.kernel.rfind(conv, 0) != 0) {
      ++c.fallback;
    }
  }
  return c;
}

struct Facts {
  std::string name, weights_source;
  bool random_by_default = false;
  std::vector<int64_t> input_shape;
};

// Everything below the GIL: load, create, plan. Only plain C++ values leave it.
struct Planned {
  Status load_error;
  std::string session_error;
  MemoryReport report;
  KernelCounts counts;
  size_t input_bytes = 0, output_bytes = 0, arena_without_concat_alias = 0;
};

Planned plan_one(const PyModel& self, const std::string& conv, int threads, int64_t batch,
                 const std::vector<int64_t>& input_shape, int64_t images_per_run, Facts* facts) {
  Planned p;
  LoadOptions options = self.options;
  options.pack_for = cli::pack_for("cpu", conv);
  if (self.model->structure_only()) {
    options.allow_missing_weights = false;
    options.random_weights_seed = kDefaultWeightsSeed;
    facts->random_by_default = true;
  }
  auto model = Model::load(self.path, options);
  if (!model.ok()) {
    p.load_error = model.status();
    return p;
  }
  facts->name = model.value()->name();
  facts->weights_source = model.value()->weights_source();
  SessionOptions session_options;
  session_options.conv_algorithm = conv;
  session_options.threads = threads;
  session_options.batch = batch;
  session_options.input_shape = input_shape;
  session_options.images_per_run = images_per_run;
  auto shape = session_input_shape(*model.value(), session_options);
  if (!shape.ok()) {
    p.load_error = shape.status();
    return p;
  }
  facts->input_shape = shape.value().dims();
  session_options.batch = 0;
  session_options.input_shape = facts->input_shape;
  auto session = Session::create(model.value(), session_options);
  if (!session.ok()) {
    p.session_error = session.status().message();
    return p;
  }
  p.report = session.value()->memory_report();
  p.counts = count_conv_kernels(*session.value(), conv);
  p.input_bytes = shapes_bytes({session.value()->input_shape()});
  p.output_bytes = shapes_bytes(session.value()->output_shapes());
  session.value().reset();
  p.arena_without_concat_alias = p.report.arena_bytes;
  if (p.report.concat_inputs_in_place > 0) {
    session_options.concat_alias = false;
    auto without = Session::plan(model.value(), session_options);
    if (without.ok()) p.arena_without_concat_alias = without.value().arena_bytes;
  }
  return p;
}

// The keys and order of cmd_plan.cpp's print_json for one algorithm.
nb::dict column_dict(const std::string& conv, const Planned& p) {
  nb::dict d;
  d["conv"] = conv;
  d["available"] = p.session_error.empty();
  if (!p.session_error.empty()) {
    d["error"] = p.session_error;
    return d;
  }
  const MemoryReport& r = p.report;
  d["weights_bytes"] = r.weights_bytes;
  d["packed_weights_bytes"] = r.packed_weights_bytes;
  d["activations_sum_bytes"] = r.activations_sum_bytes;
  d["activations_lower_bound_bytes"] = r.activations_lower_bound_bytes;
  d["arena_bytes"] = r.arena_bytes;
  d["max_workspace_bytes"] = r.max_workspace_bytes;
  d["total_bytes"] = r.packed_weights_bytes + r.arena_bytes;
  d["measured_peak_bytes"] = nb::none();
  d["measure_note"] = "not measured (winfer.Model.plan plans only; `winfer plan` measures the peak in a child process)";
  d["measured_warm_bytes"] = nb::none();
  d["expected_resident_bytes"] =
      r.weights_bytes + r.session_weights_bytes + r.arena_bytes + p.input_bytes + p.output_bytes;
  d["session_weights_bytes"] = r.session_weights_bytes;
  d["alignment"] = r.alignment;
  d["in_place_layers"] = r.in_place_layers;
  d["concat_bytes"] = r.concat_bytes;
  d["concat_inputs_in_place"] = r.concat_inputs_in_place;
  d["concat_bytes_saved"] = r.concat_bytes_saved;
  d["arena_bytes_without_concat_alias"] = p.arena_without_concat_alias;
  d["conv_layers"] = p.counts.conv;
  d["depthwise_layers"] = p.counts.depthwise;
  d["fallback_layers"] = p.counts.fallback;
  d["images_per_run"] = r.images_per_run;
  d["lanes"] = r.lanes;
  return d;
}

}  // namespace

nb::dict plan(const PyModel& self, nb::handle conv, std::optional<int64_t> batch, std::optional<int> threads_arg,
              std::optional<std::vector<int64_t>> input_shape, std::optional<int64_t> images_per_run) {
  const int threads = threads_arg ? *threads_arg : default_threads();
  const std::vector<std::string> algorithms = algorithm_list(conv);
  if (batch && *batch < 1) {
    raise_error(ErrorCode::kInvalidArgument, "batch must be >= 1 (None: the model's), got " + std::to_string(*batch));
  }
  if (images_per_run && *images_per_run < 0) {
    raise_error(ErrorCode::kInvalidArgument,
                "images_per_run must be >= 1 (0: the whole batch in one run; None: the engine's choice), got " +
                    std::to_string(*images_per_run));
  }
  Facts facts;
  std::vector<Planned> planned;
  {
    nb::gil_scoped_release release;
    for (const std::string& name : algorithms) {
      planned.push_back(
          plan_one(self, name, threads, batch.value_or(0), input_shape.value_or(std::vector<int64_t>{}),
                   images_per_run.value_or(SessionOptions::kImagesPerRunAuto), &facts));
      if (!planned.back().load_error.ok()) break;
    }
  }
  if (!planned.empty() && !planned.back().load_error.ok()) raise_status(planned.back().load_error);
  nb::list columns;
  for (size_t i = 0; i < planned.size(); ++i) columns.append(column_dict(algorithms[i], planned[i]));
  nb::dict d;
  d["model"] = facts.name;
  d["path"] = self.path;
  d["batch"] = facts.input_shape.empty() ? 0 : facts.input_shape[0];
  d["input_shape"] = facts.input_shape;
  d["threads"] = threads;
  d["weights"] = facts.weights_source;
  d["random_weights_by_default"] = facts.random_by_default;
  d["algorithms"] = columns;
  return d;
}

}  // namespace winfer::python
