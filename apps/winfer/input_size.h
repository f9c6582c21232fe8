// The input size of the sessions a command makes: `--batch N` and `--size HxW` (run, plan,
// bench), turned into SessionOptions::input_shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "winfer/model.h"
#include "winfer/status.h"

namespace winfer::cli {

// The --help text of --size, the same for every command.
extern const char* const kSizeHelp;

// "160x224" -> {160, 224}; an error naming `flag` for anything but two integers in 1..2^24
// joined by 'x'.
Result<std::vector<int64_t>> parse_image_size(const std::string& text, const std::string& flag = "--size");

// SessionOptions::input_shape for `--batch` (0: the model's) and `--size` ("": the model's):
// empty when both are the model's. The model's input must be [N,C,H,W] for --size; the rest
// (fixed dims, layers that do not admit the size) Session::create checks.
Result<std::vector<int64_t>> input_shape_for(const Model& model, int64_t batch, const std::string& size);

// The model's FLOPs for one run at `input` (the declared count scaled by the input's elements
// over the declared input's: exact for the batch, and for convolutional layers over the image
// size, whose work grows with the pixels).
double flops_at(const Model& model, const Shape& input);

}  // namespace winfer::cli
