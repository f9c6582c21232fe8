// Model.plan(): `winfer plan --json --no-measure`'s dict, from the same engine calls.
#pragma once

#include <optional>
#include <vector>

#include "objects.h"

namespace winfer::python {

nb::dict plan(const PyModel& model, nb::handle conv, std::optional<int64_t> batch, std::optional<int> threads,
              std::optional<std::vector<int64_t>> input_shape, std::optional<int64_t> images_per_run);

}  // namespace winfer::python
