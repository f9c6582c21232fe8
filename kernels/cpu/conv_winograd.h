// "winograd" internals the tests and measurements reach: the output tile it picks per layer, and
// the algorithm with its tile forced (see conv_winograd.cpp).
#pragma once

#include "kernels/common/conv_params.h"
#include "kernels/cpu/conv_algorithm.h"

namespace winfer {
namespace cpu {

// The output tile edge the registered "winograd" computes p with: 6 (F(6x6, 3x3)), 4 (F(4x4, 3x3))
// or 2 (F(2x2, 3x3)).
int winograd_tile(const ConvParams& p);

// "winograd" computing every layer with output tiles of tile x tile pixels (2, 4 or 6), whatever
// winograd_tile() says; the same packed weights, workspace rule and name. Not registered.
const ConvAlgorithm& winograd_conv_algorithm_with_tile(int tile);

}  // namespace cpu
}  // namespace winfer
