// NumPy .npy files: how input images and reference outputs travel between winfer and Python.
//
// Format (versions 1.0, 2.0 and 3.0): the magic "\x93NUMPY", a major and a minor version byte,
// the header length (u16 little-endian in 1.0, u32 in 2.0/3.0), then a Python dict literal such
// as {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), } padded with spaces
// and a newline so the data starts at a multiple of 64 bytes, then the raw data.
//
// Error codes: kNotFound (missing file), kIoError (permission, directory), kParseError
// (malformed or truncated file), kUnsupported (a valid .npy winfer cannot read: another dtype,
// Fortran order, more than 8 dims).
#pragma once

#include <string>

#include "winfer/status.h"
#include "winfer/tensor.h"

namespace winfer {

// Reads a little-endian float32 ('<f4') or float64 ('<f8', converted to float32) C-order array
// with 0..8 dims. The tensor is Layout::kNCHW when it has rank 4, else Layout::kPlain.
Result<Tensor> read_npy(const std::string& path);

// Writes the tensor's logical C-order data as '<f4' (an NHWC tensor is converted to NCHW).
// The file is written beside `path` and renamed over it; an existing file is replaced only when
// it is a .npy file (or empty): anything else at `path` (another file, a directory, a device, a
// FIFO) is refused with an error naming it (docs/ERRORS.md, "Files").
Status write_npy(const std::string& path, const Tensor& t);

// Whether write_npy may write `path`: the same checks, without writing. Lets a caller refuse a
// bad output path before a long run rather than after it.
Status check_npy_output(const std::string& path);

}  // namespace winfer
