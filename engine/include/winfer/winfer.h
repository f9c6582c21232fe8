// winfer: a CNN inference engine, as a library. This umbrella header is all a host program
// needs (docs/EMBEDDING.md):
//
//   auto model = winfer::Model::load("resnet18.yaml");              // Result<shared_ptr<const Model>>
//   winfer::SessionOptions options;                                 // device, conv_algorithm ("auto"),
//   options.threads = 4;                                            // threads, batch, memory_budget
//   auto session = winfer::Session::create(model.value(), options); // Result<unique_ptr<Session>>
//   auto output = session.value()->run(input_nchw);                 // Result<Tensor>
//
// Errors: every fallible call returns a Status or Result<T> carrying an ErrorCode and a message;
// the library never throws across its API, never exits or aborts on bad input and never writes
// to stdout (its few log lines go to stderr or to the host's callback, see log.h).
//
// Threads: a loaded Model is immutable and may be shared by any number of Sessions on any
// threads. A Session is used by one thread at a time (create one per thread; a second run
// started while one is in progress is refused with an error); distinct Sessions run
// concurrently, and give bitwise the same results as one thread would.
//
// C programs and other languages: winfer_c.h.
#pragma once

#include "winfer/custom_op.h"
#include "winfer/image.h"
#include "winfer/log.h"
#include "winfer/model.h"
#include "winfer/npy.h"
#include "winfer/session.h"
#include "winfer/shape.h"
#include "winfer/status.h"
#include "winfer/tensor.h"

#define WINFER_VERSION_MAJOR 0
#define WINFER_VERSION_MINOR 1
#define WINFER_VERSION_PATCH 0

namespace winfer {

// "0.1.0": the version of the library linked in (may differ from the header's WINFER_VERSION_*).
const char* version();

}  // namespace winfer
