// What every file of the extension shares: raising the engine's errors as Python exceptions,
// shapes as tuples, and the default thread count.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "winfer/shape.h"
#include "winfer/status.h"

namespace nb = nanobind;

namespace winfer::python {

// Raises the winfer.Error subclass of status.code() (python/winfer/_errors.py) carrying the
// engine's message unchanged. The GIL must be held.
[[noreturn]] void raise_status(const Status& status);
// The same for a message of the binding's own (e.g. "Session.run: x has shape ...").
[[noreturn]] void raise_error(ErrorCode code, const std::string& message);
// A builtin Python exception (PyExc_TypeError, ...) with `message`.
[[noreturn]] void raise_builtin(PyObject* type, const std::string& message);

template <typename T>
T value_or_raise(Result<T> result) {
  if (!result.ok()) raise_status(result.status());
  return std::move(result).value();
}
inline void check(const Status& status) {
  if (!status.ok()) raise_status(status);
}

// make_dict("name", name, "bytes", bytes, ...): a dict of keys and values (nb::dict has no
// keyword constructor).
inline void fill_dict(nb::dict&) {}
template <typename V, typename... Rest>
void fill_dict(nb::dict& d, const char* key, V&& value, Rest&&... rest) {
  d[key] = std::forward<V>(value);
  fill_dict(d, std::forward<Rest>(rest)...);
}
template <typename... Args>
nb::dict make_dict(Args&&... args) {
  nb::dict d;
  fill_dict(d, std::forward<Args>(args)...);
  return d;
}

// (1, 3, 224, 224)
nb::tuple shape_tuple(const Shape& shape);
// "(1, 3, 224, 224)", as Python prints the tuple.
std::string shape_text(const std::vector<int64_t>& dims);

// threads=None: winfer::default_thread_count(), the cores this process may run on (sched_getaffinity), e.g.
// what `taskset` or a container's cpuset leaves it, not every core of the machine; at least 1.
int default_threads();

}  // namespace winfer::python
