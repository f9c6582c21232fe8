// Small formatting and file helpers shared by the subcommands.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer::cli {

std::string human_count(double value);     // 11.7M, 1.82G
std::string human_bytes(double bytes);     // 44.6 MiB
// Lines of a label file; empty on failure (with `error` set).
std::vector<std::string> read_labels(const std::string& path, std::string* error);
// Prints "error: <message>" to stderr and returns the exit code 1.
int fail(const Status& status);
// A seeded uniform [-1, 1) tensor (NCHW for rank 4).
Tensor random_tensor(const Shape& shape, uint64_t seed);
double median(std::vector<double> values);

}  // namespace winfer::cli
