// winfer.Model: loading, what the model is (inputs, outputs, labels, info()), and sessions.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <filesystem>
#include <optional>

#include "objects.h"
#include "plan.h"

using namespace nb::literals;

namespace winfer::python {
namespace {

// Model(path, weights=None, random_weights=None). Like `winfer info`, a model that names no
// weights at all (the zoo's YAML files) loads as its structure only: info(), inputs, outputs
// and plan() work, session() says what to pass.
std::unique_ptr<PyModel> load_model(const std::filesystem::path& path, std::optional<std::filesystem::path> weights,
                                    std::optional<int64_t> random_weights) {
  auto loaded = std::make_unique<PyModel>();
  loaded->path = path.string();
  if (weights) loaded->options.weights_path = weights->string();
  if (random_weights) {
    if (*random_weights < 0) {
      raise_error(ErrorCode::kInvalidArgument,
                  "Model: random_weights must be a seed >= 0, got " + std::to_string(*random_weights));
    }
    loaded->options.random_weights_seed = static_cast<uint64_t>(*random_weights);
  }
  loaded->options.allow_missing_weights = !weights && !random_weights;
  Result<std::shared_ptr<const Model>> model = invalid_argument("");
  {
    nb::gil_scoped_release release;  // weights of hundreds of MB: let other threads run
    model = Model::load(loaded->path, loaded->options);
  }
  loaded->model = value_or_raise(std::move(model));
  return loaded;
}

nb::dict names_and_shapes(const std::vector<std::string>& names, const std::vector<Shape>& shapes) {
  nb::dict d;
  for (size_t i = 0; i < names.size() && i < shapes.size(); ++i) d[names[i].c_str()] = shape_tuple(shapes[i]);
  return d;
}

nb::list string_list(const std::vector<std::string>& items) {
  nb::list l;
  for (const std::string& s : items) l.append(s);
  return l;
}

nb::dict info(const PyModel& self) {
  const Model& m = *self.model;
  nb::list layers;
  for (const LayerInfo& layer : m.layers()) {
    nb::list shapes;
    for (const Shape& s : layer.output_shapes) shapes.append(shape_tuple(s));
    layers.append(make_dict("name", layer.name, "op", layer.type, "inputs", string_list(layer.inputs), "outputs",
                            string_list(layer.outputs), "output_shapes", shapes, "fused", string_list(layer.fused),
                            "params", layer.params, "flops", layer.flops, "precision", layer.precision));
  }
  return make_dict("name", m.name(), "path", m.path(), "weights", m.weights_source(), "structure_only",
                   m.structure_only(), "inputs", names_and_shapes({m.input_name()}, {m.input_shape()}), "outputs",
                   names_and_shapes(m.output_names(), m.output_shapes()), "layers", layers, "params", m.total_params(),
                   "flops", m.total_flops(), "multiply_adds", m.total_flops() / 2, "batch",
                   m.input_shape().rank() > 0 ? m.input_shape()[0] : 0);
}

nb::dict preprocess_dict(const Preprocess& p) {
  return make_dict("resize", p.resize, "crop", p.crop, "mean", p.mean, "std", p.std, "channel_order", p.channel_order,
                   "declared", p.present);
}

std::unique_ptr<PySession> session(const PyModel& self, std::optional<int64_t> batch, std::optional<int> threads,
                                   const std::string& conv, const std::string& device,
                                   std::optional<int64_t> memory_budget,
                                   std::optional<std::vector<int64_t>> input_shape,
                                   std::optional<int64_t> images_per_run, std::optional<std::string> autotune_cache) {
  if (self.model->structure_only()) {
    raise_error(ErrorCode::kInvalidArgument,
                self.model->path() +
                    ": the model names no weights, so it was loaded as its structure only (info, plan); to run it, "
                    "load it with weights=FILE.safetensors or random_weights=SEED");
  }
  SessionOptions options = session_options(batch, threads, conv, device, memory_budget, input_shape);
  if (images_per_run) {
    if (*images_per_run < 0) {
      raise_error(ErrorCode::kInvalidArgument,
                  "images_per_run must be >= 1 (0: the whole batch in one run; None: the engine's choice), got " +
                      std::to_string(*images_per_run));
    }
    options.images_per_run = *images_per_run;
  }
  if (autotune_cache) {
    if (conv != "auto") {
      raise_error(ErrorCode::kInvalidArgument,
                  "autotune_cache keeps the per-layer timings of conv='auto'; the algorithm here is '" + conv + "'");
    }
    options.autotune_cache = *autotune_cache;
  }
  return make_session(self, options);
}

}  // namespace

SessionOptions session_options(std::optional<int64_t> batch, std::optional<int> threads, const std::string& conv,
                               const std::string& device, std::optional<int64_t> memory_budget,
                               std::optional<std::vector<int64_t>> input_shape) {
  SessionOptions options;
  options.batch = batch.value_or(0);
  if (batch && *batch < 1) {
    raise_error(ErrorCode::kInvalidArgument, "batch must be >= 1 (None: the model's), got " + std::to_string(*batch));
  }
  options.threads = threads ? *threads : default_threads();
  options.conv_algorithm = conv;
  options.device = device;
  if (memory_budget) {
    if (*memory_budget < 0) {
      raise_error(ErrorCode::kInvalidArgument,
                  "memory_budget must be bytes >= 0 (None: no budget), got " + std::to_string(*memory_budget));
    }
    options.memory_budget = static_cast<size_t>(*memory_budget);
  }
  if (input_shape) options.input_shape = *input_shape;
  return options;
}

std::unique_ptr<PySession> make_session(const PyModel& model, const SessionOptions& options) {
  Result<std::unique_ptr<Session>> created = invalid_argument("");
  {
    nb::gil_scoped_release release;
    created = Session::create(model.model, options);
  }
  auto s = std::make_unique<PySession>();
  s->session = value_or_raise(std::move(created));
  s->model = model.model;
  s->conv = options.conv_algorithm;
  s->threads = options.threads;
  return s;
}

void bind_model(nb::module_& m) {
  nb::class_<PyModel>(m, "Model",
                      "A network loaded from a winfer YAML description (plus safetensors weights) or an ONNX file,\n"
                      "validated, with shapes inferred and batch norm folded. Immutable and safe to share between\n"
                      "threads; run it through Model.session().\n\n"
                      "    m = winfer.Model(\"models/fashion/fashion_resnet.yaml\")\n"
                      "    s = m.session()\n"
                      "    y = s.run(x)   # x: float32 numpy array of shape s.input_shape")
      .def(nb::new_(&load_model), "path"_a, "weights"_a = nb::none(), "random_weights"_a = nb::none(),
           "Loads the model at `path` (.yaml or .onnx).\n\n"
           "weights: a .safetensors file replacing the one the YAML names.\n"
           "random_weights: a seed: deterministic random weights instead of reading any (benchmarks).\n"
           "A model that names no weights (the zoo's) loads as its structure only: info(), inputs,\n"
           "outputs and plan() work; session() asks for weights= or random_weights=.\n"
           "Raises winfer.NotFoundError, ParseError, ... with the engine's message (file, line, layer).")
      .def_prop_ro(
          "name", [](const PyModel& self) { return self.model->name(); }, "The model's name (its `name:`).")
      .def_prop_ro(
          "path", [](const PyModel& self) { return self.model->path(); }, "The model file.")
      .def_prop_ro(
          "weights", [](const PyModel& self) { return self.model->weights_source(); },
          "Where the weights came from: a file, \"random(seed=N)\", \"inline\" or \"none\" (structure only).")
      .def_prop_ro(
          "inputs",
          [](const PyModel& self) { return names_and_shapes({self.model->input_name()}, {self.model->input_shape()}); },
          nb::for_getter(nb::sig("def inputs(self) -> dict[str, tuple[int, ...]]")),
          "{name: shape} of the model's input as declared (NCHW; the batch and image size may be\n"
          "chosen per session: Model.session(batch=..., input_shape=...)).")
      .def_prop_ro(
          "outputs",
          [](const PyModel& self) { return names_and_shapes(self.model->output_names(), self.model->output_shapes()); },
          nb::for_getter(nb::sig("def outputs(self) -> dict[str, tuple[int, ...]]")),
          "{name: shape} of the model's outputs at the declared input shape, in output order.")
      .def_prop_ro(
          "labels", [](const PyModel& self) { return value_or_raise(self.model->labels()); },
          "The class names of the model's `labels:` file, one per class; [] when it names none.")
      .def_prop_ro(
          "preprocess", [](const PyModel& self) { return preprocess_dict(self.model->preprocess()); },
          nb::for_getter(nb::sig("def preprocess(self) -> dict[str, typing.Any]")),
          "The model's `preprocess:` block (resize, crop, mean, std, channel_order; declared: whether\n"
          "the model has one). winfer.classify applies it.")
      .def("info", &info, nb::sig("def info(self) -> dict[str, typing.Any]"),
           "What the engine sees after loading and fusion, as `winfer info` prints it: a dict with\n"
           "name, path, weights, structure_only, inputs, outputs, batch, params, flops (a multiply-add\n"
           "counts 2), multiply_adds, and layers (each: name, op, inputs, outputs, output_shapes,\n"
           "fused, params, flops, precision: for a quantized model's conv2d/linear layers 'int8',\n"
           "'int8 (simulated)' or 'fp32', else '').")
      .def("session", &session, "batch"_a = nb::none(), "threads"_a = nb::none(), "conv"_a = "im2win",
           "device"_a = "cpu", "memory_budget"_a = nb::none(), "input_shape"_a = nb::none(),
           "images_per_run"_a = nb::none(), "autotune_cache"_a = nb::none(),
           "A session that runs the model: it plans and allocates all of its memory now.\n\n"
           "batch: images per run (None: the model's declared batch).\n"
           "threads: None = the cores this process may run on (len(os.sched_getaffinity(0))).\n"
           "conv: im2win (default), indirect, im2col, direct, winograd, or auto (each layer timed now).\n"
           "device: cpu, cuda, cuda:N or auto (CUDA needs a build with it: docs/EMBEDDING.md).\n"
           "memory_budget: bytes the session may allocate for itself (None: no bound).\n"
           "input_shape: the whole NCHW input shape, e.g. (2, 3, 160, 224) (None: the model's, with batch).\n"
           "images_per_run: run the batch this many images at a time, on several threads one run per\n"
           "thread, through memory for that many (CPU; 0: the whole batch in one run; None: the engine's\n"
           "choice: on several threads, runs side by side where the batch divides among them).\n"
           "autotune_cache: with conv='auto', a text file that keeps the measured per-layer times and\n"
           "gives them to later sessions, which then choose without measuring (None: measure each time).\n"
           "One session runs one inference at a time: use one session per thread.")
      .def("plan", &plan, "conv"_a = nb::none(), "batch"_a = nb::none(), "threads"_a = nb::none(),
           "input_shape"_a = nb::none(), "images_per_run"_a = nb::none(),
           nb::sig("def plan(self, conv: str | collections.abc.Sequence[str] | None = None, batch: int | None = None, "
                   "threads: int | None = None, input_shape: collections.abc.Sequence[int] | None = None, "
                   "images_per_run: int | None = None) -> dict[str, typing.Any]"),
           "The memory of a session per convolution algorithm, planned without running: the dict\n"
           "`winfer plan --json --no-measure` prints (model, path, batch, input_shape, threads, weights,\n"
           "random_weights_by_default, algorithms: one dict per algorithm with weights_bytes,\n"
           "packed_weights_bytes, arena_bytes, total_bytes, ...; measured_peak_bytes is None:\n"
           "`winfer plan` measures in a child process).\n\n"
           "conv: an algorithm, a list, a comma-separated string, or \"all\" (None: im2win and im2col).\n"
           "threads: None = default_threads(), as Model.session().\n"
           "images_per_run: as Model.session() (each algorithm's images_per_run and lanes say what ran).")
      .def("__repr__", [](const PyModel& self) {
        return "winfer.Model('" + self.model->path() + "', input " + shape_text(self.model->input_shape().dims()) +
               ", weights " + self.model->weights_source() + ")";
      });
}

}  // namespace winfer::python
