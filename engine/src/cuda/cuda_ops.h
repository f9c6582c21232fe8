// The CUDA backend's operator table: op type -> kernel factory, one factory per file in
// engine/src/cuda/ops/<op>_cuda.cpp (ncnn's layer/<backend>/<op>_<backend>.cpp). The ops in
// layers/ know nothing of CUDA; each factory reads what it needs through its op's public
// accessors. Adding an op to this backend: its file in ops/ and one line in cuda_ops.cpp.
#pragma once

#include <memory>
#include <vector>

#include "engine/src/cuda/cuda_kernel.h"
#include "engine/src/op.h"

namespace winfer {

// Makes the CUDA kernel of `op` (whose type the table matched) for these shapes.
using CudaKernelFactory = Result<std::unique_ptr<CudaKernel>> (*)(const Op& op, const std::vector<Shape>& inputs,
                                                                  const std::vector<Shape>& outputs,
                                                                  const CudaCompileOptions& options);

// The factory for op type `type`, or null when this backend has no kernel for it.
CudaKernelFactory find_cuda_kernel_factory(const char* type);

// The CUDA kernel of `op`; kUnsupported naming the op type when there is none.
Result<std::unique_ptr<CudaKernel>> compile_cuda_kernel(const Op& op, const std::vector<Shape>& inputs,
                                                        const std::vector<Shape>& outputs,
                                                        const CudaCompileOptions& options);

}  // namespace winfer
