// The extension module winfer._winfer; python/winfer/__init__.py is the package users import.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "arrays.h"
#include "objects.h"
#include "winfer/session.h"

using namespace nb::literals;

NB_MODULE(_winfer, m) {
  m.doc() = "winfer's engine, bound with nanobind (import winfer, not this module)";
  winfer::python::bind_model(m);
  winfer::python::bind_session(m);
  winfer::python::bind_classify(m);
  m.def("conv_algorithms", &winfer::conv_algorithm_names, "device"_a = "cpu",
        "The convolution algorithms Model.session(conv=...) takes on `device` (cpu, or cuda in a CUDA build).");
  m.def("default_threads", &winfer::python::default_threads,
        "The thread count of threads=None: the cores this process may run on (len(os.sched_getaffinity(0))).");
  m.def("_input_pointer", &winfer::python::input_pointer, "x"_a,
        "The address Session.run would hand the engine for x (tests: proof that nothing is copied).");
}
