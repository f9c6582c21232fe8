// winfer.Session: run() and run_all() on numpy arrays, with the GIL released while the engine
// runs, and the session's shapes and reports.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "objects.h"

using namespace nb::literals;

namespace winfer::python {
namespace {

Layout layout_of(const Shape& shape) { return shape.rank() == 4 ? Layout::kNCHW : Layout::kPlain; }

// The output tensors of one run: views of the caller's arrays (out=) or of new buffers that
// become numpy arrays after the run. `outs` is None, or one array per output: a sequence in
// output order or a dict by name. `first_only` (run): the other outputs of a multi-output
// model are left empty, and the engine allocates them for this run only.
struct Outputs {
  std::vector<Tensor> tensors;
  std::vector<OutputBuffer> owned;  // empty where the caller gave the array
  std::vector<nb::object> given;
};

Outputs prepare_outputs(const Session& s, nb::handle outs, bool first_only, const char* what) {
  const std::vector<Shape>& shapes = s.output_shapes();
  const std::vector<std::string> names = s.output_names();
  Outputs o;
  o.tensors.resize(shapes.size());
  o.owned.resize(shapes.size());
  o.given.resize(shapes.size());
  const size_t wanted = first_only ? 1 : shapes.size();
  if (!outs.is_none()) {
    if (first_only) {
      o.given[0] = nb::borrow(outs);
    } else if (nb::isinstance<nb::dict>(outs)) {
      nb::dict d = nb::borrow<nb::dict>(outs);
      for (auto [key, value] : d) {
        const std::string name = nb::cast<std::string>(nb::str(key));
        const Result<size_t> index = s.output_index(name);
        if (!index.ok()) raise_error(ErrorCode::kNotFound, std::string(what) + ": out: " + index.status().message());
        o.given[index.value()] = nb::borrow(value);
      }
    } else {
      nb::list l = nb::list(outs);  // any sequence
      if (l.size() != shapes.size()) {
        raise_error(ErrorCode::kInvalidArgument, std::string(what) + ": out has " + std::to_string(l.size()) +
                                                     " arrays, the model has " + std::to_string(shapes.size()) +
                                                     " outputs");
      }
      for (size_t i = 0; i < shapes.size(); ++i) o.given[i] = l[i];
    }
  }
  for (size_t i = 0; i < wanted; ++i) {
    if (o.given[i].is_valid() && !o.given[i].is_none()) {
      const std::string label = std::string(what) + ": out" + (first_only ? "" : "['" + names[i] + "']");
      o.tensors[i] = output_view(o.given[i], shapes[i], label);
    } else {
      o.given[i] = nb::object();
      o.owned[i] = allocate_output(shapes[i]);
      o.tensors[i] = Tensor::view(o.owned[i].get(), shapes[i], layout_of(shapes[i]));
    }
  }
  return o;
}

// The engine's run, without the GIL: other Python threads (and their sessions) run meanwhile.
// The arrays stay alive: the caller's are held by the call's arguments, the new ones by `o`.
void run_engine(PySession& self, const Tensor& input, Outputs* o) {
  Status status;
  {
    nb::gil_scoped_release release;
    status = self.session->run_into(input, &o->tensors);
  }
  check(status);
}

nb::object result_array(Outputs* o, size_t i, const Shape& shape) {
  if (o->given[i].is_valid()) return o->given[i];  // out=: the caller's array itself
  return to_numpy(std::move(o->owned[i]), shape);
}

nb::object run(PySession& self, nb::handle x, nb::handle out, bool copy) {
  const Session& s = *self.session;
  const InputView input = input_view(x, s.input_shape(), copy, "Session.run: x");
  Outputs o = prepare_outputs(s, out, /*first_only=*/true, "Session.run");
  run_engine(self, input.tensor, &o);
  return result_array(&o, 0, s.output_shapes()[0]);
}

nb::dict run_all(PySession& self, nb::handle x, nb::handle out, bool copy) {
  const Session& s = *self.session;
  const InputView input = input_view(x, s.input_shape(), copy, "Session.run_all: x");
  Outputs o = prepare_outputs(s, out, /*first_only=*/false, "Session.run_all");
  run_engine(self, input.tensor, &o);
  nb::dict result;
  const std::vector<std::string> names = s.output_names();
  for (size_t i = 0; i < names.size(); ++i) result[names[i].c_str()] = result_array(&o, i, s.output_shapes()[i]);
  return result;
}

nb::list timings(const PySession& self) {
  nb::list l;
  for (const LayerTiming& t : self.session->last_timings()) {
    l.append(make_dict("name", t.name, "op", t.type, "kernel", t.kernel, "ms", t.milliseconds));
  }
  return l;
}

nb::list output_shapes(const PySession& self) {
  nb::list l;
  for (const Shape& s : self.session->output_shapes()) l.append(shape_tuple(s));
  return l;
}

}  // namespace

nb::dict memory_report_dict(const MemoryReport& r) {
  nb::list buffers;
  for (const MemoryBuffer& b : r.buffers) {
    buffers.append(make_dict("name", b.name, "workspace", b.workspace, "bytes", b.bytes, "offset", b.offset,
                             "first_step", b.first_step, "last_step", b.last_step, "in_place_of", b.in_place_of,
                             "slice_of", b.slice_of, "slice_offset", b.slice_offset));
  }
  nb::list choices;
  for (const ConvChoice& c : r.conv_choices) {
    nb::list candidates;
    for (const ConvCandidate& k : c.candidates) {
      candidates.append(make_dict("algorithm", k.algorithm, "ms", k.milliseconds, "cached", k.cached, "workspace_bytes",
                                  k.workspace_bytes, "packed_weight_bytes", k.packed_weight_bytes));
    }
    choices.append(make_dict("layer", c.layer, "algorithm", c.algorithm, "rule", c.rule, "reason", c.reason,
                             "candidates", candidates));
  }
  nb::dict d;
  d["weights_bytes"] = r.weights_bytes;
  d["packed_weights_bytes"] = r.packed_weights_bytes;
  d["session_weights_bytes"] = r.session_weights_bytes;
  d["activations_sum_bytes"] = r.activations_sum_bytes;
  d["activations_lower_bound_bytes"] = r.activations_lower_bound_bytes;
  d["arena_bytes"] = r.arena_bytes;
  d["max_workspace_bytes"] = r.max_workspace_bytes;
  d["alignment"] = r.alignment;
  d["in_place_layers"] = r.in_place_layers;
  d["concat_bytes"] = r.concat_bytes;
  d["concat_inputs_in_place"] = r.concat_inputs_in_place;
  d["concat_bytes_saved"] = r.concat_bytes_saved;
  d["session_bytes"] = r.session_bytes;
  d["memory_budget"] = r.memory_budget;
  d["images_per_run"] = r.images_per_run;
  d["lanes"] = r.lanes;
  d["steps"] = r.steps;
  d["buffers"] = buffers;
  d["conv_choices"] = choices;
  return d;
}

void bind_session(nb::module_& m) {
  nb::class_<PySession>(m, "Session",
                        "Runs a Model: made by Model.session(), it holds the packed weights and one planned\n"
                        "arena for every activation. One inference at a time: a run started while another runs\n"
                        "on the same session (from another thread) raises winfer.InvalidArgumentError; use one\n"
                        "session per thread. The GIL is released while the engine runs.")
      .def("run", &run, "x"_a, "out"_a = nb::none(), "copy"_a = false,
           nb::sig("def run(self, x: numpy.typing.ArrayLike, out: numpy.ndarray | None = None, copy: bool = False) "
                   "-> numpy.ndarray"),
           "Runs x and returns the first output.\n\n"
           "x: a float32, C-contiguous numpy array (NCHW) of exactly input_shape, read in place (no copy).\n"
           "Another dtype or order raises TypeError / winfer.InvalidArgumentError, unless copy=True\n"
           "(then numpy converts it first); another shape raises winfer.ShapeError.\n"
           "out: a writable float32 C-contiguous array of output_shapes[0]: the engine writes into it and\n"
           "it is returned. Otherwise a new array is returned that owns its memory (valid after the\n"
           "session and model are gone).")
      .def("run_all", &run_all, "x"_a, "out"_a = nb::none(), "copy"_a = false,
           nb::sig("def run_all(self, x: numpy.typing.ArrayLike, out: collections.abc.Sequence[numpy.ndarray] | "
                   "dict[str, numpy.ndarray] | None = None, copy: bool = False) -> dict[str, numpy.ndarray]"),
           "Runs x and returns every output: {name: array} in output order. x and copy as for run();\n"
           "out: None, or arrays to write into, a sequence in output order or a dict by name (outputs\n"
           "left out get new arrays).")
      .def_prop_ro(
          "input_name", [](const PySession& self) { return self.session->input_names()[0]; }, "The input's name.")
      .def_prop_ro(
          "input_shape", [](const PySession& self) { return shape_tuple(self.session->input_shape()); },
          nb::for_getter(nb::sig("def input_shape(self) -> tuple[int, ...]")),
          "The shape run() takes, e.g. (1, 3, 224, 224): the model's with the session's batch and size.")
      .def_prop_ro(
          "output_names", [](const PySession& self) { return self.session->output_names(); },
          "The outputs' names, in output order.")
      .def_prop_ro("output_shapes", &output_shapes,
                   nb::for_getter(nb::sig("def output_shapes(self) -> list[tuple[int, ...]]")),
                   "The outputs' shapes, in output order.")
      .def_prop_ro(
          "device", [](const PySession& self) { return self.session->device(); }, "Where it runs: cpu or cuda:N.")
      .def_prop_ro(
          "conv", [](const PySession& self) { return self.conv; }, "The convolution algorithm asked for.")
      .def_prop_ro(
          "threads", [](const PySession& self) { return self.threads; }, "Threads per run.")
      .def(
          "memory_report", [](const PySession& self) { return memory_report_dict(self.session->memory_report()); },
          nb::sig("def memory_report(self) -> dict[str, typing.Any]"),
          "The memory plan (docs/MEMORY.md): a dict with weights_bytes, packed_weights_bytes,\n"
          "session_weights_bytes, activations_sum_bytes, activations_lower_bound_bytes, arena_bytes,\n"
          "max_workspace_bytes, session_bytes, memory_budget, images_per_run and lanes (how the batch\n"
          "runs: images per run, runs side by side), in-place and concat figures, steps,\n"
          "buffers (name, bytes, offset, lifetime) and, with conv=\"auto\", conv_choices.")
      .def("timings", &timings, nb::sig("def timings(self) -> list[dict[str, typing.Any]]"),
           "Per-layer times of the last run, in execution order: dicts with name, op, kernel, ms.")
      .def("__repr__", [](const PySession& self) {
        return "winfer.Session(input " + shape_text(self.session->input_shape().dims()) + ", device " +
               self.session->device() + ", conv " + self.conv + ", threads " + std::to_string(self.threads) + ")";
      });
}

}  // namespace winfer::python
