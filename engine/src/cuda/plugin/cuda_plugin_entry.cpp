// The one symbol the CUDA backend plug-in (libwinfer_cuda.so) exports for its loader
// (cuda_plugin_loader.cpp). The plug-in holds the backend, its op table and kernels, cudart and
// the cuBLAS/cuDNN loaders; everything else it uses (engine, layers, CPU kernels) it takes from
// the program that loads it, so that one copy of winfer's state exists per process.
#include "engine/src/cuda/cuda_backend.h"

extern "C" __attribute__((visibility("default"))) const winfer::DeviceBackend* winfer_cuda_backend_plugin_v1() {
  return &winfer::cuda_backend_implementation();
}
