// NumPy arrays <-> winfer tensors without copies. The engine reads an input through
// Tensor::view over the caller's buffer (it converts NCHW to its own layout into its arena as
// part of the run, as it does for any input) and writes outputs straight into arrays, either the
// caller's (`out=`) or new ones that own their memory.
#pragma once

#include <nanobind/ndarray.h>

#include <cstddef>
#include <memory>
#include <string>

#include "common.h"
#include "winfer/tensor.h"

namespace winfer::python {

// A float32 C-contiguous CPU array of exactly `expected`'s shape, viewed as a Tensor (NCHW for
// rank 4). `keep` holds what the view points into: the caller's array, or with copy=true the
// float32 copy numpy made when the array was not one already. Anything else raises: TypeError
// (not an array, not float32, not on the CPU), winfer.InvalidArgumentError (not C-contiguous),
// winfer.ShapeError (another shape); `what` starts the message ("Session.run: x").
struct InputView {
  nb::object keep;
  Tensor tensor;
};
InputView input_view(nb::handle x, const Shape& expected, bool copy, const std::string& what);

// The same for an array the engine writes (`out=`): also refused when read-only. Never copied:
// the caller's array is the output.
Tensor output_view(nb::handle out, const Shape& expected, const std::string& what);

// Memory for a new output array, 64-byte aligned (the engine's tensor alignment), freed with
// free(): owned here until it is handed to a numpy array by to_numpy().
struct FreeDeleter {
  void operator()(float* p) const noexcept { std::free(p); }
};
using OutputBuffer = std::unique_ptr<float, FreeDeleter>;
OutputBuffer allocate_output(const Shape& shape);  // raises winfer.OutOfMemoryError
// A numpy array of `shape` that owns `buffer` (freed when the array is, whatever happens to the
// session and model that wrote it).
nb::object to_numpy(OutputBuffer buffer, const Shape& shape);

// The pointer input_view() would hand the engine for `x` (tests: proof that nothing is copied).
uintptr_t input_pointer(nb::handle x);

}  // namespace winfer::python
